"""The torch executor's CUDA paths, driven on the CPU by a fake ``torch.cuda`` that records calls.

:class:`FakeCuda` implements what :class:`workbench.executors.torch_exec.cuda.CudaLike` names
(streams,
events, ``stream`` contexts, CUDA graphs, ``synchronize``, the peak-memory counters) and logs
every call; ops run as CPU tensors (or as a stub that logs them).  The log is checked by
:func:`violations`, an independent oracle of CUDA's ordering rules (stream order, an event wait
sees the work recorded before the event's last record, ``synchronize`` sees everything), so a
dropped sync shows up as a dependency the log leaves unordered.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench.executors.torch_exec import cuda as tcuda
from workbench.executors.torch_exec import runner
from workbench.executors.torch_exec.program import build_program
from workbench.schedulers import TEST_OPTIONS
from workbench.values.schedule import Schedule

pytest.importorskip("torch")
from tests.fake_cuda import on_the_runner  # noqa: E402 (imports torch)

LAUNCH = 0  # the first stream the executor creates is the launching stream


class FakeStream:
    def __init__(self, cuda: FakeCuda, sid: int) -> None:
        self.cuda, self.id = cuda, sid

    def wait_event(self, event: FakeEvent) -> None:
        self.cuda.log.append(("wait", self.id, event.id))

    def wait_stream(self, other: FakeStream) -> None:
        self.cuda.log.append(("wait_stream", self.id, other.id))

    def synchronize(self) -> None:
        self.cuda.log.append(("synchronize",))


class FakeEvent:
    def __init__(self, cuda: FakeCuda, eid: int, enable_timing: bool, external: bool) -> None:
        self.cuda, self.id = cuda, eid
        self.enable_timing, self.external = enable_timing, external
        self.tick: int | None = None

    def record(self, stream: FakeStream | None = None) -> None:
        stream = stream or self.cuda.current
        if self.enable_timing and self.cuda.capturing and not self.external:
            raise RuntimeError("a timing event inside a capture must be external")
        self.cuda.clock += 1
        self.tick = self.cuda.clock
        self.cuda.log.append(("record", stream.id, self.id))

    def elapsed_time(self, end: FakeEvent) -> float:
        assert self.enable_timing and end.enable_timing, "elapsed_time needs timing events"
        assert self.tick is not None and end.tick is not None, "an event was never recorded"
        return (end.tick - self.tick) * 1e-3  # one tick = 1 µs, in ms as torch answers

    def synchronize(self) -> None:
        self.cuda.log.append(("synchronize",))


class FakeGraph:
    def __init__(self, cuda: FakeCuda, gid: int) -> None:
        self.cuda, self.id = cuda, gid

    def replay(self) -> None:
        self.cuda.log.append(("replay", self.cuda.current.id, self.id))


class FakeCuda:
    """A recording stand-in for ``torch.cuda`` (one device; nothing runs asynchronously)."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.streams: list[FakeStream] = []
        self.events: list[FakeEvent] = []
        self.graphs: list[FakeGraph] = []
        self.default = FakeStream(self, -1)
        self.current = self.default
        self.capturing = False
        self.clock = 0

    def Stream(self) -> FakeStream:  # noqa: N802 - torch's names
        s = FakeStream(self, len(self.streams))
        self.streams.append(s)
        return s

    def Event(self, enable_timing: bool = False, external: bool = False) -> FakeEvent:  # noqa: N802
        e = FakeEvent(self, len(self.events), enable_timing, external)
        self.events.append(e)
        return e

    def CUDAGraph(self) -> FakeGraph:  # noqa: N802
        g = FakeGraph(self, len(self.graphs))
        self.graphs.append(g)
        return g

    @contextmanager
    def stream(self, stream: FakeStream) -> Iterator[None]:
        previous, self.current = self.current, stream
        try:
            yield
        finally:
            self.current = previous

    @contextmanager
    def graph(self, cuda_graph: FakeGraph, stream: FakeStream | None = None) -> Iterator[None]:
        assert not self.capturing, "nested capture"
        stream = stream or self.Stream()
        self.log.append(("capture_begin", stream.id, cuda_graph.id))
        self.capturing = True
        try:
            with self.stream(stream):
                yield
        finally:
            self.capturing = False
            self.log.append(("capture_end", stream.id, cuda_graph.id))

    def synchronize(self) -> None:
        if self.capturing:
            raise RuntimeError("cudaDeviceSynchronize is not permitted during stream capture")
        self.log.append(("synchronize",))

    def current_stream(self) -> FakeStream:
        return self.current

    def record_stream(self, tensor: Any, stream: FakeStream) -> None:
        """``tensor.record_stream(stream)``, logged by storage (the executor calls this when
        the CUDA it is given defines it)."""
        self.log.append(("record_stream", tensor.untyped_storage().data_ptr(), stream.id))

    def is_available(self) -> bool:
        return True

    def device(self, device: Any) -> Any:
        return nullcontext()

    def get_device_name(self, device: Any = None) -> str:
        return "Fake H200"

    def get_device_properties(self, device: Any = None) -> Any:
        return SimpleNamespace(name="Fake H200", major=9, minor=0, multi_processor_count=132,
                               total_memory=141 << 30)

    def reset_peak_memory_stats(self) -> None:
        self.log.append(("reset_peak",))

    def max_memory_allocated(self) -> int:
        return 4096


# ---------------------------------------------------------------------------- the log oracle
def ops_of(log: list[tuple[Any, ...]]) -> list[tuple[int, str]]:
    return [(e[1], e[2]) for e in log if e[0] == "op"]


def violations(log: list[tuple[Any, ...]], schedule: Schedule) -> list[str]:
    """Graph dependencies ``a -> b`` where the log does not order ``a`` before ``b`` under CUDA's
    rules: work on a stream follows the stream's earlier work; a wait makes the stream follow
    what the event's last record followed; ``synchronize`` makes everything follow all work
    issued so far.  Independent of the executor's own bookkeeping."""
    graph = schedule.graph
    known: dict[int, set[str]] = {}
    synced: set[str] = set()
    issued: set[str] = set()
    at_record: dict[int, set[str]] = {}
    out = []
    for entry in log:
        tag = entry[0]
        if tag == "op":
            _, s, op = entry
            done = known.setdefault(s, set()) | synced
            out += [f"{p!r} -> {op!r}" for p in graph.predecessors(op) if p not in done]
            known[s].add(op)
            issued.add(op)
        elif tag == "record":
            at_record[entry[2]] = set(known.setdefault(entry[1], set())) | synced
        elif tag == "wait":
            known.setdefault(entry[1], set()).update(at_record.get(entry[2], set()))
        elif tag == "wait_stream":
            known.setdefault(entry[1], set()).update(known.get(entry[2], set()) | synced)
        elif tag == "synchronize":
            synced |= issued
    return out


def _stub(cuda: FakeCuda) -> Any:
    return lambda op: cuda.log.append(("op", cuda.current.id, op))


@functools.cache
def _inception() -> wb.Graph:
    return wb.models.inception_v3(resolution=75, fused=False)


def _issue(schedule: Schedule, **kw: Any) -> tuple[FakeCuda, tcuda.Streams]:
    cuda = FakeCuda()
    rt = tcuda.Streams(cuda, build_program(schedule, kw.pop("barrier_kind", None)))
    tcuda.issue(rt, _stub(cuda), **kw)
    return cuda, rt


# ---------------------------------------------------------------------------- streams and syncs
@pytest.mark.parametrize("policy", ["serial", "nnc", "wavefront", "ios", "gpto"])
def test_one_stream_per_schedule_stream_forked_from_and_joined_to_the_launching_one(
        policy: str) -> None:
    sched = wb.schedule(_inception(), policy, **TEST_OPTIONS.get(policy, {}))
    cuda, rt = _issue(sched)
    assert len(cuda.streams) == 1 + sched.n_streams and rt.launch.id == LAUNCH
    side = {st.id for st in rt.streams.values()}
    assert LAUNCH not in side and len(side) == sched.n_streams
    fork = rt.fork.id
    assert cuda.log[0] == ("record", LAUNCH, fork)
    assert {e[1] for e in cuda.log[1:1 + len(side)] if e[0] == "wait" and e[2] == fork} == side
    tail = cuda.log[-2 * len(side):]
    joins = {rt.joins[s].id: rt.streams[s].id for s in rt.streams}
    recorded = {e[2]: e[1] for e in tail if e[0] == "record"}
    assert recorded == joins
    assert {e[2] for e in tail if e[0] == "wait" and e[1] == LAUNCH} == set(joins)
    assert [op for _, op in ops_of(cuda.log)] == list(sched.issue_order)
    assert all(s == rt.streams[sched.stream_of(op)].id for s, op in ops_of(cuda.log))


@pytest.mark.parametrize("policy", ["nnc", "asap", "min_streams", "gpto", "critical_path"])
def test_every_sync_is_one_record_after_its_source_and_one_wait_before_its_target(
        policy: str) -> None:
    sched = wb.schedule(_inception(), policy, **TEST_OPTIONS.get(policy, {}))
    assert sched.n_syncs > 0
    cuda, rt = _issue(sched)
    log = cuda.log
    sync_ids = {rt.sync[a].id: a for a in rt.sync}
    records = [(i, e) for i, e in enumerate(log) if e[0] == "record" and e[2] in sync_ids]
    waits = [(i, e) for i, e in enumerate(log) if e[0] == "wait" and e[2] in sync_ids]
    assert len(records) == sched.n_events and len(waits) == sched.n_syncs
    position = {e[2]: i for i, e in enumerate(log) if e[0] == "op"}
    for i, (_, s, eid) in records:  # right after its source op, on the source's stream
        a = sync_ids[eid]
        assert log[i - 1] == ("op", s, a) and s == rt.streams[sched.stream_of(a)].id
    by_pair = {(sync_ids[e[2]], e[1]): i for i, e in waits}
    recorded_at = {sync_ids[e[2]]: i for i, e in records}
    for a, b in sched.syncs:
        i = by_pair[(a, rt.streams[sched.stream_of(b)].id)]
        assert recorded_at[a] < i < position[b]
    assert violations(log, sched) == []


@pytest.mark.parametrize("policy", ["nnc", "asap", "gpto"])
def test_a_dropped_sync_is_visible(policy: str) -> None:
    sched = wb.schedule(_inception(), policy, **TEST_OPTIONS.get(policy, {}))
    # drop the sync whose target's stream orders the dependency by nothing else
    dropped = None
    for k, (a, b) in enumerate(sched.syncs):
        trial = Schedule(sched.graph, sched.policy, sched.streams,
                         sched.syncs[:k] + sched.syncs[k + 1:], sched.issue_order)
        cuda, _ = _issue(trial)
        found = violations(cuda.log, trial)
        if found:
            dropped = (a, b, found)
            break
    assert dropped is not None, "no single sync of the schedule is load-bearing"
    a, b, found = dropped
    assert f"{a!r} -> {b!r}" in found


# ---------------------------------------------------------------------------- barriers
def test_join_barriers_are_event_joins_through_the_launching_stream() -> None:
    sched = wb.schedule(_inception(), "wavefront")
    assert sched.n_barriers > 0 and sched.barrier_kind == "join"
    cuda, rt = _issue(sched)
    ids = {rt.barrier_in[s].id for s in rt.streams} | {rt.barrier_out.id}
    n, streams = sched.n_barriers, len(rt.streams)
    assert sum(e[0] == "record" and e[2] in ids for e in cuda.log) == n * (streams + 1)
    assert sum(e[0] == "wait" and e[2] in ids for e in cuda.log) == n * 2 * streams
    assert not any(e[0] == "synchronize" for e in cuda.log)
    assert violations(cuda.log, sched) == []


def test_device_sync_barriers_synchronize_in_eager_and_join_under_capture() -> None:
    # IOS's stage barriers are device synchronisations; built here from the wavefront's stages
    # so the test does not hang on whether the cost model makes IOS pick several stages
    waves = wb.schedule(_inception(), "wavefront")
    sched = dataclasses.replace(waves, barrier_kind="device_sync")
    assert sched.n_barriers > 0 and sched.barrier_kind == "device_sync"
    cuda, rt = _issue(sched)
    assert sum(e[0] == "synchronize" for e in cuda.log) == sched.n_barriers
    assert rt.barriers_as_joins == 0 and violations(cuda.log, sched) == []
    cuda, rt = _issue(sched, capturing=True)
    assert not any(e[0] == "synchronize" for e in cuda.log)
    assert rt.barriers_as_joins == sched.n_barriers and violations(cuda.log, sched) == []
    cuda, rt = _issue(sched, barrier_kind="join")  # the override
    assert not any(e[0] == "synchronize" for e in cuda.log)
    assert violations(cuda.log, sched) == []


def test_without_its_barriers_a_wavefront_schedule_races() -> None:
    sched = wb.schedule(_inception(), "wavefront")
    bare = Schedule(sched.graph, sched.policy, sched.streams, sched.syncs, sched.issue_order)
    cuda, _ = _issue(bare)
    assert violations(cuda.log, bare)


# ---------------------------------------------------------------------------- graphs and timing
def _transformer() -> wb.Graph:
    return wb.models.transformer_block(seq_len=8, d_model=16, heads=2, d_ff=32)


def _evaluator(graph: wb.Graph, cuda: FakeCuda) -> Any:
    from workbench.executors.torch_exec.values import Evaluator, initial_tensors

    ev = Evaluator(graph, initial_tensors(graph, seed=0, inputs=None, device="cpu",
                                          precision="fp32"))
    run_op = ev.run_op

    def logged(op: str) -> None:
        cuda.log.append(("op", cuda.current.id, op))
        run_op(op)

    ev.run_op = logged  # type: ignore[method-assign]
    return ev


def test_graph_mode_captures_once_on_the_launching_stream_and_replays() -> None:
    sched = wb.schedule(_transformer(), "nnc")
    cuda = FakeCuda()
    rt = tcuda.Streams(cuda, build_program(sched))
    timing, captured = tcuda.time_graph(rt, _evaluator(sched.graph, cuda), warmup=2, repeats=5)
    begins = [e for e in cuda.log if e[0] == "capture_begin"]
    assert [e[1] for e in begins] == [LAUNCH, LAUNCH]  # the plain graph, then the timed one
    plain, stamped = begins[0][2], begins[1][2]
    assert captured.graph.id == plain
    replays = [e for e in cuda.log if e[0] == "replay"]
    assert all(e[1] == LAUNCH for e in replays)
    assert sum(e[2] == plain for e in replays) == 2 + 5 + 1  # warm-up, timed, final
    assert sum(e[2] == stamped for e in replays) == 5
    assert len(timing.spans_us) == 5 and all(s > 0 for s in timing.spans_us)
    n = len(sched.issue_order)
    assert len(timing.start_us) == n and all(
        0 < s < e for s, e in zip(timing.start_us, timing.end_us, strict=True))
    inside = cuda.log[cuda.log.index(begins[0]):cuda.log.index(("capture_end", LAUNCH, plain))]
    assert [op for _, op in ops_of(inside)] == list(sched.issue_order)
    assert violations(inside, sched) == []


def test_eager_timing_makes_one_row_per_op_from_events_around_it() -> None:
    sched = wb.schedule(_transformer(), "nnc")
    cuda = FakeCuda()
    rt = tcuda.Streams(cuda, build_program(sched))
    timing = tcuda.time_eager(rt, _evaluator(sched.graph, cuda), warmup=1, repeats=4)
    assert len(timing.spans_us) == 4 and len(timing.end_us) == len(sched.issue_order)
    assert not any(e[0] in ("capture_begin", "replay") for e in cuda.log)
    # the timeline run: every op between a record on its own stream before and after it
    last = [i for i, e in enumerate(cuda.log) if e[0] == "record" and e[1] == LAUNCH
            and cuda.events[e[2]].enable_timing][-1]
    tail = cuda.log[last:]
    for k, entry in enumerate(tail):
        if entry[0] == "op":
            assert tail[k - 1][:2] == ("record", entry[1]) == tail[k + 1][:2]


# ---------------------------------------------------------------------------- run() end to end
@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> FakeCuda:
    return on_the_runner(monkeypatch, FakeCuda())


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_run_on_the_fake_gpu_gives_the_cpu_outputs(fake_cuda: FakeCuda, mode: str) -> None:
    sched = wb.schedule(_transformer(), "nnc")
    trace = runner.run(sched, mode=mode, warmup=1, repeats=3, verify=True, return_outputs=True)
    assert trace.mode == mode and trace.executor == "torch" and trace.device == "Fake H200"
    meta = trace.meta
    assert meta["torch_device"] == "cuda:0" and meta["peak_memory_bytes"] == 4096
    assert meta["streams"] == sched.n_streams and meta["syncs"] == sched.n_syncs
    assert meta["device_info"]["sm_count"] == 132 and meta["simulated_device"] == "h200"
    assert meta["verified"] and len(meta["makespans_us"]) == 3
    assert sorted(trace.df["op"]) == sorted(sched.graph.op_ids)
    assert (trace.df["device"] == "gpu").all() and trace.df["compute_us"].notna().all()
    assert sum(e[0] == "capture_begin" for e in fake_cuda.log) == (2 if mode == "graph" else 0)
    want = runner.run_outputs(sched, device="cpu")
    for t, value in meta["outputs"].items():
        np.testing.assert_array_equal(value, want[t])


class NoTimingInGraphs(FakeCuda):
    """A CUDA whose graphs cannot hold timing events (an older torch or driver)."""

    def Event(self, enable_timing: bool = False, external: bool = False) -> FakeEvent:  # noqa: N802
        if enable_timing and external:
            raise RuntimeError("timing events cannot be captured here")
        return super().Event(enable_timing, external)


def test_graph_mode_falls_back_to_an_eager_timeline_and_says_so() -> None:
    sched = wb.schedule(_transformer(), "nnc")
    cuda = NoTimingInGraphs()
    rt = tcuda.Streams(cuda, build_program(sched))
    timing, _ = tcuda.time_graph(rt, _evaluator(sched.graph, cuda), warmup=1, repeats=3)
    assert "eager run" in timing.timeline and "cannot be captured" in str(
        timing.notes["graph_timeline_error"])
    assert len(timing.spans_us) == 3 and len(timing.end_us) == len(sched.issue_order)
    assert sum(e[0] == "capture_begin" for e in cuda.log) == 1


def test_device_sync_barriers_become_joins_in_a_graph_and_the_meta_counts_them(
        fake_cuda: FakeCuda) -> None:
    sched = wb.schedule(_transformer(), "ios_greedy")
    assert sched.barrier_kind == "device_sync" and sched.n_barriers > 0
    trace = runner.run(sched, mode="graph", warmup=0, repeats=1)
    assert trace.meta["barriers_as_joins"] == 2 * sched.n_barriers  # two captures
    assert trace.meta["barriers"] == sched.n_barriers
    eager = runner.run(sched, mode="eager", warmup=0, repeats=1)
    assert eager.meta["barriers_as_joins"] == 0
