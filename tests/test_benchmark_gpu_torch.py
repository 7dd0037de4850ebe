"""The torch GPU benchmark's CPU smoke run (benchmarks/gpu.py --executor torch --device cpu
--quick): every network it can shrink, every policy, both modes, fp32 and tf32, verified, and
the measured-oracle IOS row; the table beside the H200 reference figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._benchmarks import load_benchmark, need_torch_executor


def test_quick_cpu_run_through_gpu_py(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    need_torch_executor()
    gpu = load_benchmark("gpu")
    assert gpu.main(["--executor", "torch", "--device", "cpu", "--quick", "--networks",
                     "squeezenet", "--policies", "nnc", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    result = json.loads((tmp_path / "gpu_torch_results.json").read_text())
    rows = result["rows"]
    assert {r["network"] for r in rows} == {"squeezenet"}
    assert {(r["precision"], r["mode"]) for r in rows} == {
        ("fp32", "eager"), ("fp32", "graph"), ("tf32", "eager"), ("tf32", "graph")}
    assert all(r["status"] == "ok" and r["verified"] for r in rows)
    oracle = [r for r in rows if r["policy"] == "ios[oracle=torch]"]
    assert len(oracle) == 2 and {r["precision"] for r in oracle} == {"fp32"}
    assert len(rows) == 2 * 2 * 2 + 2                  # serial and nnc in 4 settings, oracle
    serial = [r for r in rows if r["policy"] == "serial"]
    assert all(r["speedup"] == pytest.approx(1.0) for r in serial)
    ref = [r for r in rows if r["ref_h200_us"] is not None]
    assert {(r["network"], r["policy"]) for r in ref} == {("squeezenet", "serial"),
                                                          ("squeezenet", "nnc")}
    assert all(r["mode"] == "graph" and r["precision"] == "fp32" for r in ref)
    header = next(line for line in out.splitlines() if line.startswith("network"))
    assert header.split()[-2:] == ["ref_h200_us", "vs_ref"]
    lines = [json.loads(x) for x in (tmp_path / "gpu_torch_cases.jsonl").read_text().splitlines()]
    assert [x["policy"] for x in lines] == [r["policy"] for r in rows]  # each row as measured
    assert all(x["benchmark"] == "gpu_torch" for x in lines)
    assert [x["speedup"] for x in lines] == pytest.approx([r["speedup"] for r in rows])


def test_table_text_formats_cells() -> None:
    bench = load_benchmark("gpu_torch")
    text = bench.table_text([{"network": "squeezenet", "batch": 1, "precision": "fp32",
                              "mode": "graph", "policy": "nnc", "status": "ok", "streams": 3,
                              "makespan_median_us": 480.0, "makespan_spread_us": 2.5,
                              "speedup": 0.91, "verified": True, "ref_h200_us": 435.0,
                              "vs_ref": 480.0 / 435.0 - 1, "policy_extra": None}])
    assert "+10.3%" in text and "480.0" in text and "435" in text and "0.91x" in text


def test_cases_past_the_budget_are_trimmed_and_said(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    bench = load_benchmark("gpu_torch")
    assert bench.main(["--device", "cpu", "--quick", "--budget-s", "0", "--out",
                       str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for net in ("inception_v3", "squeezenet", "randwire", "nasnet_a_large"):
        assert f"trimmed: {net} b1: past the 0 s budget" in out
    assert json.loads((tmp_path / "gpu_torch_results.json").read_text())["rows"] == []
