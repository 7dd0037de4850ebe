"""The PyTorch forms of the data-movement kinds: indexing, slicing, splitting, shapes, resizing.

The other half of :mod:`workbench.values.op_torch`: the same functions as the NumPy references of
:mod:`workbench.values.op_reference_data`, whose index arithmetic (:func:`split_sizes`,
:func:`slices_of`, :func:`resize_taps`, ...) they share, on ``torch.Tensor`` values.
``resize`` runs ``F.interpolate`` where one of its modes is ONNX's transformation (nearest:
``asymmetric`` + ``floor`` or ``half_pixel`` + ``round_prefer_ceil``; linear: ``half_pixel`` /
``pytorch_half_pixel`` or ``align_corners``), else the reference's separable taps with
``index_select``.  Indices go to the device of the tensor they index.  Complexity: one torch
call chain per op.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from workbench.values.op_attrs import flag, number
from workbench.values.op_reference import OpLike, ShapeOf
from workbench.values.op_reference_data import (
    expand_shape,
    item_of,
    out_shape,
    pad_index,
    pad_widths,
    resize_mode,
    resize_scales,
    resize_shape,
    resize_taps,
    slices_of,
    split_sizes,
    table_first,
    tile_repeats,
)
from workbench.values.op_reference_index import (
    cumsum_axis,
    diff_operands,
    index_key,
    required,
    roll_of,
)
from workbench.values.op_torch import Tensor, torch_module


def _f() -> Any:
    return torch_module().nn.functional


def _index(x: Tensor, n: int, device: Any) -> Tensor:
    """Indices as int64 on ``device``, modulo ``n`` (negative ones count from the end)."""
    torch = torch_module()
    idx = x if x.dtype == torch.int64 else x.to(torch.int64)
    return torch.remainder(idx.to(device), max(1, n))


def _dtype(name: Any) -> Any:
    torch = torch_module()
    value = getattr(torch, str(name or "float32"), None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return value


def gather(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    data = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % max(1, data.dim())
    if op.attrs.get("index") is not None:
        return [data.select(axis, int(op.attrs["index"]) % max(1, data.shape[axis])).contiguous()]
    index = _index(a[1], data.shape[axis], data.device)
    flat = data.index_select(axis, index.reshape(-1))
    # the output's shape where known: a 0-d index may arrive as shape (1,) (numpy's
    # ascontiguousarray on the way in makes every array at least 1-d)
    shape = out_shape(op, shape_of) or (*data.shape[:axis], *index.shape, *data.shape[axis + 1:])
    return [flat.reshape(shape)]


def embedding(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    table, ids = (a[0], a[1]) if table_first([tuple(x.shape) for x in a[:2]],
                                             out_shape(op, shape_of)) else (a[1], a[0])
    return [_f().embedding(_index(ids, table.shape[0], table.device), table)]


def slice_(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Slices with negative steps go through ``flip`` (torch's slicing takes none)."""
    x = a[0]
    for axis, s in enumerate(slices_of(op.attrs, x.dim())):
        if s == slice(None):
            continue
        start, stop, step = s.indices(x.shape[axis])
        if step > 0:
            x = x[(slice(None),) * axis + (slice(start, stop, step),)]
        else:
            picked = np.arange(start, stop, step)
            x = x.index_select(axis, torch_module().as_tensor(picked, device=x.device))
    return [x.contiguous()]


def getitem(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    offset, index, axis = item_of(op.attrs)
    x = a[0]
    shape = out_shape(op, shape_of)
    if offset is not None and shape is not None:
        n = math.prod(shape)
        return [x.reshape(-1)[offset:offset + n].reshape(shape).clone()]
    ax = (axis or 0) % max(1, x.dim())
    return [x.select(ax, index % max(1, x.shape[ax])).contiguous()]


def split(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    torch = torch_module()
    x = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % x.dim()
    pieces = torch.split(x, split_sizes(op, tuple(x.shape), shape_of), dim=axis)
    if len(op.outputs) == 1 and len(pieces) > 1:
        return [torch.cat([p.reshape(-1) for p in pieces])]
    return [p.contiguous() for p in pieces]


def stack(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    return [torch_module().stack(a, dim=int(op.attrs.get("axis", 0) or 0))]


def expand(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    given = None
    if len(a) > 1 and out_shape(op, shape_of) is None and not op.attrs.get("shape"):
        given = [int(v) for v in a[1].reshape(-1).tolist()]  # host read: the shape is dynamic
    return [a[0].expand(expand_shape(op, tuple(a[0].shape), shape_of, given)).contiguous()]


def tile(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    reps = tile_repeats(op.attrs, tuple(a[0].shape), out_shape(op, shape_of))
    return [a[0].repeat(*reps)]


def pad(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``F.pad`` over every axis (negative widths crop); modes constant, reflect, edge
    (``replicate``), wrap (``circular``)."""
    x = a[0]
    widths = pad_widths(op.attrs, x.dim())
    mode = str(op.attrs.get("mode") or "constant")
    mode = {"edge": "replicate", "wrap": "circular"}.get(mode, mode)
    pads = [p for b, e in reversed(widths) for p in (b, e)]
    if mode == "constant":
        return [_f().pad(x, pads, value=number(op.attrs, "value", 0.0))]
    torch = torch_module()
    for axis, (b, e) in enumerate(widths):
        if b or e:
            picked = pad_index(x.shape[axis], b, e, mode)
            x = x.index_select(axis, torch.as_tensor(picked, device=x.device))
    return [x.contiguous()]


def resize(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    torch = torch_module()
    x = a[0]
    out = resize_shape(op, tuple(x.shape), shape_of)
    mode, coord, nearest = resize_mode(op.attrs)
    scales = resize_scales(op.attrs, tuple(x.shape), out)
    spatial = x.dim() - 2
    fast = _interpolate_mode(mode, coord, nearest, spatial)
    if fast is not None and tuple(out[:2]) == tuple(x.shape[:2]) and 1 <= spatial <= 3:
        name, align = fast
        given = op.attrs.get("scales")
        kwargs: dict[str, Any] = ({"scale_factor": tuple(scales[2:])} if given
                                  else {"size": tuple(out[2:])})
        if name != "nearest" and name != "nearest-exact":
            kwargs["align_corners"] = align
        y = _f().interpolate(_floating(x), mode=name, **kwargs)
        if tuple(y.shape) == tuple(out):
            return [y.to(x.dtype) if x.is_floating_point() else y]
    y = _floating(x).double()
    for axis, (n_in, n_out) in enumerate(zip(x.shape, out, strict=True)):
        if n_in == n_out and scales[axis] == 1.0:
            continue
        i0, i1, w = resize_taps(n_in, n_out, scales[axis], mode, coord, nearest)
        shape = [1] * y.dim()
        shape[axis] = -1
        wt = torch.as_tensor(w, dtype=y.dtype, device=y.device).reshape(shape)
        lo = y.index_select(axis, torch.as_tensor(i0, device=y.device))
        hi = y.index_select(axis, torch.as_tensor(i1, device=y.device))
        y = lo * (1 - wt) + hi * wt
    return [y.to(x.dtype if x.is_floating_point() else torch.float32)]


def _floating(x: Tensor) -> Tensor:
    return x if x.is_floating_point() else x.float()


def _interpolate_mode(mode: str, coord: str, nearest: str,
                      spatial: int) -> tuple[str, bool] | None:
    """``(F.interpolate mode, align_corners)`` when one computes ONNX's resize exactly."""
    if mode == "nearest" and coord == "asymmetric" and nearest == "floor":
        return "nearest", False
    if mode == "nearest" and coord == "half_pixel" and nearest == "round_prefer_ceil":
        return "nearest-exact", False
    if mode == "linear" and coord in ("half_pixel", "pytorch_half_pixel", "align_corners"):
        return {1: "linear", 2: "bilinear", 3: "trilinear"}.get(spatial, "linear"), \
            coord == "align_corners"
    return None


def cast(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """To ``dtype`` (none given: a copy, as torch's ``.to(device)``)."""
    dtype = op.attrs.get("dtype")
    return [a[0].to(_dtype(dtype)) if dtype else a[0].clone()]


def constant(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """The output's shape (else the shape input's values) filled with ``value`` (on the first
    input's device)."""
    torch = torch_module()
    device = a[0].device if a else None
    shape = out_shape(op, shape_of)
    if shape is None:
        shape = tuple(int(v) for v in a[0].reshape(-1).tolist()) if a else ()
    return [torch.full(shape, number(op.attrs, "value", 0.0),
                       dtype=_dtype(op.attrs.get("dtype")), device=device)]


def shape(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    torch = torch_module()
    start, end = op.attrs.get("start"), op.attrs.get("end")
    dims = tuple(a[0].shape)[None if start is None else int(start):
                             None if end is None else int(end)]
    return [torch.tensor(dims, dtype=torch.int64, device=a[0].device)]


def size(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    torch = torch_module()
    return [torch.tensor(a[0].numel(), dtype=torch.int64, device=a[0].device)]


def range_(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch.arange``; the bounds from the inputs (read on the host) or the attributes."""
    torch = torch_module()
    if len(a) >= 3:
        bounds = [v.reshape(()).item() for v in a[:3]]
        dtype = _dtype(op.attrs["dtype"]) if op.attrs.get("dtype") else a[0].dtype
        device = a[0].device
    else:
        bounds = [number(op.attrs, "start", 0.0), number(op.attrs, "end", 0.0),
                  number(op.attrs, "step", 1.0)]
        whole = all(float(b).is_integer() for b in bounds)
        dtype = _dtype(op.attrs.get("dtype") or ("int64" if whole else "float32"))
        device = None
    return [torch.arange(*bounds, device=device).to(dtype)]


def trilu(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    torch = torch_module()
    k = int(a[1].reshape(-1)[0].item()) if len(a) > 1 else int(op.attrs.get("diagonal") or 0)
    return [torch.triu(a[0], k) if flag(op.attrs, "upper", True) else torch.tril(a[0], k)]


def depth_to_space(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    x = a[0]
    b = int(op.attrs.get("blocksize", 1) or 1)
    if str(op.attrs.get("mode") or "DCR").upper() == "CRD":
        return [_f().pixel_shuffle(x, b)]
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    return [y.reshape(n, c // (b * b), h * b, w * b)]


def space_to_depth(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    x = a[0]
    b = int(op.attrs.get("blocksize", 1) or 1)
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
    return [y.reshape(n, c * b * b, h // b, w // b)]


# ------------------------------------------------------------------------ torch's indexing, scans
def index(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``x[key]``, the reference's subscript (:func:`~workbench.values.op_reference_index
    .index_key`): masks as bool on x's device, other indices int64 modulo their axis."""
    x = a[0]
    torch = torch_module()
    key = index_key(op, tuple(x.shape), a[1:], lambda i, n: _index(i, n, x.device),
                    lambda i: i.dtype == torch.bool)
    y = x[tuple(k.to(x.device) if isinstance(k, torch.Tensor) else k for k in key)]
    shape = out_shape(op, shape_of)
    return [(y.reshape(shape) if shape is not None and math.prod(shape) == y.numel()
             else y).contiguous()]


def gather_elements(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch.gather(x, axis, index)`` (axis default 0, indices modulo the axis)."""
    x = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % max(1, x.dim())
    return [torch_module().gather(x, axis, _index(a[1], x.shape[axis], x.device))]


def roll(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch.roll(x, shifts, axes)`` (no axes: the flattened input)."""
    shifts, axes = roll_of(op)
    torch = torch_module()
    return [torch.roll(a[0], shifts[0]) if axes is None else torch.roll(a[0], shifts, axes)]


def masked_fill(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``x.masked_fill(mask, value)`` (the reference's operands: a third input's value, x its
    own mask when alone)."""
    x = a[0]
    mask = (a[1] if len(a) > 1 else a[0]).to(x.device).bool()
    value = a[2].reshape(()) if len(a) > 2 else required(op, "value")
    return [x.masked_fill(mask, value)]


def diff(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch.diff(x, n, axis, prepend, append)``."""
    pieces, axis, n = diff_operands(op, a)
    x = torch_module().cat(pieces, dim=axis) if len(pieces) > 1 else pieces[0]
    return [torch_module().diff(x, n=n, dim=axis)]


def cumsum(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``torch.cumsum(x, axis)`` (:func:`~workbench.values.op_reference_index.cumsum_axis`;
    integers and booleans sum as int64)."""
    return [torch_module().cumsum(a[0], cumsum_axis(op, a))]


__all__ = [
    "cast", "constant", "cumsum", "depth_to_space", "diff", "embedding", "expand", "gather",
    "gather_elements", "getitem", "index", "masked_fill", "pad", "range_", "resize", "roll",
    "shape", "size", "slice_", "space_to_depth", "split", "stack", "tile", "trilu",
]
