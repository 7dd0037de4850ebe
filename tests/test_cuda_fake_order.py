"""The order of the torch executor's CUDA calls, on the recording fake ``torch.cuda`` (issue 36).

Mutants of ``workbench/executors/torch_exec/cuda.py`` that survived the suite: the device
synchronisation after the inputs' upload removed, no eager warm-up before the capture when
``warmup=0``, the trailing barrier dropped, the median replay's index moved.  Each test pins one
of them on the fake's call log (``tests/test_torch_cuda_fake.py``'s :class:`FakeCuda`) or on the
returned timings.  Ops run as a stub evaluator that only logs them, so no tensor work is done.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import workbench as wb
from tests.test_torch_cuda_fake import LAUNCH, FakeCuda, FakeEvent, FakeGraph, ops_of, violations
from workbench.executors.torch_exec import cuda as tcuda
from workbench.executors.torch_exec.program import build_program
from workbench.values.schedule import Schedule

SYNC = ("synchronize",)


def _diamond() -> Schedule:
    """``a -> b, a -> c, b -> d, c -> d`` under NNC: two streams and two syncs."""
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    sched = wb.schedule(g, "nnc")
    assert sched.n_streams == 2 and sched.n_syncs == 2
    return sched


class StubEvaluator:
    """What the timers need of an evaluator; ``run_op`` logs ``("op", stream, op)``."""

    def __init__(self, cuda: FakeCuda) -> None:
        self.cuda = cuda
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        self.cuda.log.append(("start",))

    def run_op(self, op: str) -> None:
        self.cuda.log.append(("op", self.cuda.current.id, op))

    def outputs(self) -> dict[str, Any]:
        return {}

    def result(self) -> Any:
        return None

    def live_tensors(self) -> list[Any]:
        return []


def _runtime(sched: Schedule, cuda: FakeCuda | None = None) -> tuple[FakeCuda, tcuda.Streams]:
    cuda = cuda or FakeCuda()
    return cuda, tcuda.Streams(cuda, build_program(sched))


def _first(log: list[tuple[Any, ...]], tag: str) -> int:
    return next(i for i, e in enumerate(log) if e[0] == tag)


# ---------------------------------------------------------------------------- the inputs' upload
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_the_device_is_synchronised_before_any_stream_touches_the_inputs(mode: str) -> None:
    """The inputs are uploaded on the default stream before the timers run; the executor's
    streams do not order themselves after it, so the very first CUDA call must be a device
    ``synchronize()`` -- before any event record, wait or op.  Without it a side stream may
    read an input whose copy is still in flight."""
    sched = _diamond()
    cuda, rt = _runtime(sched)
    ev = StubEvaluator(cuda)
    if mode == "eager":
        tcuda.time_eager(rt, ev, warmup=1, repeats=2)
    else:
        tcuda.time_graph(rt, ev, warmup=1, repeats=2)
    gpu = [e for e in cuda.log if e[0] != "start"]
    assert gpu[0] == SYNC
    assert gpu[1][0] == "record"  # then the first run's fork


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_warm_up_work_is_synchronised_before_timing_or_capture(mode: str) -> None:
    """After the eager warm-up runs, a device synchronisation comes before the first timing
    event (eager) or the capture (graph), so warm-up work is neither timed nor still running
    while the graph is captured."""
    sched = _diamond()
    cuda, rt = _runtime(sched)
    ev = StubEvaluator(cuda)
    if mode == "eager":
        tcuda.time_eager(rt, ev, warmup=2, repeats=2)
        first_timed = next(i for i, e in enumerate(cuda.log)
                           if e[0] == "record" and cuda.events[e[2]].enable_timing)
    else:
        tcuda.time_graph(rt, ev, warmup=2, repeats=2)
        first_timed = _first(cuda.log, "capture_begin")
    before = cuda.log[:first_timed]
    last_op = max(i for i, e in enumerate(before) if e[0] == "op")
    assert SYNC in before[last_op:]
    assert len(ops_of(before)) == 2 * len(sched.issue_order)  # exactly the two warm-up runs


# ------------------------------------------------------------------ warm-up before capture
@pytest.mark.parametrize(("warmup", "eager_runs"), [(0, 1), (1, 1), (3, 3)])
def test_at_least_one_eager_run_precedes_the_capture(warmup: int, eager_runs: int) -> None:
    """Library handles and workspaces (cuBLAS, cuDNN) are created lazily by the first call;
    created inside a capture they break it.  So ``time_graph`` runs ``max(1, warmup)`` eager
    runs before capturing -- one even when ``warmup=0`` -- and then ``warmup`` warm-up replays
    of the plain graph (none for ``warmup=0``) before the ``repeats`` timed ones."""
    sched = _diamond()
    cuda, rt = _runtime(sched)
    _, captured = tcuda.time_graph(rt, StubEvaluator(cuda), warmup=warmup, repeats=2)
    begin = _first(cuda.log, "capture_begin")
    eager = [op for _, op in ops_of(cuda.log[:begin])]
    assert eager == list(sched.issue_order) * eager_runs
    plain = [e for e in cuda.log if e[0] == "replay" and e[2] == captured.graph.id]
    assert len(plain) == warmup + 2 + 1  # warm-up, timed, the final one that fills the outputs


# ------------------------------------------------------------------ the trailing barrier
def _with_trailing_barrier(kind: str) -> Schedule:
    sched = _diamond()
    return dataclasses.replace(sched, barriers=(len(sched.issue_order),), barrier_kind=kind)


def test_a_trailing_join_barrier_joins_every_stream_after_the_last_op() -> None:
    """A barrier at position ``len(issue_order)`` follows the last op: every stream records its
    barrier event and the launching stream waits on each, then the launching stream records the
    barrier's exit event and every stream waits on it -- all after the last op and before the
    final joins."""
    sched = _with_trailing_barrier("join")
    program = build_program(sched)
    assert program.trailing_barrier and program.n_barriers == 1
    cuda, rt = _runtime(sched)
    tcuda.issue(rt, StubEvaluator(cuda).run_op)
    log = cuda.log
    last_op = max(i for i, e in enumerate(log) if e[0] == "op")
    streams = {s: st.id for s, st in rt.streams.items()}
    bar_in = [("record", streams[s], rt.barrier_in[s].id) for s in rt.streams]
    bar_out = ("record", LAUNCH, rt.barrier_out.id)
    tail = log[last_op + 1:]
    assert all(e in tail for e in bar_in) and tail.count(bar_out) == 1
    out_at = tail.index(bar_out)
    assert all(tail.index(e) < out_at for e in bar_in)
    assert {e[1] for e in tail[out_at:] if e[0] == "wait" and e[2] == rt.barrier_out.id} == set(
        streams.values())
    joins = [tail.index(("record", streams[s], rt.joins[s].id)) for s in rt.streams]
    assert min(joins) > out_at
    assert violations(log, sched) == []


def test_a_trailing_device_sync_barrier_synchronises_eagerly_and_joins_under_capture() -> None:
    """The same barrier as a device synchronisation: one ``synchronize()`` after the last op in
    an eager run; under capture (where a device sync is not allowed) the event join, counted
    in ``barriers_as_joins``."""
    sched = _with_trailing_barrier("device_sync")
    cuda, rt = _runtime(sched)
    tcuda.issue(rt, StubEvaluator(cuda).run_op)
    last_op = max(i for i, e in enumerate(cuda.log) if e[0] == "op")
    assert cuda.log.count(SYNC) == 1 and cuda.log.index(SYNC) > last_op
    cuda, rt = _runtime(sched)
    tcuda.issue(rt, StubEvaluator(cuda).run_op, capturing=True)
    assert SYNC not in cuda.log and rt.barriers_as_joins == 1
    assert ("record", LAUNCH, rt.barrier_out.id) in cuda.log


# ---------------------------------------------------------------------------- the median replay
class StampEvent(FakeEvent):
    """An event that remembers where in the log it was last recorded (or replayed), so that
    :meth:`elapsed_time` can insist on a synchronisation after it, as CUDA does (reading an
    event that has not completed raises)."""

    logged_at = -1

    def record(self, stream: Any = None) -> None:
        super().record(stream)
        self.logged_at = len(self.cuda.log) - 1
        if self.cuda.capturing:
            self.cuda.in_capture.append(self)

    def elapsed_time(self, end: FakeEvent) -> float:
        assert self.cuda.last_sync() > max(self.logged_at, end.logged_at), "read before a sync"
        return super().elapsed_time(end)


class StampGraph(FakeGraph):
    """A graph whose replay re-records the events captured in it: replay ``k`` of a capture
    holding timing events spaces them ``scale`` ticks apart and delays the last timing event (the
    last op's end mark) by ``stretch`` more (``ReplayingCuda.replays[k]``)."""

    def replay(self) -> None:
        super().replay()
        events = self.cuda.captured.get(self.id, [])
        if not any(e.enable_timing for e in events):
            return
        (scale, stretch), base = self.cuda.replays.pop(0), self.cuda.clock
        last = max(k for k, e in enumerate(events) if e.enable_timing)
        for k, event in enumerate(events):
            event.tick = base + k * scale + (stretch if k == last else 0)
            event.logged_at = len(self.cuda.log) - 1
        self.cuda.clock = base + len(events) * scale + stretch


class ReplayingCuda(FakeCuda):
    def __init__(self, replays: list[tuple[int, int]] = ()) -> None:
        super().__init__()
        self.replays = list(replays)
        self.in_capture: list[FakeEvent] = []
        self.captured: dict[int, list[FakeEvent]] = {}

    def last_sync(self) -> int:
        return max((i for i, e in enumerate(self.log) if e == SYNC), default=-1)

    def Event(self, enable_timing: bool = False, external: bool = False) -> FakeEvent:  # noqa: N802
        e = StampEvent(self, len(self.events), enable_timing, external)
        self.events.append(e)
        return e

    def CUDAGraph(self) -> FakeGraph:  # noqa: N802
        g = StampGraph(self, len(self.graphs))
        self.graphs.append(g)
        return g

    @contextmanager
    def graph(self, cuda_graph: FakeGraph, stream: Any = None) -> Iterator[None]:
        self.in_capture = []
        with super().graph(cuda_graph, stream):
            yield
        self.captured[cuda_graph.id] = self.in_capture


def _graph_rows(replays: list[tuple[int, int]]) -> tcuda.Timing:
    sched = _diamond()
    cuda = ReplayingCuda(replays)
    _, rt = _runtime(sched, cuda)
    timing, _ = tcuda.time_graph(rt, StubEvaluator(cuda), warmup=1, repeats=len(replays))
    assert cuda.replays == [] and "lower-median" in timing.timeline
    return timing


@pytest.mark.parametrize(("scales", "median"), [
    ([4, 1, 3, 2], 2),     # sorted 1 2 3 4: the lower median is the 2nd (index (4 - 1) // 2)
    ([5, 1, 4, 2, 3], 3),  # sorted 1 2 3 4 5: the median, the 3rd
    ([2, 1], 1),           # sorted 1 2: the lower one
])
def test_the_per_op_rows_come_from_the_lower_median_replay(scales: list[int],
                                                           median: int) -> None:
    """The timed capture is replayed ``repeats`` times; replay ``k`` here takes ``scales[k]``
    times as long as a unit replay (every event ``scale`` ticks after the previous one).  The
    rows must be those of the replay whose makespan is the lower median, i.e. exactly
    ``median`` times the unit replay's rows -- not the fastest, slowest or upper median."""
    unit = _graph_rows([(1, 0)])
    rows = _graph_rows([(k, 0) for k in scales])
    assert max(unit.end_us) > 0
    assert rows.start_us == pytest.approx([median * t for t in unit.start_us])
    assert rows.end_us == pytest.approx([median * t for t in unit.end_us])


def test_the_median_replay_is_ranked_by_its_last_end() -> None:
    """Replays ranked by their makespan, the latest end mark: replay 0 is the fastest op by op
    but its last op ends very late (stretch), replays 1 and 2 take 3 and 2 times a unit replay.
    By the last end: 2, 1, 0 -- the lower median is replay 1 (3 x the unit rows).  Ranked by
    the earliest end or the latest start (which the stretch does not move) it would be 0, 2, 1
    and give replay 2's rows."""
    unit = _graph_rows([(1, 0)])
    rows = _graph_rows([(1, 10**6), (3, 0), (2, 0)])
    assert rows.end_us == pytest.approx([3 * t for t in unit.end_us])
    assert rows.start_us == pytest.approx([3 * t for t in unit.start_us])


# ---------------------------------------------------------------------------- every run is whole
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_every_run_starts_fresh_and_timed_runs_issue_every_op(mode: str) -> None:
    """Every eager run and every capture begins with ``evaluator.start()`` (fresh initial
    values, not the previous run's outputs): one start before each fork of the launching
    stream.  Each timed eager run issues the whole program between its two timing events, and
    every repeat gives a makespan and a host issue time.  Timing events are read only after a
    device synchronisation (the fake raises otherwise)."""
    sched = _diamond()
    cuda = ReplayingCuda([(1, 0)] * 3)
    _, rt = _runtime(sched, cuda)
    ev = StubEvaluator(cuda)
    if mode == "eager":
        timing = tcuda.time_eager(rt, ev, warmup=2, repeats=3)
    else:
        timing, _ = tcuda.time_graph(rt, ev, warmup=2, repeats=3)
        assert timing.issue_us == [0.0] * len(sched.issue_order)
    fork = ("record", LAUNCH, rt.fork.id)
    forks = [i for i, e in enumerate(cuda.log) if e == fork]
    for a, b in zip([-1, *forks], forks, strict=False):
        assert cuda.log[a + 1:b].count(("start",)) == 1
    assert ev.starts == len(forks)
    assert len(timing.spans_us) == len(timing.host_us) == 3
    if mode == "eager":
        timed = {e.id for e in cuda.events if e.enable_timing}
        marks = [i for i, e in enumerate(cuda.log)
                 if e[0] == "record" and e[1] == LAUNCH and e[2] in timed][:6]
        for a, b in zip(marks[::2], marks[1::2], strict=True):
            assert [op for _, op in ops_of(cuda.log[a:b])] == list(sched.issue_order)
