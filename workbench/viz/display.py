"""Rich notebook display of the core values (``_repr_html_`` of Graph, Schedule, Trace, MemoryPlan
and Comparison).

The core classes import this module inside their ``_repr_html_`` only (STYLE.md R9).  Every name
from a graph (op ids, kinds, graph and policy names) is HTML-escaped.  ``trace_html`` embeds
plotly.js inline (``include_plotlyjs=True``): bigger output, but it renders in JupyterLab, in
nbconvert HTML and offline alike (a CDN or require.js reference fails offline; ecosystem notes
§3.1, §3.4).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from workbench.graph import Graph
from workbench.schedule import Schedule
from workbench.trace import Trace
from workbench.viz.dag import dag_svg
from workbench.viz.lifetimes import lifetime_chart
from workbench.viz.style import escape, stream_color
from workbench.viz.tables import table_html
from workbench.viz.timeline import timeline

MAX_LISTED_OPS = 40  # ops listed per stream before "… and N more"
_BOX = 'style="font-family: Helvetica, Arial, sans-serif; font-size: 13px"'
_CELL_CSS = "text-align:left; padding: 2px 10px 2px 0; vertical-align: top"
_CELL = f'style="{_CELL_CSS}"'
_NOWRAP = f'style="{_CELL_CSS}; white-space: nowrap"'
SCROLL_X = 'style="overflow-x:auto; max-width:100%"'  # wide tables scroll instead of overflowing


def format_value(value: Any) -> str:
    """A value as escaped HTML text: floats to 4 significant digits, mappings as ``k: v`` lists."""
    if isinstance(value, bool) or value is None:
        return escape(value)
    if isinstance(value, float):
        return escape(f"{value:,.4g}")
    if isinstance(value, Mapping):
        return ", ".join(f"{escape(k)}: {format_value(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(format_value(v) for v in value)
    return escape(value)


def kv_table(items: Mapping[str, Any], *, css_class: str = "wb-kv") -> str:
    """A two-column HTML table of ``items`` (keys and values escaped)."""
    rows = "".join(f"<tr><th {_CELL}>{escape(k)}</th><td {_CELL}>{format_value(v)}</td></tr>"
                   for k, v in items.items())
    return f'<table class="{css_class}">{rows}</table>'


def _op_list(ops: tuple[str, ...] | list[str]) -> str:
    shown = ", ".join(f"<code>{escape(op)}</code>" for op in ops[:MAX_LISTED_OPS])
    more = len(ops) - MAX_LISTED_OPS
    return shown + (f" … and {more} more" if more > 0 else "")


def swatch(color: str) -> str:
    """A small coloured square (for stream legends)."""
    return (f'<span style="display:inline-block; width:0.9em; height:0.9em; '
            f'background:{color}; border-radius:2px; vertical-align:middle"></span>')


def stream_table(schedule: Schedule) -> str:
    """One line per stream: its colour, its number of ops and the ops in launch order."""
    rows = "".join(
        f"<tr><td {_NOWRAP}>{swatch(stream_color(s))} stream {escape(s)}</td>"
        f"<td {_CELL}>{len(ops)}</td><td {_CELL}>{_op_list(list(ops))}</td></tr>"
        for s, ops in schedule.streams.items() if ops)
    head = f"<tr><th {_CELL}>stream</th><th {_CELL}>ops</th><th {_CELL}>launch order</th></tr>"
    return f'<table class="wb-streams">{head}{rows}</table>'


def graph_html(graph: Graph) -> str:
    """HTML for a graph: its summary and the DAG as inline SVG."""
    return (f"<div {_BOX}><h4>Graph {escape(graph.name)}</h4>{kv_table(graph.summary())}"
            f'<div style="overflow:auto; max-height:600px">{dag_svg(graph)}</div></div>')


def schedule_html(schedule: Schedule) -> str:
    """HTML for a schedule: counts, one line per stream, and the DAG coloured by stream."""
    counts = {k: v for k, v in schedule.summary().items() if k != "policy"}
    return (f"<div {_BOX}><h4>Schedule {escape(schedule.policy)} of "
            f"{escape(schedule.graph.name)}</h4>{kv_table(counts)}{stream_table(schedule)}"
            f'<div style="overflow:auto; max-height:600px">'
            f"{dag_svg(schedule.graph, schedule)}</div></div>")


def trace_html(trace: Trace) -> str:
    """HTML for a trace: its metrics and the timeline (plotly.js inline, works offline)."""
    info = {"policy": trace.policy, "graph": trace.graph.name, "device": trace.device,
            "mode": trace.mode, "executor": getattr(trace, "executor", "simulator"),
            **trace.metrics()}
    fig = timeline(trace)
    plot = fig.to_html(full_html=False, include_plotlyjs=True,
                       div_id=f"wb-timeline-{uuid.uuid4().hex[:12]}")
    return (f"<div {_BOX}><h4>Trace {escape(trace.policy)} on {escape(trace.graph.name)}</h4>"
            f"{kv_table(info)}{plot}</div>")


def _mib(n: float) -> str:
    return f"{n / 2**20:,.2f} MiB ({int(n):,} B)"


def memory_plan_summary(plan: Any) -> dict[str, Any]:
    """The headline numbers of a MemoryPlan, as a label → value mapping (for :func:`kv_table`)."""
    notes = plan.notes or {}
    info: dict[str, Any] = {
        "planner": plan.planner, "tensors": len(plan.records),
        "arena": _mib(plan.arena_bytes), "lower bound": _mib(plan.lower_bound),
        "ratio": f"{plan.ratio:.3f}", "alignment": f"{plan.alignment} B",
    }
    if "interval_lower_bound" in notes:
        info["interval lower bound"] = _mib(notes["interval_lower_bound"])
    if "persistent_bytes" in notes:
        info["persistent (inputs, parameters)"] = _mib(notes["persistent_bytes"])
    if "lifetimes_from" in notes:
        info["lifetimes from"] = notes["lifetimes_from"]
    if plan.conflicts is not None:
        info["conflicts"] = f"{len(plan.conflicts):,} pairs (multi-stream happens-before)"
    return info


def memory_plan_html(plan: Any) -> str:
    """HTML for a MemoryPlan: its headline numbers and the SOMAS lifetime chart (plotly.js inline,
    works offline).  Meant for ``MemoryPlan._repr_html_``."""
    fig = lifetime_chart(plan)
    plot = fig.to_html(full_html=False, include_plotlyjs=True,
                       div_id=f"wb-lifetimes-{uuid.uuid4().hex[:12]}")
    return (f"<div {_BOX}><h4>Memory plan {escape(plan.planner)}</h4>"
            f"{kv_table(memory_plan_summary(plan))}{plot}</div>")


def comparison_html(comparison: Any) -> str:
    """HTML for a Comparison: what was compared and the ranking table (scrolls when wide)."""
    info = {"graph": comparison.graph.name, "ops": len(comparison.graph),
            "device": comparison.device, "mode": comparison.mode,
            "policies": list(comparison.schedules), "best": comparison.best}
    return (f"<div {_BOX}><h4>Comparison on {escape(comparison.graph.name)}</h4>"
            f"{kv_table(info)}<div {SCROLL_X}>{table_html(comparison.table)}</div></div>")
