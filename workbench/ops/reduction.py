"""Reductions along axes: ``reduce_sum``, ``reduce_mean``, ``reduce_max``, ``reduce_min``,
``reduce_prod``, ``reduce_l2``, ``reduce_sum_square``, ``argmax`` and ``argmin``.

``axes`` (an int, a list, or none: every axis) and ``keepdims`` (ONNX's default, true) as the
vocabulary gives them; the first four are O1's REDUCE pattern.  The import-only kind ``reduce``
marks profiled reduction and scan kernels (cub, Triton's reduction kernels).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.ops.arrays import Array, OpLike, ShapeOf, _f64
from workbench.ops.attrs import axes_of, flag
from workbench.ops.costs import global_rule
from workbench.ops.elementwise import _result
from workbench.ops.kind import kind
from workbench.ops.readers import Shape
from workbench.ops.tensors import Tensor, torch_module

# ------------------------------------------------------------------------ NumPy references


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

# ------------------------------------------------------------------------ torch forms


def reduce_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
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


def arg_extreme_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    torch = torch_module()
    x = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % max(1, x.dim())
    keep = flag(op.attrs, "keepdims", True)
    fn = torch.argmax if op.kind == "argmax" else torch.argmin
    if flag(op.attrs, "select_last_index", False):
        return [x.shape[axis] - 1 - fn(x.flip(axis), dim=axis, keepdim=keep)]
    return [fn(x, dim=axis, keepdim=keep)]


# ------------------------------------------------------------ ONNX import: attribute conversions


def _onnx_arg(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"axis": int(a.get("axis", 0)), "keepdims": bool(a.get("keepdims", True)),
            "select_last_index": bool(a.get("select_last_index", False))}


def _onnx_reduce(a: dict[str, Any], node: Any) -> dict[str, Any]:
    axes = a.get("axes") if a.get("axes") is not None else node.ints(1)
    if not axes and a.get("noop_with_empty_axes"):
        raise ValueError("a no-op reduction is not in the vocabulary")
    return {"axes": axes or None, "keepdims": bool(a.get("keepdims", True))}


# ------------------------------------------------------------ torch import: call conversions


def _torch_reduce(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    dim = named.get("dim")
    return {"axes": None if dim in (None, []) else ([dim] if isinstance(dim, int) else
                                                    list(dim)),
            "keepdims": bool(named.get("keepdim", False))}


# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind("reduce_sum", "reduction", onnx_cost={"ReduceSum": global_rule}, fuse="reduce",
         attrs="axes keepdims", reference=reduce, torch_form=reduce_torch, torch="sum",
         torch_attrs={"sum": _torch_reduce}, onnx_attrs={"ReduceSum": _onnx_reduce}),
    kind("reduce_mean", "reduction", onnx_cost={"ReduceMean": global_rule}, fuse="reduce",
         attrs="axes keepdims", reference=reduce, torch_form=reduce_torch, torch="mean",
         torch_attrs={"mean": _torch_reduce}, onnx_attrs={"ReduceMean": _onnx_reduce}),
    kind("reduce_max", "reduction", onnx_cost={"ReduceMax": global_rule}, fuse="reduce",
         attrs="axes keepdims", reference=reduce, torch_form=reduce_torch, torch="amax",
         torch_attrs={"amax": _torch_reduce}, onnx_attrs={"ReduceMax": _onnx_reduce}),
    kind("reduce_min", "reduction", onnx_cost={"ReduceMin": global_rule}, fuse="reduce",
         attrs="axes keepdims", reference=reduce, torch_form=reduce_torch,
         onnx_attrs={"ReduceMin": _onnx_reduce}),
    kind("argmax", "reduction", onnx_cost={"ArgMax": global_rule},
         attrs="axis keepdims select_last_index", reference=arg_extreme,
         torch_form=arg_extreme_torch, onnx_attrs={"ArgMax": _onnx_arg}),
    kind("reduce_prod", "reduction", onnx_cost={"ReduceProd": global_rule}, attrs="axes keepdims",
         reference=reduce, torch_form=reduce_torch, onnx_attrs={"ReduceProd": _onnx_reduce}),
    kind("reduce_l2", "reduction", onnx_cost={"ReduceL2": global_rule}, attrs="axes keepdims",
         reference=reduce, torch_form=reduce_torch, onnx_attrs={"ReduceL2": _onnx_reduce}),
    kind("reduce_sum_square", "reduction", onnx_cost={"ReduceSumSquare": global_rule},
         attrs="axes keepdims", reference=reduce, torch_form=reduce_torch,
         onnx_attrs={"ReduceSumSquare": _onnx_reduce}),
    kind("argmin", "reduction", onnx_cost={"ArgMin": global_rule},
         attrs="axis keepdims select_last_index", reference=arg_extreme,
         torch_form=arg_extreme_torch, onnx_attrs={"ArgMin": _onnx_arg}),
)

#: Kinds only the importers name (not in ``OPS``): their importer facts.
IMPORTED = (
    kind("reduce", "reduction", kernel_names="reduce scan triton_red triton_per", kernel_rank=20),
)
