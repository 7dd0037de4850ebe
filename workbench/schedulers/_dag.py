"""DAG helpers shared by the schedulers: transitive reduction, depths, visit orders, ancestor
clocks.

All functions work on the integer views of a :class:`~workbench.graph.Graph` (``succ_index``,
``pred_index``, ``topo_index``) so they stay near-linear on graphs with 100k ops.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from workbench.graph import Graph


def transitive_reduction(graph: Graph) -> tuple[list[list[int]], list[list[int]]]:
    """Successor and predecessor lists (integer indices) without implied edges.

    An edge ``v -> d`` is dropped when another direct successor ``d'`` of ``v`` already reaches
    ``d``, which is exactly the transitive reduction (NNC's per-node edge reduction, RAF's
    ``prune_redundant`` and Nimble's minimum equivalent graph all compute this).  Reachability is
    kept as bitsets relative to each node's topological position, truncated to the longest edge span
    ``H``: O(E · H / 64) word operations, i.e. near-linear when edges are local (every CNN and the
    benchmark DAGs), O(V · E / 64) in the worst case.  Order of the lists is preserved.
    """
    n = len(graph)
    succ, pred = graph.succ_index, graph.pred_index
    topo = graph.topo_index
    pos = [0] * n
    for p, i in enumerate(topo):
        pos[i] = p
    span = max((pos[j] - pos[i] for i in range(n) for j in succ[i]), default=0)
    mask = (1 << (span + 1)) - 1
    reach: list[int] = [0] * n  # bit k: the node at topo position pos[i] + k is reachable from i
    pending = [len(pred[i]) for i in range(n)]
    kept_succ: list[list[int]] = [[] for _ in range(n)]
    for i in reversed(topo):
        base = pos[i]
        combined = 0
        for j in succ[i]:
            combined |= reach[j] << (pos[j] - base)
        mine = combined
        kept = []
        for j in succ[i]:
            bit = 1 << (pos[j] - base)
            if not combined & bit:
                kept.append(j)
            mine |= bit
        kept_succ[i] = kept
        reach[i] = mine & mask
        for j in succ[i]:
            pending[j] -= 1
            if pending[j] == 0:
                reach[j] = 0  # every predecessor has used it: free the memory
    kept_pred: list[list[int]] = [[] for _ in range(n)]
    kept_set = [set(k) for k in kept_succ]
    for j in range(n):
        kept_pred[j] = [i for i in pred[j] if j in kept_set[i]]
    return kept_succ, kept_pred


def longest_chain_after(order: list[int] | tuple[int, ...], succ: list[list[int]]) -> list[int]:
    """Number of edges on the longest path starting at each node (0 for sinks); reverse traversal
    over ``order`` (a topological order).  This is NNC's rank.  O(V + E)."""
    rank = [0] * len(succ)
    for i in reversed(order):
        rank[i] = 1 + max((rank[j] for j in succ[i]), default=-1)
    return rank


def nnc_visit_order(graph: Graph) -> list[int]:
    """NNC's ``CCV_NNC_GRAPH_VISIT`` order: Kahn's algorithm in waves, with the single-child
    shortcut (a node with exactly one successor that becomes ready is visited at once, so chains
    are walked depth-first).  Sources start in program order; successors in program order.
    O(V + E).
    """
    succ, pred = graph.succ_index, graph.pred_index
    indeg = [len(p) for p in pred]
    wave = [i for i in range(len(succ)) if indeg[i] == 0]
    order: list[int] = []
    while wave:
        next_wave: list[int] = []
        for node in wave:
            while True:
                order.append(node)
                ready = []
                for j in succ[node]:
                    indeg[j] -= 1
                    if indeg[j] == 0:
                        ready.append(j)
                if len(succ[node]) == 1 and ready:
                    node = ready[0]
                    continue
                next_wave.extend(ready)
                break
        wave = next_wave
    return order


def post_dfs_order(graph: Graph, *, pred: list[list[int]] | None = None) -> list[int]:
    """Post-order DFS from the sinks (in program order), visiting inputs in argument order: the
    order TVM/RAF call ``post_dfs_order`` (inputs before consumers).  Iterative.  O(V + E)."""
    pred = graph.pred_index if pred is None else pred
    n = len(pred)
    has_succ = [False] * n
    for j in range(n):
        for i in pred[j]:
            has_succ[i] = True
    roots = [i for i in range(n) if not has_succ[i]]
    state = [0] * n  # 0 new, 1 open, 2 done
    order: list[int] = []
    for root in roots:
        if state[root]:
            continue
        stack = [(root, 0)]
        state[root] = 1
        while stack:
            node, k = stack[-1]
            if k < len(pred[node]):
                stack[-1] = (node, k + 1)
                child = pred[node][k]
                if state[child] == 0:
                    state[child] = 1
                    stack.append((child, 0))
            else:
                stack.pop()
                state[node] = 2
                order.append(node)
    return order


def mindspore_bfs_order(graph: Graph) -> list[int]:
    """MindSpore's BFS execution order (``exec_order_builder.cc``), simplified to one device.

    Kahn's algorithm with a FIFO queue started from the sources in program order; when a node's
    successor becomes ready it goes to the *front* of the queue if the node has a single user (so
    chains stay together), otherwise to the back.  Communication-op delays are not modelled (the
    workbench has no communication ops).  O(V + E).
    """
    succ, pred = graph.succ_index, graph.pred_index
    indeg = [len(p) for p in pred]
    queue = deque(i for i in range(len(succ)) if indeg[i] == 0)
    order = []
    while queue:
        node = queue.popleft()
        order.append(node)
        single_user = len(succ[node]) == 1
        for j in succ[node]:
            indeg[j] -= 1
            if indeg[j] == 0:
                if single_user:
                    queue.appendleft(j)
                else:
                    queue.append(j)
    return order


class StreamTails:
    """"Has stream ``s`` deterministically finished before node ``v``?" for streams whose ops are
    totally ordered by ancestry (NNC and RAF ASAP both build such streams).

    Keeps, per visited node, a vector clock: the highest stream position among its ancestors on
    each stream.  Because a stream's ops form a chain of ancestors, stream ``s``'s last op is an
    ancestor of ``v`` iff ``clock(v)[s] >= position of that last op``.  A clock is freed once every
    successor has read it and it is no stream's tail.  O((V + E) · S) time with numpy rows.
    """

    def __init__(self, pred: list[list[int]], succ: list[list[int]]) -> None:
        self.pred = pred
        self.pending = [len(s) for s in succ]
        self.clock: dict[int, np.ndarray] = {}
        self.width = 8
        self.tail_pos = np.full(self.width, -1, dtype=np.int64)
        self.tail_node: list[int] = []
        self.length: list[int] = []
        self.stream_of: dict[int, int] = {}
        self.position: dict[int, int] = {}
        self._tails: set[int] = set()

    @property
    def n_streams(self) -> int:
        return len(self.length)

    def new_stream(self) -> int:
        s = len(self.length)
        if s >= self.width:
            self.width *= 2
            grown = np.full(self.width, -1, dtype=np.int64)
            grown[:s] = self.tail_pos[:s]
            self.tail_pos = grown
        self.length.append(0)
        self.tail_node.append(-1)
        return s

    def place(self, node: int, stream: int) -> None:
        """Append ``node`` to ``stream`` (its stream position is fixed now)."""
        self.stream_of[node] = stream
        self.position[node] = self.length[stream]
        self.length[stream] += 1

    def set_tail(self, stream: int, node: int) -> None:
        old = self.tail_node[stream]
        self.tail_node[stream] = node
        self._tails.discard(old)
        self._tails.add(node)
        self.tail_pos[stream] = self.position[node]
        if old >= 0 and old != node and self.pending[old] <= 0:
            self.clock.pop(old, None)

    def clock_of(self, node: int, extra: tuple[int, ...] = ()) -> np.ndarray:
        """Clock of ``node`` merged from its (visited) predecessors and ``extra`` ones."""
        clock = np.full(self.width, -1, dtype=np.int64)
        for p in (*self.pred[node], *extra):
            c = self.clock[p]
            np.maximum(clock[: len(c)], c, out=clock[: len(c)])
        return clock

    def finished_streams(self, clock: np.ndarray) -> list[int]:
        """Streams, in creation order, whose last op is an ancestor of the node with ``clock``."""
        n = len(self.length)
        tails = self.tail_pos[:n]
        return np.nonzero((tails >= 0) & (clock[:n] >= tails))[0].tolist()

    def visit(self, node: int, clock: np.ndarray) -> None:
        """Record the visited ``node`` (already placed); free clocks nobody needs any more."""
        s = self.stream_of[node]
        if len(clock) < self.width:  # streams were opened after the clock was built
            grown = np.full(self.width, -1, dtype=np.int64)
            grown[: len(clock)] = clock
            clock = grown
        clock[s] = max(clock[s], self.position[node])
        self.clock[node] = clock
        for p in self.pred[node]:
            self.pending[p] -= 1
            if self.pending[p] <= 0 and p not in self._tails:
                self.clock.pop(p, None)
