"""The report says why a policy is slower than serial (issue 25), from its trace and schedule."""

from __future__ import annotations

import workbench as wb
from workbench.orchestration.report import slower_note


def test_a_policy_slower_than_serial_is_named_with_its_reasons(tmp_path):
    # eager mode on the default h100 at batch 1: the host's launches bound every schedule, so
    # both multi-stream policies lose to serial; each is named with its reasons
    cmp = wb.compare(wb.models.build("inception_v3", fused=False), policies=["ios_greedy", "gpto"],
                     show_progress=False, planner=None, mode="eager")
    speed = dict(zip(cmp.table["policy"], cmp.table["speedup"], strict=True))
    assert speed["ios_greedy"] < speed["gpto"] < 1
    note = slower_note(cmp)
    assert f"<b>ios_greedy</b> ({speed['ios_greedy']:.2f}×)" in note
    assert "barriers (device idle" in note and "cross-stream syncs" in note
    assert note.count("the host's launches bound it") == 2 and "serial</b>" not in note
    assert note in cmp.to_html(tmp_path / "r.html", plotlyjs="cdn").read_text(encoding="utf-8")


def test_no_note_when_nothing_is_slower():
    # the same graph as one CUDA graph: the device is the bottleneck and gpto wins
    cmp = wb.compare(wb.models.build("inception_v3"), policies=["gpto"], show_progress=False,
                     planner=None, mode="graph")
    assert slower_note(cmp) == ""
