"""The CLI's measured runs: ``compare --executor``, ``--device PATH`` and ``calibrate`` (a fake
executor registered in-process stands in for the GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import workbench as wb
from tests.test_calibrate import fake_run
from tests.test_compare_measured import fake_gpu_run
from workbench.cli import main
from workbench.executors.execute import EXECUTORS


@pytest.fixture(autouse=True)
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXECUTORS._entries, "fake_gpu", fake_gpu_run)
    monkeypatch.setitem(EXECUTORS._entries, "fake_device", fake_run)


def test_calibrate_then_compare_on_the_profile_with_a_measured_executor(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "lab.json"
    assert main(["calibrate", "--model", "squeezenet", "--batch", "1", "--batch", "2",
                 "--executor", "fake_device", "--repeats", "1", "--base-device", "h200",
                 "-o", str(profile)]) == 0
    out = capsys.readouterr().out
    assert "ops of 2 graph(s) timed" in out and f"--device {profile}" in out
    data = json.loads(profile.read_text())
    assert {op["graph"] for op in data["ops"]} == {"squeezenet_fused_b1", "squeezenet_fused_b2"}
    assert data["base_device"] == "h200" and data["provenance"]["timing"]
    assert main(["compare", "--model", "squeezenet", "--policies", "serial,nnc",
                 "--device", str(profile), "--executor", "fake_gpu,simulator", "--repeats", "2",
                 "-o", str(tmp_path / "r.html"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "50 ops on NVIDIA H200 (GPU; the policies' cost model is h200+lab), graph mode" in out
    assert "measured on executor fake_gpu, gpu NVIDIA H200" in out
    header = next(line for line in out.splitlines() if line.startswith("policy"))
    assert header.split()[:5] == ["policy", "status", "makespan_us", "simulated_us", "sim_error"]
    # the simulator beside each row ran on the profile: every op at its measured time
    assert (tmp_path / "r.html").stat().st_size > 0


def test_bad_executor_and_device_path_are_one_line_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = str(tmp_path / "r.html")
    assert main(["compare", "--model", "nnc_diamond", "--executor", "gpu", "-o", report,
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("workbench: error: unknown executor 'gpu'") and "\n" not in err
    assert main(["compare", "--model", "nnc_diamond", "--device", str(tmp_path / "x.json"),
                 "-o", report, "--no-progress"]) == 2
    assert "no such device file or device profile" in capsys.readouterr().err
    assert main(["calibrate", "--model", "nope", "-o", str(tmp_path / "p.json")]) == 2
    assert "unknown model 'nope'" in capsys.readouterr().err


def test_measured_columns_are_accepted_by_columns(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--model", "nnc_diamond", "--policies", "nnc", "--executor",
                 "fake_gpu", "--columns", "policy,gpu,utilisation", "-o",
                 str(tmp_path / "r.html"), "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert next(line for line in lines if line.startswith("policy")).split() == [
        "policy", "gpu", "utilisation"]
    assert wb.costs.get_device("h100")  # the registry is untouched by the profile run


def test_ios_oracle_option_reaches_ios(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import workbench.schedulers.ios as ios

    seen: list[str] = []
    real = ios._named_oracle

    def spy(graph: wb.Graph, oracle: str, *args: object) -> object:
        seen.append(oracle)
        return real(graph, "simulator", None, *args[1:])  # type: ignore[arg-type]
    monkeypatch.setattr(ios, "_named_oracle", spy)
    assert main(["compare", "--model", "nnc_diamond", "--policies", "ios", "--ios-oracle",
                 "torch", "-o", str(tmp_path / "r.html"), "--no-progress", "--budget", "0",
                 "--memory-budget", "none"]) == 0   # in-process, so the spy sees the call
    assert seen == ["torch"]
