"""The kind the "add an op kind" walk-through adds (``docs/architecture.md``; issue 46):
``mish``, declared once in :mod:`workbench.ops.elementwise` and known everywhere from there.

* the table: its category, FLOPs per element, ONNX type and torch names;
* ``from_torch`` imports ``nn.Mish`` and ``F.mish`` as ``mish`` with 9 FLOPs per element (no
  default cost), and a schedule of the imported graph computes what the module computes;
* ONNX's ``Mish`` node imports as ``mish`` with the same cost, and its NumPy reference equals
  ONNX's definition ``x * tanh(softplus(x))``;
* no module under ``workbench/`` but its family names it (:mod:`tests._kind_names`).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from tests._kind_names import names_by_file
from workbench.io.text.json_format import graph_from_dict, graph_to_dict
from workbench.ops import FLOPS_PER_ELEMENT, ONNX_ALIASES, OPS, TORCH_ALIASES

ROOT = Path(__file__).resolve().parents[1]


def _mish(x: np.ndarray) -> np.ndarray:
    return x * np.tanh(np.log1p(np.exp(x)))


def test_the_table_knows_mish_from_its_one_declaration() -> None:
    info = OPS["mish"]
    assert (info.category, info.flops_per_element, FLOPS_PER_ELEMENT["mish"]) == \
        ("elementwise", 9, 9)
    assert ONNX_ALIASES["Mish"] == "mish"
    assert {TORCH_ALIASES[n] for n in ("Mish", "mish", "mish_")} == {"mish"}
    assert info.reference is not None and info.torch_form is not None


def test_only_its_family_names_mish() -> None:
    found = names_by_file(ROOT / "workbench", set(OPS))
    assert [f for f, kinds in found.items() if "mish" in kinds] == ["workbench/ops/elementwise.py"]


def test_the_onnx_node_imports_with_its_cost_and_reference(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from tests.test_op_vocabulary import _onnx_case

    x = np.linspace(-4.0, 4.0, 24, dtype=np.float32).reshape(2, 3, 4)
    model, _ = _onnx_case("Mish", [x], opset=18)
    path = tmp_path / "mish.onnx"
    path.write_bytes(model.SerializeToString())
    g = wb.load(path)
    (op,) = g.ops
    assert op.kind == "mish" and op.flops == 9 * x.size and "cost" not in op.attrs
    y = OPS["mish"].reference(op, [x], lambda t: x.shape)[0]
    np.testing.assert_allclose(y, _mish(x.astype(np.float64)), rtol=1e-6)
    assert y.dtype == np.float32


def test_from_torch_imports_mish_and_a_schedule_computes_the_module() -> None:
    torch = pytest.importorskip("torch")
    from torch import nn

    from workbench.executors.torch_exec.runner import run_outputs

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.conv, self.act = nn.Conv2d(3, 4, 3, padding=1), nn.Mish()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.mish(self.act(self.conv(x)) + 1.0)

    model, x = Net().eval(), torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no default-cost note: every op has its rule
        g = wb.io.from_torch(model, (x,))
    mish = [op for op in g.ops if op.kind == "mish"]
    assert len(mish) == 2 and all(op.flops == 9 * 2 * 4 * 8 * 8 for op in mish)
    (x_id,) = [t.id for t in g.tensors.values() if t.role == "input"]
    other = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        want = model(other).numpy()
    # with its program (the module's own calls), and without it: the kinds' torch forms, fed
    # the module's parameters by tensor id
    (out,) = run_outputs(wb.schedule(g, "nnc"), device="cpu", inputs={x_id: other}).values()
    np.testing.assert_array_equal(out, want)
    bare = graph_from_dict(graph_to_dict(g))
    feed = {x_id: other, **{t: p.detach() for t, p in (
        (t.id, dict(model.named_parameters())[t.id]) for t in bare.tensors.values()
        if t.role == "parameter")}}
    (out,) = run_outputs(wb.schedule(bare, "nnc"), device="cpu", inputs=feed).values()
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
