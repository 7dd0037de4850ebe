"""Sizes past what int64 offsets hold: refused in one line, never a wrapped plan.

Before the guard in ``workbench.memory.plan.prepare``, four overlapping 2^62-byte tensors gave
the naive planner negative offsets (a RuntimeWarning only), the NumPy placement an
``OverflowError`` traceback, and, from 2,000 tensors on, the compiled placement three tensors at
one offset (int64 wraps silently in Numba).  At exactly :data:`MAX_TOTAL_BYTES` every planner
still makes a valid plan, through both placement engines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import workbench as wb
from workbench.errors import MemoryPlanError
from workbench.memory import check_no_overlap, plan_usage, planners
from workbench.memory.plan import MAX_TOTAL_BYTES

HUGE = 1 << 62
SMALL = [(512, i % 5, i % 5 + 1) for i in range(2100)]  # past KERNEL_MIN_TENSORS: the kernel


#: (planner, with the 2,100 small tensors): exact plans at most 40 tensors, so not with them
CASES = [(p, small) for p in planners() for small in (False, True) if not (p == "exact" and small)]
IDS = [f"{p}-{'kernel' if small else 'numpy'}" for p, small in CASES]


def _overlapping(size: int) -> list[tuple[int, int, int]]:
    return [(size, 0, 3), (size, 1, 3), (size, 2, 3), (size, 0, 3)]


@pytest.mark.parametrize(("planner", "with_small"), CASES, ids=IDS)
def test_sizes_past_int64_offsets_are_refused_in_one_line(planner: str, with_small: bool
                                                          ) -> None:
    records = _overlapping(HUGE) + (SMALL if with_small else [])
    with pytest.raises(MemoryPlanError) as info:
        plan_usage(records, planner, alignment=1)
    message = str(info.value)
    assert "\n" not in message
    assert "add up to 18,446,744,07" in message and "record 0" in message


@pytest.mark.parametrize(("record", "field"), [((512, 0, 1 << 63), "last"),
                                               ((512, 1 << 70, 1 << 71), "first"),
                                               ((1 << 64, 0, 1), "size")])
@pytest.mark.parametrize("planner", ["naive", "greedy_by_size", "somas"])
def test_a_step_or_size_past_int64_names_its_record(planner: str, record: tuple[int, int, int],
                                                    field: str) -> None:
    with pytest.raises(MemoryPlanError) as info:
        plan_usage([(512, 1, 2), record], planner)
    assert str(info.value).startswith(f"usage record 1: {field} ")
    assert "past 9,223,372,036,854,775,807 (int64)" in str(info.value)


def test_steps_at_the_int64_limit_still_plan() -> None:
    plan = plan_usage([(512, (1 << 63) - 1, (1 << 63) - 1), (512, 0, 1), (512, 1, (1 << 63) - 1)],
                      "somas")
    check_no_overlap(plan)
    assert plan.arena_bytes == 1024


def test_one_size_past_int64_is_refused_not_overflowed() -> None:
    with pytest.raises(MemoryPlanError, match="add up to"):
        plan_usage([((1 << 63) - 1, 0, 1), ((1 << 63) - 1, 0, 1)], "somas", alignment=512)


@pytest.mark.parametrize(("planner", "with_small"), CASES, ids=IDS)
def test_at_the_limit_every_planner_still_plans_validly(planner: str, with_small: bool) -> None:
    """Four overlapping tensors that fill the limit exactly (with the small ones, a little less
    each): the arena is their sum, and no two conflicting tensors share a byte."""
    extra = sum(s for s, _, _ in SMALL) if with_small else 0
    each = (MAX_TOTAL_BYTES - extra) // 4
    records = _overlapping(each) + (SMALL if with_small else [])
    plan = plan_usage(records, planner, alignment=1)
    check_no_overlap(plan)
    assert plan.arena_bytes >= 4 * each
    assert min(plan.offsets) >= 0 and plan.arena_bytes <= MAX_TOTAL_BYTES


def _huge_graph_file(tmp_path: Path) -> Path:
    """nnc_diamond saved as JSON with every tensor 2^62 bytes."""
    path = tmp_path / "diamond.json"
    wb.save(wb.models.nnc_diamond(), path)
    data = json.loads(path.read_text())
    for tensor in data["tensors"]:
        tensor["size_bytes"] = HUGE
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(data))
    return path


def test_a_graph_of_huge_tensors_compares_with_its_memory_refused(tmp_path: Path) -> None:
    """Through the loader and ``wb.compare``: every policy is scheduled and simulated, its
    memory cells say why they are empty, and gpto (which plans arenas to break ties) picks by
    portfolio order and notes the refusal; under a memory limit the refusal is the error."""
    graph = wb.load(_huge_graph_file(tmp_path))
    result = wb.compare(graph, show_progress=False, budget_s=None)
    assert set(result.table["policy"]) >= {"serial", "nnc", "gpto"}
    assert result.table["makespan_us"].notna().all()
    for status in result.table["status"]:
        assert status.startswith("failed in memory: the tensors' sizes add up to")
    notes = wb.schedule(graph, "gpto").notes
    assert notes["arenas_refused"].startswith("the tensors' sizes add up to")
    assert all(c["arena_bytes"] is None for c in notes["portfolio"])
    with pytest.raises(MemoryPlanError, match="add up to"):
        wb.schedule(graph, "gpto", memory_limit_bytes=1 << 40)


def test_the_cli_compares_it_and_says_why_once(tmp_path: Path) -> None:
    """``workbench compare huge.json`` in a fresh process: exit 0, a report, and the policies
    the same refusal stopped named on one note line (it was one line per policy)."""
    path = _huge_graph_file(tmp_path)
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "compare", str(path), "-o",
                          str(tmp_path / "report.html")], capture_output=True, text=True,
                         timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "report.html").stat().st_size > 0
    refused = [line for line in run.stdout.splitlines()
               if line.startswith("note: ") and ": failed in memory: " in line]
    assert len(refused) == 1, refused
    assert all(p in refused[0] for p in ("serial", "nnc", "gpto", "memory_greedy"))
