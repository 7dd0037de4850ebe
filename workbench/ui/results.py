"""What the Workbench app shows: the result tabs of one comparison.

Everything here is a plain function of a :class:`~workbench.orchestration.compare.Comparison`
(HTML strings, display bundles), so the app's views are testable without a browser.  Every name
from a graph goes through :func:`~workbench.viz.style.escape`.
"""

from __future__ import annotations

import base64
import importlib
import warnings
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pandas as pd
import plotly.graph_objects as go

from workbench.orchestration.compare import Comparison
from workbench.orchestration.why import why_html
from workbench.viz.dag import dag_svg
from workbench.viz.display import figure_bundle, stream_table
from workbench.viz.memory_curve import memory_curve
from workbench.viz.memory_peaks import memory_peaks
from workbench.viz.policy_timelines import policy_timelines
from workbench.viz.style import escape
from workbench.viz.tables import comparison_styler, ranking
from workbench.viz.tables import table_html as ranking_html

SELECTED_ROW_CSS = "box-shadow: inset 0 2px 0 #4e79a7, inset 0 -2px 0 #4e79a7"
DATA_URI_MAX_BYTES = 12 << 20  # reports up to this size get a download link with a data: URI
_BOX = 'style="font-family: Helvetica, Arial, sans-serif; font-size: 13px"'


# ------------------------------------------------------------------------------------ views
def select_options(comparison: Comparison) -> list[tuple[str, str]]:
    """``(label, policy)`` pairs for the policy selector: name, makespan and speedup, in the
    order of the ranking table (smallest makespan first); a row without a schedule (its stage
    budget ran out: the table says so in its status) has nothing to select."""
    out = []
    for row in ranking(comparison.table).itertuples(index=False):
        if row.policy not in comparison.schedules:
            continue
        speedup = getattr(row, "speedup", float("nan"))
        out.append((f"{row.policy} — {row.makespan_us:,.1f} µs ({speedup:.2f}×)", str(row.policy)))
    return out


def ranked_traces(comparison: Comparison) -> dict[str, Any]:
    """The comparison's traces in the ranking table's order (fastest first), then any trace
    without a row: the order of every figure of the app, as of the report's."""
    traces = dict(comparison.traces)
    order = [str(p) for p in ranking(comparison.table)["policy"] if str(p) in traces]
    return {p: traces[p] for p in [*order, *(p for p in traces if p not in order)]}


def timelines_figure(comparison: Comparison, selected: str) -> go.Figure:
    """The Timelines tab: the report's figure (:func:`~workbench.viz.policy_timelines.
    policy_timelines`: rank order, identical timelines in one group, a busy track per group)
    with ``selected``'s group marked, opening on it beside the fastest on one time scale (all
    groups when it is the fastest); the menu has every other view."""
    return policy_timelines(ranked_traces(comparison), selected=selected, view="compare",
                            title=f"timelines of {escape(comparison.graph.name)}")


def memory_figures(comparison: Comparison, selected: str) -> list[go.Figure]:
    """The Memory tab's charts above the plan: the peak per policy as bars (rank order, the
    best green) and ``selected``'s in-use and pool-reserved curves (the others in its menu)."""
    traces = ranked_traces(comparison)
    if not traces:
        return []
    shown = selected if selected in traces else next(iter(traces))
    return [
        memory_peaks(traces, best=comparison.best_policies, plans=comparison.memory_plans,
                     pools=comparison.pools),
        memory_curve(traces, pools=comparison.pools, selected=shown,
                     title=f"live memory of {escape(comparison.graph.name)}"),
    ]


def table_html(comparison: Comparison, selected: str | None = None) -> str:
    """The ranking table (best row green, ``selected`` row outlined; essential columns first, the
    others behind the "all columns" toggle), scrolling when wide, under the best in words
    (:attr:`~workbench.orchestration.comparison.Comparison.best_text`) and the near-tie note
    (:func:`tie_note_html`), as the CLI and the report say them."""
    styled = comparison_styler(comparison.table)
    if not isinstance(styled, str) and selected is not None:
        policies = comparison.table["policy"]

        def outline(row: pd.Series) -> list[str]:
            hit = policies.loc[row.name] == selected
            return [SELECTED_ROW_CSS if hit else ""] * len(row)

        styled = styled.apply(outline, axis=1)
    body = ranking_html(comparison.table, styler=styled)
    head = (f"<b>{escape(comparison.graph.name)}</b>: {len(comparison.graph)} ops on "
            f"{escape(comparison.device)} ({escape(comparison.mode)}), best "
            f"<b>{escape(comparison.best_text)}</b>")
    why = why_html(comparison).replace('class="wb-why"', f'class="wb-why" style="{WHY_CSS}"')
    return f'<div {_BOX}><p>{head}</p>{tie_note_html(comparison)}{body}{why}</div>'


#: The "why" box's style inline (the app's widgets carry no report stylesheet).
WHY_CSS = ("background:#f3f8f1; border-left:4px solid #59a14f; padding:6px 12px; margin:8px 0; "
           "font-size:13px")


def best_line(comparison: Comparison) -> str:
    """The best in a few words for the status line: ``"best nnc"``, or with the policies the
    comparison cannot tell apart from it (:attr:`Comparison.ties`) ``"best nnc, not told apart
    from min_streams (see the note in Table)"``."""
    best = comparison.best
    if best is None:
        return "no policy was executed"
    others = [p for p in comparison.ties if p != best]
    if not others:
        return f"best {best}"
    return f"best {best}, not told apart from {', '.join(others)} (see the note in Table)"


def tie_note_html(comparison: Comparison) -> str:
    """The note on the policies the comparison cannot order against the best
    (:attr:`~workbench.orchestration.comparison.Comparison.near_tie_text`: the simulator's near
    ties, or measurement noise), as the CLI prints it under its ``best:`` line and the report
    shows it; empty when the best stands alone."""
    text = comparison.near_tie_text if comparison.best is not None else ""
    return (f'<p class="wb-tie-note" style="margin:4px 0; color:#555">Note: {escape(text)}</p>'
            if text else "")


def dag_html(comparison: Comparison, policy: str) -> str:
    """The DAG coloured by ``policy``'s streams, with its stream table (Graphviz SVG, or the
    built-in drawing when ``dot`` is missing).  The app's style sheet
    (:mod:`workbench.ui.css`) wraps the launch order and scales the drawing to the pane."""
    schedule = comparison.schedules[policy]
    # the module, not the re-exported function ``workbench.viz.dag``
    have_dot = importlib.import_module("workbench.viz.dag")._have_dot()
    note = "" if have_dot else (
        "<p><i>Graphviz 'dot' not found: built-in drawing "
        "(apt-get install graphviz for the Graphviz view).</i></p>")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        svg = dag_svg(comparison.graph, schedule)
    return (f"<div {_BOX}><p>Streams of <b>{escape(policy)}</b> (red edges: syncs)</p>"
            f'{note}<div class="wb-hscroll">{stream_table(schedule)}</div>'
            f"<div style=\"overflow:auto; max-height:900px\">"
            f"{svg}</div></div>")


def show_figure(out: widgets.Output, fig: go.Figure, *, caption: str = "") -> None:
    """Replace the content of ``out`` with ``fig`` (plotly JSON: rendered by the plotly extension
    in JupyterLab and Voilà; no plotly.js travels with the widget state) and, below it, the
    ``caption`` (HTML, already escaped: a line that wraps where a plotly title would be cut)."""
    figure = {"output_type": "display_data", "metadata": {},
              "data": figure_bundle(fig, html=False)}
    if not caption:
        out.outputs = (figure,)
        return
    text = f'<div class="wb-caption" {_BOX}>{caption}</div>'
    out.outputs = (figure, {"output_type": "display_data", "metadata": {},
                            "data": {"text/html": text, "text/plain": caption}})


def show_figures(out: widgets.Output, figures: list[go.Figure]) -> None:
    """Replace the content of ``out`` with ``figures``, one under the other (plotly JSON)."""
    out.outputs = tuple({"output_type": "display_data", "metadata": {},
                         "data": figure_bundle(fig, html=False)} for fig in figures)


def show_html(out: widgets.Output, html: str) -> None:
    """Replace the content of ``out`` with an HTML message."""
    out.outputs = ({"output_type": "display_data", "metadata": {},
                    "data": {"text/html": html, "text/plain": html}},)


def report_link_html(path: Path, *, data_uri_max: int = DATA_URI_MAX_BYTES) -> str:
    """Where the report was written and, for files up to ``data_uri_max`` bytes, a download link
    carrying the file as a ``data:`` URI (works in JupyterLab and Voilà alike, offline)."""
    size = path.stat().st_size
    text = (f"Wrote <code>{escape(path.resolve())}</code> ({size / 2**20:,.1f} MiB; open it in "
            f"any browser, it works offline).")
    if size <= data_uri_max:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        text += (f' <a download="{escape(path.name)}" href="data:text/html;base64,{data}" '
                 f'class="wb-download">Download {escape(path.name)}</a>')
    return f"<div {_BOX}>{text}</div>"
