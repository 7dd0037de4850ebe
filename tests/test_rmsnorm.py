"""RMS norm as a full op kind (``rmsnorm``): ``torch.nn.RMSNorm`` / ``F.rms_norm`` (Llama-style
decoders) and ONNX's ``RMSNormalization`` (opset 23) import costed from their shapes, not with
the default cost; the model runs bitwise under any schedule with its program, and the kind's torch
form and NumPy reference compute what torch and ONNX compute without it (``eps`` absent: the
dtype's machine epsilon, as torch's ``eps=None``)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench.io.text.json_format import graph_from_dict, graph_to_dict
from workbench.io.torch.program import Call
from workbench.ops import OPS

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402


class Decoder(nn.Module):
    """Two pre-norm blocks as Llama writes them (RMS norms with the dtype's eps and with 1e-6,
    causal attention, a gated MLP), a norm over the last two axes by ``F.rms_norm``, keyword
    input ``scale``."""

    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, d)
        self.norms = nn.ModuleList([nn.RMSNorm(d), nn.RMSNorm(d, eps=1e-6)])
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.gate, self.up = nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False)
        self.down = nn.Linear(2 * d, d, bias=False)
        self.heads = heads

    def forward(self, ids: Any, *, scale: float = 1.0) -> Any:
        x = self.embed(ids)
        b, t, d = x.shape
        q, k, v = self.qkv(self.norms[0](x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        attn = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + scale * attn.transpose(1, 2).reshape(b, t, d)
        h = self.norms[1](x)
        x = x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))
        return nn.functional.rms_norm(x, (t, d), eps=1e-5)


def _import(model: nn.Module, ids: Any) -> wb.Graph:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # a default-cost op would warn
        return wb.io.from_torch(model, (ids,), kwargs={"scale": 0.5})


@pytest.mark.parametrize("shape", [(2, 7), (1, 12)])
def test_rms_norms_import_costed_and_the_model_runs_bitwise(shape: tuple[int, int]) -> None:
    torch.manual_seed(0)
    model = Decoder().eval()
    ids = torch.randint(0, 50, shape)
    g = _import(model, ids)
    norms = [op for op in g.ops if op.kind == "rmsnorm"]
    assert len(norms) == 3 and not [op.id for op in g.ops if op.attrs.get("cost") == "default"]
    assert [op.attrs.get("axis") for op in norms] == [-1, -1, -2]
    assert [op.attrs.get("eps") for op in norms] == [None, 1e-6, 1e-5]
    elements = shape[0] * shape[1] * 16
    assert all(op.flops == 4 * elements for op in norms)
    with torch.no_grad():
        want = model(ids, scale=0.5)
    for policy in ("serial", "nnc", "gpto"):
        trace = wb.execute(wb.schedule(g, policy), executor="torch", device="cpu", repeats=1,
                           warmup=0, inputs=Call((ids,), {"scale": 0.5}), return_outputs=True,
                           verify=True)
        assert trace.meta["verified"] and torch.equal(trace.meta["outputs"], want), policy


def test_without_its_program_the_kinds_forms_compute_the_model() -> None:
    torch.manual_seed(1)
    model = Decoder().eval()
    ids = torch.randint(0, 50, (2, 5))
    g = graph_from_dict(graph_to_dict(_import(model, ids)))
    assert g.program is None
    feed = {"ids": ids, "scale": 0.5, **dict(model.named_parameters())}  # by tensor id
    trace = wb.execute(wb.schedule(g, "nnc"), executor="torch", device="cpu", repeats=1,
                       warmup=0, inputs=feed, return_outputs=True)
    with torch.no_grad():
        want = model(ids, scale=0.5).numpy()
    got = np.asarray(trace.meta["outputs"][g.outputs[0]])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_reference_uses_the_dtypes_epsilon_when_eps_is_absent() -> None:
    x = np.full((1, 4), 1e-4, dtype=np.float32)  # mean square 1e-8: eps decides the result
    op = wb.Op("n", kind="rmsnorm", inputs=("x",), outputs=("y",), attrs={})
    (got,) = OPS["rmsnorm"].reference(op, [x], lambda t: None)
    want = torch.nn.functional.rms_norm(torch.from_numpy(x), (4,)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert not np.allclose(got, 1.0)  # the epsilon mattered


def test_onnx_rms_normalization_imports_as_the_kind(tmp_path: Any) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    scale = numpy_helper.from_array(np.linspace(0.5, 1.5, 8).astype(np.float32), "scale")
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=1e-6,
                            stash_type=1)
    graph = helper.make_graph([node], "rms", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 3, 8])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [2, 3, 8])], [scale])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    onnx.checker.check_model(model)
    path = tmp_path / "rms.onnx"
    onnx.save(model, str(path))
    g = wb.load(path)
    (op,) = g.ops
    assert op.kind == "rmsnorm" and op.attrs["axis"] == -1
    assert op.attrs["eps"] == pytest.approx(1e-6) and op.flops == 4 * 48
    x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    trace = wb.execute(wb.schedule(g, "serial"), executor="torch", device="cpu", repeats=1,
                       warmup=0, inputs={"x": x}, return_outputs=True)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.asarray(trace.meta["outputs"]), want, rtol=1e-6, atol=1e-6)
