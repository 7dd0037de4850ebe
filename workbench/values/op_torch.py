"""The PyTorch form of each op kind: the same function as its NumPy reference, with torch's kernels.

One function per kind family, registered as ``torch_form=`` in :data:`workbench.values.ops.OPS`
beside
the kind's ``reference`` (:mod:`workbench.values.op_reference`), with the same signature
``(op, inputs, shape_of) -> outputs`` over ``torch.Tensor`` values.  The torch executor
(:mod:`workbench.executors.torch_exec`) runs every op through its kind's form, so what it times on a
GPU is
what cuDNN / cuBLAS / ATen run for ``torch.nn.functional`` calls.

How attributes are read follows :mod:`workbench.values.op_reference` exactly, so both compute the
same
function (checked kind by kind in ``tests/test_torch_forms.py``); the calls follow the H200
measurements (``shared/data/h200_measured/README.md``, "How each schedule was run"):

* ``conv2d`` -> ``F.relu`` when ``pre_act == "relu"`` (any ``pre_act`` map), ``F.conv2d`` with
  the bias in the call, then the ``act`` map (``F.relu``); the weight is reshaped to
  ``(K, C/groups, kh, kw)`` as the reference does;
* ``sepconv`` -> the ``pre_act`` map (``relu`` by default), depthwise ``F.conv2d(groups=C)``,
  pointwise 1x1 ``F.conv2d``.  Like the reference (and the GPU lowering) it reads neither
  ``dw_bias`` nor ``pw_bias``;
* ``maxpool`` / ``avgpool`` -> ``F.max_pool2d`` / ``F.avg_pool2d(count_include_pad=True)``;
  an avgpool with ``count_include_pad`` False is refused, as the GPU lowering refuses it (the
  reference always counts the padding);
* ``global_avgpool`` -> ``F.adaptive_avg_pool2d(x, 1)``; ``batchnorm`` -> ``F.batch_norm``
  (inference, params rows gamma, beta, mean, var, ``eps`` 1e-3 by default); ``layernorm`` ->
  ``F.layer_norm`` (params gamma, beta); ``softmax`` -> ``F.softmax`` of ``x * scale``;
  ``matmul`` -> ``torch.matmul`` (+ bias); ``concat`` -> ``torch.cat``; ``add`` -> chained ``+``;
  ``gelu`` -> ``F.gelu(approximate="tanh")`` (the reference's tanh form); ``transpose`` ->
  ``permute(...).contiguous()``; views -> ``reshape`` to the output's shape; copies -> ``clone``;
  the generic kind ``"op"`` -> ``1 + sum of the inputs' means`` everywhere (kept on the device:
  no host synchronisation).

torch is imported lazily, through :func:`torch_module` (one cached import), never at module
import: the core stays light (``tests/test_import_hygiene.py``).  Values keep their dtype
(float32, or float16 / bfloat16 under those precisions).  Complexity: one torch call chain per op.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from workbench.errors import OptionError
from workbench.values.op_reference import OpLike, ShapeOf

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


def binary_form(name: str) -> TorchForm:
    """The torch form of a two-input elementwise kind (``sub``, ``mul``, ``div``)."""
    def form(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
        torch = torch_module()
        fn = {"sub": torch.sub, "mul": torch.mul, "div": torch.div}[name]
        return [fn(a[0], a[1])]
    return form


def add(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Sum of any number of inputs, chained ``+`` left to right (as the reference)."""
    out = a[0]
    for x in a[1:]:
        out = out + x
    return [out if len(a) > 1 else out.clone()]


# ------------------------------------------------------------------------ convolutions
def conv(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """conv2d: input, weight (any layout of ``K*C/groups*kh*kw`` elements), optional bias."""
    x, at = a[0], op.attrs
    kh, kw = _pair(at.get("kernel"), 1)
    groups = int(at.get("groups", 1) or 1)
    k = shape_of(op.outputs[0])[1]
    w = a[1].reshape(k, x.shape[1] // groups, kh, kw)
    bias = a[2].reshape(-1) if len(a) > 2 else None
    x = _activation(at.get("pre_act"), op)(x)
    y = _f().conv2d(x, w, bias, stride=_pair(at.get("stride", 1), 1),
                    padding=_pair(at.get("padding", 0), 0), groups=groups)
    return [_activation(at.get("act"), op)(y)]


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
    """maxpool (padding never wins) and avgpool (padding counted in the divisor)."""
    at = op.attrs
    kernel = _pair(at.get("kernel"), 1)
    stride = _pair(at.get("stride") if at.get("stride") is not None else at.get("kernel"), 1)
    padding = _pair(at.get("padding", 0), 0)
    if op.kind == "maxpool":
        return [_f().max_pool2d(a[0], kernel, stride, padding)]
    if at.get("count_include_pad", True) is False:
        raise OptionError(f"op {getattr(op, 'id', '?')!r}: avgpool without count_include_pad "
                          f"has no torch form (the reference counts the padding)")
    return [_f().avg_pool2d(a[0], kernel, stride, padding, count_include_pad=True)]


def global_avgpool(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    x = a[0]
    if x.dim() == 4:
        return [_f().adaptive_avg_pool2d(x, 1)]
    return [x.mean(dim=(2, 3), keepdim=True)]


def batchnorm(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Inference batch norm; params ``(4, C)``: gamma, beta, running mean, running variance."""
    x = a[0]
    eps = float(op.attrs.get("eps", 1e-3))
    axis = int(op.attrs.get("axis", 1)) % x.dim()
    gamma, beta, mean, var = a[1].reshape(4, -1)
    if axis == 1:
        return [_f().batch_norm(x, mean, var, gamma, beta, False, 0.0, eps)]
    shape = [1] * x.dim()
    shape[axis] = -1
    scale = gamma / (var + eps).sqrt()
    return [x * scale.reshape(shape) + (beta - mean * scale).reshape(shape)]


def layernorm(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    x = a[0]
    gamma, beta = a[1].reshape(2, -1)
    return [_f().layer_norm(x, (x.shape[-1],), gamma, beta, float(op.attrs.get("eps", 1e-5)))]


def softmax(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    scale = float(op.attrs.get("scale", 1.0))
    x = a[0] if scale == 1.0 else a[0] * scale
    return [_f().softmax(x, dim=int(op.attrs.get("axis", -1)))]


def matmul(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``x @ W``, plus the bias when a third input is given."""
    out = torch_module().matmul(a[0], a[1])
    return [out + a[2] if len(a) > 2 else out]


def concat(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    axis = op.attrs.get("axis", 1) if a[0].dim() > 1 else 0
    return [torch_module().cat(a, dim=int(axis))]


def transpose(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    return [a[0].permute(*op.attrs["perm"]).contiguous()]


# ------------------------------------------------------------------------ views, copies, state
def view(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """A view: the input reshaped to the output's shape (unchanged when that is unknown)."""
    shape = shape_of(op.outputs[0]) if op.outputs else None
    return [a[0].reshape(tuple(shape)) if shape else a[0]]


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
    "Tensor", "TorchForm", "add", "assign", "batchnorm", "binary_form", "concat", "conv", "copy",
    "generic", "global_avgpool", "layernorm", "matmul", "pool", "sepconv", "softmax",
    "torch_module", "transpose", "unary_form", "unary_map", "view",
]
