"""Memory planning is bounded and shows its progress (:mod:`workbench.memory.watch`).

A time budget stops a placement pass at its next look (every 1,024 placements) in both engines;
SOMAS keeps the best pass that finished, a one-pass planner refuses with one line; a budget the
pass does not reach changes nothing; the kernel's thread is watched, stopped by its flag and by
Ctrl-C; compare's memory stage is told its share of the budget and draws no bar.
"""

from __future__ import annotations

import importlib
import threading
import time
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench._bounded import Outcome
from workbench.errors import MemoryPlanError, OptionError
from workbench.memory import placement, watch
from workbench.memory.compiled import kernel, place_compiled
from workbench.memory.plan import prepare
from workbench.memory.somas import DEFAULT_FITS_OF, DEFAULT_ORDERINGS, plan_somas
from workbench.memory.static import plan_greedy_by_breadth, plan_greedy_by_size
from workbench.orchestration.compare_rows import unplanned_notes

compare_module = importlib.import_module("workbench.orchestration.compare")
needs_kernel = pytest.mark.skipif(kernel() is None, reason="the compiled placement needs Numba")


def _schedule(n: int, seed: int = 3) -> wb.Schedule:
    return wb.schedule(wb.models.random_dag(n, edges_per_op=3, seed=seed), "nnc")


@pytest.fixture(scope="module")
def small() -> Any:
    """Records and conflicts of NNC's schedule of a 300-op random DAG (fewer tensors than one
    look: a budget is seen only between SOMAS's orderings)."""
    lt = wb.memory.lifetimes(_schedule(300))
    return lt.records, lt.conflicts


@pytest.fixture(scope="module")
def large() -> Any:
    lt = wb.memory.lifetimes(_schedule(3000))
    return lt.records, lt.conflicts


def test_somas_past_its_budget_keeps_the_orderings_that_finished(small: Any) -> None:
    records, conflicts = small
    cut = plan_somas(records, conflicts=conflicts, time_budget_s=0)
    alone = plan_somas(records, conflicts=conflicts, orderings=["size"])
    assert cut.offsets == alone.offsets  # what size's pass gives on its own
    later = [(o, f) for o in DEFAULT_ORDERINGS[1:] for f in DEFAULT_FITS_OF[o]]
    assert cut.notes["not_run"] == later
    assert "time_budget_s=0 s: 15 of 19 combinations not run" in cut.notes["budget_hit"]
    assert set(cut.notes["arenas"]) == {("size", f) for f in DEFAULT_FITS_OF["size"]}


@pytest.mark.parametrize("budget", [None, 1e9, float("inf")])
def test_a_budget_the_search_does_not_reach_changes_nothing(small: Any, budget: Any) -> None:
    records, conflicts = small
    plan = plan_somas(records, conflicts=conflicts, time_budget_s=budget)
    assert plan.offsets == plan_somas(records, conflicts=conflicts).offsets
    assert "budget_hit" not in plan.notes and "not_run" not in plan.notes


@pytest.mark.parametrize("engine", ["numpy", "kernel"])
def test_a_first_pass_cut_is_refused_in_one_line(large: Any, engine: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    if engine == "kernel" and kernel() is None:
        pytest.skip("the compiled placement needs Numba")
    monkeypatch.setattr(placement, "KERNEL_MIN_TENSORS", 0 if engine == "kernel" else 10**9)
    records, conflicts = large
    with pytest.raises(MemoryPlanError) as somas:
        plan_somas(records, conflicts=conflicts, time_budget_s=0)
    text = str(somas.value)
    assert "\n" not in text
    assert "time_budget_s=0 s ran out while placing its first ordering ('size': 1,024 of" in text
    for planner in (plan_greedy_by_size, plan_greedy_by_breadth):
        with pytest.raises(MemoryPlanError, match=r"ran out after placing 1,024 of \d"):
            planner(records, conflicts=conflicts, time_budget_s=0)


def test_one_pass_planners_under_one_look_finish_whatever_the_budget(small: Any) -> None:
    records, conflicts = small
    for planner in (plan_greedy_by_size, plan_greedy_by_breadth):
        assert planner(records, conflicts=conflicts, time_budget_s=0).offsets == \
            planner(records, conflicts=conflicts).offsets


@pytest.mark.parametrize("bad", [-1, float("nan"), True, "5", [1]])
def test_a_bad_budget_is_a_one_line_option_error(small: Any, bad: Any) -> None:
    records, conflicts = small
    for planner in (plan_somas, plan_greedy_by_size):
        with pytest.raises(OptionError, match="time_budget_s must be a number of seconds"):
            planner(records, conflicts=conflicts, time_budget_s=bad)


@needs_kernel
def test_the_kernel_stops_on_its_flag_at_its_next_look(large: Any) -> None:
    records, conflicts = large
    graph = prepare(records, 512, conflicts).graph
    sizes = np.array([max(1, r.size) for r in records], dtype=np.int64)
    with watch.Watch(0, tensors=len(sizes), passes=1, show_progress=False, desc="t") as w:
        with pytest.raises(watch.PlacementCut) as cut:
            place_compiled(graph, sizes, list(range(len(sizes))), ["best", "first"], None, w)
    assert (cut.value.placed, cut.value.total) == (1024, len(sizes))
    offsets, _ = place_compiled(graph, sizes, list(range(len(sizes))), ["best"], None,
                                watch.Watch(None, tensors=1, passes=1, show_progress=False,
                                            desc="t"))
    assert np.array_equal(offsets, place_compiled(graph, sizes, list(range(len(sizes))),
                                                  ["best"], None)[0])


def _fake_kernel(steps: int, seen: dict[str, Any]) -> Any:
    """A stand-in for the kernel: ``steps`` tensors, the kernel's control protocol, each look
    a little apart so that the watching thread polls in between."""
    def call(control: np.ndarray) -> None:
        seen["thread"] = threading.current_thread().name
        done = 0
        while done < steps:
            if done and done % watch.CHECK_EVERY == 0:
                control[0] = done
                if control[1]:
                    control[2] = 1
                    return
            done += 1
            if done % watch.CHECK_EVERY == 0:
                threading.Event().wait(0.002)
        control[0] = done

    return call


def test_run_watched_moves_the_bar_and_stops_the_thread_at_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    moved: list[int] = []

    class Bar:
        def advance(self, n: int) -> None:
            moved.append(n)

        def describe(self, text: str) -> None: ...

        def close(self) -> None: ...

    monkeypatch.setattr(watch, "progress_bar", lambda **kw: Bar())
    seen: dict[str, Any] = {}
    steps = 200 * 1024  # 0.4 s at least: the bar moves while it runs, not only at its end
    with watch.Watch(None, tensors=steps, passes=1, show_progress=True, desc="t") as w:
        w.begin_pass()
        watch.run_watched(_fake_kernel(steps, seen), w, steps)
    assert seen["thread"] == "workbench-placement" and sum(moved) == steps
    assert len(moved) >= 2 and moved[0] % watch.CHECK_EVERY == 0
    with watch.Watch(0.02, tensors=10**6, passes=1, show_progress=False, desc="t") as w:
        w.begin_pass()
        with pytest.raises(watch.PlacementCut) as cut:
            watch.run_watched(_fake_kernel(10**9, seen), w, 10**9)
    assert 0 < cut.value.placed < 10**9 and cut.value.placed % watch.CHECK_EVERY == 0


def test_run_watched_hands_on_what_the_kernel_raised() -> None:
    def broken(control: np.ndarray) -> None:
        raise ValueError("kernel failed")

    with pytest.raises(ValueError, match="kernel failed"):
        watch.run_watched(broken, watch.Watch(None, tensors=1, passes=1, show_progress=False,
                                              desc="t"), 1)


def test_ctrl_c_stops_the_kernel_thread_and_reaches_the_caller(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Interrupted(threading.Thread):
        def join(self, timeout: float | None = None) -> None:
            if timeout is not None:  # the first poll: the user pressed Ctrl-C
                raise KeyboardInterrupt
            super().join()

    monkeypatch.setattr(watch.threading, "Thread", Interrupted)
    seen: dict[str, Any] = {}
    control: list[np.ndarray] = []
    fake = _fake_kernel(10**9, seen)

    def call(c: np.ndarray) -> None:
        control.append(c)
        fake(c)

    with pytest.raises(KeyboardInterrupt):
        watch.run_watched(call, watch.Watch(None, tensors=1, passes=1, show_progress=False,
                                            desc="t"), 10**9)
    assert control[0][1] == 1 and control[0][2] == 1  # the kernel saw the flag and stopped


def test_somas_bar_covers_every_pass_it_runs(small: Any, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    records, conflicts = small
    events: list[Any] = []

    class Bar:
        def advance(self, n: int) -> None:
            events.append(n)

        def describe(self, text: str) -> None:
            events.append(text)

        def close(self) -> None:
            events.append("closed")

    monkeypatch.setattr(watch, "PROGRESS_MIN_TENSORS", 1)
    monkeypatch.setattr(watch, "progress_bar", lambda **kw: events.append(kw) or Bar())
    plan = plan_somas(records, conflicts=conflicts)
    passes = [e for e in events if isinstance(e, str) and e != "closed"]
    assert events[0]["total"] == len(records) * len(DEFAULT_ORDERINGS)
    assert passes == [f"{o} ({k}/6)" for k, o in enumerate(DEFAULT_ORDERINGS, start=1)]
    assert events[-1] == "closed" and plan.notes["ordering"] in DEFAULT_ORDERINGS
    assert sum(e for e in events if isinstance(e, int)) == len(records) * len(passes)


def test_plan_memory_counts_the_lifetimes_against_the_budget(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    memory = importlib.import_module("workbench.memory")
    given: dict[str, Any] = {}
    real = memory.plan_usage

    def spy(records: Any, planner: str, **options: Any) -> Any:
        given.update(options, left=options["time_budget_s"].deadline - time.monotonic())
        return real(records, planner, **options)

    monkeypatch.setattr(memory, "plan_usage", spy)
    wb.plan_memory(_schedule(200), "greedy_by_size", time_budget_s=30)
    assert 0 < given["left"] < 30  # the planner starts with what the lifetimes left of it
    assert given["time_budget_s"].seconds == 30  # and reports the budget it was given


def test_compare_tells_the_memory_stage_its_share_and_no_bar(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    memory = importlib.import_module("workbench.memory")
    given: list[dict[str, Any]] = []
    monkeypatch.setattr(memory, "plan_memory", lambda run, planner, **o: given.append(o) or "p")
    monkeypatch.setattr(memory, "replay_pool", lambda trace, **o: "r")
    for planner, budget, expected in (
            ("somas", 10.0, {"show_progress": False, "time_budget_s": 9.0}),
            ("greedy_by_size", None, {"show_progress": False}), ("naive", 10.0, {})):
        assert compare_module._stage_memory(planner, 1, budget, (None, 0.0), (None, {})) == \
            ("p", "r")
        assert given.pop() == expected


def test_a_cut_plan_gets_a_note_naming_its_policies(small: Any) -> None:
    records, conflicts = small
    cut = plan_somas(records, conflicts=conflicts, time_budget_s=0)
    ok = Outcome("ok")
    results = {"nnc": [ok, ok, Outcome("ok", (cut, None))],
               "serial": [ok, ok, Outcome("ok", (plan_somas(records, conflicts=conflicts),
                                                 None))]}
    (note,) = unplanned_notes(results)
    assert note.startswith("memory plan cut by its budget, time_budget_s=0 s: 15 of 19")
    assert note.endswith("(nnc)")


@needs_kernel
def test_the_kernel_and_the_numpy_loop_look_at_the_same_steps() -> None:
    """Both engines cut a pass at the same step (the kernel keeps its own copy of the constant:
    Numba's cache would not see a change made in another file)."""
    assert kernel().CHECK_EVERY == watch.CHECK_EVERY


def test_a_bar_from_its_threshold_and_a_deadline_that_is_not_early(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[bool] = []
    real = watch.progress_bar
    monkeypatch.setattr(watch, "progress_bar",
                        lambda **kw: asked.append(kw["enabled"]) or real(**kw))
    for tensors in (watch.PROGRESS_MIN_TENSORS - 1, watch.PROGRESS_MIN_TENSORS):
        watch.Watch(None, tensors=tensors, passes=3, show_progress=True, desc="t").close()
    watch.Watch(None, tensors=10**6, passes=1, show_progress=False, desc="t").close()
    assert asked == [False, True, False]
    w = watch.Watch(5.0, tensors=1, passes=1, show_progress=False, desc="t")
    assert not w.expired() and 4.0 < w.left_s() <= 5.0
    assert watch.Watch(None, tensors=1, passes=1, show_progress=False,
                       desc="t").left_s() == float("inf")


def test_a_refusal_names_the_budget_it_was_given() -> None:
    """Planned through ``plan_memory``, the budget a message names is the caller's, not what
    was left of it after the lifetimes."""
    schedule = _schedule(3000)
    with pytest.raises(MemoryPlanError, match=r"somas: time_budget_s=0.001 s ran out"):
        wb.plan_memory(schedule, "somas", time_budget_s=0.001)
    with pytest.raises(MemoryPlanError, match=r"greedy_by_size: time_budget_s=0.001 s ran out"):
        wb.plan_memory(schedule, "greedy_by_size", time_budget_s=0.001)
