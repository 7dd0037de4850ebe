"""NNC's static stream schedule (seed 000/002, libccv ``_ccv_nnc_graph_static_schedule_new``).

Steps, as in the seed and ``shared/notes/nnc_mindspore.md`` §A.2:

1. **Edge reduction**: drop ``v -> d`` when another successor of ``v`` already precedes ``d``.
2. **Rank**: the length (in edges) of the longest reduced chain following each node, computed by a
   reverse traversal.
3. **Stream assignment**, nodes in NNC's visit order (Kahn waves with the single-child shortcut):
   an unassigned node *recycles* the first stream, in creation order, whose last node is its
   ancestor ("deterministically terminated before it"), preferring one that already ran the same
   op type; otherwise a new stream is opened.  The stream then *follows the chain*: it takes the
   highest-ranked unassigned reduced successor (ties: one whose op type the stream already ran,
   then the first listed) until none is left; the chain's end becomes the stream's tail.
4. **Signals**: for each reduced edge across streams, the producer records a signal (one per
   producer) and the consumer's stream waits on it, unless that stream already waited on it.

``variant="as_coded"`` reproduces the 2024 libccv code instead of the documented algorithm: its rank
is effectively 1 for a node with a reduced predecessor and 0 otherwise, and the op-type tie-break
in chain following never fires (notes §A.5), so chains follow the first listed successor.

``max_streams``: as in NNC, when the cap is reached a node may join a stream whose tail is not
its descendant, with an artificial ordering "tail before node".  Simplification: we only accept
tails that were already visited (which implies "not a descendant" and keeps the visit order a valid
issue order).  The cap is soft in NNC; if no stream qualifies a new one is opened and the streams
are then folded onto ``max_streams`` physical streams
(:func:`workbench.values.schedule.fold_streams`).
The graph-boundary begin/end signals to the caller's stream (§A.2 step 6: the distinct
non-default streams of the sources wait on ``begin``; every sink on a non-default stream signals
stream 0 before ``end``) are counted in ``notes["boundary_waits"]`` rather than emitted as
op-to-op syncs.

Complexity: O(E·H/64) for the reduction (H = longest edge span in topological order), O(V + E) for
rank, visit order and chains, O((V + E)·S) for the recycling checks, O(E) for signals.
"""

from __future__ import annotations

from workbench.errors import OptionError
from workbench.schedulers._dag import (
    StreamTails,
    longest_chain_after,
    nnc_visit_order,
    transitive_reduction,
)
from workbench.values.graph import Graph
from workbench.values.schedule import Schedule, build_schedule, check_max_streams

VARIANTS = ("documented", "as_coded")


def schedule_nnc(graph: Graph, *, max_streams: int | None = None,
                 variant: str = "documented") -> Schedule:
    """Assign streams and signals the way NNC's static scheduler does (see module docstring).

    Examples
    --------
    >>> g = Graph.from_edges([("N1", "N2"), ("N1", "N3"), ("N2", "N4"), ("N3", "N4")])
    >>> s = schedule_nnc(g)
    >>> s.streams
    {0: ('N1', 'N2', 'N4'), 1: ('N3',)}
    >>> s.syncs
    (('N1', 'N3'), ('N3', 'N4'))
    """
    max_streams = check_max_streams(max_streams, len(graph))
    if variant not in VARIANTS:
        raise OptionError(f"unknown nnc variant {variant!r} (known: {', '.join(VARIANTS)})")
    ops = graph.ops
    ids = [op.id for op in ops]
    kinds = [op.kind for op in ops]
    rsucc, rpred = transitive_reduction(graph)
    visit = nnc_visit_order(graph)
    if variant == "documented":
        rank = longest_chain_after(graph.topo_index, rsucc)
    else:
        rank = [1 if rpred[i] else 0 for i in range(len(ops))]
    commands: list[set[str]] = []
    tails = StreamTails(rpred, rsucc, keep_tail_clocks=max_streams is not None,
                        labels=commands.__getitem__)
    visited = [False] * len(ops)
    artificial: list[tuple[int, int]] = []
    chains: list[list[str]] = []
    for v in visit:
        clock = tails.clock_of(v)
        if tails.stream_of[v] < 0:
            stream = _pick_stream(tails, commands, clock, kinds[v])
            if stream is None and max_streams is not None and tails.n_streams >= max_streams:
                stream = _pick_over_cap(tails, commands, visited, kinds[v])
                if stream is not None:
                    tail = tails.tail_node[stream]
                    artificial.append((tail, v))
                    clock = tails.clock_of(v, extra=(tail,))
            if stream is None:
                stream = tails.new_stream()
                commands.append(set())
            tails.place(v, stream)
            commands[stream].add(kinds[v])
            chain = [v]
            if max_streams != 1:
                chain += _follow_chain(v, stream, rsucc, rank, kinds, commands, tails, variant)
            tails.set_tail(stream, chain[-1])
            chains.append([ids[i] for i in chain])
        tails.visit(v, clock)
        visited[v] = True
    stream_of = dict(zip(ids, tails.stream_of))
    syncs, boundary = _signals(visit, rpred, rsucc, tails.stream_of, ids)
    order = [ids[i] for i in visit]
    notes = {
        "rank": dict(zip(ids, rank)),
        "chains": chains,
        "visit_order": order,
        "reduced_edges": sum(len(s) for s in rsucc),
        "removed_edges": sum(len(s) for s in graph.succ_index) - sum(len(s) for s in rsucc),
        "artificial_orderings": [(ids[a], ids[b]) for a, b in artificial],
        "boundary_waits": boundary,
        "variant": variant,
    }
    return build_schedule(graph, "nnc", stream_of, order, syncs=syncs, max_streams=max_streams,
                          options={"max_streams": max_streams, "variant": variant}, notes=notes)


def _pick_stream(tails: StreamTails, commands: list[set[str]], clock, kind: str) -> int | None:
    """Recycle: the first stream (creation order) whose tail precedes the node, preferring one
    that already ran ``kind``."""
    return tails.pick_first(clock, label=kind)


def _pick_over_cap(tails: StreamTails, commands: list[set[str]], visited: list[bool],
                   kind: str) -> int | None:
    """Over the cap: any stream whose tail was already visited, preferring a matching op type."""
    candidates = [s for s in range(tails.n_streams) if visited[tails.tail_node[s]]]
    for s in candidates:
        if kind in commands[s]:
            return s
    return candidates[0] if candidates else None


def _follow_chain(v: int, stream: int, rsucc: list[list[int]], rank: list[int], kinds: list[str],
                  commands: list[set[str]], tails: StreamTails, variant: str) -> list[int]:
    chain: list[int] = []
    stream_of = tails.stream_of
    cur = v
    while True:
        best = None
        for d in rsucc[cur]:
            if stream_of[d] >= 0:
                continue
            if best is None or rank[d] > rank[best]:
                best = d
            elif (variant == "documented" and rank[d] == rank[best]
                  and kinds[d] in commands[stream] and kinds[best] not in commands[stream]):
                best = d
        if best is None:
            return chain
        tails.place(best, stream)
        commands[stream].add(kinds[best])
        chain.append(best)
        cur = best


def _signals(visit: list[int], rpred: list[list[int]], rsucc: list[list[int]],
             streams: list[int], ids: list[str]) -> tuple[list[tuple[str, str]], int]:
    """NNC's signal pass over reduced edges with exact-duplicate wait elimination.  Consumers in
    visit order, and each consumer's producers in visit order too (NNC walks its incoming exec
    list, which it builds in visit order), so the waits and signal ids do not depend on the
    order the graph's edges were written in.  ``streams[v]`` is node ``v``'s stream.  O(V + E).

    Boundary (§A.2 step 6): ``begin`` waits = the distinct non-default streams of the sources
    (none is fed by a stream-0 predecessor: sources have none); ``end`` waits = the destinations
    (sinks) on non-default streams, each signalling stream 0."""
    position = [0] * len(rpred)
    for k, v in enumerate(visit):
        position[v] = k
    waited: dict[int, set[int]] = {}  # stream -> producers whose signal it waited on
    syncs = []
    for v in visit:
        producers = rpred[v]
        if not producers:
            continue
        sv = streams[v]
        if len(producers) == 1:  # the common case: one reduced producer
            if streams[producers[0]] == sv:
                continue
            cross = producers
        else:
            cross = [p for p in producers if streams[p] != sv]
            if not cross:
                continue
            if len(cross) > 1:
                cross.sort(key=position.__getitem__)
        seen = waited.setdefault(sv, set())
        for p in cross:
            if p in seen:
                continue  # exact-duplicate wait: the stream already waited on p's signal
            seen.add(p)
            syncs.append((ids[p], ids[v]))
    begin = len({streams[v] for v in visit if not rpred[v]} - {0})
    end = sum(1 for v in visit if not rsucc[v] and streams[v] != 0)
    return syncs, begin + end
