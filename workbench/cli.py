"""The ``workbench`` command: compare policies on a graph and write an HTML report.

    workbench compare --model inception_v3 --device h100 -o report.html
    workbench compare GRAPH.json --policies serial,nnc,asap --budget 30 -o report.html
    workbench policies | models | devices

``compare`` always finishes: every stage of every policy (schedule, execute, plan memory) gets
``--budget`` seconds (default 60), after which its worker is stopped and the policy's row says
``budget hit (60 s): ...``.  One line per policy goes to stderr as it starts and ends.
Every user error is one line on stderr (``workbench: error: ...``) and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from workbench.compare import DEFAULT_BUDGET_S
from workbench.errors import WorkbenchError


def _parse_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _params(pairs: Sequence[str], option: str = "--param") -> dict[str, Any]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise WorkbenchError(f"{option} expects KEY=VALUE, got {pair!r}")
        out[key.strip()] = _parse_value(value.strip())
    return out


def _budget(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value or None


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser("compare", help="compare scheduling policies on a graph, write a report")
    cmp.add_argument("graph", nargs="?", help="a graph file (.json); or use --model")
    cmp.add_argument("--model", help="a built-in graph (see `workbench models`)")
    cmp.add_argument("--batch", type=int, help="batch size for built-in networks")
    cmp.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                     help="a builder parameter of the built-in model (repeatable)")
    cmp.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                     help="a symbolic dimension of an ONNX graph file (repeatable)")
    cmp.add_argument("--policies", help="comma-separated policies (default: all)")
    cmp.add_argument("--device", default="h100", help="device model (see `workbench devices`)")
    cmp.add_argument("--mode", default="eager", choices=("eager", "graph"),
                     help="eager: per-op host launches; graph: whole-graph sink (CUDA graph)")
    cmp.add_argument("--max-streams", type=int, help="cap on streams for every policy")
    cmp.add_argument("--precision", default="auto",
                     choices=("auto", "fp32", "tf32", "fp16", "bf16"),
                     help="simulated precision (auto: FP32 tensors, TF32 convolutions where the "
                          "device has tensor cores, as cuDNN 8 does by default)")
    cmp.add_argument("-o", "--output", default="report.html", help="HTML report path")
    cmp.add_argument("--plotlyjs", default="inline", choices=("inline", "directory", "cdn"),
                     help="where the report gets plotly.js: inline (one offline file, ~5 MB), "
                          "directory (a shared plotly.min.js beside it) or cdn (cdn.plot.ly, "
                          "needs the network to view; ~100 kB files) (default: %(default)s)")
    cmp.add_argument("--budget", type=_budget, default=DEFAULT_BUDGET_S, metavar="SECONDS",
                     help="wall-clock seconds each stage of each policy may take (schedule, "
                          "execute, plan memory); a stage that overruns is stopped and its row "
                          "says 'budget hit'; 0 means no limit (default: %(default)g)")
    cmp.add_argument("--no-progress", action="store_true",
                     help="no progress bar and no per-policy lines on stderr")
    sub.add_parser("policies", help="list scheduling policies")
    sub.add_parser("models", help="list built-in graphs")
    sub.add_parser("devices", help="list device models")
    return parser


def _load_graph(args: argparse.Namespace) -> Any:
    from workbench import models
    from workbench.io import load

    if bool(args.graph) == bool(args.model):
        raise WorkbenchError("give either a graph file or --model NAME (not both, not neither)")
    if args.graph:
        if args.param or args.batch is not None:
            raise WorkbenchError("--batch/--param apply to --model only")
        return load(args.graph, dims=_params(args.dim, "--dim") or None)
    if args.dim:
        raise WorkbenchError("--dim applies to graph files only")
    params = _params(args.param)
    if args.batch is not None:
        params["batch"] = args.batch
    return models.build(args.model, **params)


def _compare(args: argparse.Namespace) -> int:
    from workbench.compare import compare
    from workbench.schedulers import POLICIES

    graph = _load_graph(args)
    names = None
    if args.policies:
        names = [p.strip() for p in args.policies.split(",") if p.strip()]
    options = None
    if args.max_streams is not None:
        options = {p: {"max_streams": args.max_streams} for p in (names or POLICIES.names())}
        options.setdefault("serial", {"max_streams": args.max_streams})
    result = compare(graph, names, device=args.device, mode=args.mode, options=options,
                     precision=args.precision,
                     show_progress=not args.no_progress, budget_s=args.budget)
    path = result.to_html(args.output, plotlyjs=args.plotlyjs)
    table = result.table.copy()
    print(f"{graph.name}: {len(graph)} ops on {result.device} ({result.mode})")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"best: {result.best} ({result.table['speedup'].max():.2f}x over serial); "
          f"report: {path}")
    unfinished = table.loc[table["status"] != "ok", ["policy", "status"]]
    for row in unfinished.itertuples(index=False):
        print(f"note: {row.policy}: {row.status}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "compare":
            return _compare(args)
        if args.command == "policies":
            from workbench.schedulers import POLICIES

            for name, info in POLICIES.items():
                print(f"{name:12s} {info.seed:16s} {info.summary}")
            return 0
        if args.command == "models":
            from workbench.models import MODELS

            for name, model in MODELS.items():
                print(f"{name:24s} {model.family:8s} {model.source}")
            return 0
        if args.command == "devices":
            from workbench.costs import DEVICES

            for name, spec in DEVICES.items():
                print(f"{name:16s} {spec.sm_count:4d} SMs {spec.peak_tflops:6.1f} TFLOP/s "
                      f"{spec.bandwidth_gbps:6.0f} GB/s  {spec.description}")
            return 0
    except WorkbenchError as exc:
        print(f"workbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
