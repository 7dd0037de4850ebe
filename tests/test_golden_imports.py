"""The importers give what they gave: every zoo model (:mod:`tests.model_zoo`,
:mod:`tests.model_zoo_any`) and ONNX fixture imports to the graph recorded in
``tests/data/golden_imports.json`` (:mod:`tests.golden_imports`; issue 46: moving the op table's
facts into families must not change an imported graph), with the same serial and nnc makespans.
A deliberate change is recorded again with ``python tests/golden_imports.py`` and said in the
commit."""

from __future__ import annotations

import json
import warnings

import pytest

pytest.importorskip("torch")

from tests.golden_imports import GOLDEN, fingerprint, sources  # noqa: E402

RECORDED = json.loads(GOLDEN.read_text())
MAKERS = dict(sources())


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_model_imports_to_the_recorded_graph_and_makespans(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # default-cost notes
        got = fingerprint(MAKERS[name]())
    want = RECORDED[name]
    for key in ("serial_us", "nnc_us"):
        assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-6), key
    assert (got["graph"], got["ops"]) == (want["graph"], want["ops"])


def test_the_recorded_set_is_the_set_of_models() -> None:
    assert set(RECORDED) == set(MAKERS)
