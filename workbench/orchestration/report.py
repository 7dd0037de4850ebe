"""A self-contained, offline HTML report of a policy comparison.

One file, no network: plotly.js is embedded exactly once, at the end of the page, and each figure
is a ``div`` with its JSON gzipped beside it, drawn once plotly.js is loaded
(:mod:`workbench.viz.embed`); the DAG is inline SVG with a small zoom/pan script
(:mod:`workbench.viz.zoom`), and the stylesheet is the :data:`CSS` string below (no data files to
ship).  It renders in headless Chromium with external requests blocked (ecosystem notes §3.4).

plotly.js (v4: 4.8 MB minified) is nearly all of a report's size: everything else of a 4-op
comparison takes about 50 kB.  ``plotlyjs`` (:data:`~workbench.viz.embed.PLOTLYJS_MODES`) chooses
where it comes from: ``"inline"`` (default: one file that works offline), ``"directory"`` (a
``plotly.min.js`` written once beside the report and shared by every report of that folder; works
offline while the two files stay together) or ``"cdn"`` (plotly's CDN: the smallest file, needs
the network when viewed).  When plotly.js cannot be loaded, each figure's box says so instead of
staying blank.

Every name that comes from the graph (op ids, kinds, graph name), from the policies or from the
settings is HTML-escaped, so a hostile op id such as ``<script>alert(1)</script>`` shows as text.

``comparison`` is any object with the attributes of
:class:`workbench.orchestration.comparison.Comparison`:
``graph, device, mode, schedules, traces, table, best, settings`` and the best in words
(``best_text``, ``best_policies``, ``best_makespan_us``, ``device_text``, ``spreads()``); when it
also has a non-empty ``memory_plans`` (and optionally ``pools``) the report gets a "Memory"
section: the peak live memory of every policy as bars, the best policy's live-memory curve (with
the BestFit pool's reserved bytes; the others a menu away) and the SOMAS lifetime chart of the
best policy's plan.

What the report explains depends on where the rows ran (:func:`how_to_read`, :func:`slower_note`,
:func:`measured_note`): a simulated comparison and a GPU run in the GPU's terms (streams of
kernels sharing the SMs and memory bandwidth, launches, CUDA graphs), a CPU run in the CPU's (one
op at a time in issue order: only the order differs), never the other's.  Measured rows are
ordered only beyond measurement noise (:mod:`workbench.orchestration.compare_measured`), and the
header names the same best, with the same makespan (the table's median), as the table and the
CLI.
"""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Iterable
from math import nan
from pathlib import Path
from typing import Any

import networkx
import pandas as pd
import plotly
import plotly.graph_objects as go

from workbench._atomic import check_output, write_text
from workbench._version import __version__
from workbench.orchestration.comparison import Comparison, traces_in_table_order
from workbench.orchestration.report_notes import (
    barrier_note,
    dag_note,
    how_to_read,
    measured_note,
    nothing_to_schedule_note,
    precision_text,
    shows_simulation,
    slower_note,
    timelines_note,
    unfinished_note,
)
from workbench.orchestration.why import why_html
from workbench.simulator.fidelity.accuracy import accuracy_note
from workbench.values.views import register_view
from workbench.viz.dag import dag_svg
from workbench.viz.display import kv_table, memory_plan_summary, stream_table
from workbench.viz.embed import (
    check_plotlyjs,
    figure_html,
    figures_script,
    plotlyjs_html,
    write_plotlyjs,
)
from workbench.viz.lifetimes import lifetime_chart
from workbench.viz.memory_curve import memory_curve
from workbench.viz.memory_peaks import memory_peaks
from workbench.viz.policy_timelines import policy_timelines
from workbench.viz.style import LAYOUT_DEFAULTS, TIME_AXIS_TITLE, escape, legend_px, tint
from workbench.viz.tables import TABLE_CSS, table_html
from workbench.viz.zoom import ZOOM_CSS, ZOOM_JS, zoomable

CSS = """
body { font-family: Inter, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2933;
       margin: 0 auto; max-width: 1200px; padding: 0 24px 48px; line-height: 1.45; }
header { border-bottom: 2px solid #4e79a7; margin-bottom: 12px; }
h1 { font-size: 1.6em; margin: 24px 0 4px; }
h2 { font-size: 1.2em; margin-top: 32px; border-bottom: 1px solid #d9dee4; padding-bottom: 4px; }
nav a { margin-right: 14px; color: #4e79a7; text-decoration: none; }
.meta { color: #52606d; margin: 4px 0 12px; }
table { border-collapse: collapse; font-size: 0.92em; }
th, td { padding: 3px 10px 3px 0; text-align: left; vertical-align: top; }
.note { background: #f5f7fa; border-left: 4px solid #4e79a7; padding: 8px 14px; }
ul.glance { margin: 0; padding: 8px 14px 8px 32px; }
ul.glance li { margin: 3px 0; }
.wb-why { background: #f3f8f1; border-left: 4px solid #59a14f; padding: 8px 14px; margin: 8px 0; }
.wb-why ul { margin: 4px 0 0 0; padding-left: 20px; } .wb-why li { margin: 3px 0; }
details.accuracy { margin: 8px 0; color: #52606d; }
details.accuracy summary { cursor: pointer; color: #4e79a7; }
code { font-size: 0.95em; }
.wb-nojs { padding: 12px; color: #b00020; border: 1px dashed #b00020; }
""" + TABLE_CSS + ZOOM_CSS

def makespan_figure(table: pd.DataFrame, best: str | Iterable[str] | None = None) -> go.Figure:
    """Horizontal bars of makespan per policy (``best``: the policy or policies drawn green),
    with each policy's lower bound as a marker and, for measured rows, their quartile range as
    an error bar."""
    policies = [str(p) for p in table["policy"]]
    greens = {best} if isinstance(best, str) else set(best or ())
    colors = [("#59a14f" if p in greens else tint("#4e79a7", 0.2)) for p in policies]
    labels = [escape(p) for p in policies]
    status = table["status"] if "status" in table.columns else ["ok"] * len(policies)
    spans = table["makespan_us"].astype(float)
    q1 = table["makespan_q1_us"].astype(float) if "makespan_q1_us" in table else spans * nan
    q3 = table["makespan_q3_us"].astype(float) if "makespan_q3_us" in table else spans * nan
    hover = [f"<b>{escape(p)}</b><br>makespan: {m:,.1f} µs"
             + (f"<br>quartiles: {a:,.1f}-{b:,.1f} µs" if a == a and b == b else "")
             if m == m else f"<b>{escape(p)}</b><br>{escape(st)}"
             for p, m, a, b, st in zip(policies, spans, q1, q3, status, strict=True)]
    error = ({"type": "data", "symmetric": False, "array": (q3 - spans).to_numpy(),
              "arrayminus": (spans - q1).to_numpy(), "color": "#1f2933"}
             if q1.notna().any() else None)
    fig = go.Figure(go.Bar(
        orientation="h", x=spans.to_numpy(), y=labels, error_x=error,
        marker={"color": colors}, name="makespan", hovertext=hover, hoverinfo="text"))
    if "lower_bound_us" in table.columns:
        fig.add_trace(go.Scatter(
            x=table["lower_bound_us"].astype(float).to_numpy(), y=labels, mode="markers",
            marker={"symbol": "line-ns-open", "size": 18, "color": "#1f2933",
                    "line": {"width": 2}}, name="lower bound"))
    fig.update_layout(**LAYOUT_DEFAULTS)
    fig.update_layout(title="makespan per policy (green = best)", barmode="overlay",
                      height=120 + 32 * len(policies) + legend_px(len(fig.data)))
    fig.update_xaxes(title=TIME_AXIS_TITLE, rangemode="tozero")
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


MEMORY_HOW_TO_READ = (
    "The bars are each executed schedule's peak of live activation memory, in the table's "
    "order (green: the best policy; the black tick is its memory plan's arena). The curve "
    "below is the best policy's live activation memory over time: an op's output is allocated "
    "when the op starts and freed when its last consumer ends (graph inputs and parameters are "
    "not counted; graph outputs stay to the end); the dashed line of the same colour is what "
    "the BestFit memory pool reserved from the device while replaying the same run, on the "
    "same axis (the gap is fragmentation plus caching). Its axis fits the in-use curve: the "
    "menu at its right fits the reservation instead, the one at its left shows another "
    "policy, or every policy's in-use curve together. The last chart is the static plan of "
    "the best policy: each rectangle is a tensor, spanning its lifetime (x) and its bytes "
    "inside one arena (y); rectangles of tensors that may be live together never overlap. "
    "The solid line is the arena size, the dashed line the lower bound no plan can beat."
)


def _memory_section(comparison: Comparison, best: str | None,
                    name: str) -> tuple[str, list[tuple[str, go.Figure]]] | None:
    """The Memory section's note and figures, or ``None`` when there are no memory plans."""
    plans = dict(getattr(comparison, "memory_plans", None) or {})
    if not plans:
        return None
    pools = dict(getattr(comparison, "pools", None) or {})
    chosen = best if best in plans else next(iter(plans))
    plan = plans[chosen]
    figures: list[tuple[str, go.Figure]] = []
    if comparison.traces:
        ordered = in_table_order(comparison)
        shown = chosen if chosen in ordered else next(iter(ordered))
        figures.append(("wb-fig-memory-peaks", memory_peaks(
            ordered, best=comparison.best_policies, plans=plans, pools=pools)))
        figures.append(("wb-fig-memory", memory_curve(
            ordered, pools=pools, selected=shown,
            title=f"live activation memory of {name}")))
    figures.append(("wb-fig-lifetimes", lifetime_chart(
        plan, title=f"memory plan of {escape(chosen)} ({escape(plan.planner)}): "
                    f"{plan.arena_bytes / 2**20:,.2f} MiB arena")))
    note = (f"<p>Memory plan of <b>{escape(chosen)}</b> by planner <b>{escape(plan.planner)}</b>: "
            f"arena <b>{plan.arena_bytes / 2**20:,.2f} MiB</b>, lower bound "
            f"<b>{plan.lower_bound / 2**20:,.2f} MiB</b>, ratio <b>{plan.ratio:.3f}</b>.</p>")
    body = (f'<p class="note">{MEMORY_HOW_TO_READ}</p>{note}'
            f"{kv_table(memory_plan_summary(plan))}")
    return body, figures


def in_table_order(comparison: Comparison) -> dict[str, Any]:
    """The comparison's traces in the order of its table (fastest first: the order of every
    chart), then any trace without a row.  O(policies)."""
    return traces_in_table_order(comparison)


def settings_shown(comparison: Comparison) -> dict[str, Any]:
    """The Settings section's rows: the comparison's settings with the precision resolved
    (``"auto"`` names what the kernels ran at: :func:`precision_text`) right after the
    device, when the comparison recorded it."""
    out: dict[str, Any] = {}
    settings = dict(comparison.settings or {})
    for key, value in settings.items():
        if key in ("precision", "conv_precision"):
            continue
        out[key] = value
        if key == "device" and "precision" in settings:
            out["precision"] = precision_text(comparison)
    return out


def _versions() -> dict[str, str]:
    dot = shutil.which("dot") or shutil.which("graphviz-pure")
    return {"python": platform.python_version(), "workbench": __version__,
            "plotly": plotly.__version__, "pandas": pd.__version__,
            "networkx": networkx.__version__,
            "graphviz dot": dot if dot else "not found (built-in DAG drawing)"}


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>\n{body}\n</section>'


def render(comparison: Comparison, *, plotlyjs: str = "inline") -> str:
    """The report as one HTML string (see the module docstring for what it holds and for
    ``plotlyjs``; with ``"directory"``, :func:`write` also writes
    :data:`~workbench.viz.embed.PLOTLYJS_FILE`)."""
    check_plotlyjs(plotlyjs)
    graph = comparison.graph
    best = comparison.best
    best_schedule = comparison.schedules.get(best) if best is not None else None
    name = escape(graph.name)
    best_names = comparison.best_policies
    best_ms = ""
    if best is not None and not comparison.exact_ties:  # ties name the makespan already
        value = comparison.best_makespan_us   # the table's: a measured row's median
        best_ms = (f" (fastest median {value:,.1f} µs: {escape(best)})" if len(best_names) > 1
                   else f" ({value:,.1f} µs)")
    meta = (f"{len(graph)} ops · device <b>{escape(comparison.device_text)}</b> · mode "
            f"<b>{escape(comparison.mode)}</b> · {len(comparison.traces)} policies · best: "
            f"<b>{escape(comparison.best_text)}</b>{best_ms}")

    figures = [("wb-fig-makespan", makespan_figure(comparison.table, best_names))]
    if comparison.traces:
        figures.append(("wb-fig-timelines", policy_timelines(
            in_table_order(comparison), selected=best,
            title=f"timelines of {name} (rank order)")))
    n_main = len(figures)
    memory = _memory_section(comparison, best, name)
    if memory is not None:
        figures += memory[1]
    plots = [figure_html(fig, div_id) for div_id, fig in figures]

    dag_body = dag_note() + f'<div class="dag">{zoomable(dag_svg(graph, best_schedule))}</div>'
    if best_schedule is not None:
        dag_body = (f"<p>Coloured by the streams of <b>{escape(best)}</b>:</p>"
                    f"{stream_table(best_schedule)}{dag_body}")

    sections = [
        _section("how", "How to read this", f'<div class="note">{how_to_read(comparison)}</div>'
                 + ('<details class="accuracy"><summary>Simulator accuracy</summary><p>'
                    f"{escape(accuracy_note(comparison.device))}</p></details>"
                    if shows_simulation(comparison) else "")),
        _section("results", "Results", measured_note(comparison) + unfinished_note(comparison)
                 + nothing_to_schedule_note(comparison)
                 + table_html(comparison.table, css=False, best=best_names)
                 + why_html(comparison) + plots[0]
                 + slower_note(comparison) + barrier_note(comparison)),
        _section("timelines", "Timelines", (timelines_note(comparison) + "".join(
            plots[1:n_main])) if n_main > 1 else "<p>No traces.</p>"),
        *([_section("memory", "Memory", memory[0] + "".join(plots[n_main:]))]
          if memory is not None else []),
        _section("dag", "Graph", dag_body),
        _section("summary", "Graph summary", kv_table(graph.summary())),
        _section("settings", "Settings", kv_table(settings_shown(comparison))),
        _section("versions", "Versions", kv_table(_versions())),
    ]
    links = [("results", "Results"), ("timelines", "Timelines"),
             *([("memory", "Memory")] if memory is not None else []),
             ("dag", "Graph"), ("settings", "Settings")]
    nav = " ".join(f'<a href="#{a}">{t}</a>' for a, t in links)
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Schedule Workbench report: {name}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<header><h1>Schedule comparison: {name}</h1><p class=\"meta\">{meta}</p>"
        f"<nav>{nav}</nav></header>",
        *sections,
        f"<script>{ZOOM_JS}</script>",
        plotlyjs_html(plotlyjs),
        f"<script>{figures_script(plotlyjs)}</script>",
        "</body></html>",
    ])


def write(comparison: Comparison, path: str | os.PathLike[str], *,
          plotlyjs: str = "inline") -> Path:
    """Write :func:`render` to ``path`` (UTF-8) and return the path.  The path is checked before
    the page is rendered (its folder must exist: it is not created silently), and the file is
    replaced atomically: a failure leaves the old report as it was (:mod:`workbench._atomic`).
    ``plotlyjs="directory"`` also writes :data:`~workbench.viz.embed.PLOTLYJS_FILE` beside it
    (:func:`write_plotlyjs`)."""
    out = check_output(path, what="report")
    html = render(comparison, plotlyjs=plotlyjs)
    if plotlyjs == "directory":
        write_plotlyjs(out.parent)
    return write_text(out, html)


register_view("report", write)  # Comparison.to_html finds it through workbench.values.views
