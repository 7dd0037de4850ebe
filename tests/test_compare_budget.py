"""compare() always finishes: per-stage budgets, rows that say what overran, progress lines.

No wall-clock asserts: slow stages are deliberately endless (or sleep far past a tiny budget) and
the tests check what the rows, lines and notes say.
"""

from __future__ import annotations

import importlib
import os
import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import workbench as wb
from workbench import _bounded
from workbench._terminal import MAX_CELL
from workbench.cli import main
from workbench.schedulers import POLICIES, PolicyInfo
from workbench.schedulers.gpto import schedule_gpto
from workbench.schedulers.serial import schedule_serial

TINY = 1.0  # seconds: far below what the endless test policies take, far above the others
# `wb.compare` is the function
compare_module = importlib.import_module("workbench.orchestration.compare")
needs_fork = pytest.mark.skipif(_bounded.start_method() != "fork",
                                reason="monkeypatched stages reach the worker only through fork")


def endless(graph: wb.Graph, *, max_streams: int | None = None) -> wb.Schedule:
    """A policy that never returns (and never checks a clock)."""
    while True:
        time.sleep(0.05)


def cooperative(graph: wb.Graph, *, max_streams: int | None = None,
                time_budget_s: float | None = None) -> wb.Schedule:
    """A search that works until its budget is spent, then returns its best (serial) schedule."""
    assert time_budget_s is not None, "compare() passes its budget to budgeted policies"
    time.sleep(time_budget_s)
    sched = schedule_serial(graph)
    from dataclasses import replace

    return replace(sched, policy="cooperative", notes={**sched.notes, "budget_hit": True})


def crashing(graph: wb.Graph, *, max_streams: int | None = None) -> wb.Schedule:
    """A policy whose process dies (as the kernel's OOM killer would do it)."""
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def failing(graph: wb.Graph, *, max_streams: int | None = None) -> wb.Schedule:
    raise wb.ScheduleError("failing: this policy always fails")


@pytest.fixture
def test_policies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the test policies for one test only."""
    for name, fn, budgeted in (("endless", endless, False), ("cooperative", cooperative, True),
                               ("crashing", crashing, False), ("failing", failing, False)):
        monkeypatch.setitem(POLICIES._entries, name,
                            PolicyInfo(fn, "test", "test policy", budgeted=budgeted))


def _row(comparison: wb.Comparison, policy: str) -> dict[str, Any]:
    table = comparison.table
    return dict(table.loc[table["policy"] == policy].iloc[0])


def test_a_policy_that_never_ends_is_a_row_that_says_so(test_policies: None,
                                                        tmp_path: Path) -> None:
    g = wb.models.nnc_diamond()
    c = wb.compare(g, ["nnc", "endless", "asap"], budget_s=TINY, show_progress=False)
    assert list(c.table_in_policy_order["policy"]) == ["serial", "nnc", "endless", "asap"]
    assert list(c.table["policy"])[-1] == "endless"   # fastest first: no makespan, last
    row = _row(c, "endless")
    assert row["status"] == f"budget hit ({TINY:g} s): no schedule"
    assert row["makespan_us"] != row["makespan_us"]  # NaN: no number for an unfinished policy
    assert "endless" not in c.schedules and "endless" not in c.traces
    assert (c.table.loc[c.table["policy"] != "endless", "status"] == "ok").all()
    assert c.best in ("nnc", "asap")
    html = c.to_html(tmp_path / "r.html").read_text()
    assert "budget hit" in html and "endless" in html


def test_budgeted_policies_get_the_budget_and_stop_with_their_best(test_policies: None) -> None:
    c = wb.compare(wb.models.nnc_diamond(), ["cooperative"], budget_s=TINY, show_progress=False)
    row = _row(c, "cooperative")
    assert row["status"] == f"budget hit ({TINY:g} s): best so far"
    assert len(row["status"]) <= MAX_CELL   # the CLI's table prints it uncut
    assert row["makespan_us"] == pytest.approx(_row(c, "serial")["makespan_us"])


def test_a_search_cut_by_the_clock_says_budget_hit_uncut_in_the_cli_table() -> None:
    """IOS's time budget as compare hands it (90% of 60 s): the status says ``budget hit`` and
    what the row holds in full, within the CLI's cell width (the table is not widened)."""
    from workbench._terminal import ranking_text
    from workbench.orchestration.compare_rows import status_of

    sched = schedule_serial(wb.models.nnc_diamond())

    def status(limit: float) -> str:
        hit = {"budget": "time_budget_s", "limit": limit}
        done = _bounded.Outcome("ok", (replace(sched, notes={"budget_hit": hit}), 1.0))
        return status_of([done], 60.0)

    assert status(54.0) == "budget hit (54 s): best so far"
    assert status(0.000125) == "budget hit (0.000125 s)"      # too long with the tail
    table = ranking_text(pd.DataFrame({"policy": ["ios"], "status": [status(54.0)]}),
                         ["policy", "status"])
    assert "budget hit (54 s): best so far" in table and "…" not in table
    assert status_of([_bounded.Outcome("ok", (sched, 1.0))], 60.0) == "ok"


def test_a_worker_that_dies_is_a_row_that_says_so(test_policies: None) -> None:
    c = wb.compare(wb.models.nnc_diamond(), ["crashing", "nnc"], show_progress=False)
    assert _row(c, "crashing")["status"] == ("failed in schedule: worker killed by signal 9 "
                                             "(out of memory?)")
    assert _row(c, "nnc")["status"] == "ok"


def test_policy_errors_are_raised_as_before(test_policies: None) -> None:
    with pytest.raises(wb.ScheduleError, match="failing: this policy always fails"):
        wb.compare(wb.models.nnc_diamond(), ["failing"], show_progress=False)
    with pytest.raises(wb.ScheduleError, match="no option 'bogus'"):
        wb.compare(wb.models.nnc_diamond(), ["nnc"], options={"nnc": {"bogus": 1}},
                   show_progress=False)
    with pytest.raises(wb.OptionError, match="budget_s"):
        wb.compare(wb.models.nnc_diamond(), budget_s=0)


@needs_fork
def test_a_memory_plan_past_the_budget_leaves_empty_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    import workbench.memory

    def slow_plan(*args: object, **kwargs: object) -> None:
        time.sleep(1000)

    monkeypatch.setattr(workbench.memory, "plan_memory", slow_plan)
    c = wb.compare(wb.models.nnc_diamond(), ["nnc"], budget_s=TINY, show_progress=False)
    row = _row(c, "nnc")
    assert row["status"] == f"budget hit ({TINY:g} s): memory not planned"
    assert row["makespan_us"] > 0 and row["arena_mib"] != row["arena_mib"]
    assert "nnc" in c.traces and not c.memory_plans


def test_values_come_back_pointing_at_the_callers_graph() -> None:
    g = wb.models.nnc_diamond()
    c = wb.compare(g, ["nnc"], show_progress=False)
    assert c.traces["nnc"].graph is g
    assert c.traces["nnc"].schedule is c.schedules["nnc"]
    unbounded = wb.compare(g, ["nnc"], show_progress=False, budget_s=None)
    assert (unbounded.table.drop(columns="schedule_ms")
            .equals(c.table.drop(columns="schedule_ms")))


def test_progress_lines_on_stderr_when_it_is_not_a_terminal(
        test_policies: None, capsys: pytest.CaptureFixture[str]) -> None:
    wb.compare(wb.models.nnc_diamond(), ["endless", "nnc"], budget_s=TINY)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("workbench: comparing 3 policies on nnc_diamond (4 ops, budget")
    assert err[1] == "workbench: [1/3] serial: started"
    assert err[2].startswith("workbench: [1/3] serial: ") and " in " in err[2]
    assert err[3] == "workbench: [2/3] endless: started"
    assert err[4].startswith(f"workbench: [2/3] endless: budget hit ({TINY:g} s): no schedule "
                             f"in ")
    assert err[5] == "workbench: [3/3] nnc: started" and len(err) == 7
    assert "\r" not in "".join(err)  # plain lines: no bar outside a terminal
    wb.compare(wb.models.nnc_diamond(), ["nnc"], show_progress=False)
    assert capsys.readouterr().err == ""


def test_cli_budget_option_and_notes(test_policies: None, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = wb.save(wb.models.nnc_diamond(), tmp_path / "g.json")
    code = main(["compare", str(path), "--policies", "nnc,endless", "--budget", str(TINY),
                 "-o", str(tmp_path / "r.html")])
    assert code == 0
    captured = capsys.readouterr()
    assert f"note: endless: budget hit ({TINY:g} s): no schedule" in captured.out
    assert "workbench: [3/3] endless: started" in captured.err


def test_cli_rejects_a_bad_budget(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["compare", "--model", "nnc_diamond", "--budget", "soon"])
    with pytest.raises(SystemExit):
        main(["compare", "--model", "nnc_diamond", "--budget", "-1"])


def test_gpto_stops_its_portfolio_at_the_budget() -> None:
    g = wb.models.inception_v3(batch=1, fused=False)
    s = schedule_gpto(g, time_budget_s=1e-9)  # spent before the first priority ends
    assert s.notes["budget_hit"] and s.notes["priorities_tried"] == 1
    assert s.notes["winner"] == "bottom_level"
    full = schedule_gpto(g, priorities=["bottom_level", "depth_min"])
    assert not full.notes["budget_hit"] and full.notes["priorities_tried"] == 2
    with pytest.raises(wb.OptionError, match="time_budget_s"):
        schedule_gpto(g, time_budget_s=-1)


class _FakeTime:
    """A clock that advances one second per reading (deterministic budgets)."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1.0
        return self.now


def test_exact_optimum_stops_at_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.orchestration import optimum

    wide = wb.models.layered_dag(3, 3, seed=0)  # 9 ops, too wide to finish quickly
    monkeypatch.setattr(optimum, "time", _FakeTime())
    best = optimum.exact_optimum(wide, time_budget_s=40)
    assert not best.complete and best.candidates >= 1
    best.schedule.validate()
    with pytest.raises(wb.OptionError, match="time budget of 0.5 s ran out"):
        optimum.exact_optimum(wide, time_budget_s=0.5)  # spent at the first step
    assert optimum.exact_optimum(wb.models.nnc_diamond(), time_budget_s=1000).complete


@needs_fork
def test_compare_notes_an_unfinished_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.orchestration import optimum

    def stopped(graph: wb.Graph, *args: Any, **kwargs: Any) -> optimum.Optimum:
        return optimum.Optimum(wb.schedule(graph, "nnc"), 99.0, 1, complete=False)

    monkeypatch.setattr(optimum, "exact_optimum", stopped)
    c = wb.compare(wb.models.nnc_diamond(), ["nnc"], show_progress=False)
    assert c.table["optimum_us"].isna().all()
    assert any("search stopped at its budget" in n for n in c.settings["notes"])


def _double(x: int) -> int:
    return 2 * x


def _seven() -> int:
    return 7


def test_run_stages_with_spawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Other platforms start workers with spawn: arguments and values are pickled both ways."""
    monkeypatch.setattr(_bounded, "start_method", lambda: "spawn")
    out = _bounded.run_stages([_seven, _double], [60.0, 60.0])
    assert [o.status for o in out] == ["ok", "ok"] and [o.value for o in out] == [7, 14]


def test_run_stages_budget_then_skipped() -> None:
    out = _bounded.run_stages([_seven, endless, _double], [None, TINY, 5.0])
    assert [o.status for o in out] == ["ok", "budget", "skipped"]
    assert out[1].message == f"did not finish within its budget of {TINY:g} s"


def test_hard_limit_gives_cooperative_stages_time_to_wrap_up() -> None:
    assert compare_module.hard_limit_s(60, cooperative=False) == 60
    assert compare_module.hard_limit_s(60, cooperative=True) == 76


def test_app_lists_a_policy_whose_budget_ran_out_as_failed(test_policies: None,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ipywidgets")
    from functools import partial

    from workbench.ui import Workbench
    from workbench.ui.workbench import _Job

    monkeypatch.setattr(wb, "compare", partial(compare_module.compare, budget_s=TINY))
    graph = wb.models.nnc_diamond()
    job = _Job(lambda: graph, ["nnc", "endless"], {}, "h100", "eager", "simulator", "somas")
    comparison = Workbench()._compare_all(graph, job)   # one compare call, as Run makes
    assert [(n, str(e)) for n, e in job.failures] == [
        ("endless", f"budget hit ({TINY:g} s): no schedule")]
    assert comparison is not None and list(comparison.schedules) == ["serial", "nnc"]


def test_progress_bar_when_interactive_keeps_the_lines(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from workbench import _progress

    monkeypatch.setattr(_progress, "_interactive", lambda: True)  # as in a terminal or notebook
    wb.compare(wb.models.nnc_diamond(), ["nnc"])
    err = capsys.readouterr().err
    assert "comparing on nnc_diamond" in err  # the bar's description
    lines = [ln.split("\r")[-1] for ln in err.splitlines()]
    assert "workbench: [2/2] nnc: started" in lines
    assert any(ln.startswith("workbench: [2/2] nnc: ok in ") for ln in lines)
    monkeypatch.setenv("WORKBENCH_PROGRESS", "0")
    wb.compare(wb.models.nnc_diamond(), ["nnc"])
    assert capsys.readouterr().err == ""


def test_in_a_notebook_the_events_go_beside_the_bar_not_under_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25: the quickstart's compare cell printed 24 stderr lines under its bar."""
    from workbench import _progress

    monkeypatch.setattr(_progress, "_interactive", lambda: True)
    monkeypatch.setattr(_progress, "_in_kernel", lambda: True)
    with _progress.Progress(2, desc="comparing") as bar:
        bar.line("[1/2] serial: started")
        assert bar._bar.leave is True   # the finished bar stays in the notebook
        assert "[1/2] serial: started" in str(bar._bar.postfix)
    err = capsys.readouterr().err
    assert "workbench: [1/2]" not in [ln.split("\r")[-1] for ln in err.splitlines()]


def _hungry(*previous: object) -> None:
    raise MemoryError


def test_a_stage_out_of_memory_is_an_outcome_not_an_exception() -> None:
    out = _bounded.run_stages([_seven, _hungry, _double], [5.0, 5.0, 5.0])
    assert [o.status for o in out] == ["ok", "died", "skipped"]
    assert out[1].message == "out of memory (MemoryError in the worker)"
