"""compare() with a measured executor: executor names, the simulator beside measured rows,
utilisation from the measured trace, provenance (a fake executor on the CPU; the torch
executor's CPU path where it is installed)."""

from __future__ import annotations

from typing import Any

import pytest

import workbench as wb
from workbench.executors.execute import EXECUTORS
from workbench.orchestration.compare_measured import executor_plan, measured_utilisation
from workbench.values.trace import Trace


def fake_gpu_run(schedule: wb.Schedule, *, mode: str = "eager", precision: str = "fp32",
                 repeats: int = 20, warmup: int = 3, device: Any = None) -> Trace:
    """A 'measured' run 1.5x slower than the simulator says (the median over the timed runs;
    the per-op timeline run took 1.6x), on a GPU named in its meta."""
    sim = wb.simulate(schedule, device="h200", mode=mode)
    df = sim.df.copy()
    for col in ("start_us", "end_us", "duration_us"):
        df[col] = df[col] * 1.6
    return Trace(df, graph=schedule.graph, policy=schedule.policy, device="NVIDIA H200",
                 executor="fake_gpu", mode=mode, schedule=schedule,
                 meta={"precision": precision, "repeats": repeats, "torch": "2.13.0",
                       "cudnn": "91000", "driver": "580.1", "makespan_median_us":
                       1.5 * sim.makespan})


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXECUTORS._entries, "fake_gpu", fake_gpu_run)


def test_measured_rows_carry_the_prediction_device_and_their_own_utilisation(fake: None) -> None:
    g = wb.models.build("squeezenet", resolution=32)
    result = wb.compare(g, ["serial", "nnc"], device="h200", executor="fake_gpu,simulator",
                        executor_options={"repeats": 2}, budget_s=None, show_progress=False,
                        planner=None, mode="eager")
    table = result.table.set_index("policy")
    assert list(table.index) == ["serial", "nnc"]
    assert (table["executor"] == "fake_gpu").all() and (table["gpu"] == "NVIDIA H200").all()
    sim = {p: wb.simulate(wb.schedule(g, p), device="h200").makespan for p in table.index}
    for p in table.index:
        assert table.loc[p, "simulated_us"] == pytest.approx(sim[p])
        assert table.loc[p, "makespan_us"] == pytest.approx(1.5 * sim[p])
        assert table.loc[p, "sim_error"] == pytest.approx(1 / 1.5 - 1)
    flops = sum(op.flops for op in g.ops)
    peak = wb.costs.get_device("h200").peak_flops("fp32")
    assert table.loc["serial", "utilisation"] == pytest.approx(
        flops / (table.loc["serial", "makespan_us"] * 1e-6 * peak))
    on = result.settings["measured_on"]
    assert on["gpu"] == "NVIDIA H200" and on["torch"] == "2.13.0" and on["driver"] == "580.1"
    assert on["precision"] == "fp32" and on["repeats"] == 2
    assert result.settings["simulated_beside"] is True


def test_without_the_simulator_there_is_no_prediction(fake: None) -> None:
    g = wb.models.build("squeezenet", resolution=32)
    result = wb.compare(g, ["serial"], executor="fake_gpu", budget_s=None, show_progress=False,
                        planner=None, precision="tf32", device="h200")
    row = result.table.iloc[0]
    assert row["simulated_us"] != row["simulated_us"]          # NaN
    peak = wb.costs.get_device("h200").peak_flops("tf32")      # the run's precision's peak
    assert row["utilisation"] == pytest.approx(
        sum(op.flops for op in g.ops) / (row["makespan_us"] * 1e-6 * peak))


def test_utilisation_uses_the_precision_the_kernels_ran_at() -> None:
    # the CuPy bug: measured utilisation was the cost model's TF32 compute time over the
    # measured makespan (0.0009 for Inception V3 on an H200); FP32 kernels need FP32's peak
    g = wb.models.build("inception_v3")
    trace = wb.simulate(wb.schedule(g, "serial"), device="h200")
    df = trace.df.copy()
    df["end_us"] = df["end_us"] * 0 + 24_006.0                 # CuPy's serial makespan, µs
    measured = Trace(df, graph=g, policy="serial", device="NVIDIA H200", executor="cupy")
    util = measured_utilisation(measured, wb.costs.get_device("h200"))
    assert util == pytest.approx(11.47e9 / (24_006e-6 * 66.9e12), rel=0.01)   # about 0.0071
    assert util > 5 * df["compute_us"].sum() / 24_006.0


def test_executor_names_are_checked(fake: None) -> None:
    assert executor_plan("simulator") == ("simulator", False)
    assert executor_plan("Fake_GPU, simulator") == ("fake_gpu", True)
    with pytest.raises(wb.OptionError, match="unknown executor 'gpu'"):
        executor_plan("gpu,simulator")
    with pytest.raises(wb.OptionError, match="one executor at a time"):
        executor_plan(["cupy", "fake_gpu"])
    with pytest.raises(wb.DeviceUnavailable, match="executor 'cupy' cannot run here"):
        executor_plan(["cupy", "simulator"])


def test_compare_with_the_torch_executor_on_the_cpu() -> None:
    pytest.importorskip("torch")
    if "torch" not in EXECUTORS or not EXECUTORS.available("torch"):
        pytest.skip("the torch executor is not registered here")
    g = wb.models.build("squeezenet", resolution=32)
    result = wb.compare(g, ["serial", "nnc"], executor=["torch", "simulator"], planner=None,
                        executor_options={"repeats": 1, "warmup": 0}, budget_s=None,
                        show_progress=False)
    table = result.table
    assert (table["executor"] == "torch").all() and table["makespan_us"].gt(0).all()
    assert (table["makespan_q1_us"] <= table["makespan_us"]).all()
    assert (table["makespan_us"] <= table["makespan_q3_us"]).all()
    # a CPU run: no h100 prediction, bounds or utilisation beside it, and a note saying why
    from workbench.executors.device_probes import cpu_model as cpu_name

    assert (table["gpu"] == cpu_name()).all() and cpu_name() not in ("", "x86_64", "aarch64")
    for column in ("simulated_us", "sim_error", "utilisation", "lower_bound_us", "ratio_to_lb"):
        assert table[column].isna().all(), column
    assert result.settings["simulated_beside"] is False
    assert result.settings["unmodelled"].startswith(
        f"no simulated column: the run was measured on {cpu_name()} (a CPU), the simulator "
        "models h100")
    assert result.ran_on == "cpu"
    assert result.device_text == f"{cpu_name()} (CPU; the policies' cost model is h100)"


def test_report_names_the_gpu_versions_and_what_the_kernels_are(fake: None,
                                                                 tmp_path: Any) -> None:
    from types import SimpleNamespace

    from workbench.orchestration.report import measured_note

    g = wb.models.build("squeezenet", resolution=32)
    result = wb.compare(g, ["serial"], device="h200", executor="fake_gpu,simulator",
                        budget_s=None, show_progress=False, planner=None)
    html = result.to_html(tmp_path / "r.html", plotlyjs="cdn").read_text()
    assert "Measured with executor <b>fake_gpu</b> on <b>NVIDIA H200</b>" in html
    assert "driver 580.1" in html and "torch 2.13.0" in html and "cudnn 91000" in html
    assert "sits beside each row" in html and ">simulated_us<" in html
    cupy = SimpleNamespace(settings={"executor": "cupy", "measured_on": {"gpu": "NVIDIA H200"}},
                           device="h200")
    assert "hand-written CUDA kernels, about 6x slower than cuDNN" in measured_note(
        cupy)  # type: ignore[arg-type]
    assert measured_note(SimpleNamespace(  # type: ignore[arg-type]
        settings={"executor": "simulator"}, device="h100")) == ""
