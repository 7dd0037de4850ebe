"""Stream tails: "has stream ``s`` deterministically finished before node ``v``?" for streams whose
ops are totally ordered by ancestry (NNC and RAF ASAP both build such streams), at any scale.

Per visited node a vector clock holds the highest stream position among its ancestors on each
stream; stream ``s``'s last op (its *tail*) is an ancestor of ``v`` iff ``clock(v)[s] >= position
of the tail``.  Dense clocks cost O(V · S) time and O(frontier · S) memory, which at a million ops
(tens of thousands of streams) is tens of GB.  So clocks are *compact*:

* only *active* streams have a column; every other stream ``s`` has one value ``base[s]`` shared
  by every clock (live or future): a new clock is the maximum of its predecessors' clocks, so a
  column on which all live clocks agree stays that value until a node is placed on the stream;
* a column is opened when a node is placed on its stream, and *compaction* (whenever the number
  of columns doubles) closes every column on which all live clocks agree, storing its value in
  ``base``; clocks shorter than the layout read missing columns as their ``base``;
* a closed stream whose shared value reaches its tail is finished for every node now and later:
  it waits in two lazy heaps (by creation order for NNC, by the order its chain ended for ASAP).

Queries then cost O(active columns) plus heap work.  Complexity: O((V + E) · A) with A the
active columns (a few times the graph's width, not the stream count).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable

import numpy as np


class StreamTails:
    """Streams as chains, their tails and the ancestor clocks (module docstring).

    ``stream_of``, ``position`` (a node's index on its stream), ``tail_node``, ``n_streams`` are
    read by the schedulers; :meth:`pick_first` (NNC) and :meth:`pick_latest_ended` (ASAP) answer
    "which finished stream to recycle"; :meth:`finished_streams` lists them all (small graphs,
    tests).
    """

    def __init__(self, pred: list[list[int]], succ: list[list[int]]) -> None:
        self.pred = pred
        self.pending = [len(s) for s in succ]
        self.clock: dict[int, np.ndarray] = {}
        self.tail_node: list[int] = []
        self.tail_pos: list[int] = []
        self.length: list[int] = []
        self.base: list[int] = []            # shared value of a closed stream's column
        self.col_of: list[int] = []          # stream -> column, -1 when closed
        self.cols: list[int] = []            # column -> stream
        self.defaults = np.zeros(0, dtype=np.int64)   # base of each column's stream
        self.col_tail = np.zeros(0, dtype=np.int64)   # tail position of each column's stream
        self.compacted_at = 64
        self.stream_of: dict[int, int] = {}
        self.position: dict[int, int] = {}
        self._tails: set[int] = set()
        self.ended_rank: list[int] = []      # ASAP: order in which the stream's chain ended
        self._first_heap: list[int] = []     # closed streams finished for everyone, by id
        self._ended_heap: list[tuple[int, int]] = []  # the same, by -ended_rank

    # ------------------------------------------------------------------ streams
    @property
    def n_streams(self) -> int:
        return len(self.length)

    def new_stream(self) -> int:
        s = len(self.length)
        self.length.append(0)
        self.tail_node.append(-1)
        self.tail_pos.append(-1)
        self.base.append(-1)
        self.col_of.append(-1)
        self.ended_rank.append(-1)
        return s

    def place(self, node: int, stream: int) -> None:
        """Append ``node`` to ``stream`` (its stream position is fixed now)."""
        self.stream_of[node] = stream
        self.position[node] = self.length[stream]
        self.length[stream] += 1
        self._open(stream)

    def set_tail(self, stream: int, node: int) -> None:
        old = self.tail_node[stream]
        self.tail_node[stream] = node
        self._tails.discard(old)
        self._tails.add(node)
        self.tail_pos[stream] = self.position[node]
        col = self.col_of[stream]
        if col >= 0:
            self.col_tail[col] = self.tail_pos[stream]
        if old >= 0 and old != node and self.pending[old] <= 0:
            self.clock.pop(old, None)

    def mark_ended(self, stream: int, rank: int) -> None:
        """ASAP: the stream's chain ended (``rank``: how many chains ended before it)."""
        self.ended_rank[stream] = rank
        if self._closed_finished(stream):
            heapq.heappush(self._ended_heap, (-rank, stream))

    def unmark_ended(self, stream: int) -> None:
        self.ended_rank[stream] = -1

    # ------------------------------------------------------------------ clocks
    def clock_of(self, node: int, extra: Iterable[int] = ()) -> np.ndarray:
        """Clock of ``node`` merged from its (visited) predecessors and ``extra`` ones."""
        clock = self.defaults.copy()
        for p in (*self.pred[node], *extra):
            c = self.clock[p]
            np.maximum(clock[: len(c)], c, out=clock[: len(c)])
        return clock

    def visit(self, node: int, clock: np.ndarray) -> None:
        """Record the visited ``node`` (already placed); free clocks nobody needs any more."""
        s = self.stream_of[node]
        col = self.col_of[s]
        if len(clock) <= col:  # columns were opened after the clock was built
            clock = np.concatenate([clock, self.defaults[len(clock):]])
        if clock[col] < self.position[node]:
            clock[col] = self.position[node]
        self.clock[node] = clock
        for p in self.pred[node]:
            self.pending[p] -= 1
            if self.pending[p] <= 0 and p not in self._tails:
                self.clock.pop(p, None)
        if len(self.cols) > 2 * self.compacted_at:
            self._compact()

    # ------------------------------------------------------------------ queries
    def is_finished(self, stream: int, clock: np.ndarray) -> bool:
        """Is ``stream``'s tail an ancestor of the node with ``clock``?"""
        tail = self.tail_pos[stream]
        if tail < 0:
            return False
        col = self.col_of[stream]
        if col < 0:
            return self.base[stream] >= tail
        value = clock[col] if col < len(clock) else self.defaults[col]
        return bool(value >= tail)

    def finished_streams(self, clock: np.ndarray) -> list[int]:
        """Every stream whose tail is an ancestor of the node with ``clock``, in creation
        order.  O(S): for small graphs and tests; the schedulers use the pick methods."""
        return [s for s in range(self.n_streams) if self.is_finished(s, clock)]

    def pick_first(self, clock: np.ndarray, prefer: Callable[[int], bool] | None = None,
                   all_preferred: bool = False) -> int | None:
        """NNC's recycling choice: the first finished stream in creation order for which
        ``prefer`` holds, else the first finished one.  ``all_preferred``: every stream
        satisfies ``prefer`` (then the first finished stream is the answer at once)."""
        active = self._active_finished(clock)
        first_closed = self._first_closed()
        if prefer is None or all_preferred:
            options = [s for s in (active[0] if active else None, first_closed) if s is not None]
            return min(options) if options else None
        candidates = sorted(set(active) | self._closed_finished_all())
        for s in candidates:
            if prefer(s):
                return s
        return candidates[0] if candidates else None

    def pick_latest_ended(self, clock: np.ndarray) -> int | None:
        """ASAP's recycling choice: among finished streams whose chain has ended, the one whose
        chain ended last."""
        best, best_rank = None, -1
        for s in self._active_finished(clock):
            if self.ended_rank[s] > best_rank:
                best, best_rank = s, self.ended_rank[s]
        top = self._latest_closed()
        if top is not None and self.ended_rank[top] > best_rank:
            best = top
        return best

    # ------------------------------------------------------------------ internals
    def _active_finished(self, clock: np.ndarray) -> list[int]:
        n = len(self.cols)
        if not n:
            return []
        values = clock if len(clock) == n else np.concatenate([clock, self.defaults[len(clock):]])
        hits = np.nonzero((self.col_tail >= 0) & (values >= self.col_tail))[0]
        return sorted(self.cols[j] for j in hits.tolist())

    def _closed_finished(self, stream: int) -> bool:
        tail = self.tail_pos[stream]
        return self.col_of[stream] < 0 and tail >= 0 and self.base[stream] >= tail

    def _closed_finished_all(self) -> set[int]:
        return {s for s in self._first_heap if self._closed_finished(s)}

    def _first_closed(self) -> int | None:
        """The first (by id) closed stream finished for everyone; stale entries dropped."""
        heap = self._first_heap
        while heap and not self._closed_finished(heap[0]):
            heapq.heappop(heap)
        return heap[0] if heap else None

    def _latest_closed(self) -> int | None:
        """The closed stream finished for everyone whose chain ended last; stale entries
        dropped (reopened, reused, or ended again since)."""
        heap = self._ended_heap
        while heap:
            rank, s = -heap[0][0], heap[0][1]
            if self._closed_finished(s) and self.ended_rank[s] == rank:
                return s
            heapq.heappop(heap)
        return None

    def _open(self, stream: int) -> None:
        if self.col_of[stream] >= 0:
            return
        self.col_of[stream] = len(self.cols)
        self.cols.append(stream)
        self.defaults = np.append(self.defaults, self.base[stream])
        self.col_tail = np.append(self.col_tail, self.tail_pos[stream])

    def _compact(self) -> None:
        """Close every column on which all live clocks agree (module docstring)."""
        n = len(self.cols)
        live = list(self.clock.values())
        lo = self.defaults.copy()
        hi = self.defaults.copy()
        for c in live:
            k = len(c)
            np.minimum(lo[:k], c, out=lo[:k])
            np.maximum(hi[:k], c, out=hi[:k])
        keep = lo != hi
        for j in np.nonzero(~keep)[0].tolist():
            s = self.cols[j]
            self.base[s] = int(lo[j])
            self.col_of[s] = -1
            if self._closed_finished(s):
                heapq.heappush(self._first_heap, s)
                if self.ended_rank[s] >= 0:
                    heapq.heappush(self._ended_heap, (-self.ended_rank[s], s))
        kept = np.nonzero(keep)[0]
        self.cols = [self.cols[j] for j in kept.tolist()]
        for j, s in enumerate(self.cols):
            self.col_of[s] = j
        for node, c in self.clock.items():
            full = c if len(c) == n else np.concatenate([c, self.defaults[len(c):]])
            self.clock[node] = full[kept]
        self.defaults = self.defaults[kept]
        self.col_tail = self.col_tail[kept]
        self.compacted_at = max(64, len(self.cols))
