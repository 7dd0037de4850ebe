"""``benchmarks/stages.py`` runs on small sizes: the baselines order every op, each stage row
has its times, exponent and ratio, the size budget skips, and an unknown stage is refused."""

from __future__ import annotations

import math

import pytest

from tests._benchmarks import load_benchmark

stages = load_benchmark("stages")


@pytest.mark.parametrize("family", ["chain", "fan", "random"])
def test_the_baselines_give_topological_orders(family: str) -> None:
    graph = stages.FAMILIES[family](300)
    position = {}
    for fn in (stages.kahn, stages.list_scheduler):
        order = fn(graph)
        assert sorted(order) == list(range(len(graph)))
        position = {v: k for k, v in enumerate(order)}
        assert all(position[i] < position[j]
                   for i, js in enumerate(graph.succ_index) for j in js)
    assert position  # both ran


def test_rows_name_every_stage_with_times_exponent_and_ratio() -> None:
    chosen = stages.select("list_scheduler,kahn,networkx,nnc,plan:naive,plan_nnc:somas")
    assert chosen == ["list_scheduler", "kahn", "networkx", "nnc", "plan:naive", "plan_nnc:somas"]
    rows = stages.measure(["fan"], [100, 200], chosen, rounds=1, mib=True)
    assert [r["stage"] for r in rows] == chosen
    for row in rows:
        assert row["100"] >= 0 and row["200"] >= 0 and row["MiB 200"] >= 0
        assert math.isfinite(row["exponent"]) and row["x_list"] > 0
        slope = math.log(max(row["200"], 1e-6) / max(row["100"], 1e-6)) / math.log(2)
        assert row["exp_last"] == pytest.approx(slope, abs=1e-6)
    assert next(r for r in rows if r["stage"] == "list_scheduler")["x_list"] == 1.0


def test_the_last_exponent_is_the_slope_between_the_two_largest_sizes() -> None:
    # a constant that hides growth in the fit: 1 s at 1k (mostly fixed cost), then x32 per x10
    times = {1_000: 1.0, 10_000: 1.2, 100_000: 38.0}
    assert stages.last_exponent(times) == pytest.approx(math.log10(38.0 / 1.2))
    assert stages.fitted_exponent(times) < 0.85 < 1.4 < stages.last_exponent(times)
    assert math.isnan(stages.last_exponent({1_000: 1.0, 10_000: math.nan}))


def test_a_size_over_the_budget_is_skipped_and_an_unknown_stage_refused() -> None:
    rows = stages.measure(["chain"], [100, 10_000], ["plan:naive"], budget_s=-1.0, rounds=1)
    assert rows[0]["100"] >= 0 and math.isnan(rows[0]["10,000"])
    with pytest.raises(SystemExit, match="unknown stage 'plan:nieve'"):
        stages.select("plan:nieve")


def test_relation_rows_count_what_a_placement_step_reads() -> None:
    """The walls a step reads, counted by the Fenwick tree, equal a direct count from the
    placement order; the serial schedule has one stream and the nnc one several."""
    rows = stages.relation_rows(["random"], [300])
    by = {r["schedule"]: r for r in rows}
    assert by["serial"]["streams"] == 1 and by["nnc"]["streams"] > 1
    for row in rows:
        assert 0 < row["walls %"] < 100 and row["listed/tensor"] > 0
        assert row["pairs/tensor"] >= row["listed/tensor"] / 2  # every listed pair is counted
    births, tails = [3, 1, 2, 0, 2], [True, False, True, False, False]
    order, sizes = [0, 1, 2, 3, 4], [1, 1, 1, 1, 1]
    direct = [sum(tails[p] and births[p] <= births[q] for p in order[:k])
              for k, q in enumerate(order) if not tails[q]]
    assert stages._walls_read(births, tails, order, sizes) == sum(direct) / len(direct)


@pytest.mark.parametrize(("argv", "message"), [
    (["--sizes", "1k"], "sizes must be integers, got '1k'"),
    (["--sizes", "0,100"], "sizes must be positive op counts"),
    (["--relation", "--families", "rnadom"], "unknown family 'rnadom' (known: chain, fan, random)"),
])
def test_bad_sizes_and_families_are_one_line_errors(argv: list[str], message: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        stages.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and "Traceback" not in "\n".join(err)
