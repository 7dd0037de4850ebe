"""The real-models benchmark's CPU smoke run (benchmarks/accelerate.py --smoke --no-compile):
every column of a case filled, outputs checked against the model, the JSON written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._benchmarks import load_benchmark, need_torch_executor


def test_smoke_run_fills_every_column_and_checks_outputs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    need_torch_executor()
    bench = load_benchmark("accelerate")
    assert bench.main(["--smoke", "--no-compile", "--networks", "tiny_inception",
                       "--policies", "serial,nnc", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "accelerate_results.json").read_text())
    (row,) = result["rows"]
    assert row["status"] == "ok" and row["network"] == "tiny_inception"
    assert set(row["policies"]) == {"serial", "nnc"}
    assert all(p["q1_us"] <= p["median_us"] <= p["q3_us"] for p in row["policies"].values())
    assert row["auto_policy"] in {"serial", "nnc", "model"} and row["auto_err"] <= 1e-4
    for key in ("eager_us", "graph_us", "auto_us", "best_us"):
        assert row[key] > 0, key
    assert row["vs_graph"] == pytest.approx(row["graph_us"] / row["auto_us"])
    assert result["device"]["type"] == "cpu" and result["opara_best_vs_graph"] == 1.68
    header = next(line for line in capsys.readouterr().out.splitlines()
                  if line.startswith("network"))
    assert header.split() == list(bench.COLUMNS)


def test_table_text_formats_cells() -> None:
    bench = load_benchmark("accelerate")
    text = bench.table_text([{"network": "inception_v3", "batch": 1, "precision": "fp32",
                              "status": "ok", "eager_us": 5000.0, "graph_us": 3949.0,
                              "compile_us": None, "auto_policy": "nnc", "auto_us": 2120.0,
                              "best_policy": "nnc", "best_us": 2100.0,
                              "vs_graph": 3949.0 / 2120.0, "auto_err": 3e-7,
                              "compile_err": None}])
    assert "1.86x" in text and "3,949.0" in text and "3.0e-07" in text and " - " in text


def test_an_unknown_network_is_one_line() -> None:
    bench = load_benchmark("accelerate")
    with pytest.raises(SystemExit, match="unknown network 'resnet9000'"):
        bench.build("resnet9000", 1, "cpu")
