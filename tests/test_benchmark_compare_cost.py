"""``benchmarks/compare_cost.py`` runs: a fresh process times the imports, a first and a second
comparison of a small built-in graph, and names its slowest policy; an unknown graph is a
one-line error."""

from __future__ import annotations

import argparse

import pytest

from tests._benchmarks import load_benchmark

compare_cost = load_benchmark("compare_cost")


def test_a_fresh_process_times_imports_first_and_second_comparison() -> None:
    (row,) = compare_cost.measure(["transformer_block"], rounds=1)
    assert row["graph"] == "transformer_block" and row["ops"] == 22
    assert all(row[k] > 0 for k in ("imports", "first", "second"))
    policy, ms, unit = str(row["slowest"]).split()
    assert unit == "ms" and float(ms) >= 0
    import workbench as wb

    assert policy in wb.policies()


def test_an_unknown_graph_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(argparse.ArgumentTypeError,
                       match="unknown graph nasnet .*known: inception_v3"):
        compare_cost.graph_names("inception_v3,nasnet")
