"""ONNX import: shapes, FLOPs and bytes per op type against hand-computed values; the real models
shipped inside the onnx wheel; unknown ops warn; broken files give one-line errors."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench.io.onnx.load import load_onnx

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

F32 = TensorProto.FLOAT
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def _vi(name: str, shape: tuple[int | str, ...] | None, dtype: int = F32) -> Any:
    return helper.make_tensor_value_info(name, dtype, shape)


def _init(name: str, shape: tuple[int, ...], dtype: int = F32,
          vals: list[Any] | None = None) -> Any:
    n = 1
    for d in shape:
        n *= d
    return helper.make_tensor(name, dtype, shape, vals if vals is not None else [0] * n)


def _save(tmp_path: Path, nodes: list[Any], inputs: list[Any], outputs: list[Any],
          inits: Sequence[Any] = (), value_info: Sequence[Any] = (), name: str = "m.onnx",
          opset: int = 17) -> Path:
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializer=list(inits),
                              value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                    helper.make_opsetid("com.example", 1)])
    path = tmp_path / name
    path.write_bytes(model.SerializeToString())
    return path


def _one(tmp_path: Path, node: Any, inputs: list[Any], out: Any, inits: Sequence[Any] = (),
         opset: int = 17) -> wb.Op:
    g = load_onnx(_save(tmp_path, [node], inputs, [out], inits, opset=opset))
    return g.op(node.name)


# ---------------------------------------------------------------------------- convolutions, gemm
def test_conv_strides_pads(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", strides=[2, 2],
                            pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    op = _one(tmp_path, node, [_vi("x", (1, 3, 32, 32))], _vi("y", None),
              [_init("w", (16, 3, 3, 3)), _init("b", (16,))])
    g = load_onnx(tmp_path / "m.onnx")
    # Hout = floor((32 + 2 - 3) / 2) + 1 = 16
    assert g.tensor("y").shape == (1, 16, 16, 16)
    # MACs = N*Cout*Hout*Wout * Cin*kh*kw = 1*16*16*16 * 3*3*3 = 110592; FLOPs = 2 * MACs
    assert op.kind == "conv2d" and op.flops == 2 * 110592
    # reads x (3072) + w (432) + b (16) floats, writes 16*16*16 floats
    assert op.bytes_read == (3072 + 432 + 16) * 4 and op.bytes_written == 4096 * 4
    # implicit GEMM: ceil(N*Hout*Wout / 64) * ceil(Cout / 64) = ceil(256/64) * 1
    assert op.thread_blocks == 4
    assert op.attrs["stride"] == [2, 2] and op.attrs["kernel"] == [3, 3]
    assert g.tensor("w").role == "parameter" and g.tensor("x").role == "input"
    assert g.tensor("y").role == "output" and g.outputs == ("y",)


def test_conv_group_and_dilation(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="gconv", group=4, dilations=[2, 2])
    op = _one(tmp_path, node, [_vi("x", (1, 8, 10, 10))], _vi("y", None),
              [_init("w", (8, 2, 3, 3))])
    # dilated kernel spans 2*(3-1)+1 = 5 -> Hout = 10 - 5 + 1 = 6
    # MACs = 1*8*6*6 * (Cin/group = 2)*3*3 = 5184
    assert op.flops == 2 * 5184 and op.attrs["groups"] == 4
    assert op.bytes_written == 8 * 36 * 4


def test_conv_transpose(tmp_path: Path) -> None:
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[2, 2])
    op = _one(tmp_path, node, [_vi("x", (1, 4, 5, 5))], _vi("y", None), [_init("w", (4, 2, 2, 2))])
    # every input element (1*4*5*5 = 100) does Cout/group*kh*kw = 2*2*2 = 8 multiply-adds
    assert op.kind == "conv_transpose" and op.flops == 2 * 100 * 8


def test_gemm_transposes(tmp_path: Path) -> None:
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="fc", transB=1)
    op = _one(tmp_path, node, [_vi("a", (4, 8))], _vi("y", None),
              [_init("b", (16, 8)), _init("c", (16,))])
    # (4 x 8) @ (8 x 16): FLOPs = 2*M*K*N = 2*4*8*16
    assert op.kind == "matmul" and op.flops == 1024
    assert op.bytes_read == (32 + 128 + 16) * 4 and op.bytes_written == 64 * 4
    assert op.thread_blocks == 1
    node = helper.make_node("Gemm", ["a", "b"], ["y"], name="fcT", transA=1)
    op = _one(tmp_path, node, [_vi("a", (8, 4))], _vi("y", None), [_init("b", (8, 16))])
    assert op.flops == 2 * 4 * 8 * 16  # transA: A is (K, M)


def test_matmul_batched_broadcast(tmp_path: Path) -> None:
    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")
    op = _one(tmp_path, node, [_vi("a", (2, 3, 4, 5))], _vi("y", None), [_init("b", (5, 6))])
    # out (2,3,4,6) = 144 elements, K = 5: FLOPs = 2*144*5
    assert op.flops == 1440
    # thread blocks: batch (2*3) * ceil(4/64) * ceil(6/64) = 6
    assert op.thread_blocks == 6


# ---------------------------------------------------------------------------- elementwise
@pytest.mark.parametrize(("op_type", "kind", "per_element", "attrs"), [
    ("Relu", "relu", 1, {}), ("Sigmoid", "sigmoid", 4, {}), ("Tanh", "tanh", 5, {}),
    ("LeakyRelu", "leaky_relu", 2, {"alpha": 0.1}), ("Exp", "exp", 1, {}),
    ("Sqrt", "sqrt", 1, {}), ("Erf", "erf", 1, {}), ("Softmax", "softmax", 5, {"axis": -1}),
    ("InstanceNormalization", "instancenorm", 8, {}),
])
def test_unary_ops(tmp_path: Path, op_type: str, kind: str, per_element: int,
                   attrs: dict[str, Any]) -> None:
    inputs, inits = ["x"], []
    if op_type == "InstanceNormalization":
        inputs += ["s", "b"]
        inits = [_init("s", (3,)), _init("b", (3,))]
    node = helper.make_node(op_type, inputs, ["y"], name="u", **attrs)
    op = _one(tmp_path, node, [_vi("x", (2, 3, 4))], _vi("y", None), inits)
    # 2*3*4 = 24 elements
    assert op.kind == kind and op.flops == per_element * 24
    assert op.bytes_written == 24 * 4 and op.bytes_read == 24 * 4 + 4 * 3 * len(inits)
    assert op.thread_blocks == 1


@pytest.mark.parametrize(("op_type", "kind"), [("Add", "add"), ("Sub", "sub"), ("Mul", "mul"),
                                               ("Div", "div"), ("Pow", "pow")])
def test_binary_broadcast(tmp_path: Path, op_type: str, kind: str) -> None:
    node = helper.make_node(op_type, ["x", "c"], ["y"], name="bin")
    op = _one(tmp_path, node, [_vi("x", (2, 3, 4))], _vi("y", None), [_init("c", (4,))])
    # one FLOP per output element (24); reads x (24) and the broadcast c (4)
    assert op.kind == kind and op.flops == 24 and op.bytes_read == (24 + 4) * 4


def test_clip_with_bounds_and_sum(tmp_path: Path) -> None:
    lo, hi = _init("lo", (), vals=[0.0]), _init("hi", (), vals=[6.0])
    op = _one(tmp_path, helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clip"),
              [_vi("x", (10,))], _vi("y", None), [lo, hi])
    assert op.kind == "clip" and op.flops == 2 * 10  # min and max per element
    node = helper.make_node("Sum", ["a", "b", "c"], ["y"], name="sum")
    op = _one(tmp_path, node, [_vi(t, (5, 5)) for t in "abc"], _vi("y", None))
    assert op.kind == "add" and op.flops == 2 * 25  # k - 1 = 2 adds per element


def test_norms(tmp_path: Path) -> None:
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn")
    op = _one(tmp_path, node, [_vi("x", (1, 4, 3, 3))], _vi("y", None),
              [_init(n, (4,)) for n in "sbmv"])
    # 2 FLOPs per element (folded x*a + b); reads x (36) + 4 params of C=4
    assert op.kind == "batchnorm" and op.flops == 72 and op.bytes_read == (36 + 16) * 4
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], name="ln", axis=-1)
    op = _one(tmp_path, node, [_vi("x", (2, 8))], _vi("y", None),
              [_init("s", (8,)), _init("b", (8,))])
    assert op.kind == "layernorm" and op.flops == 8 * 16


# ---------------------------------------------------------------------------- pools, structure
def test_pools(tmp_path: Path) -> None:
    x = [_vi("x", (1, 4, 9, 9))]
    node = helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[3, 3],
                            strides=[2, 2], pads=[1, 1, 1, 1])
    op = _one(tmp_path, node, x, _vi("y", None))
    # Hout = floor((9 + 2 - 3) / 2) + 1 = 5; 4*5*5 = 100 outputs * 9 window elements
    assert op.kind == "maxpool" and op.flops == 900 and op.bytes_written == 400
    node = helper.make_node("AveragePool", ["x"], ["y"], name="ap", kernel_shape=[2, 2],
                            strides=[2, 2])
    op = _one(tmp_path, node, x, _vi("y", None))
    assert op.kind == "avgpool" and op.flops == 4 * 4 * 4 * 4  # 64 outputs * 4
    for op_type, kind in (("GlobalAveragePool", "global_avgpool"),
                          ("GlobalMaxPool", "global_maxpool")):
        op = _one(tmp_path, helper.make_node(op_type, ["x"], ["y"], name="gp"), x, _vi("y", None))
        # one FLOP per input element (324), output (1, 4, 1, 1)
        assert op.kind == kind and op.flops == 324 and op.bytes_written == 16


def test_concat_transpose_and_views(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Concat", ["a", "b"], ["c"], name="cat", axis=1),
        helper.make_node("Transpose", ["c"], ["t"], name="tr", perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["t", "shape"], ["r"], name="rs"),
        helper.make_node("Flatten", ["r"], ["f"], name="fl", axis=1),
        helper.make_node("Unsqueeze", ["f", "ax"], ["u"], name="us"),
        helper.make_node("Squeeze", ["u", "ax"], ["s"], name="sq"),
        helper.make_node("Identity", ["s"], ["i"], name="id"),
        helper.make_node("Dropout", ["i"], ["d"], name="drop"),
    ]
    inits = [_init("shape", (2,), TensorProto.INT64, [6, 9]), _init("ax", (1,), TensorProto.INT64,
                                                                   [0])]
    g = load_onnx(_save(tmp_path, nodes, [_vi("a", (1, 2, 3, 3)), _vi("b", (1, 4, 3, 3))],
                        [_vi("d", None)], inits))
    cat = g.op("cat")
    # (1,2,3,3) + (1,4,3,3) on axis 1 -> (1,6,3,3): no FLOPs, moves (18 + 36) floats each way
    assert g.tensor("c").shape == (1, 6, 3, 3)
    assert (cat.kind, cat.flops, cat.bytes_read, cat.bytes_written) == ("concat", 0, 216, 216)
    tr = g.op("tr")
    assert g.tensor("t").shape == (1, 3, 3, 6) and tr.bytes_read == tr.bytes_written == 216
    kinds = {"rs": "reshape", "fl": "flatten", "us": "unsqueeze", "sq": "squeeze",
             "id": "identity", "drop": "dropout"}
    for op_id, kind in kinds.items():
        op = g.op(op_id)
        assert (op.kind, op.flops, op.bytes_read, op.bytes_written) == (kind, 0, 0, 0)
        assert op.attrs["view"] is True and "cost" not in op.attrs
    assert g.tensor("r").shape == (6, 9) and g.tensor("d").size_bytes == 54 * 4
    assert g.edges == (("cat", "tr"), ("tr", "rs"), ("rs", "fl"), ("fl", "us"), ("us", "sq"),
                       ("sq", "id"), ("id", "drop"))


def test_constants_are_folded_into_parameters(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("ConstantOfShape", ["shp"], ["w"], value=helper.make_tensor(
            "v", F32, [1], [0.5])),
        helper.make_node("Constant", [], ["k"], value=helper.make_tensor("c", F32, [2], [1, 2])),
        helper.make_node("MatMul", ["x", "w"], ["y"]),
        helper.make_node("Relu", ["y"], ["z"]),
    ]
    g = load_onnx(_save(tmp_path, nodes, [_vi("x", (2, 3))], [_vi("z", None), _vi("k", None)],
                        [_init("shp", (2,), TensorProto.INT64, [3, 4])]))
    # weight-only nodes are folded (no kernel); unnamed nodes get <op_type>_<k>
    assert g.op_ids == ("MatMul_0", "Relu_0")
    assert g.tensor("w").role == "parameter" and g.tensor("w").shape == (3, 4)
    assert g.tensor("w").producer is None and g.tensor("w").size_bytes == 48
    assert g.tensor("k").role == "parameter" and "k" in g.outputs
    assert g.op("MatMul_0").flops == 2 * 2 * 3 * 4  # (2x3) @ (3x4)
    assert g.op("MatMul_0").bytes_read == (6 + 12) * 4  # x and the folded weight


def test_dtypes_set_tensor_bytes(tmp_path: Path) -> None:
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    g = load_onnx(_save(tmp_path, [node], [_vi("x", (4, 4), TensorProto.FLOAT16)],
                        [_vi("y", None, TensorProto.FLOAT16)]))
    assert g.tensor("x").dtype == "float16" and g.tensor("x").size_bytes == 32
    assert g.op("r").bytes_read == 32 and g.op("r").bytes_written == 32


def test_op_ids_kept_verbatim(tmp_path: Path) -> None:
    names = ['<script>alert("x")</script>', "a/b:c", "line\nbreak", "ünï"]
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=n)
             for i, n in enumerate(names)]
    nodes.append(helper.make_node("Relu", ["t4"], ["t5"], name=names[0]))  # a repeated name
    g = load_onnx(_save(tmp_path, nodes, [_vi("t0", (2,))], [_vi("t5", None)]))
    assert g.op_ids[:4] == tuple(names) and g.op_ids[4] == names[0] + "_0"


def test_symbolic_dims(tmp_path: Path) -> None:
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    path = _save(tmp_path, [node], [_vi("x", ("batch", 8))], [_vi("y", None)])
    with pytest.warns(UserWarning, match="symbolic input dimensions set to 1: 'batch'"):
        g = load_onnx(path)
    assert g.tensor("y").shape == (1, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = load_onnx(path, dims={"batch": 4})
    assert g.tensor("y").shape == (4, 8) and g.op("r").flops == 32
    with pytest.raises(wb.OptionError, match=r"dims\['batch'\] must be a positive integer"):
        load_onnx(path, dims={"batch": 0})


# ---------------------------------------------------------------------------- unknown ops
def test_unknown_ops_warn_once_with_counts(tmp_path: Path) -> None:
    nodes = [helper.make_node("FooBar", ["x"], ["a"], name="f", domain="com.example"),
             helper.make_node("Baz", ["a"], ["b"], name="z1", domain="com.example"),
             helper.make_node("Baz", ["b"], ["c"], name="z2", domain="com.example"),
             helper.make_node("Relu", ["c"], ["d"], name="r")]
    path = _save(tmp_path, nodes, [_vi("x", (2, 5))], [_vi("d", None)],
                 value_info=[_vi("a", (2, 5)), _vi("b", (3, 5)), _vi("c", (3, 5))])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = load_onnx(path)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert "3 op(s) imported with a default cost" in messages[0]
    assert "Baz (unknown op type) ×2" in messages[0]
    assert "FooBar (unknown op type) ×1" in messages[0]
    assert "\n" not in messages[0]
    f, z1 = g.op("f"), g.op("z1")
    # default cost: bytes from the known shapes, FLOPs = output elements
    assert f.attrs["cost"] == "default" and f.flops == 10 and f.bytes_read == 40
    assert z1.flops == 15 and z1.kind == "baz" and z1.attrs["onnx_domain"] == "com.example"
    assert "cost" not in g.op("r").attrs


# ---------------------------------------------------------------------------- real models
@pytest.mark.parametrize(("model", "counts"), [
    ("light_squeezenet", {"conv2d": 26, "concat": 8, "relu": 26, "maxpool": 3,
                          "global_avgpool": 1}),
    ("light_resnet50", {"conv2d": 53, "batchnorm": 53, "add": 16, "relu": 49}),
    ("light_inception_v2", {"conv2d": 69, "concat": 10, "batchnorm": 69, "avgpool": 8}),
])
def test_shipped_models(model: str, counts: dict[str, int]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every op type of these models has a rule
        g = wb.load(LIGHT / f"{model}.onnx")
    kinds = g.summary()["op_kinds"]
    for kind, n in counts.items():
        assert kinds[kind] == n, (kind, kinds)
    assert not [op.id for op in g.ops if op.attrs.get("cost") == "default"]
    assert all(op.flops > 0 for op in g.ops if op.kind == "conv2d")
    s = wb.schedule(g, "nnc")
    s.validate()
    trace = wb.simulate(s)
    assert trace.respects(g) and trace.makespan > 0


def test_resnet50_total_flops() -> None:
    g = load_onnx(LIGHT / "light_resnet50.onnx")
    conv_fc = sum(op.flops for op in g.ops if op.kind in ("conv2d", "matmul"))
    # ResNet-50 at 224x224 is about 4.1 GMACs = 8.2 GFLOPs
    assert 8.0e9 < conv_fc < 8.4e9


# ---------------------------------------------------------------------------- broken files
def _broken(tmp_path: Path) -> dict[str, Path]:
    good = (LIGHT / "light_squeezenet.onnx").read_bytes()
    files = {
        "truncated": good[: len(good) // 2],
        "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256)),
        "empty": b"",
        "text": b"hello, I am not a model\n",
    }
    out = {}
    for name, data in files.items():
        out[name] = tmp_path / f"{name}.onnx"
        out[name].write_bytes(data)
    return out


@pytest.mark.parametrize("case", ["truncated", "png", "empty", "text"])
def test_broken_files_one_line_errors(tmp_path: Path, case: str) -> None:
    path = _broken(tmp_path)[case]
    with pytest.raises(wb.FormatError) as info:
        wb.load(path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    assert "ONNX" in message or "onnx" in message


@pytest.mark.filterwarnings("ignore:.*default cost")
def test_dangling_input_names_file(tmp_path: Path) -> None:
    node = helper.make_node("Relu", ["nowhere"], ["y"], name="r")
    path = _save(tmp_path, [node], [], [_vi("y", None)])
    with pytest.raises(wb.WorkbenchError, match="reads tensor 'nowhere'") as info:
        load_onnx(path)
    assert str(path) in str(info.value)
