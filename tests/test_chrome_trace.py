"""Chrome trace export of simulated traces and import of PyTorch profiler (Kineto) traces."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import workbench as wb
from workbench.io import load_pytorch_trace, save_chrome_trace, to_chrome_trace
from workbench.io.traces.chrome_trace import kernel_kind


def _strict_json(text: str) -> Any:
    def no_constants(name: str) -> None:
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=no_constants)


@pytest.fixture(scope="module")
def nnc_trace() -> wb.Trace:
    g = wb.models.inception_v3(fused=False)
    return wb.simulate(wb.schedule(g, "nnc"))


def _on_grid(t: float) -> bool:
    return abs(t * 1000 - round(t * 1000)) < 1e-6


def test_export_inception(nnc_trace: wb.Trace, tmp_path: Path) -> None:
    path = save_chrome_trace(nnc_trace, tmp_path / "t.json", time_unit="ns")
    data = _strict_json(path.read_text())
    assert data["displayTimeUnit"] == "ms" and data["otherData"]["stream_offset"] == 1
    events = data["traceEvents"]
    assert all(e["pid"] >= 1 and e["tid"] >= 1 for e in events)
    assert all(_on_grid(e["ts"]) and _on_grid(e.get("dur", 0)) for e in events if "ts" in e)
    slices = [e for e in events if e["ph"] == "X" and e["cat"] == "kernel"]
    df = nnc_trace.df
    assert sorted(e["name"] for e in slices) == sorted(df["op"])  # one kernel event per op
    row = {r.op: r for r in df.itertuples()}
    for e in slices:
        r = row[e["name"]]
        assert e["tid"] == e["args"]["stream"] == r.stream + 1 and e["args"]["op"] == r.op
        assert e["ts"] == pytest.approx(r.start_us, abs=5e-4)
        assert e["dur"] >= 0.002 and e["ts"] + e["dur"] == pytest.approx(
            max(r.end_us, r.start_us + 0.002), abs=1e-3)
    names = {(e["tid"], e["args"]["name"]) for e in events
             if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 1}
    assert names == {(s + 1, f"stream {s}") for s in set(df["stream"])}
    # launches: one cudaLaunchKernel per kernel with the kernel's correlation id
    runtime = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime"}
    assert sorted(runtime) == sorted(e["args"]["correlation"] for e in slices)
    # sync flows: the start strictly inside a's slice, the end 1 ns before b's start on b's track
    kernel = {e["name"]: e for e in slices}
    starts = {e["id"]: e for e in events if e["ph"] == "s" and e["cat"] == "sync"}
    ends = {e["id"]: e for e in events if e["ph"] == "f" and e["cat"] == "sync"}
    assert starts.keys() == ends.keys() and len(starts) == nnc_trace.schedule.n_syncs > 0
    pairs = set()
    for k, s in starts.items():
        f = ends[k]
        a, b = kernel[s["args"]["from"]], kernel[s["args"]["to"]]
        pairs.add((a["name"], b["name"]))
        assert s["tid"] == a["tid"] and a["ts"] < s["ts"] < a["ts"] + a["dur"]
        assert f["tid"] == b["tid"] and f["ts"] == pytest.approx(b["ts"] - 0.001, abs=1e-6)
        assert "bp" not in f and s["cat"] == f["cat"] and s["name"] == f["name"]
    assert pairs == set(nnc_trace.schedule.syncs)
    counters = [e for e in events if e["ph"] == "C"]
    assert counters and max(c["args"]["bytes"] for c in counters) > 0
    assert counters[-1]["args"]["bytes"] >= 0 and {c["pid"] for c in counters} == {1}


def test_export_barriers_and_host_ops(tmp_path: Path) -> None:
    g = wb.models.inception_v3(fused=False)
    ios = wb.simulate(wb.schedule(g, "wavefront"), "h100")
    events = to_chrome_trace(ios)["traceEvents"]
    barriers = [e for e in events if e["ph"] == "i"]
    assert len(barriers) == ios.schedule.n_barriers > 0
    assert all(e["s"] == "g" and e["cat"] == "barrier" for e in barriers)
    host = wb.Graph.from_edges([("load", "a"), ("a", "b")], devices={"load": "cpu"})
    t = wb.simulate(wb.schedule(host, "serial"), "h100")
    cpu = [e for e in to_chrome_trace(t)["traceEvents"] if e.get("cat") == "cpu_op"
           and not e["args"].get("wb_launch")]  # not the launching calls of GPU ops
    assert [e["name"] for e in cpu] == ["load"] and "stream" not in cpu[0]["args"]


def test_export_gzip_and_zero_durations(tmp_path: Path) -> None:
    g = wb.Graph.from_edges([("a", "b")])
    df = pd.DataFrame({"op": ["a", "b"], "kind": ["op", "op"], "stream": [0, 0],
                       "device": ["gpu", "gpu"], "start_us": [0.0, 5.0], "end_us": [5.0, 5.0],
                       "alone_us": [float("nan"), 1.0]})
    trace = wb.Trace(df, graph=g, policy="hand", device="h100")
    data = to_chrome_trace(trace, memory=False, time_unit="ns")
    b = next(e for e in data["traceEvents"] if e.get("name") == "b" and e["ph"] == "X")
    assert b["dur"] == 0.002 and b["args"]["alone_us"] == 1.0
    a = next(e for e in data["traceEvents"] if e.get("name") == "a" and e["ph"] == "X")
    assert a["args"]["alone_us"] is None  # NaN is not JSON
    path = save_chrome_trace(trace, tmp_path / "t.json.gz", rank=2)
    text = gzip.decompress(path.read_bytes()).decode()
    assert _strict_json(text)["traceEvents"] and _hta_rank(text) == 2
    # whole µs (the default): b (0 µs long) lasts 1 µs, as no op follows it on its stream
    us = to_chrome_trace(trace, memory=False)
    assert [(e["ts"], e["dur"]) for e in us["traceEvents"] if e["ph"] == "X"] == [
        (0.0, 5.0), (5.0, 1.0)]


def _hta_rank(text: str) -> int | None:
    """The rank HolisticTraceAnalysis 0.5 reads from a trace file's text (its pattern, first
    match; hta.common.trace_file.create_rank_to_trace_dict)."""
    match = re.search(r'"rank":\s+(\d+)', text)
    return int(match.group(1)) if match else None


def test_export_rank_where_hta_finds_it(tmp_path: Path) -> None:
    g = wb.Graph.from_edges([("a", "b"), ("a", "c")])
    trace = wb.simulate(wb.schedule(g, "nnc"))
    for rank in (0, 1, 17):
        text = save_chrome_trace(trace, tmp_path / f"rank{rank}.json", rank=rank).read_text()
        assert _hta_rank(text) == rank and text.startswith('{"distributedInfo": {"rank": ')
        assert _strict_json(text)["distributedInfo"] == {"rank": rank}
    for bad in (-1, True, "1", 1.0, None):
        with pytest.raises(wb.OptionError, match="rank must be a whole number") as info:
            to_chrome_trace(trace, rank=bad)  # type: ignore[arg-type]
        assert "\n" not in str(info.value)


def _overlaps(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Slices of one track that overlap without nesting (Perfetto cannot draw them)."""
    tracks: dict[tuple[int, int], list[tuple[float, float, str]]] = {}
    for e in events:
        if e["ph"] == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append(
                (e["ts"], -e["dur"], e["name"]))
    bad = []
    for track, slices in tracks.items():
        open_ends: list[float] = []
        for ts, neg, name in sorted(slices):
            while open_ends and open_ends[-1] <= ts:
                open_ends.pop()
            if open_ends and ts - neg > open_ends[-1]:
                bad.append((track, name, ts))
            open_ends.append(ts - neg)
    return bad


def test_export_whole_us_by_default_zero_length_ops(tmp_path: Path) -> None:
    """The default export is on the whole-µs grid; a zero-length op (a view) and a sub-µs op
    that round into one µs stay in their stream's order instead of overlapping the next op, so
    the file reads back (it did not: 'kernels on one stream cannot overlap') and Perfetto nests
    nothing wrongly."""
    ops = ["a", "view", "tiny", "d", "e"]
    g = wb.Graph.from_edges([("a", "view"), ("view", "tiny"), ("tiny", "d"), ("a", "e")])
    df = pd.DataFrame({"op": ops, "kind": ["op"] * 5, "stream": [0, 0, 0, 0, 1],
                       "device": ["gpu"] * 5, "start_us": [0.0, 5.3, 5.3, 5.6, 5.3],
                       "end_us": [5.3, 5.3, 5.6, 9.0, 5.4], "issue_us": [0.0, 1, 2, 3, 4]})
    trace = wb.Trace(df, graph=g, policy="hand", device="h100")
    path = save_chrome_trace(trace, tmp_path / "t.json")
    data = _strict_json(path.read_text())
    events = data["traceEvents"]
    assert data["otherData"]["time_unit"] == "us"
    assert all(float(e["ts"]).is_integer() and float(e.get("dur", 0)).is_integer()
               for e in events if "ts" in e)
    assert _overlaps(events) == []
    spans = {e["name"]: (e["ts"], e["dur"]) for e in events if e.get("cat") == "kernel"}
    assert spans == {"a": (0, 5), "view": (5, 0), "tiny": (5, 1), "d": (6, 3), "e": (5, 1)}
    back = load_pytorch_trace(path).df.set_index("op").sort_index()
    a = trace.df.set_index("op").sort_index()
    assert list(a.index) == list(back.index)
    assert (a["start_us"] - back["start_us"]).abs().max() <= 0.5 + 1e-9
    assert (a["end_us"] - back["end_us"]).abs().max() <= 1.5 + 1e-9


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
    assert len(g) == 4 and g.op("implicit_convolve_sgemm#0").thread_blocks == 8
    # stream 7 ran its three events in order; stream 13's one kernel waited on nothing
    assert g.edges == (("Memcpy HtoD (Pageable -> Device)#0", "implicit_convolve_sgemm#0"),
                       ("implicit_convolve_sgemm#0", "vectorized_elementwise_kernel#1"))
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
    with pytest.raises(wb.FormatError, match="no event matches an op of graph"):
        load_pytorch_trace(path, graph=other)


BAD = {
    "not_json": (b"{ this is not json", "invalid JSON"),
    "no_events": (json.dumps({"schemaVersion": 1}).encode(), "no 'traceEvents'"),
    "no_ops": (json.dumps({"traceEvents": KINETO["traceEvents"][6:]}).encode(),
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


@pytest.mark.parametrize("policy", ["nnc", "wavefront", "serial"])
def test_round_trip_every_op(policy: str, tmp_path: Path) -> None:
    """The ns export reads back to the ns grid (the default whole-µs one: above)."""
    g = wb.models.inception_v3(fused=False)
    host = wb.Graph.from_edges([("load", "a"), ("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
                               devices={"load": "cpu"})
    for graph in (g, host):
        trace = wb.simulate(wb.schedule(graph, policy), "h100")
        back = load_pytorch_trace(save_chrome_trace(trace, tmp_path / f"{graph.name}.json",
                                                    time_unit="ns"))
        assert back.executor == "measured" and back.policy == "measured"
        a = trace.df.set_index("op").sort_index()
        b = back.df.set_index("op").sort_index()
        assert list(a.index) == list(b.index)  # every op, by id
        assert (a["stream"] == b["stream"]).all() and (a["device"] == b["device"]).all()
        assert (a["start_us"] - b["start_us"]).abs().max() <= 5e-4 + 1e-9  # ns grid, float error
        assert ((a["end_us"].clip(lower=a["start_us"] + 0.002)) - b["end_us"]).abs().max() \
            <= 1e-3
        assert (b["kind"] == a["kind"]).all()
