"""What the stages give on a fixed set of graphs, to hold performance work to "same answers"
(issue 44): every built-in model and 300 seeded random graphs, under every policy.

For each graph and policy :func:`fingerprint` records the schedule (streams, issue order,
syncs, barriers: a SHA-1 of their JSON), the simulated makespan on h100 in eager and graph mode,
and the arena of the ``naive``, ``greedy_by_size`` and ``somas`` plans with a SHA-1 of each
plan's offsets.  ``python tests/golden_stages.py`` writes them to
:data:`GOLDEN` (``tests/data/golden_stages.json``); ``tests/test_golden_stages.py`` recomputes
and compares.  IOS and GPTO run with :data:`workbench.schedulers.TEST_OPTIONS` (bounded searches),
so the set takes about a minute.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden_stages.json"
PLANNERS = ("naive", "greedy_by_size", "somas")


def graphs() -> dict[str, Any]:
    """name -> graph: the built-in models with their default parameters, then 300 random graphs
    (75 of each random family, 4 to 30 ops)."""
    import random

    import workbench as wb
    from workbench.models import random_dags as r

    out: dict[str, Any] = {}
    for name in wb.models.models():
        try:
            out[name] = getattr(wb.models, name)()
        except TypeError:  # a random family: its parameters are required
            continue
    rng = random.Random(44)
    for k in range(75):
        out[f"layered_{k}"] = r.layered_dag(rng.randint(2, 5), rng.randint(2, 6),
                                            edge_prob=rng.uniform(0.2, 0.6), seed=k)
        out[f"series_parallel_{k}"] = r.series_parallel_dag(rng.randint(4, 30), seed=k)
        out[f"gnp_{k}"] = r.gnp_dag(rng.randint(4, 25), rng.uniform(0.1, 0.4), seed=k)
        out[f"random_{k}"] = r.random_dag(rng.randint(4, 30), edges_per_op=rng.randint(1, 4),
                                          window=rng.randint(2, 12), seed=k)
    return out


def _sha(value: Any) -> str:
    return hashlib.sha1(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def fingerprint(graph: Any, policy: str) -> dict[str, Any]:
    import workbench as wb
    from workbench.schedulers import TEST_OPTIONS

    sched = wb.schedule(graph, policy, **TEST_OPTIONS.get(policy, {}))
    row: dict[str, Any] = {
        "schedule": _sha([sorted((str(k), list(v)) for k, v in sched.streams.items()),
                          list(sched.issue_order), sorted(map(list, sched.syncs)),
                          sorted(sched.barriers)]),
        "eager_us": round(wb.simulate(sched, device="h100", mode="eager").makespan, 6),
        "graph_us": round(wb.simulate(sched, device="h100", mode="graph").makespan, 6)}
    for planner in PLANNERS:
        plan = wb.plan_memory(sched, planner)
        row[planner] = [int(plan.arena_bytes), _sha([int(o) for o in plan.offsets])]
    return row


def compute() -> dict[str, dict[str, Any]]:
    import workbench as wb

    return {name: {policy: fingerprint(g, policy) for policy in wb.policies()}
            for name, g in graphs().items()}


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    table = compute()
    GOLDEN.write_text("{\n" + ",\n".join(
        f"{json.dumps(name)}: {json.dumps(table[name], sort_keys=True, separators=(',', ':'))}"
        for name in sorted(table)) + "\n}\n")
    print(f"wrote {GOLDEN}")
