"""Random DAG families for tests and benchmarks, reproducible from a seed.

Every builder takes a keyword ``seed: int | random.Random | None`` and draws everything (the wiring
and the op costs) from that one generator, never from the global ``random`` state; the same seed
gives the same graph.  Ops are listed in a topological program order.  Each op (kind ``"op"``)
produces one tensor ``"<id>:out"`` and reads its predecessors' outputs; its costs are drawn as:

- ``flops`` uniform in :data:`FLOPS_RANGE`;
- output size uniform in :data:`SIZE_RANGE_BYTES` (a multiple of 4 bytes); ``bytes_written`` is that
  size and ``bytes_read`` the sum of its inputs' sizes;
- ``thread_blocks`` uniform in :data:`THREAD_BLOCKS_RANGE`.
"""

from __future__ import annotations

import math
import random
from collections import deque

from workbench.errors import OptionError
from workbench.values.graph import Graph, Op, Tensor

__all__ = ["gnp_dag", "layered_dag", "random_dag", "series_parallel_dag"]

FLOPS_RANGE = (1e6, 1e9)
SIZE_RANGE_BYTES = (4 << 10, 4 << 20)  # 4 KiB .. 4 MiB
THREAD_BLOCKS_RANGE = (1, 256)

Seed = int | random.Random | None


def _rng(seed: Seed) -> random.Random:
    if isinstance(seed, random.Random):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise OptionError(f"seed must be an int, a random.Random or None, got {seed!r}")
    return random.Random(seed)


def _count(value: object, what: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise OptionError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return value


def _probability(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise OptionError(f"{what} must be a probability in [0, 1], got {value!r}")
    return float(value)


def _assemble(ids: list[str], preds: list[list[int]], rng: random.Random, *, name: str) -> Graph:
    """Ops ``ids`` (in program order) reading the outputs of ``preds`` (indices); costs drawn from
    ``rng`` in op order.  O(V + E)."""
    f_lo, f_span = FLOPS_RANGE[0], FLOPS_RANGE[1] - FLOPS_RANGE[0]
    s_lo, s_span = SIZE_RANGE_BYTES[0] // 4, (SIZE_RANGE_BYTES[1] - SIZE_RANGE_BYTES[0]) // 4 + 1
    b_lo, b_span = THREAD_BLOCKS_RANGE[0], THREAD_BLOCKS_RANGE[1] - THREAD_BLOCKS_RANGE[0] + 1
    draw = rng.random
    outs = [f"{op_id}:out" for op_id in ids]
    sizes: list[int] = []
    ops: list[Op] = []
    tensors: list[Tensor] = []
    for i, op_id in enumerate(ids):
        flops = f_lo + f_span * draw()
        elements = s_lo + int(s_span * draw())
        blocks = b_lo + int(b_span * draw())
        size = 4 * elements
        sizes.append(size)
        p = preds[i]
        ops.append(Op(op_id, "op", "gpu", flops, sum([sizes[j] for j in p]), size,
                      tuple([outs[j] for j in p]), (outs[i],), blocks))
        tensors.append(Tensor(outs[i], size, op_id, "activation", (elements,)))
    return Graph(ops, tensors, name=name)


def layered_dag(n_layers: int, width: int, *, edge_prob: float = 0.3,
                seed: int | random.Random | None = None) -> Graph:
    """``n_layers`` layers of ``width`` ops each (ids ``L<layer>_<j>``).

    Every op of layer ``i > 0`` reads one op of layer ``i-1`` chosen uniformly, and every other op
    of layers ``0..i-1`` with probability ``edge_prob``.  Layer 0 ops are sources.
    Complexity: O((n_layers * width)^2) draws.

    Examples
    --------
    >>> len(layered_dag(3, 4, seed=1))
    12
    """
    layers = _count(n_layers, "layered_dag: n_layers")
    w = _count(width, "layered_dag: width")
    p = _probability(edge_prob, "layered_dag: edge_prob")
    rng = _rng(seed)
    ids = [f"L{i}_{j}" for i in range(layers) for j in range(w)]
    preds: list[list[int]] = []
    for i in range(layers):
        for _ in range(w):
            if i == 0:
                preds.append([])
                continue
            must = (i - 1) * w + rng.randrange(w)
            preds.append([u for u in range(i * w) if u == must or rng.random() < p])
    return _assemble(ids, preds, rng, name=f"layered_{layers}x{w}")


def series_parallel_dag(n_ops: int, *, seed: int | random.Random | None = None) -> Graph:
    """A two-terminal series-parallel DAG of ``n_ops`` ops (one source, one sink).

    Starts from the single edge source → sink and applies ``n_ops - 2`` random compositions, each on
    an edge ``u → v`` drawn uniformly: *series* (replace it by ``u → w → v``) or *parallel* (keep it
    and add the path ``u → w → v`` beside it), with ``w`` a new op.  Ops are then listed in a
    topological order (Kahn, FIFO) and named ``n0..n{n_ops-1}`` in that order.  Complexity:
    O(n_ops).

    Examples
    --------
    >>> g = series_parallel_dag(10, seed=3)
    >>> len(g.sources()), len(g.sinks())
    (1, 1)
    """
    n = _count(n_ops, "series_parallel_dag: n_ops", minimum=1)
    rng = _rng(seed)
    edges: list[tuple[int, int]] = [(0, 1)] if n >= 2 else []
    for w in range(2, n):
        k = rng.randrange(len(edges))
        u, v = edges[k]
        if rng.random() < 0.5:  # series
            edges[k] = (u, w)
        else:  # parallel
            edges.append((u, w))
        edges.append((w, v))
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for u, v in edges:
        succ[u].append(v)
        indeg[v] += 1
    order: list[int] = []
    ready = deque(i for i in range(n) if indeg[i] == 0)
    while ready:
        u = ready.popleft()
        order.append(u)
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    position = [0] * n
    for pos, node in enumerate(order):
        position[node] = pos
    preds: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        preds[position[v]].append(position[u])
    for p in preds:
        p.sort()
    return _assemble([f"n{i}" for i in range(n)], preds, rng, name=f"series_parallel_{n}")


def gnp_dag(n: int, p: float, *, seed: int | random.Random | None = None) -> Graph:
    """The acyclic G(n, p): a random order of ``n`` ops, edge ``i → j`` for each pair of
    positions ``i < j`` independently with probability ``p``.

    The ops are listed in that (topological) order but their ids ``n0..n{n-1}`` are a random
    permutation, so id order and program order differ (exercises id tie-breaks).  Edges are drawn
    with geometric skips (Batagelj & Brandes), O(n + E) expected instead of O(n²).

    Examples
    --------
    >>> len(gnp_dag(6, 1.0, seed=0).edges)
    15
    """
    count = _count(n, "gnp_dag: n")
    prob = _probability(p, "gnp_dag: p")
    rng = _rng(seed)
    labels = list(range(count))
    rng.shuffle(labels)
    preds: list[list[int]] = [[] for _ in range(count)]
    if prob >= 1.0:
        preds = [list(range(j)) for j in range(count)]
    elif prob > 0.0:
        log_q = math.log(1.0 - prob)
        j, i = 1, -1
        while j < count:
            i += 1 + int(math.log(1.0 - rng.random()) / log_q)
            while i >= j and j < count:
                i -= j
                j += 1
            if j < count:
                preds[j].append(i)
    return _assemble([f"n{label}" for label in labels], preds, rng, name=f"gnp_{count}_{prob:g}")


def random_dag(n_ops: int, *, edges_per_op: int = 3, window: int = 64,
               seed: int | random.Random | None = None) -> Graph:
    """A large sparse DAG for benchmarks: op ``i`` reads ``min(i, window, edges_per_op)`` distinct
    predecessors drawn uniformly from ops ``max(0, i - window) .. i-1``.

    Ids are ``n0..n{n_ops-1}`` in program order.  Complexity: O(n_ops * edges_per_op); 100k ops
    build in a few seconds (most of it in the Graph constructor).

    Examples
    --------
    >>> len(random_dag(1000, seed=0).edges)
    2994
    """
    n = _count(n_ops, "random_dag: n_ops")
    k = _count(edges_per_op, "random_dag: edges_per_op")
    win = _count(window, "random_dag: window", minimum=1)
    rng = _rng(seed)
    draw = rng.random
    preds: list[list[int]] = []
    for i in range(n):
        lo = i - win if i > win else 0
        span = i - lo
        m = span if span < k else k
        if 2 * m > span:  # dense: let random.sample pick
            preds.append(sorted(rng.sample(range(lo, i), m)))
            continue
        chosen: set[int] = set()  # sparse: rejection sampling, O(m) expected
        while len(chosen) < m:
            chosen.add(lo + int(span * draw()))
        preds.append(sorted(chosen))
    return _assemble([f"n{i}" for i in range(n)], preds, rng, name=f"random_{n}")
