"""Figures quoted in the notebooks' prose are the ones their cells compute (issue 25: notebook 04
called a graph "host-bound" and said sinking "removes nearly all host cost" next to output that
did not show it).  Each entry: the notebook, the markdown cell's text that quotes the figure, and
the computation of the cell beside it; the test formats the computed value to the quoted digits."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

import workbench as wb

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NB03, NB04 = "03_textbook_scheduling.ipynb", "04_mindspore_levels_memory.ipynb"


@cache
def _tiny() -> wb.Graph:
    return wb.models.transformer_block(seq_len=8, d_model=64, heads=2, d_ff=256, layers=4)


@cache
def _level(level: str) -> wb.Trace:
    """Notebook 04 §1: the tiny transformer at ``level`` on an H100 with a 12 µs host."""
    from workbench.orchestration.pipelines import run_level
    from workbench.simulator.cost_model.costs import with_overrides

    return run_level(_tiny(), level, device=with_overrides("h100", launch_overhead_us=12.0))


@cache
def _serial(**kw: str) -> wb.Trace:
    """Notebooks 03 §5 and 04 §2: the tiny transformer's serial schedule on an H100."""
    return wb.simulate(wb.schedule(_tiny(), "serial"), "h100", **kw)


def _markdown(notebook: str) -> str:
    cells = json.loads((NOTEBOOKS / notebook).read_text(encoding="utf-8"))["cells"]
    return " ".join(" ".join("".join(c["source"]).split()) for c in cells
                    if c["cell_type"] == "markdown")


QUOTED = [  # (notebook, text with {} where the figure stands, its format, the computation)
    (NB04, "host_bound_fraction {} and", "{:.2f}",
     lambda: _level("O0").meta["host_bound_fraction"]),
    (NB04, "and {}: the device waits", "{:.2f}", lambda: _level("O1").meta["host_bound_fraction"]),
    (NB04, "host's work after {} µs", "{:.1f}", lambda: _level("O2").meta["host_end_us"]),
    (NB04, "instead of {} µs", "{:.1f}", lambda: _level("O1").meta["host_end_us"]),
    (NB04, "cuts the run from {} to", "{:.1f}", lambda: _level("O1").makespan),
    (NB04, "to {} µs.", "{:.1f}", lambda: _level("O2").makespan),
    (NB04, "the serial host takes {} µs", "{:.1f}",
     lambda: _serial(host_pipeline="serial").makespan),
    (NB04, "the pipelined host {} µs", "{:.1f}",
     lambda: _serial(host_pipeline="pipelined").makespan),
    (NB03, "tiny transformer's {} kernels", "{}", lambda: len(_tiny())),
    (NB03, "(host_bound_fraction {} eager)", "{:.2f}",
     lambda: _serial(mode="eager").meta["host_bound_fraction"]),
    (NB03, "take {} µs eager", "{:.1f}", lambda: _serial(mode="eager").makespan),
    (NB03, "and {} µs sunk", "{:.1f}", lambda: _serial(mode="graph").makespan),
]


@pytest.mark.parametrize("notebook,text,fmt,compute", QUOTED,
                         ids=[f"{nb[:2]}:{text}" for nb, text, _, _ in QUOTED])
def test_quoted_figure_is_the_computed_one(notebook: str, text: str, fmt: str,
                                           compute: object) -> None:
    value = compute()  # type: ignore[operator]
    assert text.format(fmt.format(value)) in _markdown(notebook), (
        f"{notebook}: the prose should say {text.format(fmt.format(value))!r}")
