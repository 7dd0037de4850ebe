"""Memory benchmark: for each built-in network x policy, the lower bound (peak live bytes), each
static planner's arena, its ratio to the bound, the time to plan, and the BestFit pool's peak.
With ``--scale``, time and peak memory of planning, bounding, checking, validating and gpto on
random DAGs of growing size (each point in a fresh process), and the growth exponent.

    .venv/bin/python benchmarks/memory.py [--policies serial,nnc,...] [--batch 1]
    .venv/bin/python benchmarks/memory.py --scale [--sizes 1000,10000,100000] [--tasks somas,...]
                                          [--traced]

(From a git worktree, put ``PYTHONPATH=.`` in front: a script's own folder, not the current one,
is first on ``sys.path``, so the venv's installed ``workbench`` would be imported otherwise.)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

import workbench as wb
from workbench.memory import check_no_overlap, plan_memory, replay_pool

PLANNERS = ("naive", "greedy_by_size", "greedy_by_breadth", "somas")


def networks(batch: int) -> dict[str, wb.Graph]:
    return {
        "inception_v3": wb.models.inception_v3(batch=batch, fused=False),
        "squeezenet": wb.models.squeezenet(batch=batch),
        "randwire": wb.models.randwire(batch=batch),
        "nasnet_a_large": wb.models.nasnet_a_large(batch=batch),
        "transformer": wb.models.transformer_block(batch=batch),
    }


def run(batch: int, policies: list[str], alignment: int) -> pd.DataFrame:
    rows = []
    for name, graph in networks(batch).items():
        for policy in policies:
            sched = wb.schedule(graph, policy)
            row: dict[str, object] = {"network": name, "policy": policy, "streams": sched.n_streams}
            for planner in PLANNERS:
                t0 = time.perf_counter()
                plan = plan_memory(sched, planner, alignment=alignment)
                elapsed = time.perf_counter() - t0
                check_no_overlap(plan)
                row["lower_bound_mib"] = plan.lower_bound / 2**20
                row[f"{planner}_mib"] = plan.arena_bytes / 2**20
                row[f"{planner}_ratio"] = plan.ratio
                row[f"{planner}_s"] = elapsed
            pool = replay_pool(wb.simulate(sched, "h100"), chunk_bytes=32 << 20)
            row["pool_reserved_mib"] = pool.peak_reserved / 2**20
            row["pool_expansions"] = pool.n_expansions
            rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ --scale

def _serial(n: int) -> wb.Schedule:
    return wb.schedule(wb.models.random_dag(n, seed=0), "serial")


def _streams8(n: int) -> wb.Schedule:
    return wb.schedule(wb.models.random_dag(n, seed=0), "nnc", max_streams=8)


def _setup(task: str, n: int) -> Callable[[], Any]:
    """Build everything a point needs (not measured) and return the measured call."""
    import scipy.sparse.csgraph  # noqa: F401  (imported here so that no point times the import)

    from workbench.memory import conflict_clique_bound, lifetimes

    if task in ("somas", "greedy_by_size"):
        sched = _serial(n)
        return lambda: plan_memory(sched, task)
    if task in ("somas_8_streams", "greedy_by_size_8_streams"):
        sched = _streams8(n)
        return lambda: plan_memory(sched, task.removesuffix("_8_streams"))
    if task in ("somas_nnc", "greedy_by_size_nnc"):  # unbounded streams: O(V x S) clocks
        sched = wb.schedule(wb.models.random_dag(n, seed=0), "nnc")
        return lambda: plan_memory(sched, task.removesuffix("_nnc"))
    if task == "lower_bound_8_streams":
        lt = lifetimes(_streams8(n))
        return lambda: conflict_clique_bound(lt.records, lt.conflicts, alignment=512)
    if task == "checker":
        plan = plan_memory(_serial(n), "greedy_by_size")
        return lambda: check_no_overlap(plan)
    if task == "validate_nnc":
        sched = wb.schedule(wb.models.random_dag(n, seed=0), "nnc")
        return sched.validate
    if task == "gpto":
        graph = wb.models.random_dag(n, seed=0)
        return lambda: wb.schedule(graph, "gpto")
    raise SystemExit(f"unknown task {task!r} (known: {', '.join(SCALE_TASKS + EXTRA_TASKS)})")


SCALE_TASKS = ("somas", "greedy_by_size", "somas_8_streams", "greedy_by_size_8_streams",
               "lower_bound_8_streams", "checker", "validate_nnc", "gpto")
#: Also accepted by --tasks (not in the default table: nnc opens thousands of streams at 100k ops,
#: and multi-stream lifetimes keep V x S clocks).
EXTRA_TASKS = ("somas_nnc", "greedy_by_size_nnc")


def point(task: str, n: int, traced: bool) -> dict[str, float]:
    """Run one measured call in this process: wall and CPU seconds, the growth of the process's
    peak RSS during the call (setup excluded) and the peak RSS; with ``traced``, a second run
    under tracemalloc (slower) for the peak of Python-level allocations."""
    call = _setup(task, n)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {"wall_s": wall, "cpu_s": cpu, "peak_growth_mib": (rss_after - rss_before) / 1024,
           "peak_rss_mib": rss_after / 1024}
    if traced:
        tracemalloc.start()
        call()
        out["traced_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return out


def scale_table(sizes: list[int], tasks: list[str], traced: bool) -> pd.DataFrame:
    env = dict(os.environ)  # the points import the same workbench as this process
    root = str(Path(wb.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    rows = []
    for task in tasks:
        for n in sizes:
            command = [sys.executable, __file__, "--point", task, str(n)]
            run = subprocess.run(command + (["--traced"] if traced else []), capture_output=True,
                                 text=True, check=False, env=env)
            if run.returncode:
                rows.append({"task": task, "ops": n, "error": run.stderr.strip().splitlines()[-1]})
                continue
            rows.append({"task": task, "ops": n, **json.loads(run.stdout.strip().splitlines()[-1])})
    return pd.DataFrame(rows)


def growth(table: pd.DataFrame, low: int, high: int) -> pd.DataFrame:
    """Exponent k of time ~ ops^k between two sizes, per task."""
    out = []
    for task, rows in table.groupby("task", sort=False):
        t = rows.set_index("ops")
        if low in t.index and high in t.index and "wall_s" in t and t.loc[low, "cpu_s"] > 0:
            k = math.log(t.loc[high, "cpu_s"] / t.loc[low, "cpu_s"]) / math.log(high / low)
            out.append({"task": task, f"cpu exponent {low}->{high}": k})
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default="serial,dfs,memory_greedy,nnc,wavefront,asap")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--alignment", type=int, default=512)
    parser.add_argument("--scale", action="store_true", help="time and memory against graph size")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--tasks", default=",".join(SCALE_TASKS))
    parser.add_argument("--traced", action="store_true",
                        help="also rerun each point under tracemalloc (slow)")
    parser.add_argument("--point", nargs=2, metavar=("TASK", "OPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.point:
        print(json.dumps(point(args.point[0], int(args.point[1]), args.traced)))
        return
    if args.scale:
        sizes = [int(x) for x in args.sizes.split(",") if x]
        table = scale_table(sizes, [t for t in args.tasks.split(",") if t], args.traced)
        pd.set_option("display.width", 200)
        print("Scaling on random_dag(n, seed=0) (serial schedule unless named; 8_streams: nnc with "
              "max_streams=8; validate_nnc: nnc, unbounded streams); one fresh process per point; "
              "peak_growth = growth of the process's peak RSS during the call:")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
        if len(sizes) >= 2:
            print()
            print(growth(table, sizes[-2], sizes[-1]).to_string(
                index=False, float_format=lambda v: f"{v:.2f}"))
        return
    table = run(args.batch, [p for p in args.policies.split(",") if p], args.alignment)
    pd.set_option("display.width", 250)
    cols = ["network", "policy", "streams", "lower_bound_mib", "naive_mib", "greedy_by_size_ratio",
            "greedy_by_breadth_ratio", "somas_ratio", "somas_s", "pool_reserved_mib"]
    print(f"Activation memory, batch {args.batch}, alignment {args.alignment} B "
          f"(ratios are arena / lower bound):")
    print(table[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    worst = table["somas_ratio"].max()
    print(f"\nsomas: worst ratio {worst:.4f}; never worse than greedy_by_size: "
          f"{bool((table['somas_mib'] <= table['greedy_by_size_mib'] + 1e-9).all())}; "
          f"slowest plan {table['somas_s'].max():.3f} s")


if __name__ == "__main__":
    main()
