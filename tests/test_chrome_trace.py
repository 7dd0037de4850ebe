"""Chrome trace export of simulated traces and import of PyTorch profiler (Kineto) traces."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import workbench as wb
from workbench.io import load_pytorch_trace, save_chrome_trace, to_chrome_trace
from workbench.io.chrome_trace import kernel_kind


def _strict_json(text: str) -> Any:
    def no_constants(name: str) -> None:
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=no_constants)


@pytest.fixture(scope="module")
def nnc_trace() -> wb.Trace:
    g = wb.models.inception_v3()
    return wb.simulate(wb.schedule(g, "nnc"))


def test_export_inception(nnc_trace: wb.Trace, tmp_path: Path) -> None:
    path = save_chrome_trace(nnc_trace, tmp_path / "t.json")
    data = _strict_json(path.read_text())
    assert data["displayTimeUnit"] == "ms"
    events = data["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    df = nnc_trace.df
    assert sorted(e["name"] for e in slices) == sorted(df["op"])  # one X event per op
    row = {r.op: r for r in df.itertuples()}
    for e in slices:
        r = row[e["name"]]
        assert e["tid"] == r.stream and e["ts"] == pytest.approx(r.start_us)
        assert e["dur"] >= 0.001 and e["dur"] == pytest.approx(max(0.001, r.end_us - r.start_us))
    names = {(e["tid"], e["args"]["name"]) for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {(s, f"stream {s}") for s in set(df["stream"])}
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in events)
    # flow pairs: s inside a's slice on a's stream, f at b's start on b's stream
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == ends.keys() and len(starts) == nnc_trace.schedule.n_syncs > 0
    pairs = set()
    for k, s in starts.items():
        f = ends[k]
        a, b = s["args"]["from"], s["args"]["to"]
        pairs.add((a, b))
        assert s["tid"] == row[a].stream and row[a].start_us <= s["ts"] <= row[a].end_us
        assert f["tid"] == row[b].stream and f["ts"] == pytest.approx(row[b].start_us)
        assert f["bp"] == "e" and s["cat"] == f["cat"] and s["name"] == f["name"]
    assert pairs == set(nnc_trace.schedule.syncs)
    counters = [e for e in events if e["ph"] == "C"]
    assert counters and max(c["args"]["bytes"] for c in counters) > 0
    assert counters[-1]["args"]["bytes"] >= 0


def test_export_gzip_and_zero_durations(tmp_path: Path) -> None:
    g = wb.Graph.from_edges([("a", "b")])
    df = pd.DataFrame({"op": ["a", "b"], "kind": ["op", "op"], "stream": [0, 0],
                       "device": ["gpu", "gpu"], "start_us": [0.0, 5.0], "end_us": [5.0, 5.0],
                       "alone_us": [float("nan"), 1.0]})
    trace = wb.Trace(df, graph=g, policy="hand", device="h100")
    data = to_chrome_trace(trace, memory=False)
    b = next(e for e in data["traceEvents"] if e.get("name") == "b" and e["ph"] == "X")
    assert b["dur"] == 0.001 and b["args"]["alone_us"] == 1.0
    a = next(e for e in data["traceEvents"] if e.get("name") == "a" and e["ph"] == "X")
    assert a["args"]["alone_us"] is None  # NaN is not JSON
    path = save_chrome_trace(trace, tmp_path / "t.json.gz")
    assert _strict_json(gzip.decompress(path.read_bytes()).decode())["traceEvents"]


KINETO: dict[str, Any] = {
    "schemaVersion": 1,
    "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}],
    "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 100, "tid": 100,
         "ts": 900.0, "dur": 50.0, "args": {"External id": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100,
         "ts": 950.0, "dur": 5.0, "args": {"correlation": 11}},
        {"ph": "X", "cat": "kernel", "name": "implicit_convolve_sgemm", "pid": 0, "tid": 7,
         "ts": 1100.5, "dur": 20.0,
         "args": {"device": 0, "stream": 7, "grid": [4, 2, 1], "block": [256, 1, 1],
                  "correlation": 11}},
        {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "pid": 0, "tid": 7,
         "ts": 1121.0, "dur": 3.0, "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "pid": 0,
         "tid": "stream 13", "ts": 1110.0, "dur": 4.0, "args": {"device": 0}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
         "tid": 7, "ts": 1090.0, "dur": 2.0, "args": {"stream": 7}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 11, "pid": 100, "tid": 100,
         "ts": 950.0},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 11, "pid": 0, "tid": 7, "ts": 1100.5,
         "bp": "e"},
    ],
}


@pytest.mark.parametrize("gz", [False, True])
def test_import_kineto(tmp_path: Path, gz: bool) -> None:
    text = json.dumps(KINETO).encode()
    path = tmp_path / ("t.pt.trace.json.gz" if gz else "t.pt.trace.json")
    path.write_bytes(gzip.compress(text) if gz else text)
    trace = load_pytorch_trace(path)
    df = trace.df
    # time 0 = the earliest GPU event (the memcpy at ts 1090)
    assert trace.meta["t0_us"] == 1090.0
    assert list(df["op"]) == ["Memcpy HtoD (Pageable -> Device)#0", "implicit_convolve_sgemm#0",
                              "vectorized_elementwise_kernel#0",
                              "vectorized_elementwise_kernel#1"]
    assert list(df["stream"]) == [7, 7, 13, 7]
    assert list(df["start_us"]) == [0.0, 10.5, 20.0, 31.0]
    assert list(df["end_us"]) == [2.0, 30.5, 24.0, 34.0]
    assert list(df["kind"]) == ["memcpy", "conv2d", "elementwise", "elementwise"]
    assert trace.makespan == 34.0 and trace.device == "NVIDIA H100 80GB HBM3"
    g = trace.graph
    assert len(g) == 4 and not g.edges and g.op("implicit_convolve_sgemm#0").thread_blocks == 8
    assert g.op("implicit_convolve_sgemm#0").duration_us == 20.0
    assert trace.respects() and trace.metrics()["makespan_us"] == 34.0
    # the imported trace exports again
    assert len([e for e in to_chrome_trace(trace)["traceEvents"] if e["ph"] == "X"]) == 4


def test_import_with_graph(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(KINETO))
    g = wb.Graph.from_edges([("implicit_convolve_sgemm", "vectorized_elementwise_kernel#1")])
    trace = load_pytorch_trace(path, graph=g)
    assert list(trace.df["op"]) == ["implicit_convolve_sgemm", "vectorized_elementwise_kernel#1"]
    assert trace.meta["unmatched_kernels"] == 2 and trace.respects(g)
    other = wb.Graph.from_edges([("x", "y")])
    with pytest.raises(wb.FormatError, match="no kernel name matches an op of graph"):
        load_pytorch_trace(path, graph=other)


BAD = {
    "not_json": (b"{ this is not json", "invalid JSON"),
    "no_events": (json.dumps({"schemaVersion": 1}).encode(), "no 'traceEvents'"),
    "cpu_only": (json.dumps({"traceEvents": KINETO["traceEvents"][:2]}).encode(),
                 "no GPU kernel events"),
    "bad_ts": (json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k\nx",
                                            "ts": "soon", "dur": 1}]}).encode(),
               "'ts' must be a number"),
    "events_not_list": (json.dumps({"traceEvents": 5}).encode(), "must be a list"),
    "scalar": (b"42", "top level is int"),
    "bad_gzip": (b"\x1f\x8b\x08\x00garbage", "gzip"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\xff", "not a text file"),
    "empty": (b"", "empty file"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_import_bad_files(tmp_path: Path, case: str) -> None:
    data, message = BAD[case]
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    with pytest.raises(wb.FormatError) as info:
        load_pytorch_trace(path)
    msg = str(info.value)
    assert message in msg and str(path) in msg and "\n" not in msg, msg


def test_kernel_kinds() -> None:
    assert kernel_kind("sm90_xmma_gemm_f32f32_tf32f32") == "matmul"
    assert kernel_kind("cudnn::bn_fw_inf_1C11_kernel_NCHW") == "batchnorm"
    assert kernel_kind("void at::native::(anonymous)::cat_batched_copy") == "concat"
    assert kernel_kind("my_custom_kernel") == "kernel"
