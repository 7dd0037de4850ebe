"""Gantt timelines of a :class:`~workbench.values.trace.Trace`: one row per stream on a linear µs
axis.

Two layers (STYLE.md R10): the pure data functions :func:`timeline_frame`, :func:`sync_frame` and
:func:`barrier_times` compute what is drawn (testable without plotly), and :func:`timeline` /
:func:`timelines` draw it.  Bars are horizontal ``go.Bar(base=start, x=duration)`` on a linear axis,
never ``px.timeline`` (which forces a date axis and collapses µs values; ecosystem notes §2.2).

At scale: all barriers of a panel are one dashed line trace (on a hidden ``[0, 1]`` y axis laid
over the panel, so each line spans every row), not one shape each; and a trace of more than
``max_bars`` ops or ``max_rows`` streams is drawn aggregated (:mod:`workbench.viz.utilisation`:
per stream row and time bin, the fraction busy), without sync arrows.

Every name that reaches hover text, legends or titles goes through
:func:`~workbench.viz.style.escape`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from workbench.values.trace import Trace
from workbench.viz.figure import notebook_figure
from workbench.viz.style import (
    BARRIER_COLOR,
    LAYOUT_DEFAULTS,
    LEGEND_BELOW,
    SYNC_COLOR,
    TIME_AXIS_TITLE,
    escape,
    kind_colors,
    legend_entries,
    legend_px,
    stream_color,
    stream_label,
)
from workbench.viz.utilisation import stream_groups, utilisation_bars, utilisation_frame

COLOR_BY = ("kind", "stream")
_ROW_PX = 28      # height of one stream row
_PANEL_PX = 50    # fixed height of a panel (axis, padding)
MAX_BARS = 5_000  # a trace with more ops than this is drawn aggregated (per time bin)
MAX_ROWS = 48     # ... and so is one with more streams (consecutive streams share a row)
MAX_SYNC_ARROWS = 300  # more syncs than this are drawn binned (one marker per stream and bin)
SYNC_BINS = 120        # time bins of the binned syncs

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


def _why_html(why: Any) -> str:
    """The cost model's reasons (``Trace.df["why"]``: one clause per kernel), one per line."""
    if not isinstance(why, str) or not why:
        return ""
    return "<br>" + "<br>".join(escape(part) for part in why.split("; "))


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
    alone = df["alone_us"].tolist() if "alone_us" in df else [float("nan")] * n
    why = [_why_html(w) for w in df["why"]] if "why" in df else [""] * n
    hover = [
        f"<b>{escape(op)}</b><br>kind: {escape(kind)}<br>{escape(stream_label(s))}"
        f"<br>start: {s0:.2f} µs<br>end: {e0:.2f} µs<br>duration: {e0 - s0:.2f} µs"
        + (f" (alone {a:.2f} µs)" if a == a else "")
        + f"<br>flops: {_fmt_count(f)}<br>bytes: {_fmt_count(b)}{w}"
        for op, kind, s, s0, e0, a, f, b, w in zip(df["op"], kinds, df["stream"], start, end,
                                                    alone, flops, nbytes, why, strict=True)
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
    Complexity: O(n + barriers).
    """
    df = trace.df
    if "phase" not in df or not len(df):
        return []
    top = int(df["phase"].max())
    # the latest end among the ops of phases 0..k-1: a running maximum over the phases, O(n)
    per_phase = df.groupby("phase")["end_us"].max().reindex(range(top)).astype(float)
    running = per_phase.cummax().ffill().tolist()
    return [float(t) for t in running if t == t]


# ---------------------------------------------------------------------------------- drawing
def _check_color_by(color_by: str) -> None:
    if color_by not in COLOR_BY:
        raise ValueError(f"unknown color_by {color_by!r} (known: {', '.join(COLOR_BY)})")


def _stream_rows(frame: pd.DataFrame) -> list[str]:
    ids = sorted(set(frame["stream_id"]), key=lambda s: (str(type(s)), s))
    return [stream_label(s) for s in ids]


def aggregated(trace: Trace, max_bars: int = MAX_BARS, max_rows: int = MAX_ROWS) -> bool:
    """True when :func:`timeline` draws ``trace`` binned rather than bar by bar."""
    return len(trace.df) > max_bars or trace.df["stream"].nunique() > max_rows


def _n_rows(trace: Trace, max_bars: int, max_rows: int) -> int:
    if aggregated(trace, max_bars, max_rows):
        return max(1, len(stream_groups(trace.df["stream"].tolist(), max_rows)))
    return max(1, trace.df["stream"].nunique())


def _add_trace(fig: go.Figure, trace: Trace, *, colors: Mapping[str, str], color_by: str,
               show_syncs: bool, legend_seen: set[str], row: int | None = None,
               max_bars: int = MAX_BARS, max_rows: int = MAX_ROWS) -> None:
    """Draw one trace's bars, syncs and barriers into ``fig`` (into subplot ``row`` if given)."""
    where: dict[str, Any] = {} if row is None else {"row": row, "col": 1}
    if aggregated(trace, max_bars, max_rows):
        cells = utilisation_frame(trace, max_rows=max_rows)
        for part in utilisation_bars(cells, show_scale="busy" not in legend_seen):
            fig.add_trace(part, **where)
        legend_seen.add("busy")
        rows = [label for label, _ in stream_groups(trace.df["stream"].tolist(), max_rows)]
    else:
        rows = _add_bars(fig, trace, colors=colors, color_by=color_by, where=where,
                         legend_seen=legend_seen)
        if show_syncs:
            _add_syncs(fig, trace, where=where, legend_seen=legend_seen)
    fig.update_yaxes(categoryorder="array", categoryarray=rows, autorange="reversed", **where)
    _add_barriers(fig, barrier_times(trace), row=row, legend_seen=legend_seen)


def _add_bars(fig: go.Figure, trace: Trace, *, colors: Mapping[str, str], color_by: str,
              where: dict[str, Any], legend_seen: set[str]) -> list[str]:
    """One bar per op, one ``go.Bar`` per colour; returns the stream rows."""
    frame = timeline_frame(trace)
    key = "kind" if color_by == "kind" else "stream_id"
    for value, part in frame.groupby(key, sort=False):
        name = str(value) if color_by == "kind" else stream_label(value)
        color = colors[str(value)] if color_by == "kind" else stream_color(int(value))
        fig.add_trace(go.Bar(  # numpy arrays: plotly validates lists element by element
            orientation="h", base=part["start_us"].to_numpy(), x=part["duration_us"].to_numpy(),
            y=part["stream"].to_numpy(dtype=str), hovertext=part["hover"].to_numpy(dtype=str),
            hoverinfo="text",
            name=escape(name), legendgroup=escape(name), showlegend=name not in legend_seen,
            marker={"color": color, "line": {"color": "white", "width": 0.5}}, width=0.8,
        ), **where)
        legend_seen.add(name)
    return _stream_rows(frame)


def _add_syncs(fig: go.Figure, trace: Trace, *, where: dict[str, Any],
               legend_seen: set[str]) -> None:
    syncs = sync_frame(trace)
    if not len(syncs):
        return
    if len(syncs) > MAX_SYNC_ARROWS:   # a thousand arrows paint a solid block: aggregate
        _add_binned_syncs(fig, syncs, trace.makespan, where=where, legend_seen=legend_seen)
        return
    xs: list[float | None] = []
    ys: list[str | None] = []
    texts: list[str | None] = []
    for r in syncs.itertuples(index=False):
        xs += [r.x0_us, r.x1_us, None]
        ys += [r.stream_a, r.stream_b, None]
        texts += [r.hover, r.hover, None]
    n = len(syncs)
    fig.add_trace(go.Scatter(  # numpy arrays: plotly validates lists element by element
        x=np.array(xs, dtype=float), y=np.array(ys, dtype=object),
        hovertext=np.array(texts, dtype=object), mode="lines+markers", hoverinfo="text",
        line={"color": SYNC_COLOR, "width": 1}, name="sync", legendgroup="sync",
        showlegend="sync" not in legend_seen,
        marker={"symbol": np.tile(np.array(["circle", "arrow", "circle"]), n),
                "size": np.tile(np.array([3, 9, 0]), n), "angleref": "previous",
                "color": SYNC_COLOR},
    ), **where)
    legend_seen.add("sync")


def _add_binned_syncs(fig: go.Figure, syncs: Any, makespan: float, *, where: dict[str, Any],
                      legend_seen: set[str]) -> None:
    """Syncs as one marker per (waiting stream, time bin): :data:`SYNC_BINS` bins over the
    makespan, the marker's area growing with the count, the count and the streams waited on in
    its hover.  O(syncs)."""
    width = max(makespan, 1e-9) / SYNC_BINS
    cells: dict[tuple[str, int], list[Any]] = {}
    for r in syncs.itertuples(index=False):
        cells.setdefault((r.stream_b, min(SYNC_BINS - 1, int(r.x1_us // width))), []).append(r)
    xs, ys, sizes, texts = [], [], [], []
    for (stream, k), rows in cells.items():
        xs.append(sum(r.x1_us for r in rows) / len(rows))
        ys.append(stream)
        sizes.append(5 + 2.5 * len(rows) ** 0.5)
        waited = sorted({str(r.stream_a) for r in rows})   # labels: escaped already
        texts.append(f"<b>{len(rows)} sync(s)</b> into {stream}<br>"
                     f"{k * width:,.1f}–{(k + 1) * width:,.1f} µs<br>waiting on: "
                     + ", ".join(waited[:8]) + (" …" if len(waited) > 8 else ""))
    fig.add_trace(go.Scatter(
        x=np.array(xs, dtype=float), y=np.array(ys, dtype=object),
        hovertext=np.array(texts, dtype=object), hoverinfo="text", mode="markers",
        name=f"syncs ({len(syncs):,}, binned)", legendgroup="sync",
        showlegend="sync" not in legend_seen,
        marker={"symbol": "triangle-right", "size": np.array(sizes), "color": SYNC_COLOR,
                "opacity": 0.7, "line": {"width": 0}},
    ), **where)
    legend_seen.add("sync")


def _add_barriers(fig: go.Figure, times: Sequence[float], *, row: int | None,
                  legend_seen: set[str]) -> None:
    """All barriers of a panel as one dashed line trace on a hidden y axis ``[0, 1]`` laid over
    the panel's own (category) y axis, so each line spans all rows and hovers with its time."""
    if not times:
        return
    sub = fig.get_subplot(row, 1) if row is not None else None
    x_name = sub.xaxis.plotly_name if sub is not None else "xaxis"
    y_name = sub.yaxis.plotly_name if sub is not None else "yaxis"
    taken = [int(k[5:] or 1) for k in fig.layout.to_plotly_json() if k.startswith("yaxis")]
    number = max([1, *taken]) + 1
    fig.layout[f"yaxis{number}"] = {
        "overlaying": "y" + y_name[5:], "anchor": "x" + x_name[5:], "range": [0, 1],
        "visible": False, "fixedrange": True}
    xs: list[float | None] = []
    ys: list[float | None] = []
    texts: list[str | None] = []
    for k, t in enumerate(times, start=1):
        xs += [t, t, None]
        ys += [0.0, 1.0, None]
        texts += [f"barrier {k}: {t:,.2f} µs"] * 2 + [None]
    fig.add_trace(go.Scatter(
        x=xs, y=ys, mode="lines", line={"dash": "dash", "color": BARRIER_COLOR, "width": 1},
        hovertext=texts, hoverinfo="text", name="barrier", legendgroup="barrier",
        showlegend="barrier" not in legend_seen, xaxis="x" + x_name[5:], yaxis=f"y{number}"))
    legend_seen.add("barrier")


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


@notebook_figure
def timeline(trace: Trace, *, title: str | None = None,
             x_range: tuple[float, float] | None = None, show_syncs: bool = True,
             color_by: str = "kind", max_bars: int = MAX_BARS,
             max_rows: int = MAX_ROWS) -> go.Figure:
    """A Gantt chart of ``trace``: one row per stream, one bar per op on a linear µs axis.

    ``color_by="kind"`` (default) colours bars by op kind, ``"stream"`` by stream (the colours of
    :func:`~workbench.viz.style.stream_color`).  Barriers are dashed vertical lines at the moment
    every op issued before them has ended; syncs (``show_syncs``) are thin red arrows from the end
    of the recording op to the start of the waiting op.  A trace of more than ``max_bars`` ops or
    ``max_rows`` streams is drawn binned (:func:`~workbench.viz.utilisation.utilisation_frame`:
    shade = fraction busy, at most ``max_rows`` rows, no sync arrows).  ``title`` is used as
    given (escape it yourself if it holds user names).  Returns the figure; never calls
    ``.show()``.
    """
    _check_color_by(color_by)
    fig = go.Figure()
    _add_trace(fig, trace, colors=_kind_colors_for([trace]), color_by=color_by,
               show_syncs=show_syncs, legend_seen=set(), max_bars=max_bars, max_rows=max_rows)
    n_rows = _n_rows(trace, max_bars, max_rows)
    fig.update_layout(**LAYOUT_DEFAULTS)
    fig.update_layout(title=title if title is not None else _default_title(trace),
                      barmode="overlay", height=140 + _PANEL_PX + _ROW_PX * n_rows
                      + legend_px(legend_entries(fig)))
    fig.update_xaxes(type="linear", title=TIME_AXIS_TITLE, rangemode="tozero")
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    return fig


@notebook_figure
def timelines(traces: Sequence[Trace] | Mapping[str, Trace], *, shared_x: bool = True,
              show_syncs: bool = True, color_by: str = "kind",
              title: str | None = None, max_bars: int = MAX_BARS,
              max_rows: int = MAX_ROWS) -> go.Figure:
    """One timeline panel per trace, stacked on a shared time axis (``shared_x``).

    ``traces`` is a sequence (panels titled by each trace's policy) or a mapping label → trace.
    Each panel is titled "<label>: <makespan> µs" ("…, binned" when drawn aggregated: see
    :func:`timeline`); colours and legend entries are shared.
    """
    _check_color_by(color_by)
    items = list(traces.items()) if isinstance(traces, Mapping) else [
        (t.policy, t) for t in traces]
    if not items:
        raise ValueError("timelines() needs at least one trace")
    heights = [_PANEL_PX + _ROW_PX * _n_rows(t, max_bars, max_rows) for _, t in items]
    gap_px = 90   # room for each panel's time axis title and the next panel's title
    total = sum(heights) + gap_px * (len(items) - 1)
    fig = make_subplots(
        rows=len(items), cols=1, shared_xaxes=shared_x,
        vertical_spacing=gap_px / total if len(items) > 1 else 0.0,
        row_heights=[h / sum(heights) for h in heights],
        subplot_titles=[f"{escape(label)}: {t.makespan:.1f} µs"
                        + (", binned" if aggregated(t, max_bars, max_rows) else "")
                        for label, t in items],
    )
    colors = _kind_colors_for([t for _, t in items])
    seen: set[str] = set()
    for i, (_, t) in enumerate(items, start=1):
        _add_trace(fig, t, colors=colors, color_by=color_by, show_syncs=show_syncs,
                   legend_seen=seen, row=i, max_bars=max_bars, max_rows=max_rows)
    fig.update_layout(**LAYOUT_DEFAULTS)
    legend = legend_px(legend_entries(fig))
    # the legend at the top, between the title and the first panel (issue 25: below twelve
    # panels it was 2,700 px from the first); every panel has its own labelled time axis
    top = 80 + legend
    fig.update_layout(
        barmode="overlay", height=total + top + 60,
        title={"text": title if title is not None else "timelines", "y": 1.0,
               "yref": "container", "yanchor": "top", "pad": {"t": 12}},
        margin={**LAYOUT_DEFAULTS["margin"], "t": top},
        legend={**LEGEND_BELOW, "yref": "paper", "y": 1.0 + 30 / max(total, 1),
                "yanchor": "bottom"})
    fig.update_xaxes(type="linear", rangemode="tozero", title=TIME_AXIS_TITLE,
                     showticklabels=True)
    return fig
