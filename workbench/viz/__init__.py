"""Views of graphs, schedules, traces and memory plans: plotly timelines, memory curves,
lifetime charts, Graphviz DAGs, ranking tables.

Importing this package loads plotly and graphviz; the core (``import workbench``) never does
(STYLE.md R9).  Every view has a pure data layer (``timeline_frame``, ``dag_layout``,
``memory_curve_frame``, ``lifetime_frame``) and a render function returning a figure that is never
``.show()``-n.

The figures these functions return are :class:`~workbench.viz.figure.NotebookFigure`: they
render in every notebook front end and in nbconvert HTML without anyone choosing a plotly
renderer, and importing this package leaves plotly's global settings (``pio.renderers.default``)
alone.

Views layer: may import everything below it (values, simulator, executors, io), never
orchestration or the apps; it fills the view registry ``workbench.values.views``.
"""

from __future__ import annotations

from workbench.viz.dag import dag, dag_figure, dag_layout, dag_svg, dag_view
from workbench.viz.figure import NotebookFigure, as_notebook_figure
from workbench.viz.lifetimes import lifetime_chart, lifetime_frame
from workbench.viz.memory_curve import memory_curve, memory_curve_frame
from workbench.viz.memory_peaks import memory_peaks, memory_peaks_frame
from workbench.viz.policy_timelines import policy_timelines
from workbench.viz.style import stream_color
from workbench.viz.tables import comparison_styler, table_html
from workbench.viz.timeline import timeline, timeline_frame, timelines

__all__ = [
    "NotebookFigure", "as_notebook_figure", "comparison_styler", "dag", "dag_figure",
    "dag_layout", "dag_svg", "dag_view",
    "lifetime_chart", "lifetime_frame", "memory_curve", "memory_curve_frame", "memory_peaks",
    "memory_peaks_frame", "policy_timelines", "stream_color", "table_html", "timeline",
    "timeline_frame", "timelines",
]
