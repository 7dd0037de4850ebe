"""The rank correlation with measurement noise tied (``judge.noise_tied_ranks``, issue 23): a
column beside the criterion, not a criterion."""

from __future__ import annotations

import math

import pytest

from workbench.simulator.fidelity import judge as J
from workbench.simulator.fidelity.measured import load_measured_rows


def test_overlapping_quartile_ranges_chain_into_one_tie() -> None:
    # 10 [9, 10.6] overlaps 11 [10.5, 12], which overlaps 12.5 [11.9, 13]: one tie of three
    # (ranks 1-3, average 2) although 10 and 12.5 do not overlap; 20 stands alone
    assert J.noise_tied_ranks([12.5, 20, 10, 11], [11.9, 19, 9, 10.5],
                              [13, 21, 10.6, 12]) == [2.0, 4.0, 2.0, 2.0]
    assert J.noise_tied_ranks([3, 1, 2], [3, 1, 2], [3, 1, 2]) == [3.0, 1.0, 2.0]


def test_squeezenet_batch_1_groups_as_the_gpu_separated_them() -> None:
    """SqueezeNet b1 fp32 on the H200: ios_greedy and wavefront (429.0, 429.9 µs) overlap, so
    do the five policies at 434.5-442.4 µs, and serial and ios (536.4, 537.2 µs)."""
    rows = [r for r in load_measured_rows() if r.case == ("squeezenet", 1, "fp32")]
    ranks = dict(zip([r.policy for r in rows],
                     J.noise_tied_ranks([r.graph_us for r in rows],
                                        [r.graph_q1_us for r in rows],
                                        [r.graph_q3_us for r in rows]), strict=True))
    assert ranks["ios_greedy"] == ranks["wavefront"] == 1.5
    assert {ranks[p] for p in ("nnc", "critical_path", "gpto", "asap", "min_streams")} == {5.0}
    assert ranks["serial"] == ranks["ios"] == 8.5


def test_case_table_reports_both_correlations() -> None:
    rows = [r for r in load_measured_rows() if r.case == ("inception_v3", 16, "fp32")]
    table = J.case_table(rows, J.simulate_rows(rows, "h200"))
    r = table.iloc[0]
    assert not math.isnan(r["spearman_noise"])
    # a simulation that ranks exactly as the medians do scores 1 strictly, and less than 1 with
    # ties it cannot reproduce
    exact = J.case_table(rows, [row.graph_us for row in rows]).iloc[0]
    assert exact["spearman"] == pytest.approx(1.0)
    assert exact["spearman_noise"] < 1.0
