"""``benchmarks/memory_bounds.py`` runs: a fresh process plans a small random DAG's schedule and
says how it ended, with its times, peak and arena; the table has a row per size and policy."""

from __future__ import annotations

import pytest

from tests._benchmarks import load_benchmark

memory_bounds = load_benchmark("memory_bounds")


def test_a_row_is_a_plan_with_its_times_and_peak() -> None:
    row = memory_bounds.run_one(300, "nnc", "somas", 120)
    assert str(row["ended"]).startswith("plan (")
    assert row["wall_s"] > 0 and row["cpu_s"] > 0 and row["peak_gib"] > 0.01
    assert row["arena_gib"] > 0


def test_the_table_names_every_row(capsys: pytest.CaptureFixture[str]) -> None:
    memory_bounds.main(["--sizes", "200", "--policies", "serial", "--planner", "greedy_by_size"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["ops", "policy", "wall"]
    assert lines[1].split()[:2] == ["200", "serial"] and "plan (-)" in lines[1]
