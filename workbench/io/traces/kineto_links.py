"""What links the events of a PyTorch profiler (Kineto) trace of a GPU run: the host launch of
each kernel, the profiler steps, and the dependencies between kernels (stream order and the
cross-stream waits of CUDA events).

* **Launches**: a kernel (or memcpy / memset) and the CUDA runtime call that launched it share
  ``args.correlation`` (the ``ac2g`` flow events join the same pair: the flow id is the
  correlation), so each kernel gets its launch's host time and thread.
* **Steps**: ``ProfilerStep#N`` annotations on the host; a kernel belongs to the step whose host
  span holds its launch.  A step is *complete* when every kernel launch inside its span has its
  kernel in the trace (the profiler stopped before the last kernels of a cut step ran).
* **Dependencies**: kernels on one stream run in issue order (an edge from each to the next);
  a ``cudaStreamWaitEvent`` makes the first kernel launched onto the waiting stream after it
  wait for the last kernel launched onto the recording stream before the matching
  ``cudaEventRecord``.  Kineto's ``cuda_sync`` events (``Stream Wait Event``: ``stream``,
  ``wait_on_stream``, ``wait_on_cuda_event_record_corr_id``) name both streams and the record;
  where a trace has only the runtime calls (no ``cuda_sync`` events), the record is the latest
  ``cudaEventRecord`` before the wait on the same host thread and its kernel the last one
  launched before it; the waiter is the next kernel launched on another stream that does not
  already follow that source: the waits a kernel finds pending are all its own when their
  sources differ (a join), one per source when they share one (a fork: the next waits of that
  source go to the next streams to launch).  An inferred edge the GPU timeline contradicts
  (the waiter started before its source ended) is dropped and counted.  This follows
  HolisticTraceAnalysis's critical-path analysis (``hta/analyzers/critical_path_analysis.py``),
  which links kernels the same way.

Complexity: O(events log events).
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import FormatError

RUNTIME_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_LAUNCH = re.compile(r"Launch|Memcpy|Memset", re.IGNORECASE)
_RECORD = re.compile(r"^cu(da)?EventRecord")
_WAIT = re.compile(r"^cu(da)?StreamWaitEvent")
#: Slack (µs) when checking an inferred edge against the GPU timeline (Kineto rounds to ns).
_SLACK_US = 0.01


@dataclass
class Step:
    """One ``ProfilerStep#N`` host span."""

    number: int
    start: float
    end: float
    launches: int = 0
    missing: int = 0

    @property
    def complete(self) -> bool:
        return self.missing == 0


@dataclass
class Links:
    """What :func:`link` found: per-kernel launch correlation, the steps, the edges."""

    steps: list[Step] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)  # kernel index pairs
    stream_edges: int = 0
    sync_edges: int = 0
    inferred: bool = False
    unresolved_waits: int = 0
    empty_waits: int = 0
    contradicted: int = 0
    capped: bool = False  # the inferred matching stopped at its work limit (_inferred)


def _corr(args: Mapping[str, Any]) -> int | None:
    value = args.get("correlation")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _args(ev: Mapping[str, Any]) -> Mapping[str, Any]:
    args = ev.get("args")
    return args if isinstance(args, dict) else {}


def runtime_calls(raw: Sequence[Any]) -> dict[int, dict[str, Any]]:
    """Correlation id -> the CUDA runtime / driver call (``X`` event) that carries it."""
    out: dict[int, dict[str, Any]] = {}
    for ev in raw:
        if isinstance(ev, dict) and ev.get("ph") == "X" and str(
                ev.get("cat", "")).lower() in RUNTIME_CATEGORIES:
            c = _corr(_args(ev))
            if c is not None:
                out[c] = ev
    return out


def step_number(name: Any) -> int | None:
    """N of a ``ProfilerStep#N`` annotation's name, else None.

    >>> step_number("ProfilerStep#12"), step_number("aten::mm")
    (12, None)
    """
    m = _STEP.match(str(name))
    return int(m.group(1)) if m else None


def check_step(step: int | str | None, path: object) -> None:
    """A one-line error unless ``step`` is None, ``"all"`` or a step number."""
    if step is None or step == "all":
        return
    if isinstance(step, bool) or not isinstance(step, int):
        raise FormatError(f"{path}: step must be a ProfilerStep number or 'all', got "
                          f"{step!r:.60}")


def missing_step(step: int, numbers: Sequence[int], path: object) -> FormatError:
    """The one-line error for a step number the trace lacks, naming the steps it has (or
    saying it has none: a profile recorded without ``prof.step()``)."""
    if not numbers:
        return FormatError(f"{path}: no ProfilerStep#{step} in the trace (it has no "
                           f"ProfilerStep: profile with torch.profiler.schedule and call "
                           f"prof.step() each step to record steps; leave the step out)")
    have = ", ".join(str(n) for n in numbers)
    return FormatError(f"{path}: no ProfilerStep#{step} in the trace (it has steps {have})")


def profiler_steps(raw: Sequence[Any]) -> list[Step]:
    """The ``ProfilerStep#N`` spans of the trace, by number (one per number: the longest)."""
    steps: dict[int, Step] = {}
    for ev in raw:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        n = step_number(ev.get("name", ""))
        ts, dur = ev.get("ts"), ev.get("dur")
        if n is None or not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)):
            continue
        if n not in steps or dur > steps[n].end - steps[n].start:
            steps[n] = Step(n, float(ts), float(ts) + float(dur))
    return [steps[n] for n in sorted(steps)]


def choose_step(steps: list[Step], raw: Sequence[Any], launched: set[int],
                step: int | str | None, path: object) -> Step | None:
    """The step to keep: ``step`` (a number), ``None`` for the last complete one (the last
    one when none is complete), ``"all"`` (or ``None`` on a trace without steps) for the whole
    trace.  ``launched``: the correlations that have a GPU event.  Counts each step's launches
    and those missing their kernel.  A step number the trace lacks is a one-line error naming
    the steps it has, also when it has none."""
    check_step(step, path)
    if isinstance(step, int) and step not in {s.number for s in steps}:
        raise missing_step(step, [s.number for s in steps], path)
    if not steps or step == "all":
        return None
    every: list[float] = []  # launch times, and those of launches without their kernel
    lost: list[float] = []
    for ev in raw:
        if not isinstance(ev, dict) or ev.get("ph") != "X" or str(
                ev.get("cat", "")).lower() not in RUNTIME_CATEGORIES:
            continue
        corr = _corr(_args(ev))
        if corr is None or not _LAUNCH.search(str(ev.get("name", ""))):
            continue
        ts = ev.get("ts")
        if not isinstance(ts, (int, float)) or ts != ts:  # NaN lies in no step
            continue
        every.append(ts)
        if corr not in launched:
            lost.append(ts)
    every.sort()
    lost.sort()
    for s in steps:  # the launches in [start, end], by bisection: O((launches + steps) log)
        s.launches += _within(every, s.start, s.end)
        s.missing += _within(lost, s.start, s.end)
    if step is None:
        done = [s for s in steps if s.complete and (s.launches or not launched)]
        return done[-1] if done else steps[-1]
    return next(s for s in steps if s.number == step)


def _within(times: list[float], start: float, end: float) -> int:
    """How many of the sorted ``times`` lie in ``[start, end]`` (none when the span is empty
    or NaN)."""
    if not start <= end:
        return 0
    return bisect.bisect_right(times, end) - bisect.bisect_left(times, start)


def link(kernels: Sequence[Mapping[str, Any]], raw: Sequence[Any],
         runtime: Mapping[int, Mapping[str, Any]],
         span: tuple[float, float] | None = None) -> Links:
    """Stream-order and cross-stream edges between ``kernels`` (dicts with ``stream``, ``ts``,
    ``end`` and ``corr``, the launch correlation or None), as index pairs (module docstring).
    ``span``: the host span of the kept step (waits issued outside it are not counted).
    A wait whose recording stream had run no kernel before the record orders nothing: it is
    counted in ``empty_waits``; one whose waiter is not found, in ``unresolved_waits``."""
    def in_span(corr: Any) -> bool:
        call = runtime.get(corr) if isinstance(corr, int) else None
        ts = call.get("ts") if call is not None else None
        return span is None or not isinstance(ts, (int, float)) or span[0] <= ts <= span[1]

    out = Links()
    per_stream: dict[Any, list[tuple[int, int]]] = defaultdict(list)  # stream -> (corr, index)
    order = sorted(range(len(kernels)), key=lambda i: (kernels[i]["ts"], i))
    last: dict[Any, int] = {}
    for i in order:
        s = kernels[i]["stream"]
        if s in last:
            out.edges.append((last[s], i))
            out.stream_edges += 1
        last[s] = i
        if kernels[i]["corr"] is not None:
            per_stream[s].append((kernels[i]["corr"], i))
    for lst in per_stream.values():
        lst.sort()
    syncs = [ev for ev in raw if isinstance(ev, dict) and ev.get("ph") == "X" and str(
        ev.get("cat", "")).lower() == "cuda_sync" and _args(ev).get(
        "cuda_sync_kind") == "Stream Wait Event" and in_span(_corr(_args(ev)))]
    seen = set(out.edges)
    if syncs:
        pairs = [_from_sync(ev, per_stream) for ev in syncs]
    else:
        out.inferred = True
        pairs, out.capped = _inferred(kernels, {c: ev for c, ev in runtime.items()
                                                if in_span(c)})
    for pair in pairs:
        if pair is None:
            out.unresolved_waits += 1
            continue
        if pair == _NO_SOURCE:
            out.empty_waits += 1
            continue
        src, dst = pair
        if kernels[src]["stream"] == kernels[dst]["stream"] or (src, dst) in seen:
            continue
        if kernels[dst]["ts"] + _SLACK_US < kernels[src]["end"]:
            out.contradicted += 1
            continue
        seen.add((src, dst))
        out.edges.append((src, dst))
        out.sync_edges += 1
    return out


def _before(lst: list[tuple[int, int]], corr: int) -> int | None:
    j = bisect.bisect_left(lst, (corr, -1)) - 1
    return lst[j][1] if j >= 0 else None


def _after(lst: list[tuple[int, int]], corr: int) -> int | None:
    j = bisect.bisect_right(lst, (corr, 2**62))
    return lst[j][1] if j < len(lst) else None


#: A wait on an event recorded before any kernel of its stream: it orders nothing.
_NO_SOURCE = (-1, -1)


def _from_sync(ev: Mapping[str, Any], per_stream: Mapping[Any, list[tuple[int, int]]]
               ) -> tuple[int, int] | None:
    """(source, waiter) kernel indices of a ``Stream Wait Event`` sync, :data:`_NO_SOURCE`,
    or None (unresolved)."""
    args = _args(ev)
    record, wait = args.get("wait_on_cuda_event_record_corr_id"), _corr(args)
    src_stream, dst_stream = args.get("wait_on_stream"), args.get("stream")
    if not isinstance(record, int) or record < 0 or wait is None:
        return None
    src = _before(per_stream.get(src_stream, []), record)
    if src is None:
        return _NO_SOURCE
    dst = _after(per_stream.get(dst_stream, []), wait)
    return None if dst is None else (src, dst)


#: Work limit of :func:`_inferred`: pending-wait runs it may visit per runtime call and kernel
#: (plus :data:`_WAIT_WORK_BASE`).  A real trace keeps a few waits pending at a time; a hostile
#: one (waits that no kernel ever takes, interleaved so that they do not form runs) would make
#: every kernel visit all of them, O(kernels x waits).  Past the limit the waits still pending,
#: and those after, are counted as unresolved (``Links.capped`` says so).
_WAIT_WORK_PER_ITEM = 8
_WAIT_WORK_BASE = 100_000


def _push(runs: list[list[Any]], src: int | None, count: int) -> None:
    """Append ``count`` waits on ``src`` to the run-length list ``runs`` ([src, count] runs)."""
    if runs and runs[-1][0] == src:
        runs[-1][1] += count
    else:
        runs.append([src, count])


def _inferred(kernels: Sequence[Mapping[str, Any]], runtime: Mapping[int, Mapping[str, Any]]
              ) -> tuple[list[tuple[int, int] | None], bool]:
    """(source, waiter) pairs from the runtime calls alone (module docstring), and whether the
    work limit (:data:`_WAIT_WORK_PER_ITEM`) stopped the matching.  The pending waits are kept
    run-length encoded: consecutive waits on one source (one record waited on by many calls)
    are one run, of which a kernel takes at most one wait, so they cost one step, not one per
    wait.  O(calls + kernels) within the limit."""
    by_thread: dict[Any, list[tuple[int, str, int | None]]] = defaultdict(list)
    for j, k in enumerate(kernels):
        call = runtime.get(k["corr"]) if k["corr"] is not None else None
        if call is not None:
            by_thread[(call.get("pid"), call.get("tid"))].append((k["corr"], "k", j))
    for corr, call in runtime.items():
        name = str(call.get("name", ""))
        what = "r" if _RECORD.match(name) else "w" if _WAIT.match(name) else None
        if what:
            by_thread[(call.get("pid"), call.get("tid"))].append((corr, what, None))
    pairs: list[tuple[int, int] | None] = []
    budget = _WAIT_WORK_BASE + _WAIT_WORK_PER_ITEM * sum(len(v) for v in by_thread.values())
    capped = False
    for items in by_thread.values():
        items.sort(key=lambda t: t[0])
        last_kernel: int | None = None
        recorded: int | None = None  # the kernel before the latest record
        waiting: list[list[Any]] = []  # [source, count] runs waited on, not yet given a waiter
        linked: set[tuple[int, Any]] = set()  # (source, waiting stream) already ordered
        for _, what, index in items:
            if what == "k":
                assert index is not None
                i, stream = index, kernels[index]["stream"]
                last_kernel = i
                budget -= len(waiting)
                if budget < 0:
                    capped = True
                    continue  # what is pending stays so: unresolved at the end
                keep: list[list[Any]] = []
                taken: set[int] = set()
                for src, count in waiting:
                    if src is None:
                        pairs.extend([_NO_SOURCE] * count)
                    elif kernels[src]["stream"] == stream or (src, stream) in linked \
                            or src in taken:
                        _push(keep, src, count)  # a later launch on another stream waits for it
                    else:
                        pairs.append((src, i))
                        linked.add((src, stream))
                        taken.add(src)
                        if count > 1:
                            _push(keep, src, count - 1)
                waiting = keep
            elif what == "r":
                recorded = last_kernel
            else:
                _push(waiting, recorded, 1)
        for src, count in waiting:
            pairs.extend([_NO_SOURCE if src is None else None] * count)
    return pairs, capped


__all__ = ["Links", "Step", "check_step", "choose_step", "link", "missing_step", "profiler_steps",
           "runtime_calls", "step_number"]
