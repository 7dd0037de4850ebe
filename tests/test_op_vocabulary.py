"""The op attribute vocabulary: one set of attribute names per kind, written by every importer,
read by every torch form, NumPy reference and cost rule.

* every kind declares vocabulary names only, and every kind an importer emits (the ONNX rules,
  the torch names) has a torch form, or a one-line error names the kind and the op;
* the torch forms compute their NumPy references on the vocabulary's cases
  (``tests/_form_cases.py``: ONNX's and torch's conventions);
* single ONNX nodes imported and run with the torch executor compute what ONNX's own reference
  evaluator computes (an independent oracle for the attribute conversion);
* the conversions themselves: ONNX (asymmetric pads, ``auto_pad``, Gemm's ``transB``, Conv's
  ``group``, defaults), ``from_torch`` (``transpose`` dims -> ``perm``, ``split`` -> sizes,
  ``linear`` -> ``trans_b`` ...), JSON and DOT (synonyms renamed, wrong types one-line errors).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import workbench as wb
from tests._form_cases import FORM_CASES, FormCase, case_ids
from workbench.errors import FormatError, OptionError
from workbench.io.text.dot import graph_from_dot
from workbench.io.text.json_format import graph_from_dict, graph_to_dict
from workbench.ops import OPS, TORCH_ALIASES, TORCH_FORM_KINDS, attrs_of, canonical_kind
from workbench.ops.attrs import ATTRIBUTES
from workbench.values.graph import Graph, Op, Tensor

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402


# ----------------------------------------------------------------------------- the table
def test_every_kind_declares_vocabulary_names_only() -> None:
    for name, info in OPS.items():
        assert set(info.attrs) <= set(ATTRIBUTES), name
    assert set(attrs_of("conv2d")) >= {"kernel", "stride", "padding", "dilation", "groups"}
    assert attrs_of("NoSuchKind") == {}


def test_every_kind_the_importers_emit_has_a_torch_form() -> None:
    """ONNX: every op type with a cost rule; from_torch: every torch name.  The composite
    ``TransformerEncoderLayer`` (import-only, only from_torch's program runs it) is the one
    exception."""
    from workbench.io.onnx.rules import RULES

    onnx_kinds = {canonical_kind(kind) for kind, _ in RULES.values()}
    assert onnx_kinds <= TORCH_FORM_KINDS, onnx_kinds - TORCH_FORM_KINDS
    torch_kinds = {canonical_kind(k) for k in TORCH_ALIASES.values()}
    assert torch_kinds - TORCH_FORM_KINDS == {"transformer_layer"}
    for kind in ("resize", "trilu", "range"):  # ONNX types without a cost rule
        assert kind in TORCH_FORM_KINDS


def _one_op(kind: str, attrs: dict[str, Any], shapes: list[tuple[int, ...]],
            out: tuple[int, ...]) -> Graph:
    tensors = [Tensor(f"i{k}", 4 * int(np.prod(s)), None, "input", s)
               for k, s in enumerate(shapes)]
    tensors.append(Tensor("y", 4 * int(np.prod(out)), "x", "output", out))
    return Graph([Op("x", kind=kind, inputs=tuple(t.id for t in tensors[:-1]), outputs=("y",),
                     attrs=attrs)], tensors, outputs=["y"])


def test_a_kind_without_a_form_is_a_one_line_error_naming_kind_and_op() -> None:
    g = _one_op("hardtanh", {}, [(2, 3)], (2, 3))
    with pytest.raises(OptionError, match=r"op 'x' has kind 'hardtanh', which has no torch "
                                          r"form") as err:
        wb.execute(wb.schedule(g, "serial"), executor="torch", device="cpu", repeats=1,
                   warmup=0)
    assert "\n" not in str(err.value)


def test_a_module_call_attention_needs_the_program_in_one_line() -> None:
    g = _one_op("attention", {"needs_program": True}, [(1, 3, 4)] * 3, (1, 3, 4))
    with pytest.raises(OptionError, match=r"op 'x' \(attention\).*module call") as err:
        wb.execute(wb.schedule(g, "serial"), executor="torch", device="cpu", repeats=1,
                   warmup=0)
    assert "\n" not in str(err.value)


# ----------------------------------------------------------------------------- forms vs NumPy
@pytest.mark.parametrize("case", FORM_CASES, ids=case_ids(FORM_CASES))
def test_torch_form_equals_the_numpy_reference(case: FormCase) -> None:
    kind, attrs, arrays, out_shapes = case
    op = Op("x", kind=kind, inputs=tuple(f"i{k}" for k in range(len(arrays))),
            outputs=tuple(f"o{k}" for k in range(len(out_shapes))), attrs=attrs)
    shapes = dict(zip(op.outputs, out_shapes, strict=True))

    def shape_of(t: str) -> tuple[int, ...] | None:
        return shapes.get(t) or None  # () : unknown to the graph

    reference, form = OPS[kind].reference, OPS[kind].torch_form
    assert reference is not None and form is not None
    want = reference(op, [np.array(a) for a in arrays], shape_of)
    got = form(op, [torch.from_numpy(np.array(a)) for a in arrays], shape_of)
    assert len(got) == len(want) == len(out_shapes)
    for g, w, shape in zip(got, want, out_shapes, strict=True):
        g = g.numpy()
        assert g.shape == w.shape and (not shape or w.shape == shape), (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(g, w)


# ----------------------------------------------------------------------------- ONNX vs ONNX
def _onnx_case(op_type: str, inputs: list[Any], inits: dict[str, Any] | None = None,
               opset: int = 17, n_out: int = 1, **attrs: Any) -> tuple[Any, list[Any]]:
    """A one-node model: ``inputs`` are graph inputs (arrays), ``inits`` initializers (their
    names follow the graph inputs in the node's input list; ``None`` entries are omitted
    optional inputs)."""
    from onnx import helper, numpy_helper

    names = [f"x{k}" for k in range(len(inputs))]
    node_inputs = names + ["" if v is None else k for k, v in (inits or {}).items()]
    node = helper.make_node(op_type, node_inputs, [f"y{k}" for k in range(n_out)], name="n",
                            **attrs)
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in zip(names, inputs, strict=True)]
    initializer = [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()
                   if v is not None]
    graph = helper.make_graph([node], "g", vis, [helper.make_empty_tensor_value_info(f"y{k}")
                                                 for k in range(n_out)],
                              initializer=initializer)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model, inputs


_R = np.random.default_rng(3)


def _x(*shape: int) -> np.ndarray:
    return _R.standard_normal(shape).astype(np.float32)


def _ints(*values: int) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


ONNX_CASES: dict[str, tuple[Any, list[Any]]] = {}


def _onnx_cases() -> dict[str, Any]:
    """name -> (op type, graph inputs, initializers, opset, outputs, attributes)."""
    f32 = np.float32
    return {
        "conv_asymmetric": ("Conv", [_x(1, 4, 7, 7)], {"w": _x(6, 2, 3, 3), "b": _x(6)}, 17, 1,
                            {"pads": [0, 1, 2, 1], "group": 2, "dilations": [1, 2],
                             "strides": [2, 1]}),
        "conv_same_upper": ("Conv", [_x(1, 3, 7, 8)], {"w": _x(4, 3, 2, 3)}, 17, 1,
                            {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
        "conv_same_lower": ("Conv", [_x(1, 3, 6, 6)], {"w": _x(4, 3, 2, 2)}, 17, 1,
                            {"auto_pad": "SAME_LOWER"}),
        "conv1d": ("Conv", [_x(2, 3, 9)], {"w": _x(4, 3, 3)}, 17, 1, {"pads": [1, 1]}),
        "conv_transpose": ("ConvTranspose", [_x(1, 4, 3, 3)], {"w": _x(4, 2, 3, 3)}, 17, 1,
                           {"strides": [2, 2], "pads": [1, 1, 1, 1],
                            "output_padding": [1, 1]}),
        "maxpool_ceil": ("MaxPool", [_x(1, 2, 8, 8)], {}, 17, 1,
                         {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
        "maxpool_dilated": ("MaxPool", [_x(1, 2, 7, 7)], {}, 17, 1,
                            {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 0, 0, 1]}),
        "avgpool_exclude_pad": ("AveragePool", [_x(1, 2, 5, 5)], {}, 17, 1,
                                {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
        "avgpool_include_pad": ("AveragePool", [_x(1, 2, 6, 6)], {}, 17, 1,
                                {"kernel_shape": [2, 2], "strides": [2, 2],
                                 "pads": [1, 1, 1, 1], "count_include_pad": 1}),
        "gemm": ("Gemm", [_x(8, 3)], {"b": _x(5, 8), "c": _x(5)}, 17, 1,
                 {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}),
        "matmul_batched": ("MatMul", [_x(2, 3, 4)], {"b": _x(4, 5)}, 17, 1, {}),
        "batchnorm": ("BatchNormalization", [_x(2, 3, 4, 4)],
                      {"s": _x(3), "b": _x(3), "m": _x(3), "v": np.abs(_x(3)) + 0.5}, 17, 1,
                      {"epsilon": 1e-3}),
        "layernorm_two_axes": ("LayerNormalization", [_x(2, 3, 4)],
                               {"s": _x(3, 4), "b": _x(3, 4)}, 17, 1, {"axis": -2}),
        "instancenorm": ("InstanceNormalization", [_x(2, 3, 5)], {"s": _x(3), "b": _x(3)}, 17,
                         1, {"epsilon": 1e-4}),
        # onnx.reference's LRN loops over the batch axis instead of the channels: a batch of
        # as many samples as channels makes it compute every channel (by the spec's window)
        "lrn_even": ("LRN", [_x(6, 6, 2, 2)], {}, 17, 1,
                     {"size": 4, "alpha": 0.01, "beta": 0.5, "bias": 2.0}),
        "softmax_axis": ("Softmax", [_x(2, 5, 3)], {}, 17, 1, {"axis": 1}),
        "log_softmax": ("LogSoftmax", [_x(2, 5)], {}, 17, 1, {}),
        "resize_nearest": ("Resize", [_x(1, 2, 3, 3)],
                           {"roi": None, "scales": np.asarray([1, 1, 2, 2], f32)}, 17, 1,
                           {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                            "nearest_mode": "floor"}),
        "resize_linear": ("Resize", [_x(1, 2, 3, 4)],
                          {"roi": None, "scales": np.asarray([1, 1, 2, 1.5], f32)}, 17, 1,
                          {"mode": "linear"}),
        "resize_align_corners": ("Resize", [_x(1, 1, 3, 3)],
                                 {"roi": None, "scales": None, "sizes": _ints(1, 1, 5, 4)}, 17,
                                 1, {"mode": "linear",
                                     "coordinate_transformation_mode": "align_corners"}),
        "resize_round_prefer_floor": ("Resize", [_x(1, 1, 4, 4)],
                                      {"roi": None, "scales": np.asarray([1, 1, 1.5, 0.5],
                                                                         f32)}, 17, 1,
                                      {"mode": "nearest"}),
        "pad_reflect": ("Pad", [_x(1, 2, 4, 5)], {"p": _ints(0, 0, 1, 2, 0, 0, 2, 1)}, 17, 1,
                        {"mode": "reflect"}),
        "pad_edge": ("Pad", [_x(3, 4)], {"p": _ints(1, 0, 0, 2)}, 17, 1, {"mode": "edge"}),
        "pad_constant": ("Pad", [_x(3, 4)], {"p": _ints(1, 1, 0, 2), "v": np.float32(0.5)}, 17,
                         1, {}),
        "slice_negative_step": ("Slice", [_x(5, 4, 6)],
                                {"s": _ints(-1, 1), "e": _ints(-5, 100), "a": _ints(0, 2),
                                 "st": _ints(-2, 2)}, 17, 1, {}),
        "split_sizes": ("Split", [_x(2, 7)], {"sp": _ints(3, 4)}, 17, 2, {"axis": 1}),
        "gather_negative": ("Gather", [_x(4, 5)], {"i": _ints(-1, 0, 2)}, 17, 1, {"axis": 1}),
        "gather_scalar": ("Gather", [_x(2, 3, 4)], {"i": np.int64(1)}, 17, 1, {"axis": 1}),
        "tile": ("Tile", [_x(2, 3)], {"r": _ints(2, 2)}, 17, 1, {}),
        "expand": ("Expand", [_x(3, 1)], {"s": _ints(2, 1, 4)}, 17, 1, {}),
        "reduce_mean_18": ("ReduceMean", [_x(2, 3, 4)], {"a": _ints(-1)}, 18, 1,
                           {"keepdims": 0}),
        "reduce_sum_all": ("ReduceSum", [_x(2, 3)], {}, 13, 1, {}),
        "argmax_last": ("ArgMax", [np.asarray([[1, 3, 3], [2, 2, 0]], f32)], {}, 17, 1,
                        {"axis": 1, "select_last_index": 1}),
        "clip_inputs": ("Clip", [_x(3, 4)], {"lo": np.float32(-0.3), "hi": np.float32(0.4)},
                        17, 1, {}),
        "hard_sigmoid": ("HardSigmoid", [_x(3, 4) * 3], {}, 17, 1, {}),
        "leaky_relu": ("LeakyRelu", [_x(3, 4)], {}, 17, 1, {}),
        "selu": ("Selu", [_x(3, 4)], {}, 17, 1, {}),
        "celu": ("Celu", [_x(3, 4)], {}, 17, 1, {"alpha": 2.0}),
        "thresholded_relu": ("ThresholdedRelu", [_x(3, 4)], {}, 17, 1, {"alpha": 0.2}),
        "hard_swish": ("HardSwish", [_x(3, 4) * 4], {}, 17, 1, {}),
        "softsign": ("Softsign", [_x(3, 4)], {}, 17, 1, {}),
        "gelu_20": ("Gelu", [_x(3, 4)], {}, 20, 1, {}),
        "mod_int": ("Mod", [_ints(-7, 5, 9, -3)], {"d": _ints(3, -2, 4, 2)}, 17, 1, {}),
        "fmod": ("Mod", [_x(4) * 5], {"d": np.asarray([1.5, -2, 3, 0.7], f32)}, 17, 1,
                 {"fmod": 1}),
        "div_int": ("Div", [_ints(-7, 5, 9, -3)], {"d": _ints(2, -2, 4, 2)}, 17, 1, {}),
        "pow": ("Pow", [np.abs(_x(3)) + 0.1], {"e": np.float32(1.5)}, 17, 1, {}),
        "where": ("Where", [_x(3, 4) > 0, _x(3, 4)], {"o": _x(4)}, 17, 1, {}),
        "equal": ("Equal", [_ints(1, 2, 3)], {"o": _ints(1, 0, 3)}, 17, 1, {}),
        "not": ("Not", [_x(4) > 0], {}, 17, 1, {}),
        "cast": ("Cast", [_x(4) * 4], {}, 17, 1, {"to": 7}),
        "trilu": ("Trilu", [_x(2, 4, 4)], {"k": np.int64(1)}, 17, 1, {"upper": 0}),
        "depth_to_space": ("DepthToSpace", [_x(1, 8, 2, 3)], {}, 17, 1, {"blocksize": 2}),
        "depth_to_space_crd": ("DepthToSpace", [_x(1, 8, 2, 3)], {}, 17, 1,
                               {"blocksize": 2, "mode": "CRD"}),
        "space_to_depth": ("SpaceToDepth", [_x(1, 2, 4, 6)], {}, 17, 1, {"blocksize": 2}),
        "transpose_default": ("Transpose", [_x(2, 3, 4)], {}, 17, 1, {}),
        "flatten": ("Flatten", [_x(2, 3, 4, 5)], {}, 17, 1, {"axis": 2}),
        "unsqueeze": ("Unsqueeze", [_x(2, 3)], {"a": _ints(0, -1)}, 17, 1, {}),
        "squeeze": ("Squeeze", [_x(2, 1, 3, 1)], {"a": _ints(1)}, 17, 1, {}),
        "range_dynamic": ("Range", [np.float32(1.0), np.float32(4.0), np.float32(0.5)], {}, 17,
                          1, {}),
        "constant_of_shape_dynamic": ("ConstantOfShape", [_ints(2, 3)], {}, 17, 1, {}),
        "mean_variadic": ("Mean", [_x(3, 4), _x(3, 4)], {"c": _x(4)}, 17, 1, {}),
        "max_variadic": ("Max", [_x(3, 4)], {"c": _x(4)}, 17, 1, {}),
    }


@pytest.mark.parametrize("name", sorted(_onnx_cases()))
def test_an_onnx_node_computes_what_onnx_reference_computes(name: str, tmp_path: Path) -> None:
    """Import a one-node model, run it with the torch executor (the program's initializers as
    weights, the vocabulary's attributes), and compare with ``onnx.reference``."""
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    op_type, inputs, inits, opset, n_out, attrs = _onnx_cases()[name]
    model, _ = _onnx_case(op_type, inputs, inits, opset, n_out, **attrs)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    feeds = {f"x{k}": v for k, v in enumerate(inputs)}
    want = ReferenceEvaluator(model).run(None, feeds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = wb.load(path)
    trace = wb.execute(wb.schedule(g, "serial"), executor="torch", device="cpu", repeats=1,
                       warmup=0, inputs=tuple(torch.from_numpy(np.array(v)) for v in inputs),
                       return_outputs=True)
    got = trace.meta["outputs"]
    got = got if isinstance(got, tuple) else (got,)
    for gv, wv in zip(got, want, strict=True):
        gv = gv.numpy()
        assert gv.shape == wv.shape, (gv.shape, wv.shape)
        np.testing.assert_allclose(gv.astype(np.float64), wv.astype(np.float64), rtol=1e-5,
                                   atol=1e-5)


# ----------------------------------------------------------------------------- ONNX attrs
def _imported(tmp_path: Path, op_type: str, inputs: list[Any], inits: dict[str, Any],
              opset: int = 17, **attrs: Any) -> Op:
    onnx = pytest.importorskip("onnx")
    model, _ = _onnx_case(op_type, inputs, inits, opset, **attrs)
    onnx.save(model, str(tmp_path / "m.onnx"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return wb.load(tmp_path / "m.onnx").op("n")


def test_onnx_padding_is_symmetric_per_axis_or_explicit_per_side(tmp_path: Path) -> None:
    x, w = _x(1, 3, 8, 8), _x(4, 3, 3, 3)
    op = _imported(tmp_path, "Conv", [x], {"w": w}, pads=[1, 2, 1, 2], strides=[2, 2])
    assert (op.attrs["padding"], op.attrs["stride"], op.attrs["kernel"]) == ([1, 2], [2, 2],
                                                                            [3, 3])
    assert "pads" not in op.attrs and "strides" not in op.attrs
    op = _imported(tmp_path, "Conv", [x], {"w": w}, pads=[0, 1, 1, 2])
    assert op.attrs["padding"] == [0, 1, 1, 2] and op.attrs["dilation"] == [1, 1]
    op = _imported(tmp_path, "Conv", [x], {"w": w}, auto_pad="SAME_UPPER", strides=[2, 2])
    assert op.attrs["padding"] == [0, 0, 1, 1]  # total 1 per axis, the extra at the end


def test_onnx_gemm_and_conv_group_in_the_vocabulary(tmp_path: Path) -> None:
    op = _imported(tmp_path, "Gemm", [_x(2, 4)], {"b": _x(3, 4), "c": _x(3)}, transB=1)
    assert (op.kind, op.attrs["trans_b"], op.attrs["trans_a"]) == ("matmul", True, False)
    assert op.attrs["alpha"] == op.attrs["beta"] == 1.0 and "transB" not in op.attrs
    op = _imported(tmp_path, "Conv", [_x(1, 8, 5, 5)], {"w": _x(8, 2, 3, 3)}, group=4)
    assert op.attrs["groups"] == 4 and "group" not in op.attrs


def test_onnx_defaults_are_written_out(tmp_path: Path) -> None:
    """ONNX's defaults differ from the builder's: a pool's stride is 1 (not its kernel), batch
    norm's epsilon 1e-5 (not 1e-3), AveragePool excludes the padding, Softmax's axis depends on
    the opset, LRN's size and bias are the vocabulary's window and k, Cast's to a dtype."""
    op = _imported(tmp_path, "MaxPool", [_x(1, 2, 6, 6)], {}, kernel_shape=[2, 2])
    assert op.attrs["stride"] == [1, 1] and op.attrs["ceil_mode"] is False
    op = _imported(tmp_path, "AveragePool", [_x(1, 2, 6, 6)], {}, kernel_shape=[2, 2])
    assert op.attrs["count_include_pad"] is False
    op = _imported(tmp_path, "BatchNormalization", [_x(1, 2, 3, 3)],
                   {"s": _x(2), "b": _x(2), "m": _x(2), "v": _x(2)})
    assert op.attrs["eps"] == 1e-5 and op.attrs["axis"] == 1
    assert _imported(tmp_path, "Softmax", [_x(2, 3)], {}, opset=11).attrs["axis"] == 1
    assert _imported(tmp_path, "Softmax", [_x(2, 3)], {}).attrs["axis"] == -1
    op = _imported(tmp_path, "LRN", [_x(1, 4, 2, 2)], {}, size=3, bias=2.0)
    assert (op.attrs["window"], op.attrs["k"]) == (3, 2.0) and "bias" not in op.attrs
    assert _imported(tmp_path, "Cast", [_x(3)], {}, to=7).attrs["dtype"] == "int64"
    op = _imported(tmp_path, "Slice", [_x(4, 5)], {"s": _ints(1), "e": _ints(3),
                                                    "a": _ints(1)})
    assert (op.attrs["starts"], op.attrs["ends"], op.attrs["axes"]) == ([1], [3], [1])


# ----------------------------------------------------------------------------- from_torch attrs
def _traced(module: Any, *example: Any, tracer: str = "auto") -> Graph:
    from workbench.io import from_torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_torch(module, example, tracer=tracer)


def test_from_torch_arguments_in_the_vocabulary() -> None:
    f = torch.nn.functional

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1, groups=1)
            self.fc = nn.Linear(4, 6)

        def forward(self, x: Any) -> Any:
            y = self.conv(x).mean((2, 3))
            z = self.fc(y).transpose(0, 1)
            a, b = torch.split(z, [2, 4], dim=0)
            return f.softmax(a, dim=-1), 1.0 - b, f.hardsigmoid(b) * 0.5

    g = _traced(M().eval(), torch.randn(2, 3, 8, 8))
    by_kind = {op.kind: op.attrs for op in g.ops}
    assert by_kind["conv2d"]["kernel"] == [3, 3] and by_kind["conv2d"]["stride"] == [2, 2]
    assert by_kind["conv2d"]["padding"] == [1, 1] and by_kind["conv2d"]["groups"] == 1
    assert by_kind["reduce_mean"] == {**by_kind["reduce_mean"], "axes": [2, 3],
                                      "keepdims": False}
    assert by_kind["matmul"]["trans_b"] is True
    assert by_kind["transpose"]["perm"] == [1, 0]
    assert by_kind["split"]["sizes"] == [2, 4] and by_kind["split"]["axis"] == 0
    assert by_kind["softmax"]["axis"] == -1
    assert by_kind["sub"]["scalar"] == 1.0 and by_kind["sub"]["reverse"] is True
    assert by_kind["hard_sigmoid"]["alpha"] == pytest.approx(1 / 6)
    assert by_kind["mul"]["scalar"] == 0.5
    items = [op.attrs for op in g.ops if op.kind == "getitem"]
    assert [(a["index"], a["offset"]) for a in items] == [(0, 0), (1, 4)]


def test_from_torch_module_configs_in_the_vocabulary() -> None:
    """The fx tracer keeps module calls: their configuration is converted the same way."""
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding="same", dilation=2), nn.LeakyReLU(0.2),
                          nn.MaxPool2d(2), nn.LayerNorm([4, 4]), nn.Flatten(),
                          nn.Linear(64, 5)).eval()
    g = _traced(model, torch.randn(1, 3, 8, 8), tracer="fx")
    by_kind = {op.kind: op.attrs for op in g.ops}
    conv = by_kind["conv2d"]
    assert (conv["kernel"], conv["padding"], conv["dilation"], conv["cin"]) == (
        [3, 3], [2, 2], [2, 2], 3)
    assert by_kind["leaky_relu"]["alpha"] == 0.2
    assert by_kind["maxpool"]["kernel"] == [2, 2] and by_kind["layernorm"]["axis"] == -2
    assert by_kind["matmul"]["trans_b"] is True
    assert not {"kernel_size", "in_channels", "negative_slope"} & (set(conv) | set(
        by_kind["leaky_relu"]))


# ----------------------------------------------------------------------------- JSON and DOT
def _json_graph(kind: str, attrs: dict[str, Any]) -> dict[str, Any]:
    return graph_to_dict(_one_op(kind, attrs, [(1, 3, 8, 8), (4, 3, 3, 3)], (1, 4, 4, 4)))


def test_json_synonyms_become_the_vocabulary() -> None:
    data = _json_graph("conv2d", {})
    data["ops"][0]["attrs"] = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                               "group": 1, "note": "kept"}
    op = graph_from_dict(data).op("x")
    assert dict(op.attrs) == {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1],
                              "groups": 1, "note": "kept"}
    data["ops"][0]["kind"], data["ops"][0]["attrs"] = "matmul", {"transB": 1}
    assert graph_from_dict(data).op("x").attrs["trans_b"] is True


@pytest.mark.parametrize(("kind", "attrs", "match"), [
    ("conv2d", {"kernel": "3x3"}, r"op 'x' \(conv2d\): attribute 'kernel' must be an integer "
                                  r"or a list of integers, got '3x3'"),
    ("conv2d", {"group": 1.5}, r"attribute 'groups' \(given as 'group'\) must be an integer"),
    ("transpose", {"perm": [0, "a"]}, r"attribute 'perm' must be a list of integers"),
    ("cast", {"dtype": "float33"}, r"attribute 'dtype' must be a dtype name"),
    ("conv2d", {"stride": 1, "strides": 2}, r"stride=1 and strides=2 say different things"),
])
def test_json_wrong_types_are_one_line_errors(kind: str, attrs: dict[str, Any],
                                               match: str) -> None:
    data = _json_graph(kind, {})  # wb.Graph itself refuses them (tests/test_attr_validation.py)
    data["ops"][0]["attrs"] = attrs
    with pytest.raises(FormatError, match=match) as err:
        graph_from_dict(data)
    assert "\n" not in str(err.value)


def test_builder_graphs_keep_their_attrs_through_json() -> None:
    g = wb.models.inception_v3(batch=1)
    back = graph_from_dict(graph_to_dict(g))
    for a, b in zip(g.ops, back.ops, strict=True):
        assert graph_to_dict(Graph([a], [])) if False else True
        assert {k: (list(v) if isinstance(v, tuple) else v) for k, v in a.attrs.items()} == \
            dict(b.attrs), a.id


def test_dot_op_attributes_in_the_vocabulary() -> None:
    g = graph_from_dot('digraph g { c [kind=conv2d, kernel_shape="3,3", strides=2, group=4, '
                       'shape=box]; t [kind=transpose, perm="[1, 0]"]; c -> t }')
    assert dict(g.op("c").attrs) == {"kernel": [3, 3], "stride": 2, "groups": 4}
    assert dict(g.op("t").attrs) == {"perm": [1, 0]}
    with pytest.raises(FormatError, match=r"line 1: node 'a' \(kind 'relu'\) has attribute "
                                          r"'perm', which its kind does not read"):
        graph_from_dot('digraph g { a [kind=relu, perm="1,0"] }')
    with pytest.raises(FormatError, match=r"attribute 'kernel' must be an integer or a list"):
        graph_from_dot('digraph g { a [kind=conv2d, kernel="3x3"] }')
