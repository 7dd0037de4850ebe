"""Chrome trace-event JSON: export a :class:`~workbench.trace.Trace` for chrome://tracing and
ui.perfetto.dev, and import the GPU side of a PyTorch profiler (Kineto) trace.

Export layout (see shared notes, "Timeline formats"): one ``X`` event per op (``ts``/``dur`` in
µs, ``dur`` clamped to at least 0.001 µs because zero-length slices split Perfetto's rows),
``pid`` = device index named by an ``M process_name`` event, ``tid`` = stream named
``"stream N"`` by an ``M thread_name`` event; every sync ``(a, b)`` of the schedule is a flow
arrow: ``s`` at the end of ``a`` on a's stream and ``f`` (``"bp": "e"``) at the start of ``b`` on
b's stream; a ``C`` counter ``live memory`` follows the bytes of live activations (allocated when
the producer starts, freed when the last consumer ends).
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.errors import FormatError, GraphError
from workbench.graph import Graph, Op
from workbench.trace import TRACE_COLUMNS, Trace

MIN_DUR_US = 0.001
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"})

#: Kernel-name fragments -> op kind, first match wins (cuDNN/cuBLAS/ATen kernel names).
KERNEL_KINDS: tuple[tuple[str, str], ...] = (
    ("memcpy", "memcpy"), ("memset", "memset"), ("conv", "conv2d"), ("winograd", "conv2d"),
    ("gemm", "matmul"), ("gemv", "matmul"), ("matmul", "matmul"), ("batch_norm", "batchnorm"),
    ("batchnorm", "batchnorm"), ("bn_fw", "batchnorm"), ("layer_norm", "layernorm"),
    ("softmax", "softmax"), ("max_pool", "maxpool"), ("maxpool", "maxpool"),
    ("avg_pool", "avgpool"), ("avgpool", "avgpool"), ("concat", "concat"), ("cat_", "concat"),
    ("relu", "relu"), ("gelu", "gelu"), ("sigmoid", "sigmoid"), ("tanh", "tanh"),
    ("reduce", "reduce"), ("elementwise", "elementwise"),
)


# ================================================================================ export
def _finite(value: Any) -> Any:
    """JSON-safe scalars: numpy numbers become Python numbers, NaN/inf become None."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def to_chrome_trace(trace: Trace, *, memory: bool = True) -> dict[str, Any]:
    """The trace as a Chrome trace-event dict (module docstring); O(ops + syncs).

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> t = wb.simulate(wb.schedule(g, "nnc"))
    >>> events = to_chrome_trace(t)["traceEvents"]
    >>> sorted(e["name"] for e in events if e["ph"] == "X")
    ['a', 'b', 'c', 'd']
    >>> [e["ph"] for e in events if e["ph"] in "sf"]
    ['s', 'f', 's', 'f']
    """
    df = trace.df
    devices = list(dict.fromkeys(str(d) for d in df["device"])) if "device" in df else ["gpu"]
    pid_of = {d: i for i, d in enumerate(devices)}
    events: list[dict[str, Any]] = []
    for dev, pid in pid_of.items():
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": f"{dev} ({trace.device}, {trace.policy})"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                       "args": {"sort_index": pid}})
    place: dict[str, tuple[int, int, float, float]] = {}  # op -> (pid, tid, start, end)
    threads: set[tuple[int, int]] = set()
    extra = [c for c in TRACE_COLUMNS if c in df.columns
             and c not in ("op", "stream", "device", "start_us", "end_us")]
    for row in df.to_dict("records"):
        pid = pid_of.get(str(row.get("device", "gpu")), 0)
        tid = int(row["stream"])
        start = float(row["start_us"])
        dur = max(MIN_DUR_US, float(row["end_us"]) - start)
        place[str(row["op"])] = (pid, tid, start, start + dur)
        threads.add((pid, tid))
        events.append({"ph": "X", "name": str(row["op"]), "cat": str(row.get("kind", "op")),
                       "pid": pid, "tid": tid, "ts": start, "dur": dur,
                       "args": {"op": str(row["op"]), **{c: _finite(row[c]) for c in extra}}})
    for pid, tid in sorted(threads):
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                       "args": {"name": f"stream {tid}"}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                       "args": {"sort_index": tid}})
    syncs = getattr(trace.schedule, "syncs", ()) or ()
    for k, (a, b) in enumerate(syncs):
        if a not in place or b not in place:
            continue
        pa, ta, sa, ea = place[a]
        pb, tb, sb, _ = place[b]
        # the start binds to the enclosing slice, so it sits just inside a's end
        ts = max(sa, ea - min(MIN_DUR_US / 2, (ea - sa) / 2))
        flow = {"cat": "sync", "name": "sync", "id": k}
        events.append({**flow, "ph": "s", "pid": pa, "tid": ta, "ts": ts,
                       "args": {"from": a, "to": b}})
        events.append({**flow, "ph": "f", "bp": "e", "pid": pb, "tid": tb, "ts": sb})
    if memory:
        events.extend(_memory_counters(trace))
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"graph": trace.graph.name, "policy": trace.policy,
                          "device": trace.device, "executor": trace.executor,
                          "mode": trace.mode, "makespan_us": _finite(trace.makespan)}}


def _memory_counters(trace: Trace) -> list[dict[str, Any]]:
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
        if times and times[-1] == time:
            levels[-1] = live  # several allocations and frees at one instant: the last level
        else:
            times.append(float(time))
            levels.append(live)
    return [{"ph": "C", "name": "live memory", "pid": 0, "tid": 0, "ts": t,
             "args": {"bytes": b}} for t, b in zip(times, levels, strict=True)]


def save_chrome_trace(trace: Trace, path: str | Path, *, memory: bool = True) -> Path:
    """Write :func:`to_chrome_trace` as JSON (gzipped when the name ends in ``.gz``)."""
    path = Path(path)
    text = json.dumps(to_chrome_trace(trace, memory=memory), allow_nan=False,
                      separators=(",", ":"))
    if path.suffix.lower() == ".gz":
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


# ================================================================================ import
def _read_json(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            raise FormatError(f"{path}: broken or truncated gzip file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not a text file (is it really a JSON trace?)") from None
    if not text.strip():
        raise FormatError(f"{path}: empty file (not a trace)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: line {exc.lineno}, column {exc.colno}: invalid JSON "
                          f"({exc.msg}; truncated file?)") from None
    except RecursionError:
        raise FormatError(f"{path}: JSON nested too deeply") from None


def _number(event: dict[str, Any], key: str, k: int, path: Path) -> float:
    value = event.get(key)
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        try:
            value = float(value)
        except (ValueError, OverflowError):
            pass
    if not isinstance(value, float) or not math.isfinite(value):
        name = str(event.get("name", "?"))[:60]
        raise FormatError(f"{path}: traceEvents[{k}] ({name!r}): '{key}' must be a number, "
                          f"got {value!r}"[:300].replace("\n", "\\n"))
    return float(value)


def _stream(event: dict[str, Any]) -> int | str:
    args = event.get("args")
    if not isinstance(args, dict):
        args = {}
    for value in (args.get("stream"), event.get("tid")):
        if isinstance(value, bool):
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, str):
            digits = re.search(r"-?\d{1,18}", value)
            value = int(digits.group()) if digits else None
        if isinstance(value, int) and abs(value) < 2**62:
            return value
    return str(event.get("tid"))


def kernel_kind(name: str) -> str:
    """An op kind guessed from a kernel name (:data:`KERNEL_KINDS`), else ``"kernel"``."""
    low = name.lower()
    for fragment, kind in KERNEL_KINDS:
        if fragment in low:
            return kind
    return "kernel"


def load_pytorch_trace(path: str | Path, *, graph: Graph | None = None) -> Trace:
    """A :class:`Trace` of the GPU kernels in a PyTorch profiler / Kineto JSON (``.gz`` too).

    Only GPU events count (``ph`` ``X`` with ``cat`` ``kernel``, ``gpu_memcpy`` or
    ``gpu_memset``); the stream is ``args.stream`` or ``tid``; time 0 is the earliest GPU event
    (its absolute ``ts`` is ``meta["t0_us"]``).  Without ``graph`` every kernel becomes an op
    ``"<name>#<k>"`` (``k``: its occurrence among kernels of that name, in time order) with its
    measured duration and no edges.  With ``graph``, a kernel belongs to the op whose id is the
    kernel's name (or ``"<name>#<k>"``); kernels of one op merge (first start, last end), kernels
    of no op are counted in ``meta["unmatched_kernels"]``.  O(events log events).
    """
    path = Path(path)
    data = _read_json(path)
    if isinstance(data, dict):
        if "traceEvents" not in data:
            raise FormatError(f"{path}: not a Chrome/PyTorch trace (no 'traceEvents')")
        raw = data["traceEvents"]
    elif isinstance(data, list):
        raw = data
    else:
        raise FormatError(f"{path}: not a Chrome/PyTorch trace (top level is "
                          f"{type(data).__name__})")
    if not isinstance(raw, list):
        raise FormatError(f"{path}: 'traceEvents' must be a list, got {type(raw).__name__}")
    kernels = []
    for k, ev in enumerate(raw):
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        if str(ev.get("cat", "")).lower() not in GPU_CATEGORIES:
            continue
        ts, dur = _number(ev, "ts", k, path), _number(ev, "dur", k, path)
        kernels.append((ts, k, str(ev.get("name", "kernel")), _stream(ev), max(0.0, dur), ev))
    if not kernels:
        raise FormatError(f"{path}: no GPU kernel events (cat 'kernel', 'gpu_memcpy' or "
                          f"'gpu_memset'); was the profiler run with CUDA activities?")
    kernels.sort(key=lambda e: (e[0], e[1]))
    t0 = kernels[0][0]
    streams = _stream_numbers([s for _, _, _, s, _, _ in kernels])
    seen: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    for ts, _, name, stream, dur, ev in kernels:
        k = seen.get(name, 0)
        seen[name] = k + 1
        rows.append({"op": f"{name}#{k}", "name": name, "kind": kernel_kind(name),
                     "stream": streams[stream], "start_us": ts - t0, "end_us": ts - t0 + dur,
                     "blocks": _grid(ev)})
    meta: dict[str, Any] = {"t0_us": t0, "source": str(path), "kernels": len(rows)}
    if graph is None:
        graph = _kernel_graph(rows, path.stem)
    else:
        rows = _match(rows, graph, meta, path)
    df = pd.DataFrame({
        "op": [r["op"] for r in rows],
        "kind": [graph.op(r["op"]).kind for r in rows],
        "stream": [r["stream"] for r in rows],
        "device": [graph.op(r["op"]).device for r in rows],
        "start_us": [r["start_us"] for r in rows],
        "end_us": [r["end_us"] for r in rows],
        "duration_us": [r["end_us"] - r["start_us"] for r in rows],
        "flops": [graph.op(r["op"]).flops for r in rows],
        "bytes": [graph.op(r["op"]).bytes_read + graph.op(r["op"]).bytes_written for r in rows],
    })
    device = "gpu"
    if isinstance(data, dict) and isinstance(data.get("deviceProperties"), list):
        props = data["deviceProperties"]
        if props and isinstance(props[0], dict) and props[0].get("name"):
            device = str(props[0]["name"])
    return Trace(df, graph=graph, policy="measured", device=device, executor="pytorch-profiler",
                 mode="eager", meta=meta)


def _stream_numbers(streams: list[int | str]) -> dict[int | str, int]:
    """Stream ids as ints: numeric ids stay, others get numbers after the largest numeric id."""
    table: dict[int | str, int] = {s: s for s in streams if isinstance(s, int)}
    nxt = max(table.values(), default=-1) + 1
    for s in streams:
        if s not in table:
            table[s] = nxt
            nxt += 1
    return table


def _grid(event: Mapping[str, Any]) -> int | None:
    args = event.get("args")
    grid = args.get("grid") if isinstance(args, dict) else None
    if isinstance(grid, list) and grid and all(
            isinstance(g, int) and not isinstance(g, bool) and g > 0 for g in grid):
        blocks = math.prod(grid)
        return blocks if blocks < 2**62 else None
    return None


def _kernel_graph(rows: list[dict[str, Any]], name: str) -> Graph:
    ops = [Op(r["op"], kind=r["kind"], duration_us=r["end_us"] - r["start_us"],
              thread_blocks=r["blocks"], attrs={"kernel": r["name"]}) for r in rows]
    return Graph(ops, name=name)


def _match(rows: list[dict[str, Any]], graph: Graph, meta: dict[str, Any],
           path: Path) -> list[dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    unmatched = 0
    for r in rows:
        op = r["name"] if r["name"] in graph else r["op"] if r["op"] in graph else None
        if op is None:
            unmatched += 1
            continue
        if op in merged:
            m = merged[op]
            m["start_us"] = min(m["start_us"], r["start_us"])
            m["end_us"] = max(m["end_us"], r["end_us"])
        else:
            merged[op] = {**r, "op": op}
    if not merged:
        raise FormatError(f"{path}: no kernel name matches an op of graph {graph.name!r} "
                          f"(names like {rows[0]['name'][:60]!r})".replace("\n", "\\n"))
    meta["unmatched_kernels"] = unmatched
    meta["missing_ops"] = [o for o in graph.op_ids if o not in merged]
    return sorted(merged.values(), key=lambda r: (r["start_us"], r["op"]))


__all__ = ["kernel_kind", "load_pytorch_trace", "save_chrome_trace", "to_chrome_trace"]
