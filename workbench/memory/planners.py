"""The memory planner table (STYLE.md R2/R3): one registry, capabilities beside each entry.

>>> planners()
['naive', 'greedy_by_size', 'greedy_by_breadth', 'somas', 'exact']
>>> plan_usage([(32, 0, 1), (28, 1, 4)], "greedy_by_size").arena_bytes
60
>>> plan_usage([(32, 0, 1)], "bogus")
Traceback (most recent call last):
...
workbench.errors.MemoryPlanError: unknown memory planner 'bogus' (known: exact, greedy_by_breadth, \
greedy_by_size, naive, somas)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from workbench.errors import MemoryPlanError, OptionError
from workbench.memory.exact import plan_exact
from workbench.memory.plan import MemoryPlan, RecordLike, parse_records
from workbench.memory.somas import plan_somas
from workbench.memory.static import plan_greedy_by_breadth, plan_greedy_by_size, plan_naive
from workbench.registry import Registry


@dataclass(frozen=True)
class PlannerInfo:
    """A planner function ``plan_<name>(records, *, alignment, conflicts, ...)`` and its tags.

    ``exact``: the result is a proven optimum (when ``notes["optimal"]``); ``slow``: exponential or
    otherwise only for small inputs (common tests use small cases); ``budgeted``: it takes
    ``time_budget_s`` and ``show_progress`` (:mod:`workbench.memory.watch`).
    """

    fn: Callable[..., MemoryPlan]
    seed: str
    exact: bool = False
    slow: bool = False
    budgeted: bool = False


PLANNERS = Registry[PlannerInfo]("memory planner", error=MemoryPlanError)
PLANNERS.register("naive", PlannerInfo(plan_naive, seed="baseline: no reuse (TFLite NAIVE)"))
PLANNERS.register(
    "greedy_by_size",
    PlannerInfo(plan_greedy_by_size, seed="Pisarchyk & Lee 2020 / TFLite GREEDY_BY_SIZE offsets",
                budgeted=True),
)
PLANNERS.register(
    "greedy_by_breadth",
    PlannerInfo(plan_greedy_by_breadth, seed="TFLite GREEDY_BY_BREADTH, offset adaptation",
                budgeted=True),
)
PLANNERS.register("somas", PlannerInfo(plan_somas, seed="004 Memory Management: static SOMAS",
                                       budgeted=True))
PLANNERS.register(
    "exact", PlannerInfo(plan_exact, seed="MILP optimum (reference)", exact=True, slow=True)
)

#: Fast options for the common planner tests.
TEST_OPTIONS: dict[str, dict[str, Any]] = {"exact": {"time_limit_s": 5.0}}


def planners() -> list[str]:
    """Names of the registered memory planners, in registration order."""
    return PLANNERS.names()


def plan_usage(items: Iterable[RecordLike], planner: str = "somas", **options: Any) -> MemoryPlan:
    """Parse usage records and plan them with the named planner.

    Options are the planner's keyword options (``alignment``, ``conflicts``, ...); an unknown one
    raises OptionError listing the valid ones.
    """
    info = PLANNERS.get(planner)
    records = parse_records(items)
    PLANNERS.check_options(planner, options, error=OptionError)
    return info.fn(records, **options)
