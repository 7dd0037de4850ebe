"""The profile verbs of the ``workbench`` command (:mod:`workbench.cli`):

    workbench import PROFILE [--et ET] [--step N|all] -o graph.json
    workbench compare --measured TRACE [--et ET] [--step N|all] [GRAPH] --export-trace out.json
        --table out.csv

``import`` reads a PyTorch profiler (Kineto) trace, alone (:func:`workbench.io.
load_pytorch_trace`: one op per kernel, or per host op of a CPU run, with the stream-order and
event-wait edges) or with its Execution Trace (``--et``: :func:`workbench.io.
load_execution_trace`, the data dependencies and the training step's phases), and saves the
graph with its measured times (``.json`` or ``.dot``).  ``--step N`` keeps ``ProfilerStep#N`` of a
profile recorded over several steps, in the Kineto trace and in the Execution Trace alike
(default: the last complete step; ``--step all``: every step merged into one graph); a step the
traces lack is a one-line error naming the ones they have (or saying they have none).  A graph
with nothing to schedule (one chain, or no costs: a profile alone of one thread or stream) is
one ``warning:`` line.  ``compare --measured`` adds the recorded run as the row ``measured``: with
no graph it compares the run's own graph; with a graph file it matches the trace to that graph.
A CPU-only run (host ops) is compared on the device ``cpu`` (``workbench/data/devices/cpu.json``:
the host, its ops timed by their measured durations), not on a GPU: with a built-in GPU device
(``--device`` defaults to ``h100``) the what-ifs run on ``cpu`` instead, with one ``note:`` line
saying so; a device file or profile (``--device PATH``, e.g. one calibrated on that CPU) is used
as given.  The Python API does not switch: ``wb.compare(..., measured=trace)`` simulates on the
device it is given, so pass ``device="cpu"`` for a CPU run.  ``--export-trace`` writes one
Chrome / Perfetto trace per row (``out.<policy>.json``; whole µs by default so that HTA reads
them without its rounding switch, ``--trace-unit ns`` for Perfetto's resolution), ``--table`` the
ranking table (``.csv`` or ``.json``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from workbench._terminal import clean
from workbench.cli.checks import add_follow_symlinks, check_distinct_files, trace_path
from workbench.errors import OptionError

TABLE_SUFFIXES = (".csv", ".json")
#: The device a CPU-only profile is compared on (``workbench/data/devices/cpu.json``).
CPU_DEVICE = "cpu"


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
    imp.add_argument("--step", type=_step, help="the ProfilerStep to keep, in the profile and "
                                                "its execution trace (default: the last "
                                                "complete one; 'all': every step merged)")
    add_follow_symlinks(imp)
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
    """The measured Trace of a profile (and ET) for ``step`` (a ``ProfilerStep`` number, ``"all"``
    or None: the last complete one); ``graph``: match the profile to it.  The importers' warning
    that the graph has nothing to schedule is kept in ``meta["nothing_to_schedule"]`` (printed
    by the verbs as one line) and not repeated on stderr as a Python warning."""
    import warnings

    from workbench._atomic import check_input
    from workbench.io import load_execution_trace, load_pytorch_trace
    from workbench.io.traces.trace_events import NOTHING_TO_SCHEDULE

    check_input(Path(profile), what="profile")
    with warnings.catch_warnings():  # kept in meta and printed by the verbs as one line
        warnings.filterwarnings("ignore", message=NOTHING_TO_SCHEDULE)
        if et is not None:
            check_input(Path(et), what="execution trace")
            if graph is not None:
                raise OptionError("--et gives the run's own graph: leave the graph file out")
            trace = load_execution_trace(et, profile, step=step)
        else:
            trace = load_pytorch_trace(profile, graph=graph, step=step)
    return trace


def load_measured(args: argparse.Namespace, graph: Any) -> tuple[Any, Any, list[str]]:
    """``compare --measured``: the recorded run (None without ``--measured``), the graph to
    compare (the run's own when ``graph`` is None) and the notes to print; sets
    ``args.device`` to the device to compare on (:func:`measured_device`)."""
    if args.measured is None:
        return None, graph, []
    measured = load_profile(args.measured, args.et, args.step, graph)
    graph = measured.graph if graph is None else graph
    args.device, notes = measured_device(measured, graph, args.device)
    return measured, graph, notes


def measured_device(measured: Any, graph: Any, device: str) -> tuple[str, list[str]]:
    """The device ``compare --measured`` simulates the what-ifs on, and its notes (one line
    each): a CPU-only run (host ops) compared with a built-in GPU device (``--device`` defaults
    to ``h100``) is compared on the device ``cpu`` instead, with a note saying so, since a CPU
    time beside a GPU's name is no comparison; a device file or profile (a path) is kept as
    given (a profile calibrated on that CPU describes it best).  A GPU run keeps ``device``
    (compare checks that it names the run's GPU).  Adds the note that ``graph`` has nothing to
    schedule, when it has not."""
    from workbench.io.traces.trace_events import nothing_to_schedule
    from workbench.orchestration.compare_measured import device_for_measured

    device, note = device_for_measured(measured, device)
    notes = [note.replace("device=PATH", "--device PATH")] if note else []
    line = nothing_to_schedule(graph)
    if line:
        notes.append(line)
    return device, notes


def run_import(args: argparse.Namespace) -> int:
    from workbench._atomic import check_output
    from workbench.io import save

    output = check_output(args.output, what="-o")
    if output.suffix.lower() not in (".json", ".dot"):
        raise OptionError(f"-o {output}: the graph is saved as .json or .dot")
    check_distinct_files([("-o", output)], [("profile", args.profile)]
                         + ([("execution trace --et", args.et)] if args.et else []))
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
    if "step_text" in meta:
        print(clean(meta["step_text"]))
    if "phases" in meta:
        print(clean("phases: " + ", ".join(f"{k} {v}" for k, v in meta["phases"].items())
                    + f"; {meta['left_out']} calls left out"))
    if meta.get("nothing_to_schedule"):
        print(clean("warning: " + meta["nothing_to_schedule"]))
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
        first = getattr(args, "trace_rank", 0)
        in_rows = [p for p in result.table["policy"] if p in result.traces]  # fastest first
        written = [save_chrome_trace(result.traces[policy], trace_path(base, policy),
                                     time_unit=args.trace_unit, rank=first + i)
                   for i, policy in enumerate(in_rows)]
        lines.append(f"traces: {len(written)} files (HTA ranks {first}-{first + len(written) - 1}"
                     f" in row order), e.g. {written[0]}" if written
                     else "traces: none (no policy finished)")
    return lines


__all__ = ["CPU_DEVICE", "add_compare_options", "add_import_parser", "check_compare_outputs",
           "load_measured", "load_profile", "measured_device", "run_import",
           "write_compare_outputs"]
