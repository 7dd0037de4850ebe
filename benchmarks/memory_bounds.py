"""What memory planning does at the sizes where it stops being linear (issue 44): per random DAG
size and policy, ``wb.plan_memory(schedule, planner)`` with its defaults in a fresh process, and
how it ended (a plan, a plan cut by SOMAS's time budget, or a one-line refusal), its wall and CPU
seconds and the process's peak resident memory.

    .venv/bin/python benchmarks/memory_bounds.py [--sizes 100000,1000000] [--policies nnc,serial]
                                                 [--planner somas] [--timeout-s 1200]

The graph is ``random_dag(n, edges_per_op=3, seed=1)`` (``benchmarks/stages.py``'s random family)
and its schedule is built untimed.  One process per row, so each peak is that row's own.  Prints
the table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, resource, sys, time
sys.path.insert(0, {root!r})  # this checkout's workbench, not an installed one
import workbench as wb

graph = wb.models.random_dag({n}, edges_per_op=3, seed=1)
schedule = wb.schedule(graph, {policy!r})
wall, cpu = time.perf_counter(), time.process_time()
try:
    plan = wb.plan_memory(schedule, {planner!r}, show_progress=False)
    cut = plan.notes.get("budget_hit")
    ended = ("cut: " + cut) if cut else f"plan ({{plan.notes.get('ordering', '-')}})"
    arena = plan.arena_bytes
except wb.errors.WorkbenchError as exc:
    ended, arena = "refused: " + type(exc).__name__, None
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
print(json.dumps({{"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
                  "peak_gib": peak, "ended": ended, "arena_gib": arena and arena / 2**30}}))
"""


def run_one(n: int, policy: str, planner: str, timeout_s: float) -> dict[str, object]:
    """One fresh process planning the ``n``-op random DAG's ``policy`` schedule (its JSON)."""
    code = CHILD.format(root=str(ROOT), n=n, policy=policy, planner=planner)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {"ended": f"no answer within {timeout_s:g} s"}
    if out.returncode != 0:
        return {"ended": f"died (exit {out.returncode}): {out.stderr.strip()[-200:]}"}
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--policies", default="nnc,serial")
    parser.add_argument("--planner", default="somas")
    parser.add_argument("--timeout-s", type=float, default=1200.0)
    args = parser.parse_args(argv)
    print(f"{'ops':>9} {'policy':8} {'wall s':>8} {'CPU s':>8} {'peak GiB':>9} "
          f"{'arena GiB':>9}  ended")
    for n in (int(x) for x in args.sizes.split(",")):
        for policy in args.policies.split(","):
            row = run_one(n, policy, args.planner, args.timeout_s)

            def cell(key: str, width: int, row: dict[str, object] = row) -> str:
                value = row.get(key)
                return f"{value:>{width}.2f}" if isinstance(value, float) else f"{'-':>{width}}"

            print(f"{n:>9,} {policy:8} {cell('wall_s', 8)} {cell('cpu_s', 8)} "
                  f"{cell('peak_gib', 9)} {cell('arena_gib', 9)}  {row['ended']}", flush=True)


if __name__ == "__main__":
    main()
