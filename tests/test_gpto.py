"""GPTO: priority portfolio, earliest-gap insertion, memory limit, typed (copy) streams."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import workbench as wb
from tests.strategies import dags
from workbench.errors import OptionError
from workbench.memory import plan_memory
from workbench.schedulers import gpto
from workbench.schedulers.gpto import PRIORITIES, schedule_gpto
from workbench.simulator.simulate import simulate

MIB = 1 << 20


# The shared invariants are checked for every registered policy in tests/test_common_policies.py.
@settings(max_examples=30)
@given(graph=dags(max_ops=20))
def test_estimate_is_at_least_the_lower_bound(graph: wb.Graph) -> None:
    s = schedule_gpto(graph, priorities=["bottom_level", "depth_min"])
    assert s.notes["estimated_makespan_us"] >= s.notes["lower_bound_us"] - 1e-6


def test_portfolio_notes_list_every_priority() -> None:
    s = schedule_gpto(wb.models.inception_v3(batch=1, fused=False))
    rows = s.notes["portfolio"]
    assert [r["priority"] for r in rows] == list(PRIORITIES)
    assert all(r["makespan_us"] > 0 and r["arena_bytes"] > 0 and r["fits"] for r in rows)
    best = min(r["makespan_us"] for r in rows)
    assert s.notes["estimated_makespan_us"] == pytest.approx(best)
    assert s.notes["winner"] in PRIORITIES and s.notes["memory_limit_met"]
    # the recorded arena is what plan_memory says about the returned schedule
    assert plan_memory(s, "greedy_by_size").arena_bytes == s.notes["arena_bytes"]


def test_portfolio_arenas_only_where_the_choice_needs_them() -> None:
    """``portfolio_arenas="needed"`` (what compare() passes) plans no arena the choice does not
    need: without a limit, only those of a tie at the shortest makespan; the schedule is the one
    "auto" returns, and a bad value is a one-line OptionError."""
    g = wb.models.inception_v3(batch=1, fused=False)
    auto = schedule_gpto(g)
    needed = schedule_gpto(g, portfolio_arenas="needed")
    assert needed.issue_order == auto.issue_order and needed.streams == auto.streams
    assert needed.syncs == auto.syncs and needed.notes["winner"] == auto.notes["winner"]
    best = min(round(r["makespan_us"], 6) for r in needed.notes["portfolio"])
    planned = [r for r in needed.notes["portfolio"] if r["arena_bytes"] is not None]
    # only a tie at the shortest makespan is decided by arena
    assert len(planned) < len(PRIORITIES)
    assert all(round(r["makespan_us"], 6) == best for r in planned)
    assert len(planned) != 1
    assert all(r["arena_bytes"] is not None for r in auto.notes["portfolio"])
    assert needed.options["portfolio_arenas"] == "needed"
    big = wb.models.random_dag(gpto.ARENA_ALL_MAX_OPS + 10, edges_per_op=2, seed=4)
    every = schedule_gpto(big, portfolio_arenas="all", priorities=["bottom_level", "cost_min"])
    assert all(r["arena_bytes"] is not None for r in every.notes["portfolio"])
    with pytest.raises(OptionError, match="portfolio_arenas must be one of auto, all, needed"):
        schedule_gpto(g, portfolio_arenas="some")


def test_compare_asks_gpto_for_the_needed_arenas_only() -> None:
    from workbench.orchestration.compare import _policy_options

    spec = wb.simulator.cost_model.devices.get_device("h100")
    assert _policy_options("gpto", {}, spec, "graph")["portfolio_arenas"] == "needed"
    mine = _policy_options("gpto", {"gpto": {"portfolio_arenas": "all"}}, spec, "graph")
    assert mine["portfolio_arenas"] == "all"
    assert "portfolio_arenas" not in _policy_options("nnc", {}, spec, "graph")


def test_earliest_gap_insertion_by_hand() -> None:
    # x (h2d, 20 µs) -> y (conv, 10 µs); z and w (relu, 5 µs each) are independent.  One compute
    # stream, one copy stream, bottom-level priority: x (bl 30) goes first, to the copy stream at 0;
    # y (bl 10) next: it must wait for x, so it starts at 20 and leaves [0, 20) idle on the compute
    # stream; z and w (bl 5) are placed later but slide into that gap: z at 0, w at 5.
    g = wb.Graph.from_edges([("x", "y")], ops={"x": "h2d", "y": "conv2d", "z": "relu",
                                               "w": "relu"},
                            durations={"x": 20, "y": 10, "z": 5, "w": 5})
    s = schedule_gpto(g, compute_streams=1, priorities=["bottom_level"]).validate()
    assert s.notes["start_us"] == {"x": 0.0, "y": 20.0, "z": 0.0, "w": 5.0}
    assert s.notes["estimated_makespan_us"] == 30.0
    assert s.issue_order == ("z", "x", "w", "y")            # sorted by planned (start, end)
    compute, copy = s.stream_of("y"), s.stream_of("x")
    assert compute != copy and s.streams[compute] == ("z", "w", "y")
    assert s.syncs == (("x", "y"),)
    assert s.notes["copy_ops"] == 1 and s.notes["copy_streams"] == 1
    # Without the gap search (placing at the stream's end) z would start at 30: the makespan
    # would be 40; the simulator agrees that the inserted ops finish early.
    t = simulate(s, "h100", mode="graph")
    assert t.end_of("w") <= t.start_of("y") + 1e-6


def test_copy_ops_use_the_copy_stream_only() -> None:
    g = wb.Graph.from_edges([("load", "conv"), ("conv", "store"), ("load2", "conv2"),
                             ("conv2", "send")],
                            ops={"load": "h2d", "conv": "conv2d", "store": "d2h",
                                 "load2": "memcpy", "conv2": "matmul", "send": "send"})
    s = schedule_gpto(g, compute_streams=2).validate()
    copy_streams = {s.stream_of(o) for o in ("load", "store", "load2", "send")}
    compute_streams = {s.stream_of(o) for o in ("conv", "conv2")}
    assert len(copy_streams) == 1 and not copy_streams & compute_streams
    # with copy_streams=0 copy ops share the compute streams
    merged = schedule_gpto(g, compute_streams=2, copy_streams=0).validate()
    assert merged.n_streams <= 2
    # max_streams=1 leaves no room for a copy stream: everything on one stream
    assert schedule_gpto(g, max_streams=1).validate().n_streams == 1


def _memory_example() -> wb.Graph:
    # a -> b (10 µs each, 4 MiB outputs); c (30 µs, 4 MiB) and d (20 µs, 1 MiB) independent.
    return wb.Graph.from_edges([("a", "b")], ops=["a", "b", "c", "d"],
                               durations={"a": 10, "b": 10, "c": 30, "d": 20},
                               sizes={"a": 4 * MIB, "b": 4 * MIB, "c": 4 * MIB, "d": MIB})


def test_memory_limit_picks_a_slower_priority_that_fits() -> None:
    # Two streams.  bottom_level: c [0,30] and d [0,20] first, then a [20,30], b [30,40]: 40 µs,
    # but a, c, d may all run together: no tensor can share (13 MiB).  cost_min: a [0,10],
    # d [0,20], b [10,20], c [20,50]: 50 µs, and c follows a on a's stream (after b read a's
    # output), so c's output reuses a's: 4 + 4 + 1 = 9 MiB.
    g = _memory_example()
    free = schedule_gpto(g, compute_streams=2)
    assert free.notes["estimated_makespan_us"] == 40.0 and free.notes["arena_bytes"] == 13 * MIB
    rows = {r["priority"]: r for r in free.notes["portfolio"]}
    assert rows["cost_min"]["makespan_us"] == 50.0 and rows["cost_min"]["arena_bytes"] == 9 * MIB
    limited = schedule_gpto(g, compute_streams=2, memory_limit_bytes=10 * MIB).validate()
    assert limited.notes["memory_limit_met"]
    assert limited.notes["arena_bytes"] <= 10 * MIB
    assert limited.notes["estimated_makespan_us"] == 50.0
    assert plan_memory(limited, "greedy_by_size").arena_bytes <= 10 * MIB
    assert not [r for r in limited.notes["portfolio"] if r["priority"] == "bottom_level"][0]["fits"]


def test_memory_limit_nothing_fits_raises_like_every_policy() -> None:
    # issue 14: gpto used to return an over-limit schedule with only a note saying so
    with pytest.raises(OptionError, match=r"policy 'gpto' cannot fit .* in 5242880 bytes: the "
                                          r"smallest arena found is \d+ bytes"):
        schedule_gpto(_memory_example(), compute_streams=2, memory_limit_bytes=5 * MIB)
    with pytest.raises(OptionError, match="cannot fit"):
        wb.schedule(_memory_example(), "gpto", memory_limit_bytes=5 * MIB)


def test_memory_limit_tries_fewer_streams_before_giving_up() -> None:
    # two 4 MiB branches: on two streams both outputs are live at once, on one stream only one
    g = wb.Graph.from_edges([("a", "x1"), ("x1", "y1"), ("y1", "z"), ("a", "x2"), ("x2", "y2"),
                             ("y2", "z")], sizes={"a": 1024, "x1": 4 * MIB, "x2": 4 * MIB,
                                                  "y1": 1024, "y2": 1024, "z": 1024})
    two = schedule_gpto(g, compute_streams=2)
    assert min(r["arena_bytes"] for r in two.notes["portfolio"]) > 8 * MIB
    s = schedule_gpto(g, compute_streams=2, memory_limit_bytes=5 * MIB)
    assert s.options["compute_streams"] == 1 and s.notes["memory_limit_met"]
    assert plan_memory(s, "greedy_by_size").arena_bytes <= 5 * MIB


def test_single_priority_and_determinism() -> None:
    g = wb.models.inception_v3(batch=1, fused=False)
    a = schedule_gpto(g, priorities=["depth_min"])
    b = schedule_gpto(g, priorities=["depth_min"])
    assert a.notes["winner"] == "depth_min" and len(a.notes["portfolio"]) == 1
    assert dict(a.streams) == dict(b.streams) and a.syncs == b.syncs


@pytest.mark.parametrize("options, match", [
    ({"max_streams": 0}, "max_streams"),
    ({"compute_streams": 0}, "compute_streams"),
    ({"copy_streams": -1}, "copy_streams"),
    ({"memory_limit_bytes": 0}, "memory_limit_bytes"),
    ({"memory_limit_bytes": "1GB"}, "memory_limit_bytes"),
    ({"priorities": ["bogus"]}, "unknown gpto priority 'bogus'"),
    ({"priorities": "bottom_level"}, "priorities"),
    ({"priorities": []}, "priorities"),
    ({"device": "tpu"}, "device"),
    ({"max_streams": 2, "compute_streams": 3}, "exceeds max_streams"),
])
def test_bad_options(options: dict, match: str) -> None:
    g = wb.Graph.from_edges([("a", "b")], ops={"a": "h2d", "b": "conv2d"})
    with pytest.raises(wb.OptionError, match=match):
        schedule_gpto(g, **options)
