"""IOS with a measured stage oracle (workbench.schedulers.ios_torch_oracle), on the CPU.

A fake executor stands in for the device where the test is about the search (it times a stage
by simulating it and counts the stages it was asked for); the torch executor's CPU path runs
where PyTorch and the executor are installed."""

from __future__ import annotations

from typing import Any

import pytest

import workbench as wb
from workbench.executors.execute import EXECUTORS
from workbench.schedulers import ios_torch_oracle as T
from workbench.values.trace import Trace

CALLS: list[Any] = []


def fake_device_run(schedule: wb.Schedule, *, mode: str = "eager", precision: str = "fp32",
                    warmup: int = 3, repeats: int = 20, seed: int = 0,
                    device: Any = None) -> Trace:
    """The stage 'measured' by the simulator: a Trace whose median makespan the oracle reads."""
    CALLS.append((schedule, mode, precision, warmup, repeats))
    trace = wb.simulate(schedule, device="h100")
    return Trace(trace.df, graph=schedule.graph, policy=schedule.policy, device="fake",
                 executor="fake", mode=mode, schedule=schedule,
                 meta={"makespan_median_us": trace.makespan})


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setitem(EXECUTORS._entries, "fake_device", fake_device_run)
    CALLS.clear()
    return CALLS


def twin_blocks() -> wb.Graph:
    """Two structurally identical fork-join blocks in a row (so stages repeat)."""
    edges, durations = [], {}
    for b, head in (("x", "in"), ("y", "x_join")):
        for branch in ("p", "q", "r"):
            edges += [(head, f"{b}_{branch}1"), (f"{b}_{branch}1", f"{b}_{branch}2"),
                      (f"{b}_{branch}2", f"{b}_join")]
            durations.update({f"{b}_{branch}1": 30.0, f"{b}_{branch}2": 20.0})
        durations[f"{b}_join"] = 5.0
    durations["in"] = 5.0
    return wb.Graph.from_edges(edges, durations=durations)


def test_ios_with_a_measured_oracle_is_valid_bounded_and_reuses_timed_stages(
        fake: list[Any]) -> None:
    g = twin_blocks()
    sched = wb.schedule(g, "ios", oracle="torch", show_progress=False,
                        oracle_options={"executor": "fake_device", "repeats": 2, "warmup": 1})
    sched.validate()
    assert sorted(sched.issue_order) == sorted(g.op_ids)
    notes = sched.notes
    whole = [call for call in fake if call[0].policy != "ios_stage"]
    assert [c[0].policy for c in whole] == ["ios", "serial", "ios_greedy"]  # keep_fastest
    assert notes["oracle"] == "torch" and notes["stages_timed"] == len(fake) - 3 > 0
    assert notes["stages_reused"] > 0          # block y's stages are block x's, timed once
    assert notes["stages_timed"] <= notes["stages_evaluated"] + notes["simulations"]
    assert set(notes["measured_us"]) == {"ios", "sequential", "ios_greedy"}
    assert all(call[1:] == ("eager", "fp32", 1, 2) for call in fake)
    # every timed stage is its own graph: ops of one stage, each group on its own stream
    for stage, *_ in fake[:-3]:
        assert len(stage.graph) == len(stage.issue_order) and stage.n_syncs == 0
        assert stage.n_streams == len({stage.stream_of(o) for o in stage.issue_order})
    # the timed stages are what the simulator oracle would say, so the schedules agree
    assert sched.notes["stages"] == wb.schedule(g, "ios", show_progress=False).notes["stages"]


def test_measuring_counts_against_the_search_budget(fake: list[Any]) -> None:
    g = wb.models.build("squeezenet", resolution=32)
    sched = wb.schedule(g, "ios", oracle="torch", max_states=3, show_progress=False,
                        oracle_options={"executor": "fake_device", "repeats": 1})
    sched.validate()
    assert sched.notes["budget_hit"]["budget"] == "max_states"
    free = wb.schedule(g, "ios", oracle="torch", show_progress=False,
                       oracle_options={"executor": "fake_device", "repeats": 1})
    assert sched.notes["stages_timed"] < free.notes["stages_timed"]


def test_oracle_names_and_options_are_checked(fake: list[Any],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    g = twin_blocks()
    with pytest.raises(wb.OptionError, match="oracle must be one of simulator, torch, got 'gpu'"):
        wb.schedule(g, "ios", oracle="gpu", show_progress=False)
    with pytest.raises(wb.OptionError, match="unknown key 'repeat'"):
        wb.schedule(g, "ios", oracle="torch", oracle_options={"repeat": 3}, show_progress=False)
    with pytest.raises(wb.OptionError, match="not both"):
        wb.schedule(g, "ios", oracle="torch", cost_oracle=lambda groups: 1.0,
                    show_progress=False)
    with pytest.raises(wb.OptionError, match="engine='local'"):
        wb.schedule(g, "ios", oracle="torch", engine="processes", show_progress=False)
    monkeypatch.setattr(T, "torch_available", lambda: "PyTorch is not installed (ImportError)")
    with pytest.raises(wb.DeviceUnavailable, match="oracle 'torch' needs PyTorch: PyTorch is "
                                                   "not installed"):
        wb.schedule(g, "ios", oracle="torch", show_progress=False)


def test_max_timed_caps_the_measurements_and_floor_is_subtracted(fake: list[Any]) -> None:
    oracle = T.TorchStageOracle(twin_blocks(), executor="fake_device", max_timed=1, floor_us=4.0)
    stage = [["x_p1"], ["x_q1"]]
    want = wb.simulate(oracle.stage_schedule(stage), device="h100").makespan - 4.0
    assert oracle(stage) == pytest.approx(want)
    assert oracle([["y_p1"], ["y_q1"]]) > 0 and oracle.timed == 1 and oracle.reused == 1
    with pytest.raises(wb.OptionError, match="max_timed=1"):
        oracle([["x_p1"]])


def test_ios_times_stages_with_the_torch_executor_on_the_cpu() -> None:
    pytest.importorskip("torch")
    if "torch" not in EXECUTORS or not EXECUTORS.available("torch"):
        pytest.skip("the torch executor is not registered here")
    g = wb.models.build("squeezenet", resolution=32)
    sched = wb.schedule(g, "ios", oracle="torch", max_states=40, show_progress=False,
                        oracle_options={"repeats": 1, "warmup": 0})
    sched.validate()
    assert 0 < sched.notes["stages_timed"] and sched.notes["timing_s"] > 0


@pytest.mark.torch_gpu
def test_ios_with_stages_timed_on_the_gpu() -> None:
    g = wb.models.build("inception_v3", resolution=149, fused=True)
    sched = wb.schedule(g, "ios", oracle="torch", time_budget_s=60, show_progress=False,
                        oracle_options={"repeats": 3, "warmup": 1})
    sched.validate()
    assert sched.notes["stages_timed"] > 0 and sched.notes["stages_reused"] > 0
    trace = wb.execute(sched, executor="torch", mode="graph", repeats=5, verify=True)
    assert trace.meta["verified"] and trace.meta["makespan_median_us"] > 0


def greedy_wins(schedule: wb.Schedule, **options: Any) -> Trace:
    """Like fake_device_run, but IOS's greedy schedule measures fastest of all."""
    trace = fake_device_run(schedule, **options)
    if schedule.policy == "ios_greedy":
        trace.meta["makespan_median_us"] = 1.0
    return trace


def test_a_faster_rival_replaces_the_measured_ios_schedule(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXECUTORS._entries, "greedy_wins", greedy_wins)
    g = twin_blocks()
    sched = wb.schedule(g, "ios", oracle="torch", show_progress=False,
                        oracle_options={"executor": "greedy_wins", "repeats": 1})
    sched.validate()
    assert sched.policy == "ios" and sched.notes["fallback"].startswith("ios_greedy: it "
                                                                        "measures 1.0 µs")
    assert sched.notes["stages"] == wb.schedule(g, "ios_greedy").notes["stages"]
    assert sched.issue_order == wb.schedule(g, "ios_greedy").issue_order
