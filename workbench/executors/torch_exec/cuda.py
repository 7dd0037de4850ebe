"""Streams, events, CUDA graphs and CUDA-event timing of an issue program on a GPU.

Written against a small interface, :class:`CudaLike` (the part of ``torch.cuda`` it uses:
``Stream``, ``Event``, ``stream``, ``synchronize``, ``CUDAGraph``, ``graph``, the peak-memory
counters), so a recording test double drives every path on the CPU
(``tests/test_torch_cuda_fake.py``).  What a run does:

* **Streams.**  One stream per schedule stream that launches ops, plus the *launching* stream
  every run forks from (an event recorded on it, waited by every stream) and joins back to (an
  event per stream, waited by it).
* **Issue** (:func:`issue`): the host walks the steps in ``issue_order``; before an op its stream
  waits on the events of its sync sources; after a sync source its event is recorded on its
  stream (once per source).  A barrier is an event join of every stream through the launching
  stream (``"join"``), or ``synchronize()`` (``"device_sync"``, eager only: a device
  synchronisation cannot be captured, so under capture it is the join and the meta says so).
* **Eager** (:func:`time_eager`): warm-up runs, then ``repeats`` runs timed by two events on the
  launching stream (the makespans: median and quartiles); then one more run with a pair of timing
  events around every op on its stream (the per-op rows, µs from an event recorded on the
  launching stream before the fork).
* **Graph** (:func:`time_graph`): after eager warm-up, the whole multi-stream run is captured once
  as one CUDA graph on the launching stream (side streams forked from it by events and joined
  back, so they are part of the capture) and replayed: warm-up replays, then ``repeats`` timed
  replays.  The per-op rows come from a second capture with timing events inside it
  (``Event(enable_timing=True, external=True)``: event-record nodes), replayed ``repeats`` times:
  the replay whose makespan is the lower median gives the rows, so ``trace.makespan`` is a
  median replay's (with the marks' small cost; ``meta["makespan_median_us"]`` is the plain
  graph's).  If this torch or driver cannot time events inside a graph, the rows come from an
  eager run with per-op events and the timeline's description says so.

Tensors live until their run ends, and every run forks from the launching stream after the last
one joined back, so a block freed by one run is never reused by the next while a side stream
still reads it.  Complexity: O(V + syncs + S · barriers) host calls per run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from workbench.executors.torch_exec.host import Timing
from workbench.executors.torch_exec.program import Program
from workbench.executors.torch_exec.values import EvaluatorLike as Evaluator


class CudaLike(Protocol):
    """The part of ``torch.cuda`` the issue loop and the timers use."""

    def Stream(self) -> Any: ...  # noqa: N802 - torch's names
    def Event(self, enable_timing: bool = False, external: bool = False) -> Any: ...  # noqa: N802
    def CUDAGraph(self) -> Any: ...  # noqa: N802
    def stream(self, stream: Any) -> Any: ...
    def graph(self, cuda_graph: Any, stream: Any = None) -> Any: ...
    def synchronize(self) -> None: ...
    def reset_peak_memory_stats(self) -> None: ...
    def max_memory_allocated(self) -> int: ...


class Streams:
    """The streams and sync events of one program: the launching stream, one stream per schedule
    stream, one event per sync source, the fork / join / barrier events."""

    def __init__(self, cuda: CudaLike, program: Program) -> None:
        self.cuda = cuda
        self.program = program
        self.launch = cuda.Stream()
        self.streams = {s: cuda.Stream() for s in program.streams}
        self.sync = {a: cuda.Event() for a in program.sources}
        self.fork = cuda.Event()
        self.joins = {s: cuda.Event() for s in program.streams}
        self.barrier_in = {s: cuda.Event() for s in program.streams}
        self.barrier_out = cuda.Event()
        self.barriers_as_joins = 0  # device_sync barriers realised as joins (under capture)
        self.current: Any = None  # the stream the op being issued runs on

    def record_use(self, tensor: Any, stream: Any) -> None:
        """Tell the caching allocator that ``stream`` reads ``tensor`` (``record_stream``), so its
        block is not handed out again before that read is done.  The fake CUDA of the tests
        defines ``record_stream(tensor, stream)`` to log it; ``torch.cuda`` has no such function,
        so the tensor's own method is called."""
        recorder = getattr(self.cuda, "record_stream", None)
        if recorder is not None:
            recorder(tensor, stream)
        else:
            tensor.record_stream(stream)

    def join_all(self) -> None:
        """Every stream's work so far happens before the launching stream's next work."""
        for s, st in self.streams.items():
            self.joins[s].record(st)
            self.launch.wait_event(self.joins[s])

    def fork_all(self, event: Any) -> None:
        event.record(self.launch)
        for st in self.streams.values():
            st.wait_event(event)

    def barrier(self, *, capturing: bool) -> None:
        if self.program.barrier_kind == "device_sync" and not capturing:
            self.cuda.synchronize()
            return
        if self.program.barrier_kind == "device_sync":
            self.barriers_as_joins += 1
        for s, st in self.streams.items():
            self.barrier_in[s].record(st)
            self.launch.wait_event(self.barrier_in[s])
        self.fork_all(self.barrier_out)


Marks = list[tuple[Any, Any]]


def issue(rt: Streams, run_op: Callable[[str], None], *, marks: Marks | None = None,
          capturing: bool = False, issue_ns: list[int] | None = None) -> None:
    """Issue every step of ``rt.program`` once: fork, steps (waits, op, record), joins."""
    program, cuda = rt.program, rt.cuda
    rt.fork_all(rt.fork)
    clock = time.perf_counter_ns
    for step in program.steps:
        if step.barrier:
            rt.barrier(capturing=capturing)
        st = rt.streams[step.stream]
        for a in step.waits:
            st.wait_event(rt.sync[a])
        if issue_ns is not None:
            issue_ns[step.index] = clock()
        rt.current = st
        with cuda.stream(st):
            if marks is not None:
                marks[step.index][0].record(st)
            run_op(step.op)
            if marks is not None:
                marks[step.index][1].record(st)
        if step.record:
            rt.sync[step.op].record(st)
    rt.current = None
    if program.trailing_barrier:
        rt.barrier(capturing=capturing)
    rt.join_all()


def _marks(cuda: CudaLike, n: int, *, external: bool = False) -> Marks:
    return [(cuda.Event(enable_timing=True, external=external),
             cuda.Event(enable_timing=True, external=external)) for _ in range(n)]


def _eager_timeline(rt: Streams, evaluator: Evaluator) -> tuple[list[float], list[float],
                                                                 list[float]]:
    """One eager run with timing events around every op: start, end, issue (µs)."""
    cuda = rt.cuda
    n = len(rt.program.steps)
    marks = _marks(cuda, n)
    origin = cuda.Event(enable_timing=True)
    issue_ns = [0] * n
    evaluator.start()
    h0 = time.perf_counter_ns()
    origin.record(rt.launch)
    issue(rt, evaluator.run_op, marks=marks, issue_ns=issue_ns)
    cuda.synchronize()
    start = [origin.elapsed_time(a) * 1e3 for a, _ in marks]
    end = [origin.elapsed_time(b) * 1e3 for _, b in marks]
    return start, end, [(t - h0) / 1e3 for t in issue_ns]


def time_eager(rt: Streams, evaluator: Evaluator, *, warmup: int, repeats: int) -> Timing:
    """Eager runs: warm-up, ``repeats`` makespans, then the per-op timeline run."""
    cuda = rt.cuda
    cuda.synchronize()  # the inputs' uploads are done before any stream reads them
    for _ in range(warmup):
        evaluator.start()
        issue(rt, evaluator.run_op)
    cuda.synchronize()
    pairs = _marks(cuda, repeats)
    host = []
    for first, last in pairs:
        evaluator.start()
        h0 = time.perf_counter_ns()
        first.record(rt.launch)
        issue(rt, evaluator.run_op)
        last.record(rt.launch)
        host.append((time.perf_counter_ns() - h0) / 1e3)
    cuda.synchronize()
    spans = [a.elapsed_time(b) * 1e3 for a, b in pairs]
    start, end, issued = _eager_timeline(rt, evaluator)
    return Timing(spans, start, end, issued, "cuda events around each op (eager)", host_us=host)


class Captured:
    """A captured CUDA graph with the outputs its replays write (kept alive with it): the graph
    outputs by tensor id and what the model returns (see :meth:`Evaluator.result`)."""

    def __init__(self, graph: Any, outputs: dict[str, Any], result: Any) -> None:
        self.graph, self.outputs, self.result = graph, outputs, result


def capture(rt: Streams, evaluator: Evaluator, *, marks: Marks | None = None,
            origin: Any = None) -> Captured:
    """Capture one whole run as a CUDA graph on the launching stream (``origin``: a timing event
    recorded first, for per-op marks)."""
    cuda = rt.cuda
    evaluator.start()
    graph = cuda.CUDAGraph()
    with cuda.graph(graph, stream=rt.launch):
        if origin is not None:
            origin.record(rt.launch)
        issue(rt, evaluator.run_op, marks=marks, capturing=True)
    return Captured(graph, evaluator.outputs(), evaluator.result())


def replay(rt: Streams, captured: Captured) -> None:
    with rt.cuda.stream(rt.launch):
        captured.graph.replay()


def time_graph(rt: Streams, evaluator: Evaluator, *, warmup: int,
               repeats: int) -> tuple[Timing, Captured]:
    """Capture once, replay: warm-up replays, ``repeats`` timed replays, then the per-op timeline
    (a second capture with timing events inside, replayed ``repeats`` times).  Returns the
    timing and the plain capture, whose tensors hold the outputs of its last replay."""
    cuda = rt.cuda
    cuda.synchronize()
    for _ in range(max(1, warmup)):  # lazy library handles and workspaces before capture
        evaluator.start()
        issue(rt, evaluator.run_op)
    cuda.synchronize()
    plain = capture(rt, evaluator)
    for _ in range(warmup):
        replay(rt, plain)
    pairs = _marks(cuda, repeats)
    host = []
    for first, last in pairs:
        h0 = time.perf_counter_ns()
        first.record(rt.launch)
        replay(rt, plain)
        last.record(rt.launch)
        host.append((time.perf_counter_ns() - h0) / 1e3)
    cuda.synchronize()
    spans = [a.elapsed_time(b) * 1e3 for a, b in pairs]
    n = len(rt.program.steps)
    try:
        marks = _marks(cuda, n, external=True)
        origin = cuda.Event(enable_timing=True, external=True)
        stamped = capture(rt, evaluator, marks=marks, origin=origin)
        runs = []
        for _ in range(repeats):
            replay(rt, stamped)
            cuda.synchronize()
            runs.append(([origin.elapsed_time(a) * 1e3 for a, _ in marks],
                         [origin.elapsed_time(b) * 1e3 for _, b in marks]))
        ends = sorted(range(repeats), key=lambda k: (max(runs[k][1], default=0.0), k))
        start, end = runs[ends[(repeats - 1) // 2]]
        how = (f"cuda events inside the graph (the lower-median of {repeats} replays of a "
               f"second capture)")
        notes: dict[str, object] = {}
    except RuntimeError as exc:  # no timing events inside graphs on this torch / driver
        start, end, _ = _eager_timeline(rt, evaluator)
        how = "cuda events around each op (an eager run: events inside the graph failed)"
        notes = {"graph_timeline_error": str(exc).splitlines()[0] if str(exc) else "error"}
    timing = Timing(spans, start, end, [0.0] * n, how, host_us=host, notes=notes)
    replay(rt, plain)  # the plain capture's tensors hold the outputs of a full replay
    cuda.synchronize()
    return timing, plain


__all__ = ["Captured", "CudaLike", "Streams", "capture", "issue", "replay", "time_eager",
           "time_graph"]
