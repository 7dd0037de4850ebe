"""The comparison views read at a glance (issue 45): the timelines as one figure in rank order
with identical timelines collapsed, a busy track per group, one way of drawing syncs, a menu
of views and a height under 1,400 px; the memory view as peaks per policy plus the selected
policy's curves.  Structure only (trace counts, groups, heights, axis ranges): nothing is drawn.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench.viz.memory_curve import memory_curve, memory_curve_frame
from workbench.viz.memory_peaks import memory_peaks, memory_peaks_frame
from workbench.viz.policy_timelines import MAX_HEIGHT_PX, policy_timelines
from workbench.viz.timeline_groups import identical_groups, row_cap, row_layout, sync_bins
from workbench.viz.utilisation import average_concurrency, concurrency_frame

MIB = 2**20


@pytest.fixture(scope="module")
def inception() -> wb.Comparison:
    """Inception V3 (fused) in graph mode, all 12 policies: the issue's 2,950 px figure."""
    return wb.compare(wb.models.build("inception_v3"), device="h100", mode="graph",
                      show_progress=False)


def _ranked(c: wb.Comparison) -> dict[str, Any]:
    return {str(p): c.traces[p] for p in c.table["policy"] if p in c.traces}


def _buttons(fig: Any) -> list[Any]:
    return list(fig.layout.updatemenus[0].buttons)


def _names(header: str) -> list[str]:
    return header.split("<b>")[1].split("</b>")[0].split(" = ")


# ------------------------------------------------------------------------------ timelines
def test_twelve_policies_make_one_figure_under_1400_px_in_rank_order(
        inception: wb.Comparison) -> None:
    ranked = _ranked(inception)
    assert len(ranked) == 12
    fig = policy_timelines(ranked, selected=inception.best)
    groups = identical_groups(ranked)
    assert fig.layout.height < 1_400 and fig.layout.height <= MAX_HEIGHT_PX
    headers = [a.text for a in fig.layout.annotations]
    assert len(headers) == len(groups) < 12       # identical timelines share a group
    named = [_names(h) for h in headers]
    assert sorted(p for n in named for p in n) == sorted(ranked)      # every policy, once
    firsts = [list(ranked).index(n[0]) for n in named]                 # groups in rank order
    assert firsts == sorted(firsts) and firsts[0] == 0
    assert any(" = " in h for h in headers)       # e.g. gpto = critical_path
    assert headers[0].startswith("▶") and inception.best in _names(headers[0])
    # one busy track per group, every trace tagged visible in the "all" view
    busy = [d for d in fig.data if d.legendgroup == "busy"]
    assert len(busy) == len(groups) and all(d.visible is True for d in fig.data)
    # one way of drawing syncs: binned markers, never per-sync lines
    syncs = [d for d in fig.data if d.legendgroup == "sync"]
    assert syncs and all(d.mode == "markers" for d in syncs)
    assert all(d.fill == "toself" for d in busy)
    # the shared axis of the "all" view runs to the slowest group
    slowest = max(t.makespan for t in ranked.values())
    assert fig.layout.xaxis.range[1] == pytest.approx(slowest * 1.02)


def test_the_menu_shows_one_group_fitted_or_two_side_by_side(inception: wb.Comparison) -> None:
    ranked = _ranked(inception)
    fig = policy_timelines(ranked, selected=inception.best)
    groups = identical_groups(ranked)
    buttons = _buttons(fig)
    g = len(groups)
    assert len(buttons) == 1 + g + (g - 1)
    assert buttons[0].label.startswith(f"all {g} timelines")
    best = groups[0]
    alone = buttons[1].args
    assert alone[1]["xaxis.range"][1] == pytest.approx(best.makespan_us * 1.02)  # fitted
    assert alone[1]["xaxis.range"][1] < 0.6 * fig.layout.xaxis.range[1]   # not serial's
    shown = [v for v in alone[0]["visible"]]
    assert 0 < sum(shown) < len(fig.data)
    assert len(alone[1]["annotations"]) == 1
    pair = buttons[1 + g].args   # the best beside the second group
    assert pair[1]["xaxis2.visible"] and pair[1]["xaxis2.range"] == pair[1]["xaxis.range"]
    axes = {(x, y) for x, y, v in zip(pair[0]["xaxis"], pair[0]["yaxis"], pair[0]["visible"],
                                      strict=True) if v}
    assert axes == {("x", "y"), ("x2", "y2")}
    assert len(pair[1]["annotations"]) == 2
    for data, _ in (b.args for b in buttons):   # one legend entry per key in every view
        keys = [d.legendgroup for d, show in zip(fig.data, data["showlegend"], strict=True)
                if show]
        assert len(keys) == len(set(keys))


def test_selected_moves_the_mark_and_the_pairs(inception: wb.Comparison) -> None:
    ranked = _ranked(inception)
    fig = policy_timelines(ranked, selected="serial")
    marked = [a.text for a in fig.layout.annotations if a.text.startswith("▶")]
    assert len(marked) == 1 and "serial" in _names(marked[0])
    pairs = [b.label for b in _buttons(fig) if " | " in b.label]
    assert pairs and all("serial" in p for p in pairs)
    best = policy_timelines(ranked, selected=inception.best)
    assert fig.layout.shapes[0].y0 > best.layout.shapes[0].y0 == 0.0   # the shaded band moved


def test_identical_timelines_collapse_and_different_orders_do_not() -> None:
    chain = wb.Graph.from_edges([("a", "b"), ("b", "c")])
    fan = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    runs = {p: wb.simulate(wb.schedule(chain, p)) for p in ("serial", "bfs", "dfs")}
    assert [g.labels for g in identical_groups(runs)] == [("serial", "bfs", "dfs")]
    mixed = {"nnc": wb.simulate(wb.schedule(fan, "nnc")),
             "serial": wb.simulate(wb.schedule(fan, "serial"))}
    assert [g.label for g in identical_groups(mixed)] == ["nnc", "serial"]
    fig = policy_timelines(runs)
    assert [b.label for b in _buttons(fig)] == ["the timeline"]
    assert len(fig.layout.annotations) == 1
    assert "serial = bfs = dfs" in fig.layout.annotations[0].text


def test_many_streams_stay_under_the_height_by_sharing_rows() -> None:
    """A graph of 40 independent ops under NNC (40 streams) and 12 labelled copies: rows get
    thinner, then consecutive streams share rows (binned), and the figure stays under 1,400."""
    g = wb.Graph.from_edges([("src", f"n{i}") for i in range(40)])
    wide = wb.simulate(wb.schedule(g, "nnc"))
    assert wide.df["stream"].nunique() >= 20
    # copies with distinct times: each its own group
    traces = {}
    for k in range(12):
        t = wb.simulate(wb.schedule(g, "nnc"))
        t.df["start_us"] = t.df["start_us"] + k * 0.5
        t.df["end_us"] = t.df["end_us"] + k * 0.5
        traces[f"p{k}"] = t
    fig = policy_timelines(traces)
    assert len(fig.layout.annotations) == 12 and fig.layout.height < 1_400
    assert any(d.legendgroup == "binned" for d in fig.data)   # rows shared: drawn binned
    cap = row_cap(identical_groups(traces), budget_units=100)
    assert cap is not None and cap < wide.df["stream"].nunique()
    bands = row_layout(identical_groups(traces), max_rows=cap)
    assert all(b.aggregated and len(b.rows) <= cap for b in bands)


def test_busy_track_is_the_number_of_ops_running_at_once() -> None:
    """Against an independent count: at random times, the ops whose [start, end) holds it."""
    g = wb.models.build("random_dag", n_ops=60, seed=3)
    t = wb.simulate(wb.schedule(g, "nnc"))
    frame = concurrency_frame(t)
    assert frame["time_us"].is_monotonic_increasing and frame["running"].iloc[-1] == 0
    rng = random.Random(0)
    start, end = t.df["start_us"].to_numpy(), t.df["end_us"].to_numpy()
    for _ in range(200):
        x = rng.uniform(0, float(end.max()))
        expect = int(((start <= x) & (x < end)).sum())
        k = int(np.searchsorted(frame["time_us"].to_numpy(), x, side="right")) - 1
        assert int(frame["running"].iloc[k]) == expect
    # the time-weighted mean of the step function is the average concurrency
    dt = np.diff(frame["time_us"].to_numpy())
    mean = float((frame["running"].to_numpy()[:-1] * dt).sum() / float(end.max()))
    assert mean == pytest.approx(average_concurrency(t))
    binned = concurrency_frame(t, max_steps=10, bins=50)
    assert len(binned) == 51 and binned["running"].max() <= frame["running"].max() + 1e-9


def test_sync_bins_count_every_sync_once(inception: wb.Comparison) -> None:
    t = inception.traces["nnc"]
    bins = sync_bins(t)
    assert int(bins["count"].sum()) == len(t.schedule.syncs) > 0
    assert len(bins) <= t.df["stream"].nunique() * 120


# ------------------------------------------------------------------------------ memory
def test_memory_peaks_are_bars_in_rank_order_with_the_best_green(
        inception: wb.Comparison) -> None:
    ranked = _ranked(inception)
    fig = memory_peaks(ranked, best=inception.best_policies, plans=inception.memory_plans,
                       pools=inception.pools)
    bars = fig.data[0]
    assert list(bars.y) == list(ranked) and bars.orientation == "h"
    frame = memory_peaks_frame(ranked)
    expect = [memory_curve_frame(t)["live_bytes"].max() / MIB for t in ranked.values()]
    assert list(frame["peak_mib"]) == pytest.approx(expect)
    green = [p for p, c in zip(bars.y, bars.marker.color, strict=True) if c == "#59a14f"]
    assert green == list(inception.best_policies)
    if frame["peak_mib"].max() - frame["peak_mib"].min() < 0.01:   # Inception: all 7.9 MiB
        assert fig.layout.title.text.startswith("all 12 policies peak at ")
    assert fig.layout.height < 500


def test_memory_curve_shows_the_selected_policy_fitted_to_its_in_use_curve(
        inception: wb.Comparison) -> None:
    ranked = _ranked(inception)
    fig = memory_curve(ranked, pools=inception.pools, selected="nnc")
    shown = [d.name for d in fig.data if d.visible is True]
    assert shown == ["nnc in use", "nnc reserved"]
    assert fig.layout.title.text == "live activation memory: nnc"
    in_use = max(fig.data[[d.name for d in fig.data].index("nnc in use")].y)
    reserved = inception.pools["nnc"].peak_reserved / MIB
    top = fig.layout.yaxis.range[1]
    assert in_use < top < 1.2 * in_use < reserved     # the reservation does not set the axis
    assert any("pool reserved peaks at" in a.text for a in fig.layout.annotations)
    menu, axis = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == [*ranked, "all 12 policies (in use)"]
    assert menu.active == list(ranked).index("nnc")
    every = menu.buttons[-1].args[0]["visible"]
    assert menu.buttons[-1].args[1]["title.text"].endswith(": every policy, in use")
    assert sum(every) == 12 and not any(v and d.line.dash == "dash"
                                        for v, d in zip(every, fig.data, strict=True))
    assert [b.label for b in axis.buttons] == ["y axis: fit in use", "y axis: fit pool reserved"]
    # without selected: every curve at once, as notebooks compare them
    assert all(d.visible is None for d in memory_curve(ranked, pools=inception.pools).data)


def test_the_figure_opens_on_the_view_asked_for(inception: wb.Comparison) -> None:
    """The app opens on the selected policy beside the fastest ("compare"); all groups when
    the selected is the fastest; the menu's active entry says which."""
    ranked = _ranked(inception)
    pair = policy_timelines(ranked, selected="serial", view="compare")
    menu = pair.layout.updatemenus[0]
    assert " | " in menu.buttons[menu.active].label and "serial" in menu.buttons[menu.active].label
    assert pair.layout.xaxis2.visible and len(pair.layout.annotations) == 2
    assert sum(bool(d.visible) for d in pair.data) < len(pair.data)
    best = policy_timelines(ranked, selected=inception.best, view="compare")
    assert best.layout.updatemenus[0].active == 0 and not best.layout.xaxis2.visible
    alone = policy_timelines(ranked, selected="serial", view="selected")
    assert [a.text for a in alone.layout.annotations][0].startswith("▶")
    with pytest.raises(ValueError, match="known: all, selected, compare"):
        policy_timelines(ranked, view="some")
