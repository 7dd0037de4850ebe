"""Rich notebook display of the core values (``_repr_html_`` of Graph, Schedule, Trace, MemoryPlan
and Comparison).

The core classes import this module inside their display methods only (STYLE.md R9).  Every name
from a graph (op ids, kinds, graph and policy names) is HTML-escaped.

How figures are displayed (ecosystem notes §3.1, §3.4):

* ``Trace`` and ``MemoryPlan`` display as two outputs (``_ipython_display_`` →
  :func:`display_with_figure`): an HTML table of their numbers, then the figure as a mime bundle
  holding ``application/vnd.plotly.v1+json`` (what JupyterLab, Notebook 7 and Voilà render, through
  the jupyterlab-plotly extension that ships with plotly: no plotly.js in the output) **and**
  ``text/html`` (what nbconvert and other static exports use).  One bundle cannot hold both the
  table and the figure: JupyterLab shows only the highest-ranked type (the plotly one).
* plotly.js (4.8 MB) is embedded in the ``text/html`` of the *first* figure of the kernel session
  only (:func:`plotlyjs_once`, a module-level flag, as plotly's own ``notebook`` renderer does);
  later figures call the already loaded ``window.Plotly``.  A CDN or require.js reference would
  fail offline.  ``_repr_html_`` (static HTML) follows the same rule.
* The pure functions :func:`trace_html` and :func:`memory_plan_html` stay self-contained by
  default (``include_plotlyjs=True``), for pages built outside a notebook.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from workbench.memory.plan import MemoryPlan
from workbench.values.graph import Graph
from workbench.values.schedule import Schedule
from workbench.values.trace import Trace
from workbench.values.views import register_view
from workbench.viz.dag import dag_svg
from workbench.viz.figure import (  # noqa: F401  (re-exported: the display helpers' home)
    PLOTLY_MIME,
    figure_bundle,
    figure_div,
    plotlyjs_once,
    reset_plotlyjs,
)
from workbench.viz.lifetimes import lifetime_chart
from workbench.viz.style import escape, stream_color
from workbench.viz.tables import table_html
from workbench.viz.timeline import timeline

MAX_LISTED_OPS = 40  # ops listed per stream before "… and N more"
_BOX = 'style="font-family: Helvetica, Arial, sans-serif; font-size: 13px"'
_CELL_CSS = "text-align:left; padding: 2px 10px 2px 0; vertical-align: top"
_CELL = f'style="{_CELL_CSS}"'
_NOWRAP = f'style="{_CELL_CSS}; white-space: nowrap"'


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


def display_with_figure(header_html: str, text: str, fig: go.Figure, *, prefix: str) -> None:
    """Display ``header_html`` (numbers) and then ``fig`` (see the module docstring)."""
    from IPython.display import display

    display({"text/html": header_html, "text/plain": text}, raw=True)
    display(figure_bundle(fig, prefix=prefix), raw=True)


def _trace_header(trace: Trace, body: str = "") -> str:
    info = {"policy": trace.policy, "graph": trace.graph.name, "device": trace.device,
            "mode": trace.mode, "executor": getattr(trace, "executor", "simulator"),
            **trace.metrics()}
    return (f"<div {_BOX}><h4>Trace {escape(trace.policy)} on {escape(trace.graph.name)}</h4>"
            f"{kv_table(info)}{body}</div>")


def trace_html(trace: Trace, *, include_plotlyjs: bool | None = True) -> str:
    """HTML for a trace: its metrics and the timeline.  ``include_plotlyjs=True`` (default) makes
    the fragment self-contained (works offline); ``None`` embeds plotly.js once per session."""
    plot = figure_div(timeline(trace), prefix="wb-timeline", include_plotlyjs=include_plotlyjs)
    return _trace_header(trace, plot)


def display_trace(trace: Trace) -> None:
    """``Trace._ipython_display_``: the metrics table, then the timeline figure."""
    display_with_figure(_trace_header(trace), repr(trace), timeline(trace), prefix="wb-timeline")


def _mib(n: float) -> str:
    return f"{n / 2**20:,.2f} MiB ({int(n):,} B)"


def memory_plan_summary(plan: MemoryPlan) -> dict[str, Any]:
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


def _memory_plan_header(plan: MemoryPlan, body: str = "") -> str:
    return (f"<div {_BOX}><h4>Memory plan {escape(plan.planner)}</h4>"
            f"{kv_table(memory_plan_summary(plan))}{body}</div>")


def memory_plan_html(plan: MemoryPlan, *, include_plotlyjs: bool | None = True) -> str:
    """HTML for a MemoryPlan: its headline numbers and the SOMAS lifetime chart.
    ``include_plotlyjs`` as in :func:`trace_html`."""
    plot = figure_div(lifetime_chart(plan), prefix="wb-lifetimes",
                      include_plotlyjs=include_plotlyjs)
    return _memory_plan_header(plan, plot)


def display_memory_plan(plan: MemoryPlan) -> None:
    """``MemoryPlan._ipython_display_``: the headline numbers, then the lifetime chart."""
    display_with_figure(_memory_plan_header(plan), repr(plan), lifetime_chart(plan),
                        prefix="wb-lifetimes")


def comparison_html(comparison: Any) -> str:
    """HTML for a Comparison: what was compared and where it ran (``device_text``), the best as
    the report and the CLI name it (``best_text``: several policies when measured rows tie
    within measurement noise), the near-tie note when the best are not ordered, and the ranking
    table (sorted by makespan, the best rows highlighted, essential columns first, the others
    behind a toggle; scrolls when wide)."""
    info = {"graph": comparison.graph.name, "ops": len(comparison.graph),
            "device": getattr(comparison, "device_text", comparison.device),
            "mode": comparison.mode, "policies": list(comparison.schedules),
            "best": getattr(comparison, "best_text", comparison.best)}
    ties = getattr(comparison, "near_tie_text", "")
    note = f"<p><i>{escape(ties)}</i></p>" if ties else ""
    table = table_html(comparison.table, best=getattr(comparison, "best_policies", None))
    return (f"<div {_BOX}><h4>Comparison on {escape(comparison.graph.name)}</h4>"
            f"{kv_table(info)}{note}{table}</div>")


for _view in (graph_html, schedule_html, trace_html, display_trace, memory_plan_html,
              display_memory_plan, comparison_html):
    register_view(_view.__name__, _view)
