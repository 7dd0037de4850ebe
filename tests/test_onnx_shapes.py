"""ONNX import keeps every op's shapes on the files real exporters write.

The legacy TorchScript exporter (``dynamo=False``) computes the shapes of ``Expand``, ``Reshape``,
``Slice``, ``Range``, ``ConstantOfShape``, ``Pad`` ... from ``Shape -> Gather -> Div -> Concat``
chains that ONNX's own shape inference cannot follow; :mod:`workbench.io.onnx.shapes` evaluates
them and infers again.  Checked here:

* the zoo's BERT, ShuffleNetV2, ViT, T5, GPT-2, U-Net and Swin transformer (written the way
  torchvision writes it: shifted windows by ``torch.roll``, window partition and reverse by
  view/permute, padding to whole windows, a relative position bias gathered by an index buffer,
  patch merging), exported with the legacy exporter (and with the dynamo exporter, a second or
  two each), import with no op of default cost and no op output of unknown shape, and their
  GEMM FLOPs (conv, matmul, attention) are within 1% of PyTorch's own count
  (``torch.utils.flop_counter.FlopCounterMode``, attention by the math backend);
* the Swin import takes well under 10 s and its graph runs the model (the folded masks, index
  tables and shape constants are right);
* example input shapes (``input_shapes=`` / ``--input-shape``) for files with symbolic
  dimensions, consistent with ``dims=``, and their mistakes as one-line errors;
* the warning when shapes stay unknown names the ops and the remedies; Resize has a cost rule.
"""

from __future__ import annotations

import importlib.util
import math
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402
from torch import nn  # noqa: E402

import workbench as wb  # noqa: E402
from tests._complexity import machine_slowdown  # noqa: E402
from tests._onnx_exports import export  # noqa: E402
from tests._onnx_exports import exported as shared_export  # noqa: E402
from tests.model_zoo import ZOO, new_inputs  # noqa: E402
from workbench.io.onnx.load import load_onnx  # noqa: E402
from workbench.ops import OPS  # noqa: E402

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


# ------------------------------------------------------------------------------ the models
#: name -> builder of (model, example inputs): the zoo's (its Swin: tests/model_zoo_swin.py).
MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[Any, ...]]]] = {
    name: ZOO[name] for name in ("bert", "shufflenet", "vit", "t5", "gpt2", "unet", "swin")}
#: Models exported with the dynamo exporter too (each about a second or two here).
DYNAMO = ("bert", "shufflenet", "vit", "t5", "gpt2", "unet")


# ------------------------------------------------------------------------------ helpers
def _export(model: nn.Module, example: tuple[Any, ...], path: Path, *, dynamo: bool = False,
            **options: Any) -> Path:
    return export(model, example, path, dynamo=dynamo, **options)


@pytest.fixture(scope="module")
def exported() -> Callable[[str, bool], Path]:
    """(model name, dynamo) -> the exported file, made once per test session."""
    return lambda name, dynamo: shared_export(name, "dynamo" if dynamo else "legacy")


def _load_quietly(path: Path, **options: Any) -> tuple[wb.Graph, list[str]]:
    """The graph and the warnings its import gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = wb.load(path, **options)
    return graph, [str(w.message) for w in caught]


def _unshaped(graph: wb.Graph) -> list[str]:
    """Op outputs whose shape the import does not know (no shape and no bytes)."""
    return [t for op in graph.ops for t in op.outputs
            if not graph.tensor(t).shape and graph.tensor(t).size_bytes == 0]


def _gemm_flops(graph: wb.Graph) -> float:
    return sum(op.flops for op in graph.ops if op.kind in OPS and OPS[op.kind].gemm)


def _torch_gemm_flops(model: nn.Module, example: tuple[Any, ...]) -> int:
    """PyTorch's count of the model's matrix products and convolutions, attention by the math
    backend (grad mode on: ``nn.MultiheadAttention``'s fused inference path is not taken)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(*example)
    return int(counter.get_total_flops())


def _check_fully_shaped(name: str, path: Path) -> wb.Graph:
    graph, messages = _load_quietly(path)
    defaulted = [op.id for op in graph.ops if op.attrs.get("cost") == "default"]
    assert not defaulted, (name, defaulted, messages)
    assert not _unshaped(graph), name
    assert not [m for m in messages if "default cost" in m]
    model, example = MODELS[name]()
    want = _torch_gemm_flops(model, example)
    assert want > 0 and _gemm_flops(graph) == pytest.approx(want, rel=0.01), name
    return graph


# ------------------------------------------------------------------------------ every op shaped
@pytest.mark.parametrize("name", sorted(MODELS))
def test_legacy_exports_import_with_every_op_shaped(name: str, exported: Any) -> None:
    path = exported(name, False)
    kinds = {n.op_type for n in onnx.load(str(path)).graph.node}
    if name != "unet":  # the shape arithmetic is in the file; none of it is left as a kernel
        assert "Shape" in kinds
    graph = _check_fully_shaped(name, path)
    assert not {op.attrs["onnx_op_type"] for op in graph.ops} & {"Shape", "ConstantOfShape"}


@pytest.mark.parametrize("name", DYNAMO)
def test_dynamo_exports_import_with_every_op_shaped(name: str, exported: Any) -> None:
    pytest.importorskip("onnxscript")  # the dynamo exporter needs it
    _check_fully_shaped(name, exported(name, True))


def test_swin_imports_in_seconds_and_runs_the_model(exported: Any) -> None:
    """The Swin export keeps ~1,000 nodes of shape arithmetic (the shifted windows' mask, the
    padding, the window partition); all of it folds, fast, into constants that are right."""
    path = exported("swin", False)
    start = time.perf_counter()
    graph, _ = _load_quietly(path)
    assert time.perf_counter() - start < 10.0 * machine_slowdown()
    assert len(onnx.load(str(path)).graph.node) > 4 * len(graph.ops)
    model, example = MODELS["swin"]()
    inputs = new_inputs(example)
    with torch.no_grad():
        want = model(*inputs).numpy()
    trace = wb.execute(wb.schedule(graph, "serial"), executor="torch", device="cpu", repeats=1,
                       warmup=0, inputs=inputs, return_outputs=True)
    got = np.asarray(trace.meta["outputs"][0] if isinstance(trace.meta["outputs"], (list, tuple))
                     else trace.meta["outputs"])
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


# ------------------------------------------------------------------------------ example shapes
@pytest.fixture(scope="module")
def dynamic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The zoo's ResNet exported with a symbolic batch, height and width."""
    model, example = ZOO["resnet"]()
    path = tmp_path_factory.mktemp("dynamic") / "resnet.onnx"
    return _export(model, example, path, input_names=["x"], output_names=["y"],
                   dynamic_axes={"x": {0: "batch", 2: "h", 3: "w"}, "y": {0: "batch"}})


def test_input_shapes_set_the_symbolic_dimensions(dynamic: Path) -> None:
    graph, messages = _load_quietly(dynamic, input_shapes={"x": (4, 3, 32, 32)})
    assert not messages and not _unshaped(graph)
    first = graph.ops[0]
    assert graph.tensor(first.outputs[0]).shape == (4, 16, 32, 32)
    # the same as naming the symbolic dimensions (dims=), or both when they agree
    by_dims = load_onnx(dynamic, dims={"batch": 4, "h": 32, "w": 32})
    both = load_onnx(dynamic, dims={"batch": 4}, input_shapes={"x": [4, 3, 32, 32]})
    array = load_onnx(dynamic, input_shapes={"x": np.array([4, 3, 32, 32])})
    size = load_onnx(dynamic, input_shapes={"x": torch.Size([4, 3, 32, 32])})
    for other in (by_dims, both, array, size):
        assert [(o.id, o.flops) for o in other.ops] == [(o.id, o.flops) for o in graph.ops]
    # without either: the dimensions are 1, and the warning says how to choose them
    _, messages = _load_quietly(dynamic)
    assert any("symbolic input dimensions set to 1" in m and "input_shapes=" in m
               and "--input-shape" in m for m in messages)


def test_input_shapes_reach_inputs_that_share_their_dimensions(tmp_path: Path) -> None:
    model, example = ZOO["bert"]()
    path = _export(model, example, tmp_path / "bert.onnx", input_names=["ids", "mask"],
                   dynamic_axes={"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}})
    graph, messages = _load_quietly(path, input_shapes={"ids": (3, 12)})
    assert not messages and not _unshaped(graph)
    assert graph.tensor("mask").shape == (3, 12)
    assert not [op.id for op in graph.ops if op.attrs.get("cost") == "default"]


@pytest.mark.parametrize(("shapes", "dims", "message"), [
    ({"y": (1, 3, 8, 8)}, None, "the graph has no input 'y' (inputs: 'x' (batch, 3, h, w))"),
    ({"x": (1, 3, 8)}, None, "input_shapes['x'] has 3 dimensions (1, 3, 8), the input has 4 "
                            "(batch, 3, h, w)"),
    ({"x": (0, 3, 8, 8)}, None, "input_shapes['x'] dimension 0 is 0: dimensions must be "
                               "positive"),
    ({"x": (1, -3, 8, 8)}, None, "dimension 1 is -3"),
    ({"x": (1, 4, 8, 8)}, None, "input_shapes['x'] dimension 1 is 4, the file fixes it at 3"),
    ({"x": (2, 3, 8, 8)}, {"batch": 4}, "dimension 0 ('batch') is 2, but dims sets 'batch' "
                                        "to 4"),
    ({"x": "1,3,8,8"}, None, "input_shapes['x'] must be a sequence of positive integers"),
    ({"x": (1.0, 3, 8, 8)}, None, "must be a sequence of positive integers"),
    ([("x", (1, 3, 8, 8))], None, "input_shapes must map input names to shapes"),
])
def test_input_shapes_mistakes_are_one_line_errors(dynamic: Path, shapes: Any, dims: Any,
                                                   message: str) -> None:
    with pytest.raises(wb.OptionError) as info:
        wb.load(dynamic, input_shapes=shapes, dims=dims)
    text = str(info.value)
    assert message in text and "\n" not in text, text
    if "inputs:" in text:
        assert "'x' (batch, 3, h, w)" in text


def test_input_shapes_apply_to_onnx_only(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    wb.save(wb.models.build("inception_v3", batch=1), path)
    with pytest.raises(wb.OptionError, match="input_shapes apply to .onnx models only"):
        wb.load(path, input_shapes={"x": (1,)})


def test_cli_input_shape_and_simplify(dynamic: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main

    out = tmp_path / "r.html"
    common = ["--policies", "serial", "--no-progress", "--plotlyjs", "cdn", "-o", str(out)]
    assert main(["compare", str(dynamic), "--input-shape", "x=2,3,16,16", *common]) == 0
    captured = capsys.readouterr()
    assert "resnet: " in captured.out and "symbolic input dimensions" not in captured.err
    for bad, message in ((["--input-shape", "y=1,3,8,8"], "no input 'y' (inputs: 'x'"),
                         (["--input-shape", "x=1,3,8"], "has 3 dimensions"),
                         (["--input-shape", "x=1,3,0,8"], "dimension 2 is 0"),
                         (["--input-shape", "x"], "--input-shape expects NAME=D1,D2,..."),
                         (["--input-shape", "x=1,3,8,8", "--input-shape", "x=2,3,8,8"],
                          "gives input 'x' twice")):
        assert main(["compare", str(dynamic), *bad, *common]) == 2, bad
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("workbench: error: ") and message in err
    assert main(["compare", "--model", "inception_v3", "--input-shape", "x=1", *common]) == 2
    assert "--input-shape/--simplify apply to graph files only" in capsys.readouterr().err
    if importlib.util.find_spec("onnxscript") is not None:
        assert main(["compare", str(dynamic), "--simplify", "--input-shape", "x=2,3,16,16",
                     *common]) == 0


# ------------------------------------------------------------------------------ hand-made graphs
def _vi(name: str, shape: Any, dtype: int = F32) -> Any:
    return helper.make_tensor_value_info(name, dtype, shape)


def _save(path: Path, nodes: list[Any], inputs: list[Any], outputs: list[Any],
          inits: list[Any] | None = None, **options: Any) -> Path:
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializer=inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save_model(model, str(path), **options)
    return path


def test_warning_names_the_ops_and_the_remedies(tmp_path: Path) -> None:
    # a Reshape to a shape the model is given at run time: nothing can know its output
    nodes = [helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
             helper.make_node("Relu", ["r"], ["a"], name="relu"),
             helper.make_node("Sigmoid", ["a"], ["y"], name="sigmoid")]
    path = _save(tmp_path / "m.onnx", nodes, [_vi("x", (2, 8)), _vi("s", (2,), I64)],
                 [_vi("y", None)])
    _, messages = _load_quietly(path)
    [text] = [m for m in messages if "default cost" in m]
    assert "\n" not in text
    assert text.startswith("m.onnx: 2 op(s) imported with a default cost")  # Reshape: a view
    assert "Relu (shapes unknown) ×1, Sigmoid (shapes unknown) ×1" in text
    assert "simplify=True (CLI --simplify)" in text
    assert "input_shapes={name: shape} (CLI --input-shape NAME=1,3,224,224)" in text
    # an unknown op type has no such remedy; many types: the commonest, then how many more
    nodes = [helper.make_node(f"Op{k}", ["x"], [f"y{k}"], name=f"n{k}", domain="custom")
             for k in range(8)]
    nodes.append(helper.make_node("Op0", ["x"], ["z"], name="again", domain="custom"))
    graph = helper.make_graph(nodes, "test", [_vi("x", (2, 8))],
                              [_vi(f"y{k}", (2, 8)) for k in range(8)] + [_vi("z", (2, 8))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("custom", 1)])
    (tmp_path / "c.onnx").write_bytes(model.SerializeToString())
    _, messages = _load_quietly(tmp_path / "c.onnx")
    [text] = [m for m in messages if "default cost" in m]
    assert "Op0 (unknown op type) ×2" in text and "and 2 more of 2 other types" in text
    assert "simplify" not in text


def test_gather_elements_and_external_data_fold(tmp_path: Path) -> None:
    """BERT's token-type ids: ``GatherElements`` over a (1, 512) buffer (ONNX's reference
    implementation fails on it); the dynamo exporter keeps such buffers in external data."""
    buffer = np.zeros((1, 512), dtype=np.int64)
    buffer[0, 1::2] = 1
    index = np.arange(128, dtype=np.int64).reshape(1, 128)
    nodes = [helper.make_node("GatherElements", ["buffer", "index"], ["types"], axis=1,
                              name="gather_elements"),
             helper.make_node("Gather", ["table", "types"], ["emb"], name="embed"),
             helper.make_node("Reshape", ["x", "target"], ["xr"], name="reshape"),
             helper.make_node("Add", ["xr", "emb"], ["y"], name="add")]
    inits = [onnx.numpy_helper.from_array(buffer, "buffer"),
             onnx.numpy_helper.from_array(index, "index"),
             onnx.numpy_helper.from_array(np.array([1, 128, 16], np.int64), "target")]
    path = _save(tmp_path / "m.onnx", nodes, [_vi("x", (128, 16)), _vi("table", (2, 16))],
                 [_vi("y", None)], inits, save_as_external_data=True,
                 all_tensors_to_one_file=True, location="m.onnx.data", size_threshold=0)
    graph, messages = _load_quietly(path)
    assert not messages and not _unshaped(graph)
    assert graph.op_ids == ("embed", "reshape", "add")
    assert graph.tensor("y").shape == (1, 128, 16)
    assert graph.program is not None
    types = graph.program.parameters()["types"]
    assert np.array_equal(types, np.take_along_axis(buffer, index, axis=1))


def test_resize_has_a_cost_rule(exported: Any) -> None:
    graph, _ = _load_quietly(exported("unet", False))
    resize = [op for op in graph.ops if op.kind == "resize"]
    assert len(resize) == 2 and not [op for op in resize if op.attrs.get("cost") == "default"]
    for op in resize:
        y = graph.tensor(op.outputs[0])
        per_element = {"nearest": 0, "linear": 9}[op.attrs["mode"]]  # bilinear: 3 lerps of 3
        assert op.flops == per_element * math.prod(y.shape)
        assert op.bytes_written == y.size_bytes
        assert op.bytes_read >= graph.tensor(op.inputs[0]).size_bytes
