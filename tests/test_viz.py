"""Views build from small traces without being displayed (STYLE.md R10)."""

from __future__ import annotations

import importlib
import re
import shutil
import sys
import warnings

import graphviz
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import workbench as wb
from workbench.models import inception_v3, nnc_diamond
from workbench.simulator.simulate import simulate
from workbench.values.graph import Graph
from workbench.viz import (
    comparison_styler,
    dag,
    dag_figure,
    dag_layout,
    dag_svg,
    dag_view,
    stream_color,
    timeline,
    timeline_frame,
    timelines,
)
from workbench.viz.display import graph_html, schedule_html, trace_html
from workbench.viz.style import escape, tint
from workbench.viz.tables import BEST_ROW_CSS, ranking, table_html
from workbench.viz.timeline import barrier_times, sync_frame

DAG_MODULE = importlib.import_module("workbench.viz.dag")  # `viz.dag` is the function
HOSTILE = '<script>alert("x")&</script>'
HAS_DOT = shutil.which("dot") is not None or shutil.which("graphviz-pure") is not None
needs_dot = pytest.mark.skipif(not HAS_DOT, reason="Graphviz 'dot' is not installed")


def hostile_graph() -> Graph:
    """A diamond whose op ids, kinds and name try to inject HTML."""
    a, b, c, d = HOSTILE, "b'&\"quoted\"", "<img src=x onerror=alert(1)>", "d\\l<i>"
    return Graph.from_edges([(a, b), (a, c), (b, d), (c, d)],
                            ops={a: "<b>conv</b>", b: "relu", c: "add&", d: "x>y"},
                            name='<b>"graph"&</b>')


@pytest.fixture(scope="module")
def diamond() -> Graph:
    return nnc_diamond()


@pytest.fixture(scope="module")
def traces(diamond: Graph) -> dict[str, wb.trace.Trace]:
    return {p: simulate(wb.schedule(diamond, p)) for p in ("serial", "nnc", "wavefront")}


def _bars(fig: go.Figure) -> list[go.Bar]:
    return [t for t in fig.data if isinstance(t, go.Bar)]


# ------------------------------------------------------------------------------------ style
def test_stream_colors_cycle_and_escape() -> None:
    assert stream_color(0) != stream_color(1)
    assert stream_color(3) == stream_color(13)
    assert escape(HOSTILE) == "&lt;script&gt;alert(&quot;x&quot;)&amp;&lt;/script&gt;"


# ------------------------------------------------------------------------------------ timeline
def test_timeline_frame_one_row_per_op(traces: dict) -> None:
    t = traces["nnc"]
    frame = timeline_frame(t)
    assert len(frame) == len(t.graph)
    assert sorted(frame["op"]) == sorted(t.graph.op_ids)
    df = t.df.set_index("op")
    for row in frame.itertuples():
        assert row.start_us == pytest.approx(df.loc[row.op, "start_us"])
        assert row.duration_us == pytest.approx(df.loc[row.op, "end_us"] - df.loc[row.op,
                                                                                 "start_us"])
        assert row.stream == f"stream {df.loc[row.op, 'stream']}"
        assert escape(row.op) in row.hover and "duration" in row.hover


def test_timeline_bars_are_horizontal_on_a_linear_axis(traces: dict) -> None:
    t = traces["nnc"]
    fig = timeline(t)
    bars = _bars(fig)
    assert sum(len(b.x) for b in bars) == len(t.graph)
    assert all(b.orientation == "h" for b in bars)
    assert fig.layout.xaxis.type == "linear"
    frame = timeline_frame(t)
    starts = np.sort(np.concatenate([np.asarray(b.base, dtype=float) for b in bars]))
    durations = np.sort(np.concatenate([np.asarray(b.x, dtype=float) for b in bars]))
    np.testing.assert_allclose(starts, np.sort(frame["start_us"].to_numpy()))
    np.testing.assert_allclose(durations, np.sort(frame["duration_us"].to_numpy()))
    assert fig.layout.barmode == "overlay"


def test_timeline_color_by_stream(traces: dict) -> None:
    t = traces["nnc"]
    bars = _bars(timeline(t, color_by="stream"))
    assert {b.name for b in bars} == {f"stream {s}" for s in t.df["stream"].unique()}
    for b in bars:
        assert b.marker.color == stream_color(int(b.name.split()[-1]))
    with pytest.raises(ValueError, match="known: kind, stream"):
        timeline(t, color_by="op")


def test_timeline_draws_syncs_from_end_to_start(traces: dict) -> None:
    t = traces["nnc"]
    syncs = sync_frame(t)
    assert len(syncs) == len(t.schedule.syncs) > 0
    lines = [d for d in timeline(t).data if isinstance(d, go.Scatter) and d.name == "sync"]
    assert len(lines) == 1
    a, b = t.schedule.syncs[0]
    assert lines[0].x[0] == pytest.approx(t.end_of(a))
    assert lines[0].x[1] == pytest.approx(t.start_of(b))
    assert lines[0].y[0] == f"stream {t.schedule.stream_of(a)}"
    no_sync = timeline(t, show_syncs=False)
    assert not [d for d in no_sync.data if d.name == "sync"]


def test_timeline_draws_barriers_when_pre_barrier_ops_end(traces: dict) -> None:
    t = traces["wavefront"]
    times = barrier_times(t)
    assert len(times) == t.schedule.n_barriers > 0
    df = t.df
    assert times[0] == pytest.approx(df.loc[df["phase"] < 1, "end_us"].max())
    fig = timeline(t)
    assert not fig.layout.shapes  # one trace for all barriers, not a shape each
    (lines,) = [d for d in fig.data if d.name == "barrier"]
    assert lines.line.dash == "dash"
    assert [x for x in lines.x if x is not None][::2] == pytest.approx(times)


def test_timeline_x_range_and_title(traces: dict) -> None:
    fig = timeline(traces["serial"], x_range=(0, 100), title="t")
    assert tuple(fig.layout.xaxis.range) == (0, 100)
    assert fig.layout.title.text == "t"


def test_timelines_one_row_per_trace_shared_axis(traces: dict) -> None:
    fig = timelines(traces)
    titles = [a.text for a in fig.layout.annotations]
    for policy, t in traces.items():
        assert f"{policy}: {t.makespan:.1f} µs" in titles
    assert fig.layout.xaxis.matches == fig.layout.xaxis2.matches == "x3"  # one time axis
    # one bar per op per trace; legend entries are not repeated across panels
    assert sum(len(b.x) for b in _bars(fig)) == sum(len(t.graph) for t in traces.values())
    names = [b.name for b in _bars(fig) if b.showlegend]
    assert len(names) == len(set(names))
    as_list = timelines(list(traces.values()), shared_x=False)
    assert len(as_list.layout.annotations) == len(traces)
    assert as_list.layout.xaxis.matches is None


def test_timeline_escapes_hostile_names() -> None:
    g = hostile_graph()
    t = simulate(wb.schedule(g, "nnc"))
    frame = timeline_frame(t)
    assert HOSTILE in set(frame["op"])  # the data keeps raw names
    assert not any("<script>" in h for h in frame["hover"])
    fig = timeline(t)
    assert "<script>" not in fig.layout.title.text
    assert all("<b>conv" not in b.name for b in _bars(fig))


# ------------------------------------------------------------------------------------ dag
def _control_graph() -> Graph:
    g = nnc_diamond()
    return g.replace(control_edges=[("N2", "N3")])


def test_dag_colours_nodes_by_stream_and_dashes_control_edges() -> None:
    g = _control_graph()
    s = wb.schedule(g, "nnc")
    source = dag(g, s).source
    for i, op in enumerate(g.op_ids):
        colour = tint(stream_color(s.stream_of(op)), 0.45)
        assert f'n{i} [label="{op}\\n' in source
        line = next(ln for ln in source.splitlines() if ln.strip().startswith(f"n{i} "))
        assert f'fillcolor="{colour}"' in line
    control = next(ln for ln in source.splitlines() if "n1 -> n2" in ln)
    assert "dashed" in control
    data = next(ln for ln in source.splitlines() if "n0 -> n1" in ln)
    assert "dashed" not in data


def test_dag_draws_syncs_bold() -> None:
    g = nnc_diamond()
    s = wb.schedule(g, "nnc")
    source = dag(g, s).source
    idx = {op: i for i, op in enumerate(g.op_ids)}
    for a, b in s.syncs:
        line = next(ln for ln in source.splitlines() if f"n{idx[a]} -> n{idx[b]}" in ln)
        assert "bold" in line


def test_dag_escapes_names_for_dot() -> None:
    source = dag(hostile_graph()).source
    assert "<script>" not in source and "<img" not in source
    assert "&lt;script&gt;alert(&quot;x&quot;)&amp;&lt;/script&gt;" in source
    assert "d\\\\l&lt;i&gt;" in source  # backslash kept literal, not a DOT \l escape


def test_dag_large_graph_is_drawn_with_a_note() -> None:
    g = inception_v3(batch=1, fused=False)
    source = dag(g, max_nodes=100).source
    assert "large graph" in source
    assert source.count("[label=") >= len(g)


@needs_dot
def test_dag_svg_is_inline_svg() -> None:
    g = hostile_graph()
    svg = dag_svg(g, wb.schedule(g, "nnc"))
    assert svg.startswith("<svg") and "<?xml" not in svg and "DOCTYPE" not in svg
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def _hide_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)


def test_dag_falls_back_without_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide_dot(monkeypatch)
    g = hostile_graph()
    s = wb.schedule(g, "nnc")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        svg = dag_svg(g, s)
    assert len(caught) == 1 and "Graphviz 'dot' not found" in str(caught[0].message)
    assert svg.startswith("<svg") and "<script>" not in svg
    assert tint(stream_color(1), 0.45) in svg
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = dag_view(g, s)
    assert len(caught) == 1 and isinstance(fig, go.Figure)


def test_dag_falls_back_when_the_backend_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(DAG_MODULE, "_have_dot", lambda: True)

    def missing(*args: object, **kwargs: object) -> str:
        raise graphviz.ExecutableNotFound(["dot", "-Tsvg"])

    monkeypatch.setattr(DAG_MODULE, "_run_dot", missing)
    with pytest.warns(RuntimeWarning, match="not found") as record:
        svg = dag_svg(nnc_diamond())
    assert len(record) == 1 and svg.startswith("<svg")


def test_dag_layout_is_layered() -> None:
    g = inception_v3(batch=1, fused=False)
    pos = dag_layout(g)
    assert set(pos) == set(g.op_ids)
    assert all(pos[b][1] > pos[a][1] for a, b in g.edges)
    assert len(set(pos.values())) == len(pos)  # no two ops on one spot
    assert dag_layout(nnc_diamond()) == {"N1": (0.0, 0.0), "N2": (-0.5, 1.0), "N3": (0.5, 1.0),
                                         "N4": (0.0, 2.0)}


def test_dag_figure_colours_by_stream() -> None:
    g = _control_graph()
    s = wb.schedule(g, "nnc")
    fig = dag_figure(g, s)
    nodes = next(d for d in fig.data if d.name == "ops")
    assert list(nodes.marker.color) == [tint(stream_color(s.stream_of(o)), 0.45)
                                        for o in g.op_ids]
    control = next(d for d in fig.data if d.name == "control")
    assert control.line.dash == "dash"


# ------------------------------------------------------------------------------------ tables
def _table() -> pd.DataFrame:
    return pd.DataFrame({
        "policy": ["serial", "nnc", "<b>x</b>"], "makespan_us": [44.0, 34.04, 40.0],
        "speedup": [1.0, 1.2926, 1.1], "ratio_to_lb": [1.29412, 1.00118, 1.1765],
        "utilisation": [0.5, 0.7, 0.6],
    })


def test_comparison_styler_formats_and_highlights() -> None:
    html = table_html(_table())
    assert "34.0" in html and "1.29×" in html and "1.001" in html and "70.0%" in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    styler = comparison_styler(_table())
    assert hasattr(styler, "to_html")
    ctx = styler._compute().ctx
    best_cells = {r for (r, _c), css in ctx.items() if css}
    assert best_cells == {0}  # ranked by makespan: nnc is first
    assert BEST_ROW_CSS.split(":")[0] in html


def test_essential_columns_that_do_not_vary_go_behind_the_toggle() -> None:
    """Issue 25: a peak memory equal for every policy took an essential place."""
    table = _table().assign(status="ok", streams=[1, 2, 2], syncs=[0, 1, 1], peak_live_mib=1.0)
    ranked = ranking(table)
    assert list(ranked.columns)[:6] == ["policy", "status", "makespan_us", "speedup", "streams",
                                        "syncs"]
    assert "peak_live_mib" in ranked.columns   # still there, behind the toggle
    html = table_html(table)
    assert "all columns (3 more)" in html
    assert re.search(r'<th [^>]*wb-extra[^>]*>peak memory \(MiB\)</th>', html)


def test_ranking_sorts_by_makespan_with_essential_columns_first() -> None:
    table = _table().assign(status="ok", streams=[1, 2, 2], syncs=[0, 1, 1],
                            peak_live_mib=[1.0, 1.5, 1.0])
    table.loc[1, "makespan_us"] = float("nan")  # no makespan (budget hit): last
    ranked = ranking(table)
    assert list(ranked["policy"]) == ["<b>x</b>", "serial", "nnc"]
    assert list(ranked.columns) == ["policy", "status", "makespan_us", "speedup", "streams",
                                    "syncs", "peak_live_mib", "ratio_to_lb", "utilisation"]
    assert list(table["policy"]) == ["serial", "nnc", "<b>x</b>"]  # the input is unchanged
    html = table_html(table)
    headers = re.findall(r"<th [^>]*>([^<]*)</th>", html)
    assert headers[:7] == ["policy", "status", "makespan (µs)", "speedup vs serial", "streams",
                           "syncs", "peak memory (MiB)"]
    assert "makespan_us" not in html and "ratio to lower bound" in html
    # the two extra columns are hidden until the <details> toggle just before the table opens
    assert '<details class="wb-cols"><summary>all columns (2 more)</summary></details>' in html
    assert len(re.findall(r'<th [^>]*wb-extra[^>]*>', html)) == 2
    assert len(re.findall(r'<td [^>]*wb-extra[^>]*>', html)) == 2 * 3
    assert "details.wb-cols:not([open]) + .wb-scroll table.wb-table .wb-extra" in html


def test_comparison_styler_without_jinja2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jinja2", None)
    out = comparison_styler(_table())
    assert isinstance(out, str) and "<table" in out and "&lt;b&gt;x" in out
    html = table_html(_table())
    assert '<div class="wb-scroll"><table' in html and "<details" not in html  # every column


# ------------------------------------------------------------------------------------ display
def test_reprs_escape_names_and_embed_views() -> None:
    g = hostile_graph()
    s = wb.schedule(g, "nnc")
    t = simulate(s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outputs = [graph_html(g), schedule_html(s), trace_html(t), s._repr_html_(),
                   t._repr_html_()]
    for html in outputs:
        assert "<script>alert(" not in html and "<img src=x" not in html
    assert "<svg" in outputs[0] and "<svg" in outputs[1]
    assert "&lt;script&gt;alert(&quot;x&quot;)" in outputs[1]  # the stream table lists ops
    assert outputs[2].count("* plotly.js v") == 1
    assert 'class="plotly-graph-div"' in outputs[2]
