"""Nimble's minimum-stream assignment (Kwon et al., NeurIPS 2020; notes raf_nimble.md §7).

Steps, as in Nimble's AutoStream pass:

1. **MEG**: the minimum equivalent graph of the DAG, i.e. its transitive reduction
   (:func:`~workbench.schedulers._dag.transitive_reduction`).
2. **Chains**: a maximum bipartite matching on the MEG edges (left copy ``u``, right copy ``v`` for
   every MEG edge ``u -> v``).  Each matched edge puts ``u`` and ``v`` one after the other on one
   chain, so the chains are a minimum path cover of the MEG by direct edges: ``#chains = V - |M|``.
3. **Streams**: chain ``i`` precedes chain ``j`` when ``last(i)`` reaches ``first(j)``; that
   relation is already transitive (it is its own transitive closure).  A second maximum matching
   on it puts matched chains one after the other on one stream: ``#streams = #chains - |M2|``.
   Every stream is totally ordered by the graph, so any two ops with no path between them land on
   different streams (*maximum logical concurrency*).
4. **Width refinement (ours)**: the two matchings do not always reach the width of the graph (its
   largest antichain, which by Dilworth's theorem is the least number of totally ordered streams).
   Example: ``n1->n2->n3->{n5,n7}``, ``n0->n3``, ``n2->n6``, ``n4->n6`` has width 3, but its chains
   ``[n0,n3,n5] [n1,n2,n6] [n4] [n7]`` merge to 4 streams.  "x right before y on a stream" is a
   matching on the reachability pairs; we flip augmenting paths in it, each of which removes one
   stream, as long as one exists that loses no MEG pair, i.e. adds no sync.  The result is the
   fewest streams among the assignments with the fewest syncs.  That is not always the width:
   on the 14-op MEG ``0->5 1->5 2->7 2->10 3->4 4->7 4->8 5->6 5->8 6->11 7->9 7->11 7->13 8->10``
   (ops 0..13) the width is 5, but 5 streams need 7 syncs and 6 streams need only 6.
   ``minimize="streams"`` takes the other priority: it also flips paths that cost syncs, so the
   streams are the width, with the fewest syncs for that.  ``notes["width_status"]`` says how the
   refinement ended (``"width"``, ``"syncs_first"`` when the width would cost syncs, or why it
   stopped early).  Paths that add no sync are found by BFS over reachability bitsets; the
   others need a Bellman–Ford search over all reachability pairs, done for graphs up to
   :data:`EXACT_SEARCH_MAX_OPS` ops; the refinement as a whole for up to :data:`REFINE_MAX_OPS`.
5. **Syncs**: one per MEG edge whose ends are not consecutive on one stream.  A MEG edge between
   two ops of one stream joins consecutive ops (an op in between would give a second path), and
   every other edge is implied by MEG edges, so these syncs are needed and sufficient.  With the
   default ``minimize="syncs"`` their number is ``#MEG edges - |M|``, the minimum among
   maximum-concurrency assignments (Nimble's Theorem 2); ``notes["syncs_check"]`` records that
   equality (``notes["extra_syncs"]`` counts what ``minimize="streams"`` paid).  The syncs are
   passed to :func:`~workbench.values.schedule.build_schedule` explicitly (none is dropped).

Determinism and tie-breaks: matchings start from a greedy pass (left vertices in topological order;
for ops, successors with the longest chain after them first, then program order; for chains, the
earliest head first) and are completed by Hopcroft–Karp augmentations in a fixed order.  Any maximum
matching gives the same counts; the greedy start only makes chains follow long paths.  The issue
order is the graph's topological order closest to program order.

With ``max_streams`` below the number of streams, streams are folded onto physical ones
(:func:`workbench.values.schedule.fold_streams`), which gives up maximum logical concurrency; the
syncs
between ops that end up on one stream are dropped (stream order covers them).

Complexity: O(E·H/64) for the reduction (H = longest edge span in topological order),
O(E·√V) for the first matching, O(E·C/64) for chain reachability (C = #chains), and
O(P·√C) for the second matching, where P ≤ C² is the number of ordered chain pairs; the width
refinement takes O(V²/64) per stream it removes for reachability bitsets and BFS, and
O(V · P) in the worst case for a Bellman–Ford search (P ≤ V² reachability pairs).
"""

from __future__ import annotations

import numpy as np

from workbench.errors import OptionError
from workbench.schedulers._dag import longest_chain_after, transitive_reduction
from workbench.schedulers._tails import pack_bits
from workbench.values.graph import Graph
from workbench.values.schedule import Schedule, build_schedule, check_max_streams

#: Graphs up to this many ops get the width refinement (reachability bitsets take V²/8 bytes).
REFINE_MAX_OPS = 20_000
#: Graphs up to this many ops get the exact (Bellman–Ford) augmenting-path search.
EXACT_SEARCH_MAX_OPS = 1_500
MINIMIZE = ("syncs", "streams")


def schedule_min_streams(graph: Graph, *, max_streams: int | None = None,
                         minimize: str = "syncs") -> Schedule:
    """Nimble-style assignment: fewest syncs and fewest streams at maximum logical concurrency.

    ``minimize="syncs"`` (default, Nimble's guarantee): fewest syncs, then fewest streams;
    ``"streams"``: fewest streams (the width), then fewest syncs.  See the module docstring.

    Examples
    --------
    >>> g = Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> s = schedule_min_streams(g)
    >>> s.streams
    {0: ('a', 'b', 'd'), 1: ('c',)}
    >>> s.syncs
    (('a', 'c'), ('c', 'd'))
    >>> s.notes["meg_edges"], s.notes["matched_edges"], s.notes["syncs_check"]
    (4, 2, True)
    """
    max_streams = check_max_streams(max_streams, len(graph))
    if minimize not in MINIMIZE:
        raise OptionError(f"unknown min_streams objective minimize={minimize!r} "
                          f"(known: {', '.join(MINIMIZE)})")
    ops = graph.ops
    n = len(ops)
    topo = graph.topo_index
    pos = [0] * n
    for p, i in enumerate(topo):
        pos[i] = p
    rsucc, rpred = transitive_reduction(graph)
    meg_edges = sum(len(s) for s in rsucc)

    # 1. chains: maximum matching on MEG edges (minimum path cover by direct edges)
    rank = longest_chain_after(topo, rsucc)
    prefer = [sorted(rsucc[i], key=lambda j: (-rank[j], j)) for i in range(n)]
    match_l, match_r = max_bipartite_matching(prefer, n, order=list(topo))
    matched = sum(1 for v in match_l if v >= 0)
    heads = sorted((i for i in range(n) if match_r[i] < 0), key=pos.__getitem__)
    chains: list[list[int]] = []
    chain_of = [0] * n
    for h in heads:
        chain, cur = [], h
        while cur >= 0:
            chain_of[cur] = len(chains)
            chain.append(cur)
            cur = match_l[cur]
        chains.append(chain)

    # 2. chain order: last(i) reaches first(j); second matching merges chains onto streams
    after = _chains_reached(rsucc, rpred, topo, heads, chain_of, {c[-1] for c in chains})
    chain_adj = [_bits(after[c[-1]]) for c in chains]
    next_chain, prev_chain = max_bipartite_matching(chain_adj, len(chains))
    merged = sum(1 for j in next_chain if j >= 0)
    succ_op, pred_op = [-1] * n, [-1] * n  # the op after / before each op on its stream
    for c, chain in enumerate(chains):
        for x, y in zip(chain, chain[1:], strict=False):
            succ_op[x], pred_op[y] = y, x
        if next_chain[c] >= 0:
            x, y = chain[-1], chains[next_chain[c]][0]
            succ_op[x], pred_op[y] = y, x
    nimble_streams = len(chains) - merged

    # 3. width: augment the combined matching on the reachability order where that keeps syncs
    augmentations, status = 0, f"skipped: more than {REFINE_MAX_OPS} ops"
    if n <= REFINE_MAX_OPS:
        augmentations, status = _refine_to_width(rsucc, topo, succ_op, pred_op,
                                                 allow_syncs=minimize == "streams")
    stream_of: dict[str, int] = {}
    streams: list[list[str]] = []
    for h in sorted((i for i in range(n) if pred_op[i] < 0), key=pos.__getitem__):
        members, cur = [], h
        while cur >= 0:
            stream_of[ops[cur].id] = len(streams)
            members.append(ops[cur].id)
            cur = succ_op[cur]
        streams.append(members)

    # 4. syncs: every MEG edge whose ends are not consecutive on one stream
    order = list(graph.topo_order())
    syncs = [(ops[p].id, ops[i].id) for i in topo for p in rpred[i] if succ_op[p] != i]
    notes = {
        "chains": [[ops[i].id for i in c] for c in chains],
        "matched_edges": matched,
        "meg_edges": meg_edges,
        "removed_edges": sum(len(s) for s in graph.succ_index) - meg_edges,
        "merged_chain_pairs": merged,
        "nimble_streams": nimble_streams,
        "width_augmentations": augmentations,
        "width_status": status,
        "logical_streams": len(streams),
        "streams_ops": streams,
        "syncs_check": len(syncs) == meg_edges - matched,
        "extra_syncs": len(syncs) - (meg_edges - matched),
        "minimize": minimize,
    }
    sched = build_schedule(graph, "min_streams", stream_of, order, syncs=syncs,
                           max_streams=max_streams,
                           options={"max_streams": max_streams, "minimize": minimize}, notes=notes)
    return sched.validate()


def _refine_to_width(rsucc: list[list[int]], topo: tuple[int, ...], succ_op: list[int],
                     pred_op: list[int], *, allow_syncs: bool) -> tuple[int, str]:
    """Lengthen streams towards the width of the graph; returns (augmentations, status).

    ``succ_op``/``pred_op`` are a matching in the bipartite graph of the reachability order (op
    ``x`` right before ``y`` on a stream); fewest streams = a maximum such matching
    (Dilworth/Fulkerson).  An augmenting path (from a stream tail to a stream head, alternating
    new and existing consecutive pairs) removes one stream.  Its *gain* is the number of MEG pairs
    it adds minus those it removes.  The matching starts with a maximum MEG matching, so no gain
    is positive; flipping a best path each time keeps the MEG pairs maximal for the number of
    streams (successive shortest paths).  Paths of gain 0 are flipped always, paths of negative
    gain (extra syncs) only with ``allow_syncs``.
    """
    n = len(rsucc)
    reach = [0] * n  # bit j: op j is reachable from op i
    for i in reversed(topo):
        r = 0
        for j in rsucc[i]:
            r |= (1 << j) | reach[j]
        reach[i] = r
    meg = [set(s) for s in rsucc]
    done = 0
    while True:
        path = _nonlosing_path(reach, meg, succ_op, pred_op)
        if path is None:
            if not _has_augmenting_path(reach, succ_op, pred_op):
                return done, "width"
            if n > EXACT_SEARCH_MAX_OPS:
                return done, f"stopped: exact search skipped above {EXACT_SEARCH_MAX_OPS} ops"
            path = _best_augmenting_path(reach, meg, succ_op, pred_op, allow_loss=allow_syncs)
            if path is None:
                return done, "syncs_first"
        for u, v in path:
            succ_op[u], pred_op[v] = v, u
        done += 1


def _nonlosing_path(reach: list[int], meg: list[set[int]], succ_op: list[int],
                    pred_op: list[int]) -> list[tuple[int, int]] | None:
    """BFS for an augmenting path none of whose steps loses a MEG pair (so its gain is 0).

    A step from ``u`` to right vertex ``v`` (whose current predecessor ``w = pred_op[v]`` then
    moves on) loses a MEG pair when ``w -> v`` is one and ``u -> v`` is not.  Each right vertex
    is scanned once (bitset of unvisited ones): O(V²/64).  Usually finds the path; when it does
    not, :func:`_best_augmenting_path` searches all paths.
    """
    n = len(reach)
    meg_pairs = 0  # right vertices whose current predecessor reaches them by a MEG edge
    for v in range(n):
        if pred_op[v] >= 0 and v in meg[pred_op[v]]:
            meg_pairs |= 1 << v
    unvisited = (1 << n) - 1
    queue = [u for u in range(n) if succ_op[u] < 0]
    seen = set(queue)
    parent: dict[int, tuple[int, int]] = {}
    while queue:
        nxt = []
        for u in queue:
            free = reach[u] & unvisited
            if succ_op[u] >= 0:
                free &= ~(1 << succ_op[u])
            steps = _bits(free & ~meg_pairs) + [v for v in meg[u] if free >> v & 1 and
                                                meg_pairs >> v & 1]
            for v in steps:
                unvisited &= ~(1 << v)
                w = pred_op[v]
                if w < 0:
                    path = [(u, v)]
                    while u in parent:
                        path.append(parent[u])
                        u = parent[u][0]
                    return path
                if w not in seen:
                    seen.add(w)
                    parent[w] = (u, v)
                    nxt.append(w)
        queue = nxt
    return None


def _has_augmenting_path(reach: list[int], succ_op: list[int], pred_op: list[int]) -> bool:
    """BFS from the stream tails; each right vertex is scanned once (bitset of unvisited ones)."""
    n = len(reach)
    unvisited = (1 << n) - 1
    queue = [u for u in range(n) if succ_op[u] < 0]
    seen = set(queue)
    while queue:
        nxt = []
        for u in queue:
            for v in _bits(reach[u] & unvisited):
                unvisited &= ~(1 << v)
                w = pred_op[v]
                if w < 0:
                    return True
                if w not in seen:
                    seen.add(w)
                    nxt.append(w)
        queue = nxt
    return False


def _best_augmenting_path(reach: list[int], meg: list[set[int]], succ_op: list[int],
                          pred_op: list[int], *, allow_loss: bool
                          ) -> list[tuple[int, int]] | None:
    """The augmenting path of largest gain (SPFA; no positive cycles exist), if its gain is 0 or
    ``allow_loss``; else None."""
    from collections import deque

    n = len(reach)
    best: dict[int, int] = {u: 0 for u in range(n) if succ_op[u] < 0}
    parent: dict[int, tuple[int, int]] = {}
    queue = deque(best)
    queued = set(best)
    end: tuple[int, int, int] | None = None
    while queue:
        u = queue.popleft()
        queued.discard(u)
        for v in _bits(reach[u]):
            if v == succ_op[u]:
                continue
            gain = best[u] + (v in meg[u])
            w = pred_op[v]
            if w < 0:
                if end is None or gain > end[0]:
                    end = (gain, u, v)
                continue
            gain -= v in meg[w]
            if gain > best.get(w, -n - 1):
                best[w] = gain
                parent[w] = (u, v)
                if w not in queued:
                    queued.add(w)
                    queue.append(w)
    if end is None or (end[0] < 0 and not allow_loss):
        return None
    path = [(end[1], end[2])]
    u = end[1]
    while u in parent:
        path.append(parent[u])
        u = parent[u][0]
    return path


def max_bipartite_matching(adj: list[list[int]], n_right: int, *,
                           order: list[int] | None = None) -> tuple[list[int], list[int]]:
    """Maximum matching of a bipartite graph given as left → right adjacency lists.

    A greedy pass (left vertices in ``order``, default 0..n-1, each taking its first free right
    vertex in list order) is completed by Hopcroft–Karp phases (BFS layers from the free left
    vertices, then iterative DFS augmentations in ``order``).  Deterministic.  O(E·√V).
    Returns ``(match_left, match_right)`` with -1 for unmatched vertices.

    >>> max_bipartite_matching([[0, 1], [0]], 2)
    ([1, 0], [1, 0])
    """
    n = len(adj)
    order = list(range(n)) if order is None else order
    match_l, match_r = [-1] * n, [-1] * n_right
    for u in order:
        for v in adj[u]:
            if match_r[v] < 0:
                match_l[u], match_r[v] = v, u
                break
    while True:
        dist = [-1] * n
        queue = [u for u in order if match_l[u] < 0]
        for u in queue:
            dist[u] = 0
        found = False
        qi = 0
        while qi < len(queue):
            u = queue[qi]
            qi += 1
            for v in adj[u]:
                w = match_r[v]
                if w < 0:
                    found = True
                elif dist[w] < 0:
                    dist[w] = dist[u] + 1
                    queue.append(w)
        if not found:
            return match_l, match_r
        cursor = [0] * n
        for root in order:
            if match_l[root] < 0 and dist[root] == 0:
                _augment(root, adj, match_l, match_r, dist, cursor)


def _augment(root: int, adj: list[list[int]], match_l: list[int], match_r: list[int],
             dist: list[int], cursor: list[int]) -> None:
    """One iterative DFS along the BFS layers; flips the path if it reaches a free right vertex."""
    stack, via = [root], []
    while stack:
        u = stack[-1]
        if cursor[u] < len(adj[u]):
            v = adj[u][cursor[u]]
            cursor[u] += 1
            w = match_r[v]
            if w < 0:
                via.append(v)
                for uu, vv in zip(stack, via, strict=True):
                    match_l[uu], match_r[vv] = vv, uu
                return
            if dist[w] == dist[u] + 1:
                stack.append(w)
                via.append(v)
        else:
            dist[u] = -2  # dead end for the rest of this phase
            stack.pop()
            if via:
                via.pop()


def _chains_reached(rsucc: list[list[int]], rpred: list[list[int]], topo: tuple[int, ...],
                    heads: list[int], chain_of: list[int], keep: set[int]) -> dict[int, int]:
    """For each op in ``keep``: a bitset of the chains whose head it reaches (reverse topological
    sweep over the MEG, which has the graph's reachability).  Sets nobody needs are freed.

    A head's bit is made when it is read (a table of ``1 << chain`` for every head would hold
    chains² / 16 bytes: 5.6 GB for a 300k-branch fan), and an op with a wide fan-out unions its
    successors' sets in one pass (:func:`_union`) rather than growing one integer successor by
    successor, which is O(fan-out · chains / 64) words.  O(E · C / 64) for C chains reached."""
    n = len(rsucc)
    head_chain = [-1] * n
    for h in heads:
        head_chain[h] = chain_of[h]
    reach = [0] * n
    pending = [len(p) for p in rpred]
    out: dict[int, int] = {}
    for i in reversed(topo):
        succ = rsucc[i]
        if len(succ) <= _WIDE_FAN_OUT:
            r = 0
            for j in succ:
                r |= reach[j]
                if head_chain[j] >= 0:
                    r |= 1 << head_chain[j]
        else:
            r = _union([reach[j] for j in succ if reach[j]],
                       [head_chain[j] for j in succ if head_chain[j] >= 0])
        for j in succ:
            pending[j] -= 1
            if pending[j] == 0:
                reach[j] = 0
        reach[i] = r
        if i in keep:
            out[i] = r
    return out


#: Above this many successors an op's reachable chains are unioned in one pass.
_WIDE_FAN_OUT = 64


def _union(sets: list[int], bits: list[int]) -> int:
    """The union of bitsets and of single bits given by index: the bits in one
    :func:`~workbench.schedulers._tails.pack_bits`, the sets pairwise (a balanced tree,
    O(S log k) for k sets of S bits in all)."""
    if bits:
        sets.append(pack_bits(bits))
    while len(sets) > 1:
        sets = [a | b for a, b in zip(sets[0::2], sets[1::2], strict=False)] + sets[len(sets) & ~1:]
    return sets[0] if sets else 0


def _bits(x: int) -> list[int]:
    """Indices of the set bits of ``x``, ascending.  O(bits of x): wide sets are unpacked by
    NumPy (clearing bits one by one would copy the integer once per set bit)."""
    width = x.bit_length()
    if width > 512:
        raw = np.frombuffer(x.to_bytes((width + 7) // 8, "little"), dtype=np.uint8)
        return np.flatnonzero(np.unpackbits(raw, bitorder="little")).tolist()
    out = []
    while x:
        low = x & -x
        out.append(low.bit_length() - 1)
        x ^= low
    return out
