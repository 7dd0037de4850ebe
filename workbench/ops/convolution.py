"""Convolutions and pooling: ``conv1d`` / ``conv2d`` / ``conv3d`` (implicit GEMMs, IOS unit heads),
``sepconv`` (depthwise then pointwise), ``conv_transpose``, ``maxpool`` / ``avgpool`` and the
global pools.

Convolutions are NC + any number of spatial axes, padded per side (:func:`workbench.ops.attrs
.window_of`), with ``pre_act`` applied to the input before zero padding and ``act`` after the
bias, both named by an elementwise kind (:func:`workbench.ops.kind.unary_of`).  The torch forms
call ``F.conv{n}d`` with the bias in the call (``F.pad`` first when the padding is asymmetric),
``F.max_pool{n}d`` / ``F.avg_pool{n}d`` and ``F.adaptive_*_pool{n}d``.  ``window`` says how a
kind's kernel is known when its attributes are checked (:mod:`workbench.values.attr_checks`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from workbench.errors import OptionError
from workbench.ops.arrays import (
    Array,
    OpLike,
    ShapeOf,
    UnaryFn,
    _dtype,
    _f64,
    conv2d,
    convnd,
    pool2d,
)
from workbench.ops.attrs import explicit_padding, flag, is_int_list, per_axis, window_of
from workbench.ops.costs import (
    MAX_ELEMENTS,
    Info,
    ShapeCost,
    conv_cost,
    first_of,
    global_rule,
    numel,
    window_cost,
)
from workbench.ops.elementwise import unary_map
from workbench.ops.kind import kind, unary_of
from workbench.ops.readers import Shape, is_int_seq, rank_of, same_padding
from workbench.ops.tensors import Tensor, TorchUnary, _f, _torch_pads, _torch_pair, torch_module

# ------------------------------------------------------------------------ NumPy references


def _pair(value: Any, default: int) -> tuple[int, int]:
    if value is None:
        return (default, default)
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    return (int(value[0]), int(value[1]))


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

# ------------------------------------------------------------------------ torch forms


def _activation(name: str | None, op: OpLike) -> TorchUnary:
    """A conv's ``act`` / ``pre_act`` by name (``None``: identity)."""
    if name is None:
        return lambda x: x
    try:
        return unary_map(name)
    except OptionError:
        raise OptionError(f"op {getattr(op, 'id', '?')!r} ({op.kind}): unknown activation "
                          f"{name!r}") from None


# ------------------------------------------------------------------------ convolutions
def conv_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """conv1d/2d/3d: input, weight (its own shape; a flat weight is reshaped to ``(K,
    C/groups, *kernel)``), optional bias."""
    x, at = a[0], op.attrs
    n = x.dim() - 2
    groups = int(at.get("groups", 1) or 1)
    w = a[1]
    if w.dim() != n + 2:
        k = shape_of(op.outputs[0])[1]
        w = w.reshape(k, x.shape[1] // groups, *per_axis(at.get("kernel"), n, 1))
    win = window_of(at, n, kernel=tuple(w.shape[2:]))
    bias = a[2].reshape(-1) if len(a) > 2 else None
    x = _activation(at.get("pre_act"), op)(x)
    padding: Any = win.begin
    if not win.symmetric:
        x = _f().pad(x, _torch_pads(win.begin, win.end))
        padding = 0
    fn = getattr(_f(), f"conv{n}d")
    y = fn(x, w, bias, stride=win.stride, padding=padding, dilation=win.dilation, groups=groups)
    return [_activation(at.get("act"), op)(y)]


def conv_transpose_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``F.conv_transpose{n}d`` (weight ``(C, K/groups, *kernel)``); asymmetric padding crops
    the end of the output."""
    x, w, at = a[0], a[1], op.attrs
    n = x.dim() - 2
    win = window_of(at, n, kernel=tuple(w.shape[2:]))
    pad = tuple(min(b, e) for b, e in zip(win.begin, win.end, strict=True))
    extra = per_axis(at.get("output_padding"), n, 0)
    fn = getattr(_f(), f"conv_transpose{n}d")
    y = fn(x, w, a[2] if len(a) > 2 else None, stride=win.stride, padding=pad,
           output_padding=extra, groups=int(at.get("groups", 1) or 1), dilation=win.dilation)
    crop = [(b - p, e - p) for b, e, p in zip(win.begin, win.end, pad, strict=True)]
    if any(c for pair in crop for c in pair):
        y = y[(slice(None), slice(None), *(slice(b, y.shape[2 + i] - e)
                                          for i, (b, e) in enumerate(crop)))]
    return [y]


def sepconv_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Separable conv: ``pre_act`` (relu by default), depthwise ``kernel``, pointwise 1x1."""
    x, dw, pw, at = a[0], a[1], a[2], op.attrs
    kh, kw = _torch_pair(at.get("kernel"), 3)
    c = x.shape[1]
    x = _activation(at.get("pre_act", "relu"), op)(x)
    mid = _f().conv2d(x, dw.reshape(c, 1, kh, kw), None, stride=_torch_pair(at.get("stride", 1), 1),
                      padding=_torch_pair(at.get("padding", kh // 2), 0), groups=c)
    k = shape_of(op.outputs[0])[1]
    return [_f().conv2d(mid, pw.reshape(k, c, 1, 1))]


# ------------------------------------------------------------------------ pools and reductions
def pool_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """maxpool (padding never wins) and avgpool (padding counted in the divisor unless
    ``count_include_pad`` is false)."""
    torch, f = torch_module(), _f()
    x, at = a[0], op.attrs
    n = x.dim() - 2
    win = window_of(at, n, stride_is_kernel=True)
    ceil = flag(at, "ceil_mode", False)
    padding: Any = win.begin
    if op.kind == "maxpool":
        if not win.symmetric:
            x = f.pad(x, _torch_pads(win.begin, win.end), value=-math.inf)
            padding = 0
        fn = getattr(f, f"max_pool{n}d")
        return [fn(x, win.kernel, win.stride, padding, win.dilation, ceil_mode=ceil)]
    if any(d != 1 for d in win.dilation):
        raise OptionError(f"op {getattr(op, 'id', '?')!r}: avgpool with dilation "
                          f"{list(win.dilation)} has no torch form")
    include = flag(at, "count_include_pad", True)
    fn = getattr(f, f"avg_pool{n}d")
    if win.symmetric and 2 * max(win.begin, default=0) <= min(win.kernel, default=1):
        return [fn(x, win.kernel, win.stride, padding, ceil_mode=ceil,
                   count_include_pad=include)]
    # asymmetric (or over-wide) padding: sum over windows of the padded input, divided by the
    # window's size or by the count of real elements (the reference's)
    pads = _torch_pads(win.begin, win.end)
    summed = fn(f.pad(x, pads), win.kernel, win.stride, 0, ceil_mode=ceil,
                count_include_pad=True) * math.prod(win.kernel)
    ones = torch.ones((1, 1, *x.shape[2:]), dtype=x.dtype, device=x.device)
    inside = f.pad(ones, pads, value=1.0 if include else 0.0)
    counts = fn(inside, win.kernel, win.stride, 0, ceil_mode=ceil,
                count_include_pad=True) * math.prod(win.kernel)
    return [summed / counts]


def _pooled_size(op: OpLike, x: Tensor, shape_of: ShapeOf) -> tuple[int, ...]:
    """The spatial size a global / adaptive pool pools to: the output's (default: all ones)."""
    out = shape_of(op.outputs[0]) if op.outputs else None
    return tuple(out[2:]) if out is not None and len(out) == x.dim() else (1,) * (x.dim() - 2)


def global_avgpool_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``F.adaptive_avg_pool{n}d`` to the output's spatial size (1: global)."""
    x = a[0]
    size = _pooled_size(op, x, shape_of)
    if 1 <= len(size) <= 3:
        return [getattr(_f(), f"adaptive_avg_pool{len(size)}d")(x, size)]
    return [x.mean(dim=tuple(range(2, x.dim())), keepdim=True)]


def global_maxpool_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``F.adaptive_max_pool{n}d`` to the output's spatial size (1: an ``amax``)."""
    x = a[0]
    size = _pooled_size(op, x, shape_of)
    if any(n != 1 for n in size) and 1 <= len(size) <= 3:
        return [getattr(_f(), f"adaptive_max_pool{len(size)}d")(x, size)]
    return [x.amax(dim=tuple(range(2, x.dim())), keepdim=True)]


#: The 2-D convolution (IOS's merge of parallel convolutions makes one).
CONV2D = "conv2d"

# ------------------------------------------------------------ ONNX import: attribute conversions


def _spatial(a: Mapping[str, Any], node: Any, kernel: list[int] | None) -> int:
    x = node.shape(0)
    if x is not None and len(x) > 2:
        return len(x) - 2
    if kernel:
        return len(kernel)
    raise ValueError("rank unknown")


def _auto_pad(a: Mapping[str, Any], node: Any, kernel: list[int], stride: list[int],
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


def _window(a: dict[str, Any], node: Any, *, kernel: list[int] | None,
            transpose: bool = False) -> dict[str, Any]:
    """``kernel``, ``stride``, ``padding``, ``dilation`` written out (ONNX's defaults)."""
    kernel = kernel if kernel is not None else (a["kernel"] if is_int_list(a.get("kernel"))
                                                else None)
    if not kernel:
        raise ValueError("the kernel is unknown")
    n = _spatial(a, node, kernel)
    stride = a["stride"] if is_int_list(a.get("stride")) else [1] * n
    dilation = a["dilation"] if is_int_list(a.get("dilation")) else [1] * n
    padding = a.get("padding") if is_int_list(a.get("padding")) or isinstance(
        a.get("padding"), int) else [0] * n
    auto = _auto_pad(a, node, kernel, stride, dilation, transpose)
    if auto is not None:
        padding = explicit_padding(auto)
    return {"kernel": list(kernel), "stride": list(stride), "padding": padding,
            "dilation": list(dilation)}


def _weight_kernel(a: Mapping[str, Any], node: Any) -> list[int] | None:
    """The kernel: ``kernel_shape`` when given (the graph's check compares it with the weight),
    else the weight's spatial shape."""
    if is_int_list(a.get("kernel")):
        return list(a["kernel"])
    w = node.shape(1)
    return list(w[2:]) if w is not None and len(w) > 2 else None


def _groups(a: Mapping[str, Any]) -> Any:
    """``group`` as given (ONNX's default 1): a 0 stays 0, for the graph's check to refuse."""
    return 1 if a.get("groups") is None else a["groups"]


def _onnx_conv(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {**_window(a, node, kernel=_weight_kernel(a, node)), "groups": _groups(a)}


def _onnx_conv_transpose(a: dict[str, Any], node: Any) -> dict[str, Any]:
    out = {**_window(a, node, kernel=_weight_kernel(a, node), transpose=True),
           "groups": _groups(a)}
    if a.get("output_padding") is not None:
        out["output_padding"] = a["output_padding"]
    return out


def _onnx_pool(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {**_window(a, node, kernel=None), "ceil_mode": bool(a.get("ceil_mode") or False),
            "count_include_pad": bool(a.get("count_include_pad") or False)}


# ------------------------------------------------------------ torch import: call conversions


def _torch_conv(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    w = ins[1] if len(ins) > 1 else None
    kernel = named.get("kernel_size")
    if kernel is None and w is not None:
        kernel = list(w[2:])
    n = len(w) - 2 if w is not None else (len(kernel) if isinstance(kernel, (list, tuple))
                                         else 2)
    if kernel is not None:
        out["kernel"] = [kernel] * n if isinstance(kernel, int) else list(kernel)
    for key, default in (("stride", 1), ("padding", 0), ("dilation", 1)):  # torch's defaults
        if named.get(key) is None:
            out[key] = [default] * n
    # as given (a recorded trace's groups=0 is refused by the graph's check, not made 1)
    out["groups"] = 1 if named.get("groups") is None else named["groups"]
    padding = named.get("padding")
    if padding == "valid":
        out["padding"] = [0] * n
    elif padding == "same" and "kernel" in out:
        dil = named.get("dilation", 1)
        out["padding"] = same_padding(out["kernel"], [dil] * n if isinstance(dil, int)
                                       else list(dil))
    return out


def _torch_pool(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = rank_of(ins) - 2 if ins and ins[0] is not None else 2
    for key, name in (("kernel_size", "kernel"), ("stride", "stride"), ("padding", "padding"),
                      ("dilation", "dilation")):
        value = named.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = [value] * n
        elif isinstance(value, (list, tuple)) and is_int_seq(value) and value:
            out[name] = list(value)
    if "count_include_pad" not in named and "avg" in str(named.get("_label")).lower():
        out["count_include_pad"] = True  # torch's default
    return out


# -------------------------------------------------------------- ONNX import: cost rules


def _conv(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return conv_cost(first_of(ins), ins[1] if len(ins) > 1 else None, first_of(outs), ins, outs)


def _conv_t(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return conv_cost(first_of(ins), ins[1] if len(ins) > 1 else None, first_of(outs), ins, outs,
                     transpose=True)


def _pool(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    kernel = a.get("kernel")
    if not isinstance(kernel, list) or not all(isinstance(k, int) and k > 0 for k in kernel):
        return None
    window = numel(kernel)
    return None if window > MAX_ELEMENTS else window_cost(first_of(outs), window, ins, outs)


# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind("global_avgpool", "reduction", onnx_cost={"GlobalAveragePool": global_rule},
         kernel_class="pool", fuse="reduce", attrs="pool kernel", reference=global_avgpool,
         torch_form=global_avgpool_torch, onnx="GlobalAveragePool",
         torch="AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d adaptive_avg_pool1d "
               "adaptive_avg_pool2d adaptive_avg_pool3d"),
    kind("global_maxpool", "reduction", onnx_cost={"GlobalMaxPool": global_rule},
         attrs="pool kernel", reference=global_maxpool, torch_form=global_maxpool_torch,
         onnx="GlobalMaxPool", torch="AdaptiveMaxPool2d adaptive_max_pool2d"),
    kind(CONV2D, "compute", onnx_cost={"Conv": _conv}, weight_inputs=(1,), kernel_class="conv",
         gemm=True, launch_rule="convolution", window="weight",
         attrs="kernel stride padding dilation groups act pre_act bias cin cout",
         reference=partial(conv, unary=unary_of), torch_form=conv_torch, onnx="Conv",
         onnx_attrs={"Conv": _onnx_conv}, torch="Conv2d conv2d convolution",
         torch_attrs={"conv2d convolution Conv2d": _torch_conv},
         kernel_names="conv winograd fprop dgrad wgrad implicit_gemm fft2d scudnn cask_cudnn "
                      "cutlass_cudnn", kernel_rank=3),
    kind("sepconv", "compute", weight_inputs=(1, 2), fan_in="depthwise", gemm=True,
         launch_rule="separable_convolution", window="attrs",
         attrs="kernel stride padding groups pre_act bias cin cout",
         reference=partial(sepconv, unary=unary_of), torch_form=sepconv_torch),
    kind("conv_transpose", "compute", onnx_cost={"ConvTranspose": _conv_t}, window="transposed",
         attrs="kernel stride padding output_padding dilation groups", reference=conv_transpose,
         torch_form=conv_transpose_torch, torch="ConvTranspose2d",
         torch_attrs={"ConvTranspose1d ConvTranspose2d ConvTranspose3d "
                      "conv_transpose1d conv_transpose2d conv_transpose3d": _torch_conv},
         onnx_attrs={"ConvTranspose": _onnx_conv_transpose}),
    kind("maxpool", "compute", onnx_cost={"MaxPool": _pool}, kernel_class="pool",
         launch_rule="window", window="attrs",
         attrs="pool kernel stride padding dilation ceil_mode", reference=pool,
         torch_form=pool_torch, onnx="MaxPool", onnx_attrs={"MaxPool": _onnx_pool},
         torch="MaxPool2d max_pool2d",
         torch_attrs={"MaxPool1d MaxPool2d MaxPool3d max_pool1d max_pool2d "
                      "max_pool3d": _torch_pool},
         kernel_names="max_pool maxpool", kernel_rank=11),
    kind("avgpool", "compute", onnx_cost={"AveragePool": _pool}, kernel_class="pool",
         launch_rule="window", window="attrs",
         attrs="pool kernel stride padding dilation ceil_mode count_include_pad", reference=pool,
         torch_form=pool_torch, onnx="AveragePool", onnx_attrs={"AveragePool": _onnx_pool},
         torch="AvgPool2d avg_pool2d",
         torch_attrs={"AvgPool1d AvgPool2d AvgPool3d avg_pool1d avg_pool2d "
                      "avg_pool3d": _torch_pool},
         kernel_names="avg_pool avgpool adaptive_average_pool", kernel_rank=12),
    kind("conv1d", "compute", gemm=True, launch_rule="convolution", window="weight",
         attrs="kernel stride padding dilation groups act pre_act bias cin cout",
         reference=partial(conv, unary=unary_of), torch_form=conv_torch, torch="Conv1d conv1d",
         torch_attrs={"conv1d Conv1d": _torch_conv}),
    kind("conv3d", "compute", gemm=True, launch_rule="convolution", window="weight",
         attrs="kernel stride padding dilation groups act pre_act bias cin cout",
         reference=partial(conv, unary=unary_of), torch_form=conv_torch, torch="Conv3d conv3d",
         torch_attrs={"conv3d Conv3d": _torch_conv}),
)
