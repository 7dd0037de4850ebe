"""GPU probes for what the H200 fit cannot separate (issue 23): run them when a GPU is lent.

    .venv/bin/python benchmarks/fidelity_probes.py [--device cuda] [--out results/probes]
    .venv/bin/python benchmarks/fidelity_probes.py --device cpu --quick    # the CPU smoke run

(The checkout's ``workbench`` is imported: the repository root is put first on ``sys.path``.)

1. **Per-op timelines of the measured schedules.**  On the H200 the simulator gives nnc,
   min_streams, asap, gpto and critical_path the same makespan at Inception V3 batch 1 (their
   critical path is the same), while the GPU measured gpto and critical_path 17% slower than nnc
   in fp32 and the multi-stream runs 30% above their critical path in TF32 (4% in fp32).  Each of
   those schedules, rebuilt exactly from ``workbench/data/measured/h200`` (never re-run), runs
   with the torch executor in graph mode (timing events inside the captured graph give every
   op's start and end); per policy the table has the makespan (median of plain replays), the sum
   of its ops' durations against serial's (above 1: ops ran slower side by side), the mean
   concurrency (that sum over the traced run's span), and the simulated makespan on ``h200``
   beside it.  Every trace is written as CSV, so the question "are gpto's kernels slower, or do
   they start later?" is answered op by op.
2. **TF32 stand-alone times.**  ``calibrate_device`` in TF32 on Inception V3 and SqueezeNet at
   batch 1 and 16 (the shipped table is fp32 only): a device profile that
   ``benchmarks/fidelity.py --refit --tf32-profile <out>/tf32_profile.json`` fits the
   tensor-core parameters on (stage 1, instead of on the makespans).

Meant to take a few minutes on an H100/H200 (not yet run on one: no GPU was lent when it was
written; ``--repeats``, ``--alone-repeats``; ``--skip-alone`` leaves part 2 out).
``--quick`` runs serial, nnc and gpto of SqueezeNet b1 in fp32 and a tiny SqueezeNet's
stand-alone table, one repeat each: the whole path on a CPU.  Each row is written as soon as it
is measured (``--cases``, JSON lines, default ``<out>/probes_cases.jsonl``).  Writes
``<out>/probes.json``, ``<out>/<case>_<policy>_<precision>.csv`` and
``<out>/tf32_profile.json``, and prints the table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._cases import append_case  # noqa: E402

#: (network, batch): the cases whose policies the simulator ties and the GPU separates.
CASES = (("inception_v3", 1), ("squeezenet", 1))
POLICIES = ("serial", "nnc", "min_streams", "asap", "gpto", "critical_path")
PRECISIONS = ("fp32", "tf32")
#: (network, batch) of the TF32 stand-alone table.
ALONE = (("inception_v3", 1), ("squeezenet", 1), ("inception_v3", 16), ("squeezenet", 16))
COLUMNS = ("case", "precision", "policy", "status", "makespan_us", "sum_op_us",
           "sum_vs_serial", "concurrency", "simulated_us", "sim_error")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", default=None, help="cuda, cuda:N or cpu (default: cuda "
                                                       "when present)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--alone-repeats", type=int, default=10)
    parser.add_argument("--skip-alone", action="store_true", help="leave the TF32 table out")
    parser.add_argument("--quick", action="store_true", help="a CPU smoke run")
    parser.add_argument("--out", default="results/probes")
    parser.add_argument("--cases", default=None,
                        help="JSON-lines file each row is appended to as soon as it is measured "
                             "(default: <out>/probes_cases.jsonl)")
    args = parser.parse_args(argv)
    args.cases = args.cases or str(Path(args.out) / "probes_cases.jsonl")
    if args.repeats < 1 or args.warmup < 0 or args.alone_repeats < 1:
        parser.error("--repeats and --alone-repeats must be at least 1, --warmup at least 0")
    if args.quick:
        args.repeats, args.warmup, args.alone_repeats = 1, 0, 1
    return args


def trace_summary(trace: Any) -> dict[str, float]:
    """Makespan (median of the plain replays when the executor timed them, else the traced
    run's), the sum of the ops' durations and the mean concurrency (that sum over the traced
    run's span)."""
    df = trace.df
    span = float(df["end_us"].max() - df["start_us"].min()) if len(df) else 0.0
    total = float(df["duration_us"].sum())
    makespan = float(trace.meta.get("makespan_median_us") or trace.makespan)
    return {"makespan_us": makespan, "sum_op_us": total,
            "concurrency": total / span if span > 0 else float("nan")}


def probe_case(network: str, batch: int, policies: tuple[str, ...], precisions: tuple[str, ...],
               args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    """Part 1 for one measured case: every policy's graph-mode run, its trace written as CSV."""
    import workbench as wb
    from workbench.errors import WorkbenchError
    from workbench.simulator.fidelity.measured import load_schedule
    from workbench.simulator.simulate import simulate_makespan

    rows: list[dict[str, Any]] = []
    case = f"{network}_b{batch}"
    for precision in precisions:
        serial_sum = None
        for policy in policies:
            schedule = load_schedule(network, batch, policy)
            row: dict[str, Any] = {"case": case, "precision": precision, "policy": policy}
            try:
                trace = wb.execute(schedule, executor="torch", mode="graph",
                                   precision=precision, warmup=args.warmup,
                                   repeats=args.repeats, device=args.device)
            except WorkbenchError as exc:
                rows.append({**row, "status": f"failed: {exc}"})
                append_case(args.cases, "probes", rows[-1])
                continue
            row.update(status="ok", **trace_summary(trace))
            if policy == "serial":
                serial_sum = row["sum_op_us"]
            row["sum_vs_serial"] = (row["sum_op_us"] / serial_sum if serial_sum
                                    else float("nan"))
            sim = simulate_makespan(schedule, "h200", mode="graph", precision=precision)
            row["simulated_us"] = sim
            row["sim_error"] = sim / row["makespan_us"] - 1 if row["makespan_us"] else None
            trace.df.to_csv(out / f"{case}_{policy}_{precision}.csv", index=False)
            rows.append(row)
            append_case(args.cases, "probes", row)
    return rows


def alone_profile(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Part 2: the TF32 stand-alone table as a device profile (tiny SqueezeNet with --quick)."""
    from workbench import models
    from workbench.executors.device_calibration import calibrate_device
    from workbench.simulator.cost_model.device_profile import save_profile
    from workbench.simulator.fidelity.measured import load_graph

    # named <network>_b<batch>, the keys the fit's stand-alone tables use
    graphs = ([models.squeezenet(1, resolution=32)] if args.quick
              else [load_graph(net, batch).replace(name=f"{net}_b{batch}")
                    for net, batch in ALONE])
    t0 = time.perf_counter()
    profile = calibrate_device(graphs, precision="tf32", warmup=args.warmup,
                               repeats=args.alone_repeats, torch_device=args.device,
                               probes=False, base_device="h200")
    path = save_profile(profile, out / "tf32_profile.json")
    return {"path": str(path), "ops": len(profile.ops), "seconds": time.perf_counter() - t0}


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'case':16s} {'prec':4s} {'policy':14s} {'measured':>9s} {'sum ops':>9s} "
          f"{'vs serial':>9s} {'conc':>5s} {'simulated':>9s} {'error':>7s}")
    for r in rows:
        if r.get("status") != "ok":
            print(f"{r['case']:16s} {r['precision']:4s} {r['policy']:14s} {r['status']}")
            continue
        print(f"{r['case']:16s} {r['precision']:4s} {r['policy']:14s} {r['makespan_us']:9.1f} "
              f"{r['sum_op_us']:9.1f} {r['sum_vs_serial']:9.3f} {r['concurrency']:5.2f} "
              f"{r['simulated_us']:9.1f} {100 * r['sim_error']:+6.1f}%")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    cases = (("squeezenet", 1),) if args.quick else CASES
    policies = ("serial", "nnc", "gpto") if args.quick else POLICIES
    precisions = ("fp32",) if args.quick else PRECISIONS
    rows = []
    for network, batch in cases:
        rows += probe_case(network, batch, policies, precisions, args, out)
    print_table(rows)
    result: dict[str, Any] = {"rows": rows, "args": vars(args)}
    if not args.skip_alone:
        result["tf32_alone"] = alone_profile(args, out)
        print(f"\nTF32 stand-alone table: {result['tf32_alone']['ops']} ops in "
              f"{result['tf32_alone']['seconds']:.0f} s -> {result['tf32_alone']['path']}")
    result["seconds"] = time.perf_counter() - t0
    (out / "probes.json").write_text(json.dumps(result, indent=1, default=str))
    print(f"\ntotal {result['seconds']:.0f} s; {out / 'probes.json'}")
    return 0 if all(r.get("status") == "ok" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
