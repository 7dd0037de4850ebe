"""The PyTorch forms of the elementwise and reducing kinds: maps, arithmetic, comparisons,
reductions.

The other part of :mod:`workbench.values.op_torch`: the same functions as
:mod:`workbench.values.op_reference_maps` with torch's kernels (``F.gelu``, ``F.leaky_relu``,
``torch.div(rounding_mode=)``, ``torch.amax``, ...), attributes read as the references read
them.  Complexity: one torch call chain per op.
"""

from __future__ import annotations

from typing import Any

from workbench.values.op_attrs import axes_of, flag, number
from workbench.values.op_reference import OpLike, ShapeOf
from workbench.values.op_torch import Tensor, TorchForm, TorchUnary, _f, torch_module


def _attr_map(name: str, at: Any) -> TorchUnary:
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
        "softplus": f.softplus, "softsign": f.softsign, "erf": torch.erf, "rsqrt": torch.rsqrt,
        "square": torch.square, "reciprocal": torch.reciprocal, "sin": torch.sin,
        "cos": torch.cos, "floor": torch.floor, "ceil": torch.ceil, "round": torch.round,
        "sign": torch.sign}
    return maps[name]



def _floating(x: Tensor) -> Tensor:
    return x if x.is_floating_point() else x.float()



def mapped(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """An elementwise map that may read attributes (the reference's :func:`mapped`)."""
    x = a[0]
    keeps = op.kind in ("floor", "ceil", "round", "sign")
    return [_attr_map(op.kind, op.attrs)(x if keeps else _floating(x))]



def _operands(op: OpLike, a: list[Tensor]) -> tuple[Any, Any]:
    x, y = (a[0], a[1]) if len(a) > 1 else (a[0], op.attrs.get("scalar", 0.0))
    return (y, x) if op.attrs.get("reverse") else (x, y)



def _tensor(v: Any, like: Tensor) -> Tensor:
    torch = torch_module()
    return v if isinstance(v, torch.Tensor) else torch.as_tensor(v, device=like.device)



def arith(name: str) -> TorchForm:
    """The torch form of ``sub``, ``mul``, ``div``, ``pow`` or ``mod`` (the reference's
    :func:`~workbench.values.op_reference.arith`)."""
    def form(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
        torch = torch_module()
        x, y = _operands(op, a)
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
    return arith(name)



def add(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Sum of any number of inputs, chained ``+`` left to right (as the reference); one input
    and ``scalar``: their sum; ``alpha`` multiplies the second operand."""
    alpha = number(op.attrs, "alpha", 1.0)
    if len(a) == 1 and op.attrs.get("scalar") is not None:
        x, y = _operands(op, a)
        x, y = _tensor(x, a[0]), _tensor(y, a[0])
        return [x + y if alpha == 1.0 else torch_module().add(x, y, alpha=alpha)]
    out = a[0]
    for x in a[1:]:
        out = out + x if alpha == 1.0 else torch_module().add(out, x, alpha=alpha)
    return [out if len(a) > 1 else out.clone()]



def variadic(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
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



def compare(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Comparisons and logic: bool tensors."""
    torch = torch_module()
    if op.kind == "not":
        return [torch.logical_not(a[0])]
    if op.kind == "isnan":
        return [torch.isnan(a[0])]
    fns = {"equal": torch.eq, "not_equal": torch.ne, "greater": torch.gt, "less": torch.lt,
           "greater_or_equal": torch.ge, "less_or_equal": torch.le, "and": torch.logical_and,
           "or": torch.logical_or, "xor": torch.logical_xor}
    x, y = _operands(op, a)
    return [fns[op.kind](_tensor(x, a[0]), _tensor(y, a[0]))]



def where(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    return [torch_module().where(a[0].bool(), a[1], a[2])]



def clip(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    lo = a[1] if len(a) > 1 else op.attrs.get("min")
    hi = a[2] if len(a) > 2 else op.attrs.get("max")
    return [torch_module().clamp(a[0], lo, hi)]



def prelu(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    x, slope = a[0], a[1]
    if slope.dim() == 1 and x.dim() > 2 and slope.shape[0] == x.shape[1] != x.shape[-1]:
        slope = slope.reshape(-1, *[1] * (x.dim() - 2))
    return [torch_module().where(x >= 0, x, slope * x)]



def reduce(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``reduce_*`` over ``axes`` (default every axis), ``keepdims`` (default true)."""
    torch = torch_module()
    x = a[0]
    axes = axes_of(op.attrs.get("axes"), x.dim())
    dims = tuple(range(x.dim())) if axes is None else axes
    keep = flag(op.attrs, "keepdims", True)
    kind = op.kind
    if kind == "reduce_prod":
        out = x
        for d in sorted(dims, reverse=True):
            out = out.prod(dim=d, keepdim=keep)
        return [out]
    if kind in ("reduce_l2", "reduce_sum_square"):
        total = (x * x).sum(dim=dims, keepdim=keep)
        return [total.sqrt() if kind == "reduce_l2" else total]
    fn = {"reduce_sum": torch.sum, "reduce_mean": torch.mean, "reduce_max": torch.amax,
          "reduce_min": torch.amin}[kind]
    return [fn(x, dim=dims, keepdim=keep)]



def arg_extreme(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    torch = torch_module()
    x = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % max(1, x.dim())
    keep = flag(op.attrs, "keepdims", True)
    fn = torch.argmax if op.kind == "argmax" else torch.argmin
    if flag(op.attrs, "select_last_index", False):
        return [x.shape[axis] - 1 - fn(x.flip(axis), dim=axis, keepdim=keep)]
    return [fn(x, dim=axis, keepdim=keep)]


__all__ = ["add", "arg_extreme", "arith", "binary_form", "clip", "compare", "mapped", "prelu",
           "reduce", "variadic", "where"]
