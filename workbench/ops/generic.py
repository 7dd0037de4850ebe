"""Generic and value-making kinds: ``op`` (the generic kind of ``Graph.from_edges``), ``fused`` (an
O1 fusion group, evaluated member by member), and the kinds that make a value from a shape or
attributes (``constant``, ``shape``, ``size``, ``range``).

The generic kind outputs ``1 + sum of the inputs' means`` at every element (enough to follow data
flow; :func:`spin_value` is its stand-in on the GPU).  The import-only ``sort`` marks profiled
sort kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.ops.arrays import F32, Array, OpLike, ShapeOf
from workbench.ops.attrs import ONNX_DTYPES, number
from workbench.ops.costs import view_rule
from workbench.ops.kind import kind
from workbench.ops.readers import Shape, is_number
from workbench.ops.shapes import out_shape
from workbench.ops.tensors import Tensor, torch_dtype, torch_module

# ------------------------------------------------------------------------ NumPy references


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

# ------------------------------------------------------------------------ NumPy references


def constant(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """The output's shape (else the shape input's values: ONNX's ConstantOfShape) filled with
    ``value`` (default 0) of ``dtype`` (default float32)."""
    shape = out_shape(op, shape_of)
    if shape is None:
        shape = tuple(int(v) for v in np.asarray(a[0]).reshape(-1)) if a else ()
    return [np.full(shape, number(op.attrs, "value", 0.0), dtype=op.attrs.get("dtype")
                    or "float32")]


def shape(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """The input's shape (axes ``start`` to ``end``), int64."""
    start, end = op.attrs.get("start"), op.attrs.get("end")
    dims = a[0].shape[None if start is None else int(start):None if end is None else int(end)]
    return [np.asarray(dims, dtype=np.int64)]


def size(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    return [np.asarray(a[0].size, dtype=np.int64)]


def range_(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``start`` to ``end`` by ``step`` (the three inputs when given, else the attributes),
    in ``dtype`` (default: the inputs', else int64 for integral bounds)."""
    if len(a) >= 3:
        bounds = [np.asarray(v).reshape(()).item() for v in a[:3]]
        dtype = op.attrs.get("dtype") or np.result_type(*a[:3])
    else:
        bounds = [number(op.attrs, "start", 0.0), number(op.attrs, "end", 0.0),
                  number(op.attrs, "step", 1.0)]
        dtype = op.attrs.get("dtype") or ("int64" if all(float(b).is_integer() for b in bounds)
                                          else "float32")
    return [np.arange(*bounds).astype(dtype)]

# ------------------------------------------------------------------------ torch forms


def generic_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
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

# ------------------------------------------------------------------------ torch forms


def constant_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """The output's shape (else the shape input's values) filled with ``value`` (on the first
    input's device)."""
    torch = torch_module()
    device = a[0].device if a else None
    shape = out_shape(op, shape_of)
    if shape is None:
        shape = tuple(int(v) for v in a[0].reshape(-1).tolist()) if a else ()
    return [torch.full(shape, number(op.attrs, "value", 0.0),
                       dtype=torch_dtype(op.attrs.get("dtype")), device=device)]


def shape_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    torch = torch_module()
    start, end = op.attrs.get("start"), op.attrs.get("end")
    dims = tuple(a[0].shape)[None if start is None else int(start):
                             None if end is None else int(end)]
    return [torch.tensor(dims, dtype=torch.int64, device=a[0].device)]


def size_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    torch = torch_module()
    return [torch.tensor(a[0].numel(), dtype=torch.int64, device=a[0].device)]


def range_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch.arange``; the bounds from the inputs (read on the host) or the attributes."""
    torch = torch_module()
    if len(a) >= 3:
        bounds = [v.reshape(()).item() for v in a[:3]]
        dtype = torch_dtype(op.attrs["dtype"]) if op.attrs.get("dtype") else a[0].dtype
        device = a[0].device
    else:
        bounds = [number(op.attrs, "start", 0.0), number(op.attrs, "end", 0.0),
                  number(op.attrs, "step", 1.0)]
        whole = all(float(b).is_integer() for b in bounds)
        dtype = torch_dtype(op.attrs.get("dtype") or ("int64" if whole else "float32"))
        device = None
    return [torch.arange(*bounds, device=device).to(dtype)]


#: The generic kind (``Graph.from_edges``, an op whose kind is not given) and the kind of an O1
#: fusion group (:mod:`workbench.passes.fusion` makes it; the executors run its members).
GENERIC, FUSED = "op", "fused"

# ------------------------------------------------------------ ONNX import: attribute conversions


def _onnx_constant_of_shape(a: dict[str, Any], node: Any) -> dict[str, Any]:
    value = a.get("value")
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else None
    dtype = node.out_dtypes[0] if node.out_dtypes else "float32"
    return {"value": float(value) if isinstance(value, (int, float)) else 0.0,
            "dtype": dtype if dtype in ONNX_DTYPES.values() else None}


def _onnx_range(a: dict[str, Any], node: Any) -> dict[str, Any]:
    bounds = [node.scalar(k) for k in range(3)]
    if any(b is None for b in bounds):
        return {}
    return dict(zip(("start", "end", "step"), bounds, strict=True))


# ------------------------------------------------------------ torch import: call conversions


def _torch_arange(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    bounds = [named[k] for k in ("a", "b", "c") if is_number(named.get(k))]
    start, end, step = ([0, *bounds, 1] if len(bounds) == 1 else [*bounds, 1])[:3]
    return {"start": start, "end": end, "step": step, "dtype": dtype}


def _torch_fill(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    value = named.get("fill_value", 1 if named.get("_label") == "ones_like" else 0)
    return {"value": value, "dtype": dtype}


# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind("constant", "compute", onnx_cost={"Constant ConstantOfShape": view_rule},
         attrs="value dtype", reference=constant, torch_form=constant_torch,
         onnx="ConstantOfShape", onnx_attrs={"ConstantOfShape": _onnx_constant_of_shape},
         torch="zeros_like ones_like full_like empty_like new_zeros new_ones new_full new_empty "
               "zeros ones full empty fill",
         torch_attrs={"zeros_like ones_like full_like": _torch_fill}),
    kind("shape", "compute", onnx_cost={"Shape": view_rule}, attrs="start end", reference=shape,
         torch_form=shape_torch),
    kind("size", "compute", onnx_cost={"Size": view_rule}, reference=size, torch_form=size_torch),
    kind(FUSED, "compute", kernel_names="triton", kernel_rank=22),
    kind(GENERIC, "compute", reference=generic, torch_form=generic_torch),
    kind("range", "compute", attrs="start end step dtype", reference=range_,
         torch_form=range_torch, torch="arange", torch_attrs={"arange": _torch_arange},
         onnx_attrs={"Range": _onnx_range}),
)

#: Kinds only the importers name (not in ``OPS``): their importer facts.
IMPORTED = (
    kind("sort", "compute", kernel_names="radixsort sort", kernel_rank=15),
)
