"""Order side-effecting ops with control edges (seed 003 §7.5.2, Fig. 7.5.4 → 7.5.5; notes B.3).

The textbook's ``x = y; x = z; r = x - y`` becomes three ops with no data path between them: a
scheduler may run the Sub first and compute ``r = x₀ - y``.  MindSpore fixes this with *auto-monad*:
a ``U`` token threads through every side-effecting op in program order (``Assign(x, v, u)``,
``UpdateState``, ``Load(x, u)``), so the ordering becomes data dependency.  This pass adds the same
ordering as control edges (drawn dashed by :func:`workbench.viz.dag`).

Rules, per piece of state (a parameter, or a named resource such as ``"io"`` for prints), walking
the ops in program order (:meth:`Graph.topo_order`, which *is* program order whenever that order is
topological):

* a **write** orders after the last earlier write and after every read since that write (hence,
  transitively, after every earlier read or write of that state);
* a **read** orders after the last earlier write.

Who writes what (:func:`state_effects`): ops of a kind in :data:`WRITE_KINDS` (``assign``,
``assign_add``, ``scatter_update``, ...) write ``attrs["writes"]`` or else their first input;
``print``-like kinds (:data:`IO_KINDS`) write the virtual state ``"io"``; any op may name written
state in ``attrs["writes"]`` (a string or a list).  Reads: ``attrs["reads"]``, plus every input
that is a ``parameter`` tensor some op writes.

Simplified compared with auto-monad: auto-monad makes ONE total order of all side-effect ops (reads
included, all states on one chain).  Here only conflicting pairs are ordered — read-after-write,
write-after-read, write-after-write on the same state — so two reads of a parameter, or writes to
different parameters, stay free to run concurrently.  Every execution the pass allows gives the
same values as program order.  Edges already implied by a data edge are not added.  Complexity:
O(V + E + added edges).

Examples
--------
>>> from workbench.models import textbook_side_effects
>>> add_side_effect_edges(textbook_side_effects()).control_edges
(('Assign_1', 'Assign_2'), ('Assign_2', 'Sub_1'))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from workbench.values.graph import Graph, Op, OpId
from workbench.values.ops import IO_KINDS as IO_KINDS  # re-exported
from workbench.values.ops import WRITE_KINDS as WRITE_KINDS  # re-exported

#: The virtual state that orders the I/O kinds among themselves.  ``WRITE_KINDS`` (write their
#: first input in place) and ``IO_KINDS`` are ``side_effect="write"`` / ``"io"`` in
#: :data:`workbench.values.ops.OPS`.
IO_STATE = "io"


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

    >>> from workbench.models import textbook_side_effects
    >>> state_effects(textbook_side_effects())["Sub_1"]
    (('x',), ())
    """
    writes = {op.id: _writes(op) for op in graph.ops}
    written = {s for w in writes.values() for s in w}
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


def add_side_effect_edges(graph: Graph) -> Graph:
    """Return a copy of ``graph`` with control edges that keep program order among all ops touching
    the same state (see the module docstring for the rules and what is simplified).

    A graph without side effects comes back unchanged (an equal graph).  Complexity: O(V + E + k)
    for k added edges.
    """
    effects = state_effects(graph)
    if not effects:
        return graph
    existing = set(graph.edges)
    added: list[tuple[OpId, OpId]] = []
    seen: set[tuple[OpId, OpId]] = set()

    def order(a: OpId, b: OpId) -> None:
        if a != b and (a, b) not in existing and (a, b) not in seen:
            seen.add((a, b))
            added.append((a, b))

    last_write: dict[str, OpId] = {}
    reads_since: dict[str, list[OpId]] = {}
    for op_id in graph.topo_order():
        if op_id not in effects:
            continue
        reads, writes = effects[op_id]
        for s in reads:
            if s in last_write:
                order(last_write[s], op_id)
            reads_since.setdefault(s, []).append(op_id)
        for s in writes:
            if s in last_write:
                order(last_write[s], op_id)
            for r in reads_since.get(s, ()):
                order(r, op_id)
            last_write[s] = op_id
            reads_since[s] = []
    if not added:
        return graph
    return graph.replace(control_edges=[*graph.control_edges, *added])
