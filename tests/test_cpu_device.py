"""The device ``cpu``: the host a CPU-only profile ran on, named wherever devices are named
(``workbench/data/devices/cpu.json``), and what a CPU profile is compared on: the command
switches a CPU run compared with a built-in GPU device to ``cpu`` with a one-line note, keeps a
device file it is given, and a GPU run is still refused on ``cpu``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import workbench as wb
from workbench.cli import main
from workbench.io import load_pytorch_trace
from workbench.simulator.cost_model.devices import (
    DEVICES,
    HostSpec,
    data_text,
    get_device,
    save_device,
    with_overrides,
)

DATA = Path(__file__).parent / "data"
CPU_PROFILE = DATA / "branchy_cpu.pt.trace.json"   # a CPU-only Kineto trace, one thread
GPU_PROFILE = DATA / "real" / "kineto_workbench_nnc_inception_v3_b1.json.gz"   # NVIDIA H200


def test_cpu_is_a_device_that_describes_the_host() -> None:
    spec = get_device("cpu")
    assert "cpu" in wb.devices() and get_device("CPU") is spec is DEVICES.get("cpu")
    host = HostSpec()   # what the simulator runs 'cpu' ops on
    assert spec.host == host
    assert spec.sm_count == host.cores
    assert spec.peak_tflops * 1e3 == pytest.approx(host.cores * host.gflops_per_core)
    assert spec.bandwidth_gbps == host.bandwidth_gbps
    assert spec.launch_overhead_us == host.dispatch_us
    raw = json.loads(data_text("devices", "cpu.json"))
    assert "measured" in raw["description"] and "duration_us" in raw["fitted_on"]
    assert "apply to no op of a CPU profile" in raw["fitted_on"]


def test_a_cpu_profile_replays_its_measured_times_on_cpu() -> None:
    with pytest.warns(UserWarning, match="nothing to schedule"):
        trace = load_pytorch_trace(CPU_PROFILE)
    cmp = wb.compare(trace.graph, ["serial"], device="cpu", measured=trace,
                     show_progress=False)
    assert cmp.device == "cpu" and cmp.settings["measured_device"] == "cpu"
    serial = cmp.traces["serial"]
    # every op runs for its measured time: the serial replay adds only the host's dispatch
    assert serial.df["duration_us"].sum() == pytest.approx(trace.df["duration_us"].sum())
    dispatch = get_device("cpu").host.dispatch_us
    assert serial.makespan <= trace.makespan + len(trace.graph) * dispatch


def test_the_api_compares_a_cpu_run_on_cpu_with_a_note() -> None:
    """``wb.compare(..., measured=cpu_trace)`` with its default GPU device: as the command."""
    with pytest.warns(UserWarning, match="nothing to schedule"):
        trace = load_pytorch_trace(CPU_PROFILE)
    cmp = wb.compare(trace.graph, ["serial"], measured=trace, show_progress=False)
    assert cmp.device == "cpu"
    assert any("CPU run" in n and "not on 'h100'" in n for n in cmp.settings["notes"])


@pytest.mark.parametrize("device", [None, "h200"])
def test_command_compares_a_cpu_run_on_cpu_with_a_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], device: str | None) -> None:
    argv = ["compare", "--measured", str(CPU_PROFILE), "--policies", "nnc", "--no-progress",
            "-o", str(tmp_path / "r.html")] + (["--device", device] if device else [])
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "branchy_cpu: 17 ops on cpu (eager mode)"
    notes = [line for line in out.splitlines() if line.startswith("note:")]
    switched = [n for n in notes if "CPU run" in n]
    assert len(switched) == 1 and f"not on {device or 'h100'!r}" in switched[0]
    # a profile alone of one thread: one chain, said once on stdout and in the report
    assert sum("nothing to schedule" in n for n in notes) == 1
    assert "Nothing to schedule: graph" in (tmp_path / "r.html").read_text()


def test_command_keeps_a_device_file_for_a_cpu_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = save_device(with_overrides("cpu", name="my_host"), tmp_path / "my_host.json")
    assert main(["compare", "--measured", str(CPU_PROFILE), "--policies", "nnc",
                 "--no-progress", "--device", str(path), "-o", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "branchy_cpu: 17 ops on my_host (eager mode)"
    assert not any("CPU run" in line for line in out.splitlines())


def test_a_gpu_run_is_refused_on_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--measured", str(GPU_PROFILE), "--policies", "nnc",
                 "--no-progress", "--device", "cpu", "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "the measured run is on 'NVIDIA H200'" in err and "device='h200'" in err
    assert err.count("\n") == 1


def test_devices_listing_names_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices"]) == 0
    assert any(line.startswith("cpu ") for line in capsys.readouterr().out.splitlines())
