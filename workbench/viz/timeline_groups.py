"""The data layer of the policies' timelines (:mod:`workbench.viz.policy_timelines`): which
policies ran exactly the same timeline, where each group's rows go in one figure, and the syncs
binned per waiting stream.

Pure functions over traces (no plotting library, STYLE.md R10), so the figure's structure
(groups, rows, heights) is tested without drawing it.

Two timelines are the same when every op ran on the same stream from the same start to the same
end (times rounded to ``decimals`` places of a µs: policies that order the same ops the same way
differ by float noise, ``1e-12`` µs).  A comparison of Inception V3 in graph mode has 12
policies and 7 different timelines: ``serial = bfs = dfs = memory_greedy`` is one row group.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from workbench.values.trace import Trace
from workbench.viz.style import escape, stream_label
from workbench.viz.utilisation import stream_groups

#: Heights in row units (one stream row = 1): the group's title line, its busy track, the gap
#: below it.
HEADER_UNITS = 1.4
BUSY_UNITS = 1.6
GAP_UNITS = 0.5
FIXED_UNITS = HEADER_UNITS + BUSY_UNITS + GAP_UNITS
SYNC_BINS = 120
SYNC_COLUMNS = ("stream", "x_us", "count", "x0_us", "x1_us", "hover")


# ---------------------------------------------------------------------------------- groups
@dataclass(frozen=True)
class TimelineGroup:
    """Policies whose timelines are identical: their labels (rank order) and the first one's
    trace."""

    labels: tuple[str, ...]
    trace: Trace

    @property
    def label(self) -> str:
        """``"serial = bfs = dfs"`` (raw names: escape before drawing)."""
        return " = ".join(self.labels)

    @property
    def makespan_us(self) -> float:
        return float(self.trace.makespan) if len(self.trace.df) else 0.0


def timeline_key(trace: Trace, *, decimals: int = 4) -> tuple[Any, ...]:
    """What makes a timeline: the sorted ``(op, stream, start, end)`` of every op, times rounded
    to ``decimals`` places (µs).  Equal keys draw the same picture.  O(n log n)."""
    df = trace.df
    if not len(df):
        return ()
    start = df["start_us"].astype(float).round(decimals).tolist()
    end = df["end_us"].astype(float).round(decimals).tolist()
    return tuple(sorted(zip(df["op"].astype(str), df["stream"].astype(str), start, end,
                            strict=True)))


def identical_groups(items: Sequence[tuple[str, Trace]] | Mapping[str, Trace], *,
                     decimals: int = 4) -> list[TimelineGroup]:
    """The traces grouped by identical timelines (:func:`timeline_key`), each group at the
    place of its first member, members in the given order.

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b"), ("a", "c")])
    >>> runs = {p: wb.simulate(wb.schedule(g, p)) for p in ("nnc", "serial", "bfs")}
    >>> [grp.label for grp in identical_groups(runs)]
    ['nnc', 'serial = bfs']
    """
    pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
    order: list[tuple[Any, ...]] = []
    members: dict[tuple[Any, ...], list[tuple[str, Trace]]] = {}
    for label, trace in pairs:
        key = timeline_key(trace, decimals=decimals)
        if key not in members:
            order.append(key)
            members[key] = []
        members[key].append((str(label), trace))
    return [TimelineGroup(tuple(lbl for lbl, _ in members[k]), members[k][0][1]) for k in order]


# ---------------------------------------------------------------------------------- rows
@dataclass(frozen=True)
class GroupRows:
    """Where one group is drawn, in row units on a y axis that grows downwards.

    ``top``: the band's top (its title line at ``header_y``); ``rows``: ``(label, y)`` of each
    stream row (or row of several streams, when ``aggregated``); ``row_of``: the row ``y`` of
    every stream; the busy track spans ``busy_top``..``busy_bottom``; ``bottom``: the band's end.
    """

    top: float
    rows: tuple[tuple[str, float], ...]
    row_of: Mapping[Any, float] = field(repr=False)
    aggregated: bool = False

    @property
    def header_y(self) -> float:
        return self.top + HEADER_UNITS / 2

    @property
    def rows_top(self) -> float:
        return self.top + HEADER_UNITS

    @property
    def busy_top(self) -> float:
        return self.rows_top + len(self.rows)

    @property
    def busy_bottom(self) -> float:
        return self.busy_top + BUSY_UNITS

    @property
    def bottom(self) -> float:
        return self.busy_bottom + GAP_UNITS

    @property
    def units(self) -> float:
        return self.bottom - self.top


def _streams(trace: Trace) -> list[Any]:
    return sorted(set(trace.df["stream"].tolist()), key=lambda s: (str(type(s)), s))


def row_cap(groups: Sequence[TimelineGroup], *, budget_units: float) -> int | None:
    """Stream rows allowed per group so that every group fits in ``budget_units`` (None: all
    fit as they are; at least 2)."""
    needed = sum(FIXED_UNITS + max(1, len(_streams(g.trace))) for g in groups)
    if needed <= budget_units:
        return None
    return max(2, math.floor((budget_units - FIXED_UNITS * len(groups)) / max(1, len(groups))))


def row_layout(groups: Sequence[TimelineGroup], *, max_rows: int | None = None,
               max_bars: int = 5_000) -> list[GroupRows]:
    """The bands of ``groups`` stacked from y = 0 down: each one title line, one row per stream
    (consecutive streams share a row past ``max_rows`` rows; such a group, or one of more than
    ``max_bars`` ops, is drawn ``aggregated``: binned), its busy track and a gap.

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b"), ("a", "c")])
    >>> groups = identical_groups({p: wb.simulate(wb.schedule(g, p)) for p in ("nnc", "serial")})
    >>> [(len(r.rows), r.top) for r in row_layout(groups)]
    [(2, 0.0), (1, 5.5)]
    """
    out: list[GroupRows] = []
    top = 0.0
    for group in groups:
        streams = _streams(group.trace)
        too_many = max_rows is not None and len(streams) > max_rows
        aggregated = too_many or len(group.trace.df) > max_bars
        if too_many and max_rows is not None:
            parts = stream_groups(streams, max_rows)
        else:
            parts = [(stream_label(s), [s]) for s in streams] or [("stream 0", [0])]
        rows = tuple((label, top + HEADER_UNITS + i + 0.5) for i, (label, _) in enumerate(parts))
        row_of = {s: y for (_, members), (_, y) in zip(parts, rows, strict=True) for s in members}
        band = GroupRows(top, rows, row_of, aggregated)
        out.append(band)
        top = band.bottom
    return out


# ---------------------------------------------------------------------------------- syncs
def sync_bins(trace: Trace, *, bins: int = SYNC_BINS) -> pd.DataFrame:
    """The syncs of ``trace.schedule`` binned: one row per (waiting stream, time bin) with
    ``count`` syncs, ``x_us`` their mean wait end (the waiting op's start), the bin's
    ``x0_us``/``x1_us`` and a ``hover`` text naming the streams waited on.  ``bins`` equal bins
    over the makespan: the same drawing for 3 syncs or 3,000 (per-sync arrows paint a solid
    block on large graphs).  Empty without a schedule.  O(syncs)."""
    schedule = getattr(trace, "schedule", None)
    syncs = list(getattr(schedule, "syncs", ()) or ())
    if not syncs or not len(trace.df):
        return pd.DataFrame(columns=list(SYNC_COLUMNS))
    df = trace.df
    start = dict(zip(df["op"], df["start_us"].astype(float), strict=True))
    stream = dict(zip(df["op"], df["stream"], strict=True))
    width = max(float(trace.makespan), 1e-9) / bins
    cells: dict[tuple[Any, int], list[tuple[float, Any]]] = {}
    for a, b in syncs:
        if a not in stream or b not in start:
            continue
        k = min(bins - 1, int(start[b] // width))
        cells.setdefault((stream[b], k), []).append((start[b], stream[a]))
    rows = []
    for (s, k), hits in sorted(cells.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        waited = sorted({stream_label(w) for _, w in hits})
        hover = (f"<b>{len(hits)} sync(s)</b> into {escape(stream_label(s))}<br>"
                 f"{k * width:,.1f}–{(k + 1) * width:,.1f} µs<br>waiting on: "
                 + ", ".join(escape(w) for w in waited[:8]) + (" …" if len(waited) > 8 else ""))
        rows.append((s, sum(x for x, _ in hits) / len(hits), len(hits), k * width,
                     (k + 1) * width, hover))
    return pd.DataFrame(rows, columns=list(SYNC_COLUMNS))


__all__ = ["BUSY_UNITS", "FIXED_UNITS", "GAP_UNITS", "HEADER_UNITS", "GroupRows",
           "TimelineGroup", "identical_groups", "row_cap", "row_layout", "sync_bins",
           "timeline_key"]
