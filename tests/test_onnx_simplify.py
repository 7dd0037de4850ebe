"""load_onnx(simplify=True): onnxscript's optimizer runs before the import when installed (its
result is what gets imported), and its absence or failure is a warning, not an error.  The
optimizer is replaced here by stand-ins (onnxscript is an optional extra)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

onnx = pytest.importorskip("onnx")

import workbench as wb  # noqa: E402
from workbench.io.onnx.load import load_onnx  # noqa: E402

DATA = Path(__file__).parent / "data"
BRANCHY, TINY = DATA / "branchy.onnx", DATA / "tiny_inception.onnx"


def _fake_onnxscript(monkeypatch: pytest.MonkeyPatch, optimize: Any) -> list[Any]:
    calls: list[Any] = []

    def record(model: Any) -> Any:
        calls.append(model)
        return optimize(model)

    package = types.ModuleType("onnxscript")
    package.optimizer = types.SimpleNamespace(optimize=record)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "onnxscript", package)
    return calls


def _same(a: Any, b: Any) -> bool:
    return [(o.id, o.kind, o.flops) for o in a.ops] == [(o.id, o.kind, o.flops) for o in b.ops]


def test_optimizer_result_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    other = onnx.load(str(TINY))
    other.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2  # as the dims= fix does
    calls = _fake_onnxscript(monkeypatch, lambda model: other)
    g = load_onnx(BRANCHY, dims={"batch": 2}, simplify=True)
    assert len(calls) == 1 and isinstance(calls[0], onnx.ModelProto)
    # the optimizer sees the model with its dimensions set, and its result is imported
    assert calls[0].graph.input[0].type.tensor_type.shape.dim[0].dim_value == 2
    assert _same(g, load_onnx(TINY, dims={"batch": 2}))
    assert _same(load_onnx(BRANCHY), load_onnx(BRANCHY, simplify=False)) and len(calls) == 1
    # wb.load passes it on (ONNX only)
    assert _same(wb.load(BRANCHY, dims={"batch": 2}, simplify=True), g) and len(calls) == 2
    with pytest.raises(wb.OptionError, match="simplify applies to .onnx models only"):
        wb.load(DATA / "branchy_fx.json", simplify=True)


def test_missing_or_failing_optimizer_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = load_onnx(BRANCHY)
    monkeypatch.setitem(sys.modules, "onnxscript", None)  # import fails
    with pytest.warns(UserWarning, match="onnxscript is not installed"):
        assert _same(load_onnx(BRANCHY, simplify=True), plain)

    def broken(model: Any) -> Any:
        raise ValueError("unsupported opset\nsecond line")

    _fake_onnxscript(monkeypatch, broken)
    with pytest.warns(UserWarning, match=r"optimizer failed \(ValueError: unsupported opset "
                                         r"second line\); imported unsimplified"):
        assert _same(load_onnx(BRANCHY, simplify=True), plain)


def test_the_real_optimizer_keeps_the_model_and_folds() -> None:
    """With onnxscript installed (the dev setup installs it): the optimised model imports with no
    more ops and the same work to within 1% (constant folding may drop a bias-sized add;
    Flatten may become a Reshape)."""
    pytest.importorskip("onnxscript")
    plain, simple = load_onnx(BRANCHY), load_onnx(BRANCHY, simplify=True)
    assert len(simple.ops) <= len(plain.ops)
    assert sum(o.flops for o in simple.ops) == pytest.approx(sum(o.flops for o in plain.ops),
                                                           rel=0.01)
