"""The NumPy references of torch's indexing, shifting and scanning kinds: ``index`` (``x[:, idx]``),
``gather_elements`` (``torch.gather``), ``roll``, ``masked_fill``, ``diff`` and ``cumsum``.

A third part of :mod:`workbench.values.op_reference` (same signature ``(op, inputs, shape_of) ->
outputs``, same conventions as :mod:`workbench.values.op_reference_data`: indices are taken
modulo the axis length, so negative ones count from the end and drawn float values land in
range; a mask is any nonzero value).  The argument arithmetic the torch forms
(:mod:`workbench.values.op_torch_data`) share is here too (:func:`index_key`, :func:`roll_of`,
:func:`diff_operands`), so both compute the same function.  A missing attribute these kinds
need is a one-line :class:`~workbench.errors.OptionError` naming the op.  Complexity: one NumPy
call chain per op.

>>> import numpy as np
>>> class _Op:
...     kind, attrs, inputs, outputs = "roll", {"shifts": [1], "axes": [0]}, (), ()
>>> roll(_Op(), [np.arange(4)], lambda t: None)[0].tolist()
[3, 0, 1, 2]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from workbench.errors import OptionError
from workbench.values.op_attrs import flag
from workbench.values.op_reference import Array, OpLike, ShapeOf
from workbench.values.op_reference_data import out_shape


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


def _index(x: Array, n: int) -> Array:
    return np.asarray(x).astype(np.int64) % max(1, n)


# ------------------------------------------------------------------------ references
def index(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``x[key]`` with the index inputs at the positions ``axes`` (:func:`index_key`)."""
    x = a[0]
    key = index_key(op, x.shape, [np.asarray(i) for i in a[1:]], _index,
                    lambda i: i.dtype == np.bool_)
    y = np.ascontiguousarray(x[key])
    shape = out_shape(op, shape_of)
    return [y.reshape(shape) if shape is not None and math.prod(shape) == y.size else y]


def gather_elements(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``out[i][j] = x[index[i][j]][j]`` along ``axis`` (default 0; torch's gather, ONNX's
    GatherElements): the index's shape, which may be smaller than x's off the axis."""
    x = a[0]
    axis = int(op.attrs.get("axis", 0) or 0) % max(1, x.ndim)
    idx = _index(a[1], x.shape[axis])
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


__all__ = ["cumsum", "cumsum_axis", "diff", "diff_operands", "gather_elements", "index",
           "index_key", "int_list", "masked_fill", "required", "roll", "roll_of"]
