"""The listed conflicts have a cap: a schedule whose happens-before order leaves too many tensors
unordered is refused in one line, by both sweeps, before it fills the machine's memory
(:data:`workbench.memory.live_sets.MAX_LISTED_PAIRS`; NNC's schedule of a 1M-op random DAG was
killed for memory at 24 GiB without it)."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.errors import MemoryPlanError
from workbench.memory import live_sets
from workbench.memory.compiled import sweep_kernel
from workbench.memory.live_arrays import TooManyPairs


@pytest.fixture(scope="module")
def schedule() -> wb.Schedule:
    return wb.schedule(wb.models.random_dag(2500, edges_per_op=3, seed=2), "nnc")


def _listed(schedule: wb.Schedule) -> int:
    return len(wb.memory.lifetimes(schedule).conflicts.graph.idx) // 2


@pytest.mark.parametrize("engine", ["numpy", "kernel"])
def test_a_schedule_past_the_cap_is_refused_in_one_line(schedule: wb.Schedule, engine: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if engine == "kernel" and sweep_kernel() is None:
        pytest.skip("the compiled sweep needs Numba")
    monkeypatch.setattr(live_sets, "SWEEP_KERNEL_MIN_OPS", 0 if engine == "kernel" else 10**9)
    pairs = _listed(schedule)
    assert pairs > 10_000
    monkeypatch.setattr(live_sets, "MAX_LISTED_PAIRS", pairs - 1)
    with pytest.raises(TooManyPairs) as cut:
        wb.memory.lifetimes(schedule)
    text = str(cut.value)
    assert "\n" not in text and f"more than {pairs - 1:,} pairs" in text
    assert "MAX_LISTED_PAIRS" in text and 0 < cut.value.op < cut.value.n
    with pytest.raises(MemoryPlanError, match="happens-before conflicts list more than"):
        wb.plan_memory(schedule, "greedy_by_size")
    monkeypatch.setattr(live_sets, "MAX_LISTED_PAIRS", pairs)  # exactly at the cap: planned
    assert _listed(schedule) == pairs


def test_both_sweeps_stop_at_the_same_op(schedule: wb.Schedule,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if sweep_kernel() is None:
        pytest.skip("the compiled sweep needs Numba")
    monkeypatch.setattr(live_sets, "MAX_LISTED_PAIRS", 5_000)
    ops = []
    for threshold in (0, 10**9):
        monkeypatch.setattr(live_sets, "SWEEP_KERNEL_MIN_OPS", threshold)
        with pytest.raises(TooManyPairs) as cut:
            wb.memory.lifetimes(schedule)
        ops.append(cut.value.op)
    assert ops[0] == ops[1]


def test_the_sweep_of_widely_read_tensors_keeps_the_same_cap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fan's source, read on many streams, is swept by the dictionary sweep (more users than
    a mask holds): all 150 pairs of NNC's fan 1 -> 150 -> 1 are its, and one fewer is refused."""
    mids = [f"m{i}" for i in range(150)]
    graph = wb.Graph.from_edges([("src", m) for m in mids] + [(m, "sink") for m in mids],
                                ops=["src", *mids, "sink"], sizes={m: 1024 for m in mids})
    schedule = wb.schedule(graph, "nnc")
    calls: list[int | None] = []
    real = live_sets._sweep

    def spy(*args: object, **kwargs: object) -> object:
        calls.append(kwargs.get("max_pairs"))  # type: ignore[arg-type]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(live_sets, "_sweep", spy)
    assert _listed(schedule) == 150 and calls == [live_sets.MAX_LISTED_PAIRS]
    monkeypatch.setattr(live_sets, "MAX_LISTED_PAIRS", 149)
    with pytest.raises(TooManyPairs, match="more than 149 pairs"):
        wb.memory.lifetimes(schedule)
