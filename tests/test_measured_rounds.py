"""A measured comparison's timed runs in interleaved rounds (compare_measured.measure_rounds).

A machine whose speed drifts while the policies are measured one after the other turns the
drift into differences between policies (on this shared 2-core machine one-stream orders of
SqueezeNet measured in one block each came out up to 20% apart and were called faster).  The
rounds interleave the policies, so the drift is shared.  A drifting fake executor shows both:
measured in blocks, the policies separate; in rounds, they tie.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import workbench as wb
from workbench.executors.execute import EXECUTORS
from workbench.orchestration import compare as compare_module
from workbench.orchestration.compare_measured import round_repeats
from workbench.values.trace import Trace

CLOCK = itertools.count()


def drifting_run(schedule: wb.Schedule, *, mode: str = "eager", precision: str = "fp32",
                 repeats: int = 20, warmup: int = 3, device: Any = None) -> Trace:
    """Every policy does the same work, but each timed run is 1 µs slower than the one before
    it, whichever policy it belongs to (a machine slowing down)."""
    sim = wb.simulate(schedule, device="h100", mode=mode)
    spans = [1000.0 + next(CLOCK) for _ in range(repeats)]
    return Trace(sim.df, graph=schedule.graph, policy=schedule.policy, device="NVIDIA H100",
                 executor="drifting", mode=mode, schedule=schedule,
                 meta={"precision": precision, "repeats": repeats, "makespans_us": spans,
                       "makespan_median_us": sorted(spans)[(len(spans) - 1) // 2]})


@pytest.fixture
def drifting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXECUTORS._entries, "drifting", drifting_run)
    monkeypatch.setattr(compare_module, "KEEPS_RUNS", ("drifting",))


def _compare(rounds: int) -> wb.Comparison:
    g = wb.models.build("squeezenet", resolution=32)
    return wb.compare(g, ["serial", "bfs", "dfs"], executor="drifting", rounds=rounds,
                      executor_options={"repeats": 6}, budget_s=None, show_progress=False,
                      planner=None)


@pytest.mark.usefixtures("drifting")
def test_in_one_block_each_a_drift_reads_as_one_policy_being_faster() -> None:
    result = _compare(rounds=1)
    assert result.ties == [] and result.best == "serial"  # measured first: the drift's winner
    assert all(len(t.meta["makespans_us"]) == 6 for t in result.traces.values())


@pytest.mark.usefixtures("drifting")
def test_in_interleaved_rounds_the_drift_is_shared_and_the_policies_tie() -> None:
    result = _compare(rounds=3)
    assert sorted(result.ties) == ["bfs", "dfs", "serial"]
    assert "tie within measurement noise" in result.best_text
    for trace in result.traces.values():
        assert trace.meta["rounds"] == 3 and trace.meta["repeats"] == 6
        assert len(trace.meta["makespans_us"]) == 6
    assert result.settings["rounds"] == 3 and result.settings["measured_on"]["repeats"] == 6


@pytest.mark.usefixtures("drifting")
def test_each_round_starts_with_the_next_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    import workbench.executors.execute as execute_module

    order: list[str] = []
    real = execute_module.execute

    def logged(schedule: wb.Schedule, **kw: Any) -> Trace:
        order.append(schedule.policy)
        return real(schedule, **kw)

    monkeypatch.setattr(execute_module, "execute", logged)
    _compare(rounds=3)
    assert order == ["serial", "bfs", "dfs",      # round 1: each policy's run in the comparison
                     "bfs", "dfs", "serial",      # round 2 starts with the second policy
                     "dfs", "serial", "bfs"]      # round 3 with the third


def test_rounds_are_checked_and_split_the_runs() -> None:
    assert round_repeats({"repeats": 20}, 3) == 7 and round_repeats({}, 3) == 7
    assert round_repeats({"repeats": 2}, 3) == 1
    g = wb.models.build("squeezenet", resolution=32)
    for bad in (0, 1.5, True, 101):
        with pytest.raises(wb.OptionError, match="rounds must be an integer from 1 to 100"):
            wb.compare(g, ["serial"], rounds=bad, show_progress=False)  # type: ignore[arg-type]
