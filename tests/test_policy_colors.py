"""Every policy of a comparison has its own colour (issue 25: serial and gpto, bfs and
critical_path shared one in the report's memory chart and the sweep figures)."""

from __future__ import annotations

import importlib

import workbench as wb
from workbench.viz.memory_curve import memory_curve
from workbench.viz.style import POLICY_PALETTE, policy_color
from workbench.viz.sweeps import policy_colors


def test_all_registered_policies_get_distinct_colours_in_the_memory_chart():
    cmp = wb.compare(wb.models.nnc_diamond(), show_progress=False, budget_s=None)
    assert len(cmp.traces) == len(wb.policies()) == 12
    fig = memory_curve(cmp.traces)
    colours = [d.line.color for d in fig.data if d.name.endswith(" in use")]
    assert len(colours) == len(cmp.traces)
    assert len(set(colours)) == len(colours), colours


def test_policy_palette_does_not_repeat_before_its_length():
    names = [f"p{i}" for i in range(len(POLICY_PALETTE))]
    assert len(set(policy_colors(names).values())) == len(POLICY_PALETTE) >= 20
    assert policy_color(len(POLICY_PALETTE)) == policy_color(0)   # then it cycles


def test_many_syncs_are_drawn_binned_not_as_a_thousand_arrows(monkeypatch):
    """Issue 25: gpto's 1,053 sync arrows on a 2,000-op DAG painted a solid red block; above
    ``MAX_SYNC_ARROWS`` they are one marker per waiting stream and time bin, counts in hover."""
    tl = importlib.import_module("workbench.viz.timeline")   # the module, not the function

    trace = wb.simulate(wb.schedule(wb.models.build("inception_v3"), "nnc"))
    n = len(tl.sync_frame(trace))
    assert n > 20
    arrows = [d for d in tl.timeline(trace).data if d.legendgroup == "sync"]
    assert len(arrows) == 1 and len(arrows[0].x) == 3 * n   # below the limit: every arrow
    monkeypatch.setattr(tl, "MAX_SYNC_ARROWS", 20)
    (binned,) = [d for d in tl.timeline(trace).data if d.legendgroup == "sync"]
    assert binned.mode == "markers" and f"syncs ({n:,}, binned)" == binned.name
    assert len(binned.x) < n
    counts = [int(t.split("<b>")[1].split(" ")[0]) for t in binned.hovertext]
    assert sum(counts) == n   # every sync is in exactly one marker


def test_cmp_timelines_is_the_reports_figure():
    """Issue 45: ``cmp.timelines()`` draws what the report draws (rank order, identical
    timelines collapsed, the best marked), not the stacked panels of every trace."""
    from workbench.viz import policy_timelines

    cmp = wb.compare(wb.models.nnc_diamond(), ["nnc", "asap"], show_progress=False,
                     planner=None)
    fig = cmp.timelines()
    ranked = {p: cmp.traces[p] for p in cmp.table["policy"]}
    assert fig.to_json() == policy_timelines(ranked, selected=cmp.best).to_json()
    axes = [fig.layout[k] for k in fig.layout if k.startswith("xaxis")]
    assert axes and all(a.title.text == "time (µs)" for a in axes)
