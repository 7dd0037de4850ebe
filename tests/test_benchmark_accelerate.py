"""The real-models benchmark's CPU smoke run (benchmarks/accelerate.py --smoke --no-compile):
every column of a case filled, outputs checked against the model, each case on disk as soon as it
is measured, the JSON written; each network traced once; the model's own CUDA graph called as
the accelerated module is (on the strict fake CUDA)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
    for key in ("eager_us", "graph_us", "graph_wrapped_us", "auto_us", "best_us"):
        assert row[key] > 0, key
    assert row["vs_graph"] == pytest.approx(row["graph_wrapped_us"] / row["auto_us"])
    assert row["vs_graph_bare"] == pytest.approx(row["graph_us"] / row["auto_us"])
    assert row["graph_err"] == 0.0 and row["cudnn_benchmark"] is False and row["warm_runs"] >= 1
    assert result["device"]["type"] == "cpu" and result["opara_best_vs_graph"] == 1.68
    (line,) = (tmp_path / "accelerate_cases.jsonl").read_text().splitlines()
    assert json.loads(line)["benchmark"] == "accelerate"
    assert {k: v for k, v in json.loads(line).items() if k not in ("benchmark", "device")} == \
        json.loads(json.dumps(row))
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


def test_each_network_is_traced_once_and_each_case_written_when_measured(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need_torch_executor()
    bench = load_benchmark("accelerate")
    traced: list[str] = []
    real_trace, real_case = bench.trace_model, bench.run_case
    cases = tmp_path / "cases.jsonl"
    seen: list[int] = []

    def trace(model: Any, example: Any) -> Any:
        traced.append(type(model).__name__)
        return real_trace(model, example)

    def case(*a: Any, **kw: Any) -> Any:  # every earlier case is on disk when one starts
        seen.append(len(cases.read_text().splitlines()) if cases.exists() else 0)
        return real_case(*a, **kw)

    monkeypatch.setattr(bench, "trace_model", trace)
    monkeypatch.setattr(bench, "run_case", case)
    assert bench.main(["--device", "cpu", "--no-compile", "--networks", "tiny_inception",
                       "--batches", "1", "--precisions", "fp32,tf32", "--policies", "serial",
                       "--repeats", "2", "--warmup", "1", "--warm-s", "0",
                       "--cases", str(cases), "--out", str(tmp_path)]) == 0
    assert traced == ["Branches"] and seen == [0, 1]
    assert [json.loads(x)["precision"] for x in cases.read_text().splitlines()] == ["fp32",
                                                                                     "tf32"]


def test_the_models_own_graph_is_called_like_the_accelerated_module() -> None:
    """OwnGraph on the strict fake CUDA: new inputs are copied in and give the model's outputs,
    the caller's later work is ordered after the replay (no race), the outputs are clones."""
    torch = pytest.importorskip("torch")
    from tests.fake_cuda import StrictCuda

    bench = load_benchmark("accelerate")
    model, (x,) = bench.build("tiny_inception", 1, "cpu")
    cuda = StrictCuda()
    with torch.no_grad(), cuda.running():
        own = bench.OwnGraph(model, (x,), cuda=cuda, warmup=1)
        outs = [(own(y), y) for y in (x + 1, x * 2, x)]
        first = outs[0][0] * 1  # read on the caller's stream after the call
        cuda.synchronize()
    assert cuda.errors == [] and cuda.graphs[0].replays == 3
    with torch.no_grad():
        for got, y in outs:
            torch.testing.assert_close(got, model(y))
        torch.testing.assert_close(first, model(x + 1))
    assert outs[0][0].data_ptr() != outs[1][0].data_ptr()


def test_unknown_or_empty_compile_modes_are_refused() -> None:
    bench = load_benchmark("accelerate")
    with pytest.raises(SystemExit):
        bench.parse(["--compile-modes", "fastest"])
    with pytest.raises(SystemExit):
        bench.parse(["--no-compile", "--only-compile"])
    assert bench.parse(["--no-compile"]).compile_modes == []
    assert bench.parse([]).compile_modes == ["default", "reduce-overhead"]
