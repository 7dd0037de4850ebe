"""The one check of op attributes: every graph the workbench builds passes through it.

:class:`workbench.values.graph.Graph` calls :func:`check_graph_attrs` when it is built, so every
reader (JSON, DOT, ONNX, ``from_torch``, the Execution Trace) and every programmatic
``wb.Graph(...)`` meets the same rules, and whatever passes them the cost model can cost.  For
each attribute an op's kind declares (:data:`workbench.ops.OPS`, ``OpKind.attrs``):

* its type and range (:func:`workbench.ops.attrs.value_problem`: a kernel, stride,
  dilation or groups is a positive integer, padding non-negative, numbers finite, sizes at most
  2**62);
* for a convolution or pool whose input shape is known, the window against the input: the
  kernel, stride, dilation and padding are an int (every axis) or one value per spatial axis
  (padding also two per axis: all begins, then all ends), the kernel agrees with the weight's
  spatial shape, and the dilated kernel fits the padded input (a larger one is absurd);
* ``groups`` divides the input and output channels (convolutions, group norm);
* a GEMM's ``m``, ``k`` and ``n`` are given together or not at all.

A problem is a one-line :class:`~workbench.errors.GraphError` naming the op and the attribute.
Attributes the kind does not declare are provenance and are not checked.  O(attributes) per op.

>>> from workbench.values.graph import Op
>>> op = Op("c", "conv2d", inputs=("x",), outputs=("y",), attrs={"groups": 2})
>>> try:
...     check_op_attrs(op, [(1, 3, 8, 8)], [(1, 4, 8, 8)])
... except GraphError as exc:
...     print(exc)
op 'c' (conv2d): attribute 'groups' is 2, which does not divide the input's 3 channels
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from workbench._checks import show
from workbench.errors import GraphError
from workbench.ops import OPS, kinds_where
from workbench.ops.attrs import ATTRIBUTES, pads_per_side, per_axis, value_problem
from workbench.values.storage import input_shapes

Shape = Sequence[int] | None
#: Kinds with a sliding window over spatial axes (kernel, stride, padding, dilation).
WINDOW_KINDS = kinds_where(lambda k: k.window is not None)
#: Kinds whose weight (input 1) holds the kernel's spatial shape after two channel axes.
_WEIGHTED = kinds_where(lambda k: k.window in ("weight", "transposed"))
#: Window attributes that must not be an empty list (a pool's empty stride means its kernel).
_NOT_EMPTY = ("kernel", "dilation", "padding", "output_padding")
#: The attributes each kind declares, as sets (kinds declaring none are left out).
_DECLARED = {name: frozenset(info.attrs) for name, info in OPS.items() if info.attrs}


def check_graph_attrs(ops: Iterable[Any], tensors: Mapping[str, Any]) -> None:
    """:func:`check_op_attrs` for every op of a graph, shapes from its tensor table (an op with
    no attributes costs one test).  O(ops + attributes)."""
    for op in ops:
        attrs = op.attrs
        if not isinstance(attrs, Mapping):
            raise GraphError(f"op {show(op.id)}: attrs must be a mapping, got "
                             f"{type(attrs).__name__}")
        if attrs and op.kind in _DECLARED:
            check_op_attrs(op, [tuple(x) if x else None for x in input_shapes(op, tensors)],
                           [_shape(tensors.get(t)) for t in op.outputs])


def _shape(tensor: Any) -> Shape:
    shape = getattr(tensor, "shape", None)
    return tuple(shape) if shape else None


def check_op_attrs(op: Any, in_shapes: Sequence[Shape], out_shapes: Sequence[Shape] = ()) -> None:
    """Check the attributes ``op``'s kind declares (module docstring) against the shapes of its
    inputs and outputs (``None``: unknown).  Raises a one-line :class:`GraphError`."""
    info = OPS.get(op.kind)
    if info is None:
        return
    attrs, declared = op.attrs, _DECLARED[info.name]
    for name, value in attrs.items():
        if value is not None and name in declared:
            problem = value_problem(ATTRIBUTES[name], value, info.name)
            if problem is not None:
                _fail(op, name, problem)
    if "m" in declared:  # a GEMM's sizes are given together (the cost rule reads all three)
        given = [attrs.get(name) is not None for name in ("m", "k", "n")]
        if any(given) and not all(given):
            _fail(op, ("m", "k", "n")[given.index(False)], "is missing (or null) while "
                  "others of m, k and n are given; give all three or none")
    if info.name in WINDOW_KINDS:
        _check_window(op, attrs, in_shapes)
    if attrs.get("groups") is not None and info.window != "attrs" and "groups" in info.attrs:
        _check_groups(op, attrs, in_shapes, out_shapes)


def _fail(op: Any, name: str, problem: str) -> None:
    raise GraphError(f"op {show(op.id)} ({op.kind}): attribute {name!r} {problem}")


def _known(shape: Shape) -> tuple[int, ...] | None:
    """``shape`` when every dimension is a known positive size, else ``None``."""
    if shape is None or not all(isinstance(d, int) and d > 0 for d in shape):
        return None
    return tuple(shape)


def _spatial_axes(op: Any, attrs: Mapping[str, Any], x: Shape, w: Shape) -> int | None:
    """How many spatial axes the window has: the weight's (after its two channel axes), else the
    input's rank - 2 (a two-value kernel over a rank-3 input: 2, torch's unbatched input)."""
    if op.kind in _WEIGHTED and w is not None and len(w) >= 3:
        return len(w) - 2
    if x is None or len(x) < 2:
        return None
    kernel = attrs.get("kernel")
    if isinstance(kernel, (list, tuple)) and len(kernel) == 2 and len(x) == 3:
        return 2  # a 2-D window over an unbatched (C, H, W) input, as torch allows
    return len(x) - 2 if len(x) >= 3 else None


def _check_window(op: Any, attrs: Mapping[str, Any], in_shapes: Sequence[Shape]) -> None:
    for name in _NOT_EMPTY:
        if attrs.get(name) is not None and not isinstance(attrs[name], int) \
                and len(attrs[name]) == 0:
            _fail(op, name, "must not be an empty list")
    x = in_shapes[0] if in_shapes else None
    w = in_shapes[1] if len(in_shapes) > 1 else None
    n = _spatial_axes(op, attrs, x, w)
    if n is None or n < 1:
        return
    where = f"{n} spatial axes" + (f" (input shape {list(x)})" if x is not None else "")
    for name in ("kernel", "stride", "dilation", "output_padding", "padding"):
        value = attrs.get(name)  # an int for every axis, or one value per axis (padding: per side)
        allowed = (n, 2 * n) if name == "padding" else (n,)
        if isinstance(value, (list, tuple)) and value and len(value) not in allowed:
            _fail(op, name, f"has {len(value)} values for {where}")
    kernel = None if attrs.get("kernel") is None else per_axis(attrs["kernel"], n, 1)
    weight, dims = _known(w), _known(x)
    if op.kind in _WEIGHTED and weight is not None and len(weight) == n + 2:
        if kernel is not None and kernel != weight[2:]:
            _fail(op, "kernel", f"{list(kernel)} disagrees with the weight's spatial shape "
                                f"{list(weight[2:])}")
        kernel = weight[2:]
    if kernel is None or OPS[op.kind].window == "transposed" or dims is None \
            or len(dims) < n + 1:
        return
    dilation = per_axis(attrs.get("dilation"), n, 1)
    begin, end = pads_per_side(attrs.get("padding"), n)
    for i, size in enumerate(dims[-n:]):
        span = (kernel[i] - 1) * dilation[i] + 1
        if span > size + begin[i] + end[i]:
            what = "kernel" if dilation[i] == 1 else "dilated kernel"
            _fail(op, "kernel", f"is absurd: the {what} spans {span} on spatial axis {i}, "
                                f"larger than its input ({size}) plus padding "
                                f"({begin[i] + end[i]})")


def _check_groups(op: Any, attrs: Mapping[str, Any], in_shapes: Sequence[Shape],
                  out_shapes: Sequence[Shape]) -> None:
    """``groups`` divides the channels: the input's (or ``cin``) and, for a convolution, the
    output's; the channel axis is 1, or 0 for an unbatched input."""
    groups = attrs["groups"]
    x = _known(in_shapes[0]) if in_shapes else None
    w = in_shapes[1] if len(in_shapes) > 1 else None
    if x is None or len(x) < 2:
        return
    n = len(w) - 2 if op.kind in _WEIGHTED and w is not None and len(w) >= 3 else len(x) - 2
    axis = 0 if op.kind in _WEIGHTED and len(x) == n + 1 else 1
    channels = x[axis]
    cin = attrs.get("cin")
    if isinstance(cin, int) and op.kind in _WEIGHTED:
        if cin > channels:
            _fail(op, "cin", f"is {cin}, more than the input's {channels} channels")
        channels = cin
    if channels % groups:
        _fail(op, "groups", f"is {groups}, which does not divide the input's {channels} "
                            f"channels")
    out = _known(out_shapes[0]) if out_shapes else None
    if OPS[op.kind].window == "weight" and out is not None \
            and len(out) > axis and out[axis] % groups:
        _fail(op, "groups", f"is {groups}, which does not divide the output's "
                            f"{out[axis]} channels")


__all__ = ["WINDOW_KINDS", "check_graph_attrs", "check_op_attrs"]
