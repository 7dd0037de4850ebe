"""compare()'s memory budget: a stage that would need more ends as a row that says so.

The hungry policy allocates far past a small budget in its worker; the cap (``RLIMIT_AS``) makes
the allocation fail there, so this process never holds the memory and nothing is killed.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench import _bounded
from workbench._bounded import memory as _memory_budget
from workbench.cli import main
from workbench.schedulers import POLICIES, PolicyInfo

compare_module = importlib.import_module("workbench.orchestration.compare")
needs_fork = pytest.mark.skipif(_bounded.start_method() != "fork" or
                                _memory_budget.address_space_bytes() is None,
                                reason="the cap needs Linux (fork, /proc, RLIMIT_AS)")
SMALL = 256 << 20  # bytes a stage may add: far above what a tiny graph's stages need
HUGE = 8 << 30  # what the hungry policy asks for at once


def hungry(graph: wb.Graph, *, max_streams: int | None = None) -> wb.Schedule:
    """A policy that asks for 8 GiB (and, were it granted, would touch every page)."""
    block = bytearray(HUGE)
    raise AssertionError(f"allocated {len(block)} bytes past the budget")


@pytest.fixture
def hungry_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(POLICIES._entries, "hungry",
                        PolicyInfo(hungry, "test", "test policy", budgeted=False))


def _row(comparison: wb.Comparison, policy: str) -> dict[str, Any]:
    table = comparison.table
    return dict(table.loc[table["policy"] == policy].iloc[0])


@needs_fork
def test_a_stage_past_the_memory_budget_is_a_row_that_says_so(hungry_policy: None) -> None:
    c = wb.compare(wb.models.nnc_diamond(), ["hungry", "nnc"], memory_budget_bytes=SMALL,
                   show_progress=False)
    assert _row(c, "hungry")["status"] == "stopped: memory budget 256 MiB exceeded in schedule"
    assert "hungry" not in c.schedules
    assert _row(c, "nnc")["status"] == "ok" and _row(c, "serial")["status"] == "ok"
    assert c.best in ("serial", "nnc")
    assert c.settings["memory_budget_bytes"] == SMALL


@needs_fork
def test_the_memory_budget_applies_without_a_time_budget(hungry_policy: None) -> None:
    c = wb.compare(wb.models.nnc_diamond(), ["hungry"], budget_s=None, memory_budget_bytes="256M",
                   show_progress=False)
    assert _row(c, "hungry")["status"] == "stopped: memory budget 256 MiB exceeded in schedule"


@needs_fork
def test_a_late_stage_past_the_budget_keeps_the_earlier_cells(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def planning_hog(*args: Any) -> Any:
        return bytearray(HUGE)

    monkeypatch.setattr(compare_module, "_stage_memory", planning_hog)
    c = wb.compare(wb.models.nnc_diamond(), ["nnc"], memory_budget_bytes="256M",
                   show_progress=False)
    row = _row(c, "nnc")
    assert row["status"] == "stopped: memory budget 256 MiB exceeded in memory"
    assert row["makespan_us"] > 0 and row["arena_mib"] != row["arena_mib"]  # executed, no plan


def test_the_default_is_half_the_machine_and_sizes_parse() -> None:
    assert _memory_budget.memory_budget("auto") == _memory_budget.default_memory_budget()
    assert _memory_budget.memory_budget("2G") == 2 << 30
    assert _memory_budget.memory_budget("500M") == 500 << 20
    assert _memory_budget.memory_budget("1.5GB") == 1_500_000_000
    assert _memory_budget.memory_budget("none") is None
    assert _memory_budget.memory_budget(None) is None
    for bad in ("-1G", "2Q", "inf", "nan", "", -5, 1.5, True):
        with pytest.raises(wb.OptionError, match="memory_budget_bytes must be"):
            wb.compare(wb.models.nnc_diamond(), memory_budget_bytes=bad)  # type: ignore[arg-type]


@needs_fork
def test_the_cli_takes_a_memory_budget(hungry_policy: None, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    g = tmp_path / "g.json"
    wb.save(wb.models.nnc_diamond(), g)
    out = tmp_path / "r.html"
    main(["compare", str(g), "--policies", "hungry,nnc", "--memory-budget", "256M",
          "--no-progress", "-o", str(out)])
    text = capsys.readouterr().out
    assert "memory budget 256 MiB exceeded in schedule" in text
    assert out.exists()
    with pytest.raises(SystemExit):
        main(["compare", str(g), "--memory-budget", "lots", "-o", str(out)])
    assert "--memory-budget must be a size" in capsys.readouterr().err
