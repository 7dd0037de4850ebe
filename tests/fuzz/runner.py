"""Run fuzz cases in a worker process under a time and a memory limit, and classify outcomes.

A case is a plain, picklable :class:`Case` (family, label, what to do, whether it must be
refused).  One worker process (forked, so ``workbench`` is imported once) runs cases one after
the other with ``RLIMIT_AS`` set (:data:`MEMORY_LIMIT_BYTES`); the parent waits at most
``time_limit_s`` per case, kills a worker that overruns (outcome ``hang``) or dies (``oom``), and
starts a new one.  Outcomes:

* ``clean``: a one-line :class:`~workbench.errors.WorkbenchError` (or CLI exit 1/2 with one line
  on stderr and no traceback);
* ``ok``: the input ran through;
* ``silent``: a mutation that must be refused was accepted;
* ``traceback``: any other exception, a multi-line error, a CLI traceback;
* ``hang``: over the time limit;  ``oom``: ``MemoryError`` or a worker killed (memory limit);
* ``roundtrip``: a graph saved and loaded again differs from the one saved (an op field, a
  tensor, or the simulated serial/nnc makespan) with no warning that the format drops it.

``Case.action`` names a function of :mod:`tests.fuzz.actions`, or ``module.function`` of another
module of this package (``actions_io.roundtrip``); ``Case.extra["time_limit_s"]`` lowers the
pool's time limit for one case (a FIFO that must be refused at once need not cost 30 s).

``BAD`` lists the outcomes the project must never show.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing as mp
import os
import resource
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

OUTCOMES = ("clean", "ok", "silent", "traceback", "hang", "oom", "roundtrip")
BAD = ("silent", "traceback", "hang", "oom", "roundtrip")
MEMORY_LIMIT_BYTES = 4 << 30


@dataclass(frozen=True)
class Case:
    """One generated input: ``action`` names a function of :mod:`tests.fuzz.actions`, ``data``
    its argument (file bytes, options); ``refuse``: it must end in a one-line error."""

    family: str
    label: str
    action: str
    data: Any = None
    refuse: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Result:
    case: Case
    outcome: str
    detail: str = ""
    seconds: float = 0.0


def classify(case: Case, fn: Any, workdir: str) -> tuple[str, str]:
    """Run ``fn(case, workdir)`` and classify what happened (module docstring)."""
    from workbench.errors import WorkbenchError

    try:
        verdict = fn(case, workdir)
    except WorkbenchError as exc:
        text = str(exc)
        if "\n" in text or len(text) > 2000:
            return "traceback", f"multi-line or huge error ({len(text)} chars): {text[:200]!r}"
        return "clean", text[:200]
    except MemoryError:
        return "oom", "MemoryError"
    except RecursionError:
        return "traceback", f"RecursionError\n{traceback.format_exc(limit=-3)[-600:]}"
    except Exception as exc:  # noqa: BLE001 - this is what the fuzzer is looking for
        tb = traceback.format_exc(limit=-4)
        return "traceback", f"{type(exc).__name__}: {exc!s:.200}\n{tb}"
    if isinstance(verdict, tuple):  # the CLI: (outcome, detail) decided by the action
        return verdict
    if case.refuse:
        return "silent", "a mutation that must be refused was accepted"
    return "ok", ""


def _never_replace_special(real: Any) -> Any:
    """``os.replace`` that refuses to rename over anything but a regular file or a new path: a
    regression in the atomic writer must show as a traceback here, not turn the machine's
    ``/dev/null`` into a file (the fuzzer runs ``-o /dev/null``, often as root)."""
    def guarded(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if os.path.lexists(dst) and (os.path.islink(dst) or not os.path.isfile(dst)):
            raise AssertionError(f"the writer tried to replace {dst!r}, not a regular file")
        real(src, dst, *args, **kwargs)

    return guarded


def action_of(name: str) -> Any:
    """The function a case's ``action`` names (module docstring)."""
    import importlib

    module, _, fn = name.rpartition(".")
    return getattr(importlib.import_module(f"tests.fuzz.{module or 'actions'}"), fn)


def _worker(conn: Any, memory_limit: int) -> None:
    os.replace = _never_replace_special(os.replace)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    except (ValueError, OSError):
        pass
    os.environ.setdefault("WORKBENCH_MAX_INPUT_BYTES", str(64 << 20))
    with tempfile.TemporaryDirectory(prefix="wb-fuzz-") as root:
        k = 0
        while True:
            try:
                case = conn.recv()
            except EOFError:
                return
            if case is None:
                return
            k += 1
            workdir = os.path.join(root, str(k))
            os.mkdir(workdir)
            sink = io.StringIO()
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                outcome, detail = classify(case, action_of(case.action), workdir)
            conn.send((outcome, detail))


class Pool:
    """A single restartable worker (module docstring)."""

    def __init__(self, time_limit_s: float, memory_limit: int = MEMORY_LIMIT_BYTES) -> None:
        self.time_limit_s = time_limit_s
        self.memory_limit = memory_limit
        self.ctx = mp.get_context("fork")
        self.proc: Any = None
        self.conn: Any = None

    def _start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child, self.memory_limit),
                                     daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent

    def _kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(5)
        self.proc = self.conn = None

    def run(self, case: Case) -> Result:
        if self.proc is None or not self.proc.is_alive():
            self._start()
        t = time.perf_counter()
        limit = min(self.time_limit_s, case.extra.get("time_limit_s", self.time_limit_s))
        self.conn.send(case)
        try:
            ready = self.conn.poll(limit)
        except (EOFError, OSError):
            ready = True
        if not ready:
            self._kill()
            return Result(case, "hang", f"over {limit:g} s",
                          time.perf_counter() - t)
        try:
            outcome, detail = self.conn.recv()
        except (EOFError, OSError):
            code = self.proc.exitcode if self.proc is not None else None
            self._kill()
            return Result(case, "oom", f"worker died (exit {code})", time.perf_counter() - t)
        return Result(case, outcome, detail, time.perf_counter() - t)

    def close(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.conn.send(None)
            self.proc.join(5)
        self._kill()


def run_cases(cases: Iterable[Case], time_limit_s: float = 20.0) -> Iterator[Result]:
    """Each case's :class:`Result`, in order."""
    pool = Pool(time_limit_s)
    try:
        for case in cases:
            yield pool.run(case)
    finally:
        pool.close()


def table(results: Iterable[Result]) -> str:
    """Outcome counts per family as a fixed-width table (a total row last)."""
    counts: dict[str, Counter[str]] = {}
    for r in results:
        counts.setdefault(r.case.family, Counter())[r.outcome] += 1
    total: Counter[str] = Counter()
    for c in counts.values():
        total.update(c)
    head = f"{'family':14s}" + "".join(f"{o:>10s}" for o in OUTCOMES) + f"{'inputs':>9s}"
    rows = [head]
    for fam, c in [*sorted(counts.items()), ("total", total)]:
        rows.append(f"{fam:14s}" + "".join(f"{c[o]:10d}" for o in OUTCOMES)
                    + f"{sum(c.values()):9d}")
    return "\n".join(rows)
