"""Memory of real schedules: lifetimes, SOMAS conflicts, every planner on every built-in graph."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import workbench as wb
from workbench.memory import (
    check_no_overlap,
    lifetimes,
    peak_live_bytes,
    plan_memory,
    plan_usage,
    planners,
    replay_pool,
)

GIB = 1 << 30
GRAPHS = {
    "nnc_diamond": wb.models.nnc_diamond,
    "mindspore_six_kernels": wb.models.mindspore_six_kernels,
    "raf_three_branches": wb.models.raf_three_branches,
    "inception_v3": lambda: wb.models.inception_v3(batch=1, fused=False),
    "squeezenet": lambda: wb.models.squeezenet(batch=1),
    "randwire": lambda: wb.models.randwire(batch=1),
    "transformer_block": lambda: wb.models.transformer_block(batch=1),
}
FAST_PLANNERS = [p for p in planners() if p != "exact"]


def test_mindspore_bfs_peaks_at_5g_and_dfs_at_4g() -> None:
    g = wb.models.mindspore_six_kernels()
    for policy, peak in (("bfs", 5 * GIB), ("dfs", 4 * GIB), ("memory_greedy", 4 * GIB)):
        lt = lifetimes(wb.schedule(g, policy))
        assert peak_live_bytes(lt.records) == peak, policy
        assert plan_memory(wb.schedule(g, policy), "exact").arena_bytes == peak


@pytest.mark.parametrize("graph_name", sorted(GRAPHS))
@pytest.mark.parametrize("policy", ["serial", "nnc", "wavefront", "asap", "dfs"])
def test_every_planner_is_overlap_free_on_built_in_graphs(graph_name: str, policy: str) -> None:
    s = wb.schedule(GRAPHS[graph_name](), policy)
    arenas = {}
    for planner in FAST_PLANNERS:
        plan = plan_memory(s, planner)
        check_no_overlap(plan)  # the independent oracle
        assert plan.arena_bytes >= plan.lower_bound
        arenas[planner] = plan.arena_bytes
    aligned = plan_memory(s, "greedy_by_size", alignment=512).arena_bytes
    assert arenas["somas"] <= aligned  # SOMAS aligns to 512 B by default: compare like with like


def test_step_wise_lifetimes_would_wrongly_reuse_memory_across_streams() -> None:
    # a -> b on stream 0, c alone on stream 1.  In issue order a, b, c the output of a dies at
    # step 1 and c's output is born at step 2, but nothing orders c after b: they may run at once.
    g = wb.Graph.from_edges([("a", "b")], ops=["a", "b", "c"], sizes={"a": 100, "b": 10, "c": 100})
    s = wb.schedule(g, "nnc").validate()
    assert s.stream_of("c") != s.stream_of("a")
    lt = lifetimes(s)
    names = list(lt.names)
    a, c = names.index("a:out"), names.index("c:out")
    assert (min(a, c), max(a, c)) in lt.conflicts
    interval_only = plan_usage(lt.records, "greedy_by_size")
    ra, rc = interval_only.range_of(a), interval_only.range_of(c)
    assert ra.start < rc.stop and rc.start < ra.stop        # step-wise planning shares the bytes
    safe = plan_memory(s, "greedy_by_size")
    check_no_overlap(safe)
    ra, rc = safe.range_of(a), safe.range_of(c)
    assert not (ra.start < rc.stop and rc.start < ra.stop)  # the conflict set keeps them apart


def test_sync_makes_reuse_safe_again() -> None:
    # Same shapes, but c (on the other stream) waits for b through a sync: now a's memory may be
    # reused for c.  The schedule is written out so that c is on another stream than a (nnc puts
    # them on one stream, where the question does not arise).
    g = wb.Graph.from_edges([("a", "b"), ("b", "c"), ("x", "c")], ops=["a", "b", "x", "c"],
                            sizes={"a": 100, "b": 10, "x": 1, "c": 100})
    s = wb.Schedule(g, "by_hand", {0: ("a", "b"), 1: ("x", "c")}, (("b", "c"),),
                    ("a", "b", "x", "c")).validate()
    assert s.stream_of("c") != s.stream_of("a")
    lt = lifetimes(s)
    names = list(lt.names)
    a, c = names.index("a:out"), names.index("c:out")
    assert (min(a, c), max(a, c)) not in lt.conflicts
    plan = plan_memory(s, "greedy_by_size")
    check_no_overlap(plan)
    assert plan.arena_bytes < 100 + 100 + 10 + 1  # a's bytes serve c


def test_no_task_ops_alias_their_input() -> None:
    g = wb.models.inception_v3(batch=1, classifier=True, fused=False)
    lt = lifetimes(wb.schedule(g, "serial"))
    flatten_outputs = [t for op in g.ops if op.kind == "flatten" for t in op.outputs]
    assert flatten_outputs and all(t in lt.aliases for t in flatten_outputs)
    assert not set(flatten_outputs) & set(lt.names)
    assert lt.persistent_bytes > 0  # parameters and the input are lifelong


def test_trace_lifetimes_and_pool() -> None:
    g = wb.models.mindspore_six_kernels()
    trace = wb.simulate(wb.schedule(g, "bfs"), "h100")
    plan = plan_memory(trace, "somas", alignment=1)
    check_no_overlap(plan)
    assert plan.lower_bound == 5 * GIB
    pool = replay_pool(trace, chunk_bytes=GIB)
    assert pool.peak_in_use == 5 * GIB and pool.peak_reserved >= pool.peak_in_use
    assert (pool.timeline["reserved"] >= pool.timeline["in_use"]).all()


def test_memory_limit_caps_concurrency() -> None:
    # Eight chains p_i (1 MiB output) -> q_i (1 byte) -> sink.  One stream needs ~1 MiB at a time;
    # on eight streams every p_i output may be live at once (8 MiB).  A 4 MiB limit forces fewer
    # streams; a limit below one tensor cannot be met and says so.
    edges = [e for i in range(8) for e in ((f"p{i}", f"q{i}"), (f"q{i}", "sink"))]
    sizes = {**{f"p{i}": 1 << 20 for i in range(8)}, **{f"q{i}": 1 for i in range(8)}, "sink": 1}
    g = wb.Graph.from_edges(edges, sizes=sizes, thread_blocks={k: 8 for k in sizes})
    free = wb.schedule(g, "nnc")
    assert free.n_streams == 8 and plan_memory(free, "greedy_by_size").arena_bytes > 8 << 20
    capped = wb.schedule(g, "nnc", memory_limit_bytes=4 << 20).validate()
    assert plan_memory(capped, "greedy_by_size").arena_bytes <= 4 << 20
    assert 1 <= capped.n_streams < 8 and capped.notes["memory_limit_tries"][0][0] == 8
    with pytest.raises(wb.OptionError, match="cannot fit"):
        wb.schedule(g, "nnc", memory_limit_bytes=1 << 19)
    with pytest.raises(wb.OptionError, match="memory_limit_bytes must be a positive"):
        wb.schedule(g, "nnc", memory_limit_bytes=-1)


def test_compare_reports_memory() -> None:
    cmp = wb.compare(wb.models.mindspore_six_kernels(), ["bfs", "dfs"], show_progress=False)
    row = cmp.table.set_index("policy")
    assert row.loc["bfs", "peak_live_mib"] == 5 * 1024 and row.loc["dfs", "peak_live_mib"] == 4096
    assert (cmp.table["arena_ratio"] >= 1.0).all()


def test_lifetimes_reject_other_objects() -> None:
    with pytest.raises(wb.MemoryPlanError, match="need a Schedule or a Trace"):
        lifetimes("graph.json")


def test_clique_bound_matches_brute_force_on_small_schedules() -> None:
    import networkx as nx

    from tests.strategies import dags
    from workbench.memory import conflict_clique_bound

    @settings(max_examples=40)
    @given(graph=dags(max_ops=10))
    def check(graph: wb.Graph) -> None:
        s = wb.schedule(graph, "nnc")
        lt = lifetimes(s)
        if lt.conflicts is None:
            return
        g = nx.Graph()
        for i, r in enumerate(lt.records):
            if r.size > 0:
                g.add_node(i, weight=r.size)
        g.add_edges_from((a, b) for a, b in lt.conflicts if a in g and b in g)
        _, best = nx.max_weight_clique(g, weight="weight") if len(g) else ((), 0)
        assert conflict_clique_bound(lt.records, lt.conflicts) == best
        plan = plan_memory(s, "somas", alignment=1)
        check_no_overlap(plan)
        assert plan.arena_bytes >= best

    check()


def test_clique_bound_with_gigabyte_tensors() -> None:
    # nnc puts kernel3 on its own stream: outputs 1-5 (1+1+2+1+1 G) pairwise conflict, kernel6's
    # does not conflict with 1, 2 or 4.  Sizes above 2**31 once overflowed scipy's int32 max-flow.
    from workbench.memory import conflict_clique_bound

    s = wb.schedule(wb.models.mindspore_six_kernels(), "nnc")
    lt = lifetimes(s)
    assert conflict_clique_bound(lt.records, lt.conflicts) == 6 * GIB
    plan = plan_memory(s, "somas")
    check_no_overlap(plan)
    assert plan.lower_bound == 6 * GIB and plan.notes["interval_lower_bound"] == 5 * GIB
