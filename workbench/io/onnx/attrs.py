"""ONNX node attributes in the op vocabulary (:mod:`workbench.ops.attrs`).

:func:`vocabulary_attrs` turns a node's attributes into the names its kind declares
(``OpKind.attrs``): ``kernel_shape``/``strides``/``pads``/``dilations``/``group`` become
``kernel``/``stride``/``padding``/``dilation``/``groups`` (``auto_pad`` resolved into explicit
padding from the shapes; symmetric padding as one value per axis, asymmetric explicit per side),
``transA``/``transB`` ``trans_a``/``trans_b``, ``epsilon`` ``eps``, ``to`` a dtype name, ...;
ONNX's defaults are written out (a pool's stride is 1, not its kernel; a batch norm's epsilon is
1e-5, not the builder's 1e-3; ``Transpose``'s ``perm`` is the reversed axes; ``Softmax``'s axis
depends on the opset), and constant inputs that configure the op (``Slice``'s starts/ends/axes/
steps, ``Split``'s sizes, ``Pad``'s pads, ``Resize``'s scales, the axes of reductions,
``Squeeze``/``Unsqueeze``, ``Tile``'s repeats, ``Clip``'s bounds) are lifted into attributes
from the values the import folded.  Attributes the vocabulary does not name (``momentum``,
``allowzero``, ...) are kept as they are; a value of the wrong type, or out of range
(``strides`` 0, negative ``pads``, ``group`` 0, a ``kernel_shape`` that disagrees with the weight),
is kept under the vocabulary's name, where the graph's one check of attributes
(:mod:`workbench.values.attr_checks`) refuses the file in one line naming the node.
Complexity: O(attributes + rank) per node.

>>> vocabulary_attrs("Conv", "conv2d", {"kernel_shape": [3, 3], "pads": [0, 0, 1, 1],
...                  "group": 1}, Node(("x", "w"), [(1, 3, 8, 8), (4, 3, 3, 3)], [None]))
{'kernel': [3, 3], 'padding': [0, 0, 1, 1], 'groups': 1, 'stride': [1, 1], 'dilation': [1, 1]}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.errors import FormatError
from workbench.ops import OPS
from workbench.ops.attrs import ONNX_DTYPES, explicit_padding, normalize_attrs, synonyms_of

Shape = tuple[int, ...] | None


@dataclass(frozen=True)
class Node:
    """What the conversion knows of a node: its input names (``""`` for an omitted optional
    input, as in the file), the input and output shapes (``None``: unknown), the values of
    constant inputs (by name), the opset, the output dtypes and the output names (``""`` for an
    omitted optional output; empty: not known)."""

    inputs: tuple[str, ...]
    in_shapes: Sequence[Shape]
    out_shapes: Sequence[Shape]
    values: Mapping[str, Any] = field(default_factory=dict)
    opset: int = 17
    out_dtypes: Sequence[str] = ()
    outputs: tuple[str, ...] = ()

    def shape(self, k: int) -> Shape:
        return self.in_shapes[k] if k < len(self.in_shapes) else None

    def const(self, k: int) -> Any:
        """The value of input ``k`` when it is a constant the import folded, else ``None``."""
        if k >= len(self.inputs) or not self.inputs[k]:
            return None
        value = self.values.get(self.inputs[k])
        return None if value is None else np.asarray(value)

    def ints(self, k: int) -> list[int] | None:
        value = self.const(k)
        if value is None or value.dtype.kind not in "iu" or value.size > 4096:
            return None
        return [int(v) for v in value.reshape(-1)]

    def floats(self, k: int) -> list[float] | None:
        value = self.const(k)
        if value is None or value.dtype.kind not in "iuf" or value.size > 4096:
            return None
        return [float(v) for v in value.reshape(-1)]

    def scalar(self, k: int) -> float | None:
        values = self.floats(k)
        return values[0] if values and len(values) == 1 else None


#: A conversion: ``(attrs read so far, node) -> attributes to write`` (only those the kind
#: declares are kept; a rule may remove an ONNX-only attribute it consumed from the dict).
Rule = Callable[[dict[str, Any], Node], dict[str, Any]]
_CONVERSIONS: dict[str, Rule] = {}


def _rule(*op_types: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for t in op_types:
            _CONVERSIONS[t] = fn
        return fn
    return register


def vocabulary_attrs(op_type: str, kind: str, attrs: Mapping[str, Any], node: Node) -> dict[str,
                                                                                          Any]:
    """The attributes of an ONNX node of ``op_type`` (imported as ``kind``) in the vocabulary
    (module docstring).  Never raises: a malformed value is kept for the graph's check."""
    info = OPS.get(kind)
    if info is None:
        return dict(attrs)
    out: dict[str, Any] = {}
    wrong: dict[str, Any] = {}
    renames = synonyms_of(info.attrs)
    for key, value in attrs.items():  # one at a time: a bad value stays under its own name
        try:
            out.update(normalize_attrs(kind, info.attrs, {key: value}))
        except (FormatError, TypeError, ValueError):
            name = renames.get(key, key)
            if name in info.attrs:
                wrong[name] = value
            else:
                out[key] = value
    rule = _CONVERSIONS.get(op_type) or info.onnx_attrs
    if rule is not None:
        try:
            written = rule(out, node)
        except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError):
            return {**out, **wrong}  # a malformed node: its attributes stay as read
        out.update({k: v for k, v in written.items() if v is not None and k in info.attrs})
    # a value of the wrong type is kept under the vocabulary's name, where the graph's check of
    # attributes (workbench.values.attr_checks) refuses it in one line naming the node
    return {**out, **wrong}


def _is_int_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


# ------------------------------------------------------------------------ windows
def _spatial(a: Mapping[str, Any], node: Node, kernel: list[int] | None) -> int:
    x = node.shape(0)
    if x is not None and len(x) > 2:
        return len(x) - 2
    if kernel:
        return len(kernel)
    raise ValueError("rank unknown")


def _auto_pad(a: Mapping[str, Any], node: Node, kernel: list[int], stride: list[int],
              dilation: list[int], transpose: bool = False) -> list[int] | None:
    """Explicit padding for ``auto_pad`` SAME_UPPER / SAME_LOWER / VALID (``None``: NOTSET)."""
    mode = str(a.get("auto_pad") or "NOTSET").upper()
    n = len(kernel)
    if mode == "VALID":
        return [0] * (2 * n)
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        return None
    x = node.shape(0)
    if x is None:
        raise ValueError("auto_pad needs the input shape")
    begin, end = [], []
    for i in range(n):
        size, span = x[2 + i], (kernel[i] - 1) * dilation[i] + 1
        if transpose:
            total = max(0, stride[i] * (size - 1) + span - size * stride[i])
            lo, hi = total - total // 2, total // 2
        else:
            total = max(0, (math.ceil(size / stride[i]) - 1) * stride[i] + span - size)
            lo, hi = total // 2, total - total // 2
        if mode == "SAME_LOWER" and not transpose or mode == "SAME_UPPER" and transpose:
            lo, hi = hi, lo
        begin.append(lo)
        end.append(hi)
    return [*begin, *end]


def _window(a: dict[str, Any], node: Node, *, kernel: list[int] | None,
            transpose: bool = False) -> dict[str, Any]:
    """``kernel``, ``stride``, ``padding``, ``dilation`` written out (ONNX's defaults)."""
    kernel = kernel if kernel is not None else (a["kernel"] if _is_int_list(a.get("kernel"))
                                                else None)
    if not kernel:
        raise ValueError("the kernel is unknown")
    n = _spatial(a, node, kernel)
    stride = a["stride"] if _is_int_list(a.get("stride")) else [1] * n
    dilation = a["dilation"] if _is_int_list(a.get("dilation")) else [1] * n
    padding = a.get("padding") if _is_int_list(a.get("padding")) or isinstance(
        a.get("padding"), int) else [0] * n
    auto = _auto_pad(a, node, kernel, stride, dilation, transpose)
    if auto is not None:
        padding = explicit_padding(auto)
    return {"kernel": list(kernel), "stride": list(stride), "padding": padding,
            "dilation": list(dilation)}


def _weight_kernel(a: Mapping[str, Any], node: Node) -> list[int] | None:
    """The kernel: ``kernel_shape`` when given (the graph's check compares it with the weight),
    else the weight's spatial shape."""
    if _is_int_list(a.get("kernel")):
        return list(a["kernel"])
    w = node.shape(1)
    return list(w[2:]) if w is not None and len(w) > 2 else None


def _groups(a: Mapping[str, Any]) -> Any:
    """``group`` as given (ONNX's default 1): a 0 stays 0, for the graph's check to refuse."""
    return 1 if a.get("groups") is None else a["groups"]


@_rule("Conv")
def _conv(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {**_window(a, node, kernel=_weight_kernel(a, node)), "groups": _groups(a)}


@_rule("ConvTranspose")
def _conv_transpose(a: dict[str, Any], node: Node) -> dict[str, Any]:
    out = {**_window(a, node, kernel=_weight_kernel(a, node), transpose=True),
           "groups": _groups(a)}
    if a.get("output_padding") is not None:
        out["output_padding"] = a["output_padding"]
    return out


@_rule("MaxPool", "AveragePool")
def _pool(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {**_window(a, node, kernel=None), "ceil_mode": bool(a.get("ceil_mode") or False),
            "count_include_pad": bool(a.get("count_include_pad") or False)}


# ------------------------------------------------------------------------ products and norms
@_rule("Gemm")
def _gemm(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"trans_a": bool(a.get("trans_a") or False), "trans_b": bool(a.get("trans_b")
                                                                         or False),
            "alpha": float(a.get("alpha", 1.0)), "beta": float(a.get("beta", 1.0))}


@_rule("BatchNormalization")
def _batchnorm(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"eps": float(a.get("eps", 1e-5)), "axis": 1}


@_rule("InstanceNormalization", "GroupNormalization")
def _eps(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"eps": float(a.get("eps", 1e-5))}


@_rule("LayerNormalization")
def _layernorm(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"eps": float(a.get("eps", 1e-5)), "axis": int(a.get("axis", -1))}


@_rule("LRN")
def _lrn(a: dict[str, Any], node: Node) -> dict[str, Any]:
    """ONNX's ``bias`` is the vocabulary's ``k`` (``bias`` names a bias input elsewhere)."""
    return {"alpha": float(a.get("alpha", 1e-4)), "beta": float(a.get("beta", 0.75)),
            "k": float(a.pop("bias", a.get("k", 1.0)))}


# ------------------------------------------------------------------------ axes
@_rule("Softmax", "LogSoftmax")
def _softmax(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"axis": int(a.get("axis", -1 if node.opset >= 13 else 1))}


@_rule("Concat")
def _axis0(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"axis": int(a.get("axis", 0))}


@_rule("Gather")
def _gather(a: dict[str, Any], node: Node) -> dict[str, Any]:
    """A constant 0-d index (``x[:, 0]``) is lifted into ``index``: the axis goes away."""
    value = node.const(1)
    scalar = value is not None and value.ndim == 0 and value.dtype.kind in "iu"
    return {"axis": int(a.get("axis", 0)), "index": int(value) if scalar else None}


@_rule("ArgMax", "ArgMin")
def _arg(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"axis": int(a.get("axis", 0)), "keepdims": bool(a.get("keepdims", True)),
            "select_last_index": bool(a.get("select_last_index", False))}


@_rule("Split")
def _split(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"axis": int(a.get("axis", 0)), "sizes": a.get("sizes") or node.ints(1)}


@_rule("Slice")
def _slice(a: dict[str, Any], node: Node) -> dict[str, Any]:
    if node.opset < 10:
        return {}
    starts, ends = node.ints(1), node.ints(2)
    if starts is None or ends is None:
        return {}
    axes = node.ints(3) if len(node.inputs) > 3 and node.inputs[3] else list(range(len(starts)))
    steps = node.ints(4) if len(node.inputs) > 4 and node.inputs[4] else [1] * len(starts)
    return {"starts": starts, "ends": ends, "axes": axes, "steps": steps}


@_rule("Squeeze", "Unsqueeze")
def _squeeze(a: dict[str, Any], node: Node) -> dict[str, Any]:
    out = node.out_shapes[0] if node.out_shapes else None
    return {"axes": a.get("axes") or node.ints(1), "shape": list(out) if out else None}


@_rule("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
       "ReduceSumSquare")
def _reduce(a: dict[str, Any], node: Node) -> dict[str, Any]:
    axes = a.get("axes") if a.get("axes") is not None else node.ints(1)
    if not axes and a.get("noop_with_empty_axes"):
        raise ValueError("a no-op reduction is not in the vocabulary")
    return {"axes": axes or None, "keepdims": bool(a.get("keepdims", True))}


@_rule("Transpose")
def _transpose(a: dict[str, Any], node: Node) -> dict[str, Any]:
    if a.get("perm") is not None:
        return {}
    x = node.shape(0)
    return {"perm": list(range(len(x) - 1, -1, -1)) if x is not None else None}


@_rule("Reshape", "Expand")
def _reshape(a: dict[str, Any], node: Node) -> dict[str, Any]:
    out = node.out_shapes[0] if node.out_shapes else None
    return {"shape": list(out) if out else node.ints(1)}


@_rule("Flatten")
def _flatten(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"axis": int(a.get("axis", 1))}


@_rule("Tile")
def _tile(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"repeats": node.ints(1)}


@_rule("Pad")
def _pad(a: dict[str, Any], node: Node) -> dict[str, Any]:
    """Padding per side over every axis (``axes``, opset 18, spread to all axes)."""
    mode = str(a.get("mode") or "constant")
    if node.opset < 11:
        return {"mode": mode, "value": float(a.get("value", 0.0))}
    pads = node.ints(1)
    if pads is None:
        return {"mode": mode}
    x = node.shape(0)
    axes = node.ints(3) if len(node.inputs) > 3 and node.inputs[3] else None
    if axes is not None and x is not None:
        rank = len(x)
        begin, end = [0] * rank, [0] * rank
        for k, ax in enumerate(axes):
            begin[ax % rank], end[ax % rank] = pads[k], pads[len(axes) + k]
        pads = [*begin, *end]
    value = node.scalar(2) if len(node.inputs) > 2 and node.inputs[2] else None
    return {"padding": pads, "mode": mode, "value": 0.0 if value is None else value}


@_rule("Resize", "Upsample")
def _resize(a: dict[str, Any], node: Node) -> dict[str, Any]:
    """Scales or sizes from the constant inputs (``Resize`` 11+: X, roi, scales, sizes;
    ``Resize`` 10 and ``Upsample``: X, scales); ONNX's coordinate and rounding defaults."""
    legacy = node.opset < 11
    scales = node.floats(1) if legacy else node.floats(2)
    sizes = None if legacy else node.ints(3)
    if legacy and a.get("scales") is not None:
        scales = [float(v) for v in a["scales"]]
    x = node.shape(0)
    axes = a.get("axes")
    if isinstance(axes, list) and _is_int_list(axes) and x is not None:  # opset 18: some axes
        full_s, full_n = [1.0] * len(x), list(x)
        for k, ax in enumerate(axes):
            if scales:
                full_s[ax % len(x)] = scales[k]
            if sizes:
                full_n[ax % len(x)] = sizes[k]
        scales, sizes = (full_s if scales else None), (full_n if sizes else None)
    coord = str(a.get("coordinate_mode") or ("asymmetric" if legacy else "half_pixel"))
    mode = str(a.get("mode") or "nearest")
    nearest = str(a.get("nearest_mode") or ("floor" if legacy else "round_prefer_floor"))
    return {"mode": mode, "coordinate_mode": coord, "nearest_mode": nearest,
            "scales": scales or None, "sizes": sizes or None,
            "align_corners": coord == "align_corners"}


# ------------------------------------------------------------------------ values
@_rule("Clip")
def _clip(a: dict[str, Any], node: Node) -> dict[str, Any]:
    if node.opset < 11:
        return {}
    return {"min": node.scalar(1), "max": node.scalar(2)}


@_rule("Cast")
def _cast(a: dict[str, Any], node: Node) -> dict[str, Any]:
    dtype = a.get("dtype")
    return {"dtype": dtype if isinstance(dtype, str) else None}


@_rule("ConstantOfShape")
def _constant_of_shape(a: dict[str, Any], node: Node) -> dict[str, Any]:
    value = a.get("value")
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else None
    dtype = node.out_dtypes[0] if node.out_dtypes else "float32"
    return {"value": float(value) if isinstance(value, (int, float)) else 0.0,
            "dtype": dtype if dtype in ONNX_DTYPES.values() else None}


@_rule("Range")
def _range(a: dict[str, Any], node: Node) -> dict[str, Any]:
    bounds = [node.scalar(k) for k in range(3)]
    if any(b is None for b in bounds):
        return {}
    return dict(zip(("start", "end", "step"), bounds, strict=True))


@_rule("LeakyRelu")
def _leaky(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"alpha": float(a.get("alpha", 0.01))}


@_rule("Elu", "Celu", "ThresholdedRelu")
def _alpha1(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"alpha": float(a.get("alpha", 1.0))}


@_rule("Selu")
def _selu(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"alpha": float(a.get("alpha", 1.67326319217681884765625)),
            "gamma": float(a.get("gamma", 1.05070102214813232421875))}


@_rule("HardSigmoid")
def _hard_sigmoid(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))}


@_rule("Gelu")
def _gelu(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"approximate": str(a.get("approximate") or "none")}


@_rule("Mod")
def _mod(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"fmod": bool(a.get("fmod") or False)}


@_rule("Trilu")
def _trilu(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"upper": bool(a.get("upper", True))}


@_rule("DepthToSpace")
def _depth_to_space(a: dict[str, Any], node: Node) -> dict[str, Any]:
    return {"mode": str(a.get("mode") or "DCR")}


__all__ = ["Node", "vocabulary_attrs"]
