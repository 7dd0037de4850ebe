"""Indexing, shifts and scans: ``gather``, ``gather_elements``, ``index`` (torch's ``x[:, idx]``),
``embedding``, ``masked_fill``, ``roll``, ``diff`` and ``cumsum``.

Indices count from the end when negative and are taken modulo the axis (the NumPy references and
the torch forms share the index arithmetic: :func:`index_key`, :func:`roll_of`,
:func:`diff_operands`, :func:`cumsum_axis`).  A missing attribute these kinds need is a one-line
:class:`~workbench.errors.OptionError` naming the op.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from workbench.errors import OptionError
from workbench.ops.arrays import Array, OpLike, ShapeOf
from workbench.ops.attrs import flag
from workbench.ops.costs import gather_rule
from workbench.ops.kind import kind
from workbench.ops.readers import Shape, is_number
from workbench.ops.shapes import out_shape, table_first
from workbench.ops.tensors import Tensor, _f, torch_module

# ------------------------------------------------------------------------ NumPy references


# ------------------------------------------------------------------------ references
def _index(x: Array, n: int) -> Array:
    return np.asarray(x).astype(np.int64) % max(1, n)


def gather(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``data`` taken at ``indices`` along ``axis`` (default 0), or at the constant ``index``."""
    data = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % max(1, data.ndim)
    index = op.attrs.get("index")
    if index is not None:
        return [np.take(data, int(index) % max(1, data.shape[axis]), axis=axis)]
    return [np.take(data, _index(a[1], data.shape[axis]), axis=axis)]


def embedding(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Rows of the table at the indices (the inputs in either order: :func:`table_first`)."""
    table, ids = (a[0], a[1]) if table_first([x.shape for x in a[:2]],
                                             out_shape(op, shape_of)) else (a[1], a[0])
    return [table[_index(ids, table.shape[0])]]

# ------------------------------------------------------------------------ NumPy references


def _name(op: OpLike) -> str:
    return f"op {getattr(op, 'id', '?')!r} ({op.kind})"


def required(op: OpLike, name: str) -> Any:
    """Attribute ``name`` of ``op``; a one-line :class:`OptionError` naming the op when it is
    missing (``None``)."""
    value = op.attrs.get(name)
    if value is None:
        raise OptionError(f"{_name(op)}: attribute {name!r} is missing")
    return value


def int_list(value: Any) -> list[int]:
    """An int or a list of ints as a list (``None``: ``[]``)."""
    if value is None:
        return []
    return [int(value)] if isinstance(value, (int, np.integer)) else [int(v) for v in value]


def index_key(op: OpLike, shape: Sequence[int], indices: Sequence[Any],
              as_index: Callable[[Any, int], Any], is_mask: Callable[[Any], bool]
              ) -> tuple[Any, ...]:
    """The subscript of an ``index`` op (torch's ``x[:, idx]``, ``aten.index``'s indices list):
    index input ``k`` at position ``axes[k]`` (default: the first positions), full slices
    before and between; one index input for several positions stands at each (the importer
    keeps a repeated tensor once).  A boolean mask is kept as is (it spans as many axes as its
    rank), other indices become ``as_index(index, length of their axis)``.  No index input, or
    a count that fits neither, is a one-line :class:`OptionError`."""
    given = op.attrs.get("axes")
    positions = int_list(given) if given is not None else list(range(len(indices)))
    if not indices or not positions or len(indices) not in (1, len(positions)):
        raise OptionError(f"{_name(op)}: {len(indices)} index input(s) for the positions "
                          f"axes={positions}")
    picked = {p: indices[k if len(indices) > 1 else 0] for k, p in enumerate(positions)}
    key: list[Any] = []
    axis = 0
    for p in range(max(positions) + 1):
        value = picked.get(p)
        if value is None:
            key.append(slice(None))
            axis += 1
        elif is_mask(value):
            key.append(value)
            axis += max(1, len(value.shape))
        else:
            key.append(as_index(value, shape[axis] if axis < len(shape) else 1))
            axis += 1
    return tuple(key)


def roll_of(op: OpLike) -> tuple[list[int], list[int] | None]:
    """A roll's ``(shifts, axes)``; ``axes`` ``None``: the flattened input rolled by its one
    shift.  Missing ``shifts``, or as many shifts as axes not given, is a one-line
    :class:`OptionError`."""
    shifts = int_list(required(op, "shifts"))
    axes = int_list(op.attrs.get("axes")) or None
    if len(shifts) != (1 if axes is None else len(axes)):
        raise OptionError(f"{_name(op)}: shifts={shifts} do not match axes={axes}")
    return shifts, axes


def diff_operands(op: OpLike, inputs: Sequence[Any]) -> tuple[list[Any], int, int]:
    """A diff's ``(pieces joined along axis, axis, n)``: the ``prepend`` input, x, the
    ``append`` input (the inputs after x, in that order), ``axis`` (default -1) and ``n``
    (default 1).  A flagged piece without its input is a one-line :class:`OptionError`."""
    rest = list(inputs[1:])
    wanted = [flag(op.attrs, "prepend", False), flag(op.attrs, "append", False)]
    if sum(wanted) > len(rest):
        raise OptionError(f"{_name(op)}: prepend/append need {sum(wanted)} input(s) after x, "
                          f"got {len(rest)}")
    pieces = [rest.pop(0)] if wanted[0] else []
    pieces.append(inputs[0])
    if wanted[1]:
        pieces.append(rest.pop(0))
    axis, n = op.attrs.get("axis"), op.attrs.get("n")
    return pieces, -1 if axis is None else int(axis), 1 if n is None else int(n)


def cumsum_axis(op: OpLike, inputs: Sequence[Any]) -> int:
    """A cumsum's axis: ``axis``, else the second input's one value (ONNX's CumSum); neither,
    or ONNX's ``exclusive`` / ``reverse`` set, is a one-line :class:`OptionError`."""
    if any(op.attrs.get(k) for k in ("exclusive", "reverse")):
        raise OptionError(f"{_name(op)}: exclusive or reverse sums are not supported")
    if op.attrs.get("axis") is None and len(inputs) > 1:
        return int(inputs[1].reshape(-1)[0].item())
    return int(required(op, "axis"))


def _index_of(x: Array, n: int) -> Array:
    return np.asarray(x).astype(np.int64) % max(1, n)


# ------------------------------------------------------------------------ references
def index(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``x[key]`` with the index inputs at the positions ``axes`` (:func:`index_key`)."""
    x = a[0]
    key = index_key(op, x.shape, [np.asarray(i) for i in a[1:]], _index_of,
                    lambda i: i.dtype == np.bool_)
    y = np.ascontiguousarray(x[key])
    shape = out_shape(op, shape_of)
    return [y.reshape(shape) if shape is not None and math.prod(shape) == y.size else y]


def gather_elements(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``out[i][j] = x[index[i][j]][j]`` along ``axis`` (default 0; torch's gather, ONNX's
    GatherElements): the index's shape, which may be smaller than x's off the axis."""
    x = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % max(1, x.ndim)
    idx = _index_of(a[1], x.shape[axis])
    part = x[tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(idx.shape))]
    return [np.take_along_axis(part, idx, axis=axis)]


def roll(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Elements shifted by ``shifts`` along ``axes``, wrapping around (no axes: flattened)."""
    shifts, axes = roll_of(op)
    if axes is None:
        return [np.roll(a[0], shifts[0])]
    return [np.roll(a[0], shifts, axis=tuple(axes))]


def masked_fill(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``x`` with ``value`` (or a third input's one value) where the mask (the second input,
    nonzero) is set; one input: x is its own mask."""
    x = a[0]
    mask = np.asarray(a[1] if len(a) > 1 else a[0]).astype(bool)
    value = np.asarray(a[2]).reshape(()) if len(a) > 2 else required(op, "value")
    return [np.where(mask, value, x).astype(x.dtype)]


def diff(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """The ``n``-th forward difference along ``axis`` of x joined with its ``prepend`` /
    ``append`` inputs (booleans: not-equal, as torch's)."""
    pieces, axis, n = diff_operands(op, a)
    x = np.concatenate(pieces, axis=axis) if len(pieces) > 1 else pieces[0]
    return [np.diff(x, n=n, axis=axis)]


def cumsum(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Running sum along :func:`cumsum_axis`: floats keep their type, others become int64."""
    x = a[0]
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.int64
    return [np.cumsum(x, axis=cumsum_axis(op, a), dtype=dtype)]

# ------------------------------------------------------------------------ torch forms


def _index_torch(x: Tensor, n: int, device: Any) -> Tensor:
    """Indices as int64 on ``device``, modulo ``n`` (negative ones count from the end)."""
    torch = torch_module()
    idx = x if x.dtype == torch.int64 else x.to(torch.int64)
    return torch.remainder(idx.to(device), max(1, n))


def gather_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    data = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % max(1, data.dim())
    if op.attrs.get("index") is not None:
        return [data.select(axis, int(op.attrs["index"]) % max(1, data.shape[axis])).contiguous()]
    index = _index_torch(a[1], data.shape[axis], data.device)
    flat = data.index_select(axis, index.reshape(-1))
    # the output's shape where known: a 0-d index may arrive as shape (1,) (numpy's
    # ascontiguousarray on the way in makes every array at least 1-d)
    shape = out_shape(op, shape_of) or (*data.shape[:axis], *index.shape, *data.shape[axis + 1:])
    return [flat.reshape(shape)]


def embedding_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    table, ids = (a[0], a[1]) if table_first([tuple(x.shape) for x in a[:2]],
                                             out_shape(op, shape_of)) else (a[1], a[0])
    return [_f().embedding(_index_torch(ids, table.shape[0], table.device), table)]


# ------------------------------------------------------------------------ torch's indexing, scans
def index_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``x[key]``, the reference's subscript (:func:`~workbench.ops.indexing
    .index_key`): masks as bool on x's device, other indices int64 modulo their axis."""
    x = a[0]
    torch = torch_module()
    key = index_key(op, tuple(x.shape), a[1:], lambda i, n: _index_torch(i, n, x.device),
                    lambda i: i.dtype == torch.bool)
    y = x[tuple(k.to(x.device) if isinstance(k, torch.Tensor) else k for k in key)]
    shape = out_shape(op, shape_of)
    return [(y.reshape(shape) if shape is not None and math.prod(shape) == y.numel()
             else y).contiguous()]


def gather_elements_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch.gather(x, axis, index)`` (axis default 0, indices modulo the axis)."""
    x = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % max(1, x.dim())
    return [torch_module().gather(x, axis, _index_torch(a[1], x.shape[axis], x.device))]


def roll_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch.roll(x, shifts, axes)`` (no axes: the flattened input)."""
    shifts, axes = roll_of(op)
    torch = torch_module()
    return [torch.roll(a[0], shifts[0]) if axes is None else torch.roll(a[0], shifts, axes)]


def masked_fill_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``x.masked_fill(mask, value)`` (the reference's operands: a third input's value, x its
    own mask when alone)."""
    x = a[0]
    mask = (a[1] if len(a) > 1 else a[0]).to(x.device).bool()
    value = a[2].reshape(()) if len(a) > 2 else required(op, "value")
    return [x.masked_fill(mask, value)]


def diff_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch.diff(x, n, axis, prepend, append)``."""
    pieces, axis, n = diff_operands(op, a)
    x = torch_module().cat(pieces, dim=axis) if len(pieces) > 1 else pieces[0]
    return [torch_module().diff(x, n=n, dim=axis)]


def cumsum_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch.cumsum(x, axis)`` (:func:`~workbench.ops.indexing.cumsum_axis`;
    integers and booleans sum as int64)."""
    return [torch_module().cumsum(a[0], cumsum_axis(op, a))]


# ------------------------------------------------------------ ONNX import: attribute conversions


def _onnx_gather(a: dict[str, Any], node: Any) -> dict[str, Any]:
    """A constant 0-d index (``x[:, 0]``) is lifted into ``index``: the axis goes away."""
    value = node.const(1)
    scalar = value is not None and value.ndim == 0 and value.dtype.kind in "iu"
    return {"axis": int(a.get("axis", 0)), "index": int(value) if scalar else None}


# ------------------------------------------------------------ torch import: call conversions


def _torch_index(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    """``aten.index(x, [None, idx])`` (``x[:, idx]``): the positions of the indices list that
    hold tensors, in order (each an input of the op after x)."""
    return {"axes": [p for p, v in enumerate(named["indices"]) if v is not None]}


def _torch_roll(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    """``roll(x, shifts, dims)``: ``shifts`` and ``axes`` as lists (no dims: none, the
    flattened input)."""
    shifts, dims = named["shifts"], named.get("dims")
    axes = [] if dims is None else [dims] if isinstance(dims, int) else list(dims)
    return {"shifts": [int(v) for v in ([shifts] if isinstance(shifts, int) else shifts)],
            "axes": [int(v) for v in axes] or None}


def _torch_masked_fill(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
                 dtype: str | None) -> dict[str, Any]:
    """A number ``value`` (a boolean as 0/1); a tensor value is the op's third input."""
    value = named.get("value")
    return {"value": int(value) if isinstance(value, bool) else value if is_number(value)
            else None}


def _torch_diff(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    """torch's defaults (``n`` 1, ``dim`` -1) written out; ``prepend``/``append``: whether that
    tensor is given (it is the op's next input)."""
    given = {k: named.get(k) is not None and not isinstance(named.get(k), str)
             for k in ("prepend", "append")}
    n, dim = named.get("n"), named.get("dim")
    return {"n": 1 if n is None else int(n), "axis": -1 if dim is None else int(dim), **given}


# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind("masked_fill", "elementwise", flops_per_element=1, attrs="value", reference=masked_fill,
         torch_form=masked_fill_torch, torch="masked_fill",
         torch_attrs={"masked_fill": _torch_masked_fill}),
    kind("diff", "elementwise", flops_per_element=1, attrs="n axis prepend append", reference=diff,
         torch_form=diff_torch, torch="diff", torch_attrs={"diff": _torch_diff}),
    kind("cumsum", "reduction", flops_per_element=1, attrs="axis", reference=cumsum,
         torch_form=cumsum_torch, onnx="CumSum", torch="cumsum"),
    kind("gather", "compute", onnx_cost={"Gather": gather_rule}, attrs="axis index",
         reference=gather, torch_form=gather_torch, torch="index_select",
         kernel_names="indexselect index_select gather", kernel_rank=14,
         onnx_attrs={"Gather": _onnx_gather}),
    kind("index", "compute", attrs="axes", reference=index, torch_form=index_torch, torch="index",
         torch_attrs={"index": _torch_index}),
    kind("gather_elements", "compute", onnx_cost={"GatherElements": gather_rule}, attrs="axis",
         reference=gather_elements, torch_form=gather_elements_torch, torch="gather"),
    kind("roll", "compute", attrs="shifts axes", reference=roll, torch_form=roll_torch,
         torch="roll", torch_attrs={"roll": _torch_roll}),
    kind("embedding", "compute", reference=embedding, torch_form=embedding_torch,
         torch="Embedding embedding",
         kernel_names="split_embedding bounds_check_indices linearize_index bucketize_sparse "
                      "offsets_range embedding", kernel_rank=4),
)
