"""IOS search scaling: time, peak memory, DP states and simulated makespan against serial on the
graphs that used to hang or exhaust memory (random DAGs, ONNX model-zoo graphs, RandWire, NASNet).
Each graph runs in a fresh process, so the peak RSS is that search's own.

    .venv/bin/python benchmarks/ios_scaling.py [--graphs random_dag80,squeezenet_onnx]
                                               [--device h100] [--option time_budget_s=30]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys

GRAPHS = {
    "random_dag80": "wb.models.random_dag(80, seed=1)",
    "series_parallel60": "wb.models.series_parallel_dag(60, seed=2)",
    "squeezenet_onnx": "wb.load(_light('light_squeezenet.onnx'))",
    "inception_v2_onnx": "wb.load(_light('light_inception_v2.onnx'))",
    "inception_v3": "wb.models.inception_v3(batch=1, fused=True)",
    "randwire": "wb.models.randwire()",
    "nasnet_a_large": "wb.models.nasnet_a_large()",
}

CHILD = """
import json, os, resource, sys, time
import workbench as wb
from workbench.simulator.simulate import simulate_makespan

def _light(name):
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", name)

graph = {expr}
options = {options!r}
t0, c0 = time.perf_counter(), time.process_time()
s = wb.schedule(graph, "ios", device={device!r}, show_progress=False, **options)
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
s.validate()
assert sorted(s.ops()) == sorted(s.graph.op_ids)
serial = simulate_makespan(wb.schedule(graph, "serial"), {device!r})
ios = simulate_makespan(s, {device!r})
hit = s.notes["budget_hit"]
print(json.dumps({{"ops": len(graph), "units": s.notes["units"], "parts": s.notes["parts"],
                  "seconds": round(seconds, 2), "cpu_s": round(cpu, 2),
                  "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                  "states": s.notes["states"], "transitions": s.notes["transitions"],
                  "simulations": s.notes["simulations"], "splits": s.notes["part_splits"],
                  "serial_us": round(serial, 1), "ios_us": round(ios, 1),
                  "speedup": round(serial / ios, 3),
                  "budget_hit": hit and hit["message"], "fallback": s.notes["fallback"]}}))
"""


def run_one(name: str, device: str, options: dict[str, object]) -> dict[str, object]:
    code = CHILD.format(expr=GRAPHS[name], options=options, device=device)
    env = {**os.environ, "WORKBENCH_PROGRESS": "0"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return {"graph": name, "error": out.stderr.strip().splitlines()[-1:]}
    return {"graph": name, **json.loads(out.stdout.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", default=",".join(GRAPHS))
    parser.add_argument("--device", default="h100")
    parser.add_argument("--option", action="append", default=[],
                        help="an IOS option as name=value (repeatable)")
    args = parser.parse_args()
    options = {k: ast.literal_eval(v) for k, v in (o.split("=", 1) for o in args.option)}
    for name in args.graphs.split(","):
        row = run_one(name, args.device, options)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
