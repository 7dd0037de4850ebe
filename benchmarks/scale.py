"""Scale benchmark: wall time and peak memory of every stage of the pipeline, from 1k to 1M ops.

    .venv/bin/python benchmarks/scale.py [--sizes 1000,10000,100000] [--stages build,schedule,...]
                                         [--skip compare@100000,report] [--timeout 600]
                                         [--json results/scale.json]
    .venv/bin/python benchmarks/scale.py --from-json a.json b.json   # one table of saved runs

Stages (``stage:policy`` picks the policy; a bare ``schedule`` means every registered policy):
``build`` (random_dag, 3 edges per op), ``schedule:<policy>``, ``validate:<policy>``,
``simulate:<policy>``, ``plan_memory:<policy>`` (SOMAS), ``compare`` (``wb.compare(g)`` with its
defaults: every policy, 60 s budget per stage) and ``report`` (``to_html`` of the comparison the
compare point saved).  Every (stage, size) point runs in a fresh subprocess (in its own process
group, killed whole after ``--timeout`` seconds, its address space capped at ``--max-gb``, which
its workers inherit), so a stage that blows up is a row that says so.
Times cover the stage only (its inputs are built first, untimed); peak RSS is the point process's
(inputs included) and, for compare, also its largest worker's ("+…w").  The last column is the
growth exponent between the two ``--fit`` sizes (default 10k and 100k; log-log slope of the time:
1 = linear, 2 = quadratic), NaN unless both finished.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

DEFAULT_STAGES = ("build,schedule,validate:nnc,simulate:serial,simulate:nnc,plan_memory:serial,"
                  "plan_memory:nnc,compare,report")
WORK = Path(tempfile.gettempdir()) / "workbench-scale"


def _graph(n: int) -> Any:
    import workbench as wb

    return wb.models.random_dag(n, edges_per_op=3, seed=1)


def _schedule(n: int, policy: str) -> Any:
    import workbench as wb

    return wb.schedule(_graph(n), policy)


# ---------------------------------------------------------------------------------- one point
def _point(stage: str, n: int) -> dict[str, Any]:
    """Run one (stage, size) point in this process: prepare its inputs, time the stage."""
    import workbench as wb

    name, _, policy = stage.partition(":")
    note = ""
    timed: Callable[[], Any]
    if name == "build":
        timed = lambda: _graph(n)
    elif name == "schedule":
        g = _graph(n)
        timed = lambda: wb.schedule(g, policy)
    elif name == "validate":
        s = _schedule(n, policy)
        timed = s.validate
    elif name == "simulate":
        s = _schedule(n, policy)
        timed = lambda: wb.simulate(s, device="h100")
    elif name == "plan_memory":
        s = _schedule(n, policy)
        timed = lambda: wb.plan_memory(s, "somas")
    elif name == "compare":
        g = _graph(n)
        timed = lambda: wb.compare(g, show_progress=False)
    elif name == "report":
        path = WORK / f"compare-{n}.pkl"
        if not path.exists():
            raise SystemExit(f"report@{n} needs the comparison saved by compare@{n}")
        with path.open("rb") as f:
            comparison = pickle.load(f)
        timed = lambda: comparison.to_html(WORK / f"report-{n}.html")
    else:
        raise SystemExit(f"unknown stage {stage!r}")
    t0 = time.perf_counter()
    value: Any = timed()
    wall = time.perf_counter() - t0
    if name == "compare":
        unfinished = value.table.loc[value.table["status"] != "ok", ["policy", "status"]]
        note = "; ".join(f"{p}: {s}" for p, s in unfinished.itertuples(index=False))
        WORK.mkdir(parents=True, exist_ok=True)
        with (WORK / f"compare-{n}.pkl").open("wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
    if name == "report":
        note = f"{value.stat().st_size / 2**20:.1f} MiB of HTML"
    return {"wall_s": wall, "rss_mib": _maxrss_mib(resource.RUSAGE_SELF),
            "workers_rss_mib": _maxrss_mib(resource.RUSAGE_CHILDREN), "note": note}


def _maxrss_mib(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


def run_point(stage: str, n: int, timeout_s: float, max_gb: float) -> dict[str, Any]:
    """The point in a fresh subprocess (own process group, killed whole on timeout; address
    space capped at ``max_gb`` so that one point cannot take a shared machine's memory)."""
    cmd = [sys.executable, __file__, "--point", stage, str(n)]
    limit = int(max_gb * 2**30)

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=cap)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"status": f"timeout ({timeout_s:g} s)", "elapsed_s": time.perf_counter() - t0}
    if proc.returncode != 0:
        last = (err.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        if proc.returncode < 0:
            last = f"killed by signal {-proc.returncode} (out of memory?)"
        elif "MemoryError" in last:
            last = f"out of memory (over the {max_gb:g} GB cap)"
        return {"status": f"failed: {last[:120]}", "elapsed_s": time.perf_counter() - t0}
    return {"status": "ok", **json.loads(out.strip().splitlines()[-1])}


# ---------------------------------------------------------------------------------- the table
def expand(stages: list[str]) -> list[str]:
    import workbench as wb

    out: list[str] = []
    for stage in stages:
        out += [f"schedule:{p}" for p in wb.policies()] if stage == "schedule" else [stage]
    return out


def skipped(stage: str, n: int, skips: list[str]) -> bool:
    for rule in skips:
        name, _, size = rule.partition("@")
        if name in (stage, stage.partition(":")[0], "") and (not size or int(size) == n):
            return True
    return False


def growth(times: dict[int, float], a: int, b: int) -> float:
    """Log-log slope of the time between sizes ``a`` and ``b`` (NaN unless both have one)."""
    if times.get(a, 0) <= 0 or times.get(b, 0) <= 0:
        return float("nan")
    return math.log(times[b] / times[a]) / math.log(b / a)


def _cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return "skipped"
    if result["status"] != "ok":
        return result["status"]
    rss = result["rss_mib"]
    if result.get("workers_rss_mib", 0) > rss:
        rss_text = f"{rss:.0f}+{result['workers_rss_mib']:.0f}w MiB"
    else:
        rss_text = f"{rss:.0f} MiB"
    return f"{result['wall_s']:.2f} s / {rss_text}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="comma-separated op counts (e.g. add 1000000)")
    parser.add_argument("--stages", default=DEFAULT_STAGES, help="comma-separated stages")
    parser.add_argument("--skip", default="", help="comma-separated STAGE, STAGE@SIZE or @SIZE")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per point")
    parser.add_argument("--max-gb", type=float, default=8.0,
                        help="address-space cap per point in GB (default 8)")
    parser.add_argument("--fit", default="10000,100000",
                        help="the two sizes between which the growth exponent is fitted")
    parser.add_argument("--json", help="also save every point as JSON here")
    parser.add_argument("--from-json", nargs="+", metavar="JSON",
                        help="print the table of points saved by earlier runs (runs nothing)")
    parser.add_argument("--point", nargs=2, metavar=("STAGE", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.point:
        print(json.dumps(_point(args.point[0], int(args.point[1]))))
        return
    fit_a, fit_b = (int(s) for s in args.fit.split(","))
    if args.from_json:
        results = [r for path in args.from_json for r in json.loads(Path(path).read_text())]
        sizes = sorted({r["ops"] for r in results})
        stages = list(dict.fromkeys(r["stage"] for r in results))
        print(table(results, stages, sizes, fit_a, fit_b))
        return
    sizes = [int(s) for s in args.sizes.split(",") if s]
    stages = expand([s for s in args.stages.split(",") if s])
    skips = [s for s in args.skip.split(",") if s]
    results = []
    for stage in stages:
        for n in sizes:
            if skipped(stage, n, skips):
                continue
            result = {"stage": stage, "ops": n,
                      **run_point(stage, n, args.timeout, args.max_gb)}
            results.append(result)
            print(f"{stage:24s} {n:>8d}  {_cell(result)}"
                  + (f"  ({result['note']})" if result.get("note") else ""),
                  file=sys.stderr, flush=True)
    print(table(results, stages, sizes, fit_a, fit_b))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1))


def table(results: list[dict[str, Any]], stages: list[str], sizes: list[int], fit_a: int,
          fit_b: int) -> str:
    """One row per stage: a cell per size (time / peak RSS, or what happened), the growth."""
    rows = []
    for stage in stages:
        mine = {r["ops"]: r for r in results if r["stage"] == stage}
        times = {n: r["wall_s"] for n, r in mine.items() if r["status"] == "ok"}
        rows.append({"stage": stage, **{f"{n:,} ops": _cell(mine.get(n)) for n in sizes},
                     f"growth {fit_a // 1000}k→{fit_b // 1000}k": growth(times, fit_a, fit_b)})
    pd.set_option("display.width", 250)
    pd.set_option("display.max_colwidth", 60)
    return pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.2f}")


if __name__ == "__main__":
    main()
