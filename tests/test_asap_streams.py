"""RAF ASAP's stream recycling against brute-force ancestry: every chain head takes the stream whose
chain ended last among the ended streams whose last op is an ancestor of the head, else a new one.

The graphs are large enough that many streams end and are reused, have late sources (whose
descendants must not see older streams as finished) and sinks that the ready stack defers to the
end (the case that once kept tens of thousands of ancestor clocks alive at a million ops)."""

from __future__ import annotations

import random

import pytest

from workbench.schedulers.asap import schedule_asap
from workbench.values.graph import Graph


def _graph(n: int, rng: random.Random) -> Graph:
    edges = []
    for i in range(1, n):
        if rng.random() < 0.03:  # a late source
            continue
        lo = max(0, i - 40)
        for p in rng.sample(range(lo, i), min(i - lo, rng.randint(1, 3))):
            edges.append((f"n{p}", f"n{i}"))
    return Graph.from_edges(edges)


def _expected_streams(graph: Graph, order: list[str], chains: list[list[str]]) -> dict[str, int]:
    """Replay the issue order with explicit ancestor sets (O(V^2), small graphs only)."""
    ancestors: dict[str, set[str]] = {}
    preds: dict[str, list[str]] = {op.id: [] for op in graph.ops}
    for a, b in graph.edges:
        preds[b].append(a)
    chain_of = {op: chain for chain in chains for op in chain}
    stream: dict[str, int] = {}
    tail: list[str] = []
    ended_rank: list[int] = []   # -1 while the stream's chain runs
    endings = 0
    for v in order:
        ancestors[v] = set().union(*(ancestors[p] | {p} for p in preds[v]))
        chain = chain_of[v]
        k = chain.index(v)
        if k:
            s = stream[chain[k - 1]]
        else:
            finished = [s for s in range(len(tail))
                        if ended_rank[s] >= 0 and tail[s] in ancestors[v]]
            if finished:
                s = max(finished, key=ended_rank.__getitem__)
                ended_rank[s] = -1
            else:
                s = len(tail)
                tail.append(v)
                ended_rank.append(-1)
        stream[v] = s
        tail[s] = v
        if k == len(chain) - 1:
            ended_rank[s] = endings
            endings += 1
    return stream


@pytest.mark.parametrize("seed", range(5))
def test_heads_reuse_the_latest_ended_stream_they_reach(seed: int) -> None:
    graph = _graph(1000, random.Random(seed))
    schedule = schedule_asap(graph)
    chains = schedule.notes["heavy_chains"]
    expected = _expected_streams(graph, schedule.issue_order, chains)
    pairs = {(schedule.stream_of(v), expected[v]) for v in expected}
    # the same partition into streams (ids may be numbered differently)
    assert len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs})
    reused = len(chains) - len({b for _, b in pairs})
    assert reused > 60, "too few reuses to exercise the recycling"
