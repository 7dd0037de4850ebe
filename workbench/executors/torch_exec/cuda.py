"""Streams, events, CUDA graphs and CUDA-event timing of an issue program on a GPU.

Written against a small interface, :class:`CudaLike` (the part of ``torch.cuda`` it uses:
``Stream``, ``Event``, ``stream``, ``synchronize``, ``CUDAGraph``, ``graph``, the peak-memory
counters), so a recording test double drives every path on the CPU
(``tests/test_torch_cuda_fake.py``).  What a run does:

* **Streams.**  One stream per schedule stream that launches ops, plus the *launching* stream
  every run forks from (an event recorded on it, waited by every stream) and joins back to (an
  event per stream, waited by it).  ``torch.cuda.Stream()`` hands out streams round-robin from a
  pool of :data:`STREAM_POOL` per priority and device, so a schedule with more streams than the
  pool holds beside the launching one is *folded*: its extra streams share CUDA streams with the
  least-loaded ones (each CUDA stream runs its ops in issue order, which respects every
  dependency, so the schedule stays valid with less overlap), and a one-line warning says so.
  Streams another live program holds too (two accelerated models alive together past the pool's
  size) are counted (``shared_with_others``), and said once per process.
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
  graph's).  If this torch or driver cannot time events inside a graph (torch before 2.8 has no
  ``external`` events: ``TypeError``; a driver that refuses them: ``RuntimeError``), the rows
  come from an eager run with per-op events and the timeline's description says so.
* **Deadline**: ``deadline`` (a ``time.perf_counter()`` value) stops the timed repeats once it
  has passed (at least one is timed; ``Timing.notes["stopped_at_deadline"]``).
* **A failing capture** raises its own error (the error of ending the broken capture, which torch
  raises next, is noted in it), so a caller's fallback reports what went wrong.

Tensors live until their run ends, and every run forks from the launching stream after the last
one joined back, so a block freed by one run is never reused by the next while a side stream
still reads it.  Complexity: O(V + syncs + S · barriers) host calls per run.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from workbench._checks import first_line, warn_line
from workbench.executors.torch_exec.host import Timing
from workbench.executors.torch_exec.program import Program
from workbench.executors.torch_exec.values import EvaluatorLike as Evaluator
from workbench.ops.control import DEVICE_SYNC


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


#: Streams ``torch.cuda.Stream()`` hands out round-robin per priority and device (PyTorch's
#: ``kStreamsPerPool``): the 33rd call returns the 1st stream again.
STREAM_POOL = 32

_LIVE: weakref.WeakSet[Streams] = weakref.WeakSet()  # every program's streams still alive
_SAID: list[bool] = []  # whether sharing with another live program was said


def fold_streams(program: Program, n_physical: int) -> dict[Any, int]:
    """Schedule stream -> one of ``n_physical`` CUDA streams: each of the ``n_physical`` busiest
    schedule streams (most ops; ties by first use) gets its own, and each other one joins the
    CUDA stream with the fewest ops so far.  Any mapping keeps the schedule valid: a CUDA stream
    runs what is issued to it in issue order, and issue order respects every dependency.
    O(S log S + V)."""
    load: dict[Any, int] = dict.fromkeys(program.streams, 0)
    for step in program.steps:
        load[step.stream] += 1
    by_load = sorted(program.streams, key=lambda s: -load[s])  # stable: first use breaks ties
    home = {s: k for k, s in enumerate(by_load[:n_physical])}
    ops_on = [load[s] for s in by_load[:n_physical]]
    for s in by_load[n_physical:]:
        k = min(range(len(ops_on)), key=lambda i: (ops_on[i], i))
        home[s] = k
        ops_on[k] += load[s]
    return home


def _handle(stream: Any) -> Any:
    """The CUDA stream behind a stream object (torch's ``cuda_stream``), else the object."""
    return getattr(stream, "cuda_stream", stream)


class Streams:
    """The streams and sync events of one program: the launching stream, one stream per schedule
    stream (folded onto at most ``STREAM_POOL - 1``: see the module docstring), one event per
    sync source, the fork / join / barrier events.  ``folded``: how many schedule streams share
    a CUDA stream with another; ``shared_with_others``: CUDA streams another live program holds
    too."""

    def __init__(self, cuda: CudaLike, program: Program) -> None:
        self.cuda = cuda
        self.program = program
        self.launch = cuda.Stream()
        n_physical = min(len(program.streams), STREAM_POOL - 1)
        pool = [cuda.Stream() for _ in range(n_physical)]
        home = fold_streams(program, n_physical)
        self.streams = {s: pool[home[s]] for s in program.streams}
        self.folded = len(program.streams) - n_physical
        if self.folded:
            warn_line(f"torch executor: the schedule has {len(program.streams)} streams and "
                      f"torch.cuda hands out {STREAM_POOL} per priority (one launches), so "
                      f"{self.folded} of them share a CUDA stream with a less busy one (ops keep "
                      f"their issue order there: still valid, with less overlap)")
        mine = {_handle(st) for st in (self.launch, *pool)}
        theirs = {_handle(st) for other in list(_LIVE) if other.cuda is cuda
                  for st in other.distinct()}
        self.shared_with_others = len(mine & theirs)
        if self.shared_with_others and not _SAID:
            _SAID.append(True)  # once per process: every later one shares as well
            warn_line(f"torch executor: {self.shared_with_others} of this run's CUDA streams "
                      f"are also held by another live schedule (torch.cuda's pool has "
                      f"{STREAM_POOL} per priority): their work serialises where they share if "
                      f"both run at once")
        _LIVE.add(self)
        self.sync = {a: cuda.Event() for a in program.sources}
        self.fork = cuda.Event()
        self.joins = {s: cuda.Event() for s in program.streams}
        self.barrier_in = {s: cuda.Event() for s in program.streams}
        self.barrier_out = cuda.Event()
        self.barriers_as_joins = 0  # device_sync barriers realised as joins (under capture)
        self.current: Any = None  # the stream the op being issued runs on

    def distinct(self) -> list[Any]:
        """The launching stream and the CUDA streams the schedule's streams run on."""
        seen: dict[int, Any] = {id(self.launch): self.launch}
        for st in self.streams.values():
            seen.setdefault(id(st), st)
        return list(seen.values())

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
        if self.program.barrier_kind == DEVICE_SYNC and not capturing:
            self.cuda.synchronize()
            return
        if self.program.barrier_kind == DEVICE_SYNC:
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
    """``n`` pairs of timing events; ``external`` ones (recordable inside a capture) only when
    asked: torch before 2.8 knows no such keyword."""
    kw = {"external": True} if external else {}
    return [(cuda.Event(enable_timing=True, **kw), cuda.Event(enable_timing=True, **kw))
            for _ in range(n)]


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


def _until(deadline: float | None, pairs: Marks) -> Iterator[tuple[Any, Any]]:
    """``pairs`` in order, stopping before the second and later ones once ``deadline`` (a
    ``time.perf_counter()`` value) has passed."""
    for k, pair in enumerate(pairs):
        if k and deadline is not None and time.perf_counter() > deadline:
            return
        yield pair


def _deadline_notes(done: int, repeats: int) -> dict[str, object]:
    return {"stopped_at_deadline": True, "repeats_timed": done} if done < repeats else {}


def time_eager(rt: Streams, evaluator: Evaluator, *, warmup: int, repeats: int,
               deadline: float | None = None) -> Timing:
    """Eager runs: warm-up, ``repeats`` makespans (fewer past ``deadline``), then the per-op
    timeline run."""
    cuda = rt.cuda
    cuda.synchronize()  # the inputs' uploads are done before any stream reads them
    for _ in range(warmup):
        evaluator.start()
        issue(rt, evaluator.run_op)
    cuda.synchronize()
    pairs = _marks(cuda, repeats)
    host: list[float] = []
    for first, last in _until(deadline, pairs):
        evaluator.start()
        h0 = time.perf_counter_ns()
        first.record(rt.launch)
        issue(rt, evaluator.run_op)
        last.record(rt.launch)
        host.append((time.perf_counter_ns() - h0) / 1e3)
    cuda.synchronize()
    spans = [a.elapsed_time(b) * 1e3 for a, b in pairs[:len(host)]]
    start, end, issued = _eager_timeline(rt, evaluator)
    return Timing(spans, start, end, issued, "cuda events around each op (eager)", host_us=host,
                  notes=_deadline_notes(len(spans), repeats))


class Captured:
    """A captured CUDA graph with the outputs its replays write (kept alive with it): the graph
    outputs by tensor id and what the model returns (see :meth:`Evaluator.result`)."""

    def __init__(self, graph: Any, outputs: dict[str, Any], result: Any) -> None:
        self.graph, self.outputs, self.result = graph, outputs, result


def capture(rt: Streams, evaluator: Evaluator, *, marks: Marks | None = None,
            origin: Any = None) -> Captured:
    """Capture one whole run as a CUDA graph on the launching stream (``origin``: a timing event
    recorded first, for per-op marks).  Work that fails during the capture raises its own error,
    not the one torch raises next for ending the broken capture (that one is noted in it)."""
    cuda = rt.cuda
    evaluator.start()
    graph = cuda.CUDAGraph()
    failed: list[BaseException] = []
    try:
        with cuda.graph(graph, stream=rt.launch):
            try:
                if origin is not None:
                    origin.record(rt.launch)
                issue(rt, evaluator.run_op, marks=marks, capturing=True)
            except BaseException as exc:
                failed.append(exc)
                raise
    except BaseException as end:
        if not failed or end is failed[0]:
            raise
        first = failed[0]
        if hasattr(first, "add_note"):  # Python 3.11+
            first.add_note(f"ending the capture then failed too: {first_line(end)}")
        raise first from None
    return Captured(graph, evaluator.outputs(), evaluator.result())


def replay(rt: Streams, captured: Captured) -> None:
    with rt.cuda.stream(rt.launch):
        captured.graph.replay()


def time_graph(rt: Streams, evaluator: Evaluator, *, warmup: int, repeats: int,
               deadline: float | None = None) -> tuple[Timing, Captured]:
    """Capture once, replay: warm-up replays, ``repeats`` timed replays (fewer past
    ``deadline``), then the per-op timeline (a second capture with timing events inside,
    replayed as many times).  Returns the timing and the plain capture, whose tensors hold the
    outputs of its last replay."""
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
    host: list[float] = []
    for first, last in _until(deadline, pairs):
        h0 = time.perf_counter_ns()
        first.record(rt.launch)
        replay(rt, plain)
        last.record(rt.launch)
        host.append((time.perf_counter_ns() - h0) / 1e3)
    cuda.synchronize()
    spans = [a.elapsed_time(b) * 1e3 for a, b in pairs[:len(host)]]
    timed = len(spans)
    n = len(rt.program.steps)
    notes: dict[str, object] = _deadline_notes(timed, repeats)
    failure: Exception | None = None
    try:
        marks = _marks(cuda, n, external=True)
        origin = cuda.Event(enable_timing=True, external=True)
    except (TypeError, RuntimeError) as exc:  # torch < 2.8: Event() takes no 'external'
        failure = exc
    if failure is None:
        try:
            stamped = capture(rt, evaluator, marks=marks, origin=origin)
            runs = []
            for _ in range(timed):
                replay(rt, stamped)
                cuda.synchronize()
                runs.append(([origin.elapsed_time(a) * 1e3 for a, _ in marks],
                             [origin.elapsed_time(b) * 1e3 for _, b in marks]))
        except RuntimeError as exc:  # a driver that cannot time events inside a graph
            failure = exc
    if failure is None:
        ends = sorted(range(timed), key=lambda k: (max(runs[k][1], default=0.0), k))
        start, end = runs[ends[(timed - 1) // 2]]
        how = (f"cuda events inside the graph (the lower-median of {timed} replays of a "
               f"second capture)")
    else:
        start, end, _ = _eager_timeline(rt, evaluator)
        how = "cuda events around each op (an eager run: events inside the graph failed)"
        notes["graph_timeline_error"] = first_line(failure, "error")
    timing = Timing(spans, start, end, [0.0] * n, how, host_us=host, notes=notes)
    replay(rt, plain)  # the plain capture's tensors hold the outputs of a full replay
    cuda.synchronize()
    return timing, plain


__all__ = ["STREAM_POOL", "Captured", "CudaLike", "Streams", "capture", "fold_streams", "issue",
           "replay", "time_eager", "time_graph"]
