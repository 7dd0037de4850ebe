"""The issue program of a Schedule: what the host does, step by step, when it runs it on streams.

Pure Python (no torch): :func:`build_program` turns a :class:`~workbench.values.schedule.Schedule`
into
one :class:`Step` per op in ``issue_order`` (its stream, the sync events its stream waits on
before it, whether an event is recorded after it, whether a barrier comes first), which the CUDA
issue loop (:mod:`workbench.executors.torch_exec.cuda`) and the host loop
(:mod:`workbench.executors.torch_exec.host`)
walk.  The execution model is the Schedule's (``schedule.py``): a sync ``(a, b)`` is one event
recorded after ``a`` on a's stream (once per source op, however many ops wait on it) and one wait
on b's stream before ``b``; a barrier before ``issue_order[p]`` joins every stream, as an event
join through the launching stream (``"join"``) or a device synchronisation (``"device_sync"``).
Only streams that launch ops get a stream.  Complexity: O(V + syncs).
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.errors import OptionError
from workbench.values.graph import OpId
from workbench.values.schedule import BARRIER_KINDS, Schedule, StreamId


@dataclass(frozen=True, slots=True)
class Step:
    """One op as the host issues it: wait on ``waits`` (the sync sources' events) on ``stream``,
    run ``op`` there, then record its event when ``record``; ``barrier`` joins every stream
    first."""

    index: int
    op: OpId
    stream: StreamId
    waits: tuple[OpId, ...]
    record: bool
    barrier: bool


@dataclass(frozen=True, slots=True)
class Program:
    """Every step of a schedule in issue order, the streams used (in order of first use), the
    sync sources, the barrier kind, whether a barrier follows the last op, and the ops in
    issue order (what a run on one CPU computes, in that order)."""

    steps: tuple[Step, ...]
    streams: tuple[StreamId, ...]
    sources: tuple[OpId, ...]
    barrier_kind: str
    trailing_barrier: bool = False
    ops: tuple[OpId, ...] = ()

    @property
    def n_waits(self) -> int:
        return sum(len(s.waits) for s in self.steps)

    @property
    def n_barriers(self) -> int:
        return sum(s.barrier for s in self.steps) + int(self.trailing_barrier)


def build_program(schedule: Schedule, barrier_kind: str | None = None) -> Program:
    """The issue program of ``schedule``; ``barrier_kind`` overrides the schedule's (``None``:
    keep it).  O(V + syncs)."""
    kind = schedule.barrier_kind if barrier_kind is None else barrier_kind
    if kind not in BARRIER_KINDS:
        raise OptionError(f"unknown barrier_kind {kind!r} (known: {', '.join(BARRIER_KINDS)})")
    waits: dict[OpId, list[OpId]] = {}
    sources: dict[OpId, None] = {}
    for a, b in schedule.syncs:
        waits.setdefault(b, []).append(a)
        sources.setdefault(a, None)
    order = schedule.issue_order
    barriers = set(schedule.barriers)
    streams: dict[StreamId, None] = {}
    steps = []
    for i, op in enumerate(order):
        s = schedule.stream_of(op)
        streams.setdefault(s, None)
        steps.append(Step(i, op, s, tuple(waits.get(op, ())), op in sources, i in barriers))
    return Program(tuple(steps), tuple(streams), tuple(sources), kind, len(order) in barriers,
                   tuple(order))


__all__ = ["Program", "Step", "build_program"]
