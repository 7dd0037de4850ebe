"""Fuzz the workbench with thousands of generated hostile inputs (issue 27).

    python benchmarks/fuzz.py --inputs 3000 --seed 1 --scale 4

Every family of :mod:`tests.fuzz.cases` (DOT, JSON edge lists and full form, ONNX, PyTorch
traces, execution traces, CLI options, Python API options), each input in a worker under a time
limit and a 4 GiB memory limit (:mod:`tests.fuzz.runner`).  Prints the outcome counts per family
and every bad outcome (traceback, hang, out-of-memory, silent acceptance); exits 1 if there was
one.  ``--scale`` multiplies the big inputs (fan-ins, DOT crosses, ctrl_deps chains).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.cases import FAMILIES, generate  # noqa: E402
from tests.fuzz.runner import BAD, run_cases, table  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per input")
    parser.add_argument("--families", default=",".join(FAMILIES))
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    cases = generate(args.inputs, args.seed, scale=args.scale,
                     families=tuple(args.families.split(",")))
    results = []
    for k, result in enumerate(run_cases(cases, time_limit_s=args.time_limit), 1):
        results.append(result)
        if result.outcome in BAD:
            print(f"BAD {result.case.family}/{result.case.label}: {result.outcome}: "
                  f"{result.detail[:400]!r}", flush=True)
        if k % 500 == 0:
            print(f"... {k} inputs, {time.perf_counter() - t0:.0f} s", file=sys.stderr,
                  flush=True)
    print(table(results))
    slowest = max(results, key=lambda r: r.seconds)
    print(f"{len(results)} inputs in {time.perf_counter() - t0:.0f} s (seed {args.seed}, scale "
          f"{args.scale}); slowest: {slowest.case.family}/{slowest.case.label} "
          f"{slowest.seconds:.1f} s")
    return 1 if any(r.outcome in BAD for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
