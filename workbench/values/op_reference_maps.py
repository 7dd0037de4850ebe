"""The NumPy references of the elementwise and reducing kinds: maps, arithmetic, comparisons,
reductions.

The other part of :mod:`workbench.values.op_reference` (same signature ``(op, inputs, shape_of)
-> outputs``, same conventions), registered in :data:`workbench.values.ops.OPS`.  Maps compute in
float64 and return the input's floating type; arithmetic on integers stays integral (division
truncates, ONNX's, unless ``rounding`` says floor); comparisons give bool; a binary op with one
input takes its other operand from ``scalar`` (``reverse``: the number comes first, torch's
``rsub``).  Attributes are read in the op vocabulary (:mod:`workbench.values.op_attrs`).

>>> import numpy as np
>>> class _Op:
...     kind, attrs, inputs, outputs = "sub", {"scalar": 1.0, "reverse": True}, ("x",), ("y",)
>>> arith("sub")(_Op(), [np.float32([0.25, 2.0])], lambda t: (2,))[0].tolist()
[0.75, -1.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from workbench.values.op_attrs import axes_of, flag, number
from workbench.values.op_reference import (
    Array,
    OpLike,
    Reference,
    ShapeOf,
    UnaryFn,
    _dtype,
    _f64,
    gelu,
    sigmoid,
)

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
        "softplus": lambda x: np.logaddexp(0.0, x), "softsign": lambda x: x / (1.0 + np.abs(x)),
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



def reduce(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``reduce_sum``/``mean``/``max``/``min``/``prod``/``l2``/``sum_square`` over ``axes``
    (default every axis), ``keepdims`` (default true)."""
    x = a[0]
    axes = axes_of(op.attrs.get("axes"), x.ndim)
    keep = flag(op.attrs, "keepdims", True)
    z = _f64(x)
    fns: dict[str, Callable[..., Array]] = {
        "reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max,
        "reduce_min": np.min, "reduce_prod": np.prod,
        "reduce_l2": lambda v, **k: np.sqrt(np.sum(v * v, **k)),
        "reduce_sum_square": lambda v, **k: np.sum(v * v, **k)}
    out = fns[op.kind](z, axis=axes, keepdims=keep)
    return [_result(out, x)]



def arg_extreme(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``argmax``/``argmin`` along ``axis`` (default 0), ``keepdims`` (default true),
    ``select_last_index``: int64."""
    x = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % max(1, x.ndim)
    fn = np.argmax if op.kind == "argmax" else np.argmin
    if flag(op.attrs, "select_last_index", False):
        out = x.shape[axis] - 1 - fn(np.flip(x, axis=axis), axis=axis)
    else:
        out = fn(x, axis=axis)
    out = np.asarray(out, dtype=np.int64)
    return [np.expand_dims(out, axis) if flag(op.attrs, "keepdims", True) else out]


__all__ = ["add", "arg_extreme", "arith", "binary_reference", "clip", "compare", "erf",
           "mapped", "prelu", "reduce", "unary_reference", "variadic", "where"]
