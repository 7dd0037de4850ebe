"""The ``workbench`` command: compare policies on a graph and write an HTML report.

    workbench compare --model inception_v3 --device h100 -o report.html
    workbench compare GRAPH.json --policies serial,nnc,asap --budget 30 -o report.html
    workbench compare --model inception_v3 --executor torch,simulator --mode graph -o r.html
    workbench calibrate --model inception_v3 --model squeezenet --batch 1 -o profile.json
    workbench import PROFILE.json [--et ET.json] -o graph.json
    workbench sweep --model inception_v3 --model squeezenet --batch 1 --batch 16 -o sweep.csv
    workbench compare --measured PROFILE.json --export-trace out.json --table out.csv
    workbench policies | models | devices
    workbench --version

``compare`` always finishes: every stage of every policy (schedule, execute, plan memory) gets
``--budget`` seconds (default 60), after which its worker is stopped and the policy's row says
``budget hit (60 s): ...``; ``--memory-budget`` (e.g. ``2G``; default half the machine's memory)
caps the memory each policy's worker may add, and a stage that needs more leaves a row ``stopped:
memory budget 2 GiB exceeded in <stage>``.  One line per policy goes to stderr as it starts and
ends.  The ranking printed on stdout is sorted by makespan with the essential columns (``--columns``
picks others, ``--columns all`` shows every one).  ``--executor torch`` (or ``cupy``) measures every
schedule on the device (``--repeats`` timed runs after ``--warmup`` untimed ones); ``--executor
torch,simulator`` also sets the simulator's prediction beside each measured row when the simulator
models the device measured (a CPU run or another GPU leaves it out, with a note saying why).
Measured rows show the median of the timed runs with its quartiles, and a policy is called faster
than another only when its quartile range lies wholly below the other's: the ``best:`` line names
every policy that ties with the fastest within measurement noise.  ``--device`` takes a device
name or the path of a device file or of a profile written by ``workbench calibrate`` (each op of
the chosen graphs timed alone, plus small probes).

Every user error is one line on stderr (``workbench: error: ...``) and exit code 2, and the
arguments and the output path (``-o``: not a directory, its folder must exist, writable) are
checked before any work starts.  The report is written atomically (a failure leaves the old one).
Output piped into a command that stops reading (``| head``) ends quietly (exit 141); SIGTERM and
Ctrl-C stop the run, its worker processes and any Graphviz child (exit 143 / 130).  Names from
graph files are printed with control characters and terminal escapes neutralised.

Apps layer: may import everything.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from workbench._terminal import ESSENTIAL_COLUMNS, clean, ranking_text
from workbench.cli.calibrate import calibrate_parser, run_calibrate
from workbench.cli.checks import (
    EXIT_STDOUT_CLOSED,
    add_follow_symlinks,
    check_distinct_files,
    compare_files,
    encode_what_the_terminal_can,
    occupy_closed_streams,
    policy_names,
    silence_stdout,
    stdout_write_error,
)
from workbench.cli.checks import key_values as _params
from workbench.cli.listings import listing
from workbench.cli.onnx_options import add_onnx_options, onnx_options
from workbench.cli.profiles import (
    add_compare_options,
    add_import_parser,
    check_compare_outputs,
    load_measured,
    run_import,
    write_compare_outputs,
)
from workbench.cli.sweep import run_sweep, sweep_parser
from workbench.errors import OptionError, WorkbenchError
from workbench.orchestration.table_columns import (
    DEFAULT_BUDGET_S,
    MEASURED_COLUMNS,
    QUARTILE_COLUMNS,
    TABLE_COLUMNS,
)
from workbench.values.modes import DEFAULT_MODE, MODES

EXIT_USAGE = 2
EXIT_NOTHING_RAN = 1  # the report is written, but no policy was executed
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `yes | head`
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM


class _Terminated(BaseException):
    """Raised by the SIGTERM handler, so that ``finally`` blocks run: worker processes and the
    Graphviz child are killed, temporary files removed."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``workbench: error: ...``, exit 2), like every other
    user error of the command."""

    def error(self, message: str) -> NoReturn:
        print(f"workbench: error: {clean(message)} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _budget(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value or None


def _memory(text: str) -> int | None:
    from workbench._bounded.memory import memory_budget

    try:
        return memory_budget(text, what="--memory-budget")
    except OptionError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _integer_from(low: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``low`` (0 or 1) and below 2**63."""
    what = "a positive integer" if low == 1 else f"an integer >= {low}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not low <= value < 2**63:
            raise argparse.ArgumentTypeError(f"expected {what} below 2**63, got "
                                             f"{text[:80]!r}")
        return value

    return parse


_positive_int = _integer_from(1)
_non_negative_int = _integer_from(0)  # --warmup


def _columns(text: str) -> tuple[str, ...]:
    """``--columns``: ``all`` or a comma-separated list of table columns (checked here, before
    any work)."""
    from workbench._checks import did_you_mean

    names = [c.strip() for c in text.split(",")]
    if names == ["all"]:
        return TABLE_COLUMNS
    if any(names) and not all(names):
        raise argparse.ArgumentTypeError(f"empty column name in {text[:80]!r}")
    names = [n for n in names if n]
    known = (*TABLE_COLUMNS, *MEASURED_COLUMNS)
    for name in names:
        if name not in known:
            raise argparse.ArgumentTypeError(
                f"unknown column {name!r}{did_you_mean(name, known)} "
                f"(known: all, {', '.join(known)})")
    if not names:
        raise argparse.ArgumentTypeError("expected column names or 'all'")
    return tuple(dict.fromkeys(names))


def _formats() -> str:
    from workbench.io import LOADERS

    return ", ".join(sorted(LOADERS))


#: Commands whose arguments need the heavy modules (pandas, the loaders): their sub-parsers are
#: filled in only when one of them is run, so ``--help`` and the listings start fast.
HEAVY_COMMANDS = ("compare",)
COMPARE_HELP = "compare scheduling policies on a graph, write a report"


def _command_of(argv: Sequence[str]) -> str | None:
    """The command named on the command line (its first word not starting with ``-``)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _build_parser(command: str | None = "compare", *,
                  help_text: bool = True) -> argparse.ArgumentParser:
    """The parser; the compare sub-parser gets its arguments only when ``command`` is compare
    (or unknown: then argparse's own error names the choices)."""
    from workbench import __version__

    parser = _Parser(prog="workbench", description=_plain(__doc__.splitlines()[0]))
    parser.add_argument("--version", action="version", version=f"workbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    light = command != "compare"   # an unknown command is refused before any heavy import
    cmp = sub.add_parser("compare", help=COMPARE_HELP)
    if not light:
        _compare_arguments(cmp, help_text=help_text)
    calibrate_parser(sub, _positive_int)
    add_import_parser(sub)
    sweep_parser(sub, _positive_int)
    sub.add_parser("policies", help="list scheduling policies")
    sub.add_parser("models", help="list built-in graphs")
    sub.add_parser("devices", help="list device models")
    return parser


def _compare_arguments(cmp: argparse.ArgumentParser, *, help_text: bool = True) -> None:
    """The compare command's arguments (imports the loaders and the comparison's columns)."""
    formats = _formats() if help_text else "see --help"
    cmp.add_argument("graph", nargs="?",
                     help=f"a graph file ({formats}; the suffix picks the reader); "
                          f"or use --model")
    cmp.add_argument("--model", help="a built-in graph (see `workbench models`)")
    cmp.add_argument("--batch", type=_positive_int, help="batch size for built-in networks")
    cmp.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                     help="a builder parameter of the built-in model (repeatable)")
    cmp.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                     help="a symbolic dimension of an ONNX graph file (repeatable)")
    add_onnx_options(cmp)
    cmp.add_argument("--policies", help="comma-separated policies (default: all)")
    cmp.add_argument("--device", default="h100",
                     help="device model (see `workbench devices`), or the path of a device file "
                          "or of a profile written by `workbench calibrate`")
    cmp.add_argument("--executor", default="simulator", metavar="NAMES",
                     help="simulator (default), torch (PyTorch's kernels: CUDA, else the CPU), "
                          "cupy (the project's hand-written CUDA kernels, about 6x slower than "
                          "cuDNN), or a measured one with the simulator beside it: "
                          "torch,simulator")
    cmp.add_argument("--ios-oracle", choices=("simulator", "torch"),
                     help="what times IOS's candidate stages: the simulator (default) or the "
                          "device with PyTorch's kernels (torch)")
    cmp.add_argument("--repeats", type=_positive_int,
                     help="timed runs per schedule on a measured executor")
    cmp.add_argument("--warmup", type=_non_negative_int,
                     help="untimed runs per schedule before the timed ones on a measured "
                          "executor")
    cmp.add_argument("--rounds", type=_positive_int, default=None,
                     help="measured executors: split each schedule's timed runs into this many "
                          "rounds, the policies interleaved (default: 3; 1: one block each)")
    cmp.add_argument("--verify", action="store_true",
                     help="measured executors: require outputs bitwise equal to serial")
    cmp.add_argument("--mode", choices=MODES,
                     help=f"{DEFAULT_MODE} (default; eager on a CPU device): the whole schedule "
                          f"launched as one CUDA graph, as deployed models run; eager: the host "
                          f"launches each kernel in turn")
    cmp.add_argument("--max-streams", type=_positive_int, help="cap on streams for every policy")
    cmp.add_argument("--keep-views", action="store_true",
                     help="keep the no-task ops (reshape, flatten, squeeze, eval dropout), which a "
                          "simulated comparison drops by default (MindSpore's no-task rule)")
    cmp.add_argument("--precision", default="auto",
                     choices=("auto", "fp32", "tf32", "fp16", "bf16"),
                     help="simulated precision (auto: FP32 tensors, TF32 convolutions where the "
                          "device has tensor cores, as cuDNN 8 does by default)")
    cmp.add_argument("-o", "--output", default="report.html",
                     help="HTML report path; its folder must exist (default: %(default)s)")
    add_follow_symlinks(cmp)
    cmp.add_argument("--plotlyjs", default="inline", choices=("inline", "directory", "cdn"),
                     help="where the report gets plotly.js: inline (one offline file, ~5 MB), "
                          "directory (a shared plotly.min.js beside it) or cdn (cdn.plot.ly, "
                          "needs the network to view; ~185 kB for squeezenet) "
                          "(default: %(default)s)")
    cmp.add_argument("--columns", type=_columns, default=ESSENTIAL_COLUMNS, metavar="COLS",
                     help=f"columns of the printed ranking, comma-separated, or 'all' (default: "
                          f"{','.join(ESSENTIAL_COLUMNS)}; known: "
                          f"{', '.join((*TABLE_COLUMNS, *MEASURED_COLUMNS))})")
    cmp.add_argument("--budget", type=_budget, default=DEFAULT_BUDGET_S, metavar="SECONDS",
                     help="wall-clock seconds each stage of each policy may take (schedule, "
                          "execute, plan memory); a stage that overruns is stopped and its row "
                          "says 'budget hit'; 0 means no limit (default: %(default)g)")
    cmp.add_argument("--memory-budget", type=_memory, default="auto", metavar="SIZE",
                     help="memory each policy's stages may add, e.g. 2G or 500M; a stage that "
                          "needs more is stopped and its row says 'memory budget ... exceeded'; "
                          "'none' means no limit (default: half the machine's memory)")
    cmp.add_argument("--no-progress", action="store_true",
                     help="no progress bar and no per-policy lines on stderr")
    add_compare_options(cmp)


def _load_graph(args: argparse.Namespace) -> Any:
    from workbench import models
    from workbench.io import load

    if bool(args.graph) == bool(args.model):
        if args.measured is not None and not args.model:
            return None  # the measured run's own graph
        raise OptionError("give either a graph file or --model NAME (not both, not neither)")
    if args.graph:
        if args.param or args.batch is not None:
            raise OptionError("--batch/--param apply to --model only")
        return load(args.graph, dims=_params(args.dim, "--dim") or None, **onnx_options(args))
    if args.dim:
        raise OptionError("--dim applies to graph files only")
    onnx_options(args)  # --input-shape/--simplify: graph files only
    params = _params(args.param)
    if args.batch is not None:
        params["batch"] = args.batch
    return models.build(args.model, **params)


def _check_arguments(args: argparse.Namespace) -> tuple[Path, list[str] | None]:
    """Everything that can be checked before any work: the output path, the policies, the
    device, the model's name and parameters' syntax, the graph file's existence and type."""
    from workbench._atomic import check_input, check_output
    from workbench.io import LOADERS
    from workbench.models import MODELS
    from workbench.schedulers import POLICIES
    from workbench.simulator.cost_model.costs import get_device

    output = check_output(args.output, what="-o")
    names = policy_names(args.policies)
    for name in names or ():
        POLICIES.get(name)
    get_device(args.device)
    if args.plotlyjs == "directory":
        from workbench.viz.embed import check_plotlyjs_folder

        check_plotlyjs_folder(output.parent)
    outputs, inputs = compare_files(args, output, names or POLICIES.names())
    check_distinct_files(outputs, inputs)
    for option, path in outputs[1:]:   # e.g. an --export-trace row's name too long
        check_output(path, what=option)
    from workbench.orchestration.compare_measured import executor_plan

    executor_plan(args.executor)
    check_compare_outputs(args)
    if not args.graph and not args.model and args.measured is not None:
        return output, names
    if bool(args.graph) == bool(args.model):
        raise OptionError("give either a graph file or --model NAME (not both, not neither)")
    if args.model:
        MODELS.get(args.model)
        _params(args.param)
    else:
        path = Path(args.graph)
        if path.suffix.lower() in LOADERS:
            check_input(path, what="graph file")
    return output, names


def _compare(args: argparse.Namespace) -> int:
    from workbench.orchestration.compare import compare
    from workbench.schedulers import POLICIES

    output, names = _check_arguments(args)
    graph = _load_graph(args)
    measured, graph, profile_notes = load_measured(args, graph)
    options = None
    if args.max_streams is not None:
        options = {p: {"max_streams": args.max_streams} for p in (names or POLICIES.names())}
        options.setdefault("serial", {"max_streams": args.max_streams})
    if args.ios_oracle is not None and "ios" in (names or POLICIES.names()):
        options = options or {}
        options.setdefault("ios", {})["oracle"] = args.ios_oracle
    measured_options: dict[str, Any] = {}
    if args.repeats is not None:
        measured_options["repeats"] = args.repeats
    if args.warmup is not None:
        measured_options["warmup"] = args.warmup
    if args.verify:
        measured_options["verify"] = True
    result = compare(graph, names, device=args.device, mode=args.mode, options=options,
                     precision=args.precision, executor=args.executor,
                     executor_options=measured_options or None,
                     show_progress=not args.no_progress, budget_s=args.budget,
                     memory_budget_bytes=args.memory_budget,
                     measured=measured, keep_views=args.keep_views,
                     **({"rounds": args.rounds} if args.rounds is not None else {}))
    path = result.to_html(output, plotlyjs=args.plotlyjs)
    table = result.table
    mode = f", {result.mode} mode" if result.measured else f" ({result.mode} mode)"
    dropped = int(result.settings.get("no_task_dropped") or 0)
    views = f" (of {len(graph)}: {dropped} no-task ops dropped)" if dropped else ""
    print(clean(f"{graph.name}: {len(result.graph)} ops{views} on {result.device_text}{mode}"))
    columns = args.columns
    if result.measured:
        on = result.settings.get("measured_on", {})
        print(clean("measured on " + ", ".join(f"{k} {v}" for k, v in on.items())))
        if columns == ESSENTIAL_COLUMNS:
            extra = ("simulated_us", "sim_error") if result.settings["simulated_beside"] else ()
            columns = (*ESSENTIAL_COLUMNS[:3], *extra, *QUARTILE_COLUMNS, *ESSENTIAL_COLUMNS[3:])
    print(ranking_text(table, columns))
    best = result.best
    print(clean(f"best: {result.best_text}; report: {path}"))
    for line in result.why:
        print(clean("why: " + line))
    for note in (*result.settings.get("notes", ()),
                 result.near_tie_text if best is not None else "",
                 result.settings.get("unmodelled", ""), *profile_notes):
        if note:
            print(clean("note: " + note))
    for line in write_compare_outputs(result, args):
        print(clean(line))
    unfinished = table.loc[table["status"] != "measured", ["policy", "status"]]
    unfinished = unfinished[unfinished["status"] != "ok"]   # work-budget rows say so as a note
    by_status: dict[str, list[str]] = {}  # one line for the policies a reason stopped alike
    for row in unfinished.itertuples(index=False):
        by_status.setdefault(str(row.status), []).append(str(row.policy))
    for status, names in by_status.items():
        print(clean(f"note: {', '.join(names)}: {status}"))
    return 0 if best is not None else EXIT_NOTHING_RAN


def _plain(text: str) -> str:
    """Help text without reST literal markup (````workbench```` → ``workbench``)."""
    return text.replace("``", "")


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While the command runs, SIGTERM raises :class:`_Terminated` (in the main thread only;
    the previous handler is restored afterwards, for callers that run :func:`main` in-process)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def main(argv: Sequence[str] | None = None) -> int:
    from workbench._atomic import follow_symlinks

    stdout_closed = occupy_closed_streams()   # `>&-`: /dev/null on it, exit 1 at the end
    encode_what_the_terminal_can()
    try:
        with _sigterm_raises():
            words = sys.argv[1:] if argv is None else list(argv)
            # inside: it imports the loaders (Ctrl-C lands here too)
            # the graph formats' list (it loads the readers) only where help is shown
            parser = _build_parser(_command_of(words),
                                   help_text=any(w in ("-h", "--help") for w in words))
            args = parser.parse_args(words)
            commands = {"compare": _compare, "calibrate": run_calibrate, "import": run_import,
                        "sweep": run_sweep}
            with follow_symlinks(getattr(args, "follow_symlinks", False)):
                code = commands[args.command](args) if args.command in commands \
                    else listing(args.command)
            sys.stdout.flush()
            if stdout_closed:
                print("workbench: standard output is closed; nothing was printed there",
                      file=sys.stderr)
                return max(code, EXIT_STDOUT_CLOSED)
            return code
    except WorkbenchError as exc:
        print(f"workbench: error: {clean(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:   # `> /dev/full`: one line, not a traceback
        message = stdout_write_error(exc)
        if message is None:
            raise
        silence_stdout()
        print(f"workbench: error: {message}", file=sys.stderr)
        return EXIT_STDOUT_CLOSED
    except MemoryError:   # past the address-space cap (ulimit -v) where no reader bounds it
        try:
            from workbench._bounded.memory import memory_cap

            cap = f" ({memory_cap()})"
        except MemoryError:
            cap = ""
        print(f"workbench: error: out of memory{cap}: the input is too large for this "
              f"machine or its limit", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except _Terminated:
        print("workbench: terminated", file=sys.stderr)
        return EXIT_TERMINATED


if __name__ == "__main__":
    sys.exit(main())
