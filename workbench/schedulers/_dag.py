"""DAG helpers shared by the schedulers: transitive reduction, depths, visit orders, ancestor
clocks.

All functions work on the integer views of a :class:`~workbench.values.graph.Graph` (``succ_index``,
``pred_index``, ``topo_index``) so they stay near-linear on graphs with 100k ops.
"""

from __future__ import annotations

from collections import deque
from typing import cast

from workbench.schedulers._tails import StreamTails, pack_bits, set_bits
from workbench.values.graph import Graph

#: Up to this edge span every reachability set is kept to the end (at most span bits each);
#: beyond it a set is freed once all its predecessors have read it.
_KEEP_REACH_SPAN = 256

__all__ = ["StreamTails", "longest_chain_after", "mindspore_bfs_order", "nnc_visit_order",
           "post_dfs_order", "transitive_reduction"]


def transitive_reduction(graph: Graph) -> tuple[list[list[int]], list[list[int]]]:
    """Successor and predecessor lists (integer indices) without implied edges.

    An edge ``v -> d`` is dropped when another direct successor ``d'`` of ``v`` already reaches
    ``d``, which is exactly the transitive reduction (NNC's per-node edge reduction, RAF's
    ``prune_redundant`` and Nimble's minimum equivalent graph all compute this).  Reachability is
    kept as bitsets relative to each node's topological position, truncated to the longest edge span
    ``H``: O(E · H / 64) word operations, i.e. near-linear when edges are local (every CNN and the
    benchmark DAGs), O(V · E / 64) in the worst case.  A set that would be sparse over a long span
    (a fan's branches each reach only the far sink) is kept as a frozenset of topological
    positions instead (:func:`_reach_of`), so a fan of ``n`` branches costs O(n) words, not
    O(n²/64) (fan 300k: 17 s and gigabytes before).  Order of the lists is preserved.
    """
    n = len(graph)
    succ, pred = graph.succ_index, graph.pred_index
    topo = graph.topo_index
    if all(p == i for p, i in enumerate(topo)):
        pos: list[int] | range = range(n)  # program order is topological (the usual case)
        span = max((j - min(p) for j, p in enumerate(pred) if p), default=0)
    else:
        pos = [0] * n
        for p, i in enumerate(topo):
            pos[i] = p
        span = max((pos[j] - pos[i] for i in range(n) for j in succ[i]), default=0)
    mask = (1 << (span + 1)) - 1
    # bit k of an int: the node at topological position pos[i] + k is reachable from i; a
    # frozenset holds the reachable positions themselves (a sparse set over a long span)
    reach: list[int | frozenset[int]] = [0] * n
    pending = [len(p) for p in pred] if span > _KEEP_REACH_SPAN else None
    kept_succ: list[list[int]] = [[] for _ in range(n)]
    for i in reversed(topo):
        out = succ[i]
        if not out:
            continue
        base = pos[i]
        if len(out) == 1:  # a lone successor is never implied
            j = out[0]
            kept_succ[i] = [j]
            r, shift = reach[j], pos[j] - base
            if type(r) is int and (shift <= _SPARSE_SPAN or not _sparse(r, shift)):
                reach[i] = ((r << shift) | (1 << shift)) & mask
            else:
                reach[i] = _reach_of({*_positions(r, pos[j]), pos[j]}, base, mask)
        elif pending is None or not _merge_as_positions(out, reach, pos, base):
            combined = direct = 0
            for j in out:
                shift = pos[j] - base
                combined |= reach[j] << shift  # type: ignore[operator]
                direct |= 1 << shift
            kept_succ[i] = [j for j in out if not (combined >> (pos[j] - base)) & 1]
            reach[i] = (combined | direct) & mask
        else:
            reached: set[int] = set()
            for j in out:
                reached.update(_positions(reach[j], pos[j]))
            kept_succ[i] = [j for j in out if pos[j] not in reached]
            reached.update(pos[j] for j in out)
            reach[i] = _reach_of(reached, base, mask)
        if pending is not None:  # long spans: free each set once its predecessors used it
            for j in out:
                pending[j] -= 1
                if not pending[j]:
                    reach[j] = 0
    lookup = [k if len(k) <= 8 else set(k) for k in kept_succ]  # short lists test as fast
    kept_pred = [[i for i in pred[j] if j in lookup[i]] if len(pred[j]) > 1 else list(pred[j])
                 for j in range(n)]
    return kept_succ, kept_pred


#: A reachability bitset longer than this with under one bit in ``_SPARSE_DENSITY`` set is kept
#: as a frozenset of positions (a set element costs about what 2,048 bits of an int cost).
_SPARSE_SPAN = 4096
_SPARSE_DENSITY = 2048


def _sparse(bits: int, shift: int) -> bool:
    """Would ``bits`` shifted up by ``shift``, with the bit at ``shift`` added, be sparse?"""
    return (bits.bit_count() + 1) * _SPARSE_DENSITY < bits.bit_length() + shift


def _merge_as_positions(out: list[int], reach: list[int | frozenset[int]],
                        pos: list[int] | range, base: int) -> bool:
    """Merge the successors' sets as positions rather than shifted bitsets: when one of them is
    a frozenset, or the fan-out is wide and far and the positions are few (shifting each bitset
    costs the whole span: a fan's source would cost O(n²/64) words)."""
    if any(type(reach[j]) is not int for j in out):
        return True
    far = max(pos[j] for j in out) - base
    if len(out) <= 64 or far <= _SPARSE_SPAN:
        return False
    count = len(out) + sum(cast(int, reach[j]).bit_count() for j in out)
    return count * 32 < len(out) * far // 64


def _positions(r: int | frozenset[int], base: int) -> frozenset[int] | list[int]:
    """The reachable positions of a set kept relative to ``base`` (an int) or as positions."""
    return set_bits(base, r) if type(r) is int else r  # type: ignore[return-value,arg-type]


def _reach_of(reached: set[int], base: int, mask: int) -> int | frozenset[int]:
    """Positions reachable from the node at ``base`` as a bitset relative to it (truncated by
    ``mask``), or as a frozenset when that bitset would be long and sparse.
    O(span / 8 + |reached|)."""
    top = max(reached) - base
    if top <= _SPARSE_SPAN or len(reached) * _SPARSE_DENSITY >= top:
        return pack_bits(reached, base) & mask
    return frozenset(reached)


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
