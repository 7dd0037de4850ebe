"""The items a :class:`~workbench.values.graph.Graph` holds: :class:`Op` and :class:`Tensor`
records,
the checks on their figures and devices, and the priority-ordered topological sort the graph and
the schedules share.  Re-exported by :mod:`workbench.values.graph`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from workbench._checks import show
from workbench.errors import GraphError
from workbench.ops import CONTROL_KINDS, canonical_kind
from workbench.ops.attrs import MAX_SIZE
from workbench.ops.control import WHILE
from workbench.ops.generic import GENERIC

OpId = str
TensorId = str

#: The largest figure (flops, bytes, µs) an op or tensor may have: 2**62, as the DOT reader.
MAX_FIGURE = float(MAX_SIZE)
DEFAULT_TENSOR_BYTES = 1 << 20  # from_edges: 1 MiB per output unless sizes= says otherwise
#: The devices an op may run on (each has a cost model in
# :data:`workbench.simulator.cost_model.costs.COST_MODELS`);
#: matched case-insensitively (``"GPU"`` is ``"gpu"``), anything else is a GraphError.
OP_DEVICES = ("gpu", "cpu", "python", "npu", "copy")


@dataclass(frozen=True, slots=True)
class Tensor:
    """A tensor: its size in bytes, the op that produces it (``None`` for a graph input or a
    parameter) and its role: ``activation`` (default), ``input``, ``parameter`` or ``output``."""

    id: TensorId
    size_bytes: int
    producer: OpId | None = None
    role: str = "activation"
    shape: tuple[int, ...] = ()
    dtype: str = "float32"

    def __post_init__(self) -> None:
        if self.shape and isinstance(self.shape, (tuple, list)) and any(
                isinstance(d, bool) for d in self.shape):
            raise GraphError(f"tensor {show(self.id)}: shape {show(self.shape)} has a boolean "
                             f"dimension")


@dataclass(frozen=True, slots=True)
class Op:
    """One operator (a kernel launch when it runs on a GPU).

    ``flops``, ``bytes_read`` and ``bytes_written`` feed the roofline cost model; ``thread_blocks``
    is the launch shape where known (it decides how much of the device one launch can fill);
    ``duration_us`` pins the op's stand-alone device time and overrides the roofline (toy graphs,
    calibrated tables).  ``attrs`` holds op parameters (kernel size, stride, ...) for executors.
    A kind that names a known kind in another spelling (``"ExpandDims"``, ``"Reshape"``) is
    stored canonically (``"expand_dims"``; see :mod:`workbench.ops`).
    """

    id: OpId
    kind: str = GENERIC
    device: str = "gpu"
    flops: float = 0.0
    bytes_read: int = 0
    bytes_written: int = 0
    inputs: tuple[TensorId, ...] = ()
    outputs: tuple[TensorId, ...] = ()
    thread_blocks: int | None = None
    duration_us: float | None = None
    workspace_bytes: int = 0
    attrs: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        # Kinds are case-insensitive: a known kind is stored in its canonical spelling.
        if isinstance(self.kind, str):
            kind = canonical_kind(self.kind)
            if kind is not self.kind:
                object.__setattr__(self, "kind", kind)


_NUMERIC_OP_FIELDS = ("flops", "bytes_read", "bytes_written", "workspace_bytes")


def ops_from_edges(edges: Iterable[Any], ops: Any, sizes: Mapping[Any, Any],
                   durations: Mapping[Any, Any], blocks: Mapping[Any, Any],
                   devs: Mapping[Any, Any]) -> tuple[list[Op], list[Tensor]]:
    """The ops and tensors of :meth:`workbench.values.graph.Graph.from_edges` (its docstring); each
    op's inputs are an ordered set, so a 100k-edge fan-in is O(V + E)."""
    edge_list = [tuple(e) for e in edges]
    for e in edge_list:
        if len(e) != 2:
            raise GraphError(f"edge {show(e)} is not a (producer, consumer) pair")
    order: dict[OpId, str] = {}
    if isinstance(ops, Mapping):
        order.update({str(k): str(v) for k, v in ops.items()})
    elif ops is not None:
        ids = [str(k) for k in ops]
        order.update(dict.fromkeys(ids, "op"))
        if len(order) != len(ids):
            raise GraphError(f"ops lists an op twice ({show(ids, 60)})")
    for a, b in edge_list:
        order.setdefault(str(a), "op")
        order.setdefault(str(b), "op")
    inputs: dict[OpId, dict[TensorId, None]] = {k: {} for k in order}  # ordered sets
    for a, b in edge_list:
        inputs[str(b)][f"{a}:out"] = None
    for table, what in ((sizes, "sizes"), (durations, "durations"), (blocks, "thread_blocks"),
                        (devs, "devices")):
        for k in table:
            if k not in order:
                raise GraphError(f"{what} names {show(k)}, which is not an op of the edges")
    for k, size in sizes.items():
        _check_number(size, f"op {show(k)}: size")
        if isinstance(size, float) and not size.is_integer():  # int() would drop it silently
            raise GraphError(f"op {show(k)}: size must be a whole number of bytes, got {size!r}")
    for k, micros in durations.items():
        _check_number(micros, f"op {show(k)}: duration_us")
    tensors = []
    op_list = []
    for op_id, kind in order.items():
        size = sizes.get(op_id, DEFAULT_TENSOR_BYTES)  # checked above (or the default)
        tensors.append(Tensor(f"{op_id}:out", int(size), producer=op_id))
        op_list.append(Op(
            op_id, kind=kind, device=devs.get(op_id, "gpu"), inputs=tuple(inputs[op_id]),
            outputs=(f"{op_id}:out",), duration_us=durations.get(op_id, 10.0),
            thread_blocks=blocks.get(op_id), bytes_written=int(size),
            bytes_read=sum(sizes.get(t[:-4], DEFAULT_TENSOR_BYTES) for t in inputs[op_id]),
        ))
    return op_list, tensors


#: How deep control flow may nest: a ``while`` whose body holds a ``case_of`` whose branch holds
#: a ``while`` is 3 levels.  Every stage walks sub-graphs with Python recursion (pickling a
#: comparison's results back from its workers too: ~11 frames a level, where compare failed at
#: ~90 levels before its workers raised their recursion limit); load, schedule, simulate and
#: compare are tested at this depth, and a deeper graph is a one-line error when it is built.
MAX_CONTROL_DEPTH = 100


def control_depth(ops: Iterable[Op], check: Callable[[Op], None]) -> int:
    """Check each control-flow op of ``ops`` (``check``: the graph's
    :func:`~workbench.values.control_checks.check_control_op` on its tensors) and return how
    deep control flow nests in them: one more than their deepest sub-graph (each sub-graph,
    built first, knows its own).  A :class:`GraphError` beyond :data:`MAX_CONTROL_DEPTH`.
    O(ops + sub-graphs)."""
    depth = 0
    for op in ops:
        if op.kind in CONTROL_KINDS:
            check(op)  # now cond/body are graphs, branches (name, graph) pairs
            subs = ((op.attrs["cond"], op.attrs["body"]) if op.kind == WHILE
                    else tuple(g for _, g in op.attrs["branches"]))
            inner = max((getattr(g, "_cache", {}).get("control_depth", 0) for g in subs),
                        default=0)
            if inner + 1 > MAX_CONTROL_DEPTH:
                raise GraphError(f"{op.kind} {show(op.id)}: control flow nested more than "
                                 f"{MAX_CONTROL_DEPTH} levels deep (the most the workbench "
                                 f"handles)")
            depth = max(depth, inner + 1)
    return depth


def priority_topological_order(preds: Mapping[Any, Iterable[Any]],
                                priority: Mapping[Any, Any]) -> list[Any]:
    """Kahn's algorithm over ``preds`` (node -> its predecessors), always taking the ready node
    with the smallest ``priority``.  Nodes on a cycle are left out, so a result shorter than
    ``preds`` means a cycle.  O((V + E) log V).
    """
    succs: dict[Any, list[Any]] = {n: [] for n in preds}
    indeg = {}
    for n, ps in preds.items():
        ps = set(ps)
        indeg[n] = len(ps)
        for p in ps:
            succs[p].append(n)
    heap = [(priority[n], n) for n, d in indeg.items() if d == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, n = heapq.heappop(heap)
        order.append(n)
        for s in succs[n]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(heap, (priority[s], s))
    return order


def _check_number(value: Any, what: str, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GraphError(f"{what} must be a non-negative number, got {show(value)}")
    if isinstance(value, float) and not math.isfinite(value) or value < 0:
        raise GraphError(f"{what} must be a non-negative number, got {show(value)}")
    if isinstance(value, int) and value >= 1 << 63:
        raise GraphError(f"{what} is too large ({len(str(value))} digits)")
    if value > MAX_FIGURE:  # sums of such figures would overflow to inf and stall the simulator
        raise GraphError(f"{what} is too large ({value:g}; at most {MAX_FIGURE:g})")


_PLAIN = (int, float)


def plain_figure(value: Any) -> bool:
    """Whether :func:`_check_number` accepts ``value`` at a glance: an int or a float in
    ``[0, MAX_FIGURE]``, decided without composing the message a refusal would need."""
    return type(value) in _PLAIN and 0 <= value <= MAX_FIGURE


def check_figures(op: Op) -> None:
    """The one-line GraphError for the first figure of ``op`` (flops, bytes, workspace,
    ``duration_us``) that is not a non-negative number of at most :data:`MAX_FIGURE`; the
    messages are composed only for an op whose figures are not plain (a 10^6-op graph)."""
    for value in (op.flops, op.bytes_read, op.bytes_written, op.workspace_bytes,
                  0 if op.duration_us is None else op.duration_us):
        if type(value) not in _PLAIN or not 0 <= value <= MAX_FIGURE:
            break
    else:
        return
    for name in _NUMERIC_OP_FIELDS:
        _check_number(getattr(op, name), f"op {show(op.id)}: {name}")
    _check_number(op.duration_us, f"op {show(op.id)}: duration_us", allow_none=True)


def _known_device(op: Op) -> Op:
    """``op`` with its device spelt as in :data:`OP_DEVICES` (a one-line error if unknown)."""
    if not isinstance(op, Op) or op.device in OP_DEVICES:
        return op
    from workbench._checks import check_choice

    try:
        device = check_choice(op.device, OP_DEVICES, "device", error=GraphError)
    except GraphError as exc:
        raise GraphError(f"op {show(op.id)}: {exc}") from None
    return replace(op, device=device)


def _show(name: str) -> str:
    """An op id for a one-line message: as is when printable, else its repr."""
    return name if name.isprintable() else repr(name)
