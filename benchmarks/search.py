"""Search benchmark: every policy on the branchy built-in networks at batch 1 and 16 on simulated
H100 and V100: makespan, ratio to the lower bound, syncs, streams and scheduling time; plus the
IOS search statistics (states, transitions, stages evaluated, cache hits).

    .venv/bin/python benchmarks/search.py [--networks inception_v3,squeezenet] [--batches 1,16]
                                          [--devices h100,v100] [--ios-r 3 --ios-s 8]
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

import workbench as wb
from workbench.simulator.cost_model.costs import lower_bound_us
from workbench.simulator.simulate import simulate


def run(networks: list[str], batches: list[int], devices: list[str], r: int, s: int,
        mode: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, searches = [], []
    for net in networks:
        for batch in batches:
            graph = wb.models.build(net, batch=batch)
            for device in devices:
                lb = lower_bound_us(graph, device)["lower_bound_us"]
                serial = None
                for policy in wb.policies():
                    opts: dict[str, object] = {}
                    if policy == "ios":
                        opts = {"r": r, "s": s, "device": device, "mode": mode}
                    elif "device" in wb.schedulers.POLICIES.get(policy).options():
                        opts = {"device": device}
                    t0 = time.perf_counter()
                    sched = wb.schedule(graph, policy, **opts)
                    elapsed = time.perf_counter() - t0
                    trace = simulate(sched, device, mode=mode)
                    serial = serial or trace.makespan
                    rows.append({"network": net, "batch": batch, "device": device,
                                 "policy": policy, "makespan_us": trace.makespan,
                                 "speedup": serial / trace.makespan,
                                 "ratio_to_lb": trace.makespan / lb, "syncs": sched.n_syncs,
                                 "barriers": sched.n_barriers, "streams": sched.n_streams,
                                 "schedule_s": elapsed})
                    if policy == "ios":
                        n = sched.notes
                        searches.append({"network": net, "batch": batch, "device": device,
                                         "units": n["units"], "states": n["states"],
                                         "transitions": n["transitions"],
                                         "stages_evaluated": n["stages_evaluated"],
                                         "cache_hits": n["cache_hits"], "search_s": n["search_s"]})
    return pd.DataFrame(rows), pd.DataFrame(searches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="inception_v3,squeezenet,randwire,nasnet_a_large")
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--devices", default="h100,v100")
    parser.add_argument("--ios-r", type=int, default=3)
    parser.add_argument("--ios-s", type=int, default=8)
    parser.add_argument("--mode", default="eager", choices=("eager", "graph"))
    args = parser.parse_args()
    table, searches = run(args.networks.split(","), [int(b) for b in args.batches.split(",")],
                          args.devices.split(","), args.ios_r, args.ios_s, args.mode)
    pd.set_option("display.width", 200)
    fmt = {"float_format": lambda v: f"{v:.3f}"}
    print(f"Policies on the built-in networks (simulated, {args.mode} mode):")
    print(table.to_string(index=False, **fmt))
    print("\nIOS search statistics:")
    print(searches.to_string(index=False, **fmt))
    print("\nIOS against the best greedy policy (nnc, asap, wavefront) per case:")
    key = ["network", "batch", "device"]
    greedy = table[table["policy"].isin(["nnc", "asap", "wavefront"])].groupby(key)[
        "makespan_us"].min()
    ios = table[table["policy"] == "ios"].set_index(key)["makespan_us"]
    print((ios / greedy).rename("ios / best greedy").to_frame().to_string(**fmt))


if __name__ == "__main__":
    main()
