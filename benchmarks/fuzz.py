"""Fuzz the workbench with thousands of generated hostile inputs (issues 27, 34 and 43).

    python benchmarks/fuzz.py --inputs 3000 --seed 1 --findings /tmp/fuzz_findings.md
    python benchmarks/fuzz.py --inputs 3000 --seed 1 --case 1234     # rerun one case

Every family of :mod:`tests.fuzz.families`: the issue-27 input kinds (DOT, JSON edge lists and
full form, ONNX, PyTorch traces, execution traces, CLI options, Python API options) and the
issue-34 ones (op attribute extremes, huge integers, corrupt execution traces, hostile paths,
writers, nested control flow, round trips, option combinations) and the issue-43 ones
(side-effect schedules, ONNX external data and structure, data-dependent torch modules, hostile
names under an ASCII terminal).  Each input runs in a worker
under a time limit and a 4 GiB memory limit (:mod:`tests.fuzz.runner`).  Prints the outcome
counts per family (clean, ok, silent, traceback, hang, oom, roundtrip), then the first examples
of each bad outcome with a reproducer (``--case K`` with the same ``--inputs``/``--seed``/
``--scale`` regenerates case ``K``, runs it alone, prints its whole detail and writes its
input file to ``fuzz-case-K.*``); exits 1 if there was one.  Seeded: the same arguments give
the same inputs.  ``--scale`` multiplies the big inputs (fan-ins, DOT crosses, ctrl_deps chains).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.families import FAMILIES, generate  # noqa: E402
from tests.fuzz.runner import BAD, Pool, Result, run_cases, table  # noqa: E402

#: Examples printed per family and bad outcome.
EXAMPLES = 3


def _first_line(detail: str) -> str:
    return (detail.strip().splitlines() or [""])[0][:220]


def distinct_bad(results: list[tuple[int, Result]]) -> list[tuple[int, Result]]:
    """The first result of every (family, label, outcome) among the bad ones."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for k, r in results:
        key = (r.case.family, r.case.label, r.outcome)
        if r.outcome in BAD and key not in seen:
            seen.add(key)
            out.append((k, r))
    return out


def findings_text(results: list[tuple[int, Result]], command: str, summary: str) -> str:
    """The markdown written by ``--findings``: the table, then one line per distinct bad
    outcome (family, reproducer, outcome, first line of the error)."""
    rows = [f"# Fuzz findings\n\n`{command}`\n\n{summary}\n", "```",
            table([r for _, r in results]), "```", "",
            "## Distinct bad outcomes (family | reproducer | outcome | first line)", ""]
    for k, r in distinct_bad(results):
        rows.append(f"- {r.case.family} | `--case {k}` ({r.case.label}) | {r.outcome} | "
                    f"{_first_line(r.detail)}")
    return "\n".join(rows) + "\n"


def _dump(case: Any, k: int) -> str:
    """Write a case's input file (when it has one) into the working directory."""
    data, action = case.data, case.action.rsplit(".", 1)[-1]
    if action == "load_graph":
        suffix, payload = data
    elif action == "read_file":
        suffix, payload = Path(str(data[1])).suffix, data[2]
    elif action in ("load_trace", "load_et"):
        suffix, payload = ".json", data
    elif action == "nested":
        from tests.fuzz.actions_io import nested_text

        suffix, payload = ".json", nested_text(data[0], tuple(data[1]))
    else:
        return ""
    path = Path(f"fuzz-case-{k}{suffix}")
    path.write_bytes(payload.encode("utf-8", "surrogatepass") if isinstance(payload, str)
                     else payload)
    return str(path)


def rerun(cases: list[Any], k: int, time_limit_s: float) -> int:
    case = cases[k]
    print(f"case {k}: {case.family}/{case.label} (action {case.action}, refuse={case.refuse})")
    if case.action.endswith("cli_files") or case.action == "cli":
        print("argv:", " ".join(map(str, case.data)), "| extra:", case.extra)
    else:
        print("data:", repr(case.data)[:300], "| extra:", case.extra)
    written = _dump(case, k)
    if written:
        print("input written to", written)
    pool = Pool(time_limit_s)
    try:
        result = pool.run(case)
    finally:
        pool.close()
    print(f"outcome: {result.outcome} ({result.seconds:.1f} s)\n{result.detail}")
    return 1 if result.outcome in BAD else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per input")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--case", type=int, default=None, help="rerun this one case")
    parser.add_argument("--findings", default=None, help="write the table and the distinct "
                        "bad outcomes to this markdown file (overwritten)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    cases = generate(args.inputs, args.seed, scale=args.scale,
                     families=tuple(args.families.split(",")))
    if args.case is not None:
        return rerun(cases, args.case, args.time_limit)
    results: list[tuple[int, Result]] = []
    shown: dict[tuple[str, str], int] = {}
    for k, result in enumerate(run_cases(cases, time_limit_s=args.time_limit)):
        results.append((k, result))
        key = (result.case.family, result.outcome)
        if result.outcome in BAD and shown.get(key, 0) < EXAMPLES:
            shown[key] = shown.get(key, 0) + 1
            print(f"BAD {result.case.family}/{result.case.label}: {result.outcome}: "
                  f"{_first_line(result.detail)!r}  [--case {k}]", flush=True)
        if (k + 1) % 250 == 0:
            print(f"... {k + 1} inputs, {time.perf_counter() - t0:.0f} s", file=sys.stderr,
                  flush=True)
    print(table([r for _, r in results]))
    slowest = max(results, key=lambda kr: kr[1].seconds)[1]
    summary = (f"{len(results)} inputs in {time.perf_counter() - t0:.0f} s (seed {args.seed}, "
               f"scale {args.scale}); slowest: {slowest.case.family}/{slowest.case.label} "
               f"{slowest.seconds:.1f} s")
    print(summary)
    bad = distinct_bad(results)
    print(f"{len(bad)} distinct bad outcomes (family/label/outcome); reproduce one with "
          f"`python benchmarks/fuzz.py --inputs {args.inputs} --seed {args.seed} "
          f"--scale {args.scale} --case K`")
    if args.findings:
        command = "python benchmarks/fuzz.py " + " ".join(sys.argv[1:] if argv is None else argv)
        Path(args.findings).write_text(findings_text(results, command, summary))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
