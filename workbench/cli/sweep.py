"""``workbench sweep``: every policy on every built-in graph × batch size × device, one tidy table
(:func:`workbench.orchestration.sweep.sweep`), printed and optionally written as CSV.  The heavy
imports happen when the command runs.

    workbench sweep --model inception_v3 --model squeezenet --batch 1 --batch 16 \\
        --device h100 --device a100 --policies nnc,gpto -o sweep.csv
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from workbench._terminal import clean
from workbench.cli.checks import add_follow_symlinks
from workbench.values.modes import DEFAULT_MODE, MODES

#: The columns printed (the CSV has every column of ``wb.sweep``'s table).
SHOWN = ("graph", "batch", "device", "mode", "policy", "ops", "makespan_us", "speedup",
         "streams", "syncs", "ratio_to_lb")


def sweep_parser(sub: Any, positive_int: Callable[[str], int]) -> None:
    cmd = sub.add_parser("sweep", help="every policy on built-in graphs x batch sizes x devices, "
                                       "one table (CSV with -o)")
    cmd.add_argument("--model", action="append", required=True,
                     help="a built-in graph (repeatable; see `workbench models`)")
    cmd.add_argument("--batch", type=positive_int, action="append",
                     help="batch size (repeatable; default: 1)")
    cmd.add_argument("--device", action="append",
                     help="device model (repeatable; see `workbench devices`; default: h100)")
    cmd.add_argument("--policies", help="comma-separated policies (default: all)")
    cmd.add_argument("--mode", default=DEFAULT_MODE, choices=MODES,
                     help="graph (default): one CUDA graph launch; eager: per-kernel launches")
    cmd.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_follow_symlinks(cmd)
    cmd.add_argument("-o", "--output", help="write the whole table as CSV here")


def run_sweep(args: argparse.Namespace) -> int:
    from workbench._atomic import check_output, write_text
    from workbench._terminal import ranking_text
    from workbench.orchestration.sweep import sweep

    output = check_output(args.output, what="-o") if args.output else None
    policies = None
    if args.policies is not None:
        policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    table = sweep(list(args.model), policies, devices=tuple(args.device or ("h100",)),
                  batch_sizes=tuple(args.batch or (1,)), mode=args.mode,
                  show_progress=not args.no_progress)
    shown = table.astype({"batch": object}).fillna({"batch": "-"})  # a graph without batch
    print(ranking_text(shown, [c for c in SHOWN if c in table.columns]))
    if output is not None:
        write_text(output, table.to_csv(index=False))
        print(clean(f"table: {output} ({len(table)} rows)"))
    return 0


__all__ = ["run_sweep", "sweep_parser"]
