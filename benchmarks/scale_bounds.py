"""Run every scale input (``benchmarks/scale_inputs.py``) through its reader or command under
its stated bound, and print the table of ``docs/scale-bounds.md``.

    .venv/bin/python benchmarks/scale_bounds.py [--scale 0.01] [--only KIND,...] [--repeat 2]
                                                [--folder DIR] [--markdown]

Each case runs in a child process of its own (``python benchmarks/scale_bounds.py --child``)
under an address-space cap (``RLIMIT_AS``: the case's memory bound) and a wall-clock limit
(:data:`WALL_FACTOR` times its CPU bound, at least :data:`MIN_WALL_S`: on a loaded machine
wall time runs far past CPU time, so the limit that catches a hang is on the wall clock and the
bound on CPU time).  The child's CPU seconds (user + system, its workers included) and peak RSS
come from ``os.wait4``.  An outcome is ``ok`` (the reader or command finished), ``refused`` (a
one-line error; its first line is shown), ``no-row`` (``compare`` wrote its report but every
row failed; the first row's note is shown), or a failure: ``TIMEOUT`` (killed at the wall-clock
limit), ``KILLED`` (a signal), ``TRACEBACK`` (an exception that is not one line) or ``OOM``.  A
case *meets* its bound when it is ok or refused in one line within its CPU bound and its
peak RSS within its memory bound.

``--scale`` shrinks every input (0.01: a quick check in under a minute); the bounds are the
full-size ones (a smaller input meets them more easily).  ``--repeat N`` runs each case N times
and reports the least CPU time (the machine is shared) with every wall time.  ``--budget 0``
runs ``compare`` without its per-stage budget (default 60 s of wall clock: on a loaded machine
a row can hit it well within the CPU bound, and the case is then ``no-row``).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_inputs  # noqa: E402  (the generators beside this script)

#: The wall-clock limit of a case is this many times its CPU bound (a loaded 2-core machine
#: gives a process a fraction of a core) ...
WALL_FACTOR = 4.0
#: ... and at least this many seconds.
MIN_WALL_S = 60.0
GIB = 1 << 30
MIB = 1 << 20


@dataclass(frozen=True)
class Case:
    """One input through one command, with its bound: CPU seconds and memory (the
    address-space cap the child runs under; peak RSS must stay below it too)."""

    kind: str
    command: str  # "load" (wb.load / load_pytorch_trace), "compare", "import"
    cpu_s: float
    memory_gib: float

    @property
    def wall_s(self) -> float:
        return max(MIN_WALL_S, WALL_FACTOR * self.cpu_s)


#: The stated bounds (docs/scale-bounds.md), full-size inputs on the shared 2-core machine.
CASES: tuple[Case, ...] = (
    Case("ops_full", "load", 60, 6),
    Case("ops_edges", "load", 45, 5),
    Case("chain", "load", 40, 5),
    Case("chain", "compare", 300, 12),
    Case("control", "load", 60, 6),
    Case("control", "compare", 120, 8),
    Case("attr_list", "load", 10, 3),
    Case("attr_list", "compare", 30, 4),
    Case("outputs", "load", 40, 5),
    Case("outputs", "compare", 300, 12),
    Case("wide", "load", 10, 3),
    Case("fan_out", "load", 15, 3),
    Case("fan_out", "compare", 120, 8),
    Case("fan_in", "load", 15, 3),
    Case("fan_in", "compare", 120, 8),
    Case("fan_out_dot", "load", 15, 3),
    Case("fan_in_dot", "load", 15, 3),
    Case("dot_line", "load", 20, 3),
    Case("kineto", "load", 40, 4),
    Case("kineto", "import", 60, 4),
    Case("kineto_extra", "load", 40, 4),
    Case("kineto_steps", "load", 40, 4),
    Case("kineto_waits", "load", 40, 4),
)


# ================================================================================ the child
def _child(command: str, path: str, out_dir: str, memory_bytes: int,
           compare_args: list[str]) -> int:
    """Run one case in this process under the cap; print ``OUTCOME <ok|refused> <text>`` last.
    A traceback ends the process with status 1 (the parent reports it).  ``compare_args``:
    more arguments of ``workbench compare`` (``--budget 0``)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    os.environ.setdefault("WORKBENCH_PROGRESS", "0")
    from workbench.errors import WorkbenchError

    try:
        if command == "load":
            if "kineto" in Path(path).name:
                from workbench.io import load_pytorch_trace

                trace = load_pytorch_trace(path)
                text = f"{len(trace.graph):,} ops, {len(trace.graph.edges):,} edges"
            else:
                import workbench as wb

                graph = wb.load(path)
                text = f"{len(graph):,} ops, {len(graph.outputs):,} outputs"
        else:
            import contextlib
            import io

            from workbench.cli import main

            argv = (["compare", path, "--policies", "serial,nnc", "--no-progress", "-o",
                     str(Path(out_dir) / "report.html"), *compare_args]
                    if command == "compare" else
                    ["import", path, "-o", str(Path(out_dir) / "graph.json")])
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                code = main(argv)
            lines = printed.getvalue().splitlines()
            print(printed.getvalue(), end="")
            if code == 1 and command == "compare":  # the report is written, no policy ran
                notes = [line for line in lines if line.startswith("note: ")]
                print(f"OUTCOME no-row {notes[0] if notes else 'no policy ran'}", flush=True)
                return code
            if code:
                return code  # the CLI printed its one line on stderr
            notes = [line.removeprefix("note: ") for line in lines if line.startswith("note: ")]
            text = "; ".join([lines[0] if lines else "exit 0", *notes])
    except WorkbenchError as exc:
        print(f"OUTCOME refused {exc}", flush=True)
        return 3
    except MemoryError:
        print("OUTCOME oom MemoryError", flush=True)
        return 4
    print(f"OUTCOME ok {text}", flush=True)
    return 0


# ================================================================================ the parent
@dataclass
class Result:
    case: Case
    size: int
    file_bytes: int
    outcome: str  # ok, refused, no-row, TIMEOUT, KILLED, TRACEBACK, OOM
    text: str
    cpu_s: float
    wall_s: list[float]
    rss_mib: float

    @property
    def met(self) -> bool:
        return (self.outcome in ("ok", "refused") and self.cpu_s <= self.case.cpu_s
                and self.rss_mib <= self.case.memory_gib * 1024)


def run_case(case: Case, path: Path, out_dir: Path, *, wall_s: float | None = None,
             compare_args: tuple[str, ...] = ()) -> tuple[str, str, float, float, float]:
    """Run ``case`` on ``path`` in a child: (outcome, first line, CPU s, wall s, peak RSS MiB)."""
    limit = case.wall_s if wall_s is None else wall_s
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", case.command, str(path),
           str(out_dir), str(int(case.memory_gib * GIB)), *compare_args]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, start_new_session=True)
        status, usage, timed_out = 0, None, False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > limit:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    cpu = usage.ru_utime + usage.ru_stime
    rss = usage.ru_maxrss / 1024  # KiB on Linux
    outcome, text = _outcome(proc.returncode, stdout, stderr, timed_out, limit)
    return outcome, text, cpu, wall, rss


def _outcome(code: int, stdout: str, stderr: str, timed_out: bool, limit: float
             ) -> tuple[str, str]:
    if timed_out:
        return "TIMEOUT", f"killed after {limit:.0f} s wall"
    marks = [line for line in stdout.splitlines() if line.startswith("OUTCOME ")]
    if marks:
        _, outcome, text = (marks[-1] + " ").split(" ", 2)
        return ("OOM" if outcome == "oom" else outcome), text.strip()
    lines = [line for line in stderr.splitlines() if line.strip()]
    if code < 0:
        return "KILLED", f"signal {-code}" + (f": {lines[-1][:100]}" if lines else "")
    errors = [line for line in lines if line.startswith("workbench: error:")]
    if code and errors and "Traceback" not in stderr:
        first = errors[0].removeprefix("workbench: error: ")
        return ("OOM" if "out of memory" in first else "refused"), first
    return "TRACEBACK", lines[-1][:160] if lines else f"exit {code}"


def _fmt_table(results: list[Result], markdown: bool) -> str:
    head = ["input", "size", "file", "command", "outcome", "CPU s", "wall s", "peak RSS",
            "bound", "met"]
    rows = []
    for r in results:
        walls = ", ".join(f"{w:.1f}" for w in r.wall_s)
        rows.append([scale_inputs.KINDS[r.case.kind][0], f"{r.size:,}",
                     f"{r.file_bytes / MIB:,.1f} MiB", r.case.command,
                     f"{r.outcome}: {r.text[:90]}", f"{r.cpu_s:.1f}", walls,
                     f"{r.rss_mib:,.0f} MiB",
                     f"{r.case.cpu_s:g} CPU s, {r.case.memory_gib:g} GiB",
                     "yes" if r.met else "NO"])
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True))
                     for row in [head, *rows])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _child(argv[1], argv[2], argv[3], int(argv[4]), argv[5:])
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every input's size")
    ap.add_argument("--only", default="", help="kinds to run (comma-separated; default all)")
    ap.add_argument("--commands", default="load,compare,import", help="commands to run")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case (least CPU kept)")
    ap.add_argument("--folder", type=Path, help="write the inputs here (default: a temp dir)")
    ap.add_argument("--wall", type=float, help="override every case's wall-clock limit (s)")
    ap.add_argument("--budget", help="compare's --budget (seconds per stage, 0: none; default: "
                                     "the CLI's 60 s, a wall-clock limit)")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) - {""}
    commands = set(args.commands.split(","))
    cases = [c for c in CASES if (not only or c.kind in only) and c.command in commands]
    with tempfile.TemporaryDirectory(prefix="scale_bounds.") as tmp:
        folder = args.folder or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        written: dict[str, tuple[Path, int]] = {}
        results = []
        for case in cases:
            if case.kind not in written:
                size = scale_inputs.size_of(case.kind, args.scale)
                path = folder / scale_inputs.KINDS[case.kind][0]
                # a file left in --folder is reused only if it was written at this size
                marker = path.with_name(path.name + ".size")
                if not (path.exists() and marker.exists()
                        and marker.read_text().strip() == str(size)):
                    scale_inputs.write(case.kind, folder, size)
                    marker.write_text(f"{size}\n")
                written[case.kind] = (path, size)
            path, size = written[case.kind]
            extra = ("--budget", args.budget) if args.budget is not None else ()
            runs = [run_case(case, path, Path(tmp), wall_s=args.wall, compare_args=extra)
                    for _ in range(max(1, args.repeat))]
            best = min(runs, key=lambda r: r[2])
            result = Result(case, size, path.stat().st_size, best[0], best[1], best[2],
                            [r[3] for r in runs], max(r[4] for r in runs))
            results.append(result)
            print(_fmt_table([result], markdown=False).splitlines()[1], flush=True)
    print()
    print(_fmt_table(results, args.markdown))
    return 0 if all(r.met for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
