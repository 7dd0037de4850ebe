"""Real profiler output imports (tests/data/real, README there): the H200 traces of this
project and HolisticTraceAnalysis's public A100 / MI250 traces and ET pair.  Every kernel lands
on its own CUDA stream, fewer than 5% fall into the generic kind, the dependencies the run
obeyed (stream order, cross-stream event waits) become edges that the GPU timeline respects,
a profiler step is chosen and said, and one line counts what was not matched."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

import workbench as wb
from workbench.io import execution_graph, load_execution_trace, load_pytorch_trace
from workbench.io.traces.pytorch_profile import kernel_kind

REAL = Path(__file__).parent / "data" / "real"
KINETO = ["kineto_inception_v3_b1", "kineto_workbench_nnc_inception_v3_b1", "hta_a100_alexnet",
          "hta_a100_event_sync_multi_stream", "hta_a100_simple_add_kineto",
          "hta_two_steps_rank0", "hta_a100_triton", "hta_mi250_train"]


def _events(name: str) -> list[dict[str, Any]]:
    with gzip.open(REAL / f"{name}.json.gz") as f:
        return list(json.load(f)["traceEvents"])


def _gpu(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def _stream_id(event: dict[str, Any]) -> int:
    """The event's stream as the trace writes it (an int, or ROCm's ``"0x0"``), else tid."""
    value = event["args"].get("stream", event["tid"])
    return int(value, 0) if isinstance(value, str) else int(value)


@pytest.mark.parametrize("name", KINETO)
def test_every_kernel_on_its_stream_and_classified(name: str) -> None:
    trace = load_pytorch_trace(REAL / f"{name}.json.gz", step="all")
    gpu = _gpu(_events(name))
    df = trace.df
    assert len(df) == len(gpu) and set(df["device"]) == {"gpu"}
    # each kernel's stream, matched by its start time and name (independent of the importer)
    want = sorted((round(float(e["ts"]), 3), _stream_id(e)) for e in gpu)
    got = sorted((round(float(s + trace.meta["t0_us"]), 3), int(st))
                 for s, st in zip(df["start_us"], df["stream"], strict=True))
    assert got == want
    generic = (df["kind"] == "kernel").sum()
    assert generic < 0.05 * len(df), df[df["kind"] == "kernel"]
    assert "\n" not in trace.meta["summary"] and f"{generic} kernels of unknown kind" in \
        trace.meta["summary"]


@pytest.mark.parametrize(("kernel", "kind"), [
    ("sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize32x32x8", "conv2d"),
    ("sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc", "conv2d"),
    ("cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688dgrad_optimized_tf32_128x128>", "conv2d"),
    ("void cask_cudnn::computeOffsetsKernel<false, false>(cask_cudnn::ComputeOffsetsParams)",
     "conv2d"),
    ("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>", "transpose"),
    ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 32, true, 1>", "batchnorm"),
    ("cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nt_align4>", "matmul"),
    ("void epilogue::impl::globalKernel<float, float, float, true, true>", "matmul"),
    ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1", "matmul"),
    ("fbgemm_gpu::permute_2D_lengths_kernel<int>", "transpose"),
    ("split_embedding_codegen_forward_unweighted_kernel<float, float, float, long>",
     "embedding"),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2>",
     "concat"),
    ("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float>",
     "elementwise"),
    ("at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, float>",
     "layernorm"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
     "collective"),
    ("cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int, int>>", "sort"),
    ("triton_poi_fused_add_cos_sin_0", "elementwise"), ("triton_red_fused_sum_1", "reduce"),
    ("triton__0d1d2d3d", "fused"),
])
def test_real_kernel_names(kernel: str, kind: str) -> None:
    assert kernel_kind(kernel) == kind


def _check_edges(trace: wb.Trace) -> tuple[int, int]:
    """The graph is a DAG whose every edge the measured timeline respects; returns the counts
    of same-stream and cross-stream edges, recomputed from the frame."""
    g = trace.graph
    assert nx.is_directed_acyclic_graph(nx.DiGraph(list(g.edges)))
    rows = trace.df.set_index("op")
    same = cross = 0
    for a, b in g.edges:
        assert rows.at[a, "end_us"] <= rows.at[b, "start_us"] + 0.01, (a, b)
        same += rows.at[a, "stream"] == rows.at[b, "stream"]
        cross += rows.at[a, "stream"] != rows.at[b, "stream"]
    return same, cross


def test_cuda_sync_waits_become_cross_stream_edges() -> None:
    """HTA's three-stream trace: one ``Stream Wait Event`` (stream 24 waits on stream 20)."""
    trace = load_pytorch_trace(REAL / "hta_a100_event_sync_multi_stream.json.gz")
    same, cross = _check_edges(trace)
    assert (same, cross) == (3, 1) and not trace.meta["sync_edges_inferred"]
    rows = trace.df.set_index("op")
    [(a, b)] = [(a, b) for a, b in trace.graph.edges
                if rows.at[a, "stream"] != rows.at[b, "stream"]]
    assert (rows.at[a, "stream"], rows.at[b, "stream"]) == (20, 24)
    alexnet = load_pytorch_trace(REAL / "hta_a100_alexnet.json.gz")
    assert _check_edges(alexnet) == (96, 6) and alexnet.meta["unresolved_waits"] == 0


def test_runtime_only_waits_are_inferred_and_consistent() -> None:
    """The H200 run of the workbench's nnc schedule records and waits on CUDA events with no
    ``cuda_sync`` events: the waits are inferred from the launch order, checked against the
    timeline, and the six streams are joined into one connected DAG."""
    trace = load_pytorch_trace(REAL / "kineto_workbench_nnc_inception_v3_b1.json.gz")
    same, cross = _check_edges(trace)
    # 82 waits: the schedule's 70 syncs and the fork to / join from the launching stream; a
    # fork's waits (one record, a wait per stream) each give the next stream to launch an edge
    assert trace.meta["sync_edges_inferred"] and cross == trace.meta["sync_edges"] >= 60
    assert trace.df["stream"].nunique() == 6 and same == len(trace.df) - 6
    assert nx.is_weakly_connected(nx.DiGraph(list(trace.graph.edges)))
    assert trace.meta["contradicted_waits"] == 0


def test_profiler_step_chosen_and_said(tmp_path: Path) -> None:
    path = REAL / "hta_two_steps_rank0.json.gz"
    every = load_pytorch_trace(path, step="all")
    last = load_pytorch_trace(path)
    first = load_pytorch_trace(path, step=551)
    assert last.meta["step"] == 552 and last.meta["steps"] == [551, 552]
    assert first.meta["step"] == 551 and every.meta["step"] is None
    assert len(first.df) + len(last.df) == len(every.df)
    assert "ProfilerStep#552 (complete" in last.meta["summary"]
    assert f"{len(first.df)} events outside the step" in last.meta["summary"]
    with pytest.raises(wb.FormatError, match=r"no ProfilerStep#9 in the trace \(it has steps "
                                             r"551, 552\)"):
        load_pytorch_trace(path, step=9)
    # drop one kernel of step 552: it is no longer complete, the default falls back to 551
    with gzip.open(path) as f:
        data = json.load(f)
    span = next(e for e in data["traceEvents"] if e.get("name") == "ProfilerStep#552")
    launch = next(e for e in data["traceEvents"] if e.get("cat") == "cuda_runtime"
                  and "Launch" in e["name"] and span["ts"] <= e["ts"] <= span["ts"] + span["dur"])
    data["traceEvents"] = [e for e in data["traceEvents"] if not (
        e.get("cat") == "kernel" and e["args"].get("correlation") ==
        launch["args"]["correlation"])]
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(data))
    assert load_pytorch_trace(cut).meta["step"] == 551


def test_hta_schema_1_0_1_execution_trace_pair() -> None:
    """HTA's A100 ET (schema 1.0.1: ``parent``, top-level ``rf_id``, list inputs) and its
    Kineto trace (no 'Record function id': joined on 'External id')."""
    et = REAL / "hta_a100_simple_add_et.json.gz"
    alone = execution_graph(et)
    assert len(alone) == 10 and len(alone.edges) == 8
    assert ("aten::rand#0", "aten::add#0") in alone.edges  # by the tensor ids
    trace = load_execution_trace(et, REAL / "hta_a100_simple_add_kineto.json.gz")
    assert trace.meta["kernels"] == 4 and set(trace.df["stream"]) == {7}
    assert [op.kind for op in trace.graph.ops].count("add") == 2


def test_h200_execution_trace_and_kineto() -> None:
    trace = load_execution_trace(REAL / "et_inception_v3_b1.json.gz",
                                 REAL / "kineto_inception_v3_b1.json.gz")
    g = trace.graph
    assert len(g) == 312 and trace.meta["kernels"] == 312
    assert nx.is_weakly_connected(nx.DiGraph(list(g.edges)))
    kinds = [op.kind for op in g.ops]
    assert kinds.count("conv2d") == 94 and kinds.count("concat") == 15


def _wait_trace(b_start: float) -> dict[str, Any]:
    """Kernel a (stream 1), record, wait, kernel b (stream 2) launched in that order; b runs
    at ``b_start`` (a ends at 20): runtime calls only, no cuda_sync events."""
    def call(name: str, ts: float, corr: int) -> dict[str, Any]:
        return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts,
                "dur": 1, "args": {"correlation": corr}}

    def kernel(name: str, stream: int, ts: float, corr: int) -> dict[str, Any]:
        return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts,
                "dur": 10, "args": {"stream": stream, "correlation": corr}}

    return {"traceEvents": [
        call("cudaLaunchKernel", 0, 1), call("cudaEventRecord", 2, 2),
        call("cudaStreamWaitEvent", 4, 3), call("cudaLaunchKernel", 6, 4),
        kernel("a_gemm", 1, 10, 1), kernel("b_gemm", 2, b_start, 4)]}


def test_inferred_wait_contradicted_by_the_timeline_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_wait_trace(25.0)))
    ok = load_pytorch_trace(path)
    assert ok.graph.edges == (("a_gemm#0", "b_gemm#0"),) and ok.meta["sync_edges_inferred"]
    path.write_text(json.dumps(_wait_trace(15.0)))  # b overlaps a: not a real dependency
    bad = load_pytorch_trace(path)
    assert bad.graph.edges == () and bad.meta["contradicted_waits"] == 1
    assert "1 contradicted by the timeline" in bad.meta["summary"]
