"""The NumPy side every family shares: the reference signature, and the array functions under the
references (elementwise maps, convolution, pooling, softmax, the norms, the matrix product).

A kind's NumPy reference (``OpKind.reference``) is ``(op, inputs, shape_of) -> outputs``
(:data:`Reference`) over any op-like object (:class:`OpLike`: ``kind``, ``attrs``, ``inputs``,
``outputs``).  The references read an op's attributes and call the functions here; the GPU
references (:mod:`workbench.executors.gpu.reference`) and the kernel twins of the emulator call
them directly, with arguments the way the kernels take them.  Conventions every reference keeps:
inputs accumulate in float64 and the result has the inputs' floating dtype (float32 otherwise);
convolutions are NC + any number of spatial axes, padded per side, ``pre_act`` applied before the
zero padding and ``act`` after the bias; max pooling never picks padding, average pooling counts
it in the divisor unless ``count_include_pad`` is false.  Every function is one NumPy call chain.

>>> import numpy as np
>>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
>>> pool2d(x, kernel=2).reshape(-1).tolist()
[5.0, 7.0, 13.0, 15.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from workbench.ops.attrs import pads_per_side, per_axis, window_of

# ------------------------------------------------------------------------ NumPy references


Array = np.ndarray


F32 = np.float32


UnaryFn = Callable[[Array], Array]


def _dtype(*arrays: Array) -> Any:
    """The result dtype: the inputs' floating type, float32 otherwise."""
    kind = np.result_type(*arrays)
    return kind if np.issubdtype(kind, np.floating) else F32


def _f64(x: Array) -> Array:
    return np.asarray(x, dtype=np.float64)


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
def _windows(xp: Array, kernel: Sequence[int], stride: Sequence[int],
             dilation: Sequence[int]) -> Array:
    """``(N, C, *out, *kernel)`` strided windows of a padded ``(N, C, *spatial)`` array."""
    n = len(kernel)
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilation, strict=True)]
    win = np.lib.stride_tricks.sliding_window_view(xp, span, axis=tuple(range(2, 2 + n)))
    picks = (slice(None), slice(None), *(slice(None, None, s) for s in stride),
             *(slice(None, None, d) for d in dilation))
    return win[picks]


def convnd(x: Array, w: Array, bias: Array | None = None, *, stride: Sequence[int],
           begin: Sequence[int], end: Sequence[int], dilation: Sequence[int], groups: int = 1,
           act: UnaryFn = identity, pre_act: UnaryFn = identity) -> Array:
    """An NC + spatial convolution (any number of spatial axes), float64 accumulation;
    padding per side (``begin``, ``end``), ``pre_act`` before the padding, ``act`` after the
    bias."""
    dtype = _dtype(x, w)
    x = pre_act(_f64(x))
    n_sp = w.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0), *zip(begin, end, strict=True)])
    win = _windows(xp, w.shape[2:], stride, dilation)
    out_sp = win.shape[2:2 + n_sp]
    k = w.shape[0]
    win = win.reshape(x.shape[0], groups, x.shape[1] // groups, *out_sp, *w.shape[2:])
    wg = _f64(w).reshape(groups, k // groups, w.shape[1], *w.shape[2:])
    o, r = "pqrst"[:n_sp], "PQRST"[:n_sp]  # output and kernel axes (no clash with z, g, c, k)
    out = np.einsum(f"zgc{o}{r},gkc{r}->zgk{o}", win, wg, optimize=True)
    out = out.reshape(x.shape[0], k, *out_sp)
    if bias is not None:
        out = out + _f64(bias).reshape(1, -1, *[1] * n_sp)
    return act(out).astype(dtype)


def conv2d(x: Array, w: Array, bias: Array | None = None, *, stride: Any = 1, padding: Any = 0,
           groups: int = 1, act: UnaryFn = identity, pre_act: UnaryFn = identity,
           dilation: Any = 1) -> Array:
    """NCHW convolution, float64 accumulation; ``pre_act`` is applied to the input before zero
    padding, ``act`` after the bias.  ``padding``: as the vocabulary's (symmetric per axis, or
    explicit per side)."""
    begin, end = pads_per_side(padding, 2)
    return convnd(x, w, bias, stride=per_axis(stride, 2, 1), begin=begin, end=end,
                  dilation=per_axis(dilation, 2, 1), groups=groups, act=act, pre_act=pre_act)


def pool2d(x: Array, *, kernel: Any, stride: Any = None, padding: Any = 0, mode: str = "max",
           dilation: Any = 1, ceil_mode: bool = False, count_include_pad: bool = True) -> Array:
    """Max pool (padding never wins) or average pool (the padding in the divisor unless
    ``count_include_pad`` is false) over the spatial axes of an NC + spatial array."""
    n = x.ndim - 2
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation}
    w = window_of(attrs, n, stride_is_kernel=True)
    end = list(w.end)
    if ceil_mode:  # pad the end so the last partial window fits, if it starts inside
        for i in range(n):
            span = (w.kernel[i] - 1) * w.dilation[i] + 1
            length = x.shape[2 + i] + w.begin[i] + w.end[i]
            out = -(-(length - span) // w.stride[i]) + 1
            if (out - 1) * w.stride[i] >= x.shape[2 + i] + w.begin[i]:
                out -= 1
            end[i] += max(0, (out - 1) * w.stride[i] + span - length)
    pads = [(0, 0), (0, 0), *zip(w.begin, end, strict=True)]
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(_f64(x), pads, constant_values=fill)
    win = _windows(xp, w.kernel, w.stride, w.dilation)
    axes = tuple(range(2 + n, 2 + 2 * n))
    if mode == "max":
        out = win.max(axis=axes)
    elif count_include_pad and not ceil_mode:
        out = win.sum(axis=axes) / math.prod(w.kernel)
    else:
        inside = np.pad(np.ones(x.shape[2:]), list(zip(w.begin, w.end, strict=True)),
                        constant_values=1.0 if count_include_pad else 0.0)
        inside = np.pad(inside, [(0, e - w_) for e, w_ in zip(end, w.end, strict=True)])
        counts = _windows(inside[None, None], w.kernel, w.stride, w.dilation).sum(axis=axes)
        out = win.sum(axis=axes) / counts
    return out.astype(_dtype(x))


def softmax(x: Array, *, axis: int = -1, scale: float = 1.0) -> Array:
    z = _f64(x) * scale
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(_dtype(x))


def layernorm(x: Array, params: Array, *, eps: float = 1e-5) -> Array:
    p = _f64(params).reshape(2, -1)
    return _normalize(x, (x.ndim - 1,), p[0], p[1], eps).astype(_dtype(x, params))


def _normalize(x: Array, axes: tuple[int, ...], scale: Array | None, bias: Array | None,
               eps: float) -> Array:
    z = _f64(x)
    mean = z.mean(axis=axes, keepdims=True)
    var = z.var(axis=axes, keepdims=True)
    out = (z - mean) / np.sqrt(var + eps)
    if scale is not None:
        out = out * _f64(scale)
    return out + _f64(bias) if bias is not None else out


def batchnorm(x: Array, params: Array, *, eps: float = 1e-3, axis: int = 1) -> Array:
    gamma, beta, mean, var = _f64(params).reshape(4, -1)
    return _batchnorm(x, gamma, beta, mean, var, eps, axis).astype(_dtype(x, params))


def _batchnorm(x: Array, gamma: Array, beta: Array, mean: Array, var: Array, eps: float,
               axis: int) -> Array:
    z = _f64(x)
    shape = [1] * z.ndim
    shape[axis % z.ndim] = -1
    scale = _f64(gamma) / np.sqrt(_f64(var) + eps)
    return z * scale.reshape(shape) + (_f64(beta) - _f64(mean) * scale).reshape(shape)


def matmul(a: Array, b: Array, bias: Array | None = None) -> Array:
    out = np.matmul(_f64(a), _f64(b))
    if bias is not None:
        out = out + bias
    return out.astype(_dtype(a, b))

# ------------------------------------------------------------------------ NumPy references


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
