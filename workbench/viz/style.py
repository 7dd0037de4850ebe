"""Shared look of every view: the stream colour map, the op-kind colours, layout defaults and the
one escaping helper used for every name that goes into HTML, SVG or hover text.

Colours come from here only (STYLE.md R10), so stream 2 is the same colour in the timeline, in the
DAG and in the report.

>>> stream_color(0) == stream_color(len(STREAM_PALETTE))
True
>>> escape('<b a="1">&')
'&lt;b a=&quot;1&quot;&gt;&amp;'
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

# Tableau 10: distinct, colour-blind friendlier than the plotly default, and readable as a fill.
STREAM_PALETTE: tuple[str, ...] = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
)
# A second qualitative palette for op kinds (plotly's "Set2" + "Dark2"), so that a kind-coloured
# timeline is not mistaken for a stream-coloured one.
KIND_PALETTE: tuple[str, ...] = (
    "#66c2a5", "#fc8d62", "#8da0cb", "#e78ac3", "#a6d854", "#ffd92f", "#e5c494", "#b3b3b3",
    "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666",
)
#: Policy colours: the stream palette, then the kind palette, so that every policy of a comparison
#: gets its own colour (26 before any repeats; 12 policies are registered).
POLICY_PALETTE: tuple[str, ...] = STREAM_PALETTE + tuple(
    c for c in KIND_PALETTE if c not in STREAM_PALETTE)

FONT_FAMILY = "Inter, 'Segoe UI', Helvetica, Arial, sans-serif"
TIME_AXIS_TITLE = "time (µs)"
SYNC_COLOR = "#d62728"
BARRIER_COLOR = "#555555"

#: The legend of every figure: horizontal, at the bottom of the figure (``yref="container"``),
#: below the x axis title; plotly grows the bottom margin to fit it, so however many rows it
#: wraps to, it never covers the title at the top (nor the plot, nor the axis title).
LEGEND_BELOW: dict[str, Any] = {"orientation": "h", "yref": "container", "y": 0.0,
                                "yanchor": "bottom", "xanchor": "left", "x": 0.0}
LEGEND_ROW_PX = 22      # height of one row of the legend
LEGEND_PER_ROW = 5      # entries per legend row assumed when sizing a figure

#: Layout defaults shared by every plotly figure of the workbench.
LAYOUT_DEFAULTS: dict[str, Any] = {
    "template": "plotly_white",
    "font": {"family": FONT_FAMILY, "size": 12},
    "margin": {"l": 70, "r": 20, "t": 70, "b": 50},
    "hoverlabel": {"align": "left"},
    "legend": LEGEND_BELOW,
}


def legend_px(n_entries: int) -> int:
    """Pixels to add to a figure's height for a bottom legend of ``n_entries`` (an estimate:
    :data:`LEGEND_PER_ROW` entries a row), so the plot keeps its height.

    >>> legend_px(0), legend_px(5), legend_px(6)
    (0, 22, 44)
    """
    return LEGEND_ROW_PX * -(-max(0, n_entries) // LEGEND_PER_ROW)


def legend_entries(fig: Any) -> int:
    """How many traces of ``fig`` have a legend entry (``showlegend`` not ``False``; none when
    the layout hides the legend)."""
    if fig.layout.showlegend is False:
        return 0
    return sum(1 for d in fig.data if getattr(d, "showlegend", None) is not False)


def escape(text: object) -> str:
    r"""``html.escape(str(text), quote=True)`` of the text with its invisible characters shown
    (:func:`workbench._terminal.visible`: a bidi override in a name shows as ``\u202e``
    instead of reversing it): the one escaping used for names in HTML/SVG/hover."""
    from workbench._terminal import visible

    return html.escape(visible(text), quote=True)


def policy_color(i: int) -> str:
    """The colour of the ``i``-th policy of a comparison or sweep: distinct for the first
    ``len(POLICY_PALETTE)`` (26) policies, then cycling.

    >>> len({policy_color(i) for i in range(26)})
    26
    """
    return POLICY_PALETTE[int(i) % len(POLICY_PALETTE)]


def stream_color(i: int) -> str:
    """The colour of stream ``i`` (a qualitative palette, cycling).

    >>> stream_color(1)
    '#f28e2b'
    """
    return STREAM_PALETTE[int(i) % len(STREAM_PALETTE)]


def tint(color: str, amount: float = 0.5) -> str:
    """Blend a ``#rrggbb`` colour towards white by ``amount`` (0 = unchanged, 1 = white).

    >>> tint("#000000", 0.5)
    '#808080'
    """
    r, g, b = (int(color[k:k + 2], 16) for k in (1, 3, 5))
    mix = [round(c + (255 - c) * amount) for c in (r, g, b)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def kind_colors(kinds: Iterable[str]) -> dict[str, str]:
    """A colour per op kind, assigned in first-seen order (pass kinds in graph program order so
    that several figures of one graph agree).

    >>> kind_colors(["conv2d", "relu", "conv2d"])
    {'conv2d': '#66c2a5', 'relu': '#fc8d62'}
    """
    out: dict[str, str] = {}
    for kind in kinds:
        if kind not in out:
            out[kind] = KIND_PALETTE[len(out) % len(KIND_PALETTE)]
    return out


def stream_label(stream: object) -> str:
    """The y-axis label of a stream row: ``"stream 0"``."""
    return f"stream {stream}"
