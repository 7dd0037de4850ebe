"""The timelines of a comparison in one figure: policies in rank order, identical timelines
collapsed into one row group, a device-busy track under each group, and a view selector.

Issue 45: twelve stacked subplots made a 2,950 px figure whose shared axis ran to serial's
makespan, with syncs drawn two ways.  :func:`policy_timelines` draws one y axis of row bands
(:func:`~workbench.viz.timeline_groups.row_layout`): each band is a title line ("gpto =
critical_path: 802.6 µs · 1.85× serial · 2.02 ops at once (mean)"), one row per stream, and a filled
step curve of how many ops run at once (:func:`~workbench.viz.utilisation.concurrency_frame`, on
one scale for every group).  Syncs are always binned markers (:func:`~workbench.viz.
timeline_groups.sync_bins`), barriers dashed lines across the band.  The figure stays under
``max_height_px`` (1,400) however many policies and streams: rows get thinner, and past a
minimum groups share rows between consecutive streams (drawn binned).

A dropdown (plotly ``updatemenus``) shows all groups on a shared time axis, one group alone
(its axis fitted to its own makespan, the figure as tall as it needs), or two side by side on
one time scale (the ``selected`` policy's group beside each other group).  ``selected`` (the
best policy in the report, the app's selected policy there) is marked ``▶`` and shaded.

Every name that reaches hover text, legends, titles or the menu goes through
:func:`~workbench.viz.style.escape`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

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
    legend_px,
    stream_color,
    stream_label,
    tint,
)
from workbench.viz.timeline import barrier_times, timeline_frame
from workbench.viz.timeline_groups import (
    GroupRows,
    TimelineGroup,
    identical_groups,
    row_cap,
    row_layout,
    sync_bins,
)
from workbench.viz.utilisation import (
    BUSY_COLORSCALE,
    average_concurrency,
    concurrency_frame,
    utilisation_frame,
)

MAX_HEIGHT_PX = 1_350   # the whole figure, all groups shown (issue 45: under 1,400)
MAX_UNIT_PX = 15        # one stream row at most, all groups shown
MIN_UNIT_PX = 7         # ... and at least (below it, streams share rows)
ALONE_UNIT_PX = 30      # one stream row at most when one or two groups are shown
MIN_HEIGHT_PX = 300
TOP_PX = 76             # the title line and the menu above the plot
# the legend goes below the time axis, where plotly grows the margin to fit however many rows
# it wraps to in a narrow pane (above the plot it ran into the first group's title line)
BOTTOM_PX = 50          # the time axis and its title
MAX_BARS = 5_000        # a group of more ops is drawn binned
BUSY_COLOR = "#4e79a7"
SELECTED_FILL = "#fff4d1"
PAIR_GAP = 0.08         # paper width between the two plots of a side-by-side view
MENU_LABEL_CHARS = 44
VIEWS = ("all", "selected", "compare")


@dataclass(frozen=True)
class _View:
    label: str
    left: tuple[int, ...]   # groups drawn on the left (or only) axes
    right: int | None       # the group on the right axes of a side-by-side view


def _items(traces: Sequence[Trace] | Mapping[str, Trace]) -> list[tuple[str, Trace]]:
    if isinstance(traces, Mapping):
        return [(str(k), t) for k, t in traces.items()]
    return [(str(t.policy), t) for t in traces]


def _short(text: str, n: int = MENU_LABEL_CHARS) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def _views(groups: Sequence[TimelineGroup], chosen: int) -> list[_View]:
    """All; each group alone; the chosen group beside each other one (in rank order)."""
    first = f"all {len(groups)} timelines (rank order)" if len(groups) > 1 else "the timeline"
    views = [_View(first, tuple(range(len(groups))), None)]
    if len(groups) > 1:
        views += [_View(_short(g.label), (i,), None) for i, g in enumerate(groups)]
        for i in range(len(groups)):
            if i != chosen:
                a, b = sorted((chosen, i))
                views.append(_View(_short(f"{groups[a].label} | {groups[b].label}"), (a,), b))
    return views


def _opening(views: Sequence[_View], view: str, chosen: int) -> int:
    """The index of the view the figure opens on (see :func:`policy_timelines`)."""
    if view == "selected" and len(views) > 1:
        return 1 + chosen
    if view == "compare" and chosen != 0:
        return next(k for k, v in enumerate(views) if v.left == (0,) and v.right == chosen)
    return 0


class _Drawing:
    """The figure's traces, each tagged with its group, and the per-view settings."""

    def __init__(self, fig: go.Figure) -> None:
        self.fig = fig
        self.group_of: list[int] = []
        self.legend_key: list[str | None] = []

    def add(self, trace: Any, group: int, legend: str | None) -> None:
        self.fig.add_trace(trace)
        self.group_of.append(group)
        self.legend_key.append(legend)


def _header(group: TimelineGroup, *, serial_us: float | None, chosen: bool) -> str:
    parts = [f"{group.makespan_us:,.1f} µs"]
    if serial_us and group.makespan_us > 0 and "serial" not in group.labels:
        parts.append(f"{serial_us / group.makespan_us:.2f}× serial")
    parts.append(f"{average_concurrency(group.trace):.2f} ops at once (mean)")
    mark = "▶ " if chosen else ""
    return f"{mark}<b>{escape(group.label)}</b>: " + " · ".join(parts)


def _bars(d: _Drawing, gi: int, group: TimelineGroup, band: GroupRows, *,
          colors: Mapping[str, str], color_by: str) -> None:
    frame = timeline_frame(group.trace)
    frame["y"] = [band.row_of[s] for s in frame["stream_id"]]
    key = "kind" if color_by == "kind" else "stream_id"
    for value, part in frame.groupby(key, sort=False):
        name = str(value) if color_by == "kind" else stream_label(value)
        color = colors[str(value)] if color_by == "kind" else stream_color(int(value))
        d.add(go.Bar(
            orientation="h", base=part["start_us"].to_numpy(dtype=np.float32),
            x=part["duration_us"].to_numpy(dtype=np.float32),
            y=part["y"].to_numpy(dtype=np.float32), hovertext=part["hover"].to_numpy(dtype=str),
            hoverinfo="text", name=escape(name), legendgroup=escape(name), width=0.8,
            marker={"color": color, "line": {"color": "white", "width": 0.5}}),
            gi, escape(name))


def _binned(d: _Drawing, gi: int, group: TimelineGroup, band: GroupRows) -> None:
    """A group too large to draw op by op: per row and time bin, the fraction busy."""
    cells = utilisation_frame(group.trace, max_rows=len(band.rows))
    y = np.array([band.rows[int(r)][1] for r in cells["row"]], dtype=float)
    busy = np.clip(np.nan_to_num(cells["busy"].to_numpy(dtype=float)), 0.0, 1.0)
    d.add(go.Bar(
        orientation="h", base=cells["x0_us"].to_numpy(),
        x=(cells["x1_us"] - cells["x0_us"]).to_numpy(), y=y, width=0.8,
        hovertext=cells["hover"].tolist(), hoverinfo="text", name="busy (binned)",
        legendgroup="binned",
        marker={"color": sample_colorscale(BUSY_COLORSCALE, busy.tolist()) if len(busy) else [],
                "line": {"width": 0}}), gi, "binned")


def _busy(d: _Drawing, gi: int, group: TimelineGroup, band: GroupRows, peak: float) -> None:
    """The filled step curve of ops running at once, on the shared scale ``peak``."""
    frame = concurrency_frame(group.trace)
    t = frame["time_us"].to_numpy(dtype=float)
    level = frame["running"].to_numpy(dtype=float)
    base, room = band.busy_bottom - 0.12, band.busy_bottom - band.busy_top - 0.24
    y = base - room * level / max(peak, 1e-9)
    # a step function: level i from t[i] to t[i + 1], closed along the baseline
    xs = np.concatenate(([t[0]], np.column_stack((t[:-1], t[1:])).ravel(), [t[-1]]))
    ys = np.concatenate(([base], np.column_stack((y[:-1], y[:-1])).ravel(), [base]))
    counts = np.concatenate(([0.0], np.repeat(level[:-1], 2), [0.0]))
    whole = float(np.abs(level - np.round(level)).max(initial=0.0)) < 1e-9
    # float32 and a hover template over the counts, not a string per point: the page's size
    d.add(go.Scatter(
        x=xs.astype(np.float32), y=ys.astype(np.float32), customdata=counts.astype(np.float32),
        mode="lines", fill="toself", fillcolor=tint(BUSY_COLOR, 0.55),
        line={"color": BUSY_COLOR, "width": 1},
        hovertemplate=("%{customdata:" + (".0f" if whole else ".2f") + "} op(s) at once"
                       "<br>%{x:,.2f} µs<extra></extra>"),
        name="ops running at once", legendgroup="busy"), gi, "busy")


def _syncs(d: _Drawing, gi: int, group: TimelineGroup, band: GroupRows, row_px: float) -> None:
    """One marker per (waiting stream, time bin), its size growing with the count up to the
    row's height."""
    bins = sync_bins(group.trace)
    if not len(bins):
        return
    counts = bins["count"].to_numpy(dtype=float)
    size = np.clip(4.0 + 1.5 * np.sqrt(counts), 4.0, max(4.0, 0.9 * row_px))
    d.add(go.Scatter(
        x=bins["x_us"].to_numpy(dtype=float),
        y=np.array([band.row_of.get(s, band.rows[0][1]) for s in bins["stream"]]) - 0.2,
        mode="markers", hovertext=bins["hover"].tolist(), hoverinfo="text",
        name="syncs (binned: size = count)", legendgroup="sync",
        marker={"symbol": "triangle-down", "size": size,
                "color": SYNC_COLOR, "opacity": 0.75, "line": {"width": 0}}), gi, "sync")


def _barriers(d: _Drawing, gi: int, group: TimelineGroup, band: GroupRows) -> None:
    times = barrier_times(group.trace)
    if not times:
        return
    xs: list[float | None] = []
    ys: list[float | None] = []
    texts: list[str | None] = []
    for k, t in enumerate(times, start=1):
        xs += [t, t, None]
        ys += [band.rows_top, band.busy_bottom, None]
        texts += [f"barrier {k}: {t:,.2f} µs"] * 2 + [None]
    d.add(go.Scatter(x=xs, y=ys, mode="lines", hovertext=texts, hoverinfo="text",
                     line={"dash": "dash", "color": BARRIER_COLOR, "width": 1},
                     name="barrier", legendgroup="barrier"), gi, "barrier")


def _unit_px(bands: Sequence[GroupRows], plot_px: float) -> float:
    """Pixels of one row unit when every band is shown in at most ``plot_px``."""
    units = bands[-1].bottom if bands else 1.0
    return max(MIN_UNIT_PX, min(MAX_UNIT_PX, plot_px / units))


def _ticks(bands: Sequence[GroupRows], shown: Sequence[int], peak: float) -> dict[str, Any]:
    """The y tick values and labels of the shown bands' rows (stream rows, busy tracks)."""
    ticks = [(y, escape(lbl)) for g in shown for lbl, y in bands[g].rows]
    ticks += [((bands[g].busy_top + bands[g].busy_bottom) / 2, f"at once (0–{peak:g})")
              for g in shown]
    ticks.sort()
    return {"tickvals": [y for y, _ in ticks], "ticktext": [t for _, t in ticks]}


def _view_settings(view: _View, d: _Drawing, groups: Sequence[TimelineGroup],
                   bands: Sequence[GroupRows], *, headers: Sequence[str], chosen: int,
                   plot_px: float, peak: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """The restyle (per trace) and relayout arguments of one view.  The figure keeps its
    height in every view (a page reserves it: a shorter figure left a gap, a taller one would
    run over what follows), so one or two groups get rows up to :data:`ALONE_UNIT_PX` tall
    in a plot as tall as they need, its time axis right below them, and the figure's bottom
    stays empty."""
    shown = set(view.left) | ({view.right} if view.right is not None else set())
    visible = [g in shown for g in d.group_of]
    first: set[str] = set()
    showlegend = []
    for vis, key in zip(visible, d.legend_key, strict=True):
        showlegend.append(bool(vis and key is not None and key not in first))
        if vis and key is not None:
            first.add(key)
    right = view.right
    xaxis = ["x2" if g == right else "x" for g in d.group_of]
    yaxis = ["y2" if g == right else "y" for g in d.group_of]
    top = bands[view.left[0]].top
    if len(view.left) > 1:   # everything, on the shared axis
        units, used = bands[view.left[-1]].bottom - top, 1.0
    else:   # the plot as tall as the band(s) need, its time axis right below them
        units = max(bands[g].units for g in shown)
        used = min(1.0, units * ALONE_UNIT_PX / max(plot_px, 1.0))
    span = max(groups[g].makespan_us for g in shown) * 1.02 or 1.0
    split = right is not None
    annotations, shapes = [], []
    for g in sorted(shown):
        axis = "2" if g == right else ""
        annotations.append({
            "text": headers[g], "xref": f"x{axis} domain", "yref": f"y{axis}", "x": 0.0,
            "y": bands[g].header_y, "xanchor": "left", "yanchor": "middle", "showarrow": False,
            "font": {"size": 12, "color": "#1f2933" if g != chosen else "#7a5200"}})
        if g == chosen and len(groups) > 1:
            shapes.append({"type": "rect", "xref": f"x{axis} domain", "yref": f"y{axis}",
                           "x0": 0, "x1": 1, "y0": bands[g].top, "y1": bands[g].bottom - 0.2,
                           "fillcolor": SELECTED_FILL, "line": {"width": 0}, "layer": "below"})
    right_top = bands[right].top if right is not None else 0.0
    left_ticks = _ticks(bands, view.left, peak)
    right_ticks = _ticks(bands, [right] if right is not None else [], peak)
    layout = {
        "xaxis.domain": [0.0, 0.5 - PAIR_GAP / 2] if split else [0.0, 1.0],
        "xaxis.range": [0.0, span], "yaxis.range": [top + units, top],
        "yaxis.domain": [1.0 - used, 1.0], "yaxis2.domain": [1.0 - used, 1.0],
        "yaxis.tickvals": left_ticks["tickvals"], "yaxis.ticktext": left_ticks["ticktext"],
        "xaxis2.visible": split, "yaxis2.visible": split, "xaxis2.range": [0.0, span],
        "yaxis2.range": [right_top + units, right_top],
        "yaxis2.tickvals": right_ticks["tickvals"], "yaxis2.ticktext": right_ticks["ticktext"],
        "annotations": annotations, "shapes": shapes,
    }
    return ({"visible": visible, "showlegend": showlegend, "xaxis": xaxis, "yaxis": yaxis},
            layout)


def _kind_colors(groups: Sequence[TimelineGroup]) -> dict[str, str]:
    kinds: list[str] = []
    for g in groups:
        t = g.trace
        kinds += [op.kind for op in t.graph.ops] if t.graph is not None else []
        if "kind" in t.df:
            kinds += t.df["kind"].astype(str).tolist()
    return kind_colors(kinds)


@notebook_figure
def policy_timelines(traces: Sequence[Trace] | Mapping[str, Trace], *,
                     selected: str | None = None, title: str | None = None,
                     color_by: str = "kind", view: str = "all",
                     max_height_px: int = MAX_HEIGHT_PX, max_bars: int = MAX_BARS) -> go.Figure:
    """The timelines of several policies in one figure (see the module docstring).

    ``traces``: a mapping label → trace in rank order (the table's order: fastest first), or a
    sequence (labelled by each trace's policy).  ``selected``: the label whose group is marked
    and drawn beside each other group in the side-by-side views (default: the first).
    ``color_by``: ``"kind"`` or ``"stream"``.  ``view``: what the figure opens on (the menu
    has them all): ``"all"`` groups, the ``"selected"`` group alone, or ``"compare"``: the
    selected group beside the fastest (all groups when the selected is the fastest).  ``title``
    is used as given (escape it yourself).  Returns the figure; never calls ``.show()``.

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b"), ("a", "c")])
    >>> fig = policy_timelines({p: wb.simulate(wb.schedule(g, p)) for p in ("nnc", "serial")})
    >>> [b["label"] for b in fig.layout.updatemenus[0].buttons]
    ['all 2 timelines (rank order)', 'nnc', 'serial', 'nnc | serial']
    """
    if color_by not in ("kind", "stream"):
        raise ValueError(f"unknown color_by {color_by!r} (known: kind, stream)")
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r} (known: {', '.join(VIEWS)})")
    items = _items(traces)
    if not items:
        raise ValueError("policy_timelines() needs at least one trace")
    groups = identical_groups(items)
    labels = [lbl for lbl, _ in items]
    chosen_label = selected if selected in labels else labels[0]
    chosen = next(i for i, g in enumerate(groups) if chosen_label in g.labels)
    budget = (max_height_px - TOP_PX - BOTTOM_PX - 60) / MIN_UNIT_PX
    bands = row_layout(groups, max_rows=row_cap(groups, budget_units=budget), max_bars=max_bars)
    serial = next((g.makespan_us for g in groups if "serial" in g.labels), None)
    headers = [_header(g, serial_us=serial, chosen=i == chosen and len(groups) > 1)
               for i, g in enumerate(groups)]
    peak = max(float(concurrency_frame(g.trace)["running"].max()) for g in groups) or 1.0

    d = _Drawing(go.Figure())
    colors = _kind_colors(groups)
    row_px = _unit_px(bands, max_height_px - TOP_PX - BOTTOM_PX - 66)   # before the legend
    for gi, (group, band) in enumerate(zip(groups, bands, strict=True)):
        if band.aggregated:
            _binned(d, gi, group, band)
        else:
            _bars(d, gi, group, band, colors=colors, color_by=color_by)
            _syncs(d, gi, group, band, row_px)
        _barriers(d, gi, group, band)
        _busy(d, gi, group, band, peak)
    legend = legend_px(len({k for k in d.legend_key if k is not None}))
    chrome = TOP_PX + legend + BOTTOM_PX
    unit_px = _unit_px(bands, max_height_px - chrome)
    height = max(MIN_HEIGHT_PX, round(chrome + bands[-1].bottom * unit_px))
    views = _views(groups, chosen)
    active = _opening(views, view, chosen)
    settings = [_view_settings(v, d, groups, bands, headers=headers, chosen=chosen,
                               plot_px=height - chrome, peak=peak) for v in views]
    yaxis = {"autorange": False, "zeroline": False, "showgrid": False,
             "tickfont": {"size": 10 if unit_px < 12 else 11}}
    fig = d.fig
    fig.update_layout(**LAYOUT_DEFAULTS)
    data0, layout0 = settings[active]
    for trace, vis, show, xa, ya in zip(fig.data, data0["visible"], data0["showlegend"],
                                        data0["xaxis"], data0["yaxis"], strict=True):
        trace.update(visible=vis, showlegend=show, xaxis=xa, yaxis=ya)
    fig.update_layout(
        barmode="overlay", hovermode="closest", height=height,
        title={"text": title if title is not None else "timelines (rank order)", "y": 1.0,
               "yref": "container", "yanchor": "top", "pad": {"t": 10}, "x": 0.0,
               "xanchor": "left", "xref": "paper"},
        margin={**LAYOUT_DEFAULTS["margin"], "t": TOP_PX, "b": BOTTOM_PX, "r": 20},
        legend=LEGEND_BELOW,
        xaxis={"type": "linear", "title": {"text": TIME_AXIS_TITLE}, "anchor": "y"},
        xaxis2={"type": "linear", "title": {"text": TIME_AXIS_TITLE}, "anchor": "y2",
                "domain": [0.5 + PAIR_GAP / 2, 1.0]},
        yaxis={**yaxis, "anchor": "x"}, yaxis2={**yaxis, "anchor": "x2"},
        updatemenus=[{
            "type": "dropdown", "direction": "down", "active": active, "showactive": True,
            "x": 0.0, "xanchor": "left", "y": 1.0, "yanchor": "bottom", "pad": {"b": 6},
            "bgcolor": "white", "bordercolor": "#9aa5b1", "font": {"size": 11},
            "buttons": [{"label": escape(v.label), "method": "update", "args": [data, lay]}
                        for v, (data, lay) in zip(views, settings, strict=True)]}],
    )
    fig.update_layout(layout0)
    return fig


__all__ = ["policy_timelines"]
