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
:class:`workbench.orchestration.compare.Comparison`:
``graph, device, mode, schedules, traces, table, best, settings``; when it also has a non-empty
``memory_plans`` (and optionally ``pools``) the report gets a "Memory" section: the live-memory
curve of every policy (with the BestFit pool's reserved bytes) and the SOMAS lifetime chart of the
best policy's plan.
"""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path

import networkx
import pandas as pd
import plotly
import plotly.graph_objects as go

from workbench._atomic import check_output, write_text
from workbench._version import __version__
from workbench.orchestration.compare import Comparison
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
from workbench.viz.style import LAYOUT_DEFAULTS, TIME_AXIS_TITLE, escape, legend_px, tint
from workbench.viz.tables import TABLE_CSS, table_html
from workbench.viz.timeline import timelines
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
code { font-size: 0.95em; }
.wb-nojs { padding: 12px; color: #b00020; border: 1px dashed #b00020; }
""" + TABLE_CSS + ZOOM_CSS

HOW_TO_READ = (
    "Each policy assigned the graph's ops to GPU streams and the simulator ran the result on the "
    "modelled device. <b>makespan</b> is the time until the last op ends (smaller is better); "
    "<b>speedup</b> is relative to the baseline; <b>lower bound</b> is a time no schedule can beat "
    "and <b>ratio to LB</b> how far a policy is from it (1.000 would be optimal). "
    "<b>avg concurrency</b> is the average number of kernels running at once and "
    "<b>utilisation</b> the share of the device's compute that did useful work. "
    "The table is sorted by makespan; open <i>all columns</i> above it for the other metrics. "
    "In the timelines each row is a stream and each bar an op (hover for its name, kind, times, "
    "flops and bytes); red arrows are syncs (an event recorded after one op and waited for before "
    "another), dashed vertical lines are barriers (every stream joins). In the DAG (zoom with the "
    "buttons or Ctrl + wheel, drag to pan), node colours "
    "are the streams of the best policy, dashed edges are control dependencies and bold red edges "
    "are the syncs that policy needs. The row highlighted in the table is the best policy. "
    "Each stage of each policy (schedule, execute, plan memory) had a time budget: a "
    "<b>status</b> other than ok says which stage did not finish (its cells are empty). "
    "Timelines of very large traces are binned: each cell's shade is the fraction of that time "
    "its stream (or group of streams) was busy. "
    "With a <b>measured</b> executor the rows are runs on a real device instead: <b>torch</b> "
    "runs the schedule with PyTorch's kernels (cuDNN, cuBLAS), what a framework user's graph "
    "runs; <b>cupy</b> runs the project's own hand-written CUDA kernels, about 6x slower than "
    "cuDNN (Inception V3 batch 1 on an H200: 24,006 µs serial against 3,922 µs with cuDNN), so "
    "its multi-stream speedups belong to kernels that leave most of the GPU idle: prefer torch "
    "to ask how a graph should run, and cupy to test the launch plans, syncs and memory plans "
    "themselves. A measured row's <b>utilisation</b> is its ops' FLOPs over the measured "
    "makespan times the device's peak at the precision the kernels ran; <b>simulated_us</b> is "
    "the simulator's prediction for the same schedule and <b>sim_error</b> the prediction over "
    "the measurement, minus one."
)

#: What each measured executor's kernels are, for the note above measured results.
EXECUTOR_NOTES = {
    "torch": "PyTorch's kernels (cuDNN, cuBLAS) through torch.nn.functional",
    "cupy": ("the project's hand-written CUDA kernels, about 6x slower than cuDNN on Inception "
             "V3 (24,006 µs serial against 3,922 µs with cuDNN on an H200): its speedups are "
             "not those of a framework's kernels; prefer executor='torch' for those"),
}


def makespan_figure(table: pd.DataFrame, best: str | None = None) -> go.Figure:
    """Horizontal bars of makespan per policy, with each policy's lower bound as a marker."""
    policies = [str(p) for p in table["policy"]]
    colors = [("#59a14f" if p == best else tint("#4e79a7", 0.2)) for p in policies]
    labels = [escape(p) for p in policies]
    status = table["status"] if "status" in table.columns else ["ok"] * len(policies)
    hover = [f"<b>{escape(p)}</b><br>makespan: {m:,.1f} µs" if m == m
             else f"<b>{escape(p)}</b><br>{escape(st)}"
             for p, m, st in zip(policies, table["makespan_us"].astype(float), status,
                                 strict=True)]
    fig = go.Figure(go.Bar(
        orientation="h", x=table["makespan_us"].astype(float).to_numpy(), y=labels,
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
    "The first chart is the live activation memory of each executed schedule over time: an op's "
    "output is allocated when the op starts and freed when its last consumer ends (graph inputs "
    "and parameters are not counted; graph outputs stay to the end). Dashed lines of the same "
    "colour are the bytes the BestFit memory pool reserved from the device while replaying the "
    "same run; the gap is fragmentation plus caching. The second chart is the static plan of the "
    "best policy: each rectangle is a tensor, spanning its lifetime (x) and its bytes inside one "
    "arena (y); rectangles of tensors that may be live together never overlap. The solid line is "
    "the arena size, the dashed line the lower bound no plan can beat."
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
        figures.append(("wb-fig-memory", memory_curve(
            dict(comparison.traces), pools=pools,
            title=f"live activation memory of {name} (solid: in use, dashed: pool reserved)")))
    figures.append(("wb-fig-lifetimes", lifetime_chart(
        plan, title=f"memory plan of {escape(chosen)} ({escape(plan.planner)}): "
                    f"{plan.arena_bytes / 2**20:,.2f} MiB arena")))
    note = (f"<p>Memory plan of <b>{escape(chosen)}</b> by planner <b>{escape(plan.planner)}</b>: "
            f"arena <b>{plan.arena_bytes / 2**20:,.2f} MiB</b>, lower bound "
            f"<b>{plan.lower_bound / 2**20:,.2f} MiB</b>, ratio <b>{plan.ratio:.3f}</b>.</p>")
    body = (f'<p class="note">{MEMORY_HOW_TO_READ}</p>{note}'
            f"{kv_table(memory_plan_summary(plan))}")
    return body, figures


def _versions() -> dict[str, str]:
    dot = shutil.which("dot") or shutil.which("graphviz-pure")
    return {"python": platform.python_version(), "workbench": __version__,
            "plotly": plotly.__version__, "pandas": pd.__version__,
            "networkx": networkx.__version__,
            "graphviz dot": dot if dot else "not found (built-in DAG drawing)"}


def unfinished_note(comparison: Comparison) -> str:
    """A note listing the policies whose row is not ``ok`` (budget hit, worker died) and the
    comparison's own notes (e.g. an exact optimum cut short); empty when all finished."""
    table = comparison.table
    items = []
    if "status" in table.columns:
        items = [f"<b>{escape(p)}</b>: {escape(st)}"
                 for p, st in zip(table["policy"], table["status"], strict=True)
                 if not str(st).startswith("ok")]   # "ok (work budget ...)" finished
    items += [escape(n) for n in (comparison.settings or {}).get("notes", [])]
    if not items:
        return ""
    budget = (comparison.settings or {}).get("budget_s_per_stage")
    head = (f"Not everything finished within the budget of {budget:g} s per stage"
            if isinstance(budget, (int, float)) else "Not everything finished")
    return (f'<p class="note">{head} (empty cells): ' + "; ".join(items) + ".</p>")


def slower_note(comparison: Comparison) -> str:
    """A note for each executed policy slower than serial saying why, from its trace against
    serial's: whether the host's launches bound it, how much longer its ops ran side by side
    than one at a time (they share the SMs and the memory bandwidth), the cross-stream syncs
    and barriers it added and the device's idle time at barriers; empty when none is slower.
    O(ops) per policy."""
    table = comparison.table
    base = comparison.traces.get("serial")
    if base is None or "speedup" not in table.columns:
        return ""
    base_busy = float(base.df["duration_us"].sum())
    items = []
    for policy, speedup in zip(table["policy"], table["speedup"], strict=True):
        trace, sched = comparison.traces.get(policy), comparison.schedules.get(policy)
        if trace is None or sched is None or not speedup < 0.995:   # NaN: not executed
            continue
        why = []
        host_bound = float(trace.meta.get("host_bound_fraction") or 0.0)
        if host_bound >= 0.5:
            why.append(f"the host's launches bound it (the device waited for the host "
                       f"{100 * host_bound:.0f}% of the time, and every sync adds an event "
                       "record and a wait to the host's work: try mode='graph')")
        busy = float(trace.df["duration_us"].sum())
        if base_busy > 0 and busy > base_busy * 1.005:
            why.append(f"its ops ran {100 * (busy / base_busy - 1):.1f}% longer side by side "
                       "than one at a time (shared SMs and memory bandwidth)")
        if sched.n_syncs:
            why.append(f"{sched.n_syncs} cross-stream syncs")
        if sched.n_barriers:
            why.append(f"{sched.n_barriers} barriers (device idle {trace.barrier_idle_us():,.1f}"
                       " µs at them)")
        if not why:
            why.append("its issue order delays the critical path")
        items.append(f"<b>{escape(policy)}</b> ({speedup:.2f}×): " + ", ".join(why))
    if not items:
        return ""
    return ('<p class="note">Slower than serial, and why: ' + "; ".join(items) + ".</p>")


def near_tie_note(comparison: Comparison) -> str:
    """:attr:`Comparison.near_tie_text` as a note; empty when there is none."""
    text = comparison.near_tie_text
    return f'<p class="note">{escape(text)}</p>' if text else ""


def barrier_note(comparison: Comparison) -> str:
    """A note on what barriers cost: per policy with barriers, how many, of which kind, and how
    long the device sat idle at them (``Trace.barrier_idle_us``); empty when none has any."""
    items = []
    for policy, trace in comparison.traces.items():
        sched = comparison.schedules.get(policy)
        if sched is None or not sched.n_barriers:
            continue
        kind = ("device synchronisations (the host waits for an idle device, as IOS's runtime "
                "does)" if sched.barrier_kind == "device_sync" else "event joins")
        items.append(f"<b>{escape(policy)}</b>: {sched.n_barriers} {kind}; the device idles "
                     f"{trace.barrier_idle_us():,.1f} µs at them "
                     f"({100 * trace.barrier_idle_us() / max(trace.makespan, 1e-9):.1f}% of "
                     f"its makespan)")
    if not items:
        return ""
    return '<p class="note">Barriers: ' + "; ".join(items) + ".</p>"


def measured_note(comparison: Comparison) -> str:
    """Where measured rows were measured: the executor and what its kernels are, the GPU, the
    driver and library versions, mode, precision and repeats (``settings["measured_on"]``), and
    whether the simulator's predictions sit beside them; a recorded run (``compare(measured=
    ...)``) is named with its device; empty for simulated comparisons."""
    settings = dict(comparison.settings or {})
    recorded = settings.get("measured_device")
    note = (f'<p class="note">The row <b>measured</b> is a recorded run (a profiler trace) on '
            f"<b>{escape(recorded)}</b>; the other rows are what-if schedules simulated on "
            f"<b>{escape(comparison.device)}</b>.</p>" if recorded else "")
    executor = settings.get("executor", "simulator")
    if executor == "simulator":
        return note
    on = dict(settings.get("measured_on") or {})
    gpu = on.pop("gpu", "?")
    on.pop("executor", None)
    details = ", ".join(f"{escape(k)} {escape(v)}" for k, v in on.items())
    kernels = EXECUTOR_NOTES.get(str(executor), "")
    beside = (f" The simulator's prediction on device <b>{escape(comparison.device)}</b> sits "
              f"beside each row (<b>simulated_us</b>, <b>sim_error</b>)."
              if settings.get("simulated_beside") else "")
    return note + (f'<p class="note">Measured with executor <b>{escape(executor)}</b>'
            + (f" ({escape(kernels)})" if kernels else "")
            + f" on <b>{escape(gpu)}</b>" + (f": {details}" if details else "") + "."
            + beside + "</p>")


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
    best_ms = ""
    if best is not None and best in comparison.traces:
        best_ms = f" ({comparison.traces[best].makespan:,.1f} µs)"
    meta = (f"{len(graph)} ops · device <b>{escape(comparison.device)}</b> · mode "
            f"<b>{escape(comparison.mode)}</b> · {len(comparison.traces)} policies · best: "
            f"<b>{escape(best or 'none')}</b>{best_ms}")

    figures = [("wb-fig-makespan", makespan_figure(comparison.table, best))]
    if comparison.traces:
        figures.append(("wb-fig-timelines", timelines(
            dict(comparison.traces), title=f"timelines of {name} (shared time axis)")))
    n_main = len(figures)
    memory = _memory_section(comparison, best, name)
    if memory is not None:
        figures += memory[1]
    plots = [figure_html(fig, div_id) for div_id, fig in figures]

    dag_body = f'<div class="dag">{zoomable(dag_svg(graph, best_schedule))}</div>'
    if best_schedule is not None:
        dag_body = (f"<p>Coloured by the streams of <b>{escape(best)}</b>:</p>"
                    f"{stream_table(best_schedule)}{dag_body}")

    sections = [
        _section("how", "How to read this", f'<p class="note">{HOW_TO_READ}</p>'
                 f'<p class="note">{escape(accuracy_note(comparison.device))}</p>'),
        _section("results", "Results", measured_note(comparison) + unfinished_note(comparison)
                 + slower_note(comparison) + near_tie_note(comparison)
                 + table_html(comparison.table, css=False) + plots[0]
                 + barrier_note(comparison)),
        _section("timelines", "Timelines", "".join(plots[1:n_main]) or "<p>No traces.</p>"),
        *([_section("memory", "Memory", memory[0] + "".join(plots[n_main:]))]
          if memory is not None else []),
        _section("dag", "Graph", dag_body),
        _section("summary", "Graph summary", kv_table(graph.summary())),
        _section("settings", "Settings", kv_table(dict(comparison.settings or {}))),
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
