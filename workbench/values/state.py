"""Declared side effects: which ops read and write which state, and the order the program gives
them (seed 003 §7.5.2, Fig. 7.5.4 → 7.5.5; seed 004's auto-monad; notes B.3).

State is a parameter an op writes, or a named resource (``"io"``, the virtual state every
``print``-like kind writes).  :func:`state_effects` says who touches what: ops of a kind in
:data:`~workbench.ops.WRITE_KINDS` (``assign``, ``assign_add``, ``scatter_update``, ...)
write ``attrs["writes"]`` or else their first input; the I/O kinds
(:data:`~workbench.ops.IO_KINDS`) write ``"io"``; any op may name written state in
``attrs["writes"]`` and read state in ``attrs["reads"]`` (a string or a list); every input that
is a ``parameter`` some op writes is a read.

:func:`state_order` is the one rule every part of the workbench applies to them: walking the ops
in program order, a **read** comes after the last earlier write of its state, and a **write**
after the last earlier write and every read since it (hence, transitively, after every earlier
access).  The pass :func:`workbench.passes.add_side_effect_edges` turns these pairs into control
edges, every policy keeps them (:func:`workbench.schedulers.schedule`), and both validators refuse
a schedule that leaves one unordered or reversed (:meth:`workbench.values.schedule.Schedule.
validate`, :func:`workbench.executors.gpu.validate.validate_plan`): with every pair ordered as
the program orders it, every stream timing computes what program order computes.

Simplified compared with auto-monad: auto-monad makes ONE total order of all side-effect ops
(reads included, all states on one chain).  Here only conflicting pairs are ordered
(read-after-write, write-after-read, write-after-write on the same state), so two reads of a
parameter, or writes to different parameters, stay free to run concurrently.

>>> from workbench.models import textbook_side_effects
>>> g = textbook_side_effects()
>>> state_effects(g)["Sub_1"]
(('x',), ())
>>> state_order(g)
[('Assign_1', 'Assign_2', 'x'), ('Assign_2', 'Sub_1', 'x')]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from workbench.ops import IO_KINDS, WRITE_KINDS

if TYPE_CHECKING:
    from workbench.values.graph import Graph, Op, OpId

#: The virtual state that orders the I/O kinds among themselves.
IO_STATE = "io"

#: ``(earlier op, later op, state)``: the later must run after the earlier.
StatePair = tuple[str, str, str]


def _names(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable):
        return tuple(str(v) for v in value)
    return (str(value),)


def _writes(op: Op) -> tuple[str, ...]:
    named = _names(op.attrs.get("writes"))
    if named:
        return named
    if op.kind in WRITE_KINDS and op.inputs:
        return (op.inputs[0],)
    if op.kind in IO_KINDS:
        return (IO_STATE,)
    return ()


def state_effects(graph: Graph) -> dict[OpId, tuple[tuple[str, ...], tuple[str, ...]]]:
    """``{op: (reads, writes)}`` for every op that touches state (others are left out).
    O(V + E)."""
    writes = {op.id: _writes(op) for op in graph.ops}
    written = {s for w in writes.values() for s in w}
    if not written:  # nothing writes state (most graphs): only declared reads matter
        return {op.id: (named, ()) for op in graph.ops
                if (named := _names(op.attrs.get("reads")))}
    tensors = graph.tensors
    out: dict[OpId, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for op in graph.ops:
        reads = list(_names(op.attrs.get("reads")))
        for t in op.inputs:
            if t in written and tensors[t].role == "parameter" and t not in reads:
                reads.append(t)
        w = writes[op.id]
        r = tuple(s for s in reads if s not in w)  # a writer's read of its own ref is the write
        if r or w:
            out[op.id] = (r, w)
    return out


def state_order(graph: Graph) -> list[StatePair]:
    """The pairs of ops that must keep their program order because they touch the same state
    (see the module docstring), in the order found; each pair once, none from an op to itself.
    Program order is :meth:`Graph.topo_order` (the graph's op order whenever that is
    topological).  O(V + E + pairs)."""
    effects = state_effects(graph)
    if not effects:
        return []
    pairs: list[StatePair] = []
    seen: set[tuple[str, str]] = set()

    def order(a: OpId, b: OpId, state: str) -> None:
        if a != b and (a, b) not in seen:
            seen.add((a, b))
            pairs.append((a, b, state))

    last_write: dict[str, OpId] = {}
    reads_since: dict[str, list[OpId]] = {}
    for op_id in graph.topo_order():
        if op_id not in effects:
            continue
        reads, writes = effects[op_id]
        for s in reads:
            if s in last_write:
                order(last_write[s], op_id, s)
            reads_since.setdefault(s, []).append(op_id)
        for s in writes:
            if s in last_write:
                order(last_write[s], op_id, s)
            for r in reads_since.get(s, ()):
                order(r, op_id, s)
            last_write[s] = op_id
            reads_since[s] = []
    return pairs


__all__ = ["IO_STATE", "StatePair", "state_effects", "state_order"]
