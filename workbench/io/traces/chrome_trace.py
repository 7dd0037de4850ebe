"""Chrome / Perfetto trace-event JSON of a :class:`~workbench.values.trace.Trace`, in the layout of
a PyTorch profiler (Kineto) trace, so HolisticTraceAnalysis (HTA), Perfetto, chrome://tracing
and :func:`load_pytorch_trace` (re-exported here) all read it as written.

Layout (see shared notes, "Timeline formats" and "Holistic Trace Analysis"):

* times are on a grid chosen by ``time_unit``:

  - ``"us"`` (the default): whole microseconds, every boundary rounded to the nearest µs (so
    back-to-back slices stay back to back); a slice lasts at least 1 µs unless the next slice on
    its track starts sooner (a zero-length op, or ops that round into one µs, may last 0 µs: no
    two slices of one track ever overlap).  HTA reads these times as they are, and its queue
    lengths never go negative: each ``cudaLaunchKernel`` starts at least 1 µs before its kernel;
  - ``"ns"``: the nanosecond grid (µs with three decimals; Perfetto keeps whole ns), every slice
    lasting at least :data:`MIN_DUR_US` (2 ns) so a flow can bind strictly inside it, each launch
    1 ns or more before its kernel.  For Perfetto's resolution; HTA reads it as written only with
    ``HTA_DISABLE_NS_ROUNDING=1``: by default HTA rounds every fractional time stamp inwards to
    whole µs (start up, end down), losing up to 1 µs per slice, and a launch less than 1 µs
    before its kernel then lands in the kernel's µs, where HTA's queue-length analysis (an
    unstable sort by time) may count the kernel first: a negative queue length;
* accelerator ops are ``X`` events with ``cat`` ``kernel`` (``gpu_memcpy`` for copies) in process
  ``pid`` = 1 + device index (named ``GPU 0`` ...), thread ``tid`` = stream + 1, with
  ``args.stream`` (= tid: HTA takes stream ids > 0 as GPU streams), ``args.device``,
  ``args.correlation`` and ``args["External id"]``;
* host ops (devices ``cpu``/``python``) are ``cpu_op`` events of the host process, one thread per
  stream (tid = stream + 1), without ``args.stream`` (HTA counts them as CPU ops);
* where the trace knows when the host issued each op (``issue_us``), a ``cudaLaunchKernel``
  (``cat`` ``cuda_runtime``) event on the host's launch thread carries the same correlation id,
  with an ``ac2g`` flow from the launch to the kernel, as Kineto writes them;
* a schedule's sync ``(a, b)`` is a flow (``cat`` ``sync``): its start one grid step before the
  end of ``a`` on a's track (Perfetto binds a flow start to the slice open at that time), its end
  one step before the start of ``b`` with no binding point (so it binds to the next slice on b's
  track: ``b``); every barrier is a global instant event (``ph`` ``i``, ``s`` ``g``) at the
  moment the device has drained, naming the op issued after it;
* each launch sits in a ``cpu_op`` (the op's host-side call, ``args.wb_launch``) with the same
  ``External id`` as its kernel, as Kineto links an operator to the kernels it launched; a launch
  starts at least one grid step before its kernel (HTA's queue length counts a launch before its
  kernel, and never goes negative);
* ``distributedInfo.rank`` (``rank=``, default 0) is the file's rank for HTA, which finds it in
  the file's text with the pattern ``"rank":\\s+(\\d+)`` (a space after the colon: a compact
  ``"rank":0`` does not match, and HTA then takes every such file as rank 0, keeping only one of
  them).  :func:`save_chrome_trace` writes it that way; give each file of one folder its own rank;
* a trace whose ops all ran on the host (devices ``cpu``/``python``: a torch-executor run on a
  CPU, a simulation of host ops) is written with a one-line warning: Perfetto and
  :func:`load_pytorch_trace` read it, but HTA's analyses are of GPU kernels, and its temporal and
  idle-time breakdowns raise on a trace with none (``IndexError``, ``ValueError``);
* a ``C`` counter ``live memory`` follows the bytes of live activations;
* ``args.op`` names the op, ``otherData`` records the stream offset and time origin, so
  :func:`load_pytorch_trace` gets every op back with its id, stream, device and times.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from workbench._atomic import write_bytes, write_text
from workbench.errors import GraphError
from workbench.io.traces.pytorch_profile import kernel_kind, load_pytorch_trace
from workbench.values.trace import TRACE_COLUMNS, Trace

MIN_DUR_US = 0.002
NS_US = 0.001
STREAM_OFFSET = 1  # tid and args.stream = stream + 1: Perfetto and HTA want ids >= 1
#: First correlation / External id: above 2**16, as in a real profile (HTA downcasts small
#: correlation columns to int8 and then fails to store row indices in them)
CORRELATION_BASE = 1 << 16
HOST_DEVICES = frozenset({"cpu", "python"})
COPY_DEVICES = frozenset({"copy"})


_UNIT = {"us": 1.0, "ns": 1000.0}  # the first is the default
#: :func:`save_chrome_trace`'s warning for a trace with no accelerator op
HOST_ONLY_WARNING = ("no GPU op in this trace (every op ran on the host): Perfetto reads it, "
                     "HolisticTraceAnalysis does not (it analyses GPU kernels: its temporal and "
                     "idle-time breakdowns fail on a trace without any)")


def _grid(t: float, unit: str) -> float:
    """``t`` (µs) on the grid of ``unit``: :func:`ns`, or whole µs (an int-valued float)."""
    return float(round(t)) if unit == "us" else ns(t)


def ns(t: float) -> float:
    """A time in µs rounded to the nanosecond grid.

    >>> ns(1.23456), ns(2.0004)
    (1.235, 2.0)
    """
    return round(t * 1000.0) / 1000.0


def _finite(value: Any) -> Any:
    """JSON-safe scalars: numpy numbers become Python numbers, NaN/inf become None."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class _Layout:
    """Process ids, names and track of each op of a trace."""

    def __init__(self, trace: Trace) -> None:
        df = trace.df
        devices = [str(d) for d in df["device"]] if "device" in df else ["gpu"] * len(df)
        self.device_of = dict(zip(df["op"].astype(str), devices, strict=True))
        accel = list(dict.fromkeys("gpu" if d in COPY_DEVICES else d for d in devices
                                   if d not in HOST_DEVICES)) or ["gpu"]
        self.pid_of = {d: i + 1 for i, d in enumerate(accel)}
        self.host_pid = len(accel) + 1
        streams = [int(s) for s in df["stream"]] if len(df) else [0]
        self.launch_tid = max(streams) + STREAM_OFFSET + 1
        self.label = f"({trace.device}, {trace.policy})"

    def track(self, device: str, stream: int) -> tuple[int, int]:
        if device in HOST_DEVICES:
            return self.host_pid, stream + STREAM_OFFSET
        return self.pid_of.get("gpu" if device in COPY_DEVICES else device, 1), \
            stream + STREAM_OFFSET

    def metadata(self, tracks: Iterable[tuple[int, int]], launches: bool) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        names = {pid: f"{dev.upper()} {i}" for i, (dev, pid) in enumerate(self.pid_of.items())}
        names[self.host_pid] = "host"
        for pid, name in names.items():
            out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 1,
                        "args": {"name": f"{name} {self.label}"}})
            out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 1,
                        "args": {"sort_index": pid}})
        threads = sorted(set(tracks))
        if launches:
            threads.append((self.host_pid, self.launch_tid))
        for pid, tid in threads:
            what = "launch thread" if (pid, tid) == (self.host_pid, self.launch_tid) else (
                f"{'cpu ' if pid == self.host_pid else ''}stream {tid - STREAM_OFFSET}")
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                        "args": {"name": what}})
            out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                        "args": {"sort_index": tid}})
        return out


def _check_rank(rank: Any) -> int:
    """A rank HTA's pattern reads: an int >= 0 (not a bool)."""
    from workbench._checks import show
    from workbench.errors import OptionError

    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise OptionError(f"rank must be a whole number >= 0 (HTA's rank), got {show(rank)}")
    return rank


def _clip_to_tracks(spans: list[tuple[int, int, float, float, float, float]]) -> list[float]:
    """The end of each span ``(pid, tid, start, end, exact start, exact end)``, cut where the
    next span of its track starts: a minimum length never makes two slices of one track overlap
    (the reader refuses that, and Perfetto would nest them).  O(n log n)."""
    ends = [span[3] for span in spans]
    order = sorted(range(len(spans)), key=lambda i: (spans[i][:3], spans[i][4:], i))
    for i, j in zip(order, order[1:]):
        if spans[i][:2] == spans[j][:2]:
            ends[i] = max(spans[i][2], min(ends[i], spans[j][2]))
    return ends


def to_chrome_trace(trace: Trace, *, memory: bool = True, time_unit: str = "us",
                    rank: int = 0) -> dict[str, Any]:
    """The trace as a Kineto-style Chrome trace-event dict (module docstring); O(ops log ops +
    syncs).  ``time_unit``: ``"us"`` (whole µs: HTA reads it as written) or ``"ns"`` (Perfetto's
    resolution); ``rank``: ``distributedInfo.rank``, HTA's rank of the file.  Write it with
    :func:`save_chrome_trace` (or ``json.dump`` with its default separators), so that HTA's
    pattern finds the rank.

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> t = wb.simulate(wb.schedule(g, "nnc"))
    >>> data = to_chrome_trace(t, rank=1)
    >>> events = data["traceEvents"]
    >>> sorted(e["name"] for e in events if e["ph"] == "X" and e["cat"] == "kernel")
    ['a', 'b', 'c', 'd']
    >>> sorted({e["cat"] for e in events if e["ph"] in "sf"})
    ['ac2g', 'sync']
    >>> data["distributedInfo"], all(float(e["ts"]).is_integer() for e in events if "ts" in e)
    ({'rank': 1}, True)
    """
    from workbench._checks import check_choice

    unit = check_choice(time_unit, tuple(_UNIT), "time_unit")
    rank = _check_rank(rank)
    tick = 1.0 / _UNIT[unit]  # one step of the grid, µs
    least = MIN_DUR_US if unit == "ns" else 1.0
    df = trace.df
    layout = _Layout(trace)
    extra = [c for c in TRACE_COLUMNS if c in df.columns
             and c not in ("op", "stream", "device", "start_us", "end_us")]
    events: list[dict[str, Any]] = []
    place: dict[str, tuple[int, int, float, float]] = {}  # op -> (pid, tid, start, end)
    launches: list[tuple[float, int, str]] = []
    rows = df.to_dict("records")
    spans = []
    for row in rows:
        pid, tid = layout.track(str(row.get("device", "gpu")), int(row["stream"]))
        start = _grid(float(row["start_us"]), unit)
        spans.append((pid, tid, start,
                      max(_grid(float(row["end_us"]), unit), _grid(start + least, unit)),
                      float(row["start_us"]), float(row["end_us"])))
    # whole µs: a sub-µs op stretched to 1 µs must not run into the next op of its track
    ends = _clip_to_tracks(spans) if unit == "us" else [span[3] for span in spans]
    for k, (row, (pid, tid, start, *_), end) in enumerate(zip(rows, spans, ends, strict=True),
                                                          start=CORRELATION_BASE):
        op, device = str(row["op"]), str(row.get("device", "gpu"))
        place[op] = (pid, tid, start, end)
        args: dict[str, Any] = {"op": op, "wb_device": device,
                                **{c: _finite(row[c]) for c in extra}}
        if device in HOST_DEVICES:
            cat = "cpu_op"
        else:
            cat = "gpu_memcpy" if device in COPY_DEVICES else "kernel"
            args.update({"stream": tid, "device": pid - 1, "correlation": k, "External id": k})
            issue = _finite(row.get("issue_us"))
            if isinstance(issue, (int, float)):
                # the launch strictly before its kernel (HTA's queue length)
                launches.append((min(_grid(float(issue), unit), start - tick), k, op))
        events.append({"ph": "X", "cat": cat, "name": op, "pid": pid, "tid": tid, "ts": start,
                       "dur": _grid(end - start, unit), "args": args})
    events.extend(_launch_events(launches, place, layout, unit))
    events.extend(_sync_flows(trace, place, unit))
    events.extend(_barrier_instants(trace, place, layout))
    if memory:
        events.extend(_memory_counters(trace, pid=1, unit=unit))
    tracks = [(pid, tid) for pid, tid, _, _ in place.values()]
    # distributedInfo first: HTA takes the first match of its rank pattern in the file
    return {"distributedInfo": {"rank": rank}, "schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": trace.device}],
            "traceEvents": layout.metadata(tracks, bool(launches)) + events,
            "displayTimeUnit": "ms",
            "otherData": {"graph": trace.graph.name, "policy": trace.policy,
                          "device": trace.device, "executor": trace.executor,
                          "mode": trace.mode, "makespan_us": _finite(trace.makespan),
                          "stream_offset": STREAM_OFFSET, "time_origin_us": 0.0,
                          "time_unit": unit, "writer": "schedule-workbench"}}


def _launch_events(launches: list[tuple[float, int, str]],
                   place: dict[str, tuple[int, int, float, float]],
                   layout: _Layout, unit: str = "ns") -> list[dict[str, Any]]:
    """``cudaLaunchKernel`` slices on the host's launch thread (each lasting until the next
    launch, at least one grid step, and starting before its kernel), each inside a ``cpu_op``
    of the op with the kernel's ``External id``, and the ``ac2g`` flow to each kernel."""
    out: list[dict[str, Any]] = []
    launches = sorted(launches)
    tick = 1.0 / _UNIT[unit]
    least = MIN_DUR_US if unit == "ns" else 1.0
    end_prev = -math.inf
    for i, (issue, k, op) in enumerate(launches):
        pid, tid, kstart, _ = place[op]
        start = min(max(issue, end_prev), kstart - tick)
        nxt = launches[i + 1][0] if i + 1 < len(launches) else start + least
        end = max(_grid(start + least, unit), _grid(nxt, unit))
        end_prev = end
        host = (layout.host_pid, layout.launch_tid)
        span = {"pid": host[0], "tid": host[1], "ts": start, "dur": _grid(end - start, unit)}
        out.append({"ph": "X", "cat": "cpu_op", "name": op, **span,
                    "args": {"External id": k, "wb_launch": True}})
        out.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", **span,
                    "args": {"correlation": k, "External id": k, "op": None}})
        flow = {"cat": "ac2g", "name": "ac2g", "id": k}
        out.append({**flow, "ph": "s", "pid": host[0], "tid": host[1],
                    "ts": _grid(end - tick, unit) if unit == "ns" else start})
        out.append({**flow, "ph": "f", "pid": pid, "tid": tid,
                    "ts": max(0.0, _grid(kstart - tick, unit)) if unit == "ns" else kstart})
    return out


def _sync_flows(trace: Trace, place: dict[str, tuple[int, int, float, float]],
                unit: str = "ns") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    tick = 1.0 / _UNIT[unit]
    syncs = getattr(trace.schedule, "syncs", ()) or ()
    for k, (a, b) in enumerate(syncs):
        if a not in place or b not in place:
            continue
        pa, ta, _, ea = place[a]
        pb, tb, sb, _ = place[b]
        flow = {"cat": "sync", "name": "sync", "id": k}
        out.append({**flow, "ph": "s", "pid": pa, "tid": ta, "ts": _grid(ea - tick, unit),
                    "args": {"from": a, "to": b}})
        out.append({**flow, "ph": "f", "pid": pb, "tid": tb,
                    "ts": max(0.0, _grid(sb - tick, unit))})
    return out


def _barrier_instants(trace: Trace, place: dict[str, tuple[int, int, float, float]],
                      layout: _Layout) -> list[dict[str, Any]]:
    """A global instant per barrier, when every op issued before it has ended."""
    schedule = trace.schedule
    barriers = getattr(schedule, "barriers", ()) or ()
    order = list(getattr(schedule, "issue_order", ()) or ())
    out: list[dict[str, Any]] = []
    kind = getattr(schedule, "barrier_kind", "join")
    for p in barriers:
        if not 0 <= p < len(order):
            continue
        before = [place[o][3] for o in order[:p] if o in place]
        when = max(before, default=0.0)
        out.append({"ph": "i", "s": "g", "cat": "barrier", "name": "barrier", "pid": 1,
                    "tid": STREAM_OFFSET, "ts": ns(when),
                    "args": {"before": order[p], "position": p, "kind": kind}})
    return out


def _memory_counters(trace: Trace, *, pid: int, unit: str = "ns") -> list[dict[str, Any]]:
    """``C`` events of live activation bytes; none when the trace lacks some producer."""
    from workbench.memory.lifetimes import pool_events

    try:
        steps = pool_events(trace)
    except (KeyError, ValueError, GraphError):
        return []
    times: list[float] = []
    levels: list[int] = []
    live = 0
    for time, action, _, size in steps:
        live += size if action == "alloc" else -size
        t = _grid(float(time), unit)
        if times and times[-1] == t:
            levels[-1] = live  # several allocations and frees at one instant: the last level
        else:
            times.append(t)
            levels.append(live)
    return [{"ph": "C", "name": "live memory", "pid": pid, "tid": 1, "ts": t,
             "args": {"bytes": b}} for t, b in zip(times, levels, strict=True)]


def dumps(data: dict[str, Any]) -> str:
    """Compact JSON of a :func:`to_chrome_trace` dict, with ``"rank": N`` spelled as HTA's rank
    pattern (``"rank":\\s+(\\d+)``, searched in the file's text) wants it, first in the text.

    >>> dumps({"distributedInfo": {"rank": 3}, "traceEvents": [{"ts": 1.0}]})
    '{"distributedInfo": {"rank": 3},"traceEvents":[{"ts":1.0}]}'
    """
    head = {"distributedInfo": data["distributedInfo"]} if "distributedInfo" in data else {}
    rest = {k: v for k, v in data.items() if k not in head}
    body = json.dumps(rest, allow_nan=False, separators=(",", ":"))
    if not head:
        return body
    head_text = json.dumps(head, allow_nan=False)[:-1]  # default separators: "rank": N
    return head_text + ("," + body[1:] if rest else "}")


def save_chrome_trace(trace: Trace, path: str | Path, *, memory: bool = True,
                      time_unit: str = "us", rank: int = 0) -> Path:
    """Write :func:`to_chrome_trace` as JSON (gzipped when the name ends in ``.gz``): whole µs
    by default, which HolisticTraceAnalysis reads as written (``time_unit="ns"`` for Perfetto's
    resolution), with HTA's rank ``rank`` (give each file of one folder its own).  A trace with
    no accelerator op (a CPU run) is written with a one-line warning that HTA's GPU analyses
    cannot read it (module docstring).

    >>> import tempfile, workbench as wb
    >>> t = wb.simulate(wb.schedule(wb.Graph.from_edges([("a", "b")]), "serial"))
    >>> path = save_chrome_trace(t, Path(tempfile.mkdtemp()) / "rank1.json", rank=1)
    >>> path.read_text()[:32]
    '{"distributedInfo": {"rank": 1},'
    """
    path = Path(path)
    text = dumps(to_chrome_trace(trace, memory=memory, time_unit=time_unit, rank=rank))
    devices = set(map(str, trace.df["device"])) if "device" in trace.df else {"gpu"}
    if devices <= HOST_DEVICES:
        from workbench._checks import warn_line

        warn_line(HOST_ONLY_WARNING, where=str(path))
    if path.suffix.lower() == ".gz":
        return write_bytes(path, gzip.compress(text.encode("utf-8")))
    return write_text(path, text)


__all__ = ["HOST_ONLY_WARNING", "MIN_DUR_US", "dumps", "kernel_kind", "load_pytorch_trace", "ns",
           "save_chrome_trace", "to_chrome_trace"]
