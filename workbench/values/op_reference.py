"""The NumPy reference of each op kind: what an op computes, from its attrs and input arrays.

One function per kind family, registered as ``reference=`` in :data:`workbench.values.ops.OPS`
(:mod:`workbench.values.op_bindings` lists them by kind, and the elementwise maps, so this module
holds no table keyed by kind).  The CPU
reference executor (:func:`workbench.executors.reference.run_reference`), the GPU references
(:mod:`workbench.executors.gpu.reference`) and the kernel twins of the emulator all compute with
these.  This module holds the references of the convolutions, pools, norms, products and views;
the array functions they call (the activations, :func:`convnd`, :func:`conv2d`, :func:`pool2d`,
:func:`softmax`, the norms, :func:`matmul`) are in :mod:`workbench.values.op_reference_arrays`
and re-exported here; the elementwise maps, arithmetic, comparisons and reductions are in
:mod:`workbench.values.op_reference_maps`, the data-movement kinds (indexing, shapes, resizing) in
:mod:`workbench.values.op_reference_data`, torch's indexing, shifting and scanning kinds
(``index``, ``gather_elements``, ``roll``, ``masked_fill``, ``diff``, ``cumsum``) in
:mod:`workbench.values.op_reference_index`, the recurrent cells (``lstm``, ``gru``, ``rnn``) in
:mod:`workbench.values.op_reference_recurrent`.

Attributes are read in the vocabulary of :mod:`workbench.values.op_attrs`, through its readers
(:func:`~workbench.values.op_attrs.window_of`, ...), so the torch forms
(:mod:`workbench.values.op_torch`) apply the same defaults.

Conventions: inputs are accumulated in float64 and the result has the inputs' floating dtype
(float32 for everything :func:`workbench.executors.reference.draw_inputs` draws; integer inputs
keep integer results where the op is integral, comparisons give bool); convolutions are NC + any
number of spatial axes, with ``pre_act`` applied to the input before zero padding and ``act``
after the bias; max pooling never picks padding and average pooling counts it in the divisor
unless ``count_include_pad`` is false; layernorm takes params ``(2, D)`` (gamma, beta) or
ONNX's separate scale and bias inputs, batchnorm ``(4, C)`` (gamma, beta, mean, var) or ONNX's
four inputs; views reshape to their output's shape; copies and ``print`` return their input; the
``assign`` family returns the value it writes (the executors keep the state); the generic kind
``"op"`` of :meth:`Graph.from_edges` graphs outputs ``1 + sum of the inputs' means`` (enough to
follow data flow).  Every function is one NumPy call chain per op.

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

from workbench.values.op_attrs import axes_of, flag, number, per_axis, window_of
from workbench.values.op_reference_arrays import (
    F32,
    Array,
    UnaryFn,
    _batchnorm,
    _dtype,
    _f64,
    _normalize,
    batchnorm,
    conv2d,
    convnd,
    gelu,
    identity,
    layernorm,
    matmul,
    pool2d,
    relu,
    sigmoid,
    softmax,
)

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


def _pair(value: Any, default: int) -> tuple[int, int]:
    if value is None:
        return (default, default)
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    return (int(value[0]), int(value[1]))


# ------------------------------------------------------------------------ per-kind references


def conv(op: OpLike, a: list[Array], shape_of: ShapeOf, *,
         unary: Callable[[str | None], UnaryFn]) -> list[Array]:
    """conv1d/2d/3d: input, weight (its own shape, or any layout of ``K*C/groups*prod(kernel)``
    elements), optional bias; ``kernel``, ``stride``, ``padding``, ``dilation``, ``groups``."""
    x = a[0]
    at = op.attrs
    n = x.ndim - 2
    groups = int(at.get("groups", 1) or 1)
    w = a[1]
    if w.ndim != n + 2:
        k = shape_of(op.outputs[0])[1]
        w = w.reshape(k, x.shape[1] // groups, *per_axis(at.get("kernel"), n, 1))
    win = window_of(at, n, kernel=w.shape[2:])
    bias = a[2] if len(a) > 2 else None
    return [convnd(x, w, bias, stride=win.stride, begin=win.begin, end=win.end,
                   dilation=win.dilation, groups=groups, act=unary(at.get("act")),
                   pre_act=unary(at.get("pre_act")))]


def conv_transpose(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Transposed convolution (weight ``(C, K/groups, *kernel)``): the convolution of the input
    spread by ``stride`` (zeros between) with the flipped, transposed weight, padded
    ``dilation * (kernel - 1) - padding`` per side and ``output_padding`` more at the end."""
    x, w = a[0], a[1]
    at = op.attrs
    n, groups = x.ndim - 2, int(at.get("groups", 1) or 1)
    win = window_of(at, n, kernel=w.shape[2:])
    extra = per_axis(at.get("output_padding"), n, 0)
    spread = np.zeros((*x.shape[:2], *[(s - 1) * st + 1 for s, st in
                                         zip(x.shape[2:], win.stride, strict=True)]))
    spread[(slice(None), slice(None), *(slice(None, None, st) for st in win.stride))] = x
    c, kg = w.shape[0], w.shape[1]
    flipped = _f64(w)[(slice(None), slice(None), *[slice(None, None, -1)] * n)]
    wt = flipped.reshape(groups, c // groups, kg, *w.shape[2:]).swapaxes(1, 2).reshape(
        groups * kg, c // groups, *w.shape[2:])
    full = [d * (k - 1) for d, k in zip(win.dilation, win.kernel, strict=True)]
    begin = [f - b for f, b in zip(full, win.begin, strict=True)]
    end = [f - e + o for f, e, o in zip(full, win.end, extra, strict=True)]
    lo = [max(0, -b) for b in begin]  # padding beyond the kernel's reach crops
    spread = spread[(slice(None), slice(None), *(slice(cut, None) for cut in lo))]
    out = convnd(spread, wt, a[2] if len(a) > 2 else None, stride=(1,) * n,
                 begin=[max(0, b) for b in begin], end=[max(0, e) for e in end],
                 dilation=win.dilation, groups=groups)
    hi = [max(0, -e) for e in end]
    out = out[(slice(None), slice(None), *(slice(0, s - h) for s, h in
                                          zip(out.shape[2:], hi, strict=True)))]
    return [out.astype(_dtype(x, w))]


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
    """maxpool and avgpool (``kernel``, ``stride`` (default: the kernel), ``padding``,
    ``dilation``, ``ceil_mode``, ``count_include_pad`` (default true))."""
    at = op.attrs
    return [pool2d(a[0], kernel=at.get("kernel"), stride=at.get("stride"),
                   padding=at.get("padding", 0), mode="max" if op.kind == "maxpool" else "avg",
                   dilation=at.get("dilation"), ceil_mode=flag(at, "ceil_mode", False),
                   count_include_pad=flag(at, "count_include_pad", True))]


def adaptive_bins(size: int, out: int) -> list[tuple[int, int]]:
    """torch's adaptive pooling windows along one axis: output ``i`` pools
    ``[floor(i*size/out), ceil((i+1)*size/out))``."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _adaptive(x: Array, out: Sequence[int] | None, reduce: Callable[..., Array]) -> Array:
    """Pooled over the spatial axes to the spatial sizes of ``out`` (``None`` or all ones: over
    each axis whole), one axis at a time (a box's mean or max is the mean or max of its
    rows')."""
    sizes = list(out[2:]) if out is not None and len(out) == x.ndim else [1] * (x.ndim - 2)
    for axis, n in enumerate(sizes, start=2):
        x = np.concatenate([reduce(x.take(range(lo, hi), axis=axis), axis=axis, keepdims=True)
                            for lo, hi in adaptive_bins(x.shape[axis], n)], axis=axis)
    return x


def global_avgpool(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Average over the spatial axes, to the output's spatial size (torch's adaptive pool;
    1, the default: global)."""
    out = shape_of(op.outputs[0]) if op.outputs else None
    return [_adaptive(_f64(a[0]), out, np.mean).astype(_dtype(a[0]))]


def global_maxpool(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Maximum over the spatial axes, to the output's spatial size (as :func:`global_avgpool`)."""
    return [_adaptive(a[0], shape_of(op.outputs[0]) if op.outputs else None, np.max)]


def weight_norm(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """torch's weight normalisation ``v * g / ||v||``: the norm over every axis but ``axis``
    (torch's ``dim``, default 0; -1: over the whole tensor), ``g`` broadcast against it."""
    v, g = _f64(a[0]), _f64(a[1])
    axis = int(op.attrs.get("axis", 0) or 0)
    keep = () if axis == -1 else (axis % v.ndim,)
    over = tuple(i for i in range(v.ndim) if i not in keep)
    norm = np.sqrt((v * v).sum(axis=over, keepdims=True))
    return [(v * (g / norm)).astype(_dtype(a[0]))]


def batchnorm_reference(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Inference batch norm over ``axis`` (default 1): params ``(4, C)`` (the builder's), or
    ONNX's / torch's four inputs scale, bias, mean, var; ``eps`` (default 1e-3)."""
    eps, axis = number(op.attrs, "eps", 1e-3), int(op.attrs.get("axis", 1) or 1)
    if len(a) >= 5:
        return [_batchnorm(a[0], a[1], a[2], a[3], a[4], eps, axis).astype(_dtype(*a))]
    return [batchnorm(a[0], a[1], eps=eps, axis=axis)]


def concat(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    axis = op.attrs.get("axis", 1) if a[0].ndim > 1 else 0
    return [np.concatenate(a, axis=axis)]


def _gemm_operands(op: OpLike, a: list[Array]) -> tuple[Array, Array, Array | None]:
    """(A, B, bias) of a matmul: ``bias_first`` (torch's addmm) moves the bias first."""
    if op.attrs.get("bias_first") and len(a) > 2:
        return a[1], a[2], a[0]
    return a[0], a[1], a[2] if len(a) > 2 else None


def matmul_reference(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``alpha * op(A) @ op(B) + beta * bias`` (op: transposed when ``trans_a``/``trans_b``,
    ONNX's Gemm and torch's linear weight), the bias when an input gives it."""
    x, w, bias = _gemm_operands(op, a)
    at = op.attrs
    x = np.swapaxes(x, -1, -2) if at.get("trans_a") else x
    w = np.swapaxes(w, -1, -2) if at.get("trans_b") else w
    out = np.matmul(_f64(x), _f64(w)) * number(at, "alpha", 1.0)
    if bias is not None:
        out = out + number(at, "beta", 1.0) * _f64(bias)
    return [out.astype(_dtype(x, w))]


def softmax_reference(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    return [softmax(a[0], axis=op.attrs.get("axis", -1), scale=op.attrs.get("scale", 1.0))]


def log_softmax(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    z = _f64(a[0])
    axis = int(op.attrs.get("axis", -1))
    z = z - z.max(axis=axis, keepdims=True)
    return [(z - np.log(np.exp(z).sum(axis=axis, keepdims=True))).astype(_dtype(a[0]))]


def layernorm_reference(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Layer norm over the axes from ``axis`` (default -1) on, ``eps`` (1e-5): params ``(2, D)``
    (the builder's gamma and beta), or ONNX's / torch's scale and optional bias inputs."""
    x = a[0]
    axis = int(op.attrs.get("axis", -1)) % x.ndim
    axes = tuple(range(axis, x.ndim))
    eps = number(op.attrs, "eps", 1e-5)
    if len(a) == 2 and a[1].size == 2 * math.prod(x.shape[axis:]):
        return [layernorm(x, a[1], eps=eps)]
    return [_normalize(x, axes, a[1] if len(a) > 1 else None, a[2] if len(a) > 2 else None,
                       eps).astype(_dtype(*a))]


def _channel(v: Array, rank: int) -> Array:
    return _f64(v).reshape(-1, *[1] * (rank - 2))


def instancenorm(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Per sample and channel over the spatial axes; scale and bias per channel; ``eps``."""
    x = a[0]
    out = _normalize(x, tuple(range(2, x.ndim)), None, None, number(op.attrs, "eps", 1e-5))
    if len(a) > 1:
        out = out * _channel(a[1], x.ndim)
    if len(a) > 2:
        out = out + _channel(a[2], x.ndim)
    return [out.astype(_dtype(x))]


def groupnorm(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``groups`` groups of channels normalised together; scale and bias per channel (ONNX's
    opset-18 per-group scale is repeated over each group's channels); ``eps``."""
    x = a[0]
    g = int(op.attrs.get("groups", 1) or 1)
    z = _f64(x).reshape(x.shape[0], g, -1)
    out = _normalize(z, (2,), None, None, number(op.attrs, "eps", 1e-5)).reshape(x.shape)
    for k, v in enumerate(a[1:3]):
        v = np.repeat(_f64(v), x.shape[1] // g) if v.size == g != x.shape[1] else v
        out = out * _channel(v, x.ndim) if k == 0 else out + _channel(v, x.ndim)
    return [out.astype(_dtype(x))]


def lrn(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Local response norm across channels: ``x / (k + alpha/window * sum of x^2 over the
    window)^beta`` (ONNX's and torch's)."""
    x = _f64(a[0])
    at = op.attrs
    size = int(at.get("window", 1) or 1)
    sq = np.pad(x * x, [(0, 0), ((size - 1) // 2, size // 2), *[(0, 0)] * (x.ndim - 2)])
    total = sum(sq[:, i:i + x.shape[1]] for i in range(size))
    div = (number(at, "k", 1.0) + number(at, "alpha", 1e-4) / size * total) ** number(
        at, "beta", 0.75)
    return [(x / div).astype(_dtype(a[0]))]


def einsum(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``einsum(equation, *operands)`` in float64, returned in the operands' dtype."""
    return [np.einsum(str(op.attrs["equation"]), *(_f64(t) for t in a)).astype(_dtype(*a))]


def attention(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Scaled dot-product attention of ``q, k, v`` (and an optional mask: boolean keeps,
    floating adds): ``softmax(q k^T * scale + mask) v``, ``scale`` default 1/sqrt(head size),
    ``is_causal`` masks the future."""
    q, k, v = (_f64(t) for t in a[:3])
    scale = number(op.attrs, "scale", 1.0 / math.sqrt(q.shape[-1]))
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if flag(op.attrs, "is_causal", False):
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    if len(a) > 3:
        mask = a[3]
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + _f64(mask)
    return [np.matmul(softmax(s, axis=-1).astype(np.float64), v).astype(_dtype(a[0]))]


def transpose(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    perm = op.attrs.get("perm")
    return [np.ascontiguousarray(np.transpose(a[0], perm if perm is not None else None))]


def view_shape(op: OpLike, in_shape: Sequence[int], shape_of: ShapeOf) -> tuple[int, ...]:
    """The shape a view op gives its input: the output's when known, else from its attributes
    (``shape`` with ONNX's 0 = keep and -1 = infer; ``squeeze``/``unsqueeze`` ``axes``;
    ``flatten``'s ONNX ``axis`` or torch ``start_dim``/``end_dim``), else the input's."""
    known = shape_of(op.outputs[0]) if op.outputs else None
    if known:
        return tuple(known)
    at, dims = op.attrs, list(in_shape)
    rank = len(dims)
    if op.kind == "squeeze":
        gone = axes_of(at.get("axes"), rank)
        return tuple(d for i, d in enumerate(dims) if (d != 1 if gone is None else i not in gone))
    if op.kind in ("unsqueeze", "expand_dims") and at.get("axes") is not None:
        added = at["axes"] if isinstance(at["axes"], (list, tuple)) else [at["axes"]]
        out_rank = rank + len(added)
        for ax in sorted(int(a) % out_rank for a in added):
            dims.insert(ax, 1)
        return tuple(dims)
    if op.kind == "flatten" and rank:
        if at.get("axis") is not None:
            k = int(at["axis"]) % (rank + 1)
            return (math.prod(dims[:k]), math.prod(dims[k:]))
        lo = int(at.get("start_dim", 1) or 0) % rank
        hi = int(at.get("end_dim", -1) if at.get("end_dim") is not None else -1) % rank
        return (*dims[:lo], math.prod(dims[lo:hi + 1]), *dims[hi + 1:])
    target = at.get("shape")
    if isinstance(target, (list, tuple)) and target:
        out = [dims[i] if v == 0 and i < rank else int(v) for i, v in enumerate(target)]
        if -1 in out:
            rest = math.prod(v for v in out if v != -1)
            out[out.index(-1)] = math.prod(dims) // rest if rest else 0
        return tuple(out)
    return tuple(dims)


def view(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """A view: the input reshaped to the output's shape (:func:`view_shape` when that is
    unknown)."""
    return [a[0].reshape(view_shape(op, a[0].shape, shape_of))]


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
    "F32", "Array", "OpLike", "Reference", "ShapeOf", "UnaryFn", "adaptive_bins", "assign",
    "attention", "batchnorm", "batchnorm_reference", "concat", "conv", "conv2d",
    "conv_transpose", "convnd", "copy", "gelu", "generic", "global_avgpool", "global_maxpool",
    "groupnorm", "identity", "instancenorm", "layernorm", "layernorm_reference", "log_softmax",
    "lrn", "matmul", "matmul_reference", "pool", "pool2d", "relu", "sepconv", "sigmoid",
    "softmax", "softmax_reference", "spin_value", "transpose", "view", "view_shape",
    "weight_norm",
]
