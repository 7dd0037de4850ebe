"""Memory: tensor lifetimes, static planners (SOMAS and classic ones), lower bounds, BestFit pool.

>>> import workbench as wb
>>> wb.memory.plan_usage([(32, 0, 1), (28, 1, 4), (36, 2, 5)], "greedy_by_size").arena_bytes
64

Engine layer: may import the values, the cost model and the graph transforms (and the schedulers
beside it), nothing above.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from workbench.memory.bounds import conflict_clique_bound, live_bytes_curve, peak_live_bytes
from workbench.memory.check import check_no_overlap
from workbench.memory.lifetimes import Lifetimes, lifetimes, pool_events
from workbench.memory.plan import MemoryPlan, UsageRecord, parse_records
from workbench.memory.planners import PLANNERS, plan_usage, planners
from workbench.memory.pool import PoolResult, simulate_pool
from workbench.memory.somas_classes import communication_lists
from workbench.memory.watch import check_time_budget
from workbench.values.schedule import Schedule
from workbench.values.trace import Trace


def plan_memory(run: Schedule | Trace, planner: str = "somas", **options: Any) -> MemoryPlan:
    """Plan the activation memory of a Schedule or a Trace with the named planner.

    A multi-stream Schedule is planned against its happens-before conflict set (SOMAS's ancestor
    rule), a Trace or a single-stream schedule against its lifetimes.  For a multi-stream schedule
    the lower bound is the heaviest clique of the conflict graph (:func:`conflict_clique_bound`),
    which every valid plan must reserve; the issue-order peak is kept in
    ``notes["interval_lower_bound"]``.  With ``"somas"``, the inputs (and separately the outputs)
    of each communication op are planned as a contiguous list unless ``contiguous=`` is given.
    ``notes`` gets the
    producers, the persistent (input/parameter) bytes and where the lifetimes came from.
    A ``time_budget_s`` given here (greedy planners and SOMAS, :mod:`workbench.memory.watch`)
    is checked before any work and counts from this call, so the lifetimes' time is spent from
    it (SOMAS's default budget counts from the planner's start).
    """
    if options.get("time_budget_s") is not None:
        options["time_budget_s"] = check_time_budget(options["time_budget_s"], planner)
    lt = lifetimes(run)
    if lt.conflicts is not None:
        options.setdefault("conflicts", lt.conflicts)
    if planner == "somas" and "contiguous" not in options:
        lists = communication_lists(run.graph.ops, {r.name for r in lt.records}, lt.aliases)
        if lists:
            options["contiguous"] = lists
    plan = plan_usage(lt.records, planner, **options)
    if lt.conflicts is not None:
        clique = plan.notes.pop("conflict_clique_bound", None)  # somas computed it
        if clique is None:
            clique = conflict_clique_bound(lt.records, lt.conflicts, alignment=plan.alignment)
        plan.notes["interval_lower_bound"] = plan.lower_bound
        if clique > plan.lower_bound:
            plan = dataclasses.replace(plan, lower_bound=clique)
    plan.notes.update({"producers": lt.producers, "persistent_bytes": lt.persistent_bytes,
                       "lifetimes_from": lt.source, "step_times": lt.step_times})
    return plan


def replay_pool(trace: Trace, **options: Any) -> PoolResult:
    """Dynamic reference counting of a Trace through MindSpore's BestFit pool."""
    return simulate_pool(pool_events(trace), **options)


__all__ = [
    "PLANNERS", "Lifetimes", "MemoryPlan", "PoolResult", "UsageRecord", "check_no_overlap",
    "conflict_clique_bound",
    "lifetimes", "live_bytes_curve", "parse_records", "peak_live_bytes", "plan_memory",
    "plan_usage", "planners", "pool_events", "replay_pool", "simulate_pool",
]
