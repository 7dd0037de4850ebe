"""The bounds a comparison shows bound every policy (issue 35): ``ratio_to_optimum >= 1`` and
``makespan >= lower_bound_us``.  On a graph with control flow the exact search orders only the
top-level ops while every policy also schedules the loop bodies and branches (``rnn_loop``'s
policies reached 162.1 µs against an "optimum" of 224.2 µs), so no optimum is shown there, with a
note saying why; the lower bound still holds."""

from __future__ import annotations

import math

import pytest

import workbench as wb


@pytest.mark.parametrize("model", ["rnn_loop", "nnc_while_loop", "nnc_case_of"])
def test_control_flow_graphs_show_no_optimum_and_keep_their_lower_bound(model: str) -> None:
    cmp = wb.compare(wb.models.build(model), mode="graph", show_progress=False)
    table = cmp.table
    assert table["optimum_us"].isna().all() and table["ratio_to_optimum"].isna().all()
    assert any("exact optimum not shown: the graph holds control flow" in n
               for n in cmp.settings["notes"])
    assert (table["makespan_us"] >= table["lower_bound_us"] - 1e-9).all()


@pytest.mark.parametrize("model", ["nnc_diamond", "textbook_mul_sub_add", "raf_three_branches"])
def test_small_graphs_without_control_flow_keep_an_optimum_no_policy_beats(model: str) -> None:
    cmp = wb.compare(wb.models.build(model), mode="graph", show_progress=False)
    table = cmp.table
    assert not math.isnan(table["optimum_us"].iloc[0])
    # the search and a policy can reach the same schedule by other syncs or barriers, whose
    # event arithmetic differs in the last digits (nnc_diamond: 48.4766 against 48.4771 µs)
    assert (table["ratio_to_optimum"] >= 1 - 1e-4).all()
    assert (table["makespan_us"] >= table["lower_bound_us"] - 1e-9).all()
