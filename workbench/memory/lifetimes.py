"""Tensor lifetimes and conflict sets from a Schedule or a Trace (seed 004, SOMAS; notes §1.1–1.2,
§7).

* **From a Schedule**: steps are positions in the issue order.  A tensor lives from its producer's
  step to its last consumer's step (inclusive; no consumer: its producer's step; a graph output: to
  the last step).  With several streams a step-wise lifetime is not enough: following SOMAS's
  ancestor rule, tensors ``A`` and ``B`` may share memory only if every consumer of ``A`` happens
  before ``B``'s producer (or vice versa) in *every* execution the schedule allows, where
  happens-before is stream order + syncs + barriers.  The conflict set lists every other pair.
* **From a Trace**: one concrete execution; steps are the trace's start/end events in time order
  (an end before a start at the same time), and interval overlap is exact.
* **Control flow** (``while``, ``case_of``; :mod:`workbench.control`): a Trace already lists one
  row per op instance over the run's flat graph, so its lifetimes are per iteration (a loop-carried
  tensor lives from the iteration that makes it into the next) and per branch taken.  A Schedule is
  unrolled statically (:func:`workbench.control.expand.expand`): loops at their default trip
  counts, and every branch of a ``case_of`` one after the other, so branch-local tensors of
  different branches may share memory and the plan holds whichever branch runs.
* **Classes**: graph inputs and parameters are *lifelong* (live for the whole run, outside the
  planned arena, reported as ``persistent_bytes``).  Outputs that share an input's storage
  (no-task ops, views an importer marked, in-place writes: the one rule of
  :mod:`workbench.values.storage`) need no memory and extend their root's lifetime instead (an
  in-place writer also reads its root).

Complexity: one stream, O(V + E + T log T); several, O(V · S) clocks plus O(T · S · log V + P) for
the P conflicting pairs that are listed (``workbench.memory.streams``; graph outputs conflict with
every later tensor by rule and are not listed).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import cast

from workbench.errors import MemoryPlanError
from workbench.memory.plan import UsageRecord
from workbench.values.graph import NO_TASK_KINDS as NO_TASK_KINDS  # re-exported
from workbench.values.graph import Graph, OpId
from workbench.values.schedule import Schedule
from workbench.values.storage import storage_roots, writes_in_place
from workbench.values.trace import Trace

LIFELONG_ROLES = frozenset({"input", "parameter"})


@dataclass(frozen=True)
class Lifetimes:
    """Usage records of the planned tensors plus what the planners and charts need around them."""

    records: tuple[UsageRecord, ...]
    producers: tuple[str, ...]            # producing op per record
    conflicts: AbstractSet[tuple[int, int]] | None  # None: interval overlap decides (one stream)
    step_times: tuple[float, ...] = ()    # time (µs) of each step, for traces
    persistent_bytes: int = 0             # inputs and parameters, outside the arena
    aliases: dict[str, str] = field(default_factory=dict)  # no-task output -> tensor it aliases
    source: str = "schedule"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.records)

    def peak_bytes(self) -> int:
        """Peak of live planned bytes (the lower bound of any arena)."""
        from workbench.memory.bounds import peak_live_bytes

        return peak_live_bytes(self.records)


Usage = tuple[list[str], dict[str, list[str]], dict[str, str], int]


def graph_usage(graph: Graph) -> Usage:
    """What lifetimes need from the graph alone (planned tensors, their consumers with aliases
    folded in, the alias map, lifelong bytes): compute it once to plan several schedules of one
    graph (:func:`from_schedule`'s ``usage``).  O(V + E)."""
    return _usage(graph)


def _usage(graph: Graph) -> Usage:
    """Planned tensors, their consumers (aliases folded in) and the lifelong byte total."""
    roots = storage_roots(graph)
    tensors = graph.tensors
    planned = [t.id for t in tensors.values()
               if t.producer is not None and t.id not in roots and t.role not in LIFELONG_ROLES]
    consumers: dict[str, list[str]] = {t: [] for t in planned}
    for op in graph.ops:
        if op.outputs and op.outputs[0] in roots and not writes_in_place(op):
            continue  # a view (also one in a chain of them) does not touch the memory
        for tid in op.inputs:
            readers = consumers.get(roots.get(tid, tid))
            if readers is not None and (not readers or readers[-1] != op.id):
                readers.append(op.id)  # an op's repeated inputs are consecutive: O(1) dedup
    persistent = sum(t.size_bytes for t in tensors.values()
                     if t.producer is None or t.role in LIFELONG_ROLES)
    return planned, consumers, roots, persistent


def from_schedule(schedule: Schedule, *, usage: Usage | None = None) -> Lifetimes:
    """Lifetimes over the issue order, with SOMAS-style conflicts when there are several streams.

    ``usage``: :func:`graph_usage` of the schedule's graph, when it is already at hand."""
    if schedule.graph.has_control_flow:
        from workbench.control.expand import expand

        schedule, usage = expand(schedule, all_branches=True).schedule, None
    graph = schedule.graph
    planned, consumers, roots, persistent = usage if usage is not None else _usage(graph)
    step = {op: i for i, op in enumerate(schedule.issue_order)}
    last_step = len(schedule.issue_order) - 1
    outputs = {roots.get(t, t) for t in graph.outputs}
    records, producers = [], []
    tensors, at = graph.tensors, step.__getitem__
    for tid in planned:
        t = tensors[tid]
        producer = cast(OpId, t.producer)  # planned tensors are produced by an op
        first = step[producer]
        cons = consumers[tid]
        last = max(map(at, cons)) if cons else first
        if tid in outputs:
            last = last_step
        records.append(UsageRecord(t.size_bytes, first, last, tid))
        producers.append(producer)
    conflicts = None
    if schedule.n_streams > 1:
        from workbench.memory.conflicts import ConflictSet
        from workbench.memory.streams import happens_before_relation

        relation, skeleton = happens_before_relation(schedule, planned, consumers, producers,
                                                     outputs)
        conflicts = ConflictSet(relation, source="happens-before")
        conflicts.skeleton = skeleton
    return Lifetimes(tuple(records), tuple(producers), conflicts, persistent_bytes=persistent,
                     aliases=roots, source="schedule")


def from_trace(trace: Trace) -> Lifetimes:
    """Lifetimes of one concrete execution: producer start to last consumer end."""
    graph = trace.graph
    planned, consumers, roots, persistent = _usage(graph)
    start = dict(zip(trace.df["op"], trace.df["start_us"]))
    end = dict(zip(trace.df["op"], trace.df["end_us"]))
    outputs = {roots.get(t, t) for t in graph.outputs}
    makespan = trace.makespan
    spans = []
    for tid in planned:
        t = graph.tensor(tid)
        if t.producer not in start:
            raise MemoryPlanError(f"trace has no op {t.producer!r} (producer of tensor {tid!r})")
        born = start[t.producer]
        dies = max((end[c] for c in consumers[tid] if c in end), default=end[t.producer])
        if tid in outputs:
            dies = makespan
        spans.append((born, dies))
    events = sorted({(d, 0) for _, d in spans} | {(b, 1) for b, _ in spans})
    index = {e: k for k, e in enumerate(events)}
    records = tuple(UsageRecord(graph.tensor(tid).size_bytes, index[(b, 1)], index[(d, 0)], tid)
                    for tid, (b, d) in zip(planned, spans))
    fixed = tuple(UsageRecord(r.size, r.first, max(r.first, r.last), r.name) for r in records)
    return Lifetimes(fixed, tuple(cast(OpId, graph.tensor(t).producer) for t in planned), None,
                     step_times=tuple(t for t, _ in events), persistent_bytes=persistent,
                     aliases=roots, source="trace")


def lifetimes(run: Schedule | Trace) -> Lifetimes:
    """Lifetimes of a Schedule or a Trace (see the module docstring)."""
    if isinstance(run, Trace):
        return from_trace(run)
    if isinstance(run, Schedule):
        return from_schedule(run)
    raise MemoryPlanError(f"lifetimes need a Schedule or a Trace, got {type(run).__name__}")


def pool_events(trace: Trace) -> list[tuple[float, str, str, int]]:
    """Dynamic reference counting over a Trace: allocate an output when its producer starts, free
    it when its last consumer ends (graph outputs are never freed); at equal times frees of
    earlier tensors first, then allocations, then frees of tensors born at that time."""
    graph = trace.graph
    planned, consumers, roots, _ = _usage(graph)
    start = dict(zip(trace.df["op"], trace.df["start_us"]))
    end = dict(zip(trace.df["op"], trace.df["end_us"]))
    outputs = {roots.get(t, t) for t in graph.outputs}
    events: list[tuple[float, int, str, str, int]] = []
    for tid in planned:
        t = graph.tensor(tid)
        born = start[t.producer]
        events.append((born, 1, "alloc", tid, t.size_bytes))
        if tid not in outputs:
            dies = max((end[c] for c in consumers[tid]), default=end[t.producer])
            # frees first at equal times, except a tensor's own free, which follows its alloc
            # (a zero-time producer and readers: views, empty ops)
            events.append((dies, 0 if dies > born else 2, "free", tid, t.size_bytes))
    events.sort(key=lambda e: (e[0], e[1]))
    return [(time, action, tid, size) for time, _, action, tid, size in events]


def records_of(items: Iterable[UsageRecord]) -> list[tuple[int, int, int, str]]:
    return [(r.size, r.first, r.last, r.name) for r in items]
