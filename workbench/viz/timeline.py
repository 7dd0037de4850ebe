"""Gantt timelines of a :class:`~workbench.trace.Trace`: one row per stream on a linear µs axis.

Two layers (STYLE.md R10): the pure data functions :func:`timeline_frame`, :func:`sync_frame` and
:func:`barrier_times` compute what is drawn (testable without plotly), and :func:`timeline` /
:func:`timelines` draw it.  Bars are horizontal ``go.Bar(base=start, x=duration)`` on a linear axis,
never ``px.timeline`` (which forces a date axis and collapses µs values; ecosystem notes §2.2).

Every name that reaches hover text, legends or titles goes through
:func:`~workbench.viz.style.escape`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from workbench.trace import Trace
from workbench.viz.style import (
    BARRIER_COLOR,
    LAYOUT_DEFAULTS,
    SYNC_COLOR,
    TIME_AXIS_TITLE,
    escape,
    kind_colors,
    stream_color,
    stream_label,
)

COLOR_BY = ("kind", "stream")
_ROW_PX = 28      # height of one stream row
_PANEL_PX = 50    # fixed height of a panel (axis, padding)

FRAME_COLUMNS = ("op", "kind", "stream", "stream_id", "start_us", "end_us", "duration_us", "phase",
                 "hover")


# ---------------------------------------------------------------------------------- data layer
def _fmt_count(value: Any) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return escape(value)
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.2f} {unit}"
    return f"{v:g}"


def timeline_frame(trace: Trace) -> pd.DataFrame:
    """One row per bar (per op of the trace), in the trace's row order.

    Columns: ``op``, ``kind`` (raw names, for analysis), ``stream`` (the row label, ``"stream 0"``),
    ``stream_id``, ``start_us``, ``end_us``, ``duration_us``, ``phase`` and ``hover`` (the hover
    text, names HTML-escaped).  Pure: no plotting library is touched.
    """
    df = trace.df
    n = len(df)
    kinds = df["kind"].astype(str).tolist() if "kind" in df else ["op"] * n
    start = df["start_us"].astype(float).tolist()
    end = df["end_us"].astype(float).tolist()
    flops = df["flops"].tolist() if "flops" in df else [0.0] * n
    nbytes = df["bytes"].tolist() if "bytes" in df else [0] * n
    hover = [
        f"<b>{escape(op)}</b><br>kind: {escape(kind)}<br>{escape(stream_label(s))}"
        f"<br>start: {s0:.2f} µs<br>end: {e0:.2f} µs<br>duration: {e0 - s0:.2f} µs"
        f"<br>flops: {_fmt_count(f)}<br>bytes: {_fmt_count(b)}"
        for op, kind, s, s0, e0, f, b in zip(df["op"], kinds, df["stream"], start, end, flops,
                                              nbytes, strict=True)
    ]
    if "iteration" in df and "parent" in df:  # control flow: which iteration of which loop
        hover = [h if k < 0 else f"{h}<br>iteration {k} of {escape(p)}"
                 for h, k, p in zip(hover, df["iteration"], df["parent"], strict=True)]
    return pd.DataFrame({
        "op": df["op"].astype(str).tolist(),
        "kind": kinds,
        "stream": [stream_label(s) for s in df["stream"]],
        "stream_id": df["stream"].tolist(),
        "start_us": start,
        "end_us": end,
        "duration_us": [e - s for s, e in zip(start, end, strict=True)],
        "phase": df["phase"].astype(int).tolist() if "phase" in df else [0] * n,
        "hover": hover,
    }, columns=list(FRAME_COLUMNS))


def sync_frame(trace: Trace) -> pd.DataFrame:
    """One row per sync ``(a, b)`` of ``trace.schedule``: from the end of ``a`` on its stream row to
    the start of ``b`` on its row.  Columns ``a, b, stream_a, stream_b, x0_us, x1_us, hover``.
    Empty when the trace has no schedule (e.g. an imported profile)."""
    cols = ["a", "b", "stream_a", "stream_b", "x0_us", "x1_us", "hover"]
    schedule = getattr(trace, "schedule", None)
    if schedule is None or not getattr(schedule, "syncs", ()):
        return pd.DataFrame(columns=cols)
    df = trace.df
    start = dict(zip(df["op"], df["start_us"].astype(float), strict=True))
    end = dict(zip(df["op"], df["end_us"].astype(float), strict=True))
    stream = dict(zip(df["op"], df["stream"], strict=True))
    rows = []
    for a, b in schedule.syncs:
        if a not in end or b not in start:
            continue
        rows.append((a, b, stream_label(stream[a]), stream_label(stream[b]), end[a], start[b],
                     f"sync: {escape(a)} → {escape(b)}"))
    return pd.DataFrame(rows, columns=cols)


def barrier_times(trace: Trace) -> list[float]:
    """Time of each barrier: the moment every op issued before it has ended (µs).

    Read from the ``phase`` column (number of barriers issued before each op): barrier ``k`` is at
    ``max(end_us)`` over the ops with ``phase < k``.  Empty when the column is missing.
    """
    df = trace.df
    if "phase" not in df or not len(df):
        return []
    top = int(df["phase"].max())
    out = []
    for k in range(1, top + 1):
        before = df.loc[df["phase"] < k, "end_us"]
        if len(before):
            out.append(float(before.max()))
    return out


# ---------------------------------------------------------------------------------- drawing
def _check_color_by(color_by: str) -> None:
    if color_by not in COLOR_BY:
        raise ValueError(f"unknown color_by {color_by!r} (known: {', '.join(COLOR_BY)})")


def _stream_rows(frame: pd.DataFrame) -> list[str]:
    ids = sorted(set(frame["stream_id"]), key=lambda s: (str(type(s)), s))
    return [stream_label(s) for s in ids]


def _add_trace(fig: go.Figure, trace: Trace, *, colors: Mapping[str, str], color_by: str,
               show_syncs: bool, legend_seen: set[str], row: int | None = None) -> None:
    """Draw one trace's bars, syncs and barriers into ``fig`` (into subplot ``row`` if given)."""
    where: dict[str, Any] = {} if row is None else {"row": row, "col": 1}
    frame = timeline_frame(trace)
    key = "kind" if color_by == "kind" else "stream_id"
    for value, part in frame.groupby(key, sort=False):
        name = str(value) if color_by == "kind" else stream_label(value)
        color = colors[str(value)] if color_by == "kind" else stream_color(int(value))
        fig.add_trace(go.Bar(
            orientation="h", base=part["start_us"].to_numpy(), x=part["duration_us"].to_numpy(),
            y=part["stream"].tolist(), hovertext=part["hover"].tolist(), hoverinfo="text",
            name=escape(name), legendgroup=escape(name), showlegend=name not in legend_seen,
            marker={"color": color, "line": {"color": "white", "width": 0.5}}, width=0.8,
        ), **where)
        legend_seen.add(name)
    if show_syncs:
        syncs = sync_frame(trace)
        if len(syncs):
            xs: list[float | None] = []
            ys: list[str | None] = []
            texts: list[str | None] = []
            for r in syncs.itertuples(index=False):
                xs += [r.x0_us, r.x1_us, None]
                ys += [r.stream_a, r.stream_b, None]
                texts += [r.hover, r.hover, None]
            n = len(syncs)
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines+markers", hovertext=texts, hoverinfo="text",
                line={"color": SYNC_COLOR, "width": 1}, name="sync", legendgroup="sync",
                showlegend="sync" not in legend_seen,
                marker={"symbol": ["circle", "arrow", "circle"] * n, "size": [3, 9, 0] * n,
                        "angleref": "previous", "color": SYNC_COLOR},
            ), **where)
            legend_seen.add("sync")
    for t in barrier_times(trace):
        fig.add_vline(x=t, line={"dash": "dash", "color": BARRIER_COLOR, "width": 1}, **where)
    rows = _stream_rows(frame)
    fig.update_yaxes(categoryorder="array", categoryarray=rows, autorange="reversed", **where)


def _default_title(trace: Trace) -> str:
    return (f"{escape(trace.policy)} on {escape(trace.graph.name)}: {trace.makespan:.1f} µs "
            f"({escape(trace.device)}, {escape(trace.mode)})")


def _kind_colors_for(traces: Sequence[Trace]) -> dict[str, str]:
    kinds: list[str] = []
    for t in traces:
        kinds += [op.kind for op in t.graph.ops] if t.graph is not None else []
        if "kind" in t.df:
            kinds += t.df["kind"].astype(str).tolist()
    return kind_colors(kinds)


def timeline(trace: Trace, *, title: str | None = None,
             x_range: tuple[float, float] | None = None, show_syncs: bool = True,
             color_by: str = "kind") -> go.Figure:
    """A Gantt chart of ``trace``: one row per stream, one bar per op on a linear µs axis.

    ``color_by="kind"`` (default) colours bars by op kind, ``"stream"`` by stream (the colours of
    :func:`~workbench.viz.style.stream_color`).  Barriers are dashed vertical lines at the moment
    every op issued before them has ended; syncs (``show_syncs``) are thin red arrows from the end
    of the recording op to the start of the waiting op.  ``title`` is used as given (escape it
    yourself if it holds user names).  Returns the figure; never calls ``.show()``.
    """
    _check_color_by(color_by)
    fig = go.Figure()
    _add_trace(fig, trace, colors=_kind_colors_for([trace]), color_by=color_by,
               show_syncs=show_syncs, legend_seen=set())
    n_streams = max(1, trace.df["stream"].nunique())
    fig.update_layout(**LAYOUT_DEFAULTS)
    fig.update_layout(title=title if title is not None else _default_title(trace),
                      barmode="overlay", height=140 + _PANEL_PX + _ROW_PX * n_streams)
    fig.update_xaxes(type="linear", title=TIME_AXIS_TITLE, rangemode="tozero")
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    return fig


def timelines(traces: Sequence[Trace] | Mapping[str, Trace], *, shared_x: bool = True,
              show_syncs: bool = True, color_by: str = "kind",
              title: str | None = None) -> go.Figure:
    """One timeline panel per trace, stacked on a shared time axis (``shared_x``).

    ``traces`` is a sequence (panels titled by each trace's policy) or a mapping label → trace.
    Each panel is titled "<label>: <makespan> µs"; colours and legend entries are shared.
    """
    _check_color_by(color_by)
    items = list(traces.items()) if isinstance(traces, Mapping) else [
        (t.policy, t) for t in traces]
    if not items:
        raise ValueError("timelines() needs at least one trace")
    heights = [_PANEL_PX + _ROW_PX * max(1, t.df["stream"].nunique()) for _, t in items]
    gap_px = 60
    total = sum(heights) + gap_px * (len(items) - 1)
    fig = make_subplots(
        rows=len(items), cols=1, shared_xaxes=shared_x,
        vertical_spacing=gap_px / total if len(items) > 1 else 0.0,
        row_heights=[h / sum(heights) for h in heights],
        subplot_titles=[f"{escape(label)}: {t.makespan:.1f} µs" for label, t in items],
    )
    colors = _kind_colors_for([t for _, t in items])
    seen: set[str] = set()
    for i, (_, t) in enumerate(items, start=1):
        _add_trace(fig, t, colors=colors, color_by=color_by, show_syncs=show_syncs,
                   legend_seen=seen, row=i)
    fig.update_layout(**LAYOUT_DEFAULTS)
    fig.update_layout(barmode="overlay", height=total + 140,
                      title=title if title is not None else "timelines")
    fig.update_xaxes(type="linear", rangemode="tozero")
    fig.update_xaxes(title=TIME_AXIS_TITLE, row=len(items), col=1)
    if not shared_x:
        fig.update_xaxes(title=TIME_AXIS_TITLE)
    return fig
