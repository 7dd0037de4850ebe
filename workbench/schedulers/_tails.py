"""Stream tails: "has stream ``s`` deterministically finished before node ``v``?" for streams whose
ops are totally ordered by ancestry (NNC builds such streams), at any scale.

Per visited node a vector clock holds the highest stream position among its ancestors on each
stream (-1: none); stream ``s``'s last op (its *tail*) is an ancestor of ``v`` iff
``clock(v)[s] >= position of the tail``.  Dense clocks cost O(V · S) time and O(live · S) memory,
which at a million ops (tens of thousands of streams) is tens of GB.  So clocks are *compact*:

* a clock is kept only while the node has unvisited successors (a sink keeps none; NNC over its
  stream cap also keeps the tails' clocks, ``keep_tail_clocks``, to order a tail before a node);
* only *active* streams have a column.  *Compaction* (whenever the number of columns doubles)
  closes every column on which all live clocks agree and on which no placed node is still
  unvisited, storing the shared value in ``base[s]`` and the visit count in ``closed_at[s]``;
* a closed value is exact by a cut argument: a node visited later that has an ancestor visited
  before the compaction reaches it through a node live at the compaction, so its value is
  ``base[s]``; a node whose ancestors were all visited later (its *lineage* starts after the
  compaction: a late source's descendants) has -1.  Each clock carries its lineage start (the
  earliest visit among its ancestors); when a closed stream is reopened, live clocks of a later
  lineage get an explicit -1 in the new column, every other clock reads the column's default;
* a closed stream whose base reaches its tail is finished for every node of an earlier lineage:
  it waits in lazy heaps (by creation order, and per label); a query from a later lineage scans
  the heap instead of reading its top.

Queries then cost O(active columns) plus heap work.  Complexity: O((V + E) · A) with A the
active columns (a few times the graph's width, not the stream count).

A kept clock is stored *sparse*: the columns where it differs from ``defaults`` (index and
value arrays).  A wide fan-in (20,000 sources, each on its own stream, all live until the sink)
has A = 20,000 open columns that no compaction can close, and dense kept clocks cost
20,000² · 8 bytes (6.9 GB, issue 27); sparse ones hold one entry each.  Memory is
O(A + Σ differing entries) <= O(live · A), and merging a node's predecessors costs
O(A + their entries).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable

import numpy as np


class StreamTails:
    """Streams as chains, their tails and the ancestor clocks (module docstring).

    ``stream_of``, ``position`` (a node's index on its stream), ``tail_node``, ``n_streams`` are
    read by NNC; :meth:`pick_first` answers "which finished stream to recycle" for the node of
    the last :meth:`clock_of`;
    :meth:`finished_streams` lists them all (small graphs, tests).
    """

    def __init__(self, pred: list[list[int]], succ: list[list[int]], *,
                 keep_tail_clocks: bool = False,
                 labels: Callable[[int], Iterable[str]] | None = None) -> None:
        self.pred = pred
        self.keep_tail_clocks = keep_tail_clocks
        self.labels = labels                 # a stream's labels (NNC: the op types it ran)
        self.pending = [len(s) for s in succ]
        self.clock: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # sparse: (columns, values)
        self.lineage: dict[int, int] = {}    # node -> earliest visit among its ancestors
        self.visits = 0
        self._query_lineage = 0              # lineage of the node of the last clock_of
        self.tail_node: list[int] = []
        self.tail_pos: list[int] = []
        self.length: list[int] = []
        self.unvisited: list[int] = []       # placed but not yet visited nodes per stream
        self.base: list[int] = []            # shared value of a closed stream's column
        self.closed_at: list[int] = []       # visit count when the stream's column closed
        self.col_of: list[int] = []          # stream -> column, -1 when closed
        self.cols: list[int] = []            # column -> stream
        self.defaults = np.zeros(0, dtype=np.int64)   # what a clock without the column reads
        self.col_tail = np.zeros(0, dtype=np.int64)   # tail position of each column's stream
        self.compacted_at = 64
        self.stream_of: dict[int, int] = {}
        self.position: dict[int, int] = {}
        self._tails: set[int] = set()
        self._first_heap: list[int] = []     # closed finished streams, by id
        self._first_by_label: dict[str, list[int]] = {}  # the same, per label

    # ------------------------------------------------------------------ streams
    @property
    def n_streams(self) -> int:
        return len(self.length)

    def new_stream(self) -> int:
        s = len(self.length)
        for column in (self.length, self.unvisited):
            column.append(0)
        for column in (self.tail_node, self.tail_pos, self.base, self.col_of):
            column.append(-1)
        self.closed_at.append(0)
        return s

    def place(self, node: int, stream: int) -> None:
        """Append ``node`` to ``stream`` (its stream position is fixed now)."""
        self.stream_of[node] = stream
        self.position[node] = self.length[stream]
        self.length[stream] += 1
        self.unvisited[stream] += 1
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
        if self.keep_tail_clocks and old >= 0 and old != node and self.pending[old] <= 0:
            self._drop(old)

    # ------------------------------------------------------------------ clocks
    def clock_of(self, node: int, extra: Iterable[int] = ()) -> np.ndarray:
        """Clock of ``node`` merged from its (visited) predecessors and ``extra`` ones; the
        queries that follow answer for ``node``."""
        n = len(self.cols)
        parents = (*self.pred[node], *extra)
        lineage = self.visits
        for p in parents:
            lineage = min(lineage, self.lineage[p])
        self._query_lineage = lineage
        if not parents:
            return np.full(n, -1, dtype=np.int64)
        stored = [self.clock[p] for p in parents]
        if len(stored) == 1:
            clock = self.defaults.copy()
            clock[stored[0][0]] = stored[0][1]
            return clock
        # per column: the max of the explicit entries, and the default where a parent has none
        idx = np.concatenate([c[0] for c in stored])
        vals = np.concatenate([c[1] for c in stored])
        clock = np.full(n, -1, dtype=np.int64)
        np.maximum.at(clock, idx, vals)
        some_default = np.bincount(idx, minlength=n) < len(stored)
        clock[some_default] = np.maximum(clock[some_default], self.defaults[some_default])
        return clock

    def visit(self, node: int, clock: np.ndarray) -> None:
        """Record the visited ``node`` (already placed); free clocks nobody needs any more."""
        s = self.stream_of[node]
        col = self.col_of[s]
        if len(clock) <= col:  # columns were opened after the clock was built
            clock = np.concatenate([clock, self.defaults[len(clock):]])
        if clock[col] < self.position[node]:
            clock[col] = self.position[node]
        self.unvisited[s] -= 1
        self.visits += 1
        if self.pending[node] > 0 or (self.keep_tail_clocks and node in self._tails):
            if len(clock) < len(self.defaults):
                clock = np.concatenate([clock, self.defaults[len(clock):]])
            differ = np.flatnonzero(clock != self.defaults)
            self.clock[node] = (differ, clock[differ])
            self.lineage[node] = self._query_lineage
        for p in self.pred[node]:
            self.pending[p] -= 1
            if self.pending[p] <= 0 and not (self.keep_tail_clocks and p in self._tails):
                self._drop(p)
        if len(self.cols) > 2 * self.compacted_at:
            self._compact()

    def _drop(self, node: int) -> None:
        self.clock.pop(node, None)
        self.lineage.pop(node, None)

    # ------------------------------------------------------------------ queries
    def is_finished(self, stream: int, clock: np.ndarray) -> bool:
        """Is ``stream``'s tail an ancestor of the node with ``clock``?"""
        tail = self.tail_pos[stream]
        if tail < 0:
            return False
        col = self.col_of[stream]
        if col < 0:
            return self._closed_finished(stream) and self._reads_base(stream)
        value = clock[col] if col < len(clock) else self.defaults[col]
        return bool(value >= tail)

    def finished_streams(self, clock: np.ndarray) -> list[int]:
        """Every stream whose tail is an ancestor of the node with ``clock``, in creation
        order.  O(S): for small graphs and tests; the schedulers use the pick methods."""
        return [s for s in range(self.n_streams) if self.is_finished(s, clock)]

    def pick_first(self, clock: np.ndarray, label: str | None = None) -> int | None:
        """NNC's recycling choice: the first finished stream in creation order that carries
        ``label`` (see ``labels``), else the first finished one.  O(A) plus heap work."""
        active = self._active_finished(clock)
        if label is not None and self.labels is not None:
            labelled = [s for s in active if label in self.labels(s)][:1]
            closed = self._first_closed(self._first_by_label.get(label, []))
            options = [s for s in (*labelled, closed) if s is not None]
            if options:
                return min(options)
        closed = self._first_closed(self._first_heap)
        options = [s for s in (active[0] if active else None, closed) if s is not None]
        return min(options) if options else None

    # ------------------------------------------------------------------ internals
    def _active_finished(self, clock: np.ndarray) -> list[int]:
        n = len(self.cols)
        if not n:
            return []
        values = clock if len(clock) == n else np.concatenate([clock, self.defaults[len(clock):]])
        hits = np.nonzero((self.col_tail >= 0) & (values >= self.col_tail))[0]
        return sorted(self.cols[j] for j in hits.tolist())

    def _closed_finished(self, stream: int) -> bool:
        """Closed, and its shared value reaches its tail (finished for earlier lineages)."""
        tail = self.tail_pos[stream]
        return self.col_of[stream] < 0 and tail >= 0 and self.base[stream] >= tail

    def _reads_base(self, stream: int) -> bool:
        """Does the queried node's clock read ``base[stream]`` (module docstring)?"""
        return self._query_lineage < self.closed_at[stream]

    def _first_closed(self, heap: list[int]) -> int | None:
        """The first (by id) closed stream of ``heap`` finished for the queried node; entries
        of reused streams are dropped, a later lineage scans the heap."""
        while heap and not self._closed_finished(heap[0]):
            heapq.heappop(heap)
        if not heap or self._reads_base(heap[0]):
            return heap[0] if heap else None
        return min((s for s in heap if self._closed_finished(s) and self._reads_base(s)),
                   default=None)

    def _open(self, stream: int) -> None:
        if self.col_of[stream] >= 0:
            return
        col = len(self.cols)
        self.col_of[stream] = col
        self.cols.append(stream)
        self.defaults = np.append(self.defaults, self.base[stream])
        self.col_tail = np.append(self.col_tail, self.tail_pos[stream])
        if self.base[stream] < 0:
            return
        for node, (idx, vals) in self.clock.items():  # a reopened stream: later lineages read -1
            if self.lineage[node] >= self.closed_at[stream]:
                self.clock[node] = (np.append(idx, col), np.append(vals, -1))

    def _compact(self) -> None:
        """Close every column on which all live clocks agree and no placed node is unvisited
        (module docstring)."""
        n = len(self.cols)
        live = list(self.clock.values())
        if live:
            idx = np.concatenate([c[0] for c in live])
            vals = np.concatenate([c[1] for c in live])
            big = np.iinfo(np.int64).max
            lo, hi = np.full(n, big, dtype=np.int64), np.full(n, -big, dtype=np.int64)
            np.minimum.at(lo, idx, vals)
            np.maximum.at(hi, idx, vals)
            some_default = np.bincount(idx, minlength=n) < len(live)
            lo[some_default] = np.minimum(lo[some_default], self.defaults[some_default])
            hi[some_default] = np.maximum(hi[some_default], self.defaults[some_default])
        else:
            lo = hi = np.full(n, -1, dtype=np.int64)
        busy = np.array([self.unvisited[s] > 0 for s in self.cols], dtype=bool)
        keep = (lo != hi) | busy
        for j in np.nonzero(~keep)[0].tolist():
            s = self.cols[j]
            self.base[s] = int(lo[j])
            self.closed_at[s] = self.visits
            self.col_of[s] = -1
            if self._closed_finished(s):
                heapq.heappush(self._first_heap, s)
                for label in self.labels(s) if self.labels is not None else ():
                    heapq.heappush(self._first_by_label.setdefault(label, []), s)
        kept = np.nonzero(keep)[0]
        self.cols = [self.cols[j] for j in kept.tolist()]
        for j, s in enumerate(self.cols):
            self.col_of[s] = j
        new_col = np.full(n, -1, dtype=np.int64)
        new_col[kept] = np.arange(len(kept))
        for node, (idx, vals) in list(self.clock.items()):
            moved = new_col[idx]
            stays = moved >= 0
            self.clock[node] = (moved[stays], vals[stays])
        self.defaults = self.defaults[kept]
        self.col_tail = self.col_tail[kept]
        self.compacted_at = max(64, len(self.cols))
