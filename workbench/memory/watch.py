"""Watching a long placement: a time budget that stops it and a bar that shows it (issue 44).

Offset planning is one greedy pass per (ordering, fit), and a pass is not linear on every graph:
on NNC's schedule of a random DAG (3 edges an op) SOMAS takes about 1.1 CPU s at 10k ops and
36 s at 100k, because the tensors live to the schedule's end accumulate
(:mod:`workbench.memory.placement`).  So a planner that a user can start on any graph takes a
:class:`Watch`: a deadline, looked at every :data:`CHECK_EVERY` placements, past which the pass
stops with :class:`PlacementCut`, and from :data:`PROGRESS_MIN_TENSORS` tensors a progress bar
(:mod:`workbench._progress`: a notebook widget or a terminal line, nothing in logs).

The NumPy loop asks the watch itself.  The compiled kernel holds no GIL, so :func:`run_watched`
runs it in a thread and, from this one, shows the steps it writes into its ``control`` array and
sets its stop flag once the deadline passes (or on Ctrl-C, which then still reaches the caller).
Either way the check costs nothing measurable (one comparison every 1,024 steps), and a pass the
deadline does not reach places exactly what it placed without a watch.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench._checks import show
from workbench._progress import progress_bar
from workbench.errors import MemoryPlanError, OptionError

CHECK_EVERY = 1024  # as placement_kernel.CHECK_EVERY (a test holds the two equal)
#: From this many tensors a pass shows a bar: SOMAS on 50k tensors takes seconds, on fewer a bar
#: would only flicker.
PROGRESS_MIN_TENSORS = 50_000
POLL_S = 0.1  # how often the watching thread looks at the kernel's control array


class PlacementCut(MemoryPlanError):
    """A placement pass stopped by its time budget after ``placed`` of ``total`` tensors."""

    def __init__(self, placed: int, total: int) -> None:
        super().__init__(f"the time budget ran out after {placed:,} of {total:,} tensors")
        self.placed, self.total = placed, total


@dataclass(frozen=True)
class Budget:
    """``seconds`` of time counted from ``since`` (``time.monotonic()``): what a planner's
    ``time_budget_s`` becomes, so that a caller that did work first (``plan_memory``'s
    lifetimes, SOMAS's classes) hands on the same deadline and the same number to report."""

    seconds: float
    since: float

    @property
    def deadline(self) -> float:
        return self.since + self.seconds


def check_time_budget(value: Any, who: str) -> Budget | None:
    """``time_budget_s`` as a :class:`Budget` counted from now (``None``: no budget; a Budget
    passes as it is); anything but a number >= 0 is a one-line OptionError naming ``who``."""
    if value is None or isinstance(value, Budget):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) \
            or value < 0:
        raise OptionError(f"{who}: time_budget_s must be a number of seconds >= 0 or None, "
                          f"got {show(value)}")
    return None if math.isinf(value) else Budget(float(value), time.monotonic())


class Watch:
    """The deadline and the bar of one planner call, over all of its passes.

    ``budget``: a :class:`Budget`, seconds from now, or ``None`` (checked by
    :func:`check_time_budget`, naming ``desc``); the bar is ``tensors x passes`` long, shown
    only with ``show_progress`` from :data:`PROGRESS_MIN_TENSORS` tensors a pass.

    >>> with Watch(None, tensors=10, passes=2, show_progress=False, desc="demo") as w:
    ...     w.begin_pass(); w.reached(10); w.expired()
    False
    """

    def __init__(self, budget: Budget | float | None, *, tensors: int, passes: int,
                 show_progress: bool, desc: str) -> None:
        budget = check_time_budget(budget, desc)
        self.budget_s = None if budget is None else budget.seconds
        self.deadline = None if budget is None else budget.deadline
        self.bar = progress_bar(total=tensors * passes, desc=desc, unit="tensor",
                                enabled=bool(show_progress) and tensors >= PROGRESS_MIN_TENSORS)
        self._in_pass = 0

    def expired(self) -> bool:
        """Whether the deadline has passed (never without a budget)."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def left_s(self) -> float:
        """Seconds to the deadline (inf without a budget, 0 once passed)."""
        return math.inf if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def begin_pass(self, text: str | None = None) -> None:
        """A new pass starts (``text`` beside the bar)."""
        self._in_pass = 0
        if text is not None:
            self.bar.describe(text)

    def reached(self, steps: int) -> None:
        """The current pass has gone through ``steps`` tensors (the bar moves on by the rest)."""
        if steps > self._in_pass:
            self.bar.advance(steps - self._in_pass)
            self._in_pass = steps

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_watched(call: Callable[[np.ndarray], None], watch: Watch | None, total: int) -> None:
    """Run the kernel ``call(control)`` over ``total`` tensors (``control``: steps done, stop
    flag, cut flag; :func:`workbench.memory.placement_kernel.place_kernel`), watched: without a
    watch, in this thread; with one, in a thread of its own while this one moves the bar and
    raises the stop flag at the deadline (already set when the deadline passed before).  Raises
    :class:`PlacementCut` when the kernel stopped on the flag, and re-raises what the kernel
    raised; Ctrl-C stops the kernel at its next check and is raised here."""
    control = np.zeros(3, dtype=np.int64)
    if watch is None:
        call(control)
        return
    if watch.expired():
        control[1] = 1
    failed: list[BaseException] = []

    def work() -> None:
        try:
            call(control)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            failed.append(exc)

    thread = threading.Thread(target=work, name="workbench-placement", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(min(POLL_S, max(watch.left_s(), 1e-3)))
            watch.reached(int(control[0]))
            if watch.expired():
                control[1] = 1
    except KeyboardInterrupt:
        control[1] = 1
        thread.join()
        raise
    if failed:
        raise failed[0]
    watch.reached(int(control[0]))
    if control[2]:
        raise PlacementCut(int(control[0]), total)
