"""The Schedule value: which stream runs each op, the launch order, the syncs and the barriers.

Execution model (CUDA semantics, as in the seeds): the host issues ops one by one in
``issue_order``; each op is queued on its stream (streams run in order); a sync ``(a, b)`` records
an event after ``a`` on a's stream and makes b's stream wait for it before ``b``; a barrier joins
*all* streams (every op issued after it waits for every op issued before it).  Waiting on an event
that has not been recorded yet is a no-op in CUDA, so a sync is only meaningful when ``a`` is issued
before ``b``.  Under these rules the happens-before order is "stream order + syncs + barriers", and
every happens-before edge points forward in the issue order, which is what makes a schedule
deadlock-free.

Happens-before queries use the vector clocks of :mod:`workbench.values.clocks` (one small int array
per
open stream and per pending event); a stream's clock column is handed to a later stream once
nothing can ask about it any more, so both :func:`insert_syncs` and :meth:`Schedule.validate` run
in O((V + E) · W) time and O((S + V) + W · (open streams + pending events)) memory, W the most
streams alive at once.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from workbench._checks import show
from workbench.errors import OptionError, ScheduleError
from workbench.ops import BARRIER_KINDS as _BARRIER_KINDS
from workbench.ops.control import JOIN
from workbench.values.clocks import _HappensBefore, _last_queries
from workbench.values.clocks import clock_matrix as clock_matrix  # re-exported
from workbench.values.clocks import clocks_before as clocks_before  # re-exported
from workbench.values.graph import Graph, OpId, priority_topological_order

StreamId = int
Sync = tuple[OpId, OpId]  # event recorded after [0], waited before [1]
BARRIER_KINDS = _BARRIER_KINDS  # the control kinds without sub-graphs, in table order


@dataclass(frozen=True, eq=False)
class Schedule:
    """A multi-stream schedule of a graph (DESIGN.md "Schedule").

    ``streams`` maps each stream id to its ops in launch order; ``syncs`` are ``(a, b)`` pairs
    (event after ``a``, wait before ``b``); ``issue_order`` is the host's global launch order (every
    stream's list is a subsequence of it); ``barriers`` are positions in ``issue_order``: a barrier
    is issued just before ``issue_order[p]``.  ``barrier_kind`` says how a barrier is realised:
    ``"join"`` (every stream waits on an event of every other stream, or a legacy NULL-stream
    launch, as RAF does: the host goes on issuing) or ``"device_sync"`` (``cudaDeviceSynchronize``,
    as IOS's runtime does between stages: the host stops until the device is idle, so the device
    then idles while the host issues the next stage).  Both order the same ops.  ``notes`` holds
    what the policy decided (ranks, waves, chains).  ``subschedules`` maps each control-flow op
    (``while``, ``case_of``; :mod:`workbench.control`) to the schedules of its sub-graphs by name
    (``"cond"``, ``"body"``, a branch): NNC schedules sub-graphs statically too, and the op is one
    unit of this schedule whose sub-graph stream 0 is the op's own stream.
    """

    graph: Graph
    policy: str
    streams: Mapping[StreamId, tuple[OpId, ...]]
    syncs: tuple[Sync, ...]
    issue_order: tuple[OpId, ...]
    barriers: tuple[int, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    notes: Mapping[str, Any] = field(default_factory=dict)
    barrier_kind: str = JOIN
    subschedules: Mapping[OpId, Mapping[str, Schedule]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.graph, Graph):
            raise ScheduleError(f"a Schedule needs a Graph, got {type(self.graph).__name__}")
        if self.barrier_kind not in BARRIER_KINDS:
            raise OptionError(f"unknown barrier kind {self.barrier_kind!r} "
                              f"(known: {', '.join(BARRIER_KINDS)})")

    # ------------------------------------------------------------------ derived views
    @cached_property
    def _stream_of(self) -> dict[OpId, StreamId]:
        return {op: s for s, ops in self.streams.items() for op in ops}

    @cached_property
    def _position(self) -> dict[OpId, int]:
        return {op: i for ops in self.streams.values() for i, op in enumerate(ops)}

    def stream_of(self, op: OpId) -> StreamId:
        try:
            return self._stream_of[op]
        except KeyError:
            raise ScheduleError(f"op {op!r} is not in the schedule") from None

    def ops(self) -> list[OpId]:
        """All ops in issue order."""
        return list(self.issue_order)

    @property
    def n_streams(self) -> int:
        return sum(1 for ops in self.streams.values() if ops)

    @property
    def n_syncs(self) -> int:
        """Number of cross-stream waits."""
        return len(self.syncs)

    @property
    def n_events(self) -> int:
        """Number of events recorded (distinct sync sources)."""
        return len({a for a, _ in self.syncs})

    @property
    def n_barriers(self) -> int:
        return len(self.barriers)

    @cached_property
    def totals(self) -> tuple[int, int, int]:
        """``(streams, syncs, barriers)`` with the control-flow sub-graphs included: what the
        comparison tables count.  Streams as the expansion lays them out
        (:mod:`workbench.control.expand`): a sub-schedule's stream 0 is its op's own stream, and
        each control-flow op adds a block as wide as its widest sub-schedule's other streams,
        nested ops their own blocks.  Syncs and barriers are counted once per sub-graph (the
        program's size, not per loop iteration).  Equal to ``n_streams``, ``n_syncs``,
        ``n_barriers`` without control flow.  O(ops of every sub-schedule)."""
        streams, syncs, barriers = self.n_streams, self.n_syncs, self.n_barriers
        pending = [self]
        while pending:   # no recursion: sub-graphs may nest to any depth
            sched = pending.pop()
            for subs in sched.subschedules.values():
                streams += max((sum(1 for s, ops in sub.streams.items() if s != 0 and ops)
                                for sub in subs.values()), default=0)
                for sub in subs.values():
                    syncs += sub.n_syncs
                    barriers += sub.n_barriers
                    pending.append(sub)
        return streams, syncs, barriers

    @cached_property
    def phase(self) -> dict[OpId, int]:
        """Number of barriers issued before each op."""
        out, k, bars = {}, 0, set(self.barriers)
        for i, op in enumerate(self.issue_order):
            if i in bars:
                k += 1
            out[op] = k
        return out

    def to_frame(self) -> Any:
        """One row per op: op, kind, stream, position on the stream, issue index, phase."""
        import pandas as pd

        kinds = {op.id: op.kind for op in self.graph.ops}
        return pd.DataFrame({
            "op": list(self.issue_order),
            "kind": [kinds[o] for o in self.issue_order],
            "stream": [self._stream_of[o] for o in self.issue_order],
            "position": [self._position[o] for o in self.issue_order],
            "issue_index": range(len(self.issue_order)),
            "phase": [self.phase[o] for o in self.issue_order],
        })

    def summary(self) -> dict[str, Any]:
        return {"policy": self.policy, "ops": len(self.issue_order), "streams": self.n_streams,
                "syncs": self.n_syncs, "events": self.n_events, "barriers": self.n_barriers}

    def __repr__(self) -> str:
        return (f"Schedule({self.policy!r} on {self.graph.name!r}: {len(self.issue_order)} ops, "
                f"{self.n_streams} streams, {self.n_syncs} syncs, {self.n_barriers} barriers)")

    def _repr_html_(self) -> str:
        from workbench.values.views import view

        return view("schedule_html")(self)

    # ------------------------------------------------------------------ validation
    def validate(self) -> Schedule:
        """Prove the schedule correct; return it, or raise :class:`ScheduleError` naming the pair.

        Checks: every op of the graph is launched exactly once; each stream's launch order agrees
        with the issue order; every sync's event is recorded before it is waited on (issue order)
        and no sync waits within one stream order backwards; every dependency ``a -> b`` of the
        graph is ordered by stream order, syncs and barriers (transitively); and every pair of ops
        that touch one declared state (:func:`workbench.values.state.state_order`: writes and
        reads of a parameter, I/O) is ordered the same way and as the program orders it, so no
        stream timing can change what the schedule computes.  Because every
        happens-before edge then points forward in one issue order, no deadlock is possible.
        Complexity O((V + E) · W) time, W the most streams alive at once (module docstring).
        """
        graph = self.graph
        seen: dict[OpId, StreamId] = {}
        for s, ops in self.streams.items():
            for op in ops:
                if op not in graph:
                    raise ScheduleError(f"stream {s} launches {op!r}, which is not an op of "
                                        f"graph {graph.name!r}")
                if op in seen:
                    raise ScheduleError(f"op {op!r} is launched twice (streams {seen[op]} and {s})")
                seen[op] = s
        missing = [op for op in graph.op_ids if op not in seen]
        if missing:
            raise ScheduleError(f"op {missing[0]!r} is never launched ({len(missing)} ops missing)")
        if len(self.issue_order) != len(seen) or set(self.issue_order) != set(seen):
            raise ScheduleError("issue_order is not a permutation of the scheduled ops")
        issue = {op: i for i, op in enumerate(self.issue_order)}
        for s, ops in self.streams.items():
            for x, y in zip(ops, ops[1:]):
                if issue[x] > issue[y]:
                    raise ScheduleError(f"stream {s} launches {x!r} before {y!r}, but the host "
                                        f"issues {y!r} first (deadlock)")
        for a, b in self.syncs:
            for op in (a, b):
                if op not in seen:
                    raise ScheduleError(f"sync {a!r} -> {b!r} names {op!r}, which is not launched")
            if issue[a] >= issue[b]:
                raise ScheduleError(f"sync {a!r} -> {b!r}: {b!r} waits on an event recorded later "
                                    f"by {a!r} (the wait is a no-op or a deadlock)")
        for position in self.barriers:
            if not 0 <= position <= len(self.issue_order):
                raise ScheduleError(f"barrier position {position} is outside the issue order")
        _check_dependencies(self)
        if self.subschedules:
            _check_subschedules(self)
        return self


def _check_subschedules(schedule: Schedule) -> None:
    """The schedules of control-flow sub-graphs are valid (recursively).  A sub-graph without one
    runs serially (what a policy called directly, before :func:`workbench.schedule` recursed,
    leaves), which is always valid."""
    from workbench.control.ops import subgraphs

    graph = schedule.graph
    for op_id, subs in schedule.subschedules.items():
        if op_id not in graph or not subgraphs(graph.op(op_id)):
            raise ScheduleError(f"subschedules name {op_id!r}, which is not a control-flow op "
                                f"of graph {graph.name!r}")
        op = graph.op(op_id)
        known = dict(subgraphs(op))
        for name, sched in subs.items():
            if name not in known:
                raise ScheduleError(f"{op.kind} {op_id!r} has no sub-graph {name!r} (sub-graphs: "
                                    f"{', '.join(known)})")
            if sched.graph is not known[name] and sched.graph != known[name]:
                raise ScheduleError(f"{op.kind} {op_id!r}: the schedule of {name!r} is for "
                                    f"another graph ({sched.graph.name!r})")
            try:
                sched.validate()
            except ScheduleError as exc:
                raise ScheduleError(f"{op_id}/{name}: {exc}") from None


def _check_dependencies(schedule: Schedule) -> None:
    """Vector-clock proof that every graph dependency is ordered (see :meth:`Schedule.validate`)."""
    graph = schedule.graph
    order = schedule.issue_order
    ids = graph.op_ids
    waits: dict[OpId, list[OpId]] = {}
    sources: dict[OpId, int] = {}
    for a, b in schedule.syncs:
        waits.setdefault(b, []).append(a)
        sources[a] = sources.get(a, 0) + 1
    clocks = _HappensBefore(schedule.streams, schedule.barriers, order, _last_queries(schedule),
                            sources)
    # per op in program order: stream, position on it, clock column, issue index
    stream = [clocks.stream_of[op] for op in ids]
    position = [clocks.position[op] for op in ids]
    column = [clocks.column[st] for st in stream]
    issue = [clocks.issue[op] for op in ids]
    index = {op: k for k, op in enumerate(ids)}
    preds = graph.pred_index
    state = _state_preds(graph, index)
    for i, op in enumerate(order):
        clocks.at_issue_index(i)
        before = clocks.before(op, waits.get(op, ()))
        k = index[op]
        s = stream[k]
        for p, what in (*((p, None) for p in preds[k]), *state.get(k, ())):
            ps = stream[p]
            if what is None:
                if ps == s:
                    if position[p] > position[k]:
                        raise ScheduleError(f"dependency {ids[p]!r} -> {op!r} is not ordered: "
                                            f"both on stream {s} but {op!r} is launched first")
                elif before[column[p]] < issue[p]:
                    raise ScheduleError(f"dependency {ids[p]!r} -> {op!r} is not ordered: "
                                        f"{ids[p]!r} on stream {ps}, {op!r} on stream {s}, and "
                                        f"no sync or barrier orders them")
                continue
            both = (f"{ids[p]!r} and {op!r} both touch state {what!r} and the program runs "
                    f"{ids[p]!r} first")
            if ps == s and position[p] > position[k]:
                raise ScheduleError(f"{both}, but stream {s} launches {op!r} first")
            if ps != s and issue[p] > issue[k]:
                raise ScheduleError(f"{both}, but the host issues {op!r} first")
            if ps != s and before[column[p]] < issue[p]:
                raise ScheduleError(f"{both}, but no sync or barrier orders {ids[p]!r} (stream "
                                    f"{ps}) before {op!r} (stream {s}): a race")
        clocks.finish(op, before)


def _state_preds(graph: Graph, index: Mapping[OpId, int]) -> dict[int, list[tuple[int, str]]]:
    """Op index -> the (earlier op index, state) pairs of :func:`workbench.values.state.
    state_order` it must follow, those the graph's edges already order left out."""
    from workbench.values.state import state_order

    out: dict[int, list[tuple[int, str]]] = {}
    preds = graph.pred_index
    for a, b, what in state_order(graph):
        ia, ib = index[a], index[b]
        if ia not in preds[ib]:
            out.setdefault(ib, []).append((ia, what))
    return out


# ---------------------------------------------------------------------------------- building
def insert_syncs(graph: Graph, stream_of: Mapping[OpId, StreamId], issue_order: Sequence[OpId],
                 *, barriers: Iterable[int] = (), given: Iterable[Sync] = ()) -> list[Sync]:
    """Syncs for the cross-stream dependencies not already implied (a transitive reduction).

    Visits ops in issue order keeping vector clocks; for each op, its cross-stream predecessors are
    checked latest-issued first, and a sync is added only when the predecessor is not already known
    to have finished through stream order, earlier syncs or barriers.  Latest-first is a greedy
    choice: a late predecessor's clock usually covers the earlier ones.  ``given``: syncs decided
    already (a policy's own, copied into a larger schedule); they come first in the result and only
    what they leave unordered is added.  O((V + E) · S).

    >>> g = Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> insert_syncs(g, {"a": 0, "b": 0, "c": 1, "d": 0}, ["a", "b", "c", "d"])
    [('a', 'c'), ('c', 'd')]
    """
    streams: dict[StreamId, list[OpId]] = {}
    for op in issue_order:
        streams.setdefault(stream_of[op], []).append(op)
    issue = {op: i for i, op in enumerate(issue_order)}
    remaining = {op: 0 for op in issue_order}
    last_query: dict[StreamId, int] = {}
    preds = {op: graph.predecessors(op) for op in issue_order}
    for i, op in enumerate(issue_order):
        for p in preds[op]:
            if stream_of[p] != stream_of[op]:
                remaining[p] += 1
                last_query[stream_of[p]] = i
    given_waits: dict[OpId, list[OpId]] = {}
    kept: list[Sync] = []
    for a, b in given:
        if stream_of[a] == stream_of[b]:
            continue
        if issue[a] >= issue[b]:
            raise ScheduleError(f"sync {a!r} -> {b!r}: {b!r} is issued before {a!r}")
        given_waits.setdefault(b, []).append(a)
        kept.append((a, b))
        remaining[a] += 1
        last_query[stream_of[a]] = max(last_query.get(stream_of[a], -1), issue[b])
    clocks = _HappensBefore(streams, barriers, issue_order, last_query)
    syncs: list[Sync] = kept
    for i, op in enumerate(issue_order):
        clocks.at_issue_index(i)
        before = clocks.before(op, ())
        for a in given_waits.get(op, ()):
            clocks.join(before, a)
            remaining[a] -= 1
            if remaining[a] == 0:
                clocks.saved.pop(a, None)
        s = stream_of[op]
        cross = [p for p in preds[op] if stream_of[p] != s]
        cross.sort(key=issue.__getitem__, reverse=True)
        for p in cross:
            if issue[p] > i:
                raise ScheduleError(f"dependency {p!r} -> {op!r}: the issue order launches {op!r} "
                                    f"before its predecessor")
            if not clocks.knows(before, p):
                syncs.append((p, op))
                clocks.join(before, p)
            remaining[p] -= 1
            if remaining[p] == 0:
                clocks.saved.pop(p, None)
        clocks.finish(op, before, keep=remaining[op] > 0)
    return syncs


def derive_issue_order(graph: Graph, stream_of: Mapping[OpId, StreamId],
                       stream_orders: Mapping[StreamId, Sequence[OpId]] | None = None
                       ) -> list[OpId]:
    """A host issue order: a topological order of graph edges plus stream orders, preferring the
    op that comes first in ``graph.topo_order()``.  O((V + E) log V)."""
    rank = {op: i for i, op in enumerate(graph.topo_order())}
    preds: dict[OpId, set[OpId]] = {op: set(graph.predecessors(op)) for op in graph.op_ids}
    if stream_orders:
        for ops in stream_orders.values():
            for x, y in zip(ops, ops[1:]):
                preds[y].add(x)
    order = priority_topological_order(preds, rank)
    if len(order) != len(preds):
        placed = set(order)
        stuck = next(op for op in graph.op_ids if op not in placed)
        raise ScheduleError(f"stream orders contradict the graph's dependencies near {stuck!r} "
                            f"(deadlock)")
    return order


#: The largest ``max_streams`` accepted at all (beyond it is a typo, not a cap).
MAX_STREAMS_LIMIT = 2**63 - 1


def check_max_streams(max_streams: int | None, n_ops: int | None = None) -> int | None:
    """``max_streams`` as an int >= 1 (or None): booleans, floats (NaN included), strings and
    values over :data:`MAX_STREAMS_LIMIT` are one-line :class:`OptionError`s.  With ``n_ops``
    (the graph's op count) a larger cap is clamped to it (a graph never uses more streams than
    ops), so that no policy spends O(max_streams) on a 4-op graph.  O(1)."""
    if max_streams is None:
        return None
    if isinstance(max_streams, bool) or not isinstance(max_streams, numbers.Integral):
        raise OptionError(f"max_streams must be a positive integer or None, got "
                          f"{show(max_streams)}")
    value = int(max_streams)
    if value < 1 or value > MAX_STREAMS_LIMIT:
        need = "a positive integer" if value < 1 else f"at most {MAX_STREAMS_LIMIT}"
        raise OptionError(f"max_streams must be {need} (or None), got {show(max_streams)}")
    return min(value, max(1, n_ops)) if n_ops is not None else value


def fold_streams(stream_of: Mapping[OpId, StreamId], issue_order: Sequence[OpId],
                 max_streams: int | None) -> tuple[dict[OpId, StreamId], dict[StreamId, StreamId]]:
    """Map logical streams onto at most ``max_streams`` physical streams.

    Logical streams are taken in order of their first issued op; each goes to a new physical stream
    while fewer than ``max_streams`` exist, else to the physical stream whose last issued op is
    oldest (the one most likely idle).  Ops keep the issue order, so the result stays deadlock-free.
    Returns the new op → stream map and the logical → physical map.  O(V + L·M).
    """
    max_streams = check_max_streams(max_streams)
    logical_first: list[StreamId] = []
    seen = set()
    last_issue: dict[StreamId, int] = {}
    for i, op in enumerate(issue_order):
        s = stream_of[op]
        if s not in seen:
            seen.add(s)
            logical_first.append(s)
        last_issue[s] = i
    if max_streams is None or len(logical_first) <= max_streams:
        return dict(stream_of), {s: s for s in logical_first}
    mapping: dict[StreamId, StreamId] = {}
    physical_last: dict[StreamId, int] = {}
    for s in logical_first:
        if len(physical_last) < max_streams:
            p = len(physical_last)
        else:
            p = min(physical_last, key=lambda q: (physical_last[q], q))
        mapping[s] = p
        physical_last[p] = max(physical_last.get(p, -1), last_issue[s])
    return {op: mapping[s] for op, s in stream_of.items()}, mapping


def build_schedule(graph: Graph, policy: str, stream_of: Mapping[OpId, StreamId],
                   issue_order: Sequence[OpId] | None = None, *, barriers: Iterable[int] = (),
                   syncs: Iterable[Sync] | None = None, max_streams: int | None = None,
                   options: Mapping[str, Any] | None = None,
                   notes: Mapping[str, Any] | None = None,
                   barrier_kind: str = JOIN) -> Schedule:
    """Assemble a :class:`Schedule` from a stream assignment.

    The issue order defaults to :func:`derive_issue_order`; streams beyond ``max_streams`` are
    folded (:func:`fold_streams`); syncs default to :func:`insert_syncs` (only the non-implied
    ones). Stream ids are renumbered 0.. in order of first use.
    """
    order = list(issue_order) if issue_order is not None else derive_issue_order(graph, stream_of)
    barriers = tuple(sorted(set(barriers)))
    folded, mapping = ((stream_of, None) if max_streams is None
                       else fold_streams(stream_of, order, max_streams))
    renumber: dict[StreamId, StreamId] = {}
    final: dict[OpId, StreamId] = {}
    lanes: list[list[OpId]] = []
    for op in order:
        if (s := renumber.get(folded[op])) is None:
            s = renumber[folded[op]] = len(lanes)
            lanes.append([])
        final[op] = s
        lanes[s].append(op)
    sync_list = (insert_syncs(graph, final, order, barriers=barriers) if syncs is None
                 else [(a, b) for a, b in syncs if final[a] != final[b]])
    notes = dict(notes or {})
    notes.setdefault("syncs_inserted", len(sync_list))
    if mapping is not None and len(set(mapping.values())) != len(mapping):
        notes["folded_streams"] = {"logical": len(mapping), "physical": len(set(mapping.values()))}
    return Schedule(graph, policy, {s: tuple(v) for s, v in enumerate(lanes)}, tuple(sync_list),
                    tuple(order), barriers, dict(options or {}), notes, barrier_kind)


def schedule_serial(graph: Graph, *, max_streams: int | None = None) -> Schedule:
    """One stream, ops in program order (the topological order closest to it when program order is
    not topological).  The baseline every comparison reports speedups against (policy
    ``"serial"``) and the schedule of a control-flow op's sub-graph that has none.  O(V + E).

    >>> schedule_serial(Graph.from_edges([("a", "b"), ("a", "c")])).streams
    {0: ('a', 'b', 'c')}
    """
    check_max_streams(max_streams)
    order = list(graph.topo_order())
    return build_schedule(graph, "serial", {op: 0 for op in order}, order, syncs=(),
                          options={"max_streams": max_streams})
