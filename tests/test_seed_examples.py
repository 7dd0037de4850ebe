"""Hand-worked examples from the seed documents, with exact expected answers."""

from __future__ import annotations

import workbench as wb
from workbench.simulator.cost_model.costs import get_device, occupancy
from workbench.simulator.simulate import simulate


def test_nnc_diamond_matches_the_seed() -> None:
    # Seed 000: "assign N1, N2, N4 to stream 0 and N3 to stream 1" (the preferred schedule).
    # Ranks by hand: N4 has no successor (0); N2, N3 feed N4 (1); N1 heads the longest chain (2).
    s = wb.schedule(wb.models.nnc_diamond(), "nnc").validate()
    assert dict(s.streams) == {0: ("N1", "N2", "N4"), 1: ("N3",)}
    # N3 needs N1's signal; N4 needs N3's signal; N2 and N4 are ordered by stream 0 itself.
    assert s.syncs == (("N1", "N3"), ("N3", "N4"))
    assert s.notes["rank"] == {"N1": 2, "N2": 1, "N3": 1, "N4": 0}
    assert s.notes["chains"] == [["N1", "N2", "N4"], ["N3"]]


def test_nnc_prefers_the_longer_chain_documented_but_not_as_coded() -> None:
    # a has a short branch b listed first and a long branch c -> d -> e.  Documented NNC follows
    # the highest rank (c); the 2024 code's rank is 0/1, so it follows the first listed (b).
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("c", "d"), ("d", "e"), ("b", "f"),
                             ("e", "f")])
    doc = wb.schedule(g, "nnc").validate()
    coded = wb.schedule(g, "nnc", variant="as_coded").validate()
    assert doc.streams[0] == ("a", "c", "d", "e", "f")
    assert coded.streams[0] == ("a", "b", "f")


def test_nnc_recycles_a_terminated_stream_with_the_same_command() -> None:
    # Two diamonds in a row: the second split's side branch reuses stream 1, whose tail (N3 of the
    # first diamond) is an ancestor of it.
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"),
                             ("d", "e"), ("d", "f"), ("e", "g"), ("f", "g")])
    s = wb.schedule(g, "nnc").validate()
    assert dict(s.streams) == {0: ("a", "b", "d", "e", "g"), 1: ("c", "f")}


def test_nnc_skips_a_duplicate_wait() -> None:
    # Node 1 (stream 1) feeds nodes 2 and 3 (both stream 0, visited in that order): node 3 needs no
    # second wait, stream 0 already waited on node 1's signal.
    from workbench.schedulers.nnc import _signals

    ids = ["n0", "n1", "n2", "n3"]
    syncs, boundary = _signals([0, 1, 2, 3], [[], [0], [1], [1]], [[1], [2, 3], [], []],
                               [0, 1, 0, 0], ids)
    assert syncs == [("n0", "n1"), ("n1", "n2")]
    assert boundary == 0  # the source and both sinks are on stream 0


def test_wavefront_three_branches_as_in_raf_tests() -> None:
    s = wb.schedule(wb.models.raf_three_branches(), "wavefront").validate()
    assert s.notes["waves"] == [[["x"]], [["a0"], ["a1", "a3"], ["a2", "a4", "a5"]], [["concat"]]]
    assert s.syncs == () and s.n_barriers == 2
    assert dict(s.streams) == {0: ("x", "a0", "concat"), 1: ("a1", "a3"), 2: ("a2", "a4", "a5")}


def test_asap_heavy_chains_and_events() -> None:
    # Depths: x 5, a2 4, a4 3, a1 3, a5/a3/a0 2, concat 1.  Deepest first, each node claims its
    # first input (argument order) without a heavy consumer: a2<-x, a4<-a2, a3<-a1, a5<-a4, and
    # concat (inputs a0, a3, a5) claims a0 -- RAF takes the first free input, not the deepest.
    s = wb.schedule(wb.models.raf_three_branches(), "asap").validate()
    assert s.notes["heavy_chains"] == [["x", "a2", "a4", "a5"], ["a1", "a3"], ["a0", "concat"]]
    # One wait per light edge: x->a0, x->a1, a3->concat, a5->concat.
    assert sorted(s.syncs) == sorted([("x", "a0"), ("x", "a1"), ("a3", "concat"),
                                      ("a5", "concat")])


def test_mindspore_bfs_and_dfs_orders() -> None:
    g = wb.models.mindspore_six_kernels()
    bfs = wb.schedule(g, "bfs").streams[0]
    dfs = wb.schedule(g, "dfs").streams[0]
    assert bfs == ("kernel1", "kernel2", "kernel4", "kernel5", "kernel3", "kernel6")
    assert dfs == ("kernel1", "kernel2", "kernel3", "kernel4", "kernel5", "kernel6")


def test_raf_occupancy_example() -> None:
    # Seed 001: 48 thread blocks on 40 SMs x 2 blocks/SM: 32 of 80 slots idle.
    assert occupancy(48, get_device("rtx3070_laptop")) == 48 / 80
    g = wb.models.raf_occupancy_conv()
    serial = simulate(wb.schedule(g, "serial"), "rtx3070_laptop", mode="graph")
    parallel = simulate(wb.schedule(g, "nnc"), "rtx3070_laptop", mode="graph")
    assert parallel.makespan < serial.makespan  # two 60% kernels overlap


def test_textbook_mul_sub_run_in_parallel_under_graph_scheduling() -> None:
    g = wb.models.textbook_mul_sub_add()
    s = wb.schedule(g, "nnc").validate()
    assert s.stream_of("mul") != s.stream_of("sub")
    t = simulate(s, "h100", mode="graph")
    assert t.start_of("sub") < t.end_of("mul")
