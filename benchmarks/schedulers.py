"""Scheduler benchmark: scheduling time against graph size, and schedule quality on the built-in
networks (simulated makespan, speedup over serial, ratio to the lower bound).

    .venv/bin/python benchmarks/schedulers.py [--sizes 1000,10000,100000] [--device h100]
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

import workbench as wb
from workbench.simulator.cost_model.costs import lower_bound_us
from workbench.simulator.simulate import simulate

NETWORKS = {
    "inception_v3 b1": lambda: wb.models.inception_v3(batch=1, fused=False),
    "inception_v3 b16": lambda: wb.models.inception_v3(batch=16, fused=False),
    "squeezenet b1": lambda: wb.models.squeezenet(batch=1),
    "randwire b1": lambda: wb.models.randwire(batch=1),
    "transformer b1": lambda: wb.models.transformer_block(batch=1),
}


# Search-based policies are timed only up to these sizes: their cost grows much faster than V + E.
# IOS is exponential in the width of these random DAGs; benchmarks/search.py reports its searches.
SIZE_LIMITS = {"ios": 0, "gpto": 1000, "min_streams": 10_000, "memory_greedy": 10_000}


def timing_table(sizes: list[int], policies: list[str]) -> pd.DataFrame:
    rows = []
    for n in sizes:
        t0 = time.perf_counter()
        g = wb.models.random_dag(n, edges_per_op=3, seed=0)
        build_s = time.perf_counter() - t0
        row: dict[str, object] = {"ops": n, "edges": len(g.edges), "build_s": build_s}
        for p in policies:
            if n > SIZE_LIMITS.get(p, n):
                row[p] = float("nan")  # printed as NaN: not timed at this size
                continue
            t0 = time.perf_counter()
            wb.schedule(g, p)
            row[p] = time.perf_counter() - t0
        rows.append(row)
    return pd.DataFrame(rows)


def quality_table(device: str, policies: list[str]) -> pd.DataFrame:
    rows = []
    for name, build in NETWORKS.items():
        g = build()
        lb = lower_bound_us(g, device)["lower_bound_us"]
        serial = None
        for p in policies:
            if p == "ios":
                continue  # a search, not a greedy pass: benchmarks/search.py reports it
            s = wb.schedule(g, p)
            t0 = time.perf_counter()
            trace = simulate(s, device)
            sim_ms = (time.perf_counter() - t0) * 1e3
            serial = serial or trace.makespan
            rows.append({"network": name, "ops": len(g), "policy": p,
                         "makespan_us": trace.makespan, "speedup": serial / trace.makespan,
                         "ratio_to_lb": trace.makespan / lb, "streams": s.n_streams,
                         "syncs": s.n_syncs, "simulate_ms": sim_ms})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--device", default="h100")
    parser.add_argument("--policies", default=",".join(wb.policies()))
    args = parser.parse_args()
    policies = [p for p in args.policies.split(",") if p]
    if "serial" in policies:
        policies.remove("serial")
    policies.insert(0, "serial")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    pd.set_option("display.width", 160)
    print("Scheduling time (s) on random DAGs (3 edges per op, window 64; NaN = not timed at "
          f"that size: {SIZE_LIMITS}):")
    print(timing_table(sizes, policies).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\nSchedule quality on the built-in networks, simulated {args.device} (eager):")
    print(quality_table(args.device, policies).to_string(index=False,
                                                         float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
