"""The PyTorch form of each op kind: the same function as its NumPy reference, with torch's kernels.

One function per kind family, registered as ``torch_form=`` in :data:`workbench.values.ops.OPS`
beside the kind's ``reference`` (:mod:`workbench.values.op_reference`), with the same signature
``(op, inputs, shape_of) -> outputs`` over ``torch.Tensor`` values.  The torch executor
(:mod:`workbench.executors.torch_exec`) runs every op through its kind's form, so what it times on
a GPU is what cuDNN / cuBLAS / ATen run for ``torch.nn.functional`` calls.  This module holds the
convolutions, pools, norms, products and views; the elementwise maps, arithmetic, comparisons and
reductions are in :mod:`workbench.values.op_torch_maps`, the data-movement kinds (torch's
indexing, shifting and scanning kinds too) in :mod:`workbench.values.op_torch_data`, the
recurrent cells in :mod:`workbench.values.op_torch_recurrent`.

Attributes are read in the vocabulary of :mod:`workbench.values.op_attrs` through its readers,
exactly as the references read them, so both compute the same function (checked kind by kind in
``tests/test_torch_forms.py``); the calls follow the H200 measurements
(``shared/data/h200_measured/README.md``, "How each schedule was run"):

* ``conv2d`` (and ``conv1d``/``conv3d``) -> the ``pre_act`` map (``F.relu``), ``F.conv{n}d``
  with the bias in the call (``F.pad`` first when the padding is asymmetric), then the ``act``
  map; the weight keeps its own shape (a flat weight is reshaped to ``(K, C/groups, *kernel)``
  as the reference does);
* ``sepconv`` -> the ``pre_act`` map (``relu`` by default), depthwise ``F.conv2d(groups=C)``,
  pointwise 1x1 ``F.conv2d``.  Like the reference (and the GPU lowering) it reads neither
  ``dw_bias`` nor ``pw_bias``;
* ``maxpool`` / ``avgpool`` -> ``F.max_pool{n}d`` / ``F.avg_pool{n}d`` (``ceil_mode``,
  ``count_include_pad``, ``dilation`` for max);
* ``global_avgpool`` -> ``F.adaptive_avg_pool{n}d`` to the output's spatial size (1:
  global); ``weight_norm`` -> ``torch._weight_norm``; ``batchnorm`` -> ``F.batch_norm``
  (inference; params rows gamma, beta, mean, var, or ONNX's four inputs; ``eps`` 1e-3 by
  default); ``layernorm`` -> ``F.layer_norm`` (params gamma, beta, or scale and bias inputs);
  ``softmax`` -> ``F.softmax`` of ``x * scale``; ``matmul`` -> ``F.linear`` (``trans_b``) or
  ``torch.matmul`` (+ bias); ``concat`` -> ``torch.cat``; ``add`` -> chained ``+``;
  ``gelu`` -> ``F.gelu`` (``approximate``, ``"tanh"`` by default, the reference's);
  ``transpose`` -> ``permute(...).contiguous()``; views -> ``reshape`` to the output's shape;
  copies -> ``clone``; ``attention`` -> ``F.scaled_dot_product_attention``; the generic kind
  ``"op"`` -> ``1 + sum of the inputs' means`` everywhere (kept on the device: no host
  synchronisation).

torch is imported lazily, through :func:`torch_module` (one cached import), never at module
import: the core stays light (``tests/test_import_hygiene.py``).  Values keep their dtype
(float32, or float16 / bfloat16 under those precisions; integers stay integers).  Complexity:
one torch call chain per op.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import Any

from workbench.errors import OptionError
from workbench.values.op_attrs import flag, number, per_axis, window_of
from workbench.values.op_reference import OpLike, ShapeOf, view_shape

Tensor = Any  # torch.Tensor; torch itself is imported lazily
TorchForm = Callable[[Any, list[Any], ShapeOf], list[Any]]
TorchUnary = Callable[[Any], Any]


@cache
def torch_module() -> Any:
    """``torch``, imported once on first use; a one-line :class:`OptionError` without it."""
    try:
        import torch
    except ImportError:
        raise OptionError("the torch forms need PyTorch; pip install torch "
                          "(a CPU build is enough off a GPU)") from None
    return torch


def _f() -> Any:
    return torch_module().nn.functional


def _pair(value: Any, default: int) -> tuple[int, int]:
    """``(h, w)`` from an int, a pair or ``None`` (``default``), as the reference reads them."""
    if value is None:
        return (default, default)
    if isinstance(value, int):
        return (value, value)
    try:
        return (int(value[0]), int(value[1]))
    except TypeError:
        return (int(value), int(value))


def _torch_pads(begin: tuple[int, ...], end: tuple[int, ...]) -> list[int]:
    """Per-side padding of the trailing axes in ``F.pad``'s order (last axis first)."""
    return [p for b, e in zip(reversed(begin), reversed(end), strict=True) for p in (b, e)]


# ------------------------------------------------------------------------ elementwise maps
def unary_map(name: str) -> TorchUnary:
    """The torch function of a unary map named as the table names it (``relu``, ``gelu``, ...)."""
    torch = torch_module()
    maps: dict[str, TorchUnary] = {
        "identity": lambda x: x, "relu": torch.relu,
        "gelu": lambda x: _f().gelu(x, approximate="tanh"), "sigmoid": torch.sigmoid,
        "tanh": torch.tanh, "exp": torch.exp, "log": torch.log, "neg": torch.neg,
        "abs": torch.abs, "sqrt": torch.sqrt, "atan": torch.atan}
    try:
        return maps[name]
    except KeyError:
        raise OptionError(f"no torch form for the map {name!r} (known: "
                          f"{', '.join(sorted(maps))})") from None


def _activation(name: str | None, op: OpLike) -> TorchUnary:
    """A conv's ``act`` / ``pre_act`` by name (``None``: identity)."""
    if name is None:
        return lambda x: x
    try:
        return unary_map(name)
    except OptionError:
        raise OptionError(f"op {getattr(op, 'id', '?')!r} ({op.kind}): unknown activation "
                          f"{name!r}") from None


def unary_form(name: str) -> TorchForm:
    """The torch form of the unary elementwise kind ``name``."""
    return lambda op, a, s: [unary_map(name)(a[0])]


# ------------------------------------------------------------------------ convolutions
def conv(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
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


def conv_transpose(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
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


def sepconv(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Separable conv: ``pre_act`` (relu by default), depthwise ``kernel``, pointwise 1x1."""
    x, dw, pw, at = a[0], a[1], a[2], op.attrs
    kh, kw = _pair(at.get("kernel"), 3)
    c = x.shape[1]
    x = _activation(at.get("pre_act", "relu"), op)(x)
    mid = _f().conv2d(x, dw.reshape(c, 1, kh, kw), None, stride=_pair(at.get("stride", 1), 1),
                      padding=_pair(at.get("padding", kh // 2), 0), groups=c)
    k = shape_of(op.outputs[0])[1]
    return [_f().conv2d(mid, pw.reshape(k, c, 1, 1))]


# ------------------------------------------------------------------------ pools and reductions
def pool(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
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


def global_avgpool(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``F.adaptive_avg_pool{n}d`` to the output's spatial size (1: global)."""
    x = a[0]
    size = _pooled_size(op, x, shape_of)
    if 1 <= len(size) <= 3:
        return [getattr(_f(), f"adaptive_avg_pool{len(size)}d")(x, size)]
    return [x.mean(dim=tuple(range(2, x.dim())), keepdim=True)]


def global_maxpool(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``F.adaptive_max_pool{n}d`` to the output's spatial size (1: an ``amax``)."""
    x = a[0]
    size = _pooled_size(op, x, shape_of)
    if any(n != 1 for n in size) and 1 <= len(size) <= 3:
        return [getattr(_f(), f"adaptive_max_pool{len(size)}d")(x, size)]
    return [x.amax(dim=tuple(range(2, x.dim())), keepdim=True)]


def weight_norm(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch._weight_norm(v, g, axis)`` (``v * g / ||v||``, the norm over all but ``axis``;
    -1: the whole tensor)."""
    return [torch_module()._weight_norm(a[0], a[1], int(op.attrs.get("axis", 0) or 0))]


def batchnorm(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
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


def layernorm(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
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


def instancenorm(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    return [_f().instance_norm(a[0], weight=a[1] if len(a) > 1 else None,
                               bias=a[2] if len(a) > 2 else None,
                               eps=number(op.attrs, "eps", 1e-5))]


def groupnorm(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    x = a[0]
    g = int(op.attrs.get("groups", 1) or 1)
    per = [v.repeat_interleave(x.shape[1] // g) if v.numel() == g != x.shape[1] else v
           for v in a[1:3]]
    return [_f().group_norm(x, g, per[0] if per else None, per[1] if len(per) > 1 else None,
                            number(op.attrs, "eps", 1e-5))]


def lrn(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Across channels, ONNX's window (``(window-1)//2`` before, ``window//2`` after)."""
    x = a[0]
    at = op.attrs
    size = int(at.get("window", 1) or 1)
    sq = _f().pad(x * x, [0, 0] * (x.dim() - 2) + [(size - 1) // 2, size // 2])
    total = sum(sq[:, i:i + x.shape[1]] for i in range(size))
    div = (number(at, "k", 1.0) + number(at, "alpha", 1e-4) / size * total) ** number(
        at, "beta", 0.75)
    return [x / div]


def softmax(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    scale = float(op.attrs.get("scale", 1.0))
    x = a[0] if scale == 1.0 else a[0] * scale
    return [_f().softmax(x, dim=int(op.attrs.get("axis", -1)))]


def log_softmax(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    return [_f().log_softmax(a[0], dim=int(op.attrs.get("axis", -1)))]


# ------------------------------------------------------------------------ products
def matmul(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``alpha * op(A) @ op(B) + beta * bias`` (``trans_a``/``trans_b``, ``bias_first``):
    ``F.linear`` for a transposed 2-D B, else ``torch.matmul``."""
    torch = torch_module()
    at = op.attrs
    x, w, bias = (a[1], a[2], a[0]) if at.get("bias_first") and len(a) > 2 else (
        a[0], a[1], a[2] if len(a) > 2 else None)
    alpha, beta = number(at, "alpha", 1.0), number(at, "beta", 1.0)
    x = x.transpose(-1, -2) if at.get("trans_a") else x
    if at.get("trans_b") and w.dim() == 2 and alpha == beta == 1.0:
        return [_f().linear(x, w, bias)]
    w = w.transpose(-1, -2) if at.get("trans_b") else w
    out = torch.matmul(x, w)
    out = out if alpha == 1.0 else out * alpha
    if bias is None:
        return [out]
    return [out + bias if beta == 1.0 else out + beta * bias]


def einsum(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    return [torch_module().einsum(str(op.attrs["equation"]), *a)]


def attention(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``F.scaled_dot_product_attention(q, k, v, mask, is_causal, scale)``; an op that is the
    model's own (``needs_program``: a ``MultiheadAttention`` module call) has no form."""
    if op.attrs.get("needs_program"):
        raise OptionError("it is a module call whose weights live in the model (from_torch "
                          "keeps them in graph.program; this graph has none)")
    mask = a[3] if len(a) > 3 else None
    scale = op.attrs.get("scale")
    return [_f().scaled_dot_product_attention(
        a[0], a[1], a[2], attn_mask=mask, is_causal=flag(op.attrs, "is_causal", False),
        scale=None if scale is None else float(scale))]


# ------------------------------------------------------------------------ views, copies, state
def concat(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    axis = op.attrs.get("axis", 1) if a[0].dim() > 1 else 0
    return [torch_module().cat(a, dim=int(axis))]


def transpose(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    perm = op.attrs.get("perm")
    perm = list(perm) if perm is not None else list(range(a[0].dim() - 1, -1, -1))
    return [a[0].permute(*perm).contiguous()]


def view(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """A view: the input reshaped to the output's shape (the reference's
    :func:`~workbench.values.op_reference.view_shape` when that is unknown)."""
    return [a[0].reshape(view_shape(op, tuple(a[0].shape), shape_of))]


def copy(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Copies and pass-through I/O: the input, once per output."""
    return [a[0].clone() for _ in op.outputs]


def assign(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """The value the ``assign`` family writes (see :func:`workbench.values.op_reference.assign`)."""
    value = a[1] if len(a) > 1 else a[0]
    if op.kind == "assign_add":
        value = a[0] + value
    elif op.kind == "assign_sub":
        value = a[0] - value
    return [value.clone()]


def generic(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """The generic kind ``"op"``: ``1 + sum of the inputs' means`` (float64) at every element, in
    the first floating input's dtype (float32 without one)."""
    torch = torch_module()
    device = a[0].device if a else None
    total = torch.ones((), dtype=torch.float64, device=device)
    for x in a:
        total = total + x.double().mean()
    floating = [x.dtype for x in a if x.is_floating_point()]
    value = total.to(floating[0] if floating else torch.float32)
    return [value.expand(tuple(shape_of(t) or (1,))).contiguous() for t in op.outputs]


__all__ = [
    "Tensor", "TorchForm", "assign", "attention", "batchnorm", "concat", "conv",
    "conv_transpose", "copy", "generic", "global_avgpool", "global_maxpool", "groupnorm",
    "instancenorm", "layernorm", "log_softmax", "lrn", "matmul", "pool", "sepconv", "softmax",
    "torch_module", "transpose", "unary_form", "unary_map", "view", "weight_norm",
]
