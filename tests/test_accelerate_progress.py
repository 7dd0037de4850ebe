"""``wb.accelerate`` says what it does (issue 45 #6): the plan line first, progress while it
measures (lines on stderr, a bar in terminals and notebooks), one summary line of its decision
at the end, the fallback to the model included; and its comparison table flags the rows that tie
within measurement noise (the model itself among them) as compare names its best.

The model's own timing is faked in the decision tests (``time_model``), so the decision does not
depend on how busy the machine is; the policies run for real on the CPU."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from tests.model_zoo import ZOO  # noqa: E402
from workbench import _progress  # noqa: E402
from workbench.executors.torch_exec import baseline  # noqa: E402
from workbench.executors.torch_exec.module import ModelItself, ScheduledModule  # noqa: E402
from workbench.orchestration import accelerate as acc  # noqa: E402
from workbench.orchestration.accelerate_notes import (  # noqa: E402
    MODEL,
    TIE,
    summary_text,
    with_model_row,
)
from workbench.orchestration.compare_measured import clearly_faster  # noqa: E402
from workbench.orchestration.comparison import Comparison  # noqa: E402
from workbench.values.trace import makespan_stats  # noqa: E402

PLAN = ("accelerate ResNetTiny: measuring 2 policies × 3 rounds on cpu (1 timed run per policy "
        "and round) and the model itself before and after them (3 timed runs each time); "
        "budget 30 s per stage, 6 stages")


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_PROGRESS", "1")


def _fake_model_timing(monkeypatch: pytest.MonkeyPatch, spans: list[float]) -> None:
    """The model itself takes ``spans`` (µs) each time it is timed."""
    def time_model(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return {**makespan_stats(spans), "timed_runs": len(spans),
                "how": "the model's forward on the CPU (faked)", "captured": False}

    monkeypatch.setattr(baseline, "time_model", time_model)


def _accelerate(model: Any = None, example: Any = None, **options: Any) -> Any:
    if model is None:
        model, example = ZOO["resnet"]()
    return wb.accelerate(model, example, policies=["serial", "nnc"], repeats=3, warmup=0,
                         budget_s=30, **options)


def _lines(err: str) -> list[str]:
    return [line.removeprefix(_progress.PREFIX) for line in err.splitlines()
            if line.startswith(_progress.PREFIX)]


def test_plan_first_then_progress_then_the_fallback_in_one_line(
        shown: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _fake_model_timing(monkeypatch, [1.0, 1.0, 1e9, 1e9])   # overlaps every policy: a tie
    fast = _accelerate()
    lines = _lines(capsys.readouterr().err)
    assert lines[0] == PLAN
    assert lines[1].startswith(f"{MODEL}: ") and lines[1].endswith(
        "median over 4 timed runs (before the policies)")
    for progress in ("comparing 2 policies on ResNetTiny", "[1/2] serial: started",
                     "[2/2] nnc: ok in ", "round 2/3: ", "round 3/3: "):
        assert any(line.startswith(progress) for line in lines), (progress, lines)
    assert lines[-2].endswith("(after the policies)")
    assert isinstance(fast, ModelItself)
    decision = fast.comparison.settings["decision"]
    assert decision.startswith("no schedule beats the model beyond measurement noise")
    assert lines[-1] == f"accelerate ResNetTiny: falling back to the model: {decision}"
    assert fast.reason == f"{decision}; running the model itself"


def test_the_table_flags_the_model_and_the_policies_it_ties_with(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_model_timing(monkeypatch, [1.0, 1.0, 1e9, 1e9])
    table = _accelerate(show_progress=False).comparison.table
    row = table.set_index("policy").loc[MODEL]
    assert row["status"] == "measured" and row["noise"] == TIE
    assert row["makespan_q1_us"] < row["makespan_us"] < row["makespan_q3_us"]
    # the model's range overlaps every policy's, so it ties with the fastest policy; the other
    # policy ties as its real (unfaked) measurement falls: the column follows the noise rule
    spreads = {p: (r["makespan_us"], r["makespan_q1_us"], r["makespan_q3_us"])
               for p, r in table.set_index("policy").iterrows()}
    fastest = min(("serial", "nnc"), key=lambda p: spreads[p][0])
    expected = {MODEL, fastest} | {p for p in ("serial", "nnc")
                                   if not clearly_faster(spreads, fastest, p)}
    assert set(table.loc[table["noise"] == TIE, "policy"]) == expected


def test_a_policy_clearly_faster_is_run_with_its_measured_speedup(
        shown: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _fake_model_timing(monkeypatch, [1e9] * 4)   # far slower than any policy, no overlap
    model, example = ZOO["resnet"]()
    fast = _accelerate(model, example)
    lines = _lines(capsys.readouterr().err)
    assert lines[0] == PLAN
    assert isinstance(fast, ScheduledModule) and fast.policy in ("serial", "nnc")
    assert lines[-1] == f"accelerate ResNetTiny: running {fast.policy}: {fast.reason}"
    assert " beats the model itself 1,000,000,000.0 µs " in lines[-1]
    assert lines[-1].endswith("x") and "beyond measurement noise: " in lines[-1]
    table = fast.comparison.table
    assert table["policy"].iloc[-1] == MODEL                  # slowest, last
    assert table.set_index("policy").loc[MODEL, "noise"] == ""  # not tied with the fastest
    x = torch.randn_like(example[0])
    with torch.no_grad():
        assert torch.allclose(fast(x), model(x), atol=1e-5)


def test_auto_on_the_cpu_says_its_decision_and_show_progress_false_is_quiet(
        shown: None, capsys: pytest.CaptureFixture[str]) -> None:
    model, example = ZOO["resnet"]()
    fast = wb.accelerate(model, example)
    assert _lines(capsys.readouterr().err) == [
        f"accelerate ResNetTiny: falling back to the model: {acc.CPU_DECISION}"]
    assert fast.reason == acc.CPU_DECISION
    wb.accelerate(model, example, show_progress=False)
    assert capsys.readouterr().err == ""


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch, shown: None) -> Iterator[None]:
    """A terminal on stderr: the bar is drawn, the lines go above it."""
    monkeypatch.setattr(_progress, "_interactive", lambda: True)
    yield


def test_in_a_terminal_a_bar_counts_the_steps_and_the_lines_stay(
        terminal: None, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _fake_model_timing(monkeypatch, [1.0, 1.0, 1e9, 1e9])
    _accelerate()
    err = capsys.readouterr().err
    assert "accelerate ResNetTiny" in err and "5/5" in err  # model, 2 policies, model, decision
    assert _progress.PREFIX + PLAN in err
    assert _progress.PREFIX + "accelerate ResNetTiny: falling back to the model: " in err


def test_in_a_notebook_the_summary_stays_beside_the_finished_bar(
        terminal: None, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[str] = []
    real = _progress.Progress.line

    def line(self: _progress.Progress, text: str) -> None:
        real(self, text)
        seen.append(getattr(self._bar, "postfix", "") or "")

    monkeypatch.setattr(_progress, "_in_kernel", lambda: True)
    monkeypatch.setattr(_progress.Progress, "line", line)
    _fake_model_timing(monkeypatch, [1.0, 1.0, 1e9, 1e9])
    _accelerate()
    assert seen[0] == PLAN                       # beside the bar, not piled under it
    assert seen[-1].startswith("accelerate ResNetTiny: falling back to the model: ")


def _measured(rows: dict[str, tuple[float, float, float]]) -> Comparison:
    """A measured comparison of ``rows`` (policy: median, q1, q3 in µs)."""
    table = pd.DataFrame(
        [{"policy": p, "status": "ok", "makespan_us": m, "makespan_q1_us": a,
          "makespan_q3_us": b, "streams": 1, "syncs": 0, "executor": "torch"}
         for p, (m, a, b) in rows.items()])
    table["speedup"] = rows["serial"][0] / table["makespan_us"]
    done = dict.fromkeys(rows, object())
    return Comparison(wb.models.nnc_diamond(), "h100", "graph", done, done, table,
                      {"executor": "torch"}, {})


def test_rows_within_noise_are_flagged_however_large_their_speedup() -> None:
    """nnc's median is 2.04x serial's, but their quartile ranges overlap (a loaded machine): the
    table says tie; the model itself ties too; gpto is clearly slower than the fastest."""
    c = _measured({"serial": (2040.0, 900.0, 2600.0), "nnc": (1000.0, 950.0, 2100.0),
                   "gpto": (9000.0, 8800.0, 9500.0)})
    with_model_row(c, {"makespan_median_us": 1500.0, "makespan_q1_us": 1200.0,
                       "makespan_q3_us": 1900.0})
    t = c.table.set_index("policy")
    assert t.loc["nnc", "speedup"] == pytest.approx(2.04)
    assert {p: t.loc[p, "noise"] for p in t.index} == {
        "nnc": TIE, MODEL: TIE, "serial": TIE, "gpto": ""}
    assert list(c.table["policy"]) == ["nnc", MODEL, "serial", "gpto"]  # fastest first
    assert t.loc[MODEL, "speedup"] == pytest.approx(2040.0 / 1500.0)
    assert t.loc[MODEL, "executor"] == "torch" and math.isnan(t.loc[MODEL, "streams"])
    assert c.best == "nnc" and c.ties == ["nnc", "serial"]  # the policies' own, as before
    with_model_row(c, {"makespan_median_us": 1500.0, "makespan_q1_us": 1200.0,
                       "makespan_q3_us": 1900.0})
    assert list(c.table["policy"]).count(MODEL) == 1      # added once


def test_rows_beyond_noise_are_not_flagged() -> None:
    c = _measured({"serial": (2000.0, 1950.0, 2050.0), "nnc": (1000.0, 990.0, 1010.0)})
    with_model_row(c, {"makespan_median_us": 2100.0, "makespan_q1_us": 2080.0,
                       "makespan_q3_us": 2120.0})
    assert set(c.table["noise"]) == {""}


def test_summary_lines() -> None:
    assert summary_text("Net", "nnc", "nnc 1.0 µs beats ...: 1.35x") == (
        "accelerate Net: running nnc: nnc 1.0 µs beats ...: 1.35x")
    assert summary_text("Net", None, "why", own_graph=True) == (
        "accelerate Net: falling back to the model (its own CUDA graph: the serial schedule on "
        "one stream): why")
    assert summary_text("Net", None, "why") == "accelerate Net: falling back to the model: why"
