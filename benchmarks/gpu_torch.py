"""GPU benchmark with PyTorch's kernels: the four IOS networks x batch x policy x mode x precision.

    .venv/bin/python benchmarks/gpu.py --executor torch [--device cuda] [--out results/gpu_torch]
    .venv/bin/python benchmarks/gpu_torch.py --device cpu --quick       # the CPU smoke run

(The checkout's ``workbench`` is imported: the repository root is put first on ``sys.path``.)

Inception V3, SqueezeNet, RandWire and NASNet-A large (the IOS paper's networks, as
:func:`workbench.simulator.fidelity.network` builds them) at batch 1 and 16; every policy; ``eager``
and
``graph`` (one CUDA graph per schedule); ``fp32`` and ``tf32``; each run with ``verify=True``
(outputs bitwise equal to the serial schedule's run, else the row's status says so), plus one row
``ios[oracle=torch]``: IOS searching with stages timed on the device
(:class:`~workbench.schedulers.ios_torch_oracle.TorchStageOracle`), fp32.  Each row: the median
whole-graph makespan over ``--repeats`` runs after ``--warmup`` (CUDA events), its spread (IQR),
the speedup over serial in the same precision and mode, the streams; graph-mode fp32 rows are set
beside the figures measured on an H200 in issue 22 (``ref_h200_us``, ``vs_ref``).

Sized for under 5 minutes on one H100/H200: cases run in the order of :data:`CASES` (the ones
with reference figures first) and a case that would start after ``--budget-s`` seconds (default
200, leaving room for the case under way: its searches and one block of runs) is
skipped, and so is each (precision, mode) block of a case (graph fp32 runs first); IOS's searches
get ``--ios-budget-s`` each, the measured oracle ``--oracle-budget-s`` at ``--oracle-batches``
(default: batch 1); whatever was trimmed is printed and kept in the JSON (``trimmed``).
``--quick`` runs tiny sizes (small resolutions, batch 1, the test-suite search options, 1
repeat) so the whole path is smoke-tested on a CPU.  A graph's drawn weights are drawn once for
all its runs (the torch executor keeps them per graph).  Each row is written as soon as it is
measured (``--cases``, JSON lines, default ``<out>/gpu_torch_cases.jsonl``); at the end
``<out>/gpu_torch_results.json`` holds them all and the table is printed.
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

NETWORKS = ("inception_v3", "squeezenet", "randwire", "nasnet_a_large")
#: (network, batch) in the order they run: those with reference figures first.
CASES = (("inception_v3", 1), ("squeezenet", 1), ("inception_v3", 16), ("squeezenet", 16),
         ("randwire", 1), ("nasnet_a_large", 1), ("randwire", 16), ("nasnet_a_large", 16))
#: Issue 22's figures: graph mode, fp32, µs, PyTorch (cuDNN) kernels on an NVIDIA H200.
REFERENCE_H200 = {("inception_v3", 1, "serial"): 3922.0, ("inception_v3", 1, "nnc"): 2120.0,
                  ("inception_v3", 1, "wavefront"): 2226.0, ("inception_v3", 1, "ios"): 2406.0,
                  ("inception_v3", 16, "serial"): 10244.0, ("inception_v3", 16, "asap"): 8463.0,
                  ("squeezenet", 1, "serial"): 536.0, ("squeezenet", 1, "nnc"): 435.0}
QUICK_RESOLUTION = {"inception_v3": 75, "squeezenet": 32, "randwire": 32, "nasnet_a_large": 32}
ORACLE_POLICY = "ios[oracle=torch]"
COLUMNS = ("network", "batch", "precision", "mode", "policy", "status", "streams",
           "makespan_median_us", "makespan_spread_us", "speedup", "verified", "ref_h200_us",
           "vs_ref")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", default=None, help="cuda, cuda:N or cpu (default: cuda "
                                                       "when present)")
    parser.add_argument("--networks", default=",".join(NETWORKS))
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--policies", default="", help="default: every policy")
    parser.add_argument("--modes", default="eager,graph")
    parser.add_argument("--precisions", default="fp32,tf32")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--no-verify", action="store_true")
    parser.add_argument("--no-oracle", action="store_true", help="skip ios[oracle=torch]")
    parser.add_argument("--budget-s", type=float, default=200.0,
                        help="start no case after this many seconds (default: %(default)s)")
    parser.add_argument("--ios-budget-s", type=float, default=10.0,
                        help="search budget of IOS and the other budgeted policies")
    parser.add_argument("--oracle-budget-s", type=float, default=30.0,
                        help="search budget of ios[oracle=torch] (measuring included)")
    parser.add_argument("--oracle-batches", default="1",
                        help="batches that get the ios[oracle=torch] row (default: 1)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a CPU smoke run)")
    parser.add_argument("--out", default="results/gpu_torch")
    parser.add_argument("--cases", default=None,
                        help="JSON-lines file each row is appended to as soon as it is measured "
                             "(default: <out>/gpu_torch_cases.jsonl)")
    args = parser.parse_args(argv)
    if args.quick:
        args.batches, args.repeats, args.warmup = "1", 1, 0
    args.cases = args.cases or str(Path(args.out) / "gpu_torch_cases.jsonl")
    return args


def _csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def build(net: str, batch: int, quick: bool) -> Any:
    from workbench import models
    from workbench.errors import OptionError
    from workbench.simulator.fidelity import network
    from workbench.simulator.fidelity.measured import load_graph

    if not quick:
        # the graphs the H200 reference figures were measured on (Inception V3 unfused, 307 ops),
        # so each reference sits beside the same graph; IOS's fused graphs for the others
        try:
            return load_graph(net, batch)
        except OptionError:   # not among the shipped measurements
            return network(net, batch)
    builder = getattr(models, net)
    fused = {"fused": True} if net == "inception_v3" else {}
    return builder(batch, resolution=QUICK_RESOLUTION[net], **fused)


def schedules(graph: Any, policies: list[str], args: argparse.Namespace, *,
              oracle: bool = True) -> dict[str, Any]:
    """Every policy's schedule (IOS and the other budgeted searches within --ios-budget-s)."""
    import workbench as wb
    from workbench.schedulers import POLICIES, TEST_OPTIONS

    out = {}
    for p in policies:
        opts = dict(TEST_OPTIONS.get(p, {})) if args.quick else {}
        known = POLICIES.get(p).options() or {}
        if "time_budget_s" in known:
            opts["time_budget_s"] = args.ios_budget_s
        if "show_progress" in known:
            opts["show_progress"] = False
        out[p] = wb.schedule(graph, p, **opts).validate()
    if oracle and not args.no_oracle:
        opts = {"r": 2, "s": 3, "max_part_size": 8, "max_states": 30} if args.quick else {}
        oracle_opts = {"precision": "fp32", "warmup": 1, "repeats": 3 if not args.quick else 1,
                       "torch_device": args.device, "floor_us": _graph_floor(args)}
        out[ORACLE_POLICY] = wb.schedule(
            graph, "ios", oracle="torch", time_budget_s=args.oracle_budget_s,
            show_progress=False, oracle_options=oracle_opts, **opts).validate()
    return out


def _graph_floor(args: argparse.Namespace) -> float:
    """On CUDA, the launch floor of a one-kernel CUDA graph (subtracted from each timed stage);
    0 on the CPU."""
    import torch

    if str(args.device or "cuda").startswith("cpu") or not torch.cuda.is_available():
        return 0.0
    from workbench.executors.device_probes import TorchCuda, graph_floor_us

    return graph_floor_us(TorchCuda(args.device))


def measure(sched: Any, mode: str, precision: str, args: argparse.Namespace) -> dict[str, Any]:
    """One row's measured cells (a failed verification or run is the row's status)."""
    from workbench.errors import WorkbenchError
    from workbench.executors.execute import execute

    try:
        trace = execute(sched, executor="torch", mode=mode, precision=precision,
                        warmup=args.warmup, repeats=args.repeats, verify=not args.no_verify,
                        device=args.device)
    except WorkbenchError as exc:
        return {"status": f"failed: {exc}"[:200], "makespan_median_us": float("nan")}
    m = trace.meta
    return {"status": "ok", "makespan_median_us": m["makespan_median_us"],
            "makespan_spread_us": m.get("makespan_spread_us"), "verified": m.get("verified"),
            "ran_mode": m.get("mode"), "device_info": m.get("device_info")}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import workbench as wb

    t0 = time.perf_counter()
    nets, batches = _csv(args.networks), [int(b) for b in _csv(args.batches)]
    policies = _csv(args.policies) or wb.policies()
    if "serial" not in policies:
        policies.insert(0, "serial")
    rows: list[dict[str, Any]] = []
    trimmed: list[str] = []
    info: Any = None
    oracle_batches = [int(b) for b in _csv(args.oracle_batches)]
    for net, batch in [c for c in CASES if c[0] in nets and c[1] in batches]:
        if time.perf_counter() - t0 > args.budget_s:
            trimmed.append(f"{net} b{batch}: past the {args.budget_s:g} s budget")
            continue
        graph = build(net, batch, args.quick)
        scheds = schedules(graph, policies, args, oracle=batch in oracle_batches)
        print(f"{net} b{batch}: {len(graph)} ops, {len(scheds)} schedules "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        settings = [(pr, mo) for pr in ("fp32", "tf32", "fp16", "bf16")
                    for mo in ("graph", "eager")
                    if pr in _csv(args.precisions) and mo in _csv(args.modes)]
        for precision, mode in settings:      # graph fp32 first: the reference figures
            if time.perf_counter() - t0 > args.budget_s:
                trimmed.append(f"{net} b{batch} {precision} {mode}: past the "
                               f"{args.budget_s:g} s budget")
                continue
            for p, sched in scheds.items():
                if p == ORACLE_POLICY and precision != "fp32":
                    continue
                cells = measure(sched, mode, precision, args)
                info = info or cells.pop("device_info", None)
                cells.pop("device_info", None)
                ref = REFERENCE_H200.get((net, batch, p)) \
                    if (mode, precision) == ("graph", "fp32") else None
                span = cells["makespan_median_us"]
                rows.append({"network": net, "batch": batch, "precision": precision,
                             "mode": mode, "policy": p, "streams": sched.n_streams, **cells,
                             "ref_h200_us": ref,
                             "vs_ref": span / ref - 1.0 if ref and span == span else None})
                _speedups(rows)  # serial runs first in each setting: this row's is known
                append_case(args.cases, "gpu_torch", rows[-1])
    _speedups(rows)
    return {"device": info, "settings": vars(args), "rows": rows, "trimmed": trimmed,
            "wall_s": time.perf_counter() - t0}


def _speedups(rows: list[dict[str, Any]]) -> None:
    base = {(r["network"], r["batch"], r["precision"], r["mode"]): r["makespan_median_us"]
            for r in rows if r["policy"] == "serial"}
    for r in rows:
        b = base.get((r["network"], r["batch"], r["precision"], r["mode"]))
        span = r["makespan_median_us"]
        r["speedup"] = b / span if b and span == span and span > 0 else None


FORMATS = {"makespan_median_us": "{:,.1f}", "makespan_spread_us": "{:,.1f}",
           "speedup": "{:.2f}x", "ref_h200_us": "{:,.0f}", "vs_ref": "{:+.1%}"}


def table_text(rows: list[dict[str, Any]]) -> str:
    """The rows as an aligned text table (the columns of :data:`COLUMNS`)."""
    def cell(v: Any, column: str) -> str:
        if v is None or (isinstance(v, float) and v != v):
            return "-"
        return FORMATS[column].format(v) if column in FORMATS else str(v)[:40]

    cells = [[cell(r.get(c), c) for c in COLUMNS] for r in rows]
    widths = [max([len(c), *(len(row[k]) for row in cells)]) for k, c in enumerate(COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from workbench.executors.execute import EXECUTORS

    if "torch" not in EXECUTORS or not EXECUTORS.available("torch"):
        reason = EXECUTORS.unavailable_reason("torch") if "torch" in EXECUTORS else \
            "no torch executor in this checkout"
        print(f"benchmarks/gpu_torch.py needs PyTorch ({reason})", file=sys.stderr)
        return 2
    result = run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "gpu_torch_results.json"
    path.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    info = result["device"] or {}
    print(f"device: {info.get('name', '?')} (torch {info.get('torch', '?')}, cuda "
          f"{info.get('cuda', '-')}, cudnn {info.get('cudnn', '-')}, driver "
          f"{info.get('driver', '-')})")
    print(table_text(result["rows"]))
    for line in result["trimmed"]:
        print(f"trimmed: {line}")
    print(f"{len(result['rows'])} rows in {result['wall_s']:.0f} s -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
