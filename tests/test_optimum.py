"""The exact optimum of small graphs, and every policy at or above it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import workbench as wb
from tests.strategies import dags
from workbench.optimum import exact_optimum
from workbench.schedulers import TEST_OPTIONS
from workbench.simulate import simulate_makespan


def test_diamond_optimum_is_the_critical_path() -> None:
    g = wb.models.nnc_diamond()
    best = exact_optimum(g)
    best.schedule.validate()
    # N1, then N2 and N3 side by side, then N4: graph launch 8 µs + three 10 µs kernels.
    assert best.makespan_us == pytest.approx(8.0 + 30.0)


def test_serialising_competitors_can_beat_full_concurrency() -> None:
    # c -> d is the critical chain; a, b and c fill the device, d is a 2-block kernel.  Every policy
    # runs a, b, c together (c gets a third of the GPU), so d starts late and runs nearly alone:
    # 184 µs.  The optimum queues a and b behind c on one stream: c runs alone, then d overlaps
    # a and b: 128.4 µs.  IOS's stages reach 146 µs.
    g = wb.Graph.from_edges([("c", "d")], ops=["a", "b", "c", "d"],
                            durations={"a": 40, "b": 40, "c": 40, "d": 60},
                            thread_blocks={"d": 2})
    best = exact_optimum(g)
    assert dict(best.schedule.streams) == {0: ("c", "a", "b"), 1: ("d",)}
    assert best.makespan_us == pytest.approx(128.4242, rel=1e-4)
    made = {p: simulate_makespan(wb.schedule(g, p, **TEST_OPTIONS.get(p, {})), "h100",
                                 mode="graph") for p in wb.policies()}
    assert all(m >= best.makespan_us - 1e-6 for m in made.values())
    assert made["nnc"] == pytest.approx(184.0) and made["min_streams"] == pytest.approx(184.0)
    assert made["ios"] < made["nnc"]  # IOS's stage [c] then [a, b || d] gets closer: 146 µs


@settings(max_examples=25)
@given(graph=dags(max_ops=7))
def test_every_policy_is_at_least_the_optimum(graph: wb.Graph) -> None:
    best = exact_optimum(graph)
    best.schedule.validate()
    for policy in wb.policies():
        s = wb.schedule(graph, policy, **TEST_OPTIONS.get(policy, {}))
        assert simulate_makespan(s, "h100", mode="graph") >= best.makespan_us - 1e-6, policy


def test_limits_give_one_line_errors() -> None:
    wide = wb.models.layered_dag(3, 3, seed=1)
    with pytest.raises(wb.OptionError, match="too wide for exhaustive search"):
        exact_optimum(wide, max_candidates=100)
    with pytest.raises(wb.OptionError, match="more than max_ops=4"):
        exact_optimum(wide, max_ops=4)
