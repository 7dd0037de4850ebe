"""Every registered memory planner on the same records (STYLE.md R4): records of real schedules,
with the SOMAS conflicts of a multi-stream schedule.  Each plan is overlap-free by the independent
oracle (:func:`workbench.memory.check.check_no_overlap`), reserves at least the lower bound, and
the same input gives the same plan.  Property tests over random records are in
``tests/test_memory_planners.py``."""

from __future__ import annotations

import functools

import pytest

import workbench as wb
from workbench.memory.check import check_no_overlap
from workbench.memory.planners import PLANNERS, TEST_OPTIONS, planners


@functools.cache
def _schedules() -> dict[str, wb.Schedule]:
    """Schedules whose records every planner sees: a small transformer on one stream, RAF's three
    branches on NNC's streams (few enough records for the exact planner to prove its optimum
    quickly), and, for the planners that are not slow, a transformer and Inception V3 on NNC's
    streams."""
    small = wb.models.transformer_block(seq_len=6, d_model=16, heads=2, d_ff=32)
    return {"transformer/serial": wb.schedule(small, "serial"),
            "raf_three_branches/nnc": wb.schedule(wb.models.raf_three_branches(), "nnc"),
            "transformer/nnc": wb.schedule(small, "nnc"),
            "inception_v3/nnc": wb.schedule(wb.models.inception_v3(1, fused=False), "nnc")}


SMALL = ("transformer/serial", "raf_three_branches/nnc")


@pytest.mark.parametrize("run", [*SMALL, "transformer/nnc", "inception_v3/nnc"])
@pytest.mark.parametrize("planner", planners())
def test_every_planner_on_the_same_records(planner: str, run: str) -> None:
    if PLANNERS.get(planner).slow and run not in SMALL:
        pytest.skip(f"{planner} is only for small inputs")
    sched = _schedules()[run]
    options = TEST_OPTIONS.get(planner, {})
    plan = wb.plan_memory(sched, planner, **options)
    check_no_overlap(plan)
    assert plan.planner == planner
    assert plan.arena_bytes >= plan.lower_bound
    again = wb.plan_memory(sched, planner, **options)
    assert again.offsets == plan.offsets and again.arena_bytes == plan.arena_bytes


@pytest.mark.parametrize("planner", planners())
def test_every_planner_is_registered_with_a_seed(planner: str) -> None:
    info = PLANNERS.get(planner)
    assert info.seed
    assert PLANNERS.available(planner)
    assert {"alignment", "conflicts"} <= set(PLANNERS.options(planner) or {})
