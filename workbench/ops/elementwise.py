"""Elementwise kinds: activations, arithmetic, comparisons and logic, casts, and the per-channel
broadcasts (``bias``, ``bias_add``, ``scale``); also the variadic ``max`` / ``min`` / ``mean``.

One output element from the same element of each input (broadcasting included).  O1 fuses the
``fuse="elemwise"`` kinds as ELEMWISE and the ``fuse="broadcast"`` ones as BROADCAST; the
builder's activations (``activation=True``: relu, sigmoid, tanh, gelu, in that order) are fused
into convolutions too.  The NumPy references compute in float64 and return the inputs' dtype
(integers stay integers where the op is integral, comparisons give bool); maps that read
attributes (gelu's ``approximate``, leaky_relu's ``alpha``, ...) go through :func:`mapped` and
its torch twin; binary kinds take two inputs, or one and ``scalar`` (``reverse`` for torch's
``rsub``).  ``flops_per_element``: 1 for arithmetic and simple maps, 2 for two-step maps, 3-5
for exp-based ones, 8 for gelu.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from workbench.errors import OptionError
from workbench.ops.arrays import (
    Array,
    OpLike,
    Reference,
    ShapeOf,
    UnaryFn,
    _dtype,
    _f64,
    gelu,
    relu,
    sigmoid,
)
from workbench.ops.attrs import flag, number
from workbench.ops.costs import Info, ShapeCost, copy_rule, elementwise_cost, first_of
from workbench.ops.kind import kind
from workbench.ops.readers import Shape, is_number, operands, plain
from workbench.ops.shapes import IDENTITY
from workbench.ops.tensors import Tensor, TorchForm, TorchUnary, _f, torch_dtype, torch_module

# ------------------------------------------------------------------------ NumPy references


def cast(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """To ``dtype`` (none given: a copy)."""
    dtype = op.attrs.get("dtype")
    return [np.asarray(a[0]).astype(dtype) if dtype else np.array(a[0])]

# ------------------------------------------------------------------------ NumPy references


_ERF = np.frompyfunc(math.erf, 1, 1)


def erf(x: Array) -> Array:
    return np.asarray(_ERF(_f64(x)), dtype=np.float64)


def _attr_map(name: str, at: Mapping[str, Any]) -> UnaryFn:
    """The float64 map of an elementwise kind that reads attributes (or none)."""
    alpha = at.get("alpha")
    maps: dict[str, UnaryFn] = {
        "gelu": lambda x: gelu(x) if at.get("approximate", "tanh") == "tanh"
        else 0.5 * x * (1.0 + erf(x / math.sqrt(2.0))),
        "leaky_relu": lambda x: np.where(x >= 0, x, x * (0.01 if alpha is None else alpha)),
        "elu": lambda x: np.where(x > 0, x, (1.0 if alpha is None else alpha) * np.expm1(x)),
        "celu": lambda x: _celu(x, 1.0 if alpha is None else alpha),
        "selu": lambda x: number(at, "gamma", 1.0507009873554805) * np.where(
            x > 0, x, number(at, "alpha", 1.6732632423543772) * np.expm1(x)),
        "thresholded_relu": lambda x: np.where(x > (1.0 if alpha is None else alpha), x, 0.0),
        "hard_sigmoid": lambda x: np.clip(x * (0.2 if alpha is None else alpha)
                                          + number(at, "beta", 0.5), 0.0, 1.0),
        "hard_swish": lambda x: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0),
        "relu6": lambda x: np.clip(x, 0.0, 6.0),
        "silu": lambda x: x * sigmoid(x), "swish": lambda x: x * sigmoid(x),
        "softplus": lambda x: np.logaddexp(0.0, x),
        "mish": lambda x: x * np.tanh(np.logaddexp(0.0, x)),
        "softsign": lambda x: x / (1.0 + np.abs(x)),
        "erf": erf, "rsqrt": lambda x: 1.0 / np.sqrt(x), "square": np.square,
        "reciprocal": lambda x: 1.0 / x, "sin": np.sin, "cos": np.cos, "floor": np.floor,
        "ceil": np.ceil, "round": np.round, "sign": np.sign}
    return maps[name]


def _celu(x: Array, alpha: float) -> Array:
    return np.maximum(x, 0.0) + np.minimum(0.0, alpha * np.expm1(x / alpha))


def unary_reference(fn: UnaryFn) -> Reference:
    """The reference of an elementwise kind computing ``fn`` (in float64)."""
    return lambda op, a, s: [fn(_f64(a[0])).astype(_dtype(a[0]))]


def mapped(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """An elementwise map that may read attributes (gelu's ``approximate``, leaky_relu's
    ``alpha``, hard_sigmoid's ``alpha``/``beta``, ...), computed in float64."""
    return [_attr_map(op.kind, op.attrs)(_f64(a[0])).astype(_dtype(a[0]))]


def _operands(op: OpLike, a: list[Array]) -> tuple[Any, Any]:
    """The two operands of a binary op: the inputs, or the input and ``scalar``; swapped when
    ``reverse`` (torch's rsub)."""
    x, y = (a[0], a[1]) if len(a) > 1 else (a[0], op.attrs.get("scalar", 0.0))
    return (y, x) if op.attrs.get("reverse") else (x, y)


def _integral(*values: Any) -> bool:
    return all(np.issubdtype(np.asarray(v).dtype, np.integer) for v in values)


def _result(value: Any, *inputs: Any) -> Array:
    """An arithmetic result in the inputs' type: integers stay integers, floats keep theirs."""
    arrays = [x for x in inputs if isinstance(x, np.ndarray)]
    if _integral(*inputs):
        return np.asarray(value).astype(np.result_type(*arrays))
    return np.asarray(value, dtype=_dtype(*arrays))


def arith(name: str) -> Reference:
    """The reference of ``sub``, ``mul``, ``div``, ``pow`` or ``mod`` (two inputs, or one and
    ``scalar``; ``reverse``; sub's ``alpha``; div's ``rounding``; mod's ``fmod``).  Integer
    division truncates (ONNX's) unless ``rounding`` is ``"floor"``."""
    def ref(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
        x, y = _operands(op, a)
        at = op.attrs
        if name == "sub":
            out = _f64(x) - number(at, "alpha", 1.0) * _f64(y)
        elif name == "mul":
            out = _f64(x) * _f64(y)
        elif name == "div":
            out = _f64(x) / _f64(y)
            rounding = at.get("rounding") or ("trunc" if _integral(x, y) else None)
            out = np.floor(out) if rounding == "floor" else np.trunc(out) if rounding else out
        elif name == "pow":
            out = np.power(_f64(x), _f64(y))
        else:  # mod
            out = np.fmod(_f64(x), _f64(y)) if flag(at, "fmod", False) else np.mod(_f64(x),
                                                                                    _f64(y))
        return [_result(out, x, y)]
    return ref


def binary_reference(fn: Callable[[Array, Array], Array]) -> Reference:
    """The reference of a two-input elementwise kind (computed in the inputs' type)."""
    return lambda op, a, s: [np.asarray(fn(a[0], a[1]), dtype=_dtype(a[0], a[1]))]


def add(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Sum of any number of inputs (one input and ``scalar``: their sum; ``alpha`` multiplies
    the second operand)."""
    if len(a) == 1 and op.attrs.get("scalar") is not None:
        x, y = _operands(op, a)
        return [_result(_f64(x) + number(op.attrs, "alpha", 1.0) * _f64(y), x, y)]
    out = a[0]
    alpha = number(op.attrs, "alpha", 1.0)
    for x in a[1:]:
        out = out + (x if alpha == 1.0 else alpha * x)
    return [np.asarray(out, dtype=_dtype(*a)) if not _integral(*a) else np.asarray(out)]


def variadic(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``max``/``maximum``, ``min``/``minimum`` and ``mean`` of the inputs (and ``scalar``),
    elementwise with broadcasting (ONNX's Max/Min/Mean, torch's maximum/minimum)."""
    values: list[Any] = list(a) + ([op.attrs["scalar"]] if op.attrs.get("scalar") is not None
                                   else [])
    fn = {"max": np.maximum, "maximum": np.maximum, "min": np.minimum, "minimum": np.minimum,
          "mean": np.add}[op.kind]
    out = _f64(values[0])
    for v in values[1:]:
        out = fn(out, _f64(v))
    if op.kind == "mean":
        out = out / len(values)
    return [_result(out, *values)]


def compare(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Comparisons and logic (``equal``, ``not_equal``, ``greater``, ``and``, ``not``,
    ``isnan``, ...): bool."""
    fns: dict[str, Callable[..., Array]] = {
        "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater, "less": np.less,
        "greater_or_equal": np.greater_equal, "less_or_equal": np.less_equal,
        "and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor,
        "not": np.logical_not, "isnan": np.isnan}
    if op.kind in ("not", "isnan"):
        return [np.asarray(fns[op.kind](a[0]))]
    x, y = _operands(op, a)
    return [np.asarray(fns[op.kind](x, y))]


def where(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``condition ? x : y`` (the condition: nonzero)."""
    out = np.where(np.asarray(a[0]).astype(bool), a[1], a[2])
    return [_result(out, a[1], a[2])]


def clip(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Between ``min`` and ``max`` (attributes, or ONNX's second and third inputs)."""
    lo = a[1] if len(a) > 1 else op.attrs.get("min")
    hi = a[2] if len(a) > 2 else op.attrs.get("max")
    out = _f64(a[0])
    if lo is not None:
        out = np.maximum(out, _f64(lo))
    if hi is not None:
        out = np.minimum(out, _f64(hi))
    return [_result(out, a[0])]


def prelu(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``x`` where ``x >= 0``, else ``slope * x``; a 1-D slope of the channel count applies along
    axis 1 (torch's PReLU), any other broadcasts (ONNX's)."""
    x, slope = _f64(a[0]), _f64(a[1])
    if slope.ndim == 1 and x.ndim > 2 and slope.shape[0] == x.shape[1] != x.shape[-1]:
        slope = slope.reshape(-1, *[1] * (x.ndim - 2))
    return [np.where(x >= 0, x, slope * x).astype(_dtype(a[0]))]

# ------------------------------------------------------------------------ torch forms


# ------------------------------------------------------------------------ elementwise maps
def unary_map(name: str) -> TorchUnary:
    """The torch function of a unary map named as the table names it (``relu``, ``gelu``, ...)."""
    torch = torch_module()
    if name == IDENTITY:
        return lambda x: x
    maps: dict[str, TorchUnary] = {
        "relu": torch.relu,
        "gelu": lambda x: _f().gelu(x, approximate="tanh"), "sigmoid": torch.sigmoid,
        "tanh": torch.tanh, "exp": torch.exp, "log": torch.log, "neg": torch.neg,
        "abs": torch.abs, "sqrt": torch.sqrt, "atan": torch.atan}
    try:
        return maps[name]
    except KeyError:
        raise OptionError(f"no torch form for the map {name!r} (known: "
                          f"{', '.join(sorted([IDENTITY, *maps]))})") from None


def unary_form(name: str) -> TorchForm:
    """The torch form of the unary elementwise kind ``name``."""
    return lambda op, a, s: [unary_map(name)(a[0])]

# ------------------------------------------------------------------------ torch forms


def cast_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """To ``dtype`` (none given: a copy, as torch's ``.to(device)``)."""
    dtype = op.attrs.get("dtype")
    return [a[0].to(torch_dtype(dtype)) if dtype else a[0].clone()]

# ------------------------------------------------------------------------ torch forms


def _attr_map_torch(name: str, at: Any) -> TorchUnary:
    """The torch map of an elementwise kind that may read attributes (as the reference's)."""
    torch, f = torch_module(), _f()
    alpha = at.get("alpha")
    maps: dict[str, TorchUnary] = {
        "gelu": lambda x: f.gelu(x, approximate=str(at.get("approximate") or "tanh")),
        "leaky_relu": lambda x: f.leaky_relu(x, 0.01 if alpha is None else float(alpha)),
        "elu": lambda x: f.elu(x, 1.0 if alpha is None else float(alpha)),
        "celu": lambda x: f.celu(x, 1.0 if alpha is None else float(alpha)),
        "selu": lambda x: number(at, "gamma", 1.0507009873554805) * torch.where(
            x > 0, x, number(at, "alpha", 1.6732632423543772) * torch.expm1(x)),
        "thresholded_relu": lambda x: torch.where(
            x > (1.0 if alpha is None else float(alpha)), x, torch.zeros_like(x)),
        "hard_sigmoid": lambda x: torch.clamp(x * (0.2 if alpha is None else float(alpha))
                                              + number(at, "beta", 0.5), 0.0, 1.0),
        "hard_swish": f.hardswish, "relu6": f.relu6, "silu": f.silu, "swish": f.silu,
        "softplus": f.softplus, "mish": f.mish, "softsign": f.softsign, "erf": torch.erf,
        "rsqrt": torch.rsqrt,
        "square": torch.square, "reciprocal": torch.reciprocal, "sin": torch.sin,
        "cos": torch.cos, "floor": torch.floor, "ceil": torch.ceil, "round": torch.round,
        "sign": torch.sign}
    return maps[name]


def _floating(x: Tensor) -> Tensor:
    return x if x.is_floating_point() else x.float()


def mapped_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """An elementwise map that may read attributes (the reference's :func:`mapped`)."""
    x = a[0]
    keeps = op.kind in ("floor", "ceil", "round", "sign")
    return [_attr_map_torch(op.kind, op.attrs)(x if keeps else _floating(x))]


def _operands_torch(op: OpLike, a: list[Tensor]) -> tuple[Any, Any]:
    x, y = (a[0], a[1]) if len(a) > 1 else (a[0], op.attrs.get("scalar", 0.0))
    return (y, x) if op.attrs.get("reverse") else (x, y)


def _tensor(v: Any, like: Tensor) -> Tensor:
    torch = torch_module()
    return v if isinstance(v, torch.Tensor) else torch.as_tensor(v, device=like.device)


def arith_torch(name: str) -> TorchForm:
    """The torch form of ``sub``, ``mul``, ``div``, ``pow`` or ``mod`` (the reference's
    :func:`~workbench.ops.arith`)."""
    def form(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
        torch = torch_module()
        x, y = _operands_torch(op, a)
        at = op.attrs
        x, y = _tensor(x, a[0]), _tensor(y, a[0])
        if name == "sub":
            return [torch.sub(x, y, alpha=number(at, "alpha", 1.0)) if at.get("alpha")
                    not in (None, 1, 1.0) else torch.sub(x, y)]
        if name == "mul":
            return [torch.mul(x, y)]
        if name == "div":
            integral = not x.is_floating_point() and not y.is_floating_point()
            rounding = at.get("rounding") or ("trunc" if integral else None)
            return [torch.div(x, y, rounding_mode=rounding)]
        if name == "pow":
            return [torch.pow(x, y)]
        return [torch.fmod(x, y) if flag(at, "fmod", False) else torch.remainder(x, y)]
    return form


def binary_form(name: str) -> TorchForm:
    """The torch form of a two-input elementwise kind (``sub``, ``mul``, ``div``)."""
    return arith_torch(name)


def add_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Sum of any number of inputs, chained ``+`` left to right (as the reference); one input
    and ``scalar``: their sum; ``alpha`` multiplies the second operand."""
    alpha = number(op.attrs, "alpha", 1.0)
    if len(a) == 1 and op.attrs.get("scalar") is not None:
        x, y = _operands_torch(op, a)
        x, y = _tensor(x, a[0]), _tensor(y, a[0])
        return [x + y if alpha == 1.0 else torch_module().add(x, y, alpha=alpha)]
    out = a[0]
    for x in a[1:]:
        out = out + x if alpha == 1.0 else torch_module().add(out, x, alpha=alpha)
    return [out if len(a) > 1 else out.clone()]


def variadic_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``max``/``maximum``, ``min``/``minimum``, ``mean`` of the inputs (and ``scalar``)."""
    torch = torch_module()
    values = list(a)
    if op.attrs.get("scalar") is not None:
        values.append(_tensor(op.attrs["scalar"], a[0]))
    fn = {"max": torch.maximum, "maximum": torch.maximum, "min": torch.minimum,
          "minimum": torch.minimum, "mean": torch.add}[op.kind]
    out = values[0]
    for v in values[1:]:
        out = fn(out, v)
    return [out / len(values) if op.kind == "mean" else out]


def compare_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Comparisons and logic: bool tensors."""
    torch = torch_module()
    if op.kind == "not":
        return [torch.logical_not(a[0])]
    if op.kind == "isnan":
        return [torch.isnan(a[0])]
    fns = {"equal": torch.eq, "not_equal": torch.ne, "greater": torch.gt, "less": torch.lt,
           "greater_or_equal": torch.ge, "less_or_equal": torch.le, "and": torch.logical_and,
           "or": torch.logical_or, "xor": torch.logical_xor}
    x, y = _operands_torch(op, a)
    return [fns[op.kind](_tensor(x, a[0]), _tensor(y, a[0]))]


def where_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    return [torch_module().where(a[0].bool(), a[1], a[2])]


def clip_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    lo = a[1] if len(a) > 1 else op.attrs.get("min")
    hi = a[2] if len(a) > 2 else op.attrs.get("max")
    return [torch_module().clamp(a[0], lo, hi)]


def prelu_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    x, slope = a[0], a[1]
    if slope.dim() == 1 and x.dim() > 2 and slope.shape[0] == x.shape[1] != x.shape[-1]:
        slope = slope.reshape(-1, *[1] * (x.dim() - 2))
    return [torch_module().where(x >= 0, x, slope * x)]


# ------------------------------------------------------------ ONNX import: attribute conversions


def _onnx_clip(a: dict[str, Any], node: Any) -> dict[str, Any]:
    if node.opset < 11:
        return {}
    return {"min": node.scalar(1), "max": node.scalar(2)}


def _onnx_cast(a: dict[str, Any], node: Any) -> dict[str, Any]:
    dtype = a.get("dtype")
    return {"dtype": dtype if isinstance(dtype, str) else None}


def _onnx_leaky(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"alpha": float(a.get("alpha", 0.01))}


def _onnx_alpha1(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"alpha": float(a.get("alpha", 1.0))}


def _onnx_selu(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"alpha": float(a.get("alpha", 1.67326319217681884765625)),
            "gamma": float(a.get("gamma", 1.05070102214813232421875))}


def _onnx_hard_sigmoid(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))}


def _onnx_gelu(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"approximate": str(a.get("approximate") or "none")}


def _onnx_mod(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"fmod": bool(a.get("fmod") or False)}


# ------------------------------------------------------------ torch import: call conversions


def _torch_gelu(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    return {"approximate": str(named.get("approximate") or "none")}


def _torch_hardsigmoid(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
                 dtype: str | None) -> dict[str, Any]:
    return {"alpha": 1.0 / 6.0, "beta": 0.5}


def _torch_leaky(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    return {"alpha": named.get("negative_slope", 0.01)}


def _torch_binary(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    out = operands(named)
    if named.get("rounding_mode") is not None:
        out["rounding"] = named["rounding_mode"]
    if is_number(named.get("alpha")) and named["alpha"] != 1:
        out["alpha"] = named["alpha"]
    return out


def _torch_rsub(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    """``rsub(x, y, alpha)`` is ``y - alpha * x``."""
    out = _torch_binary(named, ins, outs, dtype)
    out["reverse"] = not out.get("reverse", False)
    return out


def _torch_floordiv(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
              dtype: str | None) -> dict[str, Any]:
    return {**operands(named), "rounding": "floor"}


def _torch_fmod(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    return {**operands(named), "fmod": True}


def _torch_hardtanh(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
              dtype: str | None) -> dict[str, Any]:
    """``hardtanh(x, min_val, max_val)`` (MobileNet's ReLU6 under torch.export) is a clip
    (torch's defaults -1 and 1 written out)."""
    lo, hi = named.get("min_val", -1.0), named.get("max_val", 1.0)
    return {"min": -1.0 if lo is None else lo, "max": 1.0 if hi is None else hi}


def _torch_clamp(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    return {k: named.get(k) for k in ("min", "max") if is_number(named.get(k))}


def _torch_to(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
        dtype: str | None) -> dict[str, Any]:
    given = named.get("dtype")
    name = plain(given) if given is not None and "dtype" in type(given).__name__ else None
    return {"dtype": name or dtype}


# -------------------------------------------------------------- ONNX import: cost rules


def _variadic(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return elementwise_cost(first_of(outs), ins, outs, count=max(1, len(ins) - 1))


# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind("relu", "elementwise", kernel_class="elementwise", fuse="elemwise", activation=True,
         flops_per_element=1, unary=relu, reference=unary_reference(relu),
         torch_form=unary_form("relu"), torch="ReLU relu relu_", kernel_names="relu",
         kernel_rank=16, onnx="Relu"),
    kind("sigmoid", "elementwise", fuse="elemwise", activation=True, flops_per_element=4,
         unary=sigmoid, reference=unary_reference(sigmoid), torch_form=unary_form("sigmoid"),
         torch="Sigmoid sigmoid", kernel_names="sigmoid", kernel_rank=18, onnx="Sigmoid"),
    kind("tanh", "elementwise", fuse="elemwise", activation=True, flops_per_element=5,
         unary=np.tanh, reference=unary_reference(np.tanh), torch_form=unary_form("tanh"),
         torch="Tanh tanh", kernel_names="tanh", kernel_rank=19, onnx="Tanh"),
    kind("gelu", "elementwise", fuse="elemwise", activation=True, flops_per_element=8,
         attrs="approximate", unary=gelu, reference=mapped, torch_form=mapped_torch,
         torch="GELU gelu", torch_attrs={"gelu GELU": _torch_gelu}, kernel_names="gelu",
         kernel_rank=17, onnx="Gelu", onnx_attrs={"Gelu": _onnx_gelu}),
    kind("add", "elementwise", onnx_cost={"Sum": _variadic}, kernel_class="elementwise",
         fuse="elemwise", flops_per_element=1, epilogue=True, launch_rule="n_ary_sum",
         attrs="scalar reverse alpha", binary=np.add, reference=add, torch_form=add_torch,
         onnx="Sum Add", torch="add iadd add_", torch_attrs={"add iadd": _torch_binary}),
    kind("mul", "elementwise", fuse="elemwise", flops_per_element=1, epilogue=True,
         attrs="scalar reverse", binary=np.multiply, reference=arith("mul"),
         torch_form=arith_torch("mul"), torch="mul imul mul_",
         torch_attrs={"mul imul": _torch_binary}, onnx="Mul"),
    kind("relu6", "elementwise", fuse="elemwise", flops_per_element=2, reference=mapped,
         torch_form=mapped_torch, torch="ReLU6 relu6"),
    kind("leaky_relu", "elementwise", fuse="elemwise", flops_per_element=2, attrs="alpha",
         reference=mapped, torch_form=mapped_torch, torch="LeakyReLU leaky_relu",
         torch_attrs={"leaky_relu LeakyReLU": _torch_leaky}, onnx="LeakyRelu",
         onnx_attrs={"LeakyRelu": _onnx_leaky}),
    kind("silu", "elementwise", fuse="elemwise", flops_per_element=5, reference=mapped,
         torch_form=mapped_torch, torch="SiLU silu silu_"),
    kind("swish", "elementwise", fuse="elemwise", reference=mapped, torch_form=mapped_torch),
    kind("atan", "elementwise", fuse="elemwise", unary=np.arctan,
         reference=unary_reference(np.arctan), torch_form=unary_form("atan")),
    kind("elu", "elementwise", fuse="elemwise", flops_per_element=3, attrs="alpha",
         reference=mapped, torch_form=mapped_torch, torch="ELU elu", onnx="Elu",
         onnx_attrs={"Elu": _onnx_alpha1}),
    kind("sub", "elementwise", fuse="elemwise", flops_per_element=1, attrs="scalar reverse alpha",
         binary=np.subtract, reference=arith("sub"), torch_form=arith_torch("sub"),
         torch="sub isub rsub", torch_attrs={"sub isub": _torch_binary, "rsub": _torch_rsub},
         onnx="Sub"),
    kind("div", "elementwise", fuse="elemwise", flops_per_element=1,
         attrs="scalar reverse rounding", binary=np.divide, reference=arith("div"),
         torch_form=arith_torch("div"), torch="truediv div itruediv floordiv",
         torch_attrs={"div truediv itruediv": _torch_binary, "floordiv": _torch_floordiv},
         onnx="Div"),
    kind("neg", "elementwise", fuse="elemwise", flops_per_element=1, unary=np.negative,
         reference=unary_reference(np.negative), torch_form=unary_form("neg"), torch="neg",
         onnx="Neg"),
    kind("abs", "elementwise", fuse="elemwise", flops_per_element=1, unary=np.abs,
         reference=unary_reference(np.abs), torch_form=unary_form("abs"), torch="abs", onnx="Abs"),
    kind("exp", "elementwise", fuse="elemwise", flops_per_element=1, unary=np.exp,
         reference=unary_reference(np.exp), torch_form=unary_form("exp"), torch="exp", onnx="Exp"),
    kind("log", "elementwise", fuse="elemwise", flops_per_element=1, unary=np.log,
         reference=unary_reference(np.log), torch_form=unary_form("log"), torch="log", onnx="Log"),
    kind("sqrt", "elementwise", fuse="elemwise", flops_per_element=1, unary=np.sqrt,
         reference=unary_reference(np.sqrt), torch_form=unary_form("sqrt"), torch="sqrt",
         onnx="Sqrt"),
    kind("rsqrt", "elementwise", fuse="elemwise", flops_per_element=1, reference=mapped,
         torch_form=mapped_torch, torch="rsqrt"),
    kind("square", "elementwise", fuse="elemwise", reference=mapped, torch_form=mapped_torch),
    kind("pow", "elementwise", fuse="elemwise", flops_per_element=1, attrs="scalar reverse",
         reference=arith("pow"), torch_form=arith_torch("pow"), torch="pow",
         torch_attrs={"pow": _torch_binary}, onnx="Pow"),
    kind("maximum", "elementwise", fuse="elemwise", attrs="scalar", reference=variadic,
         torch_form=variadic_torch),
    kind("minimum", "elementwise", fuse="elemwise", attrs="scalar", reference=variadic,
         torch_form=variadic_torch),
    kind("clip", "elementwise", fuse="elemwise", flops_per_element=2, attrs="min max",
         reference=clip, torch_form=clip_torch, torch="clamp hardtanh Hardtanh",
         torch_attrs={"hardtanh Hardtanh": _torch_hardtanh, "clamp": _torch_clamp}, onnx="Clip",
         onnx_attrs={"Clip": _onnx_clip}),
    kind("cast", "elementwise", onnx_cost={"Cast": copy_rule}, fuse="elemwise", attrs="dtype",
         reference=cast, torch_form=cast_torch, torch="to float half type_as _to_copy",
         torch_attrs={"to float half type_as _to_copy": _torch_to}, kernel_names="quantize fp8",
         kernel_rank=5, onnx_attrs={"Cast": _onnx_cast}),
    kind("erf", "elementwise", fuse="elemwise", flops_per_element=1, reference=mapped,
         torch_form=mapped_torch, torch="erf", onnx="Erf"),
    kind("reciprocal", "elementwise", fuse="elemwise", flops_per_element=1, reference=mapped,
         torch_form=mapped_torch, torch="reciprocal", onnx="Reciprocal"),
    kind("sin", "elementwise", fuse="elemwise", flops_per_element=1, reference=mapped,
         torch_form=mapped_torch, torch="sin", onnx="Sin"),
    kind("cos", "elementwise", fuse="elemwise", flops_per_element=1, reference=mapped,
         torch_form=mapped_torch, torch="cos", onnx="Cos"),
    kind("hard_swish", "elementwise", flops_per_element=4, reference=mapped,
         torch_form=mapped_torch, torch="Hardswish hardswish hardswish_", onnx="HardSwish"),
    kind("hard_sigmoid", "elementwise", flops_per_element=3, attrs="alpha beta", reference=mapped,
         torch_form=mapped_torch, torch="Hardsigmoid hardsigmoid hardsigmoid_",
         torch_attrs={"hardsigmoid Hardsigmoid": _torch_hardsigmoid}, onnx="HardSigmoid",
         onnx_attrs={"HardSigmoid": _onnx_hard_sigmoid}),
    kind("where", "elementwise", flops_per_element=1, reference=where, torch_form=where_torch,
         torch="where", onnx="Where"),
    kind("mod", "elementwise", flops_per_element=1, attrs="scalar reverse fmod",
         reference=arith("mod"), torch_form=arith_torch("mod"), torch="remainder fmod",
         torch_attrs={"remainder": _torch_binary, "fmod": _torch_fmod}, onnx="Mod",
         onnx_attrs={"Mod": _onnx_mod}),
    kind("floor", "elementwise", flops_per_element=1, reference=mapped, torch_form=mapped_torch,
         torch="floor", onnx="Floor"),
    kind("ceil", "elementwise", flops_per_element=1, reference=mapped, torch_form=mapped_torch,
         torch="ceil", onnx="Ceil"),
    kind("round", "elementwise", flops_per_element=1, reference=mapped, torch_form=mapped_torch,
         torch="round", onnx="Round"),
    kind("sign", "elementwise", flops_per_element=1, reference=mapped, torch_form=mapped_torch,
         torch="sign", onnx="Sign"),
    kind("not", "elementwise", flops_per_element=1, reference=compare, torch_form=compare_torch,
         torch="logical_not bitwise_not __invert__", onnx="Not"),
    kind("and", "elementwise", flops_per_element=1, attrs="scalar reverse", reference=compare,
         torch_form=compare_torch, torch="logical_and bitwise_and __and__",
         torch_attrs={"logical_and": _torch_binary}, onnx="And"),
    kind("or", "elementwise", flops_per_element=1, attrs="scalar reverse", reference=compare,
         torch_form=compare_torch, torch="logical_or bitwise_or __or__",
         torch_attrs={"logical_or": _torch_binary}, onnx="Or"),
    kind("xor", "elementwise", flops_per_element=1, attrs="scalar reverse", reference=compare,
         torch_form=compare_torch, torch="logical_xor bitwise_xor __xor__", onnx="Xor"),
    kind("equal", "elementwise", flops_per_element=1, attrs="scalar reverse", reference=compare,
         torch_form=compare_torch, torch="eq", torch_attrs={"eq": _torch_binary}, onnx="Equal"),
    kind("not_equal", "elementwise", flops_per_element=1, attrs="scalar reverse",
         reference=compare, torch_form=compare_torch, torch="ne",
         torch_attrs={"ne": _torch_binary}),
    kind("greater", "elementwise", flops_per_element=1, attrs="scalar reverse", reference=compare,
         torch_form=compare_torch, torch="gt", torch_attrs={"gt": _torch_binary}, onnx="Greater"),
    kind("less", "elementwise", flops_per_element=1, attrs="scalar reverse", reference=compare,
         torch_form=compare_torch, torch="lt", torch_attrs={"lt": _torch_binary}, onnx="Less"),
    kind("greater_or_equal", "elementwise", flops_per_element=1, attrs="scalar reverse",
         reference=compare, torch_form=compare_torch, torch="ge",
         torch_attrs={"ge": _torch_binary}, onnx="GreaterOrEqual"),
    kind("less_or_equal", "elementwise", flops_per_element=1, attrs="scalar reverse",
         reference=compare, torch_form=compare_torch, torch="le",
         torch_attrs={"le": _torch_binary}, onnx="LessOrEqual"),
    kind("isnan", "elementwise", flops_per_element=1, reference=compare, torch_form=compare_torch,
         onnx="IsNaN", torch="isnan"),
    kind("thresholded_relu", "elementwise", flops_per_element=1, attrs="alpha", reference=mapped,
         torch_form=mapped_torch, onnx="ThresholdedRelu",
         onnx_attrs={"ThresholdedRelu": _onnx_alpha1}),
    kind("prelu", "elementwise", flops_per_element=2, reference=prelu, torch_form=prelu_torch,
         torch="PReLU prelu", onnx="PRelu"),
    kind("selu", "elementwise", flops_per_element=3, attrs="alpha gamma", reference=mapped,
         torch_form=mapped_torch, onnx="Selu", onnx_attrs={"Selu": _onnx_selu}),
    kind("celu", "elementwise", flops_per_element=3, attrs="alpha", reference=mapped,
         torch_form=mapped_torch, onnx="Celu", onnx_attrs={"Celu": _onnx_alpha1}),
    kind("softplus", "elementwise", flops_per_element=3, reference=mapped, torch_form=mapped_torch,
         torch="Softplus softplus", onnx="Softplus"),
    kind("softsign", "elementwise", flops_per_element=3, reference=mapped, torch_form=mapped_torch,
         onnx="Softsign"),
    # Mish (YOLOv4's and YOLOv5's backbones): x * tanh(softplus(x)); FLOPs: softplus 3, tanh 5
    # and the product
    kind("mish", "elementwise", flops_per_element=9, reference=mapped, torch_form=mapped_torch,
         onnx="Mish", torch="Mish mish mish_"),
    kind("bias", "elementwise", fuse="broadcast", epilogue=True),
    kind("bias_add", "elementwise", fuse="broadcast"),
    kind("scale", "elementwise", fuse="broadcast"),
    kind("max", "reduction", onnx_cost={"Max": _variadic}, flops_per_element=1, attrs="scalar",
         reference=variadic, torch_form=variadic_torch, torch="maximum max",
         torch_attrs={"maximum": _torch_binary}),
    kind("min", "reduction", onnx_cost={"Min": _variadic}, flops_per_element=1, attrs="scalar",
         reference=variadic, torch_form=variadic_torch, torch="minimum min",
         torch_attrs={"minimum": _torch_binary}),
    kind("mean", "reduction", onnx_cost={"Mean": _variadic}, attrs="scalar", reference=variadic,
         torch_form=variadic_torch),
)

#: Kinds only the importers name (not in ``OPS``): their importer facts.
IMPORTED = (
    kind("elementwise", "elementwise",
         kernel_names="elementwise dropout multi_tensor_apply scalepackedtensor triton_poi "
                      "fill_kernel copy_kernel", kernel_rank=21),
)
