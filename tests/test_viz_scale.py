"""Views at scale: the DAG's node cap and Graphviz timeout, barriers as one trace, binned
timelines of huge traces (sizes are counted, never timed)."""

from __future__ import annotations

import importlib
import subprocess
import warnings

import numpy as np
import plotly.graph_objects as go
import pytest

import workbench as wb
from workbench.simulator.simulate import simulate
from workbench.values.trace import Trace
from workbench.viz import dag_svg, dag_view, timeline, timelines
from workbench.viz.timeline import aggregated, barrier_times
from workbench.viz.utilisation import stream_groups, utilisation_frame

DAG_MODULE = importlib.import_module("workbench.viz.dag")  # `viz.dag` is the function


@pytest.fixture(scope="module")
def big() -> wb.Graph:
    return wb.models.random_dag(1500, seed=1)


@pytest.fixture(scope="module")
def wavefront_big(big: wb.Graph) -> Trace:
    return simulate(wb.schedule(big, "wavefront"))


# ------------------------------------------------------------------------------------ dag
def test_dag_above_the_cap_is_a_summary_that_says_why(big: wb.Graph,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: object, **kwargs: object) -> str:
        raise AssertionError("Graphviz must not run above the cap")

    monkeypatch.setattr(DAG_MODULE, "_run_dot", never)
    svg = dag_svg(big, max_ops=1000)
    assert svg.startswith("<svg") and "wb-dag-summary" in svg
    assert "1500 ops is more than max_ops=1000" in svg and "<rect" in svg
    assert svg.count("<text") == 3  # a summary, not 1500 nodes


def test_dag_view_above_the_cap_is_the_plotly_drawing(big: wb.Graph,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    fig = dag_view(big, max_ops=1000)
    assert isinstance(fig, go.Figure)
    (ops,) = [d for d in fig.data if d.name == "ops"]
    assert len(ops.x) == len(big)
    monkeypatch.setattr(DAG_MODULE, "FIGURE_MAX_OPS", 1000)
    summary = dag_view(big, max_ops=1000)
    assert not summary.data and "not drawn" in summary.layout.annotations[0].text


def test_dag_graphviz_timeout_falls_back_to_the_builtin_drawing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(DAG_MODULE, "_have_dot", lambda: True)
    seen = {}

    def slow(source: str, timeout_s: float | None) -> str:
        seen["timeout_s"] = timeout_s
        raise subprocess.TimeoutExpired(["dot", "-Tsvg"], timeout_s or 0)

    monkeypatch.setattr(DAG_MODULE, "_run_dot", slow)
    g = wb.models.nnc_diamond()
    with pytest.warns(RuntimeWarning, match="took more than 2 s"):
        svg = dag_svg(g, wb.schedule(g, "nnc"), timeout_s=2)
    assert seen["timeout_s"] == 2
    assert svg.startswith("<svg") and "built-in drawing instead" in svg and "N4" in svg


@pytest.mark.skipif(not DAG_MODULE._have_dot(), reason="Graphviz 'dot' is not installed")
def test_dag_real_graphviz_timeout_is_enforced() -> None:
    g = wb.models.random_dag(900, seed=3)  # several seconds of dot layout
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        svg = dag_svg(g, timeout_s=0.01)
    assert "took more than 0.01 s" in svg


# ------------------------------------------------------------------------------------ barriers
def test_barriers_are_one_trace_on_an_overlay_axis(wavefront_big: Trace) -> None:
    times = barrier_times(wavefront_big)
    assert len(times) > 50
    fig = timeline(wavefront_big, max_bars=10**6, max_rows=10**6)
    assert not fig.layout.shapes
    (lines,) = [d for d in fig.data if d.name == "barrier"]
    assert len(lines.x) == 3 * len(times)
    overlay = fig.layout[f"yaxis{lines.yaxis[1:]}"]
    assert overlay.overlaying == "y" and not overlay.visible and tuple(overlay.range) == (0, 1)


def test_barriers_in_stacked_timelines_follow_their_panel() -> None:
    g = wb.models.raf_three_branches()
    traces = {p: simulate(wb.schedule(g, p)) for p in ("serial", "wavefront", "nnc")}
    fig = timelines(traces)
    (lines,) = [d for d in fig.data if d.name == "barrier"]
    overlay = fig.layout[f"yaxis{lines.yaxis[1:]}"]
    assert overlay.overlaying == "y2" and lines.xaxis == "x2"  # the wavefront panel
    assert [x for x in lines.x if x is not None][::2] == pytest.approx(
        barrier_times(traces["wavefront"]))


# ------------------------------------------------------------------------------------ binning
def test_utilisation_frame_keeps_the_busy_time(wavefront_big: Trace) -> None:
    frame = utilisation_frame(wavefront_big, bins=50, max_rows=8)
    df = wavefront_big.df
    groups = stream_groups(df["stream"].tolist(), 8)
    assert len(groups) <= 8 and set(frame["stream"]) <= {label for label, _ in groups}
    assert frame["busy"].between(0, 1).all()
    width = frame["x1_us"] - frame["x0_us"]
    sizes = {label: len(members) for label, members in groups}
    busy_time = (frame["busy"] * width * frame["stream"].map(sizes)).sum()
    assert busy_time == pytest.approx((df["end_us"] - df["start_us"]).sum(), rel=1e-9)


def test_utilisation_frame_of_one_op() -> None:
    g = wb.Graph.from_edges([], ops=["a"], durations={"a": 10})
    t = simulate(wb.schedule(g, "serial"))
    frame = utilisation_frame(t, bins=4)
    start, end = t.start_of("a"), t.end_of("a")
    edges = np.linspace(0, end, 5)
    expected = [(min(b, end) - max(a, start)) / (b - a) for a, b in zip(edges, edges[1:])]
    got = dict(zip(frame["x0_us"], frame["busy"]))
    assert [got.get(a, 0.0) for a in edges[:-1]] == pytest.approx(
        [max(0.0, e) for e in expected])
    assert set(frame["ops"]) == {1}


def test_huge_traces_are_drawn_binned(wavefront_big: Trace) -> None:
    assert aggregated(wavefront_big, max_bars=1000) and not aggregated(wavefront_big,
                                                                       max_bars=10**6)
    fig = timelines({"wavefront": wavefront_big}, max_bars=1000, max_rows=8, show_syncs=True)
    bars = [d for d in fig.data if isinstance(d, go.Bar)]
    assert len(bars) == 1 and len(bars[0].x) <= 8 * 200  # rows × bins, not 1500 bars
    # the bins are coloured by busy fraction with colour strings; the scale (0-1) is shown by
    # an empty trace that carries the colour bar
    assert all(str(c).startswith("rgb") for c in bars[0].marker.color)
    scales = [d for d in fig.data if getattr(d.marker, "colorscale", None) is not None
              and getattr(d.marker, "cmax", None) is not None]
    assert scales and scales[0].marker.cmin == 0 and scales[0].marker.cmax == 1
    assert not [d for d in fig.data if d.name == "sync"]
    assert "binned" in fig.layout.annotations[0].text
    assert [d for d in fig.data if d.name == "barrier"]  # barriers are still drawn
    small = timelines({"wavefront": wavefront_big}, max_bars=10**6, max_rows=10**6)
    assert sum(len(b.x) for b in small.data if isinstance(b, go.Bar)) == len(wavefront_big.df)


def test_many_streams_share_rows() -> None:
    g = wb.models.random_dag(400, seed=2)
    t = simulate(wb.schedule(g, "nnc"))
    n_streams = t.df["stream"].nunique()
    assert n_streams > 10
    fig = timeline(t, max_rows=10)
    assert len(fig.layout.yaxis.categoryarray) <= 10
    assert fig.layout.height < 140 + 50 + 28 * n_streams


def test_barrier_times_match_the_definition(wavefront_big: Trace) -> None:
    df = wavefront_big.df
    brute = [float(df.loc[df["phase"] < k, "end_us"].max())
             for k in range(1, int(df["phase"].max()) + 1) if (df["phase"] < k).any()]
    assert barrier_times(wavefront_big) == pytest.approx(brute)
    gappy = Trace(df.assign(phase=df["phase"] * 2 + 1), graph=wavefront_big.graph,
                  policy="wavefront", device="h100")  # no ops in phase 0 nor any even phase
    gdf = gappy.df
    brute = [float(gdf.loc[gdf["phase"] < k, "end_us"].max())
             for k in range(1, int(gdf["phase"].max()) + 1) if (gdf["phase"] < k).any()]
    assert barrier_times(gappy) == pytest.approx(brute)
