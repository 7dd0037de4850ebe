"""Peak live activation memory per policy, as bars: the Memory view's first chart (issue 45).

The live-memory curves of twelve policies on one axis overlapped under 8 MiB while the pool's
32 MiB reservation set the axis, and all twelve peaks were equal.  :func:`memory_peaks_frame`
(pure) reads each trace's peak of live bytes (:func:`~workbench.viz.memory_curve.
memory_curve_frame`), the planned arena of its memory plan and the pool's peak reservation;
:func:`memory_peaks` draws the peaks as horizontal bars in the given (rank) order, the best
policy green, each plan's arena as a marker, and says in the title when every policy peaks at
the same bytes ("all 12 policies peak at 7.9 MiB").

Every policy name goes through :func:`~workbench.viz.style.escape`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from workbench.values.trace import Trace
from workbench.viz.figure import notebook_figure
from workbench.viz.memory_curve import MIB, memory_curve_frame
from workbench.viz.style import LAYOUT_DEFAULTS, escape, legend_px, tint

PEAK_COLUMNS = ("policy", "peak_mib", "arena_mib", "reserved_mib")
BEST_COLOR = "#59a14f"
OTHER_COLOR = "#4e79a7"


def _items(traces: Sequence[Trace] | Mapping[str, Trace]) -> list[tuple[str, Trace]]:
    if isinstance(traces, Mapping):
        return [(str(k), t) for k, t in traces.items()]
    return [(str(t.policy), t) for t in traces]


def memory_peaks_frame(traces: Sequence[Trace] | Mapping[str, Trace], *,
                       plans: Mapping[str, Any] | None = None,
                       pools: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One row per trace, in the given order: ``policy``, ``peak_mib`` (the peak of live
    activation bytes), ``arena_mib`` (the arena of ``plans[policy]``, NaN without one) and
    ``reserved_mib`` (the peak the BestFit pool of ``pools[policy]`` reserved, NaN without one).
    Pure: no plotting library.  O(events) per trace.

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b")], sizes={"a": 2**20, "b": 2**20})
    >>> memory_peaks_frame({"serial": wb.simulate(wb.schedule(g, "serial"))})["peak_mib"].tolist()
    [2.0]
    """
    plans, pools = dict(plans or {}), dict(pools or {})
    rows = []
    for label, trace in _items(traces):
        peak = float(memory_curve_frame(trace)["live_bytes"].max()) / MIB
        plan, pool = plans.get(label), pools.get(label)
        arena = float(plan.arena_bytes) / MIB if plan is not None else float("nan")
        reserved = (float(pool.peak_reserved) / MIB if pool is not None
                    and getattr(pool, "peak_reserved", None) is not None else float("nan"))
        rows.append((label, peak, arena, reserved))
    return pd.DataFrame(rows, columns=list(PEAK_COLUMNS))


def peaks_title(frame: pd.DataFrame) -> str:
    """``"all 12 policies peak at 7.9 MiB"`` when every peak is equal (to 0.01 MiB), else
    ``"peak live memory: 6.2–7.9 MiB"``.

    >>> peaks_title(pd.DataFrame({"peak_mib": [7.91, 7.912]}))
    'all 2 policies peak at 7.9 MiB of live activations'
    """
    peaks = frame["peak_mib"].astype(float)
    if not len(peaks):
        return "peak live memory"
    lo, hi = float(peaks.min()), float(peaks.max())
    if hi - lo < 0.01 and len(peaks) > 1:
        return f"all {len(peaks)} policies peak at {hi:,.1f} MiB of live activations"
    return f"peak live memory: {lo:,.1f}–{hi:,.1f} MiB" if len(peaks) > 1 else (
        f"peak live memory: {hi:,.1f} MiB")


@notebook_figure
def memory_peaks(traces: Sequence[Trace] | Mapping[str, Trace], *,
                 best: str | Iterable[str] | None = None,
                 plans: Mapping[str, Any] | None = None,
                 pools: Mapping[str, Any] | None = None,
                 title: str | None = None) -> go.Figure:
    """Horizontal bars of each policy's peak live activation memory (MiB), in the given order
    (pass the ranking table's order), ``best`` (a policy or several) green, each memory plan's
    arena a black tick; the pool's peak reservation is in the hover (drawn, its tens of MiB of
    cached chunks would squash the bars).  ``title``: as given (escape it yourself), default
    :func:`peaks_title`.  Returns the figure; never calls ``.show()``.
    """
    frame = memory_peaks_frame(traces, plans=plans, pools=pools)
    if not len(frame):
        raise ValueError("memory_peaks() needs at least one trace")
    greens = {best} if isinstance(best, str) else set(best or ())
    labels = [escape(p) for p in frame["policy"]]
    colors = [BEST_COLOR if p in greens else tint(OTHER_COLOR, 0.2) for p in frame["policy"]]
    hover = []
    for r in frame.itertuples(index=False):
        text = f"<b>{escape(r.policy)}</b><br>peak live: {r.peak_mib:,.2f} MiB"
        if r.arena_mib == r.arena_mib:
            text += f"<br>planned arena: {r.arena_mib:,.2f} MiB"
        if r.reserved_mib == r.reserved_mib:
            text += f"<br>pool reserved (peak): {r.reserved_mib:,.2f} MiB"
        hover.append(text)
    fig = go.Figure(go.Bar(
        orientation="h", x=frame["peak_mib"].to_numpy(), y=labels, marker={"color": colors},
        name="peak live", hovertext=hover, hoverinfo="text"))
    if frame["arena_mib"].notna().any():
        fig.add_trace(go.Scatter(
            x=frame["arena_mib"].to_numpy(), y=labels, mode="markers", name="planned arena",
            hoverinfo="skip",
            marker={"symbol": "line-ns-open", "size": 18, "color": "#1f2933",
                    "line": {"width": 2}}))
    fig.update_layout(**LAYOUT_DEFAULTS)
    fig.update_layout(
        title=title if title is not None else peaks_title(frame), barmode="overlay",
        height=120 + 26 * len(frame) + legend_px(len(fig.data)))
    fig.update_xaxes(title="MiB", rangemode="tozero")
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


__all__ = ["memory_peaks", "memory_peaks_frame", "peaks_title"]
