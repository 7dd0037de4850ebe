"""Why the winner wins: the mechanism behind a comparison's verdict, computed from its traces.

The table says which policy is fastest; :func:`why_lines` says why, from what the simulation
(or a GPU run) already recorded, in at most five sentences:

1. **What bounds the winner** (:func:`_bound_line`): the host's launches when the device waited
   for the host on at least half of its ops (eager mode: ``N launches × L µs = H µs`` of host
   time against ``K µs`` of kernels), else the larger part of the lower bound (the critical path,
   or the SMs' capacity for the whole graph's work) and what the gap to it is made of: ops that
   run longer side by side than alone (shared SMs and memory bandwidth), cross-stream syncs and
   barriers.  When no policy beats serial, why not.
2. **What overlaps** (:func:`_overlap_line`): the share of the winner's makespan with two or more
   ops running, and the parts of the graph (op-id prefixes: ``Mixed_6b/...`` → ``Mixed_6b``, or
   op kinds when ids have no path) whose ops overlap longest, with the streams they spread over.
3. **Concurrency and utilisation** against serial's (the table's ``avg_concurrency`` and
   ``utilisation``) and why streams can help at all: the share of serial's kernel time in
   kernels that fill too few SMs to be compute- or memory-bound (``latency`` bound).
4. **Distance to the lower bound** (``ratio_to_lb``).
5. **The other mode** (:func:`other_mode`, graph mode against eager): the same schedules
   simulated in the other mode, and a line only when that would change the verdict (another
   winner, or serial winning), with the reason (the host's launches).  Only for simulated
   comparisons of at most :data:`OTHER_MODE_MAX_OPS` ops (one more simulation per policy);
   IOS's stages were searched for the comparison's own mode, not re-searched.

A CPU run explains only what a CPU run can: every schedule runs one op at a time in its issue
order.  Plain text; :func:`why_html` escapes it for the report and the app.  Cost: O(V log V)
per trace looked at, plus the other mode's simulations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.orchestration.comparison import BASELINE, Comparison, ran_on
from workbench.values.views import register_view

#: The largest graph whose schedules are simulated again in the other mode for its line.
OTHER_MODE_MAX_OPS = 5_000
#: The host bound a policy when the device waited for the host on at least this share of ops.
HOST_BOUND_SHARE = 0.5
#: How many graph parts the overlap line names.
PARTS_NAMED = 3


@dataclass(frozen=True)
class OtherMode:
    """The comparison's schedules simulated in the other mode: ``makespans`` per policy, the
    ``best`` there (fastest, ties in the table's order), its speedup over serial, and serial's
    host figures there (kernel launches, host issue time, kernel time)."""

    mode: str
    makespans: dict[str, float]
    best: str
    speedup: float
    launches: int
    host_us: float
    kernel_us: float


def other_mode(comparison: Comparison) -> OtherMode | None:
    """The comparison's executed schedules simulated in the other mode (graph ↔ eager) on the
    same device and precision; None for measured comparisons, graphs over
    :data:`OTHER_MODE_MAX_OPS` ops, or when serial or the device is missing.  Cached on the
    comparison.  O(policies × simulation)."""
    cache: dict[str, OtherMode | None] = comparison.__dict__.setdefault("_other_mode", {})
    if "result" not in cache:
        cache["result"] = _simulate_other_mode(comparison)
    return cache["result"]


def _simulate_other_mode(comparison: Comparison) -> OtherMode | None:
    settings = dict(comparison.settings or {})
    spec = getattr(comparison, "device_spec", None)
    if (ran_on(settings) != "simulator" or spec is None or comparison.mode not in MODES
            or len(comparison.graph) > OTHER_MODE_MAX_OPS
            or BASELINE not in comparison.schedules or "measured" in comparison.traces):
        return None
    from workbench.executors.execute import execute

    mode = MODES[comparison.mode]
    precision = str(settings.get("precision") or "auto")
    order = [str(p) for p in comparison.table["policy"] if str(p) in comparison.schedules]
    traces = {p: execute(comparison.schedules[p], executor="simulator", device=spec, mode=mode,
                         precision=precision) for p in order}
    spans = {p: float(t.makespan) for p, t in traces.items()}
    best = min(order, key=lambda p: spans[p])       # min keeps the first of equal makespans
    serial = traces[BASELINE]
    df = serial.df
    launches = int(df["kernels"].sum()) if "kernels" in df else len(df)
    return OtherMode(mode, spans, best, spans[BASELINE] / max(spans[best], 1e-12), launches,
                     float(serial.meta.get("host_end_us") or 0.0),
                     _kernel_us(df))


#: The other mode of each mode.
MODES = {"graph": "eager", "eager": "graph"}


def why_lines(comparison: Comparison) -> list[str]:
    """The sentences of the "why" (module docstring), plain text; empty when no policy ran."""
    best = comparison.best
    if best is None or best not in comparison.traces:
        return []
    where = ran_on(comparison.settings)
    if where == "cpu":
        return ["On the CPU every schedule runs the same ops one at a time in its issue order "
                "(streams and syncs order nothing more there), so the rows differ only in the "
                "order of the same ops and in the machine's load while they ran."]
    lines = [_bound_line(comparison, best), _overlap_line(comparison, best),
             _concurrency_line(comparison, best), _lower_bound_line(comparison, best)]
    if where == "simulator":
        lines.append(other_mode_line(comparison))
    return [line for line in lines if line]


def why_html(comparison: Comparison) -> str:
    """:func:`why_lines` as the report's and the app's ``<div class="wb-why">`` (escaped); empty
    when there is nothing to say."""
    from workbench.viz.style import escape

    lines = why_lines(comparison)
    if not lines:
        return ""
    items = "".join(f"<li>{escape(line)}</li>" for line in lines)
    return f'<div class="wb-why"><b>Why:</b><ul>{items}</ul></div>'


def _row(comparison: Comparison, policy: str) -> dict[str, Any]:
    rows = comparison.table.loc[comparison.table["policy"] == policy]
    return rows.iloc[0].to_dict() if len(rows) else {}


def _num(row: dict[str, Any], key: str) -> float:
    value = row.get(key)
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return number


def _kernel_us(df: Any) -> float:
    """The kernels' own time: each op alone on the device (``alone_us``), else its duration."""
    column = "alone_us" if "alone_us" in df else "duration_us"
    return float(df[column].sum()) if len(df) else 0.0


def _launches_text(launches: int, host_us: float, kernel_us: float) -> str:
    per = host_us / launches if launches else 0.0
    return (f"the host issues {launches:,} kernel launches × {per:.2f} µs = {host_us:,.0f} µs "
            f"for {kernel_us:,.0f} µs of kernels, so the device waits for the host whatever the "
            "streams")


def _host_line(trace: Any) -> str:
    df = trace.df
    launches = int(df["kernels"].sum()) if "kernels" in df else len(df)
    return _launches_text(launches, float(trace.meta.get("host_end_us") or 0.0), _kernel_us(df))


def _bound_line(comparison: Comparison, best: str) -> str:
    trace = comparison.traces[best]
    row = _row(comparison, best)
    host_bound = float(trace.meta.get("host_bound_fraction") or 0.0)
    if host_bound >= HOST_BOUND_SHARE and comparison.mode == "eager":
        head = ("Nothing beats serial: the host's launches bound every schedule: "
                if best == BASELINE else f"What bounds {best}: the host's launches: ")
        return head + _host_line(trace) + " (graph mode launches the whole graph at once)."
    if best == BASELINE:
        from workbench.io.traces.trace_events import nothing_to_schedule

        empty = nothing_to_schedule(comparison.graph)
        if empty:
            return f"Nothing beats serial: {empty}."
        return ("Nothing beats serial: the ops that could run side by side run longer together "
                "than one after another (they share the SMs and the memory bandwidth), or the "
                "syncs cost more than the overlap gains.")
    span = float(trace.makespan)
    cp, work = _num(row, "critical_path_us"), _num(row, "work_us")
    if math.isnan(cp) or math.isnan(work):
        return ""
    if cp >= work:
        text = (f"What bounds {best}: the critical path, {cp:,.1f} µs of ops that must run one "
                f"after another, is {100 * cp / span:.0f}% of its {span:,.1f} µs")
    else:
        text = (f"What bounds {best}: the SMs' capacity: the graph's work needs {work:,.1f} µs "
                f"at the device's peak, {100 * work / span:.0f}% of its {span:,.1f} µs")
    gaps = _gap_parts(comparison, best)
    return text + ("; the rest is " + ", ".join(gaps) if gaps else "") + "."


def _gap_parts(comparison: Comparison, best: str) -> list[str]:
    """What the winner's makespan holds beyond its lower bound: contention, syncs, barriers."""
    trace, sched = comparison.traces[best], comparison.schedules.get(best)
    parts = []
    base = comparison.traces.get(BASELINE)
    if base is not None and len(trace.df) and len(base.df):
        busy = float(trace.df["duration_us"].sum())
        alone = float(base.df["duration_us"].sum())    # the same ops one at a time
        if alone > 0 and busy > alone * 1.005:
            parts.append(f"ops running {100 * (busy / alone - 1):.0f}% longer side by side than "
                         "one at a time (shared SMs and memory bandwidth)")
    if sched is not None and sched.n_syncs:
        parts.append(f"{sched.n_syncs} cross-stream syncs")
    if sched is not None and sched.n_barriers:
        idle = trace.barrier_idle_us()
        parts.append(f"{sched.n_barriers} barriers where every stream joins"
                     + (f" (the device idle {idle:,.1f} µs at them)" if idle > 0.05 else ""))
    return parts


def overlap_by_part(trace: Any) -> tuple[float, list[tuple[str, float, int]]]:
    """The share of ``trace``'s makespan with two or more ops running, and per graph part (op-id
    prefix, else op kind) the op time that overlapped another op and the number of streams the
    part's ops ran on, longest overlap first.  O(V log V) with NumPy."""
    df = trace.df
    span = float(trace.makespan)
    if len(df) < 2 or span <= 0:
        return 0.0, []
    start = df["start_us"].to_numpy(float)
    end = df["end_us"].to_numpy(float)
    times = np.unique(np.concatenate([start, end]))
    delta = np.zeros(len(times) + 1)
    np.add.at(delta, np.searchsorted(times, start), 1)
    np.add.at(delta, np.searchsorted(times, end), -1)
    running = np.cumsum(delta)[:-1]                 # ops running in [times[i], times[i+1])
    lengths = np.diff(times)
    shared = lengths * (running[:-1] >= 2)
    prefix = np.concatenate([[0.0], np.cumsum(shared)])
    per_op = prefix[np.searchsorted(times, end)] - prefix[np.searchsorted(times, start)]
    ids, kinds = [str(op) for op in df["op"]], [str(kind) for kind in df["kind"]]
    parts = [_part(op, kind, 1) for op, kind in zip(ids, kinds, strict=True)]
    if len(set(parts)) == 1:                       # one block: name its parts instead
        parts = [_part(op, kind, 2) for op, kind in zip(ids, kinds, strict=True)]
    overlap: dict[str, float] = {}
    streams: dict[str, set[Any]] = {}
    for part, t, stream in zip(parts, per_op.tolist(), df["stream"].tolist(), strict=True):
        overlap[part] = overlap.get(part, 0.0) + t
        streams.setdefault(part, set()).add(stream)
    ranked = sorted(((p, t, len(streams[p])) for p, t in overlap.items() if t > 0),
                    key=lambda item: -item[1])
    return float(shared.sum()) / span, ranked


def _part(op: str, kind: str, depth: int) -> str:
    """The part of the graph an op belongs to: its id's first ``depth`` path components
    (``a/b/c`` → ``a`` at depth 1, ``a/b`` at 2), or for dotted ids (``layer1.0.conv1``) the
    first ``depth`` components short of the last; ids without either: the op's kind."""
    for sep in ("/", "."):
        names = op.strip(sep).split(sep)
        if len(names) > 1:
            return sep.join(names[:min(depth, len(names) - 1 if sep == "." else depth)])
    return f"{kind} ops"


def _overlap_line(comparison: Comparison, best: str) -> str:
    if best == BASELINE:
        return ""
    share, parts = overlap_by_part(comparison.traces[best])
    if not parts:
        return f"No two of {best}'s ops run at the same time."
    named = ", ".join(f"{p} ({n} streams)" if n > 1 else p for p, _, n in parts[:PARTS_NAMED])
    extra = len(parts) - PARTS_NAMED
    more = f" and {extra} more part{'s' if extra > 1 else ''}" if extra > 0 else ""
    return (f"What overlaps: two or more ops run at once for {100 * share:.0f}% of {best}'s "
            f"makespan, longest in {named}{more}.")


def _concurrency_line(comparison: Comparison, best: str) -> str:
    row, base = _row(comparison, best), _row(comparison, BASELINE)
    conc, util = _num(row, "avg_concurrency"), _num(row, "utilisation")
    if math.isnan(conc) or math.isnan(util):
        return ""
    timed = any(op.duration_us is not None for op in comparison.graph.ops)
    if timed:   # ops with their own times have no FLOP rate on this device
        text = f"{best} keeps {conc:.2f} ops running on average"
        if best != BASELINE and base:
            text += f", against serial's {_num(base, 'avg_concurrency'):.2f}"
    else:
        text = (f"{best} keeps {conc:.2f} ops running on average and reaches "
                f"{100 * util:.1f}% of the device's peak FLOP rate")
        if best != BASELINE and base:
            text += (f", against serial's {_num(base, 'avg_concurrency'):.2f} and "
                     f"{100 * _num(base, 'utilisation'):.1f}%")
    small = _latency_share(comparison)
    if small is not None and small >= 0.2:
        text += (f"; {100 * small:.0f}% of serial's kernel time is in kernels too small to fill "
                 "the SMs (latency-bound), the room that streams fill")
    return text + "."


def _latency_share(comparison: Comparison) -> float | None:
    trace = comparison.traces.get(BASELINE)
    if trace is None or "bound" not in trace.df or not len(trace.df):
        return None
    df = trace.df
    total = float(df["duration_us"].sum())
    latency = float(df.loc[df["bound"] == "latency", "duration_us"].sum())
    return latency / total if total > 0 else None


def _lower_bound_line(comparison: Comparison, best: str) -> str:
    row = _row(comparison, best)
    ratio, bound = _num(row, "ratio_to_lb"), _num(row, "lower_bound_us")
    if math.isnan(ratio) or math.isnan(bound):
        return ""
    which = ("the critical path" if _num(row, "critical_path_us") >= _num(row, "work_us") else
             "the whole graph's work at the device's peak")
    return (f"{best} is {ratio:.2f}× the lower bound of {bound:,.1f} µs ({which}), the time no "
            "schedule can beat.")


def other_mode_line(comparison: Comparison) -> str:
    """One line when the other mode (:func:`other_mode`) would name another winner, with the
    reason; empty when the verdict holds there (or cannot be simulated)."""
    other = other_mode(comparison)
    best = comparison.best
    if other is None or best is None:
        return ""
    from workbench.simulator.fidelity.accuracy import TIE_BAND

    spans = other.makespans
    if best in spans and spans[best] <= spans[other.best] * (1 + TIE_BAND):
        return ""                      # the winner stays the best, within the simulator's band
    winner = ("serial wins" if other.best == BASELINE or other.speedup < 1 + TIE_BAND else
              f"{other.best} wins ({other.speedup:.2f}× serial)")
    text = f"In {other.mode} mode the verdict changes: {winner}"
    if best != BASELINE and best in spans:
        text += f", and {best} runs at {spans[BASELINE] / spans[best]:.2f}× serial"
    if other.mode == "graph":
        return (text + ": one graph launch replaces the host's per-kernel launches, which bound "
                "this comparison, so the streams' overlap shows (the same schedules simulated "
                "in graph mode).")
    if other.host_us >= other.kernel_us:
        return (text + ": " + _launches_text(other.launches, other.host_us, other.kernel_us)
                + " (the same schedules simulated eagerly).")
    return (text + f": the host issues every launch, event and barrier itself there "
            f"({other.launches:,} launches, {other.host_us:,.0f} µs of host time), which "
            f"costs {best}'s syncs and barriers more than {other.best}'s (the same schedules "
            "simulated eagerly).")


register_view("why", why_lines)
