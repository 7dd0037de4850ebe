"""The NumPy reference of each op kind: what an op computes, from its attrs and input arrays.

One function per kind family, registered as ``reference=`` in :data:`workbench.values.ops.OPS` (the
table binds the elementwise maps, so this module holds no table keyed by kind).  The CPU
reference executor (:func:`workbench.executors.reference.run_reference`), the GPU references
(:mod:`workbench.executors.gpu.reference`) and the kernel twins of the emulator all compute with
these.

Conventions: inputs are accumulated in float64 and the result has the inputs' floating dtype
(float32 for everything :func:`workbench.executors.reference.draw_inputs` draws); conv2d is NCHW
without
dilation, with ``pre_act`` applied to the input before zero padding and ``act`` after the bias;
max pooling never picks padding and average pooling counts it in the divisor; layernorm takes
params ``(2, D)`` (gamma, beta), batchnorm ``(4, C)`` (gamma, beta, mean, var); views reshape to
their output's shape; copies and ``print`` return their input; the ``assign`` family returns the
value it writes (the executors keep the state); the generic kind ``"op"`` of
:meth:`Graph.from_edges` graphs outputs ``1 + sum of the inputs' means`` (enough to follow data
flow).  Every function is one NumPy call chain per op.

>>> import numpy as np
>>> from workbench.values.ops import OPS
>>> class _Op:  # any object with kind, attrs, inputs and outputs
...     kind, attrs, inputs, outputs = "relu", {}, ("x",), ("y",)
>>> OPS["relu"].reference(_Op(), [np.float32([-1.0, 2.0])], lambda t: (2,))[0].tolist()
[0.0, 2.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

Array = np.ndarray
F32 = np.float32
UnaryFn = Callable[[Array], Array]
ShapeOf = Callable[[str], Any]


class OpLike(Protocol):
    """What a reference reads of an op (:class:`workbench.values.graph.Op` is one)."""

    @property
    def kind(self) -> str: ...
    @property
    def attrs(self) -> Mapping[str, Any]: ...
    @property
    def inputs(self) -> tuple[str, ...]: ...
    @property
    def outputs(self) -> tuple[str, ...]: ...


Reference = Callable[[Any, list[Array], ShapeOf], list[Array]]


def _dtype(*arrays: Array) -> Any:
    """The result dtype: the inputs' floating type, float32 otherwise."""
    kind = np.result_type(*arrays)
    return kind if np.issubdtype(kind, np.floating) else F32


# ------------------------------------------------------------------------ elementwise maps
def identity(x: Array) -> Array:
    return x


def relu(x: Array) -> Array:
    return np.maximum(x, 0)


def gelu(x: Array) -> Array:
    """The tanh approximation."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def sigmoid(x: Array) -> Array:
    return 1.0 / (1.0 + np.exp(-x))


# ------------------------------------------------------------------------ array functions
def _pair(value: Any, default: int) -> tuple[int, int]:
    if value is None:
        return (default, default)
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    return (int(value[0]), int(value[1]))


def conv2d(x: Array, w: Array, bias: Array | None = None, *, stride: Any = 1, padding: Any = 0,
           groups: int = 1, act: UnaryFn = identity, pre_act: UnaryFn = identity) -> Array:
    """NCHW convolution (no dilation), float64 accumulation; ``pre_act`` is applied to the input
    before zero padding, ``act`` after the bias."""
    sh, sw = _pair(stride, 1)
    ph, pw = _pair(padding, 0)
    dtype = _dtype(x, w)
    x = pre_act(x.astype(np.float64))
    n, c, _, _ = x.shape
    k, cpg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]
    ho, wo = win.shape[2], win.shape[3]
    win = win.reshape(n, groups, cpg, ho, wo, kh, kw)
    wg = w.astype(np.float64).reshape(groups, k // groups, cpg, kh, kw)
    out = np.einsum("ngchwrs,gkcrs->ngkhw", win, wg, optimize=True).reshape(n, k, ho, wo)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return act(out).astype(dtype)


def pool2d(x: Array, *, kernel: Any, stride: Any = None, padding: Any = 0,
           mode: str = "max") -> Array:
    """Max pool (padding never wins) or average pool with the padding in the divisor."""
    kh, kw = _pair(kernel, 1)
    sh, sw = _pair(stride if stride is not None else kernel, 1)
    ph, pw = _pair(padding, 0)
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)),
                constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]
    out = win.max(axis=(4, 5)) if mode == "max" else win.sum(axis=(4, 5)) / (kh * kw)
    return out.astype(_dtype(x))


def softmax(x: Array, *, axis: int = -1, scale: float = 1.0) -> Array:
    z = x.astype(np.float64) * scale
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(_dtype(x))


def layernorm(x: Array, params: Array, *, eps: float = 1e-5) -> Array:
    z = x.astype(np.float64)
    p = params.astype(np.float64).reshape(2, -1)
    mean = z.mean(axis=-1, keepdims=True)
    var = z.var(axis=-1, keepdims=True)
    return ((z - mean) / np.sqrt(var + eps) * p[0] + p[1]).astype(_dtype(x, params))


def batchnorm(x: Array, params: Array, *, eps: float = 1e-3, axis: int = 1) -> Array:
    z = x.astype(np.float64)
    gamma, beta, mean, var = params.astype(np.float64).reshape(4, -1)
    shape = [1] * z.ndim
    shape[axis % z.ndim] = -1
    scale = gamma / np.sqrt(var + eps)
    out = z * scale.reshape(shape) + (beta - mean * scale).reshape(shape)
    return out.astype(_dtype(x, params))


def matmul(a: Array, b: Array, bias: Array | None = None) -> Array:
    out = np.matmul(a.astype(np.float64), b.astype(np.float64))
    if bias is not None:
        out = out + bias
    return out.astype(_dtype(a, b))


# ------------------------------------------------------------------------ per-kind references
def unary_reference(fn: UnaryFn) -> Reference:
    """The reference of an elementwise kind computing ``fn`` (in float64)."""
    return lambda op, a, s: [fn(a[0].astype(np.float64)).astype(_dtype(a[0]))]


def binary_reference(fn: Callable[[Array, Array], Array]) -> Reference:
    """The reference of a two-input elementwise kind (computed in the inputs' type)."""
    return lambda op, a, s: [np.asarray(fn(a[0], a[1]), dtype=_dtype(a[0], a[1]))]


def add(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Sum of any number of inputs."""
    out = a[0]
    for x in a[1:]:
        out = out + x
    return [np.asarray(out, dtype=_dtype(*a))]


def conv(op: OpLike, a: list[Array], shape_of: ShapeOf, *,
         unary: Callable[[str | None], UnaryFn]) -> list[Array]:
    """conv2d: input, weight (any layout of ``K*C/groups*kh*kw`` elements), optional bias."""
    x = a[0]
    at = op.attrs
    kh, kw = _pair(at.get("kernel"), 1)
    groups = int(at.get("groups", 1) or 1)
    k = shape_of(op.outputs[0])[1]
    w = a[1].reshape(k, x.shape[1] // groups, kh, kw)
    bias = a[2] if len(a) > 2 else None
    return [conv2d(x, w, bias, stride=at.get("stride", 1), padding=at.get("padding", 0),
                   groups=groups, act=unary(at.get("act")), pre_act=unary(at.get("pre_act")))]


def sepconv(op: OpLike, a: list[Array], shape_of: ShapeOf, *,
            unary: Callable[[str | None], UnaryFn]) -> list[Array]:
    """Separable conv: depthwise ``kernel`` (pre-activation relu by default), then pointwise."""
    x, dw, pw = a[0], a[1], a[2]
    at = op.attrs
    kh, kw = _pair(at.get("kernel"), 3)
    c = x.shape[1]
    mid = conv2d(x, dw.reshape(c, 1, kh, kw), stride=at.get("stride", 1),
                 padding=at.get("padding", kh // 2), groups=c,
                 pre_act=unary(at.get("pre_act", "relu")))
    k = shape_of(op.outputs[0])[1]
    return [conv2d(mid, pw.reshape(k, c, 1, 1))]


def pool(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """maxpool and avgpool."""
    at = op.attrs
    return [pool2d(a[0], kernel=at.get("kernel"), stride=at.get("stride"),
                   padding=at.get("padding", 0), mode="max" if op.kind == "maxpool" else "avg")]


def global_avgpool(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    return [a[0].astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(_dtype(a[0]))]


def batchnorm_reference(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    return [batchnorm(a[0], a[1], eps=op.attrs.get("eps", 1e-3), axis=op.attrs.get("axis", 1))]


def concat(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    axis = op.attrs.get("axis", 1) if a[0].ndim > 1 else 0
    return [np.concatenate(a, axis=axis)]


def matmul_reference(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``x @ W``, plus the bias when a third input is given."""
    return [matmul(a[0], a[1], a[2] if len(a) > 2 else None)]


def softmax_reference(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    return [softmax(a[0], axis=op.attrs.get("axis", -1), scale=op.attrs.get("scale", 1.0))]


def layernorm_reference(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    return [layernorm(a[0], a[1], eps=op.attrs.get("eps", 1e-5))]


def transpose(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    return [np.ascontiguousarray(np.transpose(a[0], op.attrs["perm"]))]


def view(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """A view: the input reshaped to the output's shape (unchanged when that is unknown)."""
    shape = shape_of(op.outputs[0]) if op.outputs else None
    return [a[0].reshape(shape) if shape else a[0]]


def copy(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Copies and pass-through I/O: the input, once per output."""
    return [a[0].copy() for _ in op.outputs]


def assign(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """The value the ``assign`` family writes: the second input (else the first), added to or
    subtracted from the first input for ``assign_add`` / ``assign_sub``."""
    value = a[1] if len(a) > 1 else a[0]
    if op.kind == "assign_add":
        value = a[0] + value
    elif op.kind == "assign_sub":
        value = a[0] - value
    return [np.array(value, dtype=_dtype(*a))]


def generic(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """The generic kind ``"op"``: ``1 + sum of the inputs' means``, at every output element."""
    value = 1.0 + sum(float(np.mean(x)) for x in a)
    return [np.full(shape_of(t) or (1,), value, dtype=np.float32) for t in op.outputs]


def spin_value(inputs: Sequence[Array]) -> float:
    """What the GPU's spin kernel writes everywhere: ``1 + sum of element 0 of each non-empty
    input`` (the generic kind's stand-in on the GPU)."""
    value = F32(1.0)
    for x in inputs:
        if x.size:
            value = F32(value + F32(x.reshape(-1)[0]))
    return float(value)


__all__ = [
    "F32", "Array", "OpLike", "Reference", "ShapeOf", "UnaryFn", "add", "assign", "batchnorm",
    "batchnorm_reference", "binary_reference", "concat", "conv", "conv2d", "copy", "gelu",
    "generic", "global_avgpool", "identity", "layernorm", "layernorm_reference", "matmul",
    "matmul_reference", "pool", "pool2d", "relu", "sepconv", "sigmoid", "softmax",
    "softmax_reference", "spin_value", "transpose", "unary_reference", "view",
]
