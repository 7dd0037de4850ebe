"""The fidelity probes' CPU smoke run (benchmarks/fidelity_probes.py --device cpu --quick): the
measured schedules rebuilt and executed with the torch executor, a trace per policy written as
CSV, the simulated makespan beside each, and the TF32 stand-alone profile the fit can take."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests._benchmarks import load_benchmark, need_torch_executor


def test_quick_cpu_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    need_torch_executor()
    probes = load_benchmark("fidelity_probes")
    assert probes.main(["--device", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "probes.json").read_text())
    rows = result["rows"]
    assert [r["policy"] for r in rows] == ["serial", "nnc", "gpto"]
    assert all(r["status"] == "ok" for r in rows)
    assert rows[0]["sum_vs_serial"] == pytest.approx(1.0)
    # the simulated makespan is the shipped h200 model's, on the measured schedule
    from workbench.simulator.fidelity.measured import load_schedule
    from workbench.simulator.simulate import simulate_makespan

    assert rows[1]["simulated_us"] == pytest.approx(simulate_makespan(
        load_schedule("squeezenet", 1, "nnc"), "h200", mode="graph", precision="fp32"))
    trace = pd.read_csv(tmp_path / "squeezenet_b1_gpto_fp32.csv")
    assert len(trace) == len(load_schedule("squeezenet", 1, "gpto").graph)
    assert {"start_us", "end_us", "stream"} <= set(trace.columns)
    profile = json.loads((tmp_path / "tf32_profile.json").read_text())
    assert profile["precision"] == "tf32" and len(profile["ops"]) == result["tf32_alone"]["ops"]
    out = capsys.readouterr().out
    assert "gpto" in out and "TF32 stand-alone table" in out
    lines = [json.loads(x) for x in (tmp_path / "probes_cases.jsonl").read_text().splitlines()]
    assert [x["policy"] for x in lines] == ["serial", "nnc", "gpto"]


def test_bad_repeats_are_refused() -> None:
    probes = load_benchmark("fidelity_probes")
    with pytest.raises(SystemExit):
        probes.parse(["--repeats", "0"])
