"""Normalisations and softmax: batchnorm, layernorm, rmsnorm, instancenorm, groupnorm, lrn,
weight_norm, softmax and log_softmax.

``batchnorm`` is inference batch norm (params ``(4, C)``: gamma, beta, running mean, running
variance, or ONNX's four inputs; ``eps`` 1e-3 by default) and broadcasts per channel (O1's
BROADCAST, an IOS epilogue); ``layernorm`` takes params ``(2, D)`` or ONNX's scale and bias
inputs, over the last axis or from ``axis``; ``softmax`` is of ``x * scale`` along ``axis``.
References in float64, torch forms through ``torch.nn.functional``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from workbench.ops.arrays import (
    Array,
    OpLike,
    ShapeOf,
    _batchnorm,
    _dtype,
    _f64,
    _normalize,
    batchnorm,
    layernorm,
    softmax,
)
from workbench.ops.attrs import number
from workbench.ops.costs import MAX_ELEMENTS, Info, ShapeCost, elementwise_cost, first_of
from workbench.ops.kind import kind
from workbench.ops.readers import Shape
from workbench.ops.tensors import Tensor, _f, torch_module

# ------------------------------------------------------------------------ NumPy references


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


def _rms_eps(op: OpLike, dtype: Any) -> float:
    """``eps`` of an RMS norm; absent, the machine epsilon of the input's floating dtype (torch's
    ``eps=None``: ``torch.finfo(x.dtype).eps``; float32 for an integer input)."""
    eps = op.attrs.get("eps")
    if eps is not None:
        return number(op.attrs, "eps", 0.0)
    return float(np.finfo(dtype if np.issubdtype(dtype, np.floating) else np.float32).eps)


def rmsnorm_reference(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Root-mean-square norm over the axes from ``axis`` (default -1) on (Zhang & Sennrich 2019;
    torch's ``RMSNorm``, ONNX's ``RMSNormalization``): ``x / sqrt(mean(x^2) + eps)``, times the
    optional scale input; no mean is subtracted and there is no bias."""
    x = a[0]
    axis = int(op.attrs.get("axis", -1)) % x.ndim
    z = _f64(x)
    out = z / np.sqrt((z * z).mean(axis=tuple(range(axis, x.ndim)), keepdims=True)
                      + _rms_eps(op, x.dtype))
    if len(a) > 1:
        out = out * _f64(a[1])
    return [out.astype(_dtype(*a))]


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

# ------------------------------------------------------------------------ torch forms


def weight_norm_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch._weight_norm(v, g, axis)`` (``v * g / ||v||``, the norm over all but ``axis``;
    -1: the whole tensor)."""
    return [torch_module()._weight_norm(a[0], a[1], int(op.attrs.get("axis", 0) or 0))]


def batchnorm_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Inference batch norm; params ``(4, C)`` (gamma, beta, running mean, running variance)
    or ONNX's / torch's four inputs scale, bias, mean, var."""
    x = a[0]
    eps = number(op.attrs, "eps", 1e-3)
    axis = int(op.attrs.get("axis", 1) or 1) % x.dim()
    if len(a) >= 5:
        gamma, beta, mean, var = (v.reshape(-1) for v in a[1:5])
    else:
        gamma, beta, mean, var = a[1].reshape(4, -1)
    if axis == 1:
        return [_f().batch_norm(x, mean, var, gamma, beta, False, 0.0, eps)]
    shape = [1] * x.dim()
    shape[axis] = -1
    scale = gamma / (var + eps).sqrt()
    return [x * scale.reshape(shape) + (beta - mean * scale).reshape(shape)]


def layernorm_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Over the axes from ``axis`` (default -1) on: params ``(2, D)`` (gamma, beta) or scale
    and optional bias inputs."""
    x = a[0]
    axis = int(op.attrs.get("axis", -1)) % x.dim()
    normalized = tuple(x.shape[axis:])
    eps = number(op.attrs, "eps", 1e-5)
    if len(a) == 2 and a[1].numel() == 2 * math.prod(normalized):
        gamma, beta = a[1].reshape(2, -1)
        gamma, beta = gamma.reshape(normalized), beta.reshape(normalized)
    else:
        gamma = a[1].expand(normalized) if len(a) > 1 else None
        beta = a[2].expand(normalized) if len(a) > 2 else None
    return [_f().layer_norm(x, normalized, gamma, beta, eps)]


def rmsnorm_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch.nn.functional.rms_norm`` over the axes from ``axis`` on, the scale input if any;
    no ``eps``: torch's own default (the dtype's epsilon), as the reference."""
    x = a[0]
    normalized = tuple(x.shape[int(op.attrs.get("axis", -1)) % x.dim():])
    eps = op.attrs.get("eps")
    weight = a[1].expand(normalized) if len(a) > 1 else None
    return [_f().rms_norm(x, normalized, weight, None if eps is None else float(eps))]


def instancenorm_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    return [_f().instance_norm(a[0], weight=a[1] if len(a) > 1 else None,
                               bias=a[2] if len(a) > 2 else None,
                               eps=number(op.attrs, "eps", 1e-5))]


def groupnorm_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    x = a[0]
    g = int(op.attrs.get("groups", 1) or 1)
    per = [v.repeat_interleave(x.shape[1] // g) if v.numel() == g != x.shape[1] else v
           for v in a[1:3]]
    return [_f().group_norm(x, g, per[0] if per else None, per[1] if len(per) > 1 else None,
                            number(op.attrs, "eps", 1e-5))]


def lrn_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Across channels, ONNX's window (``(window-1)//2`` before, ``window//2`` after)."""
    x = a[0]
    at = op.attrs
    size = int(at.get("window", 1) or 1)
    sq = _f().pad(x * x, [0, 0] * (x.dim() - 2) + [(size - 1) // 2, size // 2])
    total = sum(sq[:, i:i + x.shape[1]] for i in range(size))
    div = (number(at, "k", 1.0) + number(at, "alpha", 1e-4) / size * total) ** number(
        at, "beta", 0.75)
    return [x / div]


def softmax_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    scale = float(op.attrs.get("scale", 1.0))
    x = a[0] if scale == 1.0 else a[0] * scale
    return [_f().softmax(x, dim=int(op.attrs.get("axis", -1)))]


def log_softmax_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    return [_f().log_softmax(a[0], dim=int(op.attrs.get("axis", -1)))]


# ------------------------------------------------------------ ONNX import: attribute conversions


def _onnx_batchnorm(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"eps": float(a.get("eps", 1e-5)), "axis": 1}


def _onnx_eps(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"eps": float(a.get("eps", 1e-5))}


def _onnx_layernorm(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"eps": float(a.get("eps", 1e-5)), "axis": int(a.get("axis", -1))}


def _onnx_rmsnorm(a: dict[str, Any], node: Any) -> dict[str, Any]:
    """RMSNormalization (opset 23): ``axis`` -1 and ``epsilon`` 1e-5 by default; ``stash_type``
    (the precision of the mean) is not modelled: the reference computes in float64."""
    a.pop("stash_type", None)
    return _onnx_layernorm(a, node)


def _onnx_lrn(a: dict[str, Any], node: Any) -> dict[str, Any]:
    """ONNX's ``bias`` is the vocabulary's ``k`` (``bias`` names a bias input elsewhere)."""
    return {"alpha": float(a.get("alpha", 1e-4)), "beta": float(a.get("beta", 0.75)),
            "k": float(a.pop("bias", a.get("k", 1.0)))}


def _onnx_softmax(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"axis": int(a.get("axis", -1 if node.opset >= 13 else 1))}


# ------------------------------------------------------------ torch import: call conversions


def _torch_softmax(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
             dtype: str | None) -> dict[str, Any]:
    dim = named.get("dim")
    return {"axis": -1 if dim is None else dim}


def _normalized_axis(named: dict[str, Any]) -> int:
    """torch's ``normalized_shape`` (an int or the trailing dims) as the first normalised axis."""
    shape = named["normalized_shape"]
    return -1 if isinstance(shape, int) else -len(shape)


def _torch_layer_norm(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
                dtype: str | None) -> dict[str, Any]:
    return {"axis": _normalized_axis(named), "eps": named.get("eps", 1e-5)}


def _torch_rms_norm(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
                    dtype: str | None) -> dict[str, Any]:
    """``normalized_shape`` -> ``axis``; ``eps`` only when given (``None``: the dtype's)."""
    eps = named.get("eps")
    return {"axis": _normalized_axis(named), **({} if eps is None else {"eps": eps})}


def _torch_norm_eps(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
              dtype: str | None) -> dict[str, Any]:
    return {"eps": named.get("eps", 1e-5), "axis": 1}


# -------------------------------------------------------------- ONNX import: cost rules


def _lrn(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    """LRN: ``2*window + 3`` FLOPs per element (square and sum over the window, scale, power,
    divide)."""
    size = a.get("window", 1)
    size = size if isinstance(size, int) and 0 < size < MAX_ELEMENTS else 1
    return elementwise_cost(first_of(outs), ins, outs, per_element=2 * size + 3)


# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind("batchnorm", "elementwise", kernel_class="elementwise", fuse="broadcast",
         flops_per_element=2, epilogue=True, launch_rule="per_channel_norm", attrs="eps axis",
         reference=batchnorm_reference, torch_form=batchnorm_torch, onnx="BatchNormalization",
         onnx_attrs={"BatchNormalization": _onnx_batchnorm},
         torch="BatchNorm1d BatchNorm2d BatchNorm3d batch_norm",
         torch_attrs={"batch_norm BatchNorm1d BatchNorm2d BatchNorm3d": _torch_norm_eps},
         kernel_names="batch_norm batchnorm bn_fw bn_bw", kernel_rank=8),
    kind("softmax", "reduction", fuse="reduce", flops_per_element=5, attrs="axis scale",
         reference=softmax_reference, torch_form=softmax_torch, torch="Softmax softmax",
         torch_attrs={"softmax Softmax": _torch_softmax}, kernel_names="softmax", kernel_rank=10,
         onnx="Softmax", onnx_attrs={"Softmax": _onnx_softmax}),
    kind("log_softmax", "reduction", fuse="reduce", flops_per_element=6, attrs="axis",
         reference=log_softmax, torch_form=log_softmax_torch, torch="LogSoftmax log_softmax",
         torch_attrs={"log_softmax LogSoftmax": _torch_softmax}, onnx="LogSoftmax",
         onnx_attrs={"LogSoftmax": _onnx_softmax}),
    kind("layernorm", "reduction", fuse="reduce", flops_per_element=8, attrs="eps axis",
         reference=layernorm_reference, torch_form=layernorm_torch, onnx="LayerNormalization",
         onnx_attrs={"LayerNormalization": _onnx_layernorm}, torch="LayerNorm layer_norm",
         torch_attrs={"layer_norm LayerNorm": _torch_layer_norm},
         kernel_names="layer_norm layernorm rowwisemoments gammabetabackward", kernel_rank=9),
    kind("rmsnorm", "reduction", fuse="reduce", flops_per_element=4, attrs="eps axis",
         reference=rmsnorm_reference, torch_form=rmsnorm_torch, onnx="RMSNormalization",
         onnx_attrs={"RMSNormalization": _onnx_rmsnorm}, torch="RMSNorm rms_norm",
         torch_attrs={"rms_norm RMSNorm": _torch_rms_norm}),
    kind("groupnorm", "reduction", flops_per_element=8, attrs="eps groups", reference=groupnorm,
         torch_form=groupnorm_torch, onnx="GroupNormalization",
         onnx_attrs={"GroupNormalization": _onnx_eps}, torch="GroupNorm group_norm",
         torch_attrs={"group_norm GroupNorm": _torch_norm_eps}),
    kind("instancenorm", "reduction", flops_per_element=8, attrs="eps", reference=instancenorm,
         torch_form=instancenorm_torch, onnx="InstanceNormalization",
         onnx_attrs={"InstanceNormalization": _onnx_eps}, torch="InstanceNorm2d",
         torch_attrs={"InstanceNorm2d": _torch_norm_eps}),
    kind("weight_norm", "reduction", flops_per_element=3, attrs="axis", reference=weight_norm,
         torch_form=weight_norm_torch, torch="_weight_norm"),
    kind("lrn", "compute", onnx_cost={"LRN": _lrn}, attrs="window alpha beta k", reference=lrn,
         torch_form=lrn_torch, onnx_attrs={"LRN": _onnx_lrn}),
)
