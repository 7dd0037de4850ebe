"""Every registered loader and saver (STYLE.md R4): what a saver writes, the loader of the same
suffix reads back as the same graph; every loader is available or says what to install; the app's
upload box accepts exactly the loader suffixes."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench as wb
from workbench.io import LOADERS, SAVERS

GRAPHS = {
    "inception_v3": lambda: wb.models.inception_v3(1, fused=False),
    "side_effects": lambda: wb.passes.add_side_effect_edges(wb.models.textbook_side_effects()),
    "transformer": lambda: wb.models.transformer_block(seq_len=6, d_model=16, heads=2, d_ff=32),
}


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("suffix", SAVERS.names())
def test_every_saver_round_trips_through_its_loader(suffix: str, graph: str,
                                                    tmp_path: Path) -> None:
    assert suffix in LOADERS, f"{suffix} can be saved but not loaded"
    if not LOADERS.available(suffix):
        pytest.skip(LOADERS.unavailable_reason(suffix))
    g = GRAPHS[graph]()
    path = wb.save(g, tmp_path / f"g{suffix}")
    back = wb.load(path)
    assert back.name == g.name and back.op_ids == g.op_ids
    assert [op.kind for op in back.ops] == [op.kind for op in g.ops]
    assert [op.flops for op in back.ops] == [op.flops for op in g.ops]
    assert back.edges == g.edges and back.control_edges == g.control_edges
    # and what is read back saves to the same bytes again
    again = wb.save(back, tmp_path / f"again{suffix}")
    assert again.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("suffix", LOADERS.names())
def test_every_loader_is_available_or_says_why(suffix: str) -> None:
    assert suffix.startswith(".") and suffix == suffix.lower()
    reason = LOADERS.unavailable_reason(suffix)
    assert LOADERS.available(suffix) == (reason == "")
    assert "\n" not in reason and (not reason or "pip install" in reason)


def test_upload_suffixes_are_the_loader_suffixes() -> None:
    pytest.importorskip("ipywidgets")
    from workbench.ui.sources import UPLOAD_SUFFIXES

    assert set(UPLOAD_SUFFIXES) == set(LOADERS.names())
    assert ".gv" in UPLOAD_SUFFIXES


@pytest.mark.parametrize("suffix", SAVERS.names())
def test_every_saved_file_can_be_uploaded(suffix: str, tmp_path: Path) -> None:
    pytest.importorskip("ipywidgets")
    from workbench.ui.sources import load_bytes

    g = wb.models.nnc_diamond()
    data = wb.save(g, tmp_path / f"diamond{suffix}").read_bytes()
    assert load_bytes(f"diamond{suffix}", data).op_ids == g.op_ids
