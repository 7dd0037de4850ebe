"""Every architecture of :mod:`tests.model_zoo_any` and :mod:`tests.model_zoo` imports with no
default-costed op, and its GEMM FLOPs are within 1% of PyTorch's ``FlopCounterMode`` on the same
forward (issue 41 acceptance)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests._flops import flop_counter, graph_gemm_flops  # noqa: E402
from tests.test_storage_aliases import MODELS, imported  # noqa: E402


@pytest.mark.parametrize("name", MODELS)
def test_no_op_is_default_costed(name: str) -> None:
    _, _, graph = imported(name)
    defaulted = sorted({str(op.attrs.get("target", op.kind)) for op in graph.ops
                        if op.attrs.get("cost") == "default"})
    assert not defaulted, defaulted


@pytest.mark.parametrize("name", MODELS)
def test_gemm_flops_are_within_one_percent_of_the_flop_counter(name: str) -> None:
    model, example, graph = imported(name)
    want = flop_counter(model, example)
    got = graph_gemm_flops(graph)
    assert got == pytest.approx(want, rel=0.01, abs=1.0), (got, want)
