"""Memory views: the live-memory curve and the SOMAS lifetime chart build from real plans and
traces, agree with the planners' numbers, escape names, and land in the HTML report."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
import pytest

import workbench as wb
from workbench.memory import plan_memory, replay_pool
from workbench.models import inception_v3, nnc_diamond
from workbench.orchestration import report
from workbench.orchestration.compare import Comparison
from workbench.simulator.simulate import simulate
from workbench.values.graph import Graph
from workbench.viz import lifetime_chart, lifetime_frame, memory_curve, memory_curve_frame
from workbench.viz.display import comparison_html, memory_plan_html

MIB = 2**20
HOSTILE = '<script>alert("x")&</script>'
PLOTLY_JS_MARKER = "* plotly.js v"


def hostile_graph() -> Graph:
    a, b, c = HOSTILE, "b'&\"q\"", "<img src=x onerror=alert(1)>"
    return Graph.from_edges([(a, b), (a, c), (b, "d"), (c, "d")],
                            ops={a: "<b>conv</b>", b: "relu", c: "add&", "d": "x>y"},
                            sizes={a: 3 << 20, b: 1 << 20, c: 2 << 20, "d": 1 << 19},
                            name='<script>alert("name")</script>')


@pytest.fixture(scope="module")
def inception() -> Graph:
    return inception_v3(batch=1, fused=False)


@pytest.fixture(scope="module")
def inception_traces(inception: Graph) -> dict[str, wb.trace.Trace]:
    return {p: simulate(wb.schedule(inception, p)) for p in ("serial", "nnc", "wavefront")}


def _output_bytes(graph: Graph) -> int:
    return sum(graph.tensor(t).size_bytes for t in set(graph.outputs))


Rect = tuple[float, float, float, float]


def _rect_overlap(a: Rect, b: Rect) -> bool:
    ax0, ax1, ay0, ay1 = a
    bx0, bx1, by0, by1 = b
    return ax0 < bx1 and bx0 < ax1 and ay0 < by1 and by0 < ay1


# ------------------------------------------------------------------------------ curve: data
def test_curve_frame_is_a_step_function_ending_at_the_outputs(inception_traces: dict) -> None:
    for trace in inception_traces.values():
        frame = memory_curve_frame(trace)
        assert list(frame.columns) == ["time_us", "live_bytes"]
        times = frame["time_us"].to_numpy()
        assert times[0] == 0.0 and frame["live_bytes"].iloc[0] == 0
        assert np.all(np.diff(times) > 0)
        assert times[-1] == pytest.approx(trace.makespan)
        assert (frame["live_bytes"] >= 0).all()
        assert frame["live_bytes"].iloc[-1] == _output_bytes(trace.graph)


@pytest.mark.parametrize("make", [nnc_diamond, lambda: inception_v3(batch=1, fused=False)],
                         ids=["diamond", "inception"])
def test_curve_peak_is_the_plan_lower_bound_of_a_serial_trace(make: Callable[[], Graph]) -> None:
    trace = simulate(wb.schedule(make(), "serial"))
    plan = plan_memory(trace, "somas", alignment=1)
    assert plan.notes["lifetimes_from"] == "trace"
    assert memory_curve_frame(trace)["live_bytes"].max() == plan.lower_bound


def test_curve_of_a_two_op_chain() -> None:
    g = Graph.from_edges([("a", "b")], sizes={"a": 100, "b": 10})
    trace = simulate(wb.schedule(g, "serial"))
    frame = memory_curve_frame(trace)
    start = dict(zip(trace.df["op"], trace.df["start_us"], strict=True))
    assert frame["live_bytes"].tolist() == [0, 100, 110, 10]
    assert frame["time_us"].tolist()[1:3] == [pytest.approx(start["a"]), pytest.approx(start["b"])]


# ------------------------------------------------------------------------------ curve: figure
def test_memory_curve_one_step_line_per_schedule(inception_traces: dict) -> None:
    fig = memory_curve(inception_traces)
    assert isinstance(fig, go.Figure) and len(fig.data) == 3
    for line, (policy, trace) in zip(fig.data, inception_traces.items(), strict=True):
        frame = memory_curve_frame(trace)
        assert line.line.shape == "hv" and line.name == f"{policy} in use"
        np.testing.assert_allclose(np.asarray(line.x), frame["time_us"].to_numpy())
        np.testing.assert_allclose(np.asarray(line.y), frame["live_bytes"].to_numpy() / MIB)
        assert "MiB" in line.hovertemplate and "µs" in line.hovertemplate
        assert f"<b>{policy}</b>" in line.hovertemplate  # once per line, not once per point
    assert fig.layout.xaxis.type == "linear" and "MiB" in fig.layout.yaxis.title.text


def test_memory_curve_adds_dashed_pool_reserved_lines(inception_traces: dict) -> None:
    pools = {p: replay_pool(t, chunk_bytes=4 << 20) for p, t in inception_traces.items()}
    fig = memory_curve(inception_traces, pools=pools, title="t")
    assert len(fig.data) == 6 and fig.layout.title.text == "t"
    for k, (policy, pool) in enumerate(pools.items()):
        used, reserved = fig.data[2 * k], fig.data[2 * k + 1]
        assert reserved.name == f"{policy} reserved" and reserved.line.dash == "dash"
        assert reserved.line.shape == "hv" and reserved.line.color == used.line.color
        assert max(reserved.y) == pytest.approx(pool.peak_reserved / MIB)
        assert max(reserved.y) >= max(used.y)  # the pool reserves at least what is live
        # issue 35: one axis for both, so a 32 MiB reservation is never drawn at the height
        # of 8 MiB in use (a second axis did that: reserved looked equal to peak in use)
        assert reserved.yaxis in (None, "y") and used.yaxis in (None, "y")
    assert "yaxis2" not in fig.to_plotly_json()["layout"]     # no second axis
    assert "reserved" in fig.layout.yaxis.title.text and "in use" in fig.layout.yaxis.title.text


def test_memory_curve_accepts_one_trace_or_a_sequence(inception_traces: dict) -> None:
    trace = inception_traces["nnc"]
    assert len(memory_curve(trace).data) == 1
    assert [d.name for d in memory_curve([trace, inception_traces["serial"]]).data] == [
        "nnc in use", "serial in use"]
    with pytest.raises(ValueError):
        memory_curve([])


def test_memory_curve_escapes_policy_labels(inception_traces: dict) -> None:
    fig = memory_curve({HOSTILE: inception_traces["serial"]})
    assert "<script>" not in fig.data[0].name and "&lt;script&gt;" in fig.data[0].name
    assert "&lt;script&gt;alert(&quot;x&quot;)&amp;&lt;/script&gt;" in fig.data[0].hovertemplate
    assert "<script>" not in fig.data[0].hovertemplate


# ------------------------------------------------------------------------------ lifetimes
def test_lifetime_frame_matches_the_plan_in_steps(inception: Graph) -> None:
    plan = plan_memory(wb.schedule(inception, "nnc"))
    frame = lifetime_frame(plan)
    assert frame.attrs["x_unit"] == "step" and len(frame) == len(plan.records)
    assert frame["offset"].tolist() == list(plan.offsets)
    assert frame["size"].tolist() == [r.size for r in plan.records]
    assert (frame["end"] - frame["offset"]).tolist() == [r.size for r in plan.records]
    assert frame["x0"].tolist() == [r.first for r in plan.records]
    assert frame["x1"].tolist() == [r.last + 1 for r in plan.records]
    assert frame["producer"].tolist() == list(plan.notes["producers"])
    assert frame["end"].max() <= plan.arena_bytes


def test_lifetime_frame_in_microseconds_for_a_trace_plan(inception_traces: dict) -> None:
    trace = inception_traces["serial"]
    plan = plan_memory(trace)
    times = plan.notes["step_times"]
    frame = lifetime_frame(plan)
    assert frame.attrs["x_unit"] == "us"
    for row, rec in zip(frame.itertuples(), plan.records, strict=True):
        assert (row.x0, row.x1) == (times[rec.first], times[rec.last])
    start = dict(zip(trace.df["op"], trace.df["start_us"], strict=True))
    first = frame.iloc[0]
    assert first["x0"] == pytest.approx(start[first["producer"]])
    assert lifetime_chart(plan).layout.xaxis.title.text == "time (µs)"


def test_lifetime_chart_rectangles_match_offsets_and_sizes(inception: Graph) -> None:
    plan = plan_memory(wb.schedule(inception, "wavefront"))
    fig = lifetime_chart(plan)
    bars = fig.data[0]
    assert isinstance(bars, go.Bar) and len(fig.data) == 1
    n = len(plan.records)
    assert len(bars.x) == n and len(bars.hovertext) == n and bars.offset == 0
    np.testing.assert_allclose(np.asarray(bars.base, dtype=float), np.array(plan.offsets) / MIB)
    np.testing.assert_allclose(np.asarray(bars.y), np.array([r.size for r in plan.records]) / MIB)
    np.testing.assert_allclose(np.asarray(bars.x), [r.first for r in plan.records])
    np.testing.assert_allclose(np.asarray(bars.width), [r.last - r.first + 1 for r in plan.records])
    # rectangles of tensors that must not share bytes never intersect (the chart shows a valid plan)
    rects = [(x, x + w, b, b + h) for x, w, b, h in zip(bars.x, bars.width, bars.base, bars.y,
                                                        strict=True)]
    for i, j in plan.conflicting_pairs():
        if plan.records[i].size and plan.records[j].size:
            assert not _rect_overlap(rects[i], rects[j]), (i, j)


def test_lifetime_chart_draws_arena_and_lower_bound_lines() -> None:
    plan = plan_memory(wb.schedule(nnc_diamond(), "nnc"), "greedy_by_size")
    fig = lifetime_chart(plan, title="plan")
    lines = {s.line.dash: s for s in fig.layout.shapes}
    assert set(lines) == {None, "dash"}
    assert lines[None].y0 == lines[None].y1 == pytest.approx(plan.arena_bytes / MIB)
    assert lines["dash"].y0 == pytest.approx(plan.lower_bound / MIB)
    labels = " ".join(a.text for a in fig.layout.annotations)
    assert "arena" in labels and "lower bound" in labels
    assert fig.layout.title.text == "plan"
    assert lifetime_chart(plan).layout.title.text.startswith("greedy_by_size")


def test_lifetime_chart_escapes_hostile_tensor_names() -> None:
    plan = plan_memory(wb.schedule(hostile_graph(), "nnc"))
    fig = lifetime_chart(plan)
    hover = list(fig.data[0].hovertext)
    text = "".join(hover)
    assert "<script>" not in text and "<img" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&amp;&lt;/script&gt;:out" in text  # the tensor
    assert "producer: &lt;img src=x onerror=alert(1)&gt;" in text
    assert all("size:" in h and "offsets:" in h and "live: steps" in h for h in hover)
    assert "<script>" not in lifetime_frame(plan)["hover"].str.cat()


def test_lifetime_chart_of_five_hundred_tensors_is_one_trace() -> None:
    records = [(1 + (i * 7919) % 4096, i % 50, i % 50 + 1 + i % 7, f"t{i}") for i in range(500)]
    plan = wb.memory.plan_usage(records, "greedy_by_size")
    fig = lifetime_chart(plan)
    assert len(fig.data) == 1 and len(fig.data[0].x) == 500


# ------------------------------------------------------------------------------ display, report
def test_memory_plan_html_escapes_and_embeds_the_chart() -> None:
    plan = plan_memory(wb.schedule(hostile_graph(), "nnc"))
    html = memory_plan_html(plan)
    assert "Memory plan somas" in html and "lower bound" in html and "arena" in html
    assert html.count(PLOTLY_JS_MARKER) == 1
    assert "<script>alert(" not in html and "<img src=x" not in html


@pytest.fixture(scope="module")
def inception_comparison(inception: Graph) -> Comparison:
    return wb.compare(inception, ["serial", "nnc", "wavefront"], show_progress=False)


def test_report_has_a_memory_section(inception_comparison: Comparison) -> None:
    c = inception_comparison
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        html = report.render(c)
    assert html.count(PLOTLY_JS_MARKER) == 1
    ids = re.findall(r'<div id="([^"]+)" class="plotly-graph-div"', html)
    assert ids == ["wb-fig-makespan", "wb-fig-timelines", "wb-fig-memory-peaks", "wb-fig-memory",
                   "wb-fig-lifetimes"]
    packed = re.findall(r'<script type="application/x-wb-figure" data-div="([^"]+)">', html)
    assert packed == ids  # each figure's JSON beside its div, drawn by one loader
    assert '<section id="memory"><h2>Memory</h2>' in html and 'href="#memory"' in html
    plan = c.memory_plans[c.best]
    assert f"by planner <b>{plan.planner}</b>" in html
    assert f"arena <b>{plan.arena_bytes / MIB:,.2f} MiB</b>" in html
    assert f"ratio <b>{plan.ratio:.3f}</b>" in html
    assert '<div class="wb-scroll">' in html and "overflow-x: auto" in html
    for label in ("peak memory (MiB)", "planned arena (MiB)", "arena / peak",
                  "pool reserved (MiB)"):  # the memory columns, with readable headers
        assert label in html


def test_report_memory_section_escapes_hostile_names() -> None:
    c = wb.compare(hostile_graph(), ["serial", "nnc"], show_progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        html = report.render(c)
    assert 'id="wb-fig-lifetimes"' in html
    assert "<script>alert(" not in html and "<img src=x" not in html


def test_comparison_html_scrolls_the_wide_table(inception_comparison: Comparison) -> None:
    html = comparison_html(inception_comparison)
    assert "overflow-x: auto" in html and "arena / peak" in html
    assert "Comparison on inception_v3_b1" in inception_comparison._repr_html_()
