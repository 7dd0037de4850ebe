"""Calibrated cost tables kept on the graph (workbench.simulator.cost_model.costs.graph_costs):
a calibration is checked into a FrozenCalibration once, each device profile's times are frozen
once, and the cost table computed under them is reused, bounded, keyed by content, and not
pickled.  Work is counted (op_cost calls), not timed: before, IOS on a device profile re-costed
every op on each of its thousands of stage runs (82 s eager, 244 s graph mode on NASNet-A large
unfused, against 0.2 and 0.5 s now)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench.errors import OptionError
from workbench.schedulers.ios_oracle import StageOracle
from workbench.simulator.cost_model import costs as C
from workbench.simulator.cost_model.calibration import FrozenCalibration, check_calibration
from workbench.simulator.cost_model.device_profile import DeviceProfile, OpTiming


def squeezenet() -> wb.Graph:
    return wb.models.build("squeezenet", resolution=32)


def measured(graph: wb.Graph, scale: float = 1.1) -> dict[str, float]:
    """Stand-in measured times: the model's own stand-alone times, scaled, plus 0.5 µs."""
    return {op.id: scale * c.alone_us + 0.5
            for op, c in zip(graph.ops, C.graph_costs(graph, "h200"), strict=True)}


@pytest.fixture
def op_cost_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the cost model's per-op evaluations."""
    calls = [0]
    real = C.op_cost

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(C, "op_cost", counted)
    return calls


def profile_spec(graph: wb.Graph, times: dict[str, float], path: Path) -> Any:
    ops = tuple(OpTiming(graph.name, 1, op, graph.op(op).kind, us) for op, us in times.items())
    prof = DeviceProfile(base_device="h200", precision="fp32", ops=ops,
                         provenance={"gpu": "test stand-in"})
    return wb.costs.get_device(str(wb.save_profile(prof, path)))


def test_ios_on_a_device_profile_costs_each_op_once(tmp_path: Path,
                                                    op_cost_calls: list[int]) -> None:
    g = squeezenet()
    spec = profile_spec(g, measured(g), tmp_path / "kept_costs_profile.json")
    op_cost_calls[0] = 0
    schedule = wb.schedule(g, "ios", device=spec, mode="graph")
    # the base table (IOS's own bounds) and the profile's: not one per stage
    assert op_cost_calls[0] <= 2 * len(g), op_cost_calls[0]
    fresh = squeezenet()  # nothing kept: the same schedule and makespan from scratch
    again = wb.schedule(fresh, "ios", device=spec, mode="graph")
    assert again.issue_order == schedule.issue_order
    assert wb.simulate(again, spec, mode="graph").makespan == \
        wb.simulate(schedule, spec, mode="graph").makespan


def test_stage_oracle_checks_a_plain_calibration_once(op_cost_calls: list[int]) -> None:
    g = squeezenet()
    times = measured(g)
    oracle = StageOracle(g, device="h200", mode="graph", calibration=times)
    assert isinstance(oracle.calibration, FrozenCalibration)
    ids = g.op_ids
    op_cost_calls[0] = 0
    for i in range(0, 24, 2):
        oracle([[ids[i]], [ids[i + 1]]])
    assert oracle.simulated >= 6 and op_cost_calls[0] == len(g)
    with pytest.raises(OptionError, match="does not have"):
        StageOracle(g, calibration={"no_such_op": 1.0})


def test_the_kept_table_follows_the_calibration_s_contents() -> None:
    g = squeezenet()
    serial = wb.schedule(g, "serial")
    times = measured(g)

    def from_scratch() -> float:  # a new graph: nothing kept on it
        return wb.simulate(wb.schedule(squeezenet(), "serial"), "h200",
                           calibration=times).makespan

    first = wb.simulate(serial, "h200", calibration=times).makespan
    assert first == from_scratch()
    times[g.op_ids[0]] += 1000.0  # the caller's dict changed: so does the result
    second = wb.simulate(serial, "h200", calibration=times).makespan
    assert second == from_scratch() and second > first + 500
    times[g.op_ids[0]] -= 1000.0
    assert wb.simulate(serial, "h200", calibration=times).makespan == first


def test_calibrated_tables_kept_are_bounded_and_not_pickled() -> None:
    g = squeezenet()
    serial = wb.schedule(g, "serial")
    wb.simulate(serial, "h200")
    size = len(pickle.dumps(g))
    spans = [wb.simulate(serial, "h200", calibration=measured(g, 1 + k / 10)).makespan
             for k in range(C.CALIBRATED_KEPT + 3)]
    assert len(set(spans)) == len(spans)
    assert len(g._cache["calibrated_costs"]) == C.CALIBRATED_KEPT  # noqa: SLF001
    assert len(pickle.dumps(g)) < size + 100  # the key and an empty stand-in, no tables
    back = pickle.loads(pickle.dumps(g))
    assert wb.simulate(wb.schedule(back, "serial"), "h200",
                       calibration=measured(g, 1.0)).makespan == spans[0]


def test_a_profile_read_again_after_it_changed_gives_its_new_times(tmp_path: Path) -> None:
    g = squeezenet()
    path = tmp_path / "kept_costs_profile.json"
    serial = wb.schedule(g, "serial")
    names = set()
    for scale in (1.0, 10.0):  # (at 1x this small net is bound by the host's launches)
        spec = profile_spec(g, measured(g, scale), path)
        names.add(spec.name)
        assert wb.simulate(serial, spec).makespan == \
            wb.simulate(wb.schedule(squeezenet(), "serial"), "h200",
                        calibration=measured(g, scale)).makespan
    assert len(names) == 1  # the same file read again keeps its name
    assert wb.simulate(serial, spec).makespan > 2 * wb.simulate(serial, "h200").makespan


def test_frozen_calibration_is_a_hashable_mapping() -> None:
    g = squeezenet()
    a = check_calibration({g.op_ids[0]: 3, g.op_ids[1]: 4.5}, g.op_ids)
    assert isinstance(a, FrozenCalibration)
    assert dict(a) == {g.op_ids[0]: 3.0, g.op_ids[1]: 4.5} and a == dict(a)
    b = FrozenCalibration(dict(a))
    assert a == b and hash(a) == hash(b) and len({a: 1, b: 2}) == 1
    assert check_calibration(a, g.op_ids) is a  # checked against these ids already
    back = pickle.loads(pickle.dumps(a))
    assert back == a and hash(back) == hash(a) and back.checked == a.checked
    with pytest.raises(OptionError, match="does not have"):  # another graph checks it again
        check_calibration(a, ("x", "y"))
    with pytest.raises(TypeError):
        a[g.op_ids[0]] = 1.0  # type: ignore[index]
