"""Common ops of any model costed as the kernels they run (issue 41, items 4 and 5).

Small models built here with ``torch.nn`` (no downloads, no ``transformers``), each the smallest
with the structure that came out default-costed or mispriced: a MobileNetV2 block (``ReLU6``,
``F.relu6``, ``hardtanh``), a two-layer batch-first ``nn.LSTM``, a bidirectional ``nn.GRU``
and a ReLU ``nn.RNN``, ``type_as`` / ``detach`` / ``unbind``, weight-normalised convolutions
(``parametrizations.weight_norm`` and the older ``nn.utils.weight_norm``), an R3D-style 3-D
CNN (``Conv3d``, ``AdaptiveAvgPool3d``) and a Whisper / wav2vec2-style audio front end
(``Conv1d`` stack with GELU, then tokens by ``transpose``).  Through ``from_torch``:

* no op has ``attrs["cost"] == "default"`` (nor does the import warn);
* the GEMM FLOPs (convolutions of every rank, matrix products, the recurrent cells' products:
  ``workbench.ops.gemm_flops``) are within 1% of ``torch.utils.flop_counter.FlopCounterMode`` on
  the same forward (oneDNN off: its fused CPU LSTM is one kernel the counter does not see);
* a recurrent op's FLOPs are cuDNN's work: per layer and direction ``2*T*B*in*G*H`` for the
  input projection, ``2*B*H*G*H`` per step for the recurrent product, and the gate arithmetic
  (``G`` = 4, 3, 1 for LSTM, GRU, RNN);
* the torch executor computes ``model(x)`` on new inputs, with the model's own calls (the
  program) and, the graph saved as JSON (no program), with the kinds' torch forms fed the
  model's weights by tensor id;
* conv1d and conv3d run as the implicit GEMMs conv2d runs: on the h100 model each reaches
  within a factor of 2 of the FLOP/s of a conv2d with the same GEMM (M, N, K), read from the
  stand-alone times of its kernels (``op_cost(...).kernels``).

ONNX: an exported LSTM / GRU (legacy exporter) and hand-built ``LSTM`` / ``GRU`` / ``RNN``
nodes (ONNX's defaults: the GRU's reset before the product, ``reverse``, ``layout=1``, no bias,
omitted outputs, initial states) load costed and run with the torch executor as the torch model
or ``onnx.reference`` computes them.  About 30 s on two CPU cores.
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from tests._flops import flop_counter, graph_gemm_flops  # noqa: E402
from workbench.errors import OptionError  # noqa: E402
from workbench.io.text.json_format import graph_from_dict, graph_to_dict  # noqa: E402
from workbench.ops import gemm_flops  # noqa: E402
from workbench.simulator.cost_model.costs import op_cost  # noqa: E402
from workbench.values.graph import Graph, Op, Tensor  # noqa: E402

nn = torch.nn
F = nn.functional


# ----------------------------------------------------------------------------- the models
def _conv_bn(cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1) -> nn.Module:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, 3x3 depthwise, 1x1 project, each ReLU6 but the last."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        self.residual = stride == 1 and cin == cout
        self.conv = nn.Sequential(_conv_bn(cin, hidden, 1), _conv_bn(hidden, hidden, 3, stride,
                                                                    hidden),
                                  nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: Any) -> Any:
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(_conv_bn(3, 8, 3, 2), InvertedResidual(8, 8, 1, 4),
                                      InvertedResidual(8, 16, 2, 4), _conv_bn(16, 32, 1))
        self.head = nn.Linear(32, 10)

    def forward(self, x: Any) -> Any:
        y = F.hardtanh(F.relu6(self.features(x)), -3.0, 3.0)
        return self.head(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class LSTMTagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(12, 16, num_layers=2, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x: Any) -> Any:
        y, (h, c) = self.rnn(x)
        return self.head(y[:, -1]), h, c


class BiGRU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(12, 16, bidirectional=True)

    def forward(self, x: Any) -> Any:
        return self.rnn(x)


class ReluRNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.RNN(12, 16, nonlinearity="relu")

    def forward(self, x: Any, h: Any) -> Any:
        return self.rnn(x, h)


class TypeAsDetachUnbind(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x: Any, ref: Any) -> Any:
        y = self.proj(x).type_as(ref) + ref.detach()
        first, second, *_ = y.unbind(1)
        return first * second, y


class WeightNormConvs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 8, 3, padding=1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # the older API is deprecated
            self.b = nn.utils.weight_norm(nn.Conv1d(8, 8, 5, padding=2), dim=None)

    def forward(self, x: Any) -> Any:
        return self.b(F.gelu(self.a(x)))


class Block3d(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.c1 = nn.Sequential(nn.Conv3d(cin, cout, 3, stride, 1, bias=False),
                                nn.BatchNorm3d(cout), nn.ReLU(inplace=True))
        self.c2 = nn.Sequential(nn.Conv3d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm3d(cout))
        self.down = None if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv3d(cin, cout, 1, stride, bias=False), nn.BatchNorm3d(cout))

    def forward(self, x: Any) -> Any:
        skip = x if self.down is None else self.down(x)
        return torch.relu(self.c2(self.c1(x)) + skip)


class R3DTiny(nn.Module):
    """torchvision's r3d_18 in miniature: a (3, 7, 7) stem, residual 3-D blocks, a 3-D global
    average pool."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 8, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False),
                                  nn.BatchNorm3d(8), nn.ReLU(inplace=True))
        self.blocks = nn.Sequential(Block3d(8, 8, 1), Block3d(8, 16, 2))
        self.pool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.fc = nn.Linear(16, 5)

    def forward(self, x: Any) -> Any:
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


class AudioFrontEnd(nn.Module):
    """Whisper's / wav2vec2's front end: a conv1d stack with GELU (the second strided), tokens by
    transpose, a projection, a 1-D adaptive pool over time."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(16, 32, 3, padding=1)
        self.conv2 = nn.Conv1d(32, 32, 3, stride=2, padding=1)
        self.proj = nn.Linear(32, 24)
        self.pool = nn.AdaptiveAvgPool1d(4)

    def forward(self, mel: Any) -> Any:
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel))))
        tokens = self.proj(x.transpose(1, 2))
        return tokens, self.pool(x)


def _g(seed: int) -> Any:
    return torch.Generator().manual_seed(seed)


#: name -> (model class, example inputs for a seed)
MODELS: dict[str, tuple[type, Any]] = {
    "mobilenet_v2": (MobileNetV2Tiny, lambda s: (torch.randn(2, 3, 32, 32, generator=_g(s)),)),
    "lstm": (LSTMTagger, lambda s: (torch.randn(3, 7, 12, generator=_g(s)),)),
    "gru": (BiGRU, lambda s: (torch.randn(7, 3, 12, generator=_g(s)),)),
    "rnn": (ReluRNN, lambda s: (torch.randn(7, 3, 12, generator=_g(s)),
                                torch.randn(1, 3, 16, generator=_g(s + 1)))),
    "type_as": (TypeAsDetachUnbind, lambda s: (torch.randn(2, 5, 6, generator=_g(s)),
                                               torch.randn(2, 5, 6, generator=_g(s + 1)))),
    "weight_norm": (WeightNormConvs, lambda s: (torch.randn(2, 4, 20, generator=_g(s)),)),
    "r3d": (R3DTiny, lambda s: (torch.randn(1, 3, 4, 32, 32, generator=_g(s)),)),
    "audio": (AudioFrontEnd, lambda s: (torch.randn(2, 16, 40, generator=_g(s)),)),
}
RECURRENT = {"lstm": 4, "gru": 3, "rnn": 1}


@functools.cache
def _model(name: str) -> Any:
    torch.manual_seed(0)
    return MODELS[name][0]().eval()


@functools.cache
def _imported(name: str) -> wb.Graph:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # a default-cost warning fails the import
        warnings.filterwarnings("ignore", module="torch")
        warnings.filterwarnings("ignore", message=".*assigned during export")
        return wb.io.from_torch(_model(name), MODELS[name][1](0))


def _leaves(value: Any) -> list[Any]:
    from torch.utils._pytree import tree_leaves

    return [torch.as_tensor(np.asarray(v)) if not isinstance(v, torch.Tensor) else v
            for v in tree_leaves(value)]


def _close(got: Any, want: Any, tolerance: float) -> None:
    a, b = _leaves(got), _leaves(want)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert tuple(x.shape) == tuple(y.shape)
        assert float((x - y).abs().max()) <= tolerance * max(1.0, float(y.abs().max()))


# ----------------------------------------------------------------------------- costs
@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_op_is_costed_from_its_shapes(name: str) -> None:
    graph = _imported(name)
    assert [f"{op.id} ({op.attrs.get('target')})" for op in graph.ops
            if op.attrs.get("cost") == "default"] == []


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gemm_flops_are_the_flop_counter_s(name: str) -> None:
    want = flop_counter(_model(name), MODELS[name][1](0))
    assert want > 0
    assert graph_gemm_flops(_imported(name)) == pytest.approx(want, rel=0.01)


def _recurrent_flops(kind: str, steps: int, batch: int, inputs: int, hidden: int, layers: int,
                     directions: int) -> tuple[int, int]:
    """(GEMM FLOPs, all FLOPs) of cuDNN's recurrent work, restated: per layer and direction the
    input projection over every step and the recurrent product per step, then the gate
    arithmetic per hidden unit and step (LSTM 38, GRU 27, RNN 8: the projections and both
    biases added per gate, sigmoid 4, tanh 5, the state update)."""
    gates = RECURRENT[kind]
    gemm = 0
    for layer in range(layers):
        k = inputs if layer == 0 else directions * hidden
        gemm += directions * (2 * steps * batch * k * gates * hidden
                              + steps * 2 * batch * hidden * gates * hidden)
    per_unit = {"lstm": 38, "gru": 27, "rnn": 8}[kind]
    return gemm, gemm + per_unit * steps * batch * hidden * layers * directions


@pytest.mark.parametrize(("name", "sizes"), [
    ("lstm", (7, 3, 12, 16, 2, 1)), ("gru", (7, 3, 12, 16, 1, 2)), ("rnn", (7, 3, 12, 16, 1, 1))])
def test_recurrent_flops_are_cudnn_s_gemms_and_gates(name: str, sizes: tuple[int, ...]) -> None:
    graph = _imported(name)
    (op,) = [op for op in graph.ops if op.kind == name]
    gemm, total = _recurrent_flops(name, *sizes)
    assert op.flops == pytest.approx(total, rel=0.01)
    assert gemm_flops(op, graph.tensor(op.inputs[0]).shape) == pytest.approx(gemm, rel=0.01)
    assert gemm == flop_counter(_model(name).rnn, MODELS[name][1](0))  # and torch's count
    launches = op_cost(op, "h100", graph=graph).kernels
    steps, layers, directions = sizes[0], sizes[4], sizes[5]
    gemms = [k for k in launches if k.launch.kind == "gemm"]
    assert len(gemms) == layers * directions * (1 + steps)  # input GEMM + one per step


# ----------------------------------------------------------------------------- the executor
def _state(name: str) -> dict[str, Any]:
    model = _model(name)
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_torch_executor_computes_the_model(name: str) -> None:
    """With the model's own calls (the program) under nnc, and, saved as JSON (no program),
    from the kinds' torch forms fed the model's weights by tensor id."""
    graph, model = _imported(name), _model(name)
    fresh = MODELS[name][1](1)
    with torch.no_grad():
        want = model(*fresh)
    trace = wb.execute(wb.schedule(graph, "nnc"), executor="torch", device="cpu", repeats=1,
                       warmup=0, inputs=fresh, return_outputs=True)
    _close(trace.meta["outputs"], want, 1e-6)
    bare = graph_from_dict(graph_to_dict(graph))
    assert bare.program is None
    state = _state(name)
    inputs = [t for t in bare.tensors.values() if t.role == "input"]
    feed = {**{t.id: state[t.id] for t in bare.tensors.values() if t.role == "parameter"},
            **{t.id: x for t, x in zip(inputs, fresh, strict=True)}}
    trace = wb.execute(wb.schedule(bare, "serial"), executor="torch", device="cpu", repeats=1,
                       warmup=0, inputs=feed, return_outputs=True)
    got = [trace.meta["outputs"][t] for t in bare.outputs]
    _close(got, want, 1e-5)


# ----------------------------------------------------------------------------- conv1d / conv3d
def _one_conv(kind: str, x: tuple[int, ...], w: tuple[int, ...], y: tuple[int, ...],
              padding: list[int]) -> tuple[Op, Graph]:
    flops = 2.0 * math.prod(y) * math.prod(w[1:])
    size = [4 * math.prod(s) for s in (x, w, y)]
    op = Op("c", kind=kind, inputs=("x", "w"), outputs=("y",), flops=flops,
            bytes_read=size[0] + size[1], bytes_written=size[2],
            attrs={"kernel": list(w[2:]), "padding": padding})
    tensors = [Tensor("x", size[0], None, "input", x), Tensor("w", size[1], None, "parameter", w),
               Tensor("y", size[2], "c", "output", y)]
    return op, Graph([op], tensors, outputs=["y"])


def _tflops(op: Op, graph: Graph) -> tuple[float, list[str]]:
    """FLOP/s of the op on h100 from the stand-alone times of its kernels, and their classes."""
    kernels = op_cost(op, "h100", graph=graph).kernels
    return op.flops / sum(k.alone_us for k in kernels) / 1e6, [k.launch.kind for k in kernels]


@pytest.mark.parametrize(("case", "same_gemm_conv2d"), [
    # M = 4096 output positions, N = 128 channels, K = 576 (192 x 3 taps = 64 x 3 x 3)
    (("conv1d", (1, 192, 4096), (128, 192, 3), (1, 128, 4096), [1]),
     ((1, 64, 64, 64), (128, 64, 3, 3), (1, 128, 64, 64), [1, 1])),
    # M = 4096 (4 x 32 x 32), N = 128, K = 1728 (64 x 27 = 192 x 9)
    (("conv3d", (1, 64, 4, 32, 32), (128, 64, 3, 3, 3), (1, 128, 4, 32, 32), [1, 1, 1]),
     ((1, 192, 64, 64), (128, 192, 3, 3), (1, 128, 64, 64), [1, 1])),
])
def test_conv1d_and_conv3d_are_the_implicit_gemms_of_conv2d(case: Any,
                                                            same_gemm_conv2d: Any) -> None:
    ours, classes = _tflops(*_one_conv(*case))
    theirs, _ = _tflops(*_one_conv("conv2d", *same_gemm_conv2d))
    assert "gemm" in classes
    assert theirs / 2 <= ours <= theirs * 2, (case[0], ours, theirs)


def test_the_imported_conv1d_and_conv3d_run_gemm_kernels() -> None:
    for name, kind in (("r3d", "conv3d"), ("audio", "conv1d"), ("weight_norm", "conv1d")):
        graph = _imported(name)
        convs = [op for op in graph.ops if op.kind == kind]
        assert convs, name
        for op in convs:
            kernels = [k.launch.kind for k in op_cost(op, "h100", graph=graph).kernels]
            assert "gemm" in kernels or "direct" in kernels, (name, op.id, kernels)


# ----------------------------------------------------------------------------- ONNX
onnx = pytest.importorskip("onnx")


def _export(model: Any, example: tuple[Any, ...], path: Path) -> wb.Graph:
    quiet = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(quiet), \
            contextlib.redirect_stderr(quiet):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, str(path), opset_version=17, dynamo=False)
        return wb.load(path)


@pytest.mark.parametrize("name", ["lstm", "gru", "rnn"])
def test_an_exported_recurrent_model_runs_as_the_model(name: str, tmp_path: Path) -> None:
    model = _model(name)
    graph = _export(model, MODELS[name][1](0), tmp_path / f"{name}.onnx")
    cells = [op for op in graph.ops if op.kind == name]
    assert cells and all(op.attrs["convention"] == "onnx" for op in cells)
    assert [op.id for op in graph.ops if op.attrs.get("cost") == "default"] == []
    fresh = MODELS[name][1](1)
    with torch.no_grad():
        want = model(*fresh)
    trace = wb.execute(wb.schedule(graph, "nnc"), executor="torch", device="cpu", repeats=1,
                       warmup=0, inputs=fresh, return_outputs=True)
    _close(trace.meta["outputs"], want, 1e-5)
    assert graph_gemm_flops(graph) == pytest.approx(
        flop_counter(model, MODELS[name][1](0)), rel=0.01)


def _onnx_node_model(op_type: str, *, direction: str = "forward", layout: int = 0,
                     bias: bool = True, states: tuple[str, ...] = (), outputs: int = 3,
                     seed: int = 0, **attrs: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """One ONNX recurrent node (T=5, B=3, in=4, H=6) with random weights, its feeds."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    t, b, n_in, h = 5, 3, 4, 6
    gates, dirs = {"LSTM": 4, "GRU": 3, "RNN": 1}[op_type], 2 if direction == "bidirectional" else 1
    weights = {"W": (dirs, gates * h, n_in), "R": (dirs, gates * h, h)}
    if bias:
        weights["B"] = (dirs, 2 * gates * h)
    inits = [numpy_helper.from_array(0.5 * rng.standard_normal(s).astype(np.float32), k)
             for k, s in weights.items()]
    x_shape = [t, b, n_in] if layout == 0 else [b, t, n_in]
    state = [dirs, b, h] if layout == 0 else [b, dirs, h]
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    feeds.update({s: rng.standard_normal(state).astype(np.float32) for s in states})
    names = ["X", "W", "R", "B" if bias else "", "", "h0" if "h0" in states else "",
             "c0" if "c0" in states else ""]
    while names[-1] == "":
        names.pop()
    slots = ["Y", "Y_h", "Y_c"][:min(outputs, 3 if op_type == "LSTM" else 2)]
    out_names = [o if o != "Y" or outputs > 1 or len(slots) == 1 else "" for o in slots]
    node = helper.make_node(op_type, names, out_names, hidden_size=h, direction=direction,
                            **({"layout": layout} if layout else {}), **attrs)
    graph = helper.make_graph(
        [node], "cell", [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
                         for k, v in feeds.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in out_names if o],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), feeds


@pytest.mark.parametrize(("op_type", "options"), [
    ("LSTM", {}),
    ("LSTM", {"direction": "bidirectional", "states": ("h0", "c0")}),
    ("LSTM", {"direction": "reverse", "layout": 1, "states": ("h0",), "bias": False}),
    ("GRU", {}),  # ONNX's default GRU: the reset gate scales the state before its product
    ("GRU", {"direction": "bidirectional", "linear_before_reset": 1, "states": ("h0",)}),
    ("GRU", {"direction": "reverse", "layout": 1, "outputs": 1}),
    ("RNN", {"direction": "bidirectional", "states": ("h0",)}),
])
def test_an_onnx_recurrent_node_computes_what_onnx_computes(op_type: str, options: Any,
                                                            tmp_path: Path) -> None:
    from onnx.reference import ReferenceEvaluator

    model, feeds = _onnx_node_model(op_type, **options)
    onnx.save(model, tmp_path / "cell.onnx")
    want = ReferenceEvaluator(model).run(None, feeds)
    graph = wb.load(tmp_path / "cell.onnx")
    (op,) = graph.ops
    assert op.kind == op_type.lower() and op.attrs.get("cost") != "default"
    trace = wb.execute(wb.schedule(graph, "serial"), executor="torch", device="cpu", repeats=1,
                       warmup=0, inputs=feeds, return_outputs=True)
    got = _leaves(trace.meta["outputs"])
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-5)


def test_what_the_forms_do_not_compute_is_refused_in_one_line(tmp_path: Path) -> None:
    """ONNX's sequence_lens, peepholes, clip and non-default activations are not computed."""
    model, feeds = _onnx_node_model("LSTM", clip=1.0)
    onnx.save(model, tmp_path / "clip.onnx")
    graph = wb.load(tmp_path / "clip.onnx")
    with pytest.raises(OptionError, match=r"\(lstm\): cell_clip=1.0 is not supported") as err:
        wb.execute(wb.schedule(graph, "serial"), executor="torch", device="cpu", repeats=1,
                   warmup=0, inputs=feeds)
    assert "\n" not in str(err.value)
