"""RAF's wavefront schedule (seed 001, ``stream_schedule_wavefront.cc``; notes raf_nimble.md §2).

On the transitively reduced graph, repeat: the ready nodes (no unscheduled input) each start a
chain; a chain grows while its current node has exactly one consumer and that consumer has no other
pending input.  The chains built from one ready set form a *wave*; chain ``j`` of a wave runs on
stream ``j``; waves are separated by a barrier that joins all streams; there are no events inside a
wave.  The next ready set is formed, in chain order then consumer order, by the consumers of each
chain's last node whose inputs are now all scheduled.

Tie-breaks: the first ready set is the input-free nodes in RAF's post-DFS order (inputs before
consumers, by argument order); consumers in program order.  With ``max_streams`` chain ``j`` goes to
stream ``j % max_streams`` (chains sharing a stream run one after the other inside the wave).
Complexity O(V + E) after the reduction.
"""

from __future__ import annotations

from workbench.schedulers._dag import post_dfs_order, transitive_reduction
from workbench.values.graph import Graph
from workbench.values.schedule import Schedule, build_schedule, check_max_streams


def schedule_wavefront(graph: Graph, *, max_streams: int | None = None) -> Schedule:
    """Waves of independent chains separated by barriers (see module docstring).

    >>> g = Graph.from_edges([("x", "a0"), ("x", "a1"), ("a1", "a3"), ("x", "a2"), ("a2", "a4"),
    ...                       ("a4", "a5"), ("a0", "c"), ("a3", "c"), ("a5", "c")])
    >>> schedule_wavefront(g).notes["waves"]
    [[['x']], [['a0'], ['a1', 'a3'], ['a2', 'a4', 'a5']], [['c']]]
    """
    max_streams = check_max_streams(max_streams, len(graph))
    ops = graph.ops
    rsucc, rpred = transitive_reduction(graph)
    remaining = [len(p) for p in rpred]
    dfs_pos = {node: k for k, node in enumerate(post_dfs_order(graph))}
    ready = sorted((i for i in range(len(ops)) if remaining[i] == 0), key=dfs_pos.__getitem__)
    waves: list[list[list[int]]] = []
    while ready:
        chains = []
        for node in ready:
            chain = [node]
            cur = node
            while len(rsucc[cur]) == 1 and remaining[rsucc[cur][0]] == 1:
                cur = rsucc[cur][0]
                remaining[cur] = 0
                chain.append(cur)
            chains.append(chain)
        next_ready = []
        for chain in chains:
            for d in rsucc[chain[-1]]:
                remaining[d] -= 1
                if remaining[d] == 0:
                    next_ready.append(d)
        waves.append(chains)
        ready = next_ready
    order: list[str] = []
    stream_of: dict[str, int] = {}
    barriers: list[int] = []
    for w, chains in enumerate(waves):
        if w:
            barriers.append(len(order))
        for j, chain in enumerate(chains):
            s = j if max_streams is None else j % max_streams
            for i in chain:
                order.append(ops[i].id)
                stream_of[ops[i].id] = s
    notes = {"waves": [[[ops[i].id for i in c] for c in chains] for chains in waves],
             "n_waves": len(waves)}
    return build_schedule(graph, "wavefront", stream_of, order, barriers=barriers, syncs=(),
                          options={"max_streams": max_streams}, notes=notes)
