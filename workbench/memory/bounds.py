"""Lower bounds for memory plans: the memory-over-time curve and its peak.

The peak of live bytes ("max breadth", notes/memory_planners.md §2 and SOMAS ``CalcLowerBound``
§1.4) is a lower bound on the arena of every valid offset plan, because all tensors live at one step
need disjoint bytes. Seed 004, "Memory Management" (SOMAS aims for reuse close to this limit).

>>> live_bytes_curve([(32, 0, 1), (28, 1, 4), (8, 3, 3)])
[32, 60, 28, 36, 28]
>>> peak_live_bytes([(32, 0, 1), (28, 1, 4)], alignment=64)
128
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from workbench.memory.plan import RecordLike, align_up, check_alignment, parse_records
from workbench.memory.streams import Skeleton


def live_bytes_curve(records: Iterable[RecordLike], *, alignment: int = 1) -> list[int]:
    """Bytes live at each step ``0..max(last)``: ``sum(size for first <= t <= last)``.

    Sizes are rounded up to ``alignment`` first. A difference array gives O(n + steps).
    """
    recs = parse_records(records)
    align = check_alignment(alignment)
    if not recs:
        return []
    steps = max(r.last for r in recs) + 1
    diff = [0] * (steps + 1)
    for r in recs:
        size = align_up(r.size, align)
        diff[r.first] += size
        diff[r.last + 1] -= size
    curve, live = [], 0
    for t in range(steps):
        live += diff[t]
        curve.append(live)
    return curve


def peak_live_bytes(records: Iterable[RecordLike], *, alignment: int = 1) -> int:
    """The offset lower bound: the maximum of :func:`live_bytes_curve` (0 without records).

    A sweep over the first and last steps (births before deaths at one step), so the cost does
    not depend on how large the step numbers are: in NumPy, the bytes born up to each first step
    minus those dead before it (the exact event sweep over Python ints past int64; it sorted
    tuples, a third of the naive planner on a 10,000-op fan).  Complexity: O(n log n)."""
    recs = parse_records(records)
    align = check_alignment(alignment)
    sizes = [align_up(r.size, align) for r in recs] if align > 1 else [r.size for r in recs]
    if not recs or sum(sizes) >= 1 << 62:  # past int64: the exact sweep over Python ints
        events = sorted([(r.first, 0, s) for r, s in zip(recs, sizes)]
                        + [(r.last, 1, -s) for r, s in zip(recs, sizes)])
        live = peak = 0
        for _, _, delta in events:
            live += delta
            peak = max(peak, live)
        return peak
    # the peak is reached right after the births of some step s: born up to s, minus dead before
    n = len(recs)
    size = np.array(sizes, dtype=np.int64)
    first = np.fromiter((r.first for r in recs), dtype=np.int64, count=n)
    last = np.fromiter((r.last for r in recs), dtype=np.int64, count=n)
    by_first, by_last = first.argsort(kind="stable"), last.argsort(kind="stable")
    born = np.concatenate(([0], np.cumsum(size[by_first])))
    dead = np.concatenate(([0], np.cumsum(size[by_last])))
    steps = first[by_first]
    at_step = (born[np.searchsorted(steps, steps, side="right")]
               - dead[np.searchsorted(last[by_last], steps, side="left")])
    return max(0, int(at_step.max()))


def conflict_clique_bound(records: Iterable[RecordLike],
                          conflicts: Iterable[tuple[int, int]] | None, *,
                          alignment: int = 1) -> int:
    """The largest total size of tensors that pairwise conflict: no valid plan is smaller.

    With an explicit conflict set (multi-stream schedules) the peak of live bytes in one issue
    order understates what every plan must reserve; this bound is exact for the conflict graph.
    Two tensors that do not conflict are ordered ("``a`` dies before ``b`` is born in every
    execution"), a partial order, so the heaviest clique of the conflict graph is the heaviest
    antichain of that order.  By weighted Dilworth it equals ``sum(sizes) - maxflow`` on the
    network ``source -> a (size) ~> b (inf, a before b) -> sink (size)`` (each tensor copied
    ``size`` times).  A conflict set built from a schedule carries the order as a sparse DAG
    (:class:`~workbench.memory.streams.Skeleton`: a tensor reaches the ops after all its users,
    and through the happens-before edges the producers of every later tensor), so the network has
    O(V + syncs + T·S) edges; for any other conflict set, "``a`` before ``b``" is listed pair by
    pair, O(n²).  Max flow by scipy's Dinic.
    """
    recs = list(parse_records(records))
    sizes = [-(-r.size // alignment) * alignment for r in recs]
    keep = [i for i, s in enumerate(sizes) if s > 0]
    if not keep:
        return 0
    if conflicts is None:
        return peak_live_bytes(recs, alignment=alignment)
    # scipy's max-flow works in int32: count in units of the sizes' gcd, and if the total still
    # overflows, floor-divide the weights further (floored weights keep the result a valid bound).
    unit = math.gcd(*(sizes[i] for i in keep))
    weights = {i: sizes[i] // unit for i in keep}
    scale = max(1, -(-sum(weights.values()) // (1 << 30)))
    if scale > 1:
        weights = {i: w // scale for i, w in weights.items()}
        unit *= scale
    total = sum(weights.values())
    skeleton = getattr(conflicts, "skeleton", None)
    if skeleton is not None:
        flow = _skeleton_flow(skeleton, [weights.get(i, 0) for i in range(len(recs))], total)
    else:
        flow = _pairwise_flow(recs, conflicts, keep, weights, total)
    return int(total - flow) * unit


def _max_flow(n_nodes: int, edges: np.ndarray, caps: np.ndarray) -> int:
    """Max flow from node 0 to node 1 over unique directed edges with int32 capacities."""
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import maximum_flow

    graph = csr_array((caps.astype(np.int32), (edges[:, 0], edges[:, 1])), shape=(n_nodes,) * 2)
    return int(maximum_flow(graph, 0, 1).flow_value)


def _skeleton_flow(skeleton: Skeleton, weights: list[int], total: int) -> int:
    """Max flow of the Dilworth network over a schedule's order skeleton (see above)."""
    n = skeleton.n_tensors
    w = np.array(weights, dtype=np.int64)

    def node(v: np.ndarray) -> np.ndarray:  # skeleton op/barrier node -> network node
        return 2 + 2 * n + (v - n)

    kept = np.flatnonzero(w > 0)
    frontier = skeleton.frontier[w[skeleton.frontier[:, 0]] > 0]
    born = skeleton.born[w[skeleton.born[:, 1]] > 0]
    inner = np.concatenate([
        np.stack([2 + frontier[:, 0], node(frontier[:, 1])], 1),
        np.stack([node(skeleton.hb[:, 0]), node(skeleton.hb[:, 1])], 1),
        np.stack([node(born[:, 0]), 2 + n + born[:, 1]], 1),
    ]).astype(np.int64)
    width = 2 + 2 * n + (skeleton.n_nodes - n)
    inner = np.unique(inner[:, 0] * width + inner[:, 1])
    inner = np.stack([inner // width, inner % width], 1)
    edges = np.concatenate([
        np.stack([np.zeros(len(kept), dtype=np.int64), 2 + kept], 1),
        np.stack([2 + n + kept, np.ones(len(kept), dtype=np.int64)], 1),
        inner,
    ])
    caps = np.concatenate([w[kept], w[kept], np.full(len(inner), total + 1, dtype=np.int64)])
    return _max_flow(width, edges, caps)


def _pairwise_flow(recs: list[Any], conflicts: Iterable[tuple[int, int]], keep: list[int],
                   weights: dict[int, int], total: int) -> int:
    """Max flow of the bipartite Dilworth network with every ordered pair listed."""
    conflict = {(min(a, b), max(a, b)) for a, b in conflicts}
    n = len(keep)
    rows, cols, caps = [], [], []
    for k, i in enumerate(keep):
        rows += [0, 2 + n + k]
        cols += [2 + k, 1]
        caps += [weights[i], weights[i]]
    for a in range(n):
        ra = recs[keep[a]]
        for b in range(n):
            i, j = keep[a], keep[b]
            if i != j and (min(i, j), max(i, j)) not in conflict and ra.last < recs[j].first:
                rows.append(2 + a)
                cols.append(2 + n + b)
                caps.append(total + 1)
    edges = np.array([rows, cols], dtype=np.int64).T
    return _max_flow(2 + 2 * n, edges, np.array(caps, dtype=np.int64))
