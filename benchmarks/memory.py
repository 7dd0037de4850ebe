"""Memory benchmark: for each built-in network x policy, the lower bound (peak live bytes), each
static planner's arena, its ratio to the bound, the time to plan, and the BestFit pool's peak.

    .venv/bin/python benchmarks/memory.py [--policies serial,nnc,...] [--batch 1]
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

import workbench as wb
from workbench.memory import check_no_overlap, plan_memory, replay_pool

PLANNERS = ("naive", "greedy_by_size", "greedy_by_breadth", "somas")


def networks(batch: int) -> dict[str, wb.Graph]:
    return {
        "inception_v3": wb.models.inception_v3(batch=batch),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default="serial,dfs,memory_greedy,nnc,wavefront,asap")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--alignment", type=int, default=512)
    args = parser.parse_args()
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
