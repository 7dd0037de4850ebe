"""GPU benchmark: every built-in network x batch x policy x launch mode, measured with CuPy.

``--executor torch`` runs benchmarks/gpu_torch.py instead (PyTorch's kernels: the four IOS
networks, eager and graph, fp32 and tf32, verified, in under 5 minutes); ``--executor cupy``
(default) runs this script, whose kernels are the project's own, about 6x slower than cuDNN.

    .venv/bin/python benchmarks/gpu.py [--networks inception_v3,squeezenet,...] [--batches 1,16]
        [--policies serial,nnc,...] [--modes eager,graph] [--repeats 20] [--warmup 3]
        [--memory somas] [--verify] [--out results/gpu]

For each network and batch, every op is first timed alone (the calibration table, saved as
``calibration_<network>_b<batch>.json``); then for each mode and policy the schedule runs on the
GPU.  One row each: median makespan and spread (IQR) over ``--repeats`` whole-graph runs, speedup
over ``serial`` in the same mode, graph over eager (same policy), host time per launched op, the
simulator's makespan with the calibration (on the cost model's ``--sim-device`` with the real SM
count and the measured host time per launch) and its error, and measured peak device memory.
Writes ``<out>/gpu_results.json`` and the HTML report ``<out>/gpu_report.html`` (tables and
timelines).  Without a CUDA GPU and CuPy it prints one line saying what is missing and how to run
it, and exits with status 2.
"""

from __future__ import annotations

import argparse
import html
import json
import sys
import time
from pathlib import Path
from typing import Any

NETWORKS = ("inception_v3", "squeezenet", "randwire", "nasnet_a_large", "transformer_block")
HOW_TO = ("pip install -e '.[gpu]' (CuPy for CUDA 12) on a machine with an NVIDIA GPU, then "
          ".venv/bin/python benchmarks/gpu.py")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--networks", default=",".join(NETWORKS))
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--policies", default="")
    parser.add_argument("--modes", default="eager,graph")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--alone-repeats", type=int, default=10)
    parser.add_argument("--memory", default="somas")
    parser.add_argument("--sim-device", default="h100")
    parser.add_argument("--verify", action="store_true",
                        help="require outputs bitwise equal to the serial run")
    parser.add_argument("--quick", action="store_true",
                        help="small IOS/GPTO search options (the test-suite options)")
    parser.add_argument("--out", default="results/gpu")
    return parser.parse_args(argv)


def _executor(argv: list[str]) -> str:
    """``--executor cupy`` (default: this script) or ``torch`` (benchmarks/gpu_torch.py)."""
    for k, arg in enumerate(argv):
        if arg.startswith("--executor="):
            return arg.split("=", 1)[1]
        if arg == "--executor" and k + 1 < len(argv):
            return argv[k + 1]
    return "cupy"


def _without_executor(argv: list[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--executor":
            skip = True
        elif not arg.startswith("--executor="):
            out.append(arg)
    return out


def _csv(text: str) -> list[str]:
    return [x for x in text.split(",") if x]


def run(args: argparse.Namespace) -> dict[str, Any]:
    import workbench as wb
    from workbench.executors.gpu import calibration, executor
    from workbench.schedulers import TEST_OPTIONS
    from workbench.simulator.fidelity import simulator_error

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = executor.device_info()
    policies = _csv(args.policies) or wb.policies()
    if "serial" not in policies:
        policies.insert(0, "serial")
    rows: list[dict[str, Any]] = []
    traces: dict[tuple[str, int, str], dict[str, Any]] = {}
    for net in _csv(args.networks):
        for batch in (int(b) for b in _csv(args.batches)):
            graph = wb.models.build(net, batch=batch)
            schedules = {}
            for p in policies:
                options = TEST_OPTIONS.get(p, {}) if args.quick else {}
                t0 = time.perf_counter()
                schedules[p] = wb.schedule(graph, p, **options).validate()
                print(f"{net} b{batch}: scheduled {p} in {time.perf_counter() - t0:.2f} s",
                      flush=True)
            table = calibration.calibrate_gpu(schedules["serial"], repeats=args.alone_repeats,
                                              memory=args.memory)
            calibration.save_calibration(table, out / f"calibration_{net}_b{batch}.json")
            sim_spec = calibration.device_spec_for(table, args.sim_device,
                                                   sm_count=info["sm_count"])
            for mode in _csv(args.modes):
                measured = {}
                for p, sched in schedules.items():
                    trace = executor.run(sched, mode=mode, memory=args.memory,
                                         repeats=args.repeats, warmup=args.warmup,
                                         device=args.sim_device, verify=args.verify)
                    measured[p] = trace
                    print(f"{net} b{batch} {mode:5s} {p:14s} "
                          f"{trace.meta['makespan_median_us']:10.1f} us", flush=True)
                traces[(net, batch, mode)] = measured
                errors = simulator_error(measured, table.ops, device=sim_spec,
                                         mode=mode)
                base = measured["serial"].meta["makespan_median_us"]
                for (p, trace), err in zip(measured.items(), errors.itertuples(), strict=True):
                    m = trace.meta
                    rows.append({
                        "network": net, "batch": batch, "mode": mode, "policy": p,
                        "streams": schedules[p].n_streams, "syncs": schedules[p].n_syncs,
                        "barriers": schedules[p].n_barriers,
                        "makespan_median_us": m["makespan_median_us"],
                        "makespan_spread_us": m["makespan_spread_us"],
                        "per_op_event_makespan_us": m["per_op_event_makespan_us"],
                        "speedup_vs_serial": base / m["makespan_median_us"],
                        "host_us_per_launch": m["host_us_per_launch"],
                        "launches": m["n_launches"],
                        "simulated_us": err.simulated_us, "sim_error_pct": err.error_pct,
                        "peak_memory_mib": m["peak_memory_bytes"] / 2**20,
                        "arena_mib": m["arena_bytes"] / 2**20,
                        "verified": bool(m.get("verified", False)),
                    })
    _graph_over_eager(rows)
    result = {"device": info, "settings": vars(args), "rows": rows}
    (out / "gpu_results.json").write_text(json.dumps(result, indent=1, default=str),
                                          encoding="utf-8")
    _write_report(out / "gpu_report.html", result, traces)
    return result


def _graph_over_eager(rows: list[dict[str, Any]]) -> None:
    eager = {(r["network"], r["batch"], r["policy"]): r["makespan_median_us"]
             for r in rows if r["mode"] == "eager"}
    for r in rows:
        e = eager.get((r["network"], r["batch"], r["policy"]))
        r["graph_over_eager"] = (e / r["makespan_median_us"]
                                 if r["mode"] == "graph" and e else float("nan"))


def _write_report(path: Path, result: dict[str, Any], traces: dict[Any, dict[str, Any]]) -> None:
    import pandas as pd

    from workbench.viz import timelines

    frame = pd.DataFrame(result["rows"])
    info = result["device"]
    parts = [f"<h1>GPU benchmark on {html.escape(str(info['name']))}</h1>",
             f"<p>{html.escape(json.dumps(info['versions']))}; SMs {info['sm_count']}</p>"]
    first = True
    for (net, batch, mode), measured in traces.items():
        sub = frame[(frame.network == net) & (frame.batch == batch) & (frame["mode"] == mode)]
        parts.append(f"<h2>{html.escape(net)} batch {batch}, {html.escape(mode)}</h2>")
        parts.append(sub.drop(columns=["network", "batch", "mode"]).to_html(
            index=False, float_format=lambda v: f"{v:.3f}", escape=True))
        fig = timelines(measured)
        parts.append(fig.to_html(full_html=False, include_plotlyjs=first))
        first = False
    body = "\n".join(parts)
    path.write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>GPU benchmark"
                    f"</title></head><body>{body}</body></html>", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if _executor(argv) == "torch":   # PyTorch's kernels: benchmarks/gpu_torch.py
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "gpu_torch", Path(__file__).with_name("gpu_torch.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return int(module.main(_without_executor(argv)))
    args = _parse(_without_executor(argv))
    from workbench.executors import gpu

    if not gpu.is_available():
        print(f"benchmarks/gpu.py needs a CUDA GPU and CuPy ({gpu.unavailable_reason()}); "
              f"to run it: {HOW_TO}", file=sys.stderr)
        return 2
    result = run(args)
    print(f"{len(result['rows'])} rows -> {Path(args.out) / 'gpu_results.json'}, "
          f"{Path(args.out) / 'gpu_report.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
