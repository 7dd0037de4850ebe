"""Import a PyTorch profiler (Kineto) trace, or a Chrome trace the workbench wrote, as a Trace.

What becomes an op (see shared notes, "PyTorch profiler / Kineto trace"):

* GPU events (``ph`` ``X``, ``cat`` ``kernel``/``gpu_memcpy``/``gpu_memset``): one op per kernel,
  on its CUDA stream (``args.stream``, else ``tid``), device ``"gpu"``;
* when the trace has no GPU events (a CPU-only run), the outermost ``cpu_op`` of each host thread
  (``aten::conv2d``, not the ``aten::convolution`` -> ``aten::mkldnn_convolution`` calls inside
  it): host ops, device ``"cpu"``, one stream per thread (numbered from 0 in order of appearance);
* a trace the workbench wrote (:mod:`workbench.io.traces.chrome_trace`) keeps every op, GPU and
  host, with its id, stream and device (``args.op``, ``args.stream``/``tid`` less the exporter's
  stream offset, ``args.wb_device``).

Op ids are ``args.op`` when an event names its op, else ``"<name>#<k>"`` (``k``: the occurrence
among events of that name in time order).  Each op's measured time is its ``duration_us``; time 0
is the earliest op (the trace's own origin for a workbench export).  With ``graph=`` the events
are matched to the graph's ops: by id when the names match, else by kind and order (the ``k``-th
``aten::conv2d`` is the graph's ``k``-th ``conv2d`` op: an eager run executes a traced module in
its program order), and the trace's graph is ``graph`` with the measured durations (and device,
for a CPU run) on its matched ops.

A profile alone names no tensors, so its graph's edges are only the order each host thread and
CUDA stream ran its ops in: a CPU run on one thread, or a GPU run on one stream, is one chain,
which no policy can reorder.  Such a graph (or one with no costs) is a one-line warning
(:func:`nothing_to_schedule`, also ``meta["nothing_to_schedule"]``) pointing to the Execution
Trace import (:func:`workbench.io.traces.execution_trace.load_execution_trace`).
"""

from __future__ import annotations

import functools
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from workbench._atomic import check_op_count
from workbench._gc import without_gc
from workbench._progress import Reading, reading
from workbench.errors import FormatError
from workbench.io.traces.kineto_links import (
    Links,
    Step,
    choose_step,
    link,
    profiler_steps,
    runtime_calls,
)
from workbench.io.traces.trace_events import (
    MAX_SPAN_US,
    NOTHING_TO_SCHEDULE,
    args_of,
    duration,
    nothing_to_schedule,
    number,
    read_trace_json,
    refuses_out_of_memory,
    trace_events,
    warn_nothing_to_schedule,
)
from workbench.ops import KERNEL_KINDS as _KERNEL_KINDS
from workbench.values.graph import Graph, Op
from workbench.values.trace import Trace

GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"})
HOST_CATEGORIES = frozenset({"cpu_op"})
#: Host annotations that wrap ops without being ops themselves.
WRAPPERS = re.compile(r"^(ProfilerStep#\d+|## .* ##|\[pytorch\|.*|record_param_comms)$")

#: Kernel-name fragments -> op kind, first match wins (cuDNN/cuBLAS/ATen kernel names): the
#: ``kernel_names`` of the op-kind table in :data:`workbench.ops.KERNEL_MATCH_ORDER`.
KERNEL_KINDS: tuple[tuple[str, str], ...] = _KERNEL_KINDS


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        digits = re.search(r"-?\d{1,18}", value)
        value = int(digits.group()) if digits else None
    return value if isinstance(value, int) and abs(value) < 2**62 else None


def _stream(event: dict[str, Any]) -> int | str:
    for value in (args_of(event).get("stream"), event.get("tid")):
        found = _int(value)
        if found is not None:
            return found
    return str(event.get("tid"))


@functools.lru_cache(maxsize=1 << 12)  # a trace repeats a few kernel names 10^5 times
def kernel_kind(name: str) -> str:
    """An op kind guessed from a kernel name (:data:`KERNEL_KINDS`), else ``"kernel"``."""
    low = name.lower()
    for fragment, kind in KERNEL_KINDS:
        if fragment in low:
            return kind
    return "kernel"


@functools.lru_cache(maxsize=1 << 12)
def aten_kind(name: str) -> str:
    """The op kind of a host op name (``aten::conv2d`` -> ``conv2d``, ``aten::cat`` ->
    ``concat``), by the torch.fx import's table; kernel names fall back to :func:`kernel_kind`.

    >>> aten_kind("aten::cat"), aten_kind("aten::relu_"), aten_kind("aten::addmm")
    ('concat', 'relu', 'matmul')
    """
    from workbench.io.torch.costs import FUNCTIONS

    base = name.split("::", 1)[1] if "::" in name else name
    for key in (base, base.rstrip("_"), base.lstrip("_")):
        if key in FUNCTIONS:
            return FUNCTIONS[key][0]
    return kernel_kind(name) if "::" not in name else base.strip("_") or "op"


# ================================================================================ selection
def outermost(events: Iterable[tuple[float, float, Any, int]]) -> list[int]:
    """Indices of the events not nested inside another on the same thread.

    ``events``: ``(ts, dur, thread, index)``; O(n log n).

    >>> outermost([(0, 10, 1, 0), (1, 2, 1, 1), (10, 5, 1, 2), (3, 1, 2, 3)])
    [0, 2, 3]
    """
    by_thread: dict[Any, list[tuple[float, float, int]]] = defaultdict(list)
    for ts, dur, thread, k in events:
        by_thread[thread].append((ts, -dur, k))
    keep = []
    for spans in by_thread.values():
        spans.sort()
        end = -math.inf
        for ts, neg_dur, k in spans:
            if ts >= end:
                keep.append(k)
                end = ts - neg_dur
    return sorted(keep)


def _select(raw: list[Any], path: Path, bar: Reading | None = None
            ) -> tuple[list[dict[str, Any]], bool]:
    """(op events in time order, True when they are host ops of a CPU-only run)."""
    gpu: list[dict[str, Any]] = []
    host: list[dict[str, Any]] = []
    workbench = False
    every = Reading.every
    for k, ev in enumerate(raw):
        if bar is not None and k % every == every - 1:
            bar.advance(every)
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        cat = str(ev.get("cat", "")).lower()
        if cat not in GPU_CATEGORIES and cat not in HOST_CATEGORIES or args_of(ev).get(
                "wb_launch"):  # a workbench export's launching call, not an op
            continue
        ts, dur = number(ev, "ts", k, path), duration(ev, k, path)
        workbench = workbench or isinstance(args_of(ev).get("op"), str)
        item = {"ts": ts, "dur": dur, "k": k, "ev": ev, "cat": cat,
                "name": str(ev.get("name", "op"))}
        (gpu if cat in GPU_CATEGORIES else host).append(item)
    top = outermost((h["ts"], h["dur"], (h["ev"].get("pid"), h["ev"].get("tid")), i)
                    for i, h in enumerate(host) if not WRAPPERS.match(h["name"]))
    host = [host[i] for i in top]
    if gpu and not workbench:
        host = []  # a GPU run: the host ops are the launches of its kernels
    if not gpu and not host:
        raise FormatError(f"{path}: no GPU kernel events (cat 'kernel', 'gpu_memcpy' or "
                          f"'gpu_memset') and no CPU ops (cat 'cpu_op'); was the profiler "
                          f"run with CPU or CUDA activities?")
    chosen = sorted(gpu + host, key=lambda e: (e["ts"], e["k"]))
    return chosen, not gpu


def _origin(origin: Any, items: list[dict[str, Any]], path: Path) -> float:
    """``otherData.time_origin_us`` (else the first event's time), checked: finite, not after
    the first event and at most :data:`MAX_SPAN_US` before it (1e300 gave a makespan of
    -1e300)."""
    first = items[0]["ts"]
    if origin is None:
        return float(first)
    ok = (isinstance(origin, (int, float)) and not isinstance(origin, bool)
          and math.isfinite(origin) and 0 <= first - origin <= MAX_SPAN_US)
    if not ok:
        raise FormatError(f"{path}: otherData.time_origin_us = {origin!r:.60} is impossible (the "
                          f"first event starts at {first:g} µs; the origin must be at most "
                          f"{MAX_SPAN_US:g} µs before it)")
    return float(origin)


def _check_times(items: list[dict[str, Any]], streams: list[int], path: Path) -> None:
    """One-line errors for a trace that no run can produce: a span over :data:`MAX_SPAN_US`, a
    negative stream number (``stream_offset`` larger than a stream id), two kernels overlapping
    on one GPU stream (a stream runs one kernel at a time).  O(events log events)."""
    def named(item: dict[str, Any]) -> str:
        return f"traceEvents[{item['k']}] ({str(item['name'])[:60]!r})"

    start = min(i["ts"] for i in items)
    end = max(i["ts"] + i["dur"] for i in items)
    if end - start > MAX_SPAN_US:
        last = max(items, key=lambda i: i["ts"] + i["dur"])
        raise FormatError(f"{path}: the trace spans {end - start:g} µs (more than "
                          f"{MAX_SPAN_US:g}); {named(last)} ends at {end:g} µs")
    last_on: dict[int, dict[str, Any]] = {}
    gpu = [(s, i) for i, s in zip(items, streams, strict=True) if i["cat"] in GPU_CATEGORIES]
    for stream, item in sorted(gpu, key=lambda x: (x[0], x[1]["ts"], x[1]["k"])):
        if stream < 0:
            raise FormatError(f"{path}: {named(item)}: stream {stream} is negative "
                              f"(otherData.stream_offset is larger than its stream id)")
        prev = last_on.get(stream)
        tolerance = 1e-3 * max(1.0, item["dur"])  # rounding of µs timestamps
        if prev is not None and item["ts"] < prev["ts"] + prev["dur"] - tolerance:
            raise FormatError(f"{path}: {named(item)} starts at {item['ts']:g} µs on stream "
                              f"{stream}, before {named(prev)} ends "
                              f"({prev['ts'] + prev['dur']:g} µs): kernels on one stream "
                              f"cannot overlap")
        if prev is None or item["ts"] + item["dur"] > prev["ts"] + prev["dur"]:
            last_on[stream] = item


def _streams(items: list[dict[str, Any]], offset: int) -> list[int]:
    """Stream number per event: GPU streams keep their ids (less ``offset``), host threads
    are numbered after them in order of appearance."""
    gpu = {id(e): _stream(e["ev"]) for e in items if e["cat"] in GPU_CATEGORIES}
    ids = {s for s in gpu.values() if isinstance(s, int)}
    table: dict[Any, int] = {}
    nxt = (max(ids) - offset + 1) if ids else 0
    out = []
    for e in items:
        if e["cat"] in GPU_CATEGORIES:
            key: Any = ("gpu", gpu[id(e)])
            if isinstance(gpu[id(e)], int):
                table.setdefault(key, int(gpu[id(e)]) - offset)
        else:
            tid = _int(e["ev"].get("tid"))
            key = ("host", e["ev"].get("pid"), e["ev"].get("tid"))
            if offset and tid is not None:
                table.setdefault(key, tid - offset)
        if key not in table:
            table[key] = nxt
            nxt += 1
        out.append(table[key])
    return out


def _grid(event: Mapping[str, Any]) -> int | None:
    grid = args_of(event).get("grid")
    if isinstance(grid, list) and grid and all(
            isinstance(g, int) and not isinstance(g, bool) and g > 0 for g in grid):
        blocks = math.prod(grid)
        return blocks if blocks < 2**62 else None
    return None


# ================================================================================ the importer
@refuses_out_of_memory
@without_gc  # a trace's events are a million dicts, none garbage (200k events: 5.3 -> 3.9 s)
def load_pytorch_trace(path: str | Path, *, graph: Graph | None = None,
                       step: int | str | None = None) -> Trace:
    """A :class:`Trace` (executor ``"measured"``) of a PyTorch profiler JSON (``.gz`` too).

    See the module docstring for what becomes an op; ``meta`` holds ``t0_us`` (the absolute time
    of time 0), ``source``, ``step`` / ``steps`` and ``summary`` (one line: what was kept and
    what was not matched) and, with ``graph``, ``matched_by``, ``unmatched_kernels`` and
    ``missing_ops``.  ``step``: the ``ProfilerStep#N`` to keep (default: the last complete one;
    ``"all"``: every event), :mod:`workbench.io.traces.kineto_links`.  Without ``graph`` the trace's
    graph has one op per event and, for a profiler's trace (not a workbench export), the
    dependencies the run obeyed: stream (or host-thread) order and the cross-stream waits of
    CUDA events, as control edges.  A profile names no tensors: pair it with an execution trace
    (:func:`workbench.io.traces.execution_trace.load_execution_trace`) for the data dependencies.
    A CPU-only run's trace has device ``"cpu"``.  O(events log events); the parsed file is
    dropped before the graph is built; running out of memory is a one-line FormatError naming
    the file and the address-space cap.  The cyclic garbage collector is paused meanwhile."""
    path = Path(path)
    with reading(path.name, _file_size(path)) as bar:
        return _load(path, graph, step, bar)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # read_trace_json says why


def _load(path: Path, graph: Graph | None, step: int | str | None, bar: Reading) -> Trace:
    """:func:`load_pytorch_trace` with its reading bar (the parsed file is this frame's only,
    so that it can be dropped before the graph is built)."""
    bar.phase(f"parsing {path.name[:40]}")
    data = read_trace_json(path)
    raw = trace_events(data, path)
    bar.phase("choosing the ops", total=len(raw), unit="event")
    items, host_run = _select(raw, path, bar)
    bar.phase("linking the kernels")
    other = data.get("otherData") if isinstance(data, dict) else None
    other = other if isinstance(other, dict) else {}
    offset = _int(other.get("stream_offset")) or 0
    exported = any(isinstance(args_of(e["ev"]).get("op"), str) for e in items)
    runtime = runtime_calls(raw)
    steps = [] if exported else profiler_steps(raw)
    launched = {c for e in items if (c := _corr_of(e)) is not None}
    chosen = choose_step(steps, raw, launched, step, path)
    outside = 0
    if chosen is not None:
        keep = [e for e in items if chosen.start <= _launch_ts(e, runtime) <= chosen.end]
        outside, items = len(items) - len(keep), keep
        if not items:
            raise FormatError(f"{path}: ProfilerStep#{chosen.number} holds no kernel or op")
    check_op_count(len(items), f"{path}: the trace" + (
        f" (ProfilerStep#{chosen.number})" if chosen is not None else "") + " has")
    t0 = _origin(other.get("time_origin_us"), items, path)
    streams = _streams(items, offset)
    _check_times(items, streams, path)
    seen: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    for item, stream in zip(items, streams, strict=True):
        ev, name = item["ev"], item["name"]
        args = args_of(ev)
        k = seen.get(name, 0)
        seen[name] = k + 1
        op_id = args["op"] if isinstance(args.get("op"), str) and args["op"] else f"{name}#{k}"
        gpu = item["cat"] in GPU_CATEGORIES
        device = str(args.get("wb_device") or ("gpu" if gpu else "cpu"))
        kind = str(args["kind"]) if isinstance(args.get("kind"), str) else (
            kernel_kind(name) if gpu else aten_kind(name))
        rows.append({"op": op_id, "name": name, "kind": kind, "device": device,
                     "stream": stream, "start_us": item["ts"] - t0,
                     "end_us": item["ts"] - t0 + item["dur"], "blocks": _grid(ev)})
    meta: dict[str, Any] = {"t0_us": t0, "source": str(path), "profiler": "pytorch",
                            "events": len(rows), "host_run": host_run,
                            "step": None if chosen is None else chosen.number,
                            "steps": [s.number for s in steps]}
    links = None
    if not exported:
        links = link([{"stream": st, "ts": it["ts"], "end": it["ts"] + it["dur"],
                       "corr": _corr_of(it)} for it, st in zip(items, streams, strict=True)],
                     raw, runtime, None if chosen is None else (chosen.start, chosen.end))
        meta.update(stream_edges=links.stream_edges, sync_edges=links.sync_edges,
                    sync_edges_inferred=links.inferred, unresolved_waits=links.unresolved_waits,
                    empty_waits=links.empty_waits, contradicted_waits=links.contradicted,
                    wait_matching_capped=links.capped)
    device = "cpu" if host_run else gpu_name(data)
    del data, raw, items, runtime  # the parsed file (most of the memory): the graph needs rows
    meta["summary"] = _summary(rows, chosen, steps, outside, links, host_run)
    if graph is None:
        graph = _event_graph(rows, path.name.split(".")[0] or "trace",
                             links.edges if links else [])
        if not exported:
            meta["nothing_to_schedule"] = warn_nothing_to_schedule(graph, path,
                                                                   profile_alone=True)
    else:
        rows, graph = match_to_graph(rows, graph, meta, path)
    return Trace(_frame(rows, graph), graph=graph, policy="measured", device=device,
                 executor="measured", mode="eager", meta=meta)


def gpu_name(data: Any) -> str:
    """The GPU a Kineto trace names (``deviceProperties[0].name``), else ``"gpu"``."""
    if isinstance(data, dict) and isinstance(data.get("deviceProperties"), list):
        props = data["deviceProperties"]
        if props and isinstance(props[0], dict) and props[0].get("name"):
            return str(props[0]["name"])
    return "gpu"


def _frame(rows: list[dict[str, Any]], graph: Graph) -> pd.DataFrame:
    ops = [graph.op(r["op"]) for r in rows]
    return pd.DataFrame({
        "op": [r["op"] for r in rows],
        "kind": [op.kind for op in ops],
        "stream": [r["stream"] for r in rows],
        "device": [op.device for op in ops],
        "start_us": [r["start_us"] for r in rows],
        "end_us": [r["end_us"] for r in rows],
        "duration_us": [r["end_us"] - r["start_us"] for r in rows],
        "flops": [op.flops for op in ops],
        "bytes": [op.bytes_read + op.bytes_written for op in ops],
    })


def _event_graph(rows: list[dict[str, Any]], name: str,
                 edges: Iterable[tuple[int, int]] = ()) -> Graph:
    ops = [Op(r["op"], kind=r["kind"], device=r["device"],
              duration_us=r["end_us"] - r["start_us"], thread_blocks=r["blocks"],
              attrs={"kernel_name" if r["device"] == "gpu" else "event": r["name"]})
           for r in rows]
    return Graph(ops, control_edges=[(rows[a]["op"], rows[b]["op"]) for a, b in edges],
                 name=name)


def _corr_of(item: Mapping[str, Any]) -> int | None:
    """The launch correlation of a GPU event (None for host events)."""
    if item["cat"] not in GPU_CATEGORIES:
        return None
    value = args_of(item["ev"]).get("correlation")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _launch_ts(item: Mapping[str, Any], runtime: Mapping[int, Mapping[str, Any]]) -> float:
    """When the host launched a GPU event (its own start when the launch is not in the
    trace); a host event's own start."""
    corr = _corr_of(item)
    call = runtime.get(corr) if corr is not None else None
    ts = call.get("ts") if call is not None else None
    return float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) \
        else float(item["ts"])


def _summary(rows: list[dict[str, Any]], chosen: Step | None, steps: list[Step],
             outside: int, links: Links | None, host_run: bool) -> str:
    """One line: what was kept (events, streams, step) and what was not matched."""
    what = "host ops" if host_run else "kernels"
    streams = len({r["stream"] for r in rows})
    generic = sum(r["kind"] == "kernel" for r in rows if r["device"] == "gpu")
    if chosen is None:
        where = "whole trace" + (f" ({len(steps)} steps)" if steps else ", no ProfilerStep")
    else:
        state = "complete" if chosen.complete else \
            f"incomplete: {chosen.missing} launches without their kernel"
        where = f"ProfilerStep#{chosen.number} ({state}; steps {steps[0].number}-" \
                f"{steps[-1].number})"
    line = f"{len(rows)} {what} on {streams} streams, {where}; not matched: " \
           f"{outside} events outside the step, {generic} kernels of unknown kind"
    if links is not None:
        line += (f", {links.unresolved_waits} stream waits unresolved, {links.contradicted} "
                 f"contradicted by the timeline ({links.empty_waits} waits on streams idle "
                 f"before the record); edges: {links.stream_edges} stream order, "
                 f"{links.sync_edges} cross-stream"
                 + (" (inferred from launch order)" if links.inferred and links.sync_edges
                    else "")
                 + ("; the wait matching stopped at its work limit (waits still pending then "
                    "count as unresolved)" if links.capped else ""))
    return line


def match_to_graph(rows: list[dict[str, Any]], graph: Graph, meta: dict[str, Any],
                   path: Path | str) -> tuple[list[dict[str, Any]], Graph]:
    """Assign measured rows to graph ops (module docstring); merged rows of one op span from
    the first start to the last end.  Returns the rows (one per matched op, ``op`` = graph id)
    and the graph with measured ``duration_us``.  O(rows + ops)."""
    by_name = [r["name"] if r["name"] in graph else r["op"] if r["op"] in graph else None
               for r in rows]
    meta["matched_by"] = "name"
    if not any(by_name):
        by_name = _match_by_kind(rows, graph)
        meta["matched_by"] = "kind and order"
    merged: dict[str, dict[str, Any]] = {}
    unmatched = 0
    for r, op in zip(rows, by_name, strict=True):
        if op is None:
            unmatched += 1
        elif op in merged:
            m = merged[op]
            m["busy_us"] += r["end_us"] - r["start_us"]
            m["start_us"] = min(m["start_us"], r["start_us"])
            m["end_us"] = max(m["end_us"], r["end_us"])
        else:
            merged[op] = {**r, "op": op, "busy_us": r["end_us"] - r["start_us"]}
    if not merged:
        first = rows[0]["name"][:60] if rows else "?"
        raise FormatError(f"{path}: no event matches an op of graph {graph.name!r} by name or "
                          f"by kind (names like {first!r})".replace("\n", "\\n"))
    meta["unmatched_kernels"] = unmatched
    meta["missing_ops"] = [o for o in graph.op_ids if o not in merged]
    new_ops = []
    for op in graph.ops:
        got = merged.get(op.id)
        new_ops.append(op if got is None else replace(
            op, duration_us=got["busy_us"],
            device="cpu" if got["device"] == "cpu" else op.device))
    return (sorted(merged.values(), key=lambda r: (r["start_us"], r["op"])),
            graph.replace(ops=new_ops))


def _match_by_kind(rows: list[dict[str, Any]], graph: Graph) -> list[str | None]:
    """The k-th measured op of a kind is the graph's k-th op of that kind (program order)."""
    per_kind: dict[str, list[str]] = defaultdict(list)
    for op in graph.ops:
        per_kind[op.kind].append(op.id)
    used: dict[str, int] = defaultdict(int)
    out: list[str | None] = []
    for r in rows:
        ids = per_kind.get(r["kind"], [])
        k = used[r["kind"]]
        out.append(ids[k] if k < len(ids) else None)
        used[r["kind"]] = k + 1
    return out


__all__ = ["GPU_CATEGORIES", "NOTHING_TO_SCHEDULE", "aten_kind", "gpu_name", "kernel_kind",
           "load_pytorch_trace", "match_to_graph", "nothing_to_schedule", "outermost",
           "read_trace_json", "warn_nothing_to_schedule"]
