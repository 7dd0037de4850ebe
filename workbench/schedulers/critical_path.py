"""Critical-path list scheduling (HEFT-like; Topcuoglu, Hariri and Wu, 2002) on identical streams.

1. **Priority**: the *upward rank* of each op, i.e. its bottom level: the longest path of
   stand-alone durations (``graph_costs(graph, spec)``: the simulator's shape-aware kernels)
   from the op, itself included, to a sink.
2. **Selection**: among the ready ops (all predecessors placed), the highest rank first; ties: the
   longer op, then the topological order closest to program order.
3. **Placement (insertion-based)**: the op goes to the stream where it can start earliest, no
   sooner than the end of its last predecessor, using the first idle gap long enough to hold it
   (an op may slide in before ops placed earlier).  Ties: the lowest stream id.
4. **Events**: the issue order is the ops sorted by planned (start, end); each stream runs its ops
   in that order; syncs come from :func:`~workbench.values.schedule.insert_syncs` (transitively
   reduced).

The plan assumes every stream runs at stand-alone speed; the simulator then shares SMs and
bandwidth between concurrent kernels, so the simulated makespan is usually longer than
``notes["estimated_makespan_us"]``.

The list scheduler here (:func:`_list_schedule`) is shared with :mod:`workbench.schedulers.gpto`.

Complexity: O(V log V + E) for ranks and the ready heap, plus O(V · S · (log V + g)) for
placement, where g is the number of idle gaps visited per stream (:class:`_Timeline`: only gaps
long enough to matter are kept, so a stream busy without a break costs O(log V) per op; O(V) in
the worst case, small in practice).
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench.simulator.cost_model.costs import DeviceSpec, get_device, graph_costs
from workbench.values.graph import Graph
from workbench.values.schedule import Schedule, build_schedule, check_max_streams

_EPS = 1e-9


def schedule_critical_path(graph: Graph, *, device: str | DeviceSpec = "h100",
                           max_streams: int | None = 4) -> Schedule:
    """Upward-rank list scheduling with insertion into idle gaps (see the module docstring).

    ``max_streams=None`` opens a new stream whenever no existing one can start the op as early.

    Examples
    --------
    >>> g = Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
    ...                      durations={"a": 10, "b": 30, "c": 10, "d": 10})
    >>> s = schedule_critical_path(g, max_streams=2)
    >>> s.streams
    {0: ('a', 'b', 'd'), 1: ('c',)}
    >>> s.notes["start_us"]
    {'a': 0.0, 'b': 10.0, 'c': 10.0, 'd': 40.0}
    """
    max_streams = check_max_streams(max_streams, len(graph))
    spec = get_device(device)
    n = len(graph)
    dur = [c.alone_us for c in graph_costs(graph, spec)]  # the simulator's kernels
    rank = bottom_levels(graph, dur)
    topo_pos = topo_positions(graph)
    key = [(-rank[i], -dur[i], topo_pos[i]) for i in range(n)]
    start, end, stream = _list_schedule(graph, dur, [0] * n, [max_streams], key)
    ids = graph.op_ids
    notes = {
        "rank_us": {ids[i]: rank[i] for i in range(n)},
        "start_us": {ids[i]: start[i] for i in range(n)},
        "estimated_makespan_us": max(end, default=0.0),
    }
    return placement_schedule(graph, "critical_path", start, end, stream,
                              options={"device": spec.name, "max_streams": max_streams},
                              notes=notes, max_streams=max_streams)


# ---------------------------------------------------------------------------------- shared helpers
def topo_positions(graph: Graph) -> list[int]:
    """Position of each op (by index) in ``graph.topo_order()``."""
    pos = [0] * len(graph)
    for p, i in enumerate(graph.topo_index):
        pos[i] = p
    return pos


def bottom_levels(graph: Graph, dur: Sequence[float]) -> list[float]:
    """Longest duration-weighted path from each op (itself included) to a sink.  O(V + E)."""
    succ = graph.succ_index
    bl = [0.0] * len(graph)
    for i in reversed(graph.topo_index):
        bl[i] = dur[i] + max((bl[j] for j in succ[i]), default=0.0)
    return bl


class _Timeline:
    """The busy intervals of one stream (sorted, disjoint) and the first-fit gap search.

    Besides the intervals it keeps the *idle gaps* between them that have a positive length
    (``gap_starts[k]``: the end of the intervals before the gap, ``-inf`` for the time before the
    first one; ``gap_ends[k]``: the start of the next one), sorted, and the end of the last
    interval.  A search for an op longer than a few
    ``_EPS`` visits only the gaps after ``ready`` (none at all on a stream busy without a break:
    a fan-in of 20,000 ops was quadratic when every interval was visited), and returns exactly
    what the scan over every interval would (:meth:`_scan`, still used for near-zero durations,
    which may also fit where two intervals touch).  O(log n + gaps visited) per search, O(n) per
    insertion (list inserts, memmove-fast).
    """

    __slots__ = ("_starts", "_ends", "_items", "_pending", "count", "gap_starts", "gap_ends",
                 "last_end")

    def __init__(self) -> None:
        self._starts: list[float] = []
        self._ends: list[float] = []
        # every interval as (start, 0, -seq, end) when empty, (start, 1, seq, end) otherwise: the
        # order of one sorted insertion each (an empty one before the others of its start, the
        # newest first; the others after, the oldest first), sorted only when the intervals are
        # read (near-zero durations): an insertion into a sorted list moved O(n) entries
        self._items: list[tuple[float, int, int, float]] = []
        self._pending = False
        self.count = 0
        self.gap_starts: list[float] = []
        self.gap_ends: list[float] = []
        self.last_end = float("-inf")

    @property
    def starts(self) -> list[float]:
        """The intervals' starts, sorted (built when asked after insertions)."""
        self._flush()
        return self._starts

    @property
    def ends(self) -> list[float]:
        """The intervals' ends, in the order of :attr:`starts`."""
        self._flush()
        return self._ends

    def _flush(self) -> None:
        if self._pending:
            self._items.sort()  # a sorted run and the new ones: O(n + new · log new)
            self._starts = [item[0] for item in self._items]
            self._ends = [item[3] for item in self._items]
            self._pending = False

    def _tiny(self, dur: float) -> bool:
        """Whether ``dur`` is so short that it may fit where intervals touch or overlap by
        ``_EPS`` (the margin also covers rounding at the magnitude of the times)."""
        return dur <= 4 * _EPS + 1e-14 * abs(self.last_end if self.count else 0.0)

    def earliest(self, ready: float, dur: float) -> float:
        """The earliest start ``t >= ready`` with ``[t, t + dur)`` free on this stream."""
        last_end = self.last_end
        if ready >= last_end:  # idle from ``ready`` on (or empty: -inf)
            return ready
        if dur <= 4 * _EPS + 1e-14 * abs(last_end):  # _tiny(dur), inlined: the hot path
            return self._scan(ready, dur)
        gap_starts, gap_ends = self.gap_starts, self.gap_ends
        for k in range(bisect_right(gap_ends, ready), len(gap_ends)):  # the hot loop
            t = gap_starts[k]
            if t < ready:
                t = ready
            if t + dur <= gap_ends[k] + _EPS:
                return t
        return last_end  # after the last interval (``ready`` is before its end)

    def _scan(self, ready: float, dur: float) -> float:
        """:meth:`earliest` by visiting every interval after ``ready``.  O(n)."""
        starts, ends = self.starts, self.ends
        t = ready
        for k in range(bisect_right(ends, t), len(starts)):
            if t + dur <= starts[k] + _EPS:
                return t
            end = ends[k]
            if end > t:
                t = end
        return t

    def insert(self, start: float, end: float) -> None:
        self.count += 1
        seq = self.count
        self._items.append((start, 0, -seq, end) if end <= start else (start, 1, seq, end))
        self._pending = True
        if seq == 1:  # the time before the first interval is a gap too
            self.gap_starts.append(float("-inf"))
            self.gap_ends.append(start)
            self.last_end = end
            return
        if start >= self.last_end:  # after every interval: maybe a new gap before it
            if start > self.last_end:
                self.gap_starts.append(self.last_end)
                self.gap_ends.append(start)
            self.last_end = end
            return
        self.last_end = max(self.last_end, end)
        g = bisect_right(self.gap_ends, start)  # the gap it may fall into
        if g == len(self.gap_ends) or self.gap_starts[g] > start:
            return  # where intervals touch (a near-zero duration): no gap changes
        gap_start, gap_end = self.gap_starts[g], self.gap_ends[g]
        del self.gap_starts[g], self.gap_ends[g]
        if end < gap_end:
            self.gap_starts.insert(g, end)
            self.gap_ends.insert(g, gap_end)
        if start > gap_start:
            self.gap_starts.insert(g, gap_start)
            self.gap_ends.insert(g, start)

    @property
    def busy_us(self) -> float:
        return sum(e - s for s, e in zip(self.starts, self.ends, strict=True))


def _list_schedule(graph: Graph, dur: Sequence[float], types: Sequence[int],
                   streams_per_type: Sequence[int | None],
                   key: Sequence[Any] | Callable[[int], Any],
                   on_placed: Callable[[int], Sequence[int]] | None = None,
                   ) -> tuple[list[float], list[float], list[int]]:
    """List scheduling with insertion into the earliest idle gap.

    Ready ops are taken smallest key first: ``key[i]`` (a sequence of distinct keys: ranked
    once, so the heap holds integers) or ``key(i)``, which may change while scheduling: after an
    op is placed, ``on_placed(i)`` returns the ops whose key changed, and stale heap entries are
    skipped.  Op ``i`` may run on the streams of its type ``types[i]`` (``streams_per_type[t]``
    of them, numbered after those of lower types; ``None``: a new stream whenever that starts the
    op sooner).  Returns start, end and stream per op (by index).
    """
    n = len(graph)
    pred, succ = graph.pred_index, graph.succ_index
    lines: list[list[_Timeline]] = [
        [_Timeline() for _ in range(k)] if k is not None else [] for k in streams_per_type]
    offset = [0] * len(streams_per_type)
    unbounded_base = sum(k for k in streams_per_type if k is not None)
    for t in range(1, len(streams_per_type)):
        offset[t] = offset[t - 1] + (streams_per_type[t - 1] or 0)
    start, end = [0.0] * n, [0.0] * n
    stream = [-1] * n
    waiting = [len(p) for p in pred]
    ready = [False] * n
    if callable(key):
        key_of: Callable[[int], Any] = key
        by_rank: list[int] | None = None

        def entry(i: int) -> Any:
            return (key_of(i), i)
    else:  # static keys: the heap holds each op's rank (an int) instead of its key
        by_rank = sorted(range(n), key=key.__getitem__)
        rank = [0] * n
        for r, i in enumerate(by_rank):
            rank[i] = r
        entry = rank.__getitem__  # type: ignore[assignment]  # list.__getitem__ is overloaded
    heap: list[Any] = []
    push, pop = heapq.heappush, heapq.heappop
    for i in range(n):
        if waiting[i] == 0:
            ready[i] = True
            push(heap, entry(i))
    done = [False] * n
    unbounded_ids: dict[tuple[int, int], int] = {}
    end_of = end.__getitem__
    while heap:
        if by_rank is not None:
            i = by_rank[pop(heap)]  # pushed once each: never stale
        else:
            k, i = pop(heap)
            if done[i] or k != key_of(i):
                continue
        done[i] = True
        t = types[i]
        preds = pred[i]
        est = max(map(end_of, preds)) if preds else 0.0
        d = dur[i]
        best_s, best_line = None, -1
        for li, line in enumerate(lines[t]):
            s = line.earliest(est, d)
            if best_s is None or s < best_s - _EPS:
                best_s, best_line = s, li
                if s <= est:  # no later stream can start it sooner
                    break
        if best_s is None or (streams_per_type[t] is None and best_s > est + _EPS):
            lines[t].append(_Timeline())
            best_s, best_line = est, len(lines[t]) - 1
        start[i], end[i] = best_s, best_s + d
        lines[t][best_line].insert(best_s, best_s + d)
        if streams_per_type[t] is None:
            stream[i] = unbounded_ids.setdefault(
                (t, best_line), unbounded_base + 10**6 * t + best_line)
        else:
            stream[i] = offset[t] + best_line
        if on_placed is not None:
            for j in on_placed(i):
                if ready[j] and not done[j]:
                    push(heap, entry(j))
        for j in succ[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                ready[j] = True
                push(heap, entry(j))
    return start, end, stream


def placement_schedule(graph: Graph, policy: str, start: Sequence[float], end: Sequence[float],
                       stream: Sequence[int], *, options: Mapping[str, Any],
                       notes: Mapping[str, Any], max_streams: int | None) -> Schedule:
    """Turn a timed placement into a Schedule: issue order = ops sorted by (start, end, topological
    position); each stream runs its ops in that order; syncs by ``insert_syncs``."""
    topo_pos = topo_positions(graph)
    ids = graph.op_ids
    order = sorted(range(len(graph)), key=lambda i: (start[i], end[i], topo_pos[i]))
    stream_of = {ids[i]: stream[i] for i in order}
    return build_schedule(graph, policy, stream_of, [ids[i] for i in order],
                          max_streams=max_streams, options=options, notes=notes)
