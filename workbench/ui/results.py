"""What the Workbench app shows: merging per-policy comparisons and rendering the result tabs.

Everything here is a plain function of a :class:`~workbench.orchestration.compare.Comparison` (HTML
strings,
display bundles), so the app's views are testable without a browser.  Every name from a graph
goes through :func:`~workbench.viz.style.escape`.
"""

from __future__ import annotations

import base64
import importlib
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pandas as pd
import plotly.graph_objects as go

from workbench.orchestration.compare import BASELINE, Comparison
from workbench.viz.dag import dag_svg
from workbench.viz.display import figure_bundle, stream_table
from workbench.viz.style import escape
from workbench.viz.tables import comparison_styler, ranking
from workbench.viz.tables import table_html as ranking_html

SELECTED_ROW_CSS = "box-shadow: inset 0 2px 0 #4e79a7, inset 0 -2px 0 #4e79a7"
DATA_URI_MAX_BYTES = 12 << 20  # reports up to this size get a download link with a data: URI
_BOX = 'style="font-family: Helvetica, Arial, sans-serif; font-size: 13px"'


# ------------------------------------------------------------------------------------ merging
def merge(parts: Sequence[Comparison]) -> Comparison:
    """One Comparison from several ``compare(graph, [policy])`` results on the same graph.

    Each part holds the baseline (``serial``, which ``compare`` always runs) and one policy; the
    baseline is taken from the first part and listed first, as ``compare`` does.  The simulator is
    deterministic, so the merged table equals ``compare(graph, all_policies).table`` apart from the
    measured ``schedule_ms``.
    """
    if not parts:
        raise ValueError("merge() needs at least one comparison")
    first = parts[0]
    schedules, traces, plans, pools = {}, {}, {}, {}
    rows: list[pd.DataFrame] = []
    options: dict[str, Any] = {}
    for i, part in enumerate(parts):
        for name in part.schedules:
            if name == BASELINE and i > 0:
                continue
            if name in schedules:
                continue
            schedules[name], traces[name] = part.schedules[name], part.traces[name]
            if name in part.memory_plans:
                plans[name] = part.memory_plans[name]
            if name in part.pools:
                pools[name] = part.pools[name]
            rows.append(part.table[part.table["policy"] == name])
        options.update(part.settings.get("options", {}))
    table = pd.concat(rows, ignore_index=True)
    settings = {**first.settings, "policies": list(schedules), "options": options}
    return Comparison(first.graph, first.device, first.mode, schedules, traces, table, settings,
                      first.lower_bounds, plans, pools)


# ------------------------------------------------------------------------------------ views
def select_options(comparison: Comparison) -> list[tuple[str, str]]:
    """``(label, policy)`` pairs for the policy selector: name, makespan and speedup, in the
    order of the ranking table (smallest makespan first)."""
    out = []
    for row in ranking(comparison.table).itertuples(index=False):
        speedup = getattr(row, "speedup", float("nan"))
        out.append((f"{row.policy} — {row.makespan_us:,.1f} µs ({speedup:.2f}×)", str(row.policy)))
    return out


def table_html(comparison: Comparison, selected: str | None = None) -> str:
    """The ranking table (best row green, ``selected`` row outlined; essential columns first, the
    others behind the "all columns" toggle), scrolling when wide."""
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
            f"<b>{escape(comparison.best or 'none')}</b>")
    return f'<div {_BOX}><p>{head}</p>{body}</div>'


def dag_html(comparison: Comparison, policy: str) -> str:
    """The DAG coloured by ``policy``'s streams, with its stream table (Graphviz SVG, or the
    built-in drawing when ``dot`` is missing)."""
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
            f"{note}{stream_table(schedule)}<div style=\"overflow:auto; max-height:900px\">"
            f"{svg}</div></div>")


def show_figure(out: widgets.Output, fig: go.Figure) -> None:
    """Replace the content of ``out`` with ``fig`` (plotly JSON: rendered by the plotly extension
    in JupyterLab and Voilà; no plotly.js travels with the widget state)."""
    out.outputs = ({"output_type": "display_data", "metadata": {},
                    "data": figure_bundle(fig, html=False)},)


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
