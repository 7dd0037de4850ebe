"""Live activation memory over time of one or several traces (notes/memory_planners.md §7).

Two layers (STYLE.md R10): :func:`memory_curve_frame` is the pure data function (a step function
of live bytes over time, testable without plotly) and :func:`memory_curve` draws one step line per
schedule, optionally beside the ``reserved`` bytes of the BestFit pool replay of the same trace
(the gap between the two is fragmentation plus caching).

The curve follows dynamic reference counting (:func:`workbench.memory.pool_events`): an op's
output is allocated when the op starts and freed when its last consumer ends; graph outputs are
never freed, so the curve ends at the graph-output level.  Inputs and parameters (lifelong, outside
the planned arena) are not counted.  Its peak equals the lower bound of a plan made from the same
trace with ``alignment=1``.

Every policy name that reaches hover text or the legend goes through
:func:`~workbench.viz.style.escape`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from workbench.values.trace import Trace
from workbench.viz.figure import notebook_figure
from workbench.viz.style import (
    LAYOUT_DEFAULTS,
    TIME_AXIS_TITLE,
    escape,
    legend_entries,
    legend_px,
    policy_color,
)

MIB = float(2**20)
FRAME_COLUMNS = ("time_us", "live_bytes")


# ---------------------------------------------------------------------------------- data layer
def memory_curve_frame(trace: Trace) -> pd.DataFrame:
    """Live activation bytes of ``trace`` over time: one row per distinct event time.

    Columns ``time_us`` (increasing) and ``live_bytes`` (the live bytes from that time until the
    next row: a step function, drawn with ``line_shape="hv"``).  The curve starts at ``0`` bytes
    at time 0, and its last row holds the bytes of the graph outputs (never freed); it is extended
    to the trace's makespan when the last event comes earlier.  Pure: no plotting library is used.

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b")], sizes={"a": 100, "b": 10})
    >>> memory_curve_frame(wb.simulate(wb.schedule(g, "serial"))).live_bytes.tolist()
    [0, 100, 110, 10]
    """
    from workbench.memory import pool_events

    times: list[float] = [0.0]
    live: list[int] = [0]
    current = 0
    for time_us, action, _tensor, size in pool_events(trace):
        current += size if action == "alloc" else -size
        t = float(time_us)
        if t == times[-1]:
            live[-1] = current  # several events at one time: keep the level after all of them
        else:
            times.append(t)
            live.append(current)
    makespan = float(trace.makespan) if len(trace.df) else 0.0
    if makespan > times[-1]:
        times.append(makespan)
        live.append(current)
    return pd.DataFrame({"time_us": times, "live_bytes": live}, columns=list(FRAME_COLUMNS))


def _items(traces: Trace | Sequence[Trace] | Mapping[str, Trace]) -> list[tuple[str, Trace]]:
    if isinstance(traces, Trace):
        return [(str(traces.policy), traces)]
    if isinstance(traces, Mapping):
        return [(str(k), t) for k, t in traces.items()]
    return [(str(t.policy), t) for t in traces]


# ---------------------------------------------------------------------------------- drawing
def _template_text(escaped: str) -> str:
    """An escaped name made literal inside a plotly hovertemplate (no ``%{...}`` variables);
    once per trace instead of a copy of the name per point (``customdata``)."""
    return escaped.replace("%", "&#37;")


def _pool_curve(pool: Any, end: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The pool's reserved MiB as step points from time 0 to ``end`` (None: no pool)."""
    if pool is None or not len(pool.timeline):
        return None
    tl = pool.timeline
    xs = [0.0, *tl["time_us"].astype(float).tolist()]
    ys = [0.0, *(tl["reserved"].astype(float) / MIB).tolist()]
    if end > xs[-1]:
        xs.append(end)
        ys.append(ys[-1])
    return np.array(xs), np.array(ys)


@notebook_figure
def memory_curve(traces: Trace | Sequence[Trace] | Mapping[str, Trace], *,
                 pools: Mapping[str, Any] | None = None, title: str | None = None,
                 selected: str | None = None) -> go.Figure:
    """Live activation memory (MiB) over time (µs): one step line per schedule.

    ``traces`` is one Trace, a sequence (labelled by each trace's policy) or a mapping label →
    trace.  ``pools`` maps the same labels to :class:`~workbench.memory.pool.PoolResult`
    (``workbench.memory.replay_pool``); for each label found there a dashed line of the pool's
    ``reserved`` bytes is drawn in the same colour beside the solid "in use" line, on the same
    axis (one MiB scale: the gap is fragmentation plus caching, read off directly).  Hover shows
    the policy, the time and the MiB.  ``title`` is used as given (escape it yourself if it holds
    user names).  Returns the figure; never calls ``.show()``.

    ``selected`` (a label) draws one policy's curves instead of all of them at once
    (:func:`_one_at_a_time`: the report's and the app's view, issue 45): the others are a
    dropdown away, and the axis fits the in-use curve (a second menu fits the reservation);
    the title then reads ``"<title>: <policy shown>"``.
    """
    items = _items(traces)
    if not items:
        raise ValueError("memory_curve() needs at least one trace")
    pools = dict(pools or {})
    fig = go.Figure()
    for i, (label, trace) in enumerate(items):
        color = policy_color(i)   # one per policy, not repeating (issue 25)
        name = escape(label)
        frame = memory_curve_frame(trace)
        mib = (frame["live_bytes"] / MIB).to_numpy()
        fig.add_trace(go.Scatter(
            x=frame["time_us"].to_numpy(), y=mib, mode="lines", line_shape="hv",
            line={"color": color, "width": 2}, name=f"{name} in use", legendgroup=name,
            hovertemplate=(f"<b>{_template_text(name)}</b> (in use)<br>time: %{{x:,.2f}} µs"
                           "<br>%{y:,.3f} MiB<extra></extra>"),
        ))
        curve = _pool_curve(pools.get(label), float(frame["time_us"].iloc[-1]))
        if curve is not None:
            fig.add_trace(go.Scatter(
                x=curve[0], y=curve[1], mode="lines", line_shape="hv",
                line={"color": color, "width": 1.5, "dash": "dash"}, name=f"{name} reserved",
                legendgroup=name,
                hovertemplate=(f"<b>{_template_text(name)}</b> (pool reserved)<br>"
                               "time: %{x:,.2f} µs<br>%{y:,.3f} MiB<extra></extra>"),
            ))
    fig.update_layout(**LAYOUT_DEFAULTS)
    reserved = any(getattr(d, "line", None) is not None and d.line.dash == "dash"
                   for d in fig.data)
    default = ("live activation memory" + (" (solid: in use; dashed: pool reserved)"
                                           if reserved else ""))
    fig.update_layout(title=title if title is not None else default, hovermode="closest",
                      height=400 + legend_px(legend_entries(fig)))
    fig.update_xaxes(type="linear", title=TIME_AXIS_TITLE, rangemode="tozero")
    # one axis for in-use and reserved bytes: a second axis drew a 32 MiB reservation at the
    # height of 8 MiB in use, so reserved looked equal to peak in use (issue 35)
    fig.update_yaxes(title="memory (MiB; in use and pool reserved)", rangemode="tozero")
    if selected is not None:
        _one_at_a_time(fig, [label for label, _ in items], selected,
                       title=title if title is not None else "live activation memory")
    return fig


def _peak(trace: Any) -> float:
    ys = [y for y in np.asarray(trace.y, dtype=float) if y == y]
    return max(ys, default=0.0)


def _one_at_a_time(fig: go.Figure, labels: Sequence[str], selected: str, *, title: str) -> None:
    """Show ``selected``'s in-use and reserved curves only, the y axis fitted to its in-use
    curve; a dropdown shows another policy or every in-use curve together, a second menu fits
    the axis to the reservation instead.  One axis still (issue 35): a reservation above it is
    named in a note at the top right, not drawn at a false height.  Each view's title is
    ``"<title>: <what it shows>"``."""
    owner = [str(d.legendgroup) for d in fig.data]
    dashed = [d.line.dash == "dash" for d in fig.data]
    escaped = [escape(lbl) for lbl in labels]
    chosen = escape(selected) if escape(selected) in escaped else escaped[0]

    def view(show: set[str], reserved: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        visible = [o in show and (reserved or not dash) for o, dash in zip(owner, dashed,
                                                                           strict=True)]
        in_use = max([_peak(d) for d, v, dash in zip(fig.data, visible, dashed, strict=True)
                      if v and not dash] or [1.0])
        pool = max([_peak(d) for d, v, dash in zip(fig.data, visible, dashed, strict=True)
                    if v and dash] or [0.0])
        top = in_use * 1.15 or 1.0
        note = (f"pool reserved peaks at {pool:,.1f} MiB, above this axis "
                f"(menu at the right: fit the reservation)" if pool > top else "")
        shows = next(iter(show)) if len(show) == 1 else "every policy, in use"
        return ({"visible": visible}, {
            "title.text": f"{title}: {shows}",
            "yaxis.range": [0.0, top], "yaxis.autorange": False,
            "annotations": [{"text": note, "xref": "paper", "yref": "paper", "x": 1.0,
                             "y": 1.0, "xanchor": "right", "yanchor": "top",
                             "showarrow": False, "font": {"size": 11, "color": "#52606d"},
                             "bgcolor": "rgba(255,255,255,0.8)"}] if note else [],
            "_fit": top})

    views = [(lbl, *view({lbl}, True)) for lbl in escaped]
    if len(escaped) > 1:
        views.append((f"all {len(escaped)} policies (in use)", *view(set(escaped), False)))
    first = next(k for k, (lbl, _, _) in enumerate(views) if lbl == chosen)
    data0, layout0 = views[first][1], dict(views[first][2])
    layout0.pop("_fit")
    fit = max(float(v[2]["_fit"]) for v in views)   # every in-use curve fits
    for trace, vis in zip(fig.data, data0["visible"], strict=True):
        trace.visible = vis
    buttons = []
    for lbl, data, layout in views:
        layout = dict(layout)
        layout.pop("_fit")
        buttons.append({"label": lbl, "method": "update", "args": [data, layout]})
    fig.update_layout(layout0)
    fig.update_layout(
        margin={**LAYOUT_DEFAULTS["margin"], "t": 96},
        height=440 + legend_px(2),   # two legend entries shown (the bottom margin grows for more)
        updatemenus=[
            {"type": "dropdown", "active": first, "buttons": buttons, "x": 0.0,
             "xanchor": "left", "y": 1.0, "yanchor": "bottom", "pad": {"b": 6},
             "bgcolor": "white", "bordercolor": "#9aa5b1", "font": {"size": 11}},
            {"type": "dropdown", "active": 0, "x": 1.0, "xanchor": "right", "y": 1.0,
             "yanchor": "bottom", "pad": {"b": 6}, "bgcolor": "white",
             "bordercolor": "#9aa5b1", "font": {"size": 11},
             "buttons": [{"label": "y axis: fit in use", "method": "relayout",
                          "args": [{"yaxis.range": [0.0, fit], "yaxis.autorange": False}]},
                         {"label": "y axis: fit pool reserved", "method": "relayout",
                          "args": [{"yaxis.autorange": True}]}]}])
