"""SOMAS-style lifetime chart of a :class:`~workbench.memory.plan.MemoryPlan`
(notes/memory_planners.md §7).

One rectangle per tensor: x is its lifetime, y its bytes ``[offset, offset + size)`` inside the
arena (in MiB).  A valid plan draws no two overlapping rectangles of conflicting tensors; the
chart's top is the arena size (a solid line) and no plan can go below the lower bound (a dashed
line).  The x axis is in steps (``[first, last + 1)``, the issue order of a schedule) or, when the
plan was made from a trace (``plan.notes["step_times"]`` non-empty), in µs from the tensor's birth
to its death.

Two layers (STYLE.md R10): :func:`lifetime_frame` computes the rectangles (pure, no plotly) and
:func:`lifetime_chart` draws them.  Rectangles are one ``go.Bar`` trace (``base`` = offset,
``x`` = start, ``offset=0``, ``width`` = duration), which stays fast for thousands of tensors and
keeps one hover label per tensor.  Tensor and producer names are HTML-escaped in hover text.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from workbench.memory.plan import MemoryPlan
from workbench.viz.figure import notebook_figure
from workbench.viz.style import LAYOUT_DEFAULTS, STREAM_PALETTE, TIME_AXIS_TITLE, escape

MIB = float(2**20)
FRAME_COLUMNS = ("name", "producer", "size", "first", "last", "offset", "end", "x0", "x1",
                 "hover")
ARENA_COLOR = "#1f2933"
BOUND_COLOR = "#e15759"


def _x_unit(plan: MemoryPlan) -> str:
    return "us" if tuple(plan.notes.get("step_times") or ()) else "step"


def _fmt_bytes(n: int) -> str:
    return f"{n / MIB:,.3f} MiB ({n:,} B)"


# ---------------------------------------------------------------------------------- data layer
def lifetime_frame(plan: MemoryPlan) -> pd.DataFrame:
    """One row per tensor of ``plan`` (in record order).

    Columns: ``name``, ``producer`` (raw, for analysis; ``""`` when the plan does not know it),
    ``size``, ``first``, ``last`` (inclusive steps), ``offset``, ``end`` (``offset + size``, bytes),
    ``x0``, ``x1`` (the rectangle's x extent: ``[first, last + 1)`` in steps, or
    ``step_times[first]`` to ``step_times[last]`` in µs when the plan came from a trace) and
    ``hover`` (escaped hover text).  ``frame.attrs["x_unit"]`` is ``"step"`` or ``"us"``.

    >>> from workbench.memory import plan_usage
    >>> f = lifetime_frame(plan_usage([(32, 0, 1, "a"), (28, 1, 4, "b")], "greedy_by_size"))
    >>> f[["name", "offset", "end", "x0", "x1"]].values.tolist()
    [['a', 0, 32, 0, 2], ['b', 32, 60, 1, 5]]
    """
    records = plan.records
    producers = tuple(plan.notes.get("producers") or ())
    times = tuple(float(t) for t in (plan.notes.get("step_times") or ()))
    unit = "us" if times else "step"
    rows = []
    for i, (rec, off) in enumerate(zip(records, plan.offsets, strict=True)):
        name = rec.name or f"#{i}"
        producer = str(producers[i]) if i < len(producers) else ""
        if times:
            x0, x1 = times[rec.first], times[rec.last]
            live = (f"steps {rec.first}–{rec.last} ({x0:,.2f}–{x1:,.2f} µs, "
                    f"{x1 - x0:,.2f} µs)")
        else:
            x0, x1 = rec.first, rec.last + 1
            live = f"steps {rec.first}–{rec.last} ({rec.last - rec.first + 1} steps)"
        hover = (f"<b>{escape(name)}</b><br>producer: {escape(producer) or '–'}"
                 f"<br>size: {_fmt_bytes(rec.size)}"
                 f"<br>offsets: {off:,} – {off + rec.size:,} B"
                 f"<br>live: {live}")
        rows.append((name, producer, rec.size, rec.first, rec.last, off, off + rec.size, x0, x1,
                     hover))
    frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    frame.attrs["x_unit"] = unit
    return frame


# ---------------------------------------------------------------------------------- drawing
@notebook_figure
def lifetime_chart(plan: MemoryPlan, *, title: str | None = None) -> go.Figure:
    """The SOMAS lifetime chart of ``plan``: one filled rectangle per tensor (x = lifetime,
    y = ``[offset, offset + size)`` in MiB), the arena size as a solid line and the lower bound as
    a dashed line, both labelled.  Hover names the tensor, its producer, size, offsets and live
    steps (names escaped).  ``title`` is used as given (escape it yourself if it holds user names).
    Returns the figure; never calls ``.show()``.
    """
    frame = lifetime_frame(plan)
    unit = frame.attrs["x_unit"]
    colors = [STREAM_PALETTE[i % len(STREAM_PALETTE)] for i in range(len(frame))]
    x0 = frame["x0"].to_numpy(dtype=float)
    fig = go.Figure(go.Bar(
        x=x0, width=frame["x1"].to_numpy(dtype=float) - x0, offset=0,
        base=(frame["offset"] / MIB).to_numpy(dtype=float),
        y=(frame["size"] / MIB).to_numpy(dtype=float),
        hovertext=frame["hover"].tolist(), hoverinfo="text", name="tensors", showlegend=False,
        marker={"color": colors, "opacity": 0.85, "line": {"color": "white", "width": 0.5}},
    ))
    arena = plan.arena_bytes / MIB
    bound = plan.lower_bound / MIB
    fig.add_hline(y=arena, line={"color": ARENA_COLOR, "width": 1.5},
                  annotation_text=f"arena {arena:,.2f} MiB", annotation_position="top left")
    fig.add_hline(y=bound, line={"color": BOUND_COLOR, "width": 1.5, "dash": "dash"},
                  annotation_text=f"lower bound {bound:,.2f} MiB",
                  annotation_position="bottom right", annotation_font_color=BOUND_COLOR)
    fig.update_layout(**LAYOUT_DEFAULTS)
    default = (f"{escape(plan.planner)}: {len(frame)} tensors in {arena:,.2f} MiB "
               f"(lower bound {bound:,.2f} MiB, ratio {plan.ratio:.3f})")
    fig.update_layout(title=title if title is not None else default, barmode="overlay",
                      bargap=0, hovermode="closest", height=480)
    fig.update_xaxes(type="linear", rangemode="tozero",
                     title=TIME_AXIS_TITLE if unit == "us" else "step (issue order)")
    fig.update_yaxes(title="offset in arena (MiB)", rangemode="tozero")
    return fig
