"""Vector clocks for the happens-before order of a Schedule (stream order + syncs + barriers).

Used by :meth:`workbench.values.schedule.Schedule.validate`,
:func:`workbench.values.schedule.insert_syncs` and
the multi-stream memory lifetimes.  See :class:`_HappensBefore` for the compact clocks (columns
shared by streams that are never alive at once) and :func:`clock_matrix` for the full per-op
clocks.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np

from workbench.values.graph import Graph, OpId

StreamId = int


class Ordered(Protocol):
    """What the clocks read of a :class:`~workbench.values.schedule.Schedule` (which has all of
    it).  Typed structurally so that this module stays below ``schedule``, which re-exports the
    clocks and caches them on the Schedule."""

    @property
    def graph(self) -> Graph: ...
    @property
    def streams(self) -> Mapping[StreamId, tuple[OpId, ...]]: ...
    @property
    def syncs(self) -> tuple[tuple[OpId, OpId], ...]: ...
    @property
    def issue_order(self) -> tuple[OpId, ...]: ...
    @property
    def barriers(self) -> tuple[int, ...]: ...
    @property
    def _stream_of(self) -> dict[OpId, StreamId]: ...
    @property
    def _position(self) -> dict[OpId, int]: ...

#: Above this many clock columns :class:`_HappensBefore` keeps sparse clocks.
SPARSE_WIDTH = 256


class _SparseClock(dict[int, int]):
    """A vector clock as ``{column: issue index}``; a missing column reads -1.  Joins cost the
    other clock's entries, not the width."""

    def __missing__(self, key: int) -> int:
        return -1

    def copy(self) -> _SparseClock:
        return _SparseClock(self)

    def join(self, other: Mapping[int, int]) -> None:
        get = self.get
        for k, v in other.items():
            if v > get(k, -1):
                self[k] = v


Clock = np.ndarray | _SparseClock


def _last_queries(schedule: Ordered) -> dict[StreamId, int]:
    """Per stream, the issue index of the last op with a predecessor on it (-1 if none)."""
    graph = schedule.graph
    issue = {op: i for i, op in enumerate(schedule.issue_order)}
    stream_of = schedule._stream_of
    ids = graph.op_ids
    at = [issue.get(op, -1) for op in ids]
    last: dict[StreamId, int] = {}
    for k, succs in enumerate(graph.succ_index):
        if not succs:
            continue
        s = stream_of.get(ids[k])
        if s is None:
            continue
        latest = max(map(at.__getitem__, succs))
        if latest > last.get(s, -1):
            last[s] = latest
    return last


class _HappensBefore:
    """Vector clocks for ops visited in issue order (happens-before = stream order + syncs +
    barriers).

    A clock holds, per *column*, the highest issue index of an op known to have finished on the
    stream that owns the column.  A stream owns its column from its first op until the last op
    that may ask about it (``last_query``, issue index; ``None``: forever), after which the column
    goes to a later stream: values left behind are issue indices of the old stream, all smaller than
    any op of the new one, so they never claim too much.  The width is therefore the largest number
    of streams alive at once, not the number of streams.  Only the streams with ops still to come
    keep a current clock, and a sync source keeps its clock only until its last waiter
    (``sources``), so memory is O(width · (open streams + pending events)).

    Past :data:`SPARSE_WIDTH` columns the clocks are *sparse* (:class:`_SparseClock`: only the
    columns an op has heard of): a 20,000-source fan-in keeps 20,000 pending events of width
    20,000, 3.2 GB dense, one entry each sparse (issue 27).  Both answer the same.
    """

    def __init__(self, streams: Mapping[StreamId, Sequence[OpId]], barriers: Iterable[int],
                 issue_order: Sequence[OpId], last_query: Mapping[StreamId, int] | None,
                 sources: Mapping[OpId, int] | None = None) -> None:
        self.issue = {op: i for i, op in enumerate(issue_order)}
        self.stream_of = {op: s for s, ops in streams.items() for op in ops}
        self.position = {op: i for ops in streams.values() for i, op in enumerate(ops)}
        self.column, width = _columns(streams, self.issue, last_query)
        self.last_op = {ops[-1]: s for s, ops in streams.items() if ops}
        self.sparse = width > SPARSE_WIDTH
        self.current: dict[StreamId, Clock] = {}
        self.start: Clock  # the clock of a stream's first op
        self.closed: Clock  # join of the finished streams
        if self.sparse:
            self.start, self.closed = _SparseClock(), _SparseClock()
        else:
            self.start = np.full(width, -1, dtype=np.int64)
            self.closed = np.full(width, -1, dtype=np.int64)
        self.saved: dict[OpId, Clock] = {}
        self.waiters = dict(sources) if sources is not None else None
        self.barrier_at = set(barriers)

    def _max_into(self, clock: Clock, other: Clock) -> None:
        if isinstance(clock, _SparseClock):
            clock.join(other)  # type: ignore[arg-type]
        else:
            np.maximum(clock, other, out=clock)  # type: ignore[arg-type]

    def at_issue_index(self, i: int) -> None:
        if i in self.barrier_at:
            joined = self.closed.copy()
            self._max_into(joined, self.start)
            for row in self.current.values():
                self._max_into(joined, row)
            for s in self.current:
                self.current[s] = joined.copy()
            self.start, self.closed = joined, joined.copy()

    def before(self, op: OpId, waited: Iterable[OpId]) -> Clock:
        """The clock before ``op``: its stream's clock joined with the events it waits on."""
        row = self.current.get(self.stream_of[op])
        clock = (self.start if row is None else row).copy()
        for a in waited:
            self._max_into(clock, self.saved[a])
            self._waited(a)
        return clock

    def join(self, clock: Clock, a: OpId) -> None:
        """Add the event after ``a`` to ``clock`` (a sync being inserted)."""
        self._max_into(clock, self.saved[a])

    def knows(self, clock: Clock, p: OpId) -> bool:
        """Whether ``p`` (on another stream) finished before an op whose clock is ``clock``."""
        return bool(clock[self.column[self.stream_of[p]]] >= self.issue[p])

    def _waited(self, a: OpId) -> None:
        if self.waiters is not None:
            self.waiters[a] -= 1
            if self.waiters[a] == 0:
                del self.saved[a]

    def finish(self, op: OpId, clock: Clock, *, keep: bool | None = None) -> None:
        """``op`` finished with ``clock``: it becomes its stream's clock (and, when ``keep`` or
        ``op`` is a pending sync source, the event's)."""
        s = self.stream_of[op]
        c = self.column[s]
        clock[c] = max(clock[c], self.issue[op])
        if keep if keep is not None else (self.waiters is not None and op in self.waiters):
            self.saved[op] = clock.copy()
        if self.last_op.get(op) == s:
            self._max_into(self.closed, clock)
            self.current.pop(s, None)
        else:
            self.current[s] = clock


def _columns(streams: Mapping[StreamId, Sequence[OpId]], issue: Mapping[OpId, int],
             last_query: Mapping[StreamId, int] | None) -> tuple[dict[StreamId, int], int]:
    """Clock column of every stream (interval colouring over issue indices) and the width."""
    spans = []
    for s, ops in streams.items():
        if not ops:
            continue
        first, last = issue[ops[0]], issue[ops[-1]]
        end = None if last_query is None else max(last, last_query.get(s, -1))
        spans.append((first, s, end))
    spans.sort(key=lambda x: x[0])
    column: dict[StreamId, int] = {}
    free: list[int] = []
    busy: list[tuple[int, int]] = []  # (last issue index that may ask, column)
    width = 0
    for first, s, end in spans:
        while busy and busy[0][0] < first:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            c = heapq.heappop(free)
        else:
            c, width = width, width + 1
        column[s] = c
        if end is not None:
            heapq.heappush(busy, (end, c))
    return column, max(width, 1)


def clock_matrix(schedule: Ordered) -> tuple[np.ndarray, dict[StreamId, int]]:
    """The vector clock *before* every op, one row per op in issue order, one column per stream
    (``int32``, no column sharing), entries are *positions* on the column's stream (-1: none).

    ``x`` happens before ``y`` iff ``clocks[issue(y), column[stream(x)]] >= position(x)`` (for
    ``x`` on ``y``'s stream too: the entry is ``position(y) - 1``).  O((V + E) · S) time, V · S
    memory.
    """
    streams = {s: ops for s, ops in schedule.streams.items() if ops}
    column = {s: c for c, s in enumerate(streams)}
    stream_of = schedule._stream_of
    position = schedule._position
    width = max(1, len(column))
    out = np.full((len(schedule.issue_order), width), -1, dtype=np.int32)
    current = np.full((width, width), -1, dtype=np.int32)
    saved: dict[OpId, np.ndarray] = {}
    waits: dict[OpId, list[OpId]] = {}
    for a, b in schedule.syncs:
        waits.setdefault(b, []).append(a)
    sources = {a for a, _ in schedule.syncs}
    barriers = set(schedule.barriers)
    for i, op in enumerate(schedule.issue_order):
        if i in barriers:
            current[:] = current.max(axis=0)
        c = column[stream_of[op]]
        clock = out[i]
        clock[:] = current[c]
        for a in waits.get(op, ()):
            np.maximum(clock, saved[a], out=clock)
        after = clock.copy()
        after[c] = max(after[c], position[op])
        current[c] = after
        if op in sources:
            saved[op] = after
    return out, column


def clocks_before(schedule: Ordered) -> tuple[dict[OpId, np.ndarray], dict[OpId, int],
                                               dict[OpId, int]]:
    """The vector clock *before* every op (happens-before = stream order + syncs + barriers), the
    clock column of each op's stream, and each op's position on its stream.

    ``x`` happens before ``y`` on another stream iff ``before[y][column[x]] >= position[x]``.
    Rows of :func:`clock_matrix`.  O((V + E) · S) time, O(V · S) memory.
    """
    matrix, col = clock_matrix(schedule)
    before = {op: matrix[i] for i, op in enumerate(schedule.issue_order)}
    column = {op: col[s] for op, s in schedule._stream_of.items()}
    return before, column, dict(schedule._position)
