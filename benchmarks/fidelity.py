"""The simulator against published measurements (issue "A simulator whose numbers match real GPUs").

Prints, for every row of ``workbench/data/fidelity.json`` (published latencies: IOS, MLSys 2021,
V100), the simulated latency, the relative error and whether the row was used to fit the model's
parameters (fixed schedules: sequential, IOS's greedy) or held out (schedules searched under the
fitted model: IOS, IOS without merge); then the multi-stream speedup (sequential / IOS) against the
published one; then, with ``--loo``, leave-one-network-out validation (fit without a network,
predict it).

    .venv/bin/python benchmarks/fidelity.py                # evaluate the shipped parameters
    .venv/bin/python benchmarks/fidelity.py --loo          # + leave-one-network-out (minutes)
    .venv/bin/python benchmarks/fidelity.py --fit --write  # refit and write gpu_model.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from workbench import fidelity as F

ROOT = Path(__file__).resolve().parents[1]


def _print_rows(results: list[dict], tol: float) -> list[str]:
    misses = []
    print(f"{'row':42s} {'role':8s} {'published':>9s} {'simulated':>9s} {'error':>7s}")
    for r in results:
        role = "fit" if r["schedule"] in F.FIXED_SCHEDULES else "held out"
        flag = "" if abs(r["error"]) <= tol else "  MISS"
        if flag:
            misses.append(r["id"])
        print(f"{r['id']:42s} {role:8s} {r['latency_ms']:9.2f} {r['simulated_ms']:9.2f} "
              f"{100 * r['error']:+6.1f}%{flag}")
    return misses


def _print_speedups(results: list[dict], tol: float) -> list[str]:
    by = {(r["network"], r["batch"], r["schedule"], r["id"].endswith("readme")): r
          for r in results}
    misses = []
    print(f"\n{'speedup sequential / ios':42s} {'published':>9s} {'simulated':>9s} {'error':>7s}")
    for (net, batch, sched, readme), seq in sorted(by.items()):
        if sched != "sequential":
            continue
        best = by.get((net, batch, "ios", readme))
        if best is None:
            continue
        pub = seq["latency_ms"] / best["latency_ms"]
        sim = seq["simulated_ms"] / best["simulated_ms"]
        err = sim / pub - 1
        flag = "" if abs(err) <= tol else "  MISS"
        if flag:
            misses.append(f"{net} b{batch}")
        print(f"{net + f' b{batch}' + (' (README)' if readme else ''):42s} {pub:9.2f}x "
              f"{sim:8.2f}x {100 * err:+6.1f}%{flag}")
    return misses


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="refit the parameters on the fit rows")
    ap.add_argument("--write", action="store_true", help="with --fit: write gpu_model.json")
    ap.add_argument("--loo", action="store_true", help="leave-one-network-out validation")
    ap.add_argument("--evaluations", type=int, default=400, help="fit budget (simulations)")
    ap.add_argument("--networks", default="", help="comma-separated subset of networks")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    rows = F.load_rows()
    if args.networks:
        keep = set(args.networks.split(","))
        rows = [r for r in rows if r.network in keep]
    tol = F.tolerances()
    model = spec = None
    if args.fit:
        t0 = time.perf_counter()
        values = F.fit(rows, max_evaluations=args.evaluations,
                       progress=lambda m: print(m, file=sys.stderr, flush=True))
        print(f"fitted in {time.perf_counter() - t0:.0f} s:")
        for k, v in values.items():
            print(f"  {k:24s} {v:.4g}")
        model, spec = F.model_with(values)
        if args.write:
            _write(values)
    t0 = time.perf_counter()
    results = F.evaluate(rows, model, spec,
                         progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"\nV100 rows (tolerance {100 * tol['latency']:.0f}% latency, "
          f"{100 * tol['speedup']:.0f}% speedup); {time.perf_counter() - t0:.0f} s\n")
    misses = _print_rows(results, tol["latency"])
    misses += _print_speedups(results, tol["speedup"])
    errs = [abs(r["error"]) for r in results]
    print(f"\nmean |error| {100 * sum(errs) / len(errs):.1f}%, max {100 * max(errs):.1f}%; "
          f"misses: {', '.join(misses) or 'none'}")
    loo = []
    if args.loo:
        print("\nleave-one-network-out (fit without the network, predict its fixed-schedule "
              "rows):")
        loo = F.leave_one_network_out(rows, progress=lambda m: print(m, file=sys.stderr,
                                                                      flush=True))
        for r in loo:
            flag = "" if abs(r["error"]) <= tol["latency"] else "  MISS"
            print(f"  {r['fold']:28s} {r['id']:40s} {r['latency_ms']:8.2f} "
                  f"{r['simulated_ms']:8.2f} {100 * r['error']:+6.1f}%{flag}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": results, "loo": loo}, indent=1))
    return 0


def _write(values: dict[str, float]) -> None:
    path = ROOT / "workbench" / "data" / "gpu_model.json"
    data = json.loads(path.read_text())
    for name, value in values.items():
        section = "library" if name in data["library"] else "runtime"
        data[section][name]["value"] = round(value, 4)
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    raise SystemExit(main())
