"""min_streams (Nimble): maximum logical concurrency, fewest syncs, fewest streams.

Every property is checked against an independent oracle (networkx reachability, networkx's
transitive reduction and Hopcroft–Karp, brute-force antichains), not against the code under test.
"""

from __future__ import annotations

import itertools
import random
import tracemalloc

import networkx as nx
import pytest
from hypothesis import given, settings

import workbench as wb
from tests.strategies import dags
from workbench.schedulers.min_streams import (
    _bits,
    _chains_reached,
    max_bipartite_matching,
    schedule_min_streams,
)


def _closure(graph: wb.Graph) -> nx.DiGraph:
    return nx.transitive_closure_dag(graph.to_networkx())


def _independent_pairs(graph: wb.Graph) -> list[tuple[str, str]]:
    closure = _closure(graph)
    return [(a, b) for a, b in itertools.combinations(graph.op_ids, 2)
            if not closure.has_edge(a, b) and not closure.has_edge(b, a)]


def _has_max_logical_concurrency(s: wb.Schedule) -> bool:
    return all(s.stream_of(a) != s.stream_of(b) for a, b in _independent_pairs(s.graph))


def _width(graph: wb.Graph) -> int:
    """Largest antichain by brute force (graphs of at most ~10 ops)."""
    closure = _closure(graph)
    ids = graph.op_ids
    best = 1 if ids else 0
    for r in range(2, len(ids) + 1):
        if not any(all(not closure.has_edge(a, b) and not closure.has_edge(b, a)
                       for a, b in itertools.combinations(sub, 2))
                   for sub in itertools.combinations(ids, r)):
            break
        best = r
    return best


def _meg_and_matching(graph: wb.Graph) -> tuple[int, int]:
    """MEG edge count and maximum matching size on MEG edges, via networkx."""
    meg = nx.transitive_reduction(graph.to_networkx())
    bip = nx.Graph()
    left = [("L", v) for v in meg.nodes]
    bip.add_nodes_from(left)
    bip.add_nodes_from(("R", v) for v in meg.nodes)
    bip.add_edges_from((("L", a), ("R", b)) for a, b in meg.edges)
    matching = nx.bipartite.hopcroft_karp_matching(bip, top_nodes=left)
    return meg.number_of_edges(), len(matching) // 2


def _lexicographic_optimum(graph: wb.Graph, minimize: str) -> tuple[int, int]:
    """(streams, syncs) of the best maximum-concurrency assignment, from a maximum-weight matching
    on the reachability pairs (networkx): consecutive pairs on streams form such a matching,
    streams = V - its size, syncs = MEG edges - MEG pairs in it."""
    closure, meg = _closure(graph), nx.transitive_reduction(graph.to_networkx())
    big = len(graph) + 1
    bip = nx.Graph()
    for a, b in closure.edges:
        is_meg = meg.has_edge(a, b)
        weight = big * is_meg + 1 if minimize == "syncs" else big + is_meg
        bip.add_edge(("L", a), ("R", b), weight=weight)
    matching = nx.max_weight_matching(bip)
    pairs = [tuple(x[1] for x in sorted(e)) for e in matching]
    return len(graph) - len(pairs), meg.number_of_edges() - sum(meg.has_edge(*p) for p in pairs)


# The graph on which Nimble's two matchings alone give 4 streams although the width is 3.
TWO_LEVEL_MISSES_WIDTH = [("n1", "n2"), ("n1", "n3"), ("n0", "n3"), ("n2", "n3"), ("n0", "n5"),
                          ("n1", "n5"), ("n3", "n5"), ("n2", "n6"), ("n4", "n6"), ("n3", "n7")]


# The shared invariants are checked for every registered policy in tests/test_common_policies.py.


@settings(max_examples=80)
@given(graph=dags(max_ops=10, costs=False))
def test_maximum_concurrency_fewest_syncs_fewest_streams(graph: wb.Graph) -> None:
    s = schedule_min_streams(graph).validate()
    # Theorem 1: ops with no path between them are on different streams.
    assert _has_max_logical_concurrency(s)
    # Theorem 2: one sync per MEG edge outside a maximum matching (both computed by networkx).
    meg_edges, matched = _meg_and_matching(graph)
    assert s.notes["meg_edges"] == meg_edges and s.notes["matched_edges"] == matched
    assert s.n_syncs == meg_edges - matched and s.notes["syncs_check"]
    # Dilworth: the fewest totally ordered streams is the width (on graphs this small the fewest
    # syncs never cost a stream in our searches; see test_fewest_syncs_and_width_can_conflict)
    assert s.notes["width_status"] == "width"
    assert s.n_streams == _width(graph)


# The smallest graph we found where the fewest syncs (6, with 6 streams) and the width (5 streams,
# which needs 7 syncs) cannot be had together.
SYNCS_OR_WIDTH = [(0, 5), (1, 5), (2, 7), (2, 10), (3, 4), (4, 7), (4, 8), (5, 6), (5, 8), (6, 11),
                  (7, 9), (7, 11), (7, 13), (8, 10)]


@pytest.mark.parametrize("minimize", ["syncs", "streams"])
@settings(max_examples=40)
@given(graph=dags(max_ops=22, costs=False))
def test_lexicographic_optimum(minimize: str, graph: wb.Graph) -> None:
    s = schedule_min_streams(graph, minimize=minimize).validate()
    assert _has_max_logical_concurrency(s)
    assert (s.n_streams, s.n_syncs) == _lexicographic_optimum(graph, minimize)


def test_fewest_syncs_and_width_can_conflict() -> None:
    g = wb.Graph.from_edges([(f"n{a}", f"n{b}") for a, b in SYNCS_OR_WIDTH],
                            ops=[f"n{i}" for i in range(14)])
    syncs_first = schedule_min_streams(g).validate()
    assert (syncs_first.n_streams, syncs_first.n_syncs) == (6, 6)
    assert syncs_first.notes["width_status"] == "syncs_first"
    assert syncs_first.notes["syncs_check"] and syncs_first.notes["extra_syncs"] == 0
    streams_first = schedule_min_streams(g, minimize="streams").validate()
    assert (streams_first.n_streams, streams_first.n_syncs) == (5, 7)
    assert streams_first.notes["width_status"] == "width"
    assert streams_first.notes["extra_syncs"] == 1 and not streams_first.notes["syncs_check"]
    for s in (syncs_first, streams_first):
        assert _has_max_logical_concurrency(s)
    assert _lexicographic_optimum(g, "syncs") == (6, 6)
    assert _lexicographic_optimum(g, "streams") == (5, 7)


def test_width_refinement_fixes_the_two_level_counterexample() -> None:
    g = wb.Graph.from_edges(TWO_LEVEL_MISSES_WIDTH, ops=[f"n{i}" for i in range(8)])
    s = schedule_min_streams(g).validate()
    assert s.notes["chains"] == [["n0", "n3", "n5"], ["n1", "n2", "n6"], ["n4"], ["n7"]]
    assert s.notes["nimble_streams"] == 4 and s.notes["width_augmentations"] == 1
    assert s.n_streams == _width(g) == 3           # e.g. {n5, n6, n7} is an antichain
    # n1 -> n2 -> (n3) -> n7 shares a stream; n4 -> n6 too; syncs stay at 7 MEG - 4 matched.
    assert dict(s.streams) == {0: ("n0", "n3", "n5"), 1: ("n1", "n2", "n7"), 2: ("n4", "n6")}
    assert s.syncs == (("n2", "n3"), ("n2", "n6"), ("n3", "n7"))
    assert _has_max_logical_concurrency(s)


def test_diamond_by_hand() -> None:
    # MEG = the 4 edges; a maximum matching takes a-b, b-d (a-c or c-d cannot join them): 2 chains,
    # and 4 - 2 = 2 syncs: a -> c and c -> d.
    s = schedule_min_streams(wb.models.nnc_diamond()).validate()
    assert dict(s.streams) == {0: ("N1", "N2", "N4"), 1: ("N3",)}
    assert s.syncs == (("N1", "N3"), ("N3", "N4"))


def test_chains_that_follow_each_other_share_a_stream() -> None:
    # a -> b, a -> c, b -> d, c -> d, d -> e, d -> f: a maximum matching has 3 edges (d has one
    # matched predecessor), e.g. chains [a b d e], [c], [f]; c reaches f, so the second matching
    # merges them: 2 streams (the width) and 6 MEG edges - 3 matched = 3 syncs.
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "e"),
                             ("d", "f")])
    s = schedule_min_streams(g).validate()
    assert s.n_streams == 2 and s.notes["merged_chain_pairs"] == 1
    assert s.stream_of("c") == s.stream_of("f")
    assert s.notes["chains"] == [["a", "b", "d", "e"], ["c"], ["f"]]
    assert s.n_syncs == 6 - 3 == s.notes["meg_edges"] - s.notes["matched_edges"]


def test_matching_helper_is_maximum() -> None:
    # Greedy would match 0-0 and leave 1 unmatched; an augmenting path fixes it.
    match_l, match_r = max_bipartite_matching([[0, 1], [0], [1, 2]], 3)
    assert sum(v >= 0 for v in match_l) == 3
    assert all(match_r[v] == u for u, v in enumerate(match_l) if v >= 0)


@pytest.mark.parametrize("name", ["inception_v3", "nasnet_a_large", "randwire", "squeezenet",
                                  "transformer_block"])
def test_no_more_syncs_or_streams_than_other_maximum_concurrency_policies(name: str) -> None:
    g = wb.models.build(name)
    mine = schedule_min_streams(g).validate()
    assert _has_max_logical_concurrency(mine)
    compared = 0
    for policy in ("nnc", "asap"):
        other = wb.schedule(g, policy)
        if other.n_barriers == 0 and _has_max_logical_concurrency(other):
            compared += 1
            assert mine.n_syncs <= other.n_syncs, policy
            assert mine.n_streams <= other.n_streams, policy
    assert compared >= 1  # nnc and asap reach maximum concurrency on these networks


def test_bad_options() -> None:
    g = wb.Graph.from_edges([("a", "b")])
    with pytest.raises(wb.OptionError, match="max_streams"):
        schedule_min_streams(g, max_streams=0)
    with pytest.raises(wb.OptionError, match="known: syncs, streams"):
        schedule_min_streams(g, minimize="edges")


@pytest.mark.parametrize("width", [0, 1, 63, 512, 513, 4000])
def test_set_bit_indices_of_narrow_and_wide_sets(width: int) -> None:
    rng = random.Random(width)
    for _ in range(10):
        x = rng.getrandbits(width) if width else 0
        assert _bits(x) == [i for i in range(width) if x >> i & 1]


def _reference_chains_reached(rsucc, heads, chain_of, keep):
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(rsucc)))
    graph.add_edges_from((i, j) for i, out in enumerate(rsucc) for j in out)
    head_set = set(heads)
    return {i: sum(1 << chain_of[h] for h in nx.descendants(graph, i) if h in head_set)
            for i in keep}


@pytest.mark.parametrize("wide", [3, 70, 300])
def test_chains_reached_matches_reachability_on_wide_fan_outs(wide: int) -> None:
    # a random layered DAG whose sources fan out wider than the one-pass threshold (64)
    rng = random.Random(wide)
    n = wide * 3
    rsucc = [sorted(rng.sample(range(i + 1, n), min(n - i - 1, rng.choice([1, 2, wide]))))
             for i in range(n)]
    rpred: list[list[int]] = [[] for _ in range(n)]
    for i, out in enumerate(rsucc):
        for j in out:
            rpred[j].append(i)
    heads = [i for i in range(n) if rng.random() < 0.5]
    chain_of = [0] * n
    for c, h in enumerate(heads):
        chain_of[h] = c
    keep = set(rng.sample(range(n), n // 3))
    got = _chains_reached(rsucc, rpred, tuple(range(n)), heads, chain_of, keep)
    assert got == _reference_chains_reached(rsucc, heads, chain_of, keep)


def test_chains_reached_of_a_wide_fan_stays_linear_in_memory() -> None:
    # source -> 40k branches, each its own chain -> sink: a table of 1 << chain per head held
    # 40k² / 16 bytes (100 MiB) and the source's union grew one branch at a time
    n = 40_000
    rsucc = [list(range(1, n + 1))] + [[n + 1] for _ in range(n)] + [[]]
    rpred = [[]] + [[0] for _ in range(n)] + [list(range(1, n + 1))]
    heads = list(range(1, n + 1))
    chain_of = [0] + list(range(n)) + [0]
    tracemalloc.start()
    try:
        got = _chains_reached(rsucc, rpred, tuple(range(n + 2)), heads, chain_of, {0, 1})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == {0: (1 << n) - 1, 1: 0}
    assert peak < 20 * 2**20, f"{peak / 2**20:.0f} MiB for a 40k fan"
