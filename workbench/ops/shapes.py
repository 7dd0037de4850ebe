"""Shapes, views and data movement: views (reshape, flatten, squeeze, unsqueeze, ...), layout
(transpose, concat, split, stack, slice, tile, pad, resize, depth/space rearrangements), and
copies of a layout (``contiguous``, ``clone``, ``expand``, ``broadcast_to``, ``getitem``).

A ``no_task`` view launches no kernel and owns no memory (the no-task pass drops it, the memory
planners alias it); a ``shape_only`` one costs nothing on the GPU model when it moves no bytes.
Views reshape to their output's shape (:func:`view_shape` when that is unknown: ONNX's ``shape``
with 0 = keep and -1 = infer, ``axes``, flatten's ``axis`` or ``start_dim``/``end_dim``).  The index
arithmetic (:func:`slices_of`, :func:`resize_taps`, :func:`pad_index`, ...) is shared by the NumPy
references and the torch forms, so both compute the same function.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from workbench.ops.arrays import F32, Array, OpLike, ShapeOf, identity
from workbench.ops.attrs import axes_of, flag, is_int_list, number, pads_per_side
from workbench.ops.copies import copy, copy_torch
from workbench.ops.costs import (
    Info,
    ShapeCost,
    copy_rule,
    first_of,
    gather_rule,
    resize_cost,
    view_rule,
)
from workbench.ops.kind import kind
from workbench.ops.readers import INT64_MAX, Shape, is_number, rank_of
from workbench.ops.tensors import Tensor, _f, torch_module

# ------------------------------------------------------------------------ NumPy references


def concat(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    axis = op.attrs.get("axis", 1) if a[0].ndim > 1 else 0
    return [np.concatenate(a, axis=axis)]


def transpose(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    perm = op.attrs.get("perm")
    return [np.ascontiguousarray(np.transpose(a[0], perm if perm is not None else None))]


def view_shape(op: OpLike, in_shape: Sequence[int], shape_of: ShapeOf) -> tuple[int, ...]:
    """The shape a view op gives its input: the output's when known, else from its attributes
    (``shape`` with ONNX's 0 = keep and -1 = infer; ``squeeze``/``unsqueeze`` ``axes``;
    ``flatten``'s ONNX ``axis`` or torch ``start_dim``/``end_dim``), else the input's."""
    known = shape_of(op.outputs[0]) if op.outputs else None
    if known:
        return tuple(known)
    at, dims = op.attrs, list(in_shape)
    rank = len(dims)
    if op.kind == "squeeze":
        gone = axes_of(at.get("axes"), rank)
        return tuple(d for i, d in enumerate(dims) if (d != 1 if gone is None else i not in gone))
    if op.kind in ("unsqueeze", "expand_dims") and at.get("axes") is not None:
        added = at["axes"] if isinstance(at["axes"], (list, tuple)) else [at["axes"]]
        out_rank = rank + len(added)
        for ax in sorted(int(a) % out_rank for a in added):
            dims.insert(ax, 1)
        return tuple(dims)
    if op.kind == "flatten" and rank:
        if at.get("axis") is not None:
            k = int(at["axis"]) % (rank + 1)
            return (math.prod(dims[:k]), math.prod(dims[k:]))
        lo = int(at.get("start_dim", 1) or 0) % rank
        hi = int(at.get("end_dim", -1) if at.get("end_dim") is not None else -1) % rank
        return (*dims[:lo], math.prod(dims[lo:hi + 1]), *dims[hi + 1:])
    target = at.get("shape")
    if isinstance(target, (list, tuple)) and target:
        out = [dims[i] if v == 0 and i < rank else int(v) for i, v in enumerate(target)]
        if -1 in out:
            rest = math.prod(v for v in out if v != -1)
            out[out.index(-1)] = math.prod(dims) // rest if rest else 0
        return tuple(out)
    return tuple(dims)


def view(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """A view: the input reshaped to the output's shape (:func:`view_shape` when that is
    unknown)."""
    return [a[0].reshape(view_shape(op, a[0].shape, shape_of))]

# ------------------------------------------------------------------------ NumPy references


# ------------------------------------------------------------------------ shared index arithmetic
def out_shape(op: OpLike, shape_of: ShapeOf, k: int = 0) -> tuple[int, ...] | None:
    """The shape of output ``k`` (``None`` when unknown)."""
    shape = shape_of(op.outputs[k]) if len(op.outputs) > k else None
    return tuple(shape) if shape else None


def split_sizes(op: OpLike, in_shape: Sequence[int], shape_of: ShapeOf) -> list[int]:
    """The sizes of a split's pieces along ``axis``: ``sizes``, else the outputs' shapes, else
    equal pieces, one per output."""
    axis = int(op.attrs.get("axis", 0) or 0) % len(in_shape)
    sizes = op.attrs.get("sizes")
    if sizes:
        return [int(v) for v in sizes]
    shapes = [out_shape(op, shape_of, k) for k in range(len(op.outputs))]
    if len(shapes) > 1 and all(s is not None and len(s) == len(in_shape) for s in shapes):
        return [s[axis] for s in shapes if s is not None]
    n = max(1, len(op.outputs))
    return [in_shape[axis] // n] * n


def slices_of(attrs: Mapping[str, Any], rank: int) -> tuple[slice, ...]:
    """``starts``/``ends``/``axes``/``steps`` as one Python slice per axis (Python's slicing
    clamps ends as ONNX's Slice does)."""
    starts = list(attrs.get("starts") or [])
    ends = list(attrs.get("ends") or [])
    axes = list(attrs.get("axes") or range(len(starts)))
    steps = list(attrs.get("steps") or [1] * len(starts))
    out = [slice(None)] * rank
    for s, e, ax, st in zip(starts, ends, axes, steps, strict=True):
        out[int(ax) % rank] = slice(int(s), int(e), int(st))
    return tuple(out)


def item_of(attrs: Mapping[str, Any]) -> tuple[int | None, int, int | None]:
    """``(offset, index, axis)`` of a getitem: an item of a container (``offset``), an index
    along ``axis`` (torch's select), or an index along axis 0."""
    offset = attrs.get("offset")
    axis = attrs.get("axis")
    return (None if offset is None else int(offset), int(attrs.get("index", 0) or 0),
            None if axis is None else int(axis))


def table_first(shapes: Sequence[Sequence[int]], out: Sequence[int] | None) -> bool:
    """Whether an embedding's table is its first input: the table is the 2-D input whose row the
    output's last axis holds (``out == indices.shape + (dim,)``); ``aten.embedding(weight,
    ids)`` puts it first, ``nn.Embedding`` as a module call last."""
    if out is not None and len(shapes) == 2:
        a, b = (tuple(s) for s in shapes)
        if len(a) == 2 and tuple(out) == (*b, a[-1]):
            return True
        if len(b) == 2 and tuple(out) == (*a, b[-1]):
            return False
    return len(shapes[0]) == 2


def tile_repeats(attrs: Mapping[str, Any], in_shape: Sequence[int],
                 out: Sequence[int] | None) -> list[int]:
    """``repeats``, else output size / input size per axis."""
    if attrs.get("repeats"):
        return [int(r) for r in attrs["repeats"]]
    if out is None:
        return [1] * len(in_shape)
    return [o // max(1, i) for o, i in zip(out, in_shape, strict=False)]


def resize_mode(attrs: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(mode, coordinate mode, nearest mode)`` with ONNX's defaults; ``align_corners``
    true means the ``align_corners`` coordinate mode."""
    mode = str(attrs.get("mode") or "nearest").lower()
    mode = {"bilinear": "linear", "trilinear": "linear"}.get(mode, mode)
    coord = attrs.get("coordinate_mode") or ("align_corners" if attrs.get("align_corners")
                                             else "half_pixel")
    return mode, str(coord), str(attrs.get("nearest_mode") or "round_prefer_floor")


def resize_scales(attrs: Mapping[str, Any], in_shape: Sequence[int],
                  out: Sequence[int]) -> list[float]:
    """Output/input scale per axis: ``scales`` (every axis, or the spatial ones), else the
    ratio of the sizes."""
    scales = attrs.get("scales")
    rank = len(in_shape)
    if scales:
        values = [float(v) for v in scales]
        return [1.0] * (rank - len(values)) + values if len(values) < rank else values[:rank]
    return [o / i if i else 1.0 for o, i in zip(out, in_shape, strict=True)]


def resize_taps(in_len: int, out_len: int, scale: float, mode: str, coord: str,
                nearest: str) -> tuple[Array, Array, Array]:
    """Per output position along one axis: ``(i0, i1, w)``, the output is ``(1 - w) * x[i0] +
    w * x[i1]`` (nearest: ``w = 0``), from ONNX's coordinate transformation (``half_pixel``,
    ``pytorch_half_pixel``, ``align_corners``, ``asymmetric``, ``tf_half_pixel_for_nn``) and
    its nearest rounding (``round_prefer_floor``, ``round_prefer_ceil``, ``floor``, ``ceil``)."""
    x = np.arange(out_len, dtype=np.float64)
    if coord == "align_corners":
        c = x * ((in_len - 1) / (out_len - 1)) if out_len > 1 else np.zeros_like(x)
    elif coord == "asymmetric":
        c = x / scale
    elif coord == "tf_half_pixel_for_nn":
        c = (x + 0.5) / scale
    elif coord in ("half_pixel", "pytorch_half_pixel"):
        c = (x + 0.5) / scale - 0.5
        if coord == "pytorch_half_pixel" and out_len == 1:
            c = np.zeros_like(x)
    else:
        raise ValueError(f"resize: coordinate mode {coord!r} is not supported (known: "
                         f"align_corners, asymmetric, half_pixel, pytorch_half_pixel, "
                         f"tf_half_pixel_for_nn)")
    if mode == "nearest":
        rounding: dict[str, Callable[[Array], Array]] = {
            "round_prefer_floor": lambda v: np.ceil(v - 0.5),
                    "round_prefer_ceil": lambda v: np.floor(v + 0.5), "floor": np.floor,
                    "ceil": np.ceil}
        if nearest not in rounding:
            raise ValueError(f"resize: nearest mode {nearest!r} is not supported")
        i0 = np.clip(rounding[nearest](c), 0, in_len - 1).astype(np.int64)
        return i0, i0, np.zeros(out_len)
    if mode != "linear":
        raise ValueError(f"resize: mode {mode!r} is not supported (known: nearest, linear)")
    c = np.clip(c, 0, in_len - 1)
    i0 = np.floor(c).astype(np.int64)
    i1 = np.minimum(i0 + 1, in_len - 1)
    return i0, i1, c - i0


def pad_index(n: int, begin: int, end: int, mode: str) -> Array:
    """The source index of every position of one axis padded by ``begin``/``end`` (negative:
    cropped) in ``mode`` reflect, edge (``replicate``) or wrap (``circular``)."""
    idx = np.arange(-begin, n + end)
    if mode in ("edge", "replicate") or n == 1:
        return np.clip(idx, 0, n - 1)
    if mode in ("wrap", "circular"):
        return idx % n
    if mode == "reflect":
        period = 2 * (n - 1)
        idx = np.abs(idx) % period
        return np.where(idx >= n, period - idx, idx)
    raise ValueError(f"pad mode {mode!r} is not supported (known: constant, reflect, edge, "
                     f"wrap)")


def pad_widths(attrs: Mapping[str, Any], rank: int) -> list[tuple[int, int]]:
    """A pad op's ``(begin, end)`` per axis (negative: cropped)."""
    begin, end = pads_per_side(attrs.get("padding"), rank)
    return list(zip(begin, end, strict=True))


def slice_(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    return [np.ascontiguousarray(a[0][slices_of(op.attrs, a[0].ndim)])]


def getitem(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """An item of a container (``offset``: the flat position of the item, its shape the
    output's), an index along ``axis`` (torch's select), or along axis 0."""
    offset, index, axis = item_of(op.attrs)
    x = a[0]
    shape = out_shape(op, shape_of)
    if offset is not None and shape is not None:
        n = math.prod(shape)
        return [x.reshape(-1)[offset:offset + n].reshape(shape).copy()]
    ax = (axis or 0) % max(1, x.ndim)
    return [np.take(x, index % max(1, x.shape[ax]), axis=ax)]


def split(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Pieces along ``axis`` of ``sizes``, one per output (one output for several pieces: the
    container, the pieces flattened and concatenated)."""
    x = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % x.ndim
    bounds = np.cumsum(split_sizes(op, x.shape, shape_of))[:-1]
    pieces = np.split(x, bounds, axis=axis)
    if len(op.outputs) == 1 and len(pieces) > 1:
        return [np.concatenate([p.reshape(-1) for p in pieces])]
    return [np.ascontiguousarray(p) for p in pieces]


def stack(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    return [np.stack(a, axis=int(op.attrs.get("axis", 0) or 0))]


def expand_shape(op: OpLike, in_shape: Sequence[int], shape_of: ShapeOf,
                 given: Sequence[int] | None = None) -> tuple[int, ...]:
    """The output's shape, else the input's broadcast with ``shape`` (or the shape input
    ``given``; ONNX's two-way broadcast, torch's -1 = keep)."""
    known = out_shape(op, shape_of)
    if known is not None:
        return known
    target = list(op.attrs.get("shape") or given or in_shape)
    lead = len(target) - len(in_shape)
    target = [in_shape[i - lead] if v == -1 and i >= lead else int(v)
              for i, v in enumerate(target)]
    return tuple(np.broadcast_shapes(tuple(in_shape), tuple(target)))


def resize_shape(op: OpLike, in_shape: Sequence[int], shape_of: ShapeOf) -> tuple[int, ...]:
    """The output's shape, else ``sizes``, else ``floor(size * scale)`` per axis."""
    known = out_shape(op, shape_of)
    if known is not None:
        return known
    if op.attrs.get("sizes"):
        return tuple(int(v) for v in op.attrs["sizes"])
    scales = resize_scales(op.attrs, in_shape, in_shape)
    return tuple(int(math.floor(n * s)) for n, s in zip(in_shape, scales, strict=True))


def expand(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """The input broadcast to the output's shape (:func:`expand_shape`)."""
    given = [int(v) for v in np.asarray(a[1]).reshape(-1)] if len(a) > 1 else None
    return [np.broadcast_to(a[0], expand_shape(op, a[0].shape, shape_of, given)).copy()]


def tile(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    return [np.tile(a[0], tile_repeats(op.attrs, a[0].shape, out_shape(op, shape_of)))]


def pad(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``padding`` per side over every axis; ``mode`` constant (``value``), reflect, edge,
    wrap; negative padding crops."""
    x = a[0]
    widths = pad_widths(op.attrs, x.ndim)
    mode = str(op.attrs.get("mode") or "constant")
    if mode != "constant":
        for axis, (b, e) in enumerate(widths):
            if b or e:
                x = np.take(x, pad_index(x.shape[axis], b, e, mode), axis=axis)
        return [np.ascontiguousarray(x)]
    grow = [(max(0, b), max(0, e)) for b, e in widths]
    out = np.pad(x, grow, constant_values=number(op.attrs, "value", 0.0))
    crop = tuple(slice(max(0, -b), s - max(0, -e)) for (b, e), s in zip(widths, out.shape,
                                                                           strict=True))
    return [np.ascontiguousarray(out[crop])]


def resize(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Nearest or (multi)linear resizing to the output's shape (:func:`resize_taps`)."""
    x = a[0]
    out = resize_shape(op, x.shape, shape_of)
    mode, coord, nearest = resize_mode(op.attrs)
    scales = resize_scales(op.attrs, x.shape, out)
    y = np.asarray(x, dtype=np.float64)
    for axis, (n_in, n_out) in enumerate(zip(x.shape, out, strict=True)):
        if n_in == n_out and scales[axis] == 1.0:
            continue
        i0, i1, w = resize_taps(n_in, n_out, scales[axis], mode, coord, nearest)
        shape = [1] * y.ndim
        shape[axis] = -1
        w = w.reshape(shape)
        y = np.take(y, i0, axis=axis) * (1 - w) + np.take(y, i1, axis=axis) * w
    return [y.astype(x.dtype if np.issubdtype(x.dtype, np.floating) else F32)]


def trilu(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """The upper (``upper``, default) or lower triangle of the last two axes, diagonal ``k``
    (the second input, else ``diagonal``)."""
    k = int(np.asarray(a[1]).reshape(-1)[0]) if len(a) > 1 else int(
        op.attrs.get("diagonal") or 0)
    return [np.triu(a[0], k) if flag(op.attrs, "upper", True) else np.tril(a[0], k)]


def depth_to_space(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Channels to ``blocksize`` x ``blocksize`` spatial blocks, ``mode`` DCR (default) or CRD
    (torch's pixel_shuffle)."""
    x = a[0]
    b = int(op.attrs.get("blocksize", 1) or 1)
    n, c, h, w = x.shape
    if str(op.attrs.get("mode") or "DCR").upper() == "CRD":
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    else:
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return [y.reshape(n, c // (b * b), h * b, w * b)]


def space_to_depth(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    x = a[0]
    b = int(op.attrs.get("blocksize", 1) or 1)
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return [y.reshape(n, c * b * b, h // b, w // b)]

# ------------------------------------------------------------------------ torch forms


# ------------------------------------------------------------------------ views, copies, state
def concat_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    axis = op.attrs.get("axis", 1) if a[0].dim() > 1 else 0
    return [torch_module().cat(a, dim=int(axis))]


def transpose_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    perm = op.attrs.get("perm")
    perm = list(perm) if perm is not None else list(range(a[0].dim() - 1, -1, -1))
    return [a[0].permute(*perm).contiguous()]


def view_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """A view: the input reshaped to the output's shape (the reference's
    :func:`~workbench.ops.shapes.view_shape` when that is unknown)."""
    return [a[0].reshape(view_shape(op, tuple(a[0].shape), shape_of))]

# ------------------------------------------------------------------------ torch forms


def slice_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
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


def getitem_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    offset, index, axis = item_of(op.attrs)
    x = a[0]
    shape = out_shape(op, shape_of)
    if offset is not None and shape is not None:
        n = math.prod(shape)
        return [x.reshape(-1)[offset:offset + n].reshape(shape).clone()]
    ax = (axis or 0) % max(1, x.dim())
    return [x.select(ax, index % max(1, x.shape[ax])).contiguous()]


def split_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    torch = torch_module()
    x = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % x.dim()
    pieces = torch.split(x, split_sizes(op, tuple(x.shape), shape_of), dim=axis)
    if len(op.outputs) == 1 and len(pieces) > 1:
        return [torch.cat([p.reshape(-1) for p in pieces])]
    return [p.contiguous() for p in pieces]


def stack_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    return [torch_module().stack(a, dim=int(op.attrs.get("axis", 0) or 0))]


def expand_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    given = None
    if len(a) > 1 and out_shape(op, shape_of) is None and not op.attrs.get("shape"):
        given = [int(v) for v in a[1].reshape(-1).tolist()]  # host read: the shape is dynamic
    return [a[0].expand(expand_shape(op, tuple(a[0].shape), shape_of, given)).contiguous()]


def tile_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    reps = tile_repeats(op.attrs, tuple(a[0].shape), out_shape(op, shape_of))
    return [a[0].repeat(*reps)]


def pad_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
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


def resize_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
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


def trilu_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    torch = torch_module()
    k = int(a[1].reshape(-1)[0].item()) if len(a) > 1 else int(op.attrs.get("diagonal") or 0)
    return [torch.triu(a[0], k) if flag(op.attrs, "upper", True) else torch.tril(a[0], k)]


def depth_to_space_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    x = a[0]
    b = int(op.attrs.get("blocksize", 1) or 1)
    if str(op.attrs.get("mode") or "DCR").upper() == "CRD":
        return [_f().pixel_shuffle(x, b)]
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    return [y.reshape(n, c // (b * b), h * b, w * b)]


def space_to_depth_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    x = a[0]
    b = int(op.attrs.get("blocksize", 1) or 1)
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
    return [y.reshape(n, c * b * b, h // b, w // b)]


#: The identity view (also a convolution's absent activation).
IDENTITY = "identity"

# ------------------------------------------------------------ ONNX import: attribute conversions


def _onnx_axis0(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"axis": int(a.get("axis", 0))}


def _onnx_split(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"axis": int(a.get("axis", 0)), "sizes": a.get("sizes") or node.ints(1)}


def _onnx_slice(a: dict[str, Any], node: Any) -> dict[str, Any]:
    if node.opset < 10:
        return {}
    starts, ends = node.ints(1), node.ints(2)
    if starts is None or ends is None:
        return {}
    axes = node.ints(3) if len(node.inputs) > 3 and node.inputs[3] else list(range(len(starts)))
    steps = node.ints(4) if len(node.inputs) > 4 and node.inputs[4] else [1] * len(starts)
    return {"starts": starts, "ends": ends, "axes": axes, "steps": steps}


def _onnx_squeeze(a: dict[str, Any], node: Any) -> dict[str, Any]:
    out = node.out_shapes[0] if node.out_shapes else None
    return {"axes": a.get("axes") or node.ints(1), "shape": list(out) if out else None}


def _onnx_transpose(a: dict[str, Any], node: Any) -> dict[str, Any]:
    if a.get("perm") is not None:
        return {}
    x = node.shape(0)
    return {"perm": list(range(len(x) - 1, -1, -1)) if x is not None else None}


def _onnx_reshape(a: dict[str, Any], node: Any) -> dict[str, Any]:
    out = node.out_shapes[0] if node.out_shapes else None
    return {"shape": list(out) if out else node.ints(1)}


def _onnx_flatten(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"axis": int(a.get("axis", 1))}


def _onnx_tile(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"repeats": node.ints(1)}


def _onnx_pad(a: dict[str, Any], node: Any) -> dict[str, Any]:
    """Padding per side over every axis (``axes``, opset 18, spread to all axes)."""
    mode = str(a.get("mode") or "constant")
    if node.opset < 11:
        return {"mode": mode, "value": float(a.get("value", 0.0))}
    pads = node.ints(1)
    if pads is None:
        return {"mode": mode}
    x = node.shape(0)
    axes = node.ints(3) if len(node.inputs) > 3 and node.inputs[3] else None
    if axes is not None and x is not None:
        rank = len(x)
        begin, end = [0] * rank, [0] * rank
        for k, ax in enumerate(axes):
            begin[ax % rank], end[ax % rank] = pads[k], pads[len(axes) + k]
        pads = [*begin, *end]
    value = node.scalar(2) if len(node.inputs) > 2 and node.inputs[2] else None
    return {"padding": pads, "mode": mode, "value": 0.0 if value is None else value}


def _onnx_resize(a: dict[str, Any], node: Any) -> dict[str, Any]:
    """Scales or sizes from the constant inputs (``Resize`` 11+: X, roi, scales, sizes;
    ``Resize`` 10 and ``Upsample``: X, scales); ONNX's coordinate and rounding defaults."""
    legacy = node.opset < 11
    scales = node.floats(1) if legacy else node.floats(2)
    sizes = None if legacy else node.ints(3)
    if legacy and a.get("scales") is not None:
        scales = [float(v) for v in a["scales"]]
    x = node.shape(0)
    axes = a.get("axes")
    if isinstance(axes, list) and is_int_list(axes) and x is not None:  # opset 18: some axes
        full_s, full_n = [1.0] * len(x), list(x)
        for k, ax in enumerate(axes):
            if scales:
                full_s[ax % len(x)] = scales[k]
            if sizes:
                full_n[ax % len(x)] = sizes[k]
        scales, sizes = (full_s if scales else None), (full_n if sizes else None)
    coord = str(a.get("coordinate_mode") or ("asymmetric" if legacy else "half_pixel"))
    mode = str(a.get("mode") or "nearest")
    nearest = str(a.get("nearest_mode") or ("floor" if legacy else "round_prefer_floor"))
    return {"mode": mode, "coordinate_mode": coord, "nearest_mode": nearest,
            "scales": scales or None, "sizes": sizes or None,
            "align_corners": coord == "align_corners"}


def _onnx_trilu(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"upper": bool(a.get("upper", True))}


def _onnx_depth_to_space(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"mode": str(a.get("mode") or "DCR")}


# ------------------------------------------------------------ torch import: call conversions


def _pieces(container: Any) -> list[Any] | None:
    """The tensors (metadata) a traced node holds when it is a container (split, chunk)."""
    meta = getattr(container, "meta", None)
    if not isinstance(meta, Mapping):
        return None
    for key in ("val", "tensor_meta"):
        value = meta.get(key)
        if isinstance(value, (list, tuple)) and value and all(hasattr(v, "shape")
                                                               for v in value):
            return list(value)
    return None


def _torch_cat(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
         dtype: str | None) -> dict[str, Any]:
    return {"axis": named.get("dim", 0)}


def _torch_split(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    axis = int(named.get("dim", 0)) % rank_of(ins)
    if outs and all(s is not None for s in outs):
        return {"axis": axis, "sizes": [int(s[axis]) for s in outs if s is not None]}
    return {"axis": axis}


def _torch_unbind(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    """``unbind(x, dim)``: a split into pieces of one along ``axis`` (the container holds the
    same elements in the same order; its items lack the axis)."""
    rank = rank_of(ins)
    axis = int(named.get("dim") or 0) % rank
    shape = ins[0]
    assert shape is not None
    return {"axis": axis, "sizes": [1] * int(shape[axis])}


def _torch_transpose(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
               dtype: str | None) -> dict[str, Any]:
    rank = rank_of(ins)
    perm = list(range(rank))
    d0, d1 = int(named["dim0"]) % rank, int(named["dim1"]) % rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return {"perm": perm}


def _torch_t(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
       dtype: str | None) -> dict[str, Any]:
    return {"perm": [1, 0] if rank_of(ins) == 2 else [0]}


def _torch_permute(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
             dtype: str | None) -> dict[str, Any]:
    rank = rank_of(ins)
    return {"perm": [int(d) % rank for d in named["dims"]]}


def _torch_select(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    return {"axis": int(named["dim"]), "index": int(named["index"])}


def _torch_slice(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    start, end, step = named.get("start"), named.get("end"), named.get("step")
    return {"axes": [int(named.get("dim", 0))], "starts": [int(start or 0)],
            "ends": [INT64_MAX if end is None else min(int(end), INT64_MAX)],
            "steps": [int(step or 1)]}


def _torch_flatten(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
             dtype: str | None) -> dict[str, Any]:
    return {"shape": list(outs[0]) if outs and outs[0] is not None else None}


def _torch_shape(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"shape": list(outs[0]) if outs and outs[0] is not None else None}
    dim = named.get("dim")
    if dim is not None:
        out["axes"] = [dim] if isinstance(dim, int) else list(dim)
    return out


def _torch_getitem(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
             dtype: str | None) -> dict[str, Any]:
    """``container[i]``: the item and its flat offset in the container (the pieces flattened
    and concatenated, as the split form writes it); ``tensor[i]``: index ``i`` of axis 0.
    Other subscripts (slices, tuples) are not recorded."""
    index = named.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        return {}
    pieces = _pieces(named.get("input"))
    if pieces is None:
        return {"index": index, "axis": 0}
    offset = sum(int(math.prod(int(d) for d in p.shape)) for p in pieces[:index % len(pieces)])
    return {"index": index, "offset": offset}


def _torch_repeat(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    return {"repeats": list(named["repeats"])}


def _torch_pad(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
         dtype: str | None) -> dict[str, Any]:
    """torch's pad list (last axis first, (begin, end) pairs) as per-side padding of every
    axis."""
    rank = rank_of(ins)
    pads = [int(p) for p in named["pad"]]
    begin, end = [0] * rank, [0] * rank
    for k in range(len(pads) // 2):
        begin[rank - 1 - k], end[rank - 1 - k] = pads[2 * k], pads[2 * k + 1]
    mode = str(named.get("mode") or "constant")
    return {"padding": [*begin, *end], "value": named.get("value") or 0.0,
            "mode": {"replicate": "edge", "circular": "wrap"}.get(mode, mode)}


def _torch_tril(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    """``tril(x, diagonal)``: the lower triangle (ONNX's Trilu with ``upper=0``)."""
    return {"upper": False, "diagonal": int(named.get("diagonal") or 0)}


def _torch_triu(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    return {"upper": True, "diagonal": int(named.get("diagonal") or 0)}


def _torch_resize(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    label = str(named.get("_label"))
    mode = {"upsample_nearest2d": "nearest", "upsample_bilinear2d": "bilinear"}.get(
        label, str(named.get("mode") or "nearest"))
    align = bool(named.get("align_corners") or False)
    spatial = rank_of(ins) - 2
    scales = named.get("scale_factors", named.get("scale_factor"))
    out: dict[str, Any] = {"align_corners": align}
    if is_number(scales):
        scales = [scales] * spatial
    if isinstance(scales, (list, tuple)) and scales:
        out["scales"] = [1.0, 1.0, *[float(s) for s in scales]]
    elif outs and outs[0] is not None:
        out["sizes"] = list(outs[0])
    if mode == "nearest":
        out.update(mode="nearest", coordinate_mode="asymmetric", nearest_mode="floor")
    elif mode == "nearest-exact":
        out.update(mode="nearest", coordinate_mode="half_pixel",
                   nearest_mode="round_prefer_ceil")
    else:
        out.update(mode="linear" if mode in ("linear", "bilinear", "trilinear") else mode,
                   coordinate_mode="align_corners" if align else "pytorch_half_pixel")
    return out


# -------------------------------------------------------------- ONNX import: cost rules


def _resize(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    """Resize/Upsample: :func:`~workbench.ops.costs.resize_cost` in its mode."""
    return resize_cost(first_of(ins), first_of(outs), str(a.get("mode") or "nearest"), ins, outs)


# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind("broadcast_to", "elementwise", fuse="broadcast", attrs="shape", reference=expand,
         torch_form=expand_torch),
    kind("reshape", "view", onnx_cost={"Reshape": view_rule}, no_task=True, shape_only=True,
         attrs="shape", torch="view reshape unflatten reshape_as view_as _unsafe_view",
         torch_attrs={"view reshape unflatten": _torch_shape},
         onnx_attrs={"Reshape": _onnx_reshape}),
    kind("flatten", "view", onnx_cost={"Flatten": view_rule}, no_task=True, shape_only=True,
         attrs="shape start_dim end_dim axis", torch="Flatten flatten",
         torch_attrs={"flatten Flatten": _torch_flatten}, onnx_attrs={"Flatten": _onnx_flatten}),
    kind("squeeze", "view", onnx_cost={"Squeeze": view_rule}, no_task=True, shape_only=True,
         attrs="shape axes", torch="squeeze", torch_attrs={"squeeze": _torch_shape},
         onnx_attrs={"Squeeze": _onnx_squeeze}),
    kind("unsqueeze", "view", onnx_cost={"Unsqueeze": view_rule}, no_task=True, shape_only=True,
         attrs="shape axes", torch="unsqueeze", torch_attrs={"unsqueeze": _torch_shape},
         onnx_attrs={"Unsqueeze": _onnx_squeeze}),
    kind("expand_dims", "view", no_task=True, shape_only=True, attrs="shape"),
    kind("view", "view", no_task=True, shape_only=True, attrs="shape"),
    kind("flatten_grad", "view", no_task=True, attrs="shape"),
    kind("reformat", "view", no_task=True, attrs="shape"),
    kind(IDENTITY, "view", onnx_cost={"Identity": view_rule}, no_task=True, attrs="shape",
         unary=identity, torch="Identity identity alias detach _add_batch_dim _remove_batch_dim"),
    kind("dropout", "view", onnx_cost={"Dropout": view_rule}, no_task=True, attrs="shape p",
         torch="Dropout dropout"),
    kind("identity_view", "view", shape_only=True, attrs="shape"),
    kind("expand", "view", onnx_cost={"Expand": copy_rule}, attrs="shape", reference=expand,
         torch_form=expand_torch, torch="expand", torch_attrs={"expand": _torch_shape},
         onnx_attrs={"Expand": _onnx_reshape}),
    kind("getitem", "view", attrs="index axis offset", reference=getitem, torch_form=getitem_torch,
         torch="getitem select", torch_attrs={"select": _torch_select, "getitem": _torch_getitem}),
    kind("split", "view", onnx_cost={"Split": copy_rule}, attrs="axis sizes", reference=split,
         torch_form=split_torch, torch="split chunk split_with_sizes unbind",
         torch_attrs={"split split_with_sizes chunk": _torch_split, "unbind": _torch_unbind},
         onnx_attrs={"Split": _onnx_split}),
    kind("concat", "compute", onnx_cost={"Concat": copy_rule}, launch_rule="copy_each_input",
         attrs="axis", reference=concat, torch_form=concat_torch, torch="cat concat concatenate",
         torch_attrs={"cat concat concatenate": _torch_cat}, kernel_names="concat cat_ catarray",
         kernel_rank=13, onnx_attrs={"Concat": _onnx_axis0}),
    kind("transpose", "compute", onnx_cost={"Transpose": copy_rule}, attrs="perm",
         reference=transpose, torch_form=transpose_torch,
         torch="permute transpose t swapaxes swapdims",
         torch_attrs={"transpose swapaxes swapdims": _torch_transpose,
                      "t": _torch_t,
                      "permute": _torch_permute},
         kernel_names="nchwtonhwc nhwctonchw permute transpose", kernel_rank=6,
         onnx_attrs={"Transpose": _onnx_transpose}),
    kind("slice", "compute", onnx_cost={"Slice": gather_rule}, attrs="starts ends axes steps",
         reference=slice_, torch_form=slice_torch, torch="slice",
         torch_attrs={"slice": _torch_slice}, onnx_attrs={"Slice": _onnx_slice}),
    kind("stack", "compute", attrs="axis", reference=stack, torch_form=stack_torch, torch="stack",
         torch_attrs={"stack": _torch_cat}),
    kind("contiguous", "compute", reference=copy, torch_form=copy_torch, torch="contiguous"),
    kind("clone", "compute", reference=copy, torch_form=copy_torch, torch="clone lift_fresh_copy"),
    kind("pad", "compute", onnx_cost={"Pad": copy_rule}, attr_bounds={"padding": "any"},
         attrs="padding mode value", reference=pad, torch_form=pad_torch,
         torch="pad constant_pad_nd", torch_attrs={"pad constant_pad_nd": _torch_pad},
         onnx_attrs={"Pad": _onnx_pad}),
    kind("resize", "compute", onnx_cost={"Resize Upsample": _resize},
         attrs="mode scales sizes align_corners coordinate_mode nearest_mode", reference=resize,
         torch_form=resize_torch, onnx="Upsample", onnx_attrs={"Resize Upsample": _onnx_resize},
         torch="Upsample interpolate upsample_nearest2d upsample_bilinear2d",
         torch_attrs={"Upsample interpolate upsample_bilinear2d "
                      "upsample_nearest2d": _torch_resize}),
    kind("tile", "compute", onnx_cost={"Tile": copy_rule}, attrs="repeats", reference=tile,
         torch_form=tile_torch, torch="repeat", torch_attrs={"repeat": _torch_repeat},
         onnx_attrs={"Tile": _onnx_tile}),
    kind("trilu", "compute", attrs="upper diagonal", reference=trilu, torch_form=trilu_torch,
         torch="tril triu", torch_attrs={"tril": _torch_tril, "triu": _torch_triu},
         onnx_attrs={"Trilu": _onnx_trilu}),
    kind("depth_to_space", "compute", onnx_cost={"DepthToSpace": copy_rule},
         attrs="blocksize mode", reference=depth_to_space, torch_form=depth_to_space_torch,
         onnx_attrs={"DepthToSpace": _onnx_depth_to_space}),
    kind("space_to_depth", "compute", onnx_cost={"SpaceToDepth": copy_rule}, attrs="blocksize",
         reference=space_to_depth, torch_form=space_to_depth_torch),
)
