"""Figures of a :func:`workbench.orchestration.sweep.sweep` table: speedup against batch size, and
schedule
quality against the time the policy spent searching.

Two layers (STYLE.md R10): :func:`speedup_frame` and :func:`quality_frame` pick and order the rows
(pure pandas, testable without plotly); :func:`speedup_vs_batch` and :func:`quality_vs_search_time`
draw them and return plotly figures that are never shown.  A policy has the same colour in both
figures (:func:`policy_colors`).  Every name that reaches a legend or hover text is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from workbench.viz.figure import notebook_figure
from workbench.viz.style import LAYOUT_DEFAULTS, escape, legend_entries, legend_px, policy_color

MIN_SCHEDULE_MS = 1e-3  # a log axis cannot show 0 ms: faster policies are drawn at 1 µs


# ---------------------------------------------------------------------------------- data layer
def policy_colors(policies: Iterable[str]) -> dict[str, str]:
    """A colour per policy in first-seen order (the sweep's policy order).

    >>> policy_colors(["serial", "nnc", "serial"])
    {'serial': '#4e79a7', 'nnc': '#f28e2b'}
    """
    out: dict[str, str] = {}
    for p in policies:
        if p not in out:
            out[p] = policy_color(len(out))
    return out


def speedup_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Rows with a batch size, sorted by (device, graph, policy order, batch): one line each.

    Batch-independent rows (empty ``batch``) are left out.
    """
    _require(df, ("graph", "batch", "device", "policy", "speedup"))
    frame = df[df["batch"].notna()].copy()
    frame["_policy_order"] = frame["policy"].map(_order(df["policy"]))
    frame = frame.sort_values(["device", "graph", "_policy_order", "batch"], kind="stable")
    return frame.drop(columns="_policy_order").reset_index(drop=True)


def quality_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Rows with their ``schedule_ms`` clipped to :data:`MIN_SCHEDULE_MS` (for a log axis)."""
    _require(df, ("policy", "schedule_ms", "ratio_to_lb"))
    frame = df.copy()
    frame["schedule_ms"] = frame["schedule_ms"].clip(lower=MIN_SCHEDULE_MS)
    return frame.reset_index(drop=True)


def _require(df: pd.DataFrame, columns: Iterable[str]) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"the sweep table lacks columns {missing}")


def _order(values: Iterable[str]) -> dict[str, int]:
    return {v: i for i, v in enumerate(dict.fromkeys(values))}


# ---------------------------------------------------------------------------------- drawing
@notebook_figure
def speedup_vs_batch(df: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Speedup over ``serial`` against batch size: one line per policy, one panel per
    (device, graph) when the table has several.  Returns the figure; never calls ``.show()``."""
    frame = speedup_frame(df)
    devices = list(dict.fromkeys(frame["device"]))
    graphs = list(dict.fromkeys(frame["graph"]))
    colors = policy_colors(df["policy"])
    rows, cols = max(1, len(devices)), max(1, len(graphs))
    titles = [escape(f"{g} on {d}") for d in devices for g in graphs] if rows * cols > 1 else None
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, shared_yaxes=True,
                        horizontal_spacing=0.06, vertical_spacing=0.12)
    shown: set[str] = set()
    for (device, graph, policy), part in frame.groupby(["device", "graph", "policy"], sort=False):
        r, c = devices.index(device) + 1, graphs.index(graph) + 1
        name = escape(policy)
        fig.add_trace(go.Scatter(
            x=part["batch"].astype(float).to_numpy(), y=part["speedup"].to_numpy(),
            mode="lines+markers", name=name, legendgroup=name, showlegend=policy not in shown,
            line={"color": colors[policy], "width": 2},
            customdata=[[name, escape(graph), escape(device)]] * len(part),
            hovertemplate=("<b>%{customdata[0]}</b> on %{customdata[1]} (%{customdata[2]})"
                           "<br>batch %{x}<br>speedup %{y:.3f}×<extra></extra>"),
        ), row=r, col=c)
        shown.add(policy)
    fig.update_layout(**LAYOUT_DEFAULTS)
    fig.update_layout(title=title if title is not None else "speedup over serial vs batch size",
                      height=max(360, 300 * rows) + legend_px(legend_entries(fig)),
                      hovermode="closest")
    fig.update_xaxes(title="batch size")
    fig.update_yaxes(title="speedup (×)", col=1)
    return fig


@notebook_figure
def quality_vs_search_time(df: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Makespan / lower bound against scheduling time (log axis): one colour per policy, one
    point per (graph, batch, device).  Returns the figure; never calls ``.show()``."""
    frame = quality_frame(df)
    colors = policy_colors(df["policy"])
    fig = go.Figure()
    for policy, part in frame.groupby("policy", sort=False):
        name = escape(policy)
        info = [[name, escape(g), "" if pd.isna(b) else f"batch {int(b)}", escape(d)]
                for g, b, d in zip(part.get("graph", [""] * len(part)),
                                   part.get("batch", [None] * len(part)),
                                   part.get("device", [""] * len(part)), strict=True)]
        fig.add_trace(go.Scatter(
            x=part["schedule_ms"].to_numpy(), y=part["ratio_to_lb"].to_numpy(), mode="markers",
            name=name, marker={"color": colors[policy], "size": 9, "opacity": 0.85},
            customdata=info,
            hovertemplate=("<b>%{customdata[0]}</b><br>%{customdata[1]} %{customdata[2]} "
                           "on %{customdata[3]}<br>scheduling %{x:.3g} ms"
                           "<br>makespan / lower bound %{y:.3f}<extra></extra>"),
        ))
    fig.update_layout(**LAYOUT_DEFAULTS)
    fig.update_layout(title=title if title is not None else
                      "schedule quality vs search time (lower is better)",
                      height=400 + legend_px(legend_entries(fig)), hovermode="closest")
    fig.update_xaxes(type="log", title="scheduling time (ms, log)")
    fig.update_yaxes(title="makespan / lower bound")
    return fig
