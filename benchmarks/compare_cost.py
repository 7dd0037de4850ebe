"""What one ``wb.compare`` costs on the built-in graphs (issue 44): CPU seconds of the process and
its stage worker together, for the first call in a fresh process and for a second call.

    .venv/bin/python benchmarks/compare_cost.py [--graphs nasnet_a_large_unfused,inception_v3]
                                                [--rounds 3]

Each round runs each graph in a fresh subprocess, which builds the graph (untimed), then times

* ``imports``: what a first comparison imports before its worker starts (the comparison module
  with pandas, and :data:`workbench._bounded.CAPPED_PRELOAD`: networkx, SciPy's sparse graphs),
  timed on their own so that they are not read as the comparison's cost;
* ``first``: ``wb.compare(graph)`` with its defaults (every policy, the simulator), the first
  call in the process;
* ``second``: the same call again (the cost a notebook pays for every comparison after its
  first);
* ``slowest``: the policy whose schedule took longest in the second call, and its
  ``schedule_ms``.

CPU time (``getrusage`` of the process plus its reaped children: the worker's stages) because the
machine is shared; each column is the best of the rounds.  Prints the table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

GRAPHS = {
    "inception_v3": "wb.models.inception_v3()",
    "nasnet_a_large_unfused": "wb.models.nasnet_a_large(fused=False)",
    "randwire": "wb.models.randwire()",
    "transformer_block": "wb.models.transformer_block()",
}

CHILD = """
import json, resource, sys
sys.path.insert(0, {root!r})  # this checkout's workbench, not an installed one
import workbench as wb


def cpu():
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                  resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


graph = {expr}
c0 = cpu()
import importlib
import workbench.orchestration.compare
from workbench._bounded import CAPPED_PRELOAD
for name in CAPPED_PRELOAD:
    importlib.import_module(name)
c1 = cpu()
wb.compare(graph, show_progress=False)
c2 = cpu()
table = wb.compare(graph, show_progress=False).table
c3 = cpu()
slow = table.loc[table["schedule_ms"].idxmax()]
print(json.dumps({{"ops": len(graph), "imports": c1 - c0, "first": c2 - c1, "second": c3 - c2,
                  "slowest": f"{{slow['policy']}} {{slow['schedule_ms']:.0f}} ms"}}))
"""


def run_one(name: str, timeout_s: float = 600.0) -> dict[str, object]:
    """One fresh process timing ``name`` (module docstring); its JSON line as a dict."""
    out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT), expr=GRAPHS[name])],
                         capture_output=True, text=True, timeout=timeout_s, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{name}: the timing process failed: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def measure(names: list[str], rounds: int) -> list[dict[str, object]]:
    """Per graph, the best of ``rounds`` fresh processes for each timed column."""
    runs: dict[str, list[dict[str, object]]] = {n: [] for n in names}
    for _ in range(rounds):
        for name in names:  # graphs interleaved round by round: drift hits all of them
            runs[name].append(run_one(name))
    rows = []
    for name, got in runs.items():
        best = min(got, key=lambda r: float(r["second"]))  # type: ignore[arg-type]
        rows.append({"graph": name, "ops": got[0]["ops"],
                     **{k: min(float(r[k]) for r in got)  # type: ignore[arg-type]
                        for k in ("imports", "first", "second")},
                     "slowest": best["slowest"]})
    return rows


def graph_names(text: str) -> list[str]:
    """``--graphs``: names from :data:`GRAPHS`, comma-separated."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in GRAPHS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown graph {', '.join(unknown) or repr(text)} (known: {', '.join(GRAPHS)})")
    return names


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=graph_names, default=list(GRAPHS))
    parser.add_argument("--rounds", type=int, default=3, choices=range(1, 21), metavar="1-20")
    args = parser.parse_args(argv)
    print(f"{'graph':24s} {'ops':>5s} {'imports':>8s} {'first':>7s} {'second':>7s}  slowest "
          "(second call)")
    for row in measure(args.graphs, args.rounds):
        print(f"{row['graph']:24s} {row['ops']:>5} {row['imports']:8.2f} {row['first']:7.2f} "
              f"{row['second']:7.2f}  {row['slowest']}")
    print(f"CPU s (process + its stage worker), best of {args.rounds} fresh processes each")


if __name__ == "__main__":
    main()
