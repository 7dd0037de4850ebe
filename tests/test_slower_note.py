"""The report says why a policy is slower than serial (issue 25), from its trace and schedule."""

from __future__ import annotations

import workbench as wb
from workbench.orchestration.report import slower_note


def test_a_policy_slower_than_serial_is_named_with_its_reasons(tmp_path):
    cmp = wb.compare(wb.models.build("inception_v3", fused=False), policies=["ios_greedy", "gpto"],
                     show_progress=False, planner=None)
    speed = dict(zip(cmp.table["policy"], cmp.table["speedup"], strict=True))
    assert speed["ios_greedy"] < 1 < speed["gpto"]   # the example holds on the default h100
    note = slower_note(cmp)
    assert "<b>ios_greedy</b> (0.95×)" in note and "barriers (device idle" in note
    assert "gpto" not in note and "serial</b>" not in note
    assert note in cmp.to_html(tmp_path / "r.html", plotlyjs="cdn").read_text(encoding="utf-8")


def test_no_note_when_nothing_is_slower():
    cmp = wb.compare(wb.models.build("inception_v3"), policies=["gpto"], show_progress=False,
                     planner=None)
    assert slower_note(cmp) == ""
