"""The schedulers' transitive reduction (``workbench.schedulers._dag``) against networkx, in each of
its set representations (bitsets relative to a node, frozensets of positions for sparse sets over
long spans), and its cost on a wide fan (counted in bytes, not seconds)."""

from __future__ import annotations

import tracemalloc

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from tests.strategies import dags
from workbench.schedulers import _dag
from workbench.schedulers._tails import pack_bits, set_bits


def _reduced_edges(graph: wb.Graph) -> set[tuple[str, str]]:
    succ, pred = _dag.transitive_reduction(graph)
    ids = graph.op_ids
    edges = {(ids[i], ids[j]) for i, out in enumerate(succ) for j in out}
    assert edges == {(ids[i], ids[j]) for j, ins in enumerate(pred) for i in ins}
    for i, out in enumerate(succ):  # the graph's own successor order is kept
        assert out == [j for j in graph.succ_index[i] if j in out]
    return edges


def _expected(graph: wb.Graph) -> set[tuple[str, str]]:
    return set(nx.transitive_reduction(graph.to_networkx()).edges)


@settings(max_examples=150, deadline=None)
@given(graph=dags(max_ops=30, costs=False))
def test_reduction_matches_networkx(graph: wb.Graph) -> None:
    assert _reduced_edges(graph) == _expected(graph)


@settings(max_examples=150, deadline=None)
@given(graph=dags(max_ops=30, costs=False))
def test_reduction_matches_networkx_with_position_sets(graph: wb.Graph) -> None:
    # every span counts as long and every set as sparse, so small graphs take the frozenset
    # paths (and the conversions back to bitsets)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_dag, "_KEEP_REACH_SPAN", 0)
        patch.setattr(_dag, "_SPARSE_SPAN", 1)
        patch.setattr(_dag, "_SPARSE_DENSITY", 2)
        assert _reduced_edges(graph) == _expected(graph)


def _fan_with_shortcuts(width: int) -> wb.Graph:
    """src -> m_k -> sink for every k, chains hanging off some branches, and implied edges
    (src -> sink, src -> the chains' ends, m_0 -> sink through m_0's chain) to drop."""
    edges = [("src", f"m{k}") for k in range(width)] + [(f"m{k}", "sink") for k in range(width)]
    edges += [(f"m{k}", f"c{k}") for k in range(0, width, 97)]
    edges += [(f"c{k}", "sink") for k in range(0, width, 97)]
    edges += [("src", "sink"), ("src", "c0"), ("m0", "sink")]
    return wb.Graph.from_edges(edges)


def test_wide_fan_with_long_edges_matches_networkx() -> None:
    graph = _fan_with_shortcuts(6000)  # spans past the sparse threshold
    reduced = _reduced_edges(graph)
    assert reduced == _expected(graph)
    assert ("src", "sink") not in reduced and ("src", "c0") not in reduced


def test_wide_fan_memory_stays_linear() -> None:
    # As bitsets relative to each branch, every branch's set reaches the far sink: width² / 8
    # bytes in all (100 MiB at 30k branches).  As position sets it is a few hundred bytes each.
    graph = _fan_with_shortcuts(30000)
    built = (graph.succ_index, graph.pred_index, graph.topo_index)  # outside the measurement
    assert built
    tracemalloc.start()
    try:
        _dag.transitive_reduction(graph)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * 2**20, f"transitive reduction of a 30k fan peaked at {peak / 2**20:.0f} MiB"


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10_000), st.frozensets(st.integers(0, 20_000), max_size=40))
def test_pack_bits_is_the_inverse_of_set_bits(base: int, offsets: frozenset[int]) -> None:
    positions = {base + k for k in offsets}
    packed = pack_bits(positions, base)
    assert packed == sum(1 << k for k in offsets)
    assert set_bits(base, packed) == sorted(positions)
