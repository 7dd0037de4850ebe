"""RAF's ASAP schedule (seed 001, ``stream_schedule_asap.cc``; notes raf_nimble.md §3).

1. **Heavy chains**: ``depth(n)`` = nodes on the longest path from ``n`` to a sink (sinks 1).  Nodes
   are visited deepest first (ties: RAF's post-DFS order); each claims its first input, in argument
   order, that has no heavy consumer yet as its *heavy child*.  Heavy edges form vertex-disjoint
   chains; all other edges are light.
2. **Issue order**: RAF's ready *stack* (a vector), filled with the input-free nodes in post-DFS
   order and sorted by depth ascending; RAF pops from the back, so the deepest node goes first and,
   among equal depths, the one later in the vector: later in post-DFS order, or pushed later.
   After issuing a node its light consumers that become ready are pushed (appended) and the stack
   re-sorted (the sort keeps equal depths in vector order, as libstdc++'s insertion sort does on
   the small arrays of RAF's tests), then its heavy consumer, if ready, is pushed on top so chains
   stay contiguous.
3. **Streams**: a node with a heavy child inherits its stream.  A chain head reuses a finished
   stream (its chain ended) whose last node reaches the head, scanning newest stream first as RAF's
   hash map does; otherwise it opens a new stream.
4. **Events**: after each node with a light consumer, an event; before each node, a wait per light
   input.  RAF also emits waits for light inputs that ended up on the same stream (after reuse); we
   drop those (they are redundant) and count them in ``notes["same_stream_light_edges"]``.

With ``max_streams`` the streams are folded afterwards
(:func:`workbench.values.schedule.fold_streams`).
Complexity: O(V log V) per pop for the re-sort as in RAF (we use a heap: O((V + E) log V)), and
O(V + E·L) for the reach checks, with L the unreused chain endings an op's inputs reach (a handful
on DNN and random graphs; see :func:`_assign_streams`).  A million-op random DAG takes ~16 s.
"""

from __future__ import annotations

import heapq

from workbench.schedulers._dag import post_dfs_order, transitive_reduction
from workbench.values.graph import Graph
from workbench.values.schedule import Schedule, build_schedule, check_max_streams


def schedule_asap(graph: Graph, *, max_streams: int | None = None) -> Schedule:
    """RAF's as-soon-as-possible multi-stream schedule over heavy chains (see module docstring).

    >>> g = Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> schedule_asap(g).notes["heavy_chains"]
    [['a', 'b', 'd'], ['c']]
    """
    max_streams = check_max_streams(max_streams, len(graph))
    ops = graph.ops
    n = len(ops)
    rsucc, rpred = transitive_reduction(graph)
    post = post_dfs_order(graph, pred=rpred)
    post_pos = [0] * n
    for k, i in enumerate(post):
        post_pos[i] = k
    depth = [1] * n
    for i in reversed(post):
        depth[i] = 1 + max((depth[j] for j in rsucc[i]), default=0)
    heavy_child = [-1] * n
    heavy_parent = [-1] * n
    for node in sorted(range(n), key=lambda i: (-depth[i], post_pos[i])):
        for child in rpred[node]:
            if heavy_parent[child] < 0:
                heavy_parent[child] = node
                heavy_child[node] = child
                break
    order = _issue_order(rsucc, rpred, depth, post_pos, heavy_parent, heavy_child)
    stream_index = _assign_streams(order, rpred, rsucc, heavy_parent, heavy_child)
    stream_of = {ops[i].id: stream_index[i] for i in range(n)}
    syncs, same_stream = [], 0
    for v in order:
        for p in rpred[v]:
            if p == heavy_child[v]:
                continue
            if stream_index[p] == stream_index[v]:
                same_stream += 1
            else:
                syncs.append((ops[p].id, ops[v].id))
    chains = []
    for i in order:
        if heavy_child[i] < 0:
            chain, cur = [], i
            while cur >= 0:
                chain.append(ops[cur].id)
                cur = heavy_parent[cur]
            chains.append(chain)
    notes = {"depth": {ops[i].id: depth[i] for i in range(n)}, "heavy_chains": chains,
             "light_edges": len(syncs) + same_stream, "same_stream_light_edges": same_stream}
    return build_schedule(graph, "asap", stream_of, [ops[i].id for i in order], syncs=syncs,
                          max_streams=max_streams, options={"max_streams": max_streams},
                          notes=notes)


def _issue_order(rsucc, rpred, depth, post_pos, heavy_parent, heavy_child) -> list[int]:
    """RAF's ready stack: deepest first; among equal depths the one pushed last (the initial
    nodes are pushed in post-DFS order), i.e. stable sort by depth ascending and pop from the
    back; the heavy consumer of the node just issued jumps to the top when it becomes ready.
    A heap on (-depth, -push number) gives the same pops in O(log V) each."""
    remaining = [len(p) for p in rpred]
    heap = [(-depth[i], -post_pos[i], i) for i in range(len(rpred)) if remaining[i] == 0]
    heapq.heapify(heap)
    pushed = len(rpred)  # later pushes come after every initial node
    top: list[int] = []
    order = []
    while top or heap:
        node = top.pop() if top else heapq.heappop(heap)[2]
        order.append(node)
        for c in rsucc[node]:
            if c == heavy_parent[node]:
                continue
            remaining[c] -= 1
            if remaining[c] == 0:
                pushed += 1
                heapq.heappush(heap, (-depth[c], -pushed, c))
        hp = heavy_parent[node]
        if hp >= 0:
            remaining[hp] -= 1
            if remaining[hp] == 0:
                top.append(hp)
    return order


def _assign_streams(order: list[int], rpred: list[list[int]], rsucc: list[list[int]],
                    heavy_parent: list[int], heavy_child: list[int]) -> list[int]:
    """Stream of each node in issue ``order`` (step 3): a node with a heavy child inherits its
    stream; a chain head takes the *ended* stream (its chain's last node issued) whose chain ended
    last among those whose last node is an ancestor of the head, else a new stream.

    Chain endings are numbered (their *rank*); an ending stays *valid* until its stream is reused.
    Each issued node keeps, while it has unissued consumers, the ranks of the valid endings among
    its ancestors and itself, newest first.  A node's list is the union of its inputs' lists minus
    the endings that became invalid (an ending that is valid now and is an ancestor's was valid
    when that ancestor was issued, so the union misses none), plus its own ending.  The head's
    choice is the newest valid rank of that union.  Lists are shared, not copied, by single-input
    nodes that end no chain; invalid ranks are dropped when a list is merged or searched.
    Complexity: O(V + E·L) with L the valid endings an input carries (a few on DNN and random
    graphs, whose streams are reused as soon as they end); memory O(live nodes · L).
    """
    n = len(order)
    stream_of = [-1] * n
    rank_stream: list[int] = []   # rank -> stream of that ending
    stream_rank: list[int] = []   # stream -> rank of its valid ending, -1 while in use
    endings: dict[int, list[int]] = {}
    unissued = [len(s) for s in rsucc]
    empty: list[int] = []
    for v in order:
        preds = rpred[v]
        if len(preds) == 1:
            known = endings[preds[0]]
        elif preds:
            merged = set(endings[preds[0]]).union(*(endings[p] for p in preds[1:]))
            known = sorted((r for r in merged if stream_rank[rank_stream[r]] == r), reverse=True)
        else:
            known = empty
        if heavy_child[v] >= 0:
            stream = stream_of[heavy_child[v]]
        else:
            stale = 0
            while stale < len(known) and stream_rank[rank_stream[known[stale]]] != known[stale]:
                stale += 1
            if stale:
                del known[:stale]  # shared lists lose only invalid ranks
            if known:
                stream = rank_stream[known[0]]
                stream_rank[stream] = -1
            else:
                stream = len(stream_rank)
                stream_rank.append(-1)
        stream_of[v] = stream
        if heavy_parent[v] < 0:  # the chain ends at v
            rank = len(rank_stream)
            rank_stream.append(stream)
            stream_rank[stream] = rank
            known = [rank, *known]
        if unissued[v]:
            endings[v] = known
        for p in preds:
            unissued[p] -= 1
            if not unissued[p]:
                del endings[p]
    return stream_of
