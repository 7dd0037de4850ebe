"""Every op of real architectures shaped and costed, the same through both import paths.

The architectures of :mod:`tests.model_zoo` (residual, inception, hard-swish and
squeeze-excite, SiLU gating, dense concatenation, channel shuffle, channels-last norms,
upsampling, token mixing, ViT, GPT-2 and BERT attention with embeddings, T5's RMS norm and
windowed attention with ``roll``) are imported through ``from_torch`` and through ONNX files
written by both exporters (TorchScript's, opset 17, and torch.export's, opset 18).  Each import
must cost every op from its shapes (no ``attrs["cost"] == "default"``) and count the GEMM FLOPs
(convolutions, matrix products, attention) that ``torch.utils.flop_counter.FlopCounterMode``
counts for the model run with the math SDPA backend, within 1%.  Where both paths describe the
same kernel (every convolution and matrix product with a weight operand) it costs the same; the
transformers' ONNX files spell attention and GELU as chains of kernels PyTorch runs as one, so
their graphs run more kernels and simulate slower (the closing note of issue 33 has the figures).
"""

from __future__ import annotations

import contextlib
import functools
import io
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

import workbench as wb  # noqa: E402
from tests._onnx_exports import exported  # noqa: E402
from tests.model_zoo import ZOO  # noqa: E402
from workbench.ops import OPS  # noqa: E402

TRANSFORMERS = [n for n in ("vit", "gpt2", "bert", "t5", "swin") if n in ZOO]
EXPORTERS = ("legacy", "dynamo")


@functools.cache
def _model(name: str) -> tuple[Any, tuple[Any, ...]]:
    return ZOO[name]()


@functools.cache
def _reference_gemm_flops(name: str) -> int:
    """FLOPs of the convolutions, matrix products and attention, as torch counts them."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    model, example = _model(name)
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(*example)
    return int(counter.get_total_flops())


@functools.cache
def _through_torch(name: str) -> wb.Graph:
    model, example = _model(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # a default-cost warning fails the import
        warnings.filterwarnings("ignore", module="torch")
        return wb.io.from_torch(model, example)


def _through_onnx(name: str, exporter: str, folder: Path) -> wb.Graph:
    return wb.load(exported(name, exporter))


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx_exports")


def _gemm_flops(graph: wb.Graph) -> float:
    return sum(op.flops for op in graph.ops
               if op.kind in OPS and (OPS[op.kind].gemm or op.kind == "attention"))


def _defaulted(graph: wb.Graph) -> list[str]:
    return [f"{op.id} ({op.kind})" for op in graph.ops if op.attrs.get("cost") == "default"]


def _serial_us(graph: wb.Graph) -> float:
    return wb.simulate(wb.schedule(graph, "serial"), "h100", mode="graph").makespan


def test_the_zoo_covers_the_op_families() -> None:
    assert len(ZOO) >= 12


@pytest.mark.parametrize("name", sorted(ZOO))
def test_from_torch_costs_every_op_and_counts_gemm_flops_as_torch(name: str) -> None:
    graph = _through_torch(name)
    assert _defaulted(graph) == []
    assert _gemm_flops(graph) == pytest.approx(_reference_gemm_flops(name), rel=0.01)


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", sorted(ZOO))
def test_onnx_costs_every_op_and_counts_gemm_flops_as_torch(name: str, exporter: str,
                                                            exports: Path) -> None:
    graph = _through_onnx(name, exporter, exports)
    assert _defaulted(graph) == []
    assert not [t for op in graph.ops for t in op.outputs  # every output shaped
                if not graph.tensor(t).shape and graph.tensor(t).size_bytes == 0]
    assert _gemm_flops(graph) == pytest.approx(_reference_gemm_flops(name), rel=0.01)


def _weight_gemm_kernels_us(graph: wb.Graph) -> float:
    """Stand-alone time (h100) of the main kernel of every convolution and matrix product with
    a weight operand: the kernels both import paths describe alike (bias and activation
    epilogues, folded batch norms and attention are where exporters differ)."""
    from workbench.simulator.cost_model.costs import op_cost

    total = 0.0
    for op in graph.ops:
        if op.kind in ("conv2d", "conv1d", "matmul", "einsum") and any(
                graph.tensors[t].role == "parameter" for t in op.inputs if t in graph.tensors):
            total += op_cost(op, "h100", graph=graph).kernels[0].alone_us
    return total


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", sorted(ZOO))
def test_the_same_kernels_cost_the_same_through_both_paths(name: str, exporter: str,
                                                           exports: Path) -> None:
    ours = _weight_gemm_kernels_us(_through_torch(name))
    theirs = _weight_gemm_kernels_us(_through_onnx(name, exporter, exports))
    assert ours > 0
    assert theirs == pytest.approx(ours, rel=0.01)


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_transformers_differ_only_by_what_the_exporters_spell_apart(name: str,
                                                                    exports: Path) -> None:
    """The ONNX file spells attention (MatMul, scale, mask, Softmax, MatMul) and GELU (Erf or
    Tanh chains) as several kernels where PyTorch runs one, and its Transposes copy where
    torch's permutes are views: the ONNX graph runs more kernels, never fewer, and its serial
    makespan is the torch path's plus those kernels (so never below it)."""
    torch_graph, onnx_graph = _through_torch(name), _through_onnx(name, "dynamo", exports)
    ours, theirs = _serial_us(torch_graph), _serial_us(onnx_graph)
    ours_k, theirs_k = (int(wb.simulate(wb.schedule(g, "serial"), "h100", mode="graph")
                            .df["kernels"].sum()) for g in (torch_graph, onnx_graph))
    assert theirs_k > ours_k
    assert theirs > ours


# ------------------------------------------------------------------ views and attention costs
def test_views_launch_nothing_in_graph_mode_and_cost_dispatch_in_eager() -> None:
    from workbench.simulator.cost_model.devices import get_device

    g = wb.models.transformer_block(seq_len=8, d_model=64, heads=2, d_ff=256, layers=1)
    reshapes = [op.id for op in g.ops if op.kind == "reshape"]
    assert reshapes
    graph_run = wb.simulate(wb.schedule(g, "serial"), "h100", mode="graph").df.set_index("op")
    assert (graph_run.loc[reshapes, "duration_us"] == 0).all()
    assert (graph_run.loc[reshapes, "kernels"] == 0).all()
    # eager: a reshape holds the host for its InferShape stage only, launching nothing
    spec = get_device("h100")
    infer, launch = spec.host_stages_us("gpu")[0], spec.host_op_us("gpu")
    eager = wb.simulate(wb.schedule(g, "serial"), "h100", mode="eager").df.set_index("op")
    order = [op.id for op in g.ops]
    for r in reshapes:
        before = order[order.index(r) - 1]
        gap = eager.loc[r, "issue_us"] - eager.loc[before, "issue_us"]
        assert gap == pytest.approx((max(1, eager.loc[before, "kernels"]) - 1) * launch + infer)


def test_attention_is_one_fused_kernel_near_its_gemm_time() -> None:
    """ViT-B/16's attention (12 heads × 197 tokens × 64) on h100: one kernel, and no slower
    than the two batched GEMMs it replaces plus a softmax pass over the score matrix."""
    b, h, length, e = 1, 12, 197, 64
    q = wb.Tensor("q", b * h * length * e * 4, shape=(b, h, length, e), role="input")
    k = wb.Tensor("k", b * h * length * e * 4, shape=(b, h, length, e), role="input")
    v = wb.Tensor("v", b * h * length * e * 4, shape=(b, h, length, e), role="input")
    out = wb.Tensor("o", b * h * length * e * 4, shape=(b, h, length, e), producer="attn",
                    role="output")
    flops = 2.0 * b * h * length * length * (e + e)
    op = wb.Op("attn", kind="attention", flops=flops, bytes_read=3 * q.size_bytes,
               bytes_written=out.size_bytes, inputs=("q", "k", "v"), outputs=("o",))
    graph = wb.Graph([op], [q, k, v, out])
    from workbench.simulator.cost_model.costs import op_cost

    cost = op_cost(op, "h100", graph=graph)
    assert cost.n_kernels == 1
    assert "attention" in cost.explain()
    assert 1.0 < cost.alone_us < 40.0, cost.explain()


def test_compare_drops_no_task_ops_unless_kept() -> None:
    g = wb.models.transformer_block(seq_len=8, d_model=64, heads=2, d_ff=256, layers=2)
    n = sum(op.kind == "reshape" for op in g.ops)
    dropped = wb.compare(g, ["nnc"], show_progress=False, budget_s=None, mode="eager")
    kept = wb.compare(g, ["nnc"], show_progress=False, budget_s=None, keep_views=True,
                      mode="eager")
    assert dropped.settings["no_task_dropped"] == n > 0
    assert kept.settings["no_task_dropped"] == 0
    assert any(f"{n} no-task ops dropped" in note for note in dropped.settings["notes"])
    serial = {c: c.table.set_index("policy").loc["serial", "makespan_us"]
              for c in (dropped, kept)}
    assert serial[dropped] < serial[kept]  # eager: the reshapes' dispatch is gone
    with pytest.raises(wb.errors.OptionError, match="keep_views"):
        wb.compare(g, ["nnc"], show_progress=False, keep_views="no")


class _AttentionInFP32(torch.nn.Module):
    """timm's EfficientViT keeps its attention in FP32: ``torch.autocast(enabled=False)``."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        with torch.autocast("cpu", enabled=False):
            attn = (q @ k.transpose(-2, -1)).softmax(-1)
            return attn @ v


def test_a_region_with_autocast_disabled_imports_as_its_own_ops() -> None:
    model, x = _AttentionInFP32().eval(), torch.randn(2, 8, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", module="torch")
        graph = wb.io.from_torch(model, x)
    assert _defaulted(graph) == []
    assert [op.kind for op in graph.ops].count("matmul") == 3
    trace = wb.execute(wb.schedule(graph, "serial"), executor="torch", inputs=(x,),
                       return_outputs=True)
    assert torch.allclose(trace.meta["outputs"], model(x), atol=1e-6)


def test_onnx_einsum_cumsum_and_gather_elements_are_costed(tmp_path: Path) -> None:
    """MaxViT's Einsum (a batched GEMM), CumSum and GatherElements: costed from their shapes,
    the Einsum's FLOPs as the contraction's and timed as a GEMM."""
    from onnx import TensorProto, helper, save

    f = TensorProto.FLOAT
    nodes = [helper.make_node("Einsum", ["q", "k"], ["s"], equation="bhid,bhjd->bhij"),
             helper.make_node("CumSum", ["s", "axis"], ["c"]),
             helper.make_node("GatherElements", ["c", "idx"], ["y"], axis=3)]
    graph = helper.make_graph(
        nodes, "einsum_cumsum_gather",
        [helper.make_tensor_value_info("q", f, [2, 4, 49, 32]),
         helper.make_tensor_value_info("k", f, [2, 4, 49, 32]),
         helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 4, 49, 5])],
        [helper.make_tensor_value_info("y", f, [2, 4, 49, 5])],
        initializer=[helper.make_tensor("axis", TensorProto.INT64, [], [3])])
    path = tmp_path / "m.onnx"
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    g = wb.load(path)
    assert _defaulted(g) == []
    einsum = next(op for op in g.ops if op.kind == "einsum")
    assert einsum.flops == 2 * 2 * 4 * 49 * 49 * 32
    from workbench.simulator.cost_model.costs import op_cost

    assert "gemm" in op_cost(einsum, "h100", graph=g).explain()


class _Resizes(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        f = torch.nn.functional
        return (f.interpolate(x, scale_factor=2, mode="bilinear"),
                f.interpolate(x, scale_factor=2))


def test_resizes_cost_the_same_through_both_paths(exports: Path) -> None:
    """Bilinear: 3 FLOPs a lerp, 3 lerps per output element over two resized axes; nearest: 0."""
    model, x = _Resizes().eval(), torch.randn(1, 3, 8, 8)
    ours = wb.io.from_torch(model, x)
    path = exports / "resizes.onnx"
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        torch.onnx.export(model, (x,), str(path), dynamo=False, opset_version=17)
    for graph in (ours, wb.load(path)):
        assert sorted(op.flops for op in graph.ops if op.kind == "resize") == [0, 9 * 3 * 16 * 16]


class _Conv1D(torch.nn.Module):
    """Hugging Face's GPT-2 ``Conv1D``: ``addmm(bias, x, weight)``, the bias first."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor) -> None:
        super().__init__()
        self.weight, self.bias = torch.nn.Parameter(weight), torch.nn.Parameter(bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)


def test_addmm_costs_the_gemm_of_its_operands_not_its_bias() -> None:
    """GPT-2's ``addmm(bias, x, w)`` is the same GEMM as ``nn.Linear``: the launch rule reads
    the inner size from ``x``, not from the bias that comes first."""
    linear = torch.nn.Linear(768, 2304).eval()
    x = torch.randn(128, 768)
    conv1d = _Conv1D(linear.weight.detach().t().contiguous(), linear.bias.detach())
    times = []
    for model in (linear, conv1d):
        graph = wb.io.from_torch(model, x)
        from workbench.simulator.cost_model.costs import op_cost

        gemm = next(op for op in graph.ops if op.kind == "matmul")
        times.append(op_cost(gemm, "h100", graph=graph).kernels[0].alone_us)
    assert times[1] == pytest.approx(times[0], rel=1e-9)


class _Einsum(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bhid,bhjd->bhij", q, k)


def test_from_torch_einsum_counts_its_contraction() -> None:
    """MaxViT's ``einsum`` through ``from_torch``: the contraction's FLOPs, as FlopCounterMode."""
    q, k = torch.randn(2, 4, 49, 32), torch.randn(2, 4, 49, 32)
    (op,) = [op for op in wb.io.from_torch(_Einsum(), (q, k)).ops if op.kind == "einsum"]
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        _Einsum()(q, k)
    assert op.flops == counter.get_total_flops() == 2 * 2 * 4 * 49 * 49 * 32
    assert (op.attrs["batch"], op.attrs["m"], op.attrs["k"], op.attrs["n"]) == (8, 49, 32, 49)
