"""The simulator at any magnitude and any size: exact times far past 1e7 µs, near-linear work."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.simulator.cost_model.costs import graph_costs, with_overrides
from workbench.simulator.simulate import simulate, simulate_makespan


def test_time_advances_exactly_at_any_magnitude() -> None:
    # 1e9 µs ops followed by a 5 µs one: exact times (the old simulator stopped advancing time
    # past ~1.7e7 µs); a 1e17 µs op (it never returned) ends where float64 can say it does.
    spec = with_overrides("h100", launch_overhead_us=4.0, kernel_latency_us=2.0, model_overrides=())
    g = wb.Graph.from_edges([("a", "b"), ("b", "c")], durations={"a": 1e9, "b": 1e9, "c": 5.0})
    t = simulate(wb.schedule(g, "serial"), spec)
    assert list(t.df["end_us"]) == [4.0 + 1e9, 4.0 + 2e9, 4.0 + 2e9 + 5.0]
    assert list(t.df["duration_us"]) == [1e9, 1e9, 5.0]
    huge = wb.Graph.from_edges([("a", "b")], durations={"a": 1e17, "b": 5.0})
    assert simulate_makespan(wb.schedule(huge, "serial"), spec) == pytest.approx(1e17)


def test_a_300k_op_random_dag_runs_serially_to_the_exact_end() -> None:
    # Independent oracle for one stream of one-kernel ops: op i is issued at (i + 1) * launch and
    # runs alone for its stand-alone time once issued and once op i - 1 has ended.
    g = wb.models.random_dag(300_000, seed=0)
    spec = wb.DEVICES.get("v100")  # the V100's slower kernels carry the run past 1.7e7 µs
    schedule = wb.schedule(g, "serial")
    costs = graph_costs(g, spec)
    assert all(c.n_kernels == 1 for c in costs)
    end = 0.0
    for i, c in enumerate(costs):
        end = max(end, (i + 1) * spec.launch_overhead_us) + c.alone_us
    assert end > 1.7e7  # past the point where the old simulator stalled
    assert simulate_makespan(schedule, spec) == pytest.approx(end, rel=1e-9)


def test_multi_stream_work_grows_linearly() -> None:
    # Operation counts, not seconds: events and kernels visited by the sharing passes per op stay
    # flat from 2k to 20k ops on nnc schedules of random DAGs (hundreds of streams).
    per_op = {}
    for n in (2_000, 20_000):
        g = wb.models.random_dag(n, seed=1)
        s = wb.schedule(g, "nnc")
        t = simulate(s, "h100")
        assert s.n_streams > 50 and t.respects()
        per_op[n] = ((t.meta["events"] + t.meta["sharing_work"]) / n)
    assert per_op[20_000] < 1.5 * per_op[2_000], per_op
