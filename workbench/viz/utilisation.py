"""Timelines of huge traces, aggregated: per stream row, how busy it was in each time bin.

A trace of 10k ops drawn bar by bar makes a page of megabytes that a browser redraws slowly, and a
trace with hundreds of streams makes a panel thousands of pixels tall.  Above a size the
timelines (:mod:`workbench.viz.timeline`) draw :func:`utilisation_frame` instead: the time axis
is cut into ``bins`` equal bins, consecutive streams are grouped so that at most ``max_rows`` rows
remain, and each (row, bin) cell becomes one bar shaded by the fraction of it that its streams
were busy.  Pure data layer here (no plotting library) plus the drawing helper the timelines use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from workbench.values.trace import Trace
from workbench.viz.style import escape, stream_label

UTILISATION_COLUMNS = ("stream", "row", "x0_us", "x1_us", "busy", "ops", "hover")
BUSY_COLORSCALE = "Blues"


def stream_groups(streams: Sequence[Any], max_rows: int) -> list[tuple[str, list[Any]]]:
    """``(row label, streams)`` for at most ``max_rows`` rows of consecutive streams (sorted as
    the timeline rows are).

    >>> stream_groups([0, 1, 2, 3, 4], 2)
    [('streams 0–2', [0, 1, 2]), ('streams 3–4', [3, 4])]
    """
    ids = sorted(set(streams), key=lambda s: (str(type(s)), s))
    if not ids:
        return []
    size = max(1, math.ceil(len(ids) / max(1, max_rows)))
    groups = [ids[k:k + size] for k in range(0, len(ids), size)]
    return [(stream_label(g[0]) if len(g) == 1 else f"streams {g[0]}–{g[-1]}", g)
            for g in groups]


def _busy_integral(start: np.ndarray, end: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Busy time of the intervals before each edge: ``sum(clip(x - start, 0, end - start))``,
    from sorted starts and ends (O((n + bins) log n))."""
    s, e = np.sort(start), np.sort(end)
    cs = np.concatenate(([0.0], np.cumsum(s)))
    ce = np.concatenate(([0.0], np.cumsum(e)))
    ks = np.searchsorted(s, edges, side="left")
    ke = np.searchsorted(e, edges, side="left")
    return (ks * edges - cs[ks]) - (ke * edges - ce[ke])


def utilisation_frame(trace: Trace, *, bins: int = 200, max_rows: int = 48) -> pd.DataFrame:
    """One row per (stream row, time bin) in which something ran.

    Columns: ``stream`` (row label: ``"stream 3"`` or ``"streams 0–11"``), ``row`` (its index),
    ``x0_us``/``x1_us`` (the bin), ``busy`` (fraction of the bin × streams of the row that ops
    occupied, 0–1), ``ops`` (ops overlapping the bin) and ``hover``.  Complexity:
    O(n log n + rows · bins) for n ops.
    """
    if bins < 1 or max_rows < 1:
        raise ValueError(f"bins and max_rows must be positive, got {bins}, {max_rows}")
    df = trace.df
    if not len(df):
        return pd.DataFrame(columns=list(UTILISATION_COLUMNS))
    start = df["start_us"].to_numpy(dtype=float)
    end = df["end_us"].to_numpy(dtype=float)
    streams = df["stream"].to_numpy()
    span = float(end.max()) or 1.0
    edges = np.linspace(0.0, span, bins + 1)
    width = span / bins
    parts = []
    for row, (label, members) in enumerate(stream_groups(list(streams), max_rows)):
        mask = np.isin(streams, members)
        s, e = start[mask], end[mask]
        busy = np.diff(_busy_integral(s, e, edges)) / (width * len(members))
        ops = (np.searchsorted(np.sort(s), edges[1:], side="left")
               - np.searchsorted(np.sort(e), edges[:-1], side="right"))
        keep = (busy > 0) | (ops > 0)
        parts.append(pd.DataFrame({
            "stream": label, "row": row, "x0_us": edges[:-1][keep], "x1_us": edges[1:][keep],
            "busy": np.clip(busy[keep], 0.0, 1.0), "ops": ops[keep]}))
    frame = pd.concat(parts, ignore_index=True)
    frame["hover"] = [f"<b>{escape(lbl)}</b><br>{a:,.1f}–{b:,.1f} µs<br>busy: {u:.0%}<br>ops: {n}"
                      for lbl, a, b, u, n in zip(frame["stream"], frame["x0_us"],
                                                 frame["x1_us"], frame["busy"], frame["ops"])]
    return frame[list(UTILISATION_COLUMNS)]


def utilisation_bars(frame: pd.DataFrame, *, show_scale: bool) -> list[Any]:
    """The frame as one horizontal ``go.Bar`` trace, each cell shaded by its ``busy`` fraction,
    plus (``show_scale``) a trace that only draws the colour bar.

    The bar colours are colour strings sampled from :data:`BUSY_COLORSCALE`, not numbers:
    plotly.js logs "Invalid color specifier" for every numeric bar colour it draws (11,486
    console warnings on a 2,000-op random DAG's report, issue 25); the scale goes on an empty
    scatter trace, whose numeric colours plotly.js maps without complaint."""
    import numpy as np
    import plotly.graph_objects as go
    from plotly.colors import sample_colorscale

    busy = np.clip(np.nan_to_num(frame["busy"].to_numpy(dtype=float)), 0.0, 1.0)
    bars = go.Bar(
        orientation="h", base=frame["x0_us"].to_numpy(),
        x=(frame["x1_us"] - frame["x0_us"]).to_numpy(), y=frame["stream"].tolist(),
        hovertext=frame["hover"].tolist(), hoverinfo="text", name="busy (binned)",
        showlegend=False, width=0.8,
        marker={"color": sample_colorscale(BUSY_COLORSCALE, busy.tolist()) if len(busy) else [],
                "line": {"width": 0}})
    if not show_scale:
        return [bars]
    scale = go.Scatter(
        x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip", name="busy",
        marker={"color": [0.0], "colorscale": BUSY_COLORSCALE, "cmin": 0.0, "cmax": 1.0,
                "showscale": True,
                "colorbar": {"title": {"text": "busy"}, "tickformat": ".0%", "len": 0.5}})
    return [bars, scale]


CONCURRENCY_COLUMNS = ("time_us", "running")


def concurrency_frame(trace: Trace, *, max_steps: int = 20_000,
                      bins: int = 400) -> pd.DataFrame:
    """How many ops of ``trace`` run at once, over time: the device-busy track of the timelines.

    Columns ``time_us`` (increasing) and ``running``: the number of ops running from that time
    until the next row (a step function; the last row, at the makespan, is 0).  A trace of more
    than ``max_steps`` distinct start/end times is cut into ``bins`` equal bins instead, each row
    holding the bin's *average* number of ops at once (a float).  Pure: no plotting library.
    Complexity: O(n log n) for n ops.

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b"), ("a", "c")])
    >>> int(concurrency_frame(wb.simulate(wb.schedule(g, "nnc")))["running"].max())
    2
    """
    df = trace.df
    if not len(df):
        return pd.DataFrame({"time_us": [0.0], "running": [0]}, columns=list(CONCURRENCY_COLUMNS))
    start = df["start_us"].to_numpy(dtype=float)
    end = df["end_us"].to_numpy(dtype=float)
    times, inverse = np.unique(np.concatenate((start, end)), return_inverse=True)
    if len(times) > max_steps:
        span = float(end.max()) or 1.0
        edges = np.linspace(0.0, span, bins + 1)
        level = np.diff(_busy_integral(start, end, edges)) / (span / bins)
        return pd.DataFrame({"time_us": np.append(edges[:-1], span),
                             "running": np.append(level, 0.0)},
                            columns=list(CONCURRENCY_COLUMNS))
    delta = np.zeros(len(times), dtype=np.int64)
    np.add.at(delta, inverse[:len(start)], 1)
    np.add.at(delta, inverse[len(start):], -1)
    running = np.cumsum(delta)
    if times[0] > 0.0:   # idle from time 0 to the first op
        times, running = np.insert(times, 0, 0.0), np.insert(running, 0, 0)
    return pd.DataFrame({"time_us": times, "running": running},
                        columns=list(CONCURRENCY_COLUMNS))


def average_concurrency(trace: Trace) -> float:
    """Ops running at once, on average over the makespan: the ops' total time over the makespan
    (``0.0`` for an empty trace).

    >>> import workbench as wb
    >>> chain = wb.simulate(wb.schedule(wb.Graph.from_edges([("a", "b")]), "serial"))
    >>> 0.0 < average_concurrency(chain) <= 1.0   # one op at a time, with launch gaps
    True
    """
    df = trace.df
    span = float(df["end_us"].max()) if len(df) else 0.0
    if span <= 0.0:
        return 0.0
    return float((df["end_us"] - df["start_us"]).astype(float).sum()) / span
