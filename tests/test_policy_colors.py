"""Every policy of a comparison has its own colour (issue 25: serial and gpto, bfs and
critical_path shared one in the report's memory chart and the sweep figures)."""

from __future__ import annotations

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
