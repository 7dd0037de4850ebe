"""The profile verbs of the ``workbench`` command (:mod:`workbench.cli`):

    workbench import PROFILE [--et ET] [--step N|all] -o graph.json
    workbench compare --measured TRACE [--et ET] [GRAPH] --export-trace out.json --table out.csv

``import`` reads a PyTorch profiler (Kineto) trace, alone (:func:`workbench.io.
load_pytorch_trace`: one op per kernel, or per host op of a CPU run, with the stream-order and
event-wait edges) or with its Execution Trace (``--et``: :func:`workbench.io.
load_execution_trace`, the data dependencies and the training step's phases), and saves the
graph with its measured times (``.json`` or ``.dot``).  ``compare --measured`` adds the recorded
run as the row ``measured``: with no graph it compares the run's own graph; with a graph file it
matches the trace to that graph.  ``--export-trace`` writes one Chrome / Perfetto trace per row
(``out.<policy>.json``; whole µs by default so that HTA reads them without its rounding switch,
``--trace-unit ns`` for Perfetto's resolution), ``--table`` the ranking table (``.csv`` or
``.json``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from workbench._terminal import clean
from workbench.errors import OptionError

TABLE_SUFFIXES = (".csv", ".json")


def _step(text: str) -> int | str:
    if text == "all":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a ProfilerStep number or 'all', "
                                         f"got {text!r}") from None


def _rank(text: str) -> int:
    if text.isascii() and text.isdigit():
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a rank (a whole number >= 0), got {text!r}")


def add_import_parser(sub: Any) -> None:
    imp = sub.add_parser("import", help="import a PyTorch profiler trace (and its execution "
                                        "trace) as a graph with measured times")
    imp.add_argument("profile", help="a PyTorch profiler (Kineto) JSON trace (.json, .json.gz)")
    imp.add_argument("--et", help="the Execution Trace of the same run "
                                  "(ExecutionTraceObserver): data dependencies and phases")
    imp.add_argument("--step", type=_step, help="the ProfilerStep to keep (default: the last "
                                                "complete one; 'all': every event)")
    imp.add_argument("-o", "--output", default="graph.json",
                     help="graph path, .json or .dot (default: %(default)s)")


def add_compare_options(cmp: Any) -> None:
    cmp.add_argument("--measured", metavar="TRACE",
                     help="a PyTorch profiler trace of the run, shown as the row 'measured' "
                          "(without a graph file its own graph is compared)")
    cmp.add_argument("--et", help="with --measured: the run's Execution Trace")
    cmp.add_argument("--step", type=_step, help="with --measured: the ProfilerStep to keep")
    cmp.add_argument("--export-trace", metavar="OUT.json",
                     help="write each row's timeline as a Chrome/Perfetto trace, "
                          "OUT.<policy>.json (HTA reads them)")
    cmp.add_argument("--trace-unit", choices=("us", "ns"), default="us",
                     help="--export-trace times: whole µs (default; HolisticTraceAnalysis reads "
                          "them as they are) or ns (Perfetto's resolution)")
    cmp.add_argument("--trace-rank", type=_rank, default=0, metavar="N",
                     help="--export-trace: HTA's rank of the first row's trace, the next rows "
                          "N+1, N+2, ... (one folder of traces, one rank each; default: 0)")
    cmp.add_argument("--table", metavar="OUT.csv|OUT.json", help="write the ranking table")


def load_profile(profile: str, et: str | None, step: int | str | None,
                 graph: Any = None) -> Any:
    """The measured Trace of a profile (and ET); ``graph``: match the profile to it."""
    from workbench._atomic import check_input
    from workbench.io import load_execution_trace, load_pytorch_trace

    check_input(Path(profile), what="profile")
    if et is not None:
        check_input(Path(et), what="execution trace")
        if step is not None:
            raise OptionError("--step applies to a profile alone (an execution trace records "
                              "one step)")
        if graph is not None:
            raise OptionError("--et gives the run's own graph: leave the graph file out")
        return load_execution_trace(et, profile)
    return load_pytorch_trace(profile, graph=graph, step=step)


def run_import(args: argparse.Namespace) -> int:
    from workbench._atomic import check_output
    from workbench.io import save

    output = check_output(args.output, what="-o")
    if output.suffix.lower() not in (".json", ".dot"):
        raise OptionError(f"-o {output}: the graph is saved as .json or .dot")
    t0 = time.perf_counter()
    trace = load_profile(args.profile, args.et, args.step)
    graph = trace.graph
    path = save(graph, output)
    meta = trace.meta
    print(clean(f"{graph.name}: {len(graph)} ops, {len(graph.edges)} edges, "
                f"{trace.df['stream'].nunique()} streams on {trace.device}; measured "
                f"{trace.makespan:,.1f} µs"))
    if "summary" in meta:
        print(clean(meta["summary"]))
    if "phases" in meta:
        print(clean("phases: " + ", ".join(f"{k} {v}" for k, v in meta["phases"].items())
                    + f"; {meta['left_out']} calls left out"))
    print(clean(f"graph: {path} ({time.perf_counter() - t0:.2f} s)"))
    return 0


def check_compare_outputs(args: argparse.Namespace) -> None:
    """``--table`` / ``--export-trace`` paths and the ``--et``/``--step`` pairing, before any
    work."""
    from workbench._atomic import check_output

    if args.table is not None:
        table = check_output(args.table, what="--table")
        if table.suffix.lower() not in TABLE_SUFFIXES:
            raise OptionError(f"--table {table}: write .csv or .json")
    if args.export_trace is not None:
        check_output(args.export_trace, what="--export-trace")
    if (args.et is not None or args.step is not None) and args.measured is None:
        raise OptionError("--et/--step go with --measured TRACE")


def write_compare_outputs(result: Any, args: argparse.Namespace) -> list[str]:
    """Write ``--table`` and ``--export-trace``; returns one line per file written."""
    from workbench._atomic import write_text
    from workbench.io import save_chrome_trace

    lines = []
    if args.table is not None:
        path = Path(args.table)
        table = result.table
        text = table.to_csv(index=False) if path.suffix.lower() == ".csv" else \
            table.to_json(orient="records", indent=1)
        lines.append(f"table: {write_text(path, text)}")
    if args.export_trace is not None:
        base = Path(args.export_trace)
        suffix = "".join(base.suffixes[-2:]) if base.name.endswith(".json.gz") else \
            (base.suffix or ".json")
        stem = base.name[:-len(suffix)] if base.name.endswith(suffix) else base.name
        first = getattr(args, "trace_rank", 0)
        written = [save_chrome_trace(trace, base.with_name(f"{stem}.{policy}{suffix}"),
                                     time_unit=args.trace_unit, rank=first + i)
                   for i, (policy, trace) in enumerate(result.traces.items())]
        lines.append(f"traces: {len(written)} files (HTA ranks {first}-{first + len(written) - 1}"
                     f" in row order), e.g. {written[0]}" if written
                     else "traces: none (no policy finished)")
    return lines


__all__ = ["add_compare_options", "add_import_parser", "check_compare_outputs",
           "load_profile", "run_import", "write_compare_outputs"]
