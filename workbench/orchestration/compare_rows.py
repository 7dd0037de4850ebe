"""The rows of a comparison's table: one per policy from its stages' outcomes (status,
makespan, streams, memory), and one for a recorded run; the notes of memory stages that
refused.  Used by :func:`workbench.orchestration.compare.compare`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench._bounded import Outcome
from workbench._terminal import MAX_CELL
from workbench.errors import OptionError
from workbench.values.graph import Graph
from workbench.values.trace import Trace

STAGES = ("schedule", "execute", "memory")


def secs(seconds: float) -> str:
    return f"{seconds:g} s"


def unplanned_notes(results: Mapping[str, list[Outcome]]) -> list[str]:
    """One note per reason the memory stage refused a policy's plan or pool replay, naming the
    policies (their memory cells are empty), and one per budget that cut a plan's search short
    (SOMAS kept the best pass that finished: its arena depends on the machine's speed)."""
    why: dict[str, list[str]] = {}
    for name, outcomes in results.items():
        if len(outcomes) > 2 and outcomes[2].ok:
            for what, value in zip(("plan", "pool replay"), outcomes[2].value, strict=True):
                if isinstance(value, str):
                    why.setdefault(f"memory {what} not made: {value}", []).append(name)
                elif what == "plan" and value.notes.get("budget_hit"):
                    why.setdefault(f"memory plan cut by its budget, "
                                   f"{value.notes['budget_hit']}", []).append(name)
    return [f"{text} ({', '.join(names)})" for text, names in why.items()]


def status_of(outcomes: list[Outcome], budget: float | None) -> str:
    """``ok``; ``budget hit (60 s): <what is missing>``; ``failed in <stage>: <why>`` (also
    when the memory stage refused a plan: the row keeps its makespan).  A search cut by its
    wall-clock budget is ``budget hit (54 s): best so far`` (its result depends on the
    machine's speed), short enough for the CLI's cells (:data:`~workbench._terminal.MAX_CELL`)
    not to cut it; a longer label keeps ``budget hit (...)`` alone."""
    missing = {"schedule": "no schedule", "execute": "not executed",
               "memory": "memory not planned"}
    label = f"budget hit ({secs(budget or 0.0)})"
    for stage, out in zip(STAGES, outcomes, strict=False):
        if out.status == "budget":
            return f"{label}: {missing[stage]}"
        if out.status == "memory":
            return f"stopped: {out.message} in {stage}"
        if out.status == "died":
            return f"failed in {stage}: {out.message}"
    memory = outcomes[2] if len(outcomes) > 2 and outcomes[2].ok else None
    refused = [v for v in (memory.value if memory is not None else ()) if isinstance(v, str)]
    if refused:  # the makespan stands; the memory cells are empty (stage_memory)
        return f"failed in memory: {refused[0]}"
    executed = outcomes[1] if len(outcomes) > 1 and outcomes[1].ok else None
    cut = executed.value[0].meta.get("budget_cut") if executed is not None else None
    if cut:
        return (f"ok (budget {secs(cut['budget_s'])}: {cut['timed']} of {cut['asked']} timed "
                f"runs)")
    first = outcomes[0]
    hit = first.value[0].notes.get("budget_hit") if first.ok else None
    if hit:
        if isinstance(hit, dict) and hit.get("budget") not in (None, "time_budget_s"):
            # a work budget (states): the same result on any machine, so the row stays "ok"
            return f"ok ({hit['budget']}={hit['limit']:,} hit)"
        if isinstance(hit, dict) and isinstance(hit.get("limit"), (int, float)):
            label = f"budget hit ({secs(hit['limit'])})"
        text = f"{label}: best so far"
        return text if len(text) <= MAX_CELL else label
    return "ok"


def policy_row(name: str, outcomes: list[Outcome], bounds: Mapping[str, float],
         budget: float | None) -> dict[str, Any]:
    nan = float("nan")
    row: dict[str, Any] = {"policy": name, "status": status_of(outcomes, budget),
                           "makespan_us": nan,
                           "streams": nan, "syncs": nan, "barriers": nan,
                           "avg_concurrency": nan, "utilisation": nan,
                           "critical_path_us": bounds["critical_path_us"],
                           "work_us": bounds["work_us"],
                           "lower_bound_us": bounds["lower_bound_us"],
                           "optimum_us": bounds["optimum_us"], "ratio_to_optimum": nan,
                           "ratio_to_lb": nan, "schedule_ms": nan}
    if outcomes[0].ok:
        sched, ms = outcomes[0].value
        streams, syncs, barriers = sched.totals   # control-flow sub-graphs included
        row.update(streams=streams, syncs=syncs, barriers=barriers, schedule_ms=ms)
    if outcomes[1].ok:
        trace, m = outcomes[1].value
        lb = bounds["lower_bound_us"]
        row.update(makespan_us=trace.makespan, avg_concurrency=m["avg_concurrency"],
                   utilisation=m["utilisation"],
                   ratio_to_optimum=trace.makespan / bounds["optimum_us"],
                   ratio_to_lb=trace.makespan / lb if lb > 0 else nan)
    if len(outcomes) > 2:
        row.update(peak_live_mib=nan, arena_mib=nan, arena_ratio=nan, pool_reserved_mib=nan)
        if outcomes[2].ok:
            plan, pool = outcomes[2].value
            if not isinstance(plan, str):
                row.update(peak_live_mib=plan.lower_bound / 2**20,
                           arena_mib=plan.arena_bytes / 2**20, arena_ratio=plan.ratio)
            if not isinstance(pool, str):
                row.update(pool_reserved_mib=pool.peak_reserved / 2**20)
    return row



def measured_row(trace: Trace, graph: Graph, bounds: Mapping[str, float]) -> dict[str, Any]:
    """The table row of a recorded run of ``graph``."""
    unknown = [op for op in trace.df["op"] if op not in graph]
    if unknown:
        raise OptionError(f"measured trace has op {unknown[0]!r}, which is not in graph "
                          f"{graph.name!r}")
    m = trace.metrics()
    lb = bounds["lower_bound_us"]
    return {"policy": "measured", "makespan_us": trace.makespan,
            "streams": int(trace.df["stream"].nunique()), "syncs": 0, "barriers": 0,
            "avg_concurrency": m["avg_concurrency"], "utilisation": m["utilisation"],
            "critical_path_us": bounds["critical_path_us"], "work_us": bounds["work_us"],
            "lower_bound_us": lb, "optimum_us": bounds["optimum_us"],
            "ratio_to_optimum": trace.makespan / bounds["optimum_us"],
            "ratio_to_lb": trace.makespan / lb if lb > 0 else float("nan"),
            "status": "measured"}


__all__ = ["STAGES", "measured_row", "policy_row", "secs", "status_of", "unplanned_notes"]
