"""Run stages of work under wall-clock budgets that can really stop them: a worker process.

:func:`run_stages` runs a chain of stages (each gets the values of the stages before it) in one
worker process and waits for each stage's value at most its budget; a stage that overruns has its
worker killed (``SIGKILL``: no cooperation needed, C loops included) and is reported as
``"budget"``, the stages after it as ``"skipped"``.  The values already received are kept, so
"scheduled and simulated, but memory planning overran" is one outcome among others.

One worker, several jobs.  :class:`StageWorker` holds several such chains (*jobs*: compare's
exact optimum and one per policy) and runs them one after another, each when asked
(:meth:`StageWorker.run`), in one worker started at the first job.  The worker outlives a job
that ends, and one that raises (the exception is re-raised in the parent, the worker waits for
the next job); it is replaced by a fresh one after a job it had to be killed for or died in
(``"budget"``, ``"memory"``, ``"died"``).  A fork copies the parent's page tables and both sides
then take a page fault for each page they write, so the cost of one grows with the parent's
size: 17 ms from a 260 MiB process, 75 ms from a 1.1 GiB one (a notebook with torch loaded),
and a worker per job also recomputed every lazily built cache (cost tables, kernel models) the
parent did not hold.  What later jobs see of earlier ones: module-level caches and imports of
the worker (as in one process), not their values, which are dropped after each job.

How values travel.  The worker is started with ``fork`` on Linux (it inherits the graph and
everything else: nothing is pickled on the way in, and starting one costs ~15 ms) and ``spawn``
elsewhere (arguments are pickled; the functions must be importable, module-level ones).  Each
stage's value comes back pickled; objects the parent already holds (``shared=``: the graph) and the
values of earlier stages are sent as references (pickle *persistent ids*), so a Trace comes back
pointing at the parent's own Graph and Schedule instead of copies of them.  An exception raised in
a stage is re-raised in the parent with the worker's traceback as a note.

Memory.  With ``memory_bytes=`` the worker caps its own address space (``RLIMIT_AS``, Linux) at what
it had when it started plus ``memory_bytes``: an allocation past that fails inside the worker
(``MemoryError`` in Python, NumPy and the C extensions that report it), so the stage ends as
``"memory"`` with the budget in its message, its worker exits, and the calling process never holds
the memory.  Each job is capped afresh when it starts, at the worker's size then plus
``memory_bytes`` (what earlier jobs freed but the allocator kept counts as the worker's, so a job
may also reuse it).  The cap counts address space, not resident pages, so it is conservative: a
stage that reserves much more than it touches may be stopped before it would have used the
budget.  What else a capped worker reports as ``"memory"``: a native library that cannot be mapped
under the cap (``ImportError``/``OSError``), running out while sending its answer, and a stage that
overruns its time budget with its address space at the cap (a library retrying failed
allocations).  The libraries the stages load lazily (:data:`CAPPED_PRELOAD`) are imported before the
worker starts: loaded under the cap, SciPy's OpenBLAS stalls for minutes retrying its thread
buffers.  Budgets below :data:`~workbench._bounded.memory.MIN_MEMORY_BUDGET` are refused
(:func:`~workbench._bounded.memory.memory_budget`).

In-process fallback: with ``isolate=False``, inside a daemonic process (which may not have
children), or with neither a time nor a memory budget, the stages run in the calling process,
timed, and cannot be stopped.

Base layer: may import only the other base modules (:mod:`workbench.errors`) and its own
:mod:`workbench._bounded.memory` (the budgets: parsing, capping a process).
"""

from __future__ import annotations

import io
import multiprocessing
import os
import pickle
import sys
import time
import traceback
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench._bounded.memory import cap_memory, format_bytes
from workbench.errors import WorkbenchError

Stage = Callable[..., Any]


@dataclass(frozen=True)
class Outcome:
    """What became of one stage: ``status`` is ``"ok"`` (``value`` holds its result),
    ``"budget"`` (killed after ``budget_s``), ``"memory"`` (it needed more than the memory budget),
    ``"skipped"`` (an earlier stage did not finish) or ``"died"`` (the worker ended without an
    answer, e.g. killed for memory, or ran out of it:
    ``MemoryError``; see ``message``)."""

    status: str
    value: Any = None
    elapsed_s: float = 0.0
    budget_s: float | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def start_method() -> str:
    """``"fork"`` on Linux (cheap, nothing pickled on the way in), ``"spawn"`` elsewhere."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


def can_isolate() -> bool:
    """False inside a daemonic process (e.g. a multiprocessing pool worker), which may not start
    children of its own: stages then run in-process."""
    return not multiprocessing.current_process().daemon


def run_stages(stages: Sequence[Stage], budgets: Sequence[float | None], *, isolate: bool = True,
               shared: Sequence[Any] = (), memory_bytes: int | None = None) -> list[Outcome]:
    """Run ``stages[i](*values_of_earlier_stages)`` in order, each within ``budgets[i]`` seconds
    and, when ``memory_bytes`` is given, in at most that much more memory than the worker started
    with (see the module docstring; the in-process fallback cannot bound memory).

    Returns one :class:`Outcome` per stage.  Exceptions raised by a stage propagate (re-raised in
    the parent).  Overhead per call when isolated: one process start (17-75 ms with fork,
    growing with this process's size) plus pickling each value once; several chains in a row
    share one start through :class:`StageWorker`.  Complexity: that of the stages.
    """
    with StageWorker({0: (stages, budgets)}, isolate=isolate, shared=shared,
                     memory_bytes=memory_bytes) as worker:
        return worker.run(0)


class StageWorker:
    """Jobs, each a chain of stages with their budgets (``{key: (stages, budgets)}``), run when
    asked (:meth:`run`) in one worker process that they share (module docstring: "One worker,
    several jobs"); close it with :meth:`close` or use the object as a context manager.

    The jobs are fixed when the object is made, so a worker inherits all of them when it forks
    and only a job's index travels to it.  :attr:`starts` counts the workers started.
    """

    def __init__(self, jobs: Mapping[Any, tuple[Sequence[Stage], Sequence[float | None]]],
                 *, isolate: bool = True, shared: Sequence[Any] = (),
                 memory_bytes: int | None = None) -> None:
        self._index = {key: i for i, key in enumerate(jobs)}
        self._jobs = tuple((tuple(stages), tuple(budgets)) for stages, budgets in jobs.values())
        if any(len(stages) != len(budgets) for stages, budgets in self._jobs):
            raise ValueError("a job needs one budget per stage")
        self._isolate = isolate and can_isolate()
        self._shared = tuple(shared)
        self._memory = memory_bytes
        self._proc: Any = None
        self._orders: Any = None
        self._answers: Any = None
        self.starts = 0

    def __enter__(self) -> StageWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, key: Hashable) -> list[Outcome]:
        """Run job ``key``: one :class:`Outcome` per stage, as :func:`run_stages`.  Without a
        budget of any kind, with ``isolate=False`` or inside a daemonic process it runs here."""
        stages, budgets = self._jobs[self._index[key]]
        unbounded = all(b is None for b in budgets) and self._memory is None
        if not self._isolate or unbounded:
            return _run_here(stages, budgets)
        if self._proc is None:
            self._start()
        try:
            self._orders.send(self._index[key])
            out, raised = _collect(self._answers, self._proc, budgets, self._shared,
                                   self._memory)
        except BaseException:
            self.close()
            raise
        if raised is not None:
            raise raised   # the worker is intact and waits for the next job
        if out and not out[-1].ok:   # killed, or it died: a new one next time
            self.close()
        for budget in budgets[len(out):]:
            out.append(Outcome("skipped", None, 0.0, budget, "an earlier stage did not finish"))
        return out

    def close(self) -> None:
        """Stop the worker, if one is running (the next :meth:`run` starts another)."""
        if self._proc is None:
            return
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join()
        self._orders.close()
        self._answers.close()
        self._proc = None

    def _start(self) -> None:
        ctx: Any = multiprocessing.get_context(start_method())
        if self._memory is not None:
            _preload()
        orders_in, orders = ctx.Pipe(duplex=False)
        answers, answers_out = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_worker, daemon=True, args=(
            orders_in, answers_out, self._jobs, self._shared, self._memory))
        try:
            proc.start()
        except BaseException:
            orders.close()
            answers.close()
            raise
        finally:
            orders_in.close()
            answers_out.close()
        self._proc, self._orders, self._answers = proc, orders, answers   # only once it runs
        self.starts += 1


def _run_here(stages: Sequence[Stage], budgets: Sequence[float | None]) -> list[Outcome]:
    values: list[Any] = []
    out = []
    for stage, budget in zip(stages, budgets, strict=True):
        t0 = time.perf_counter()
        value = stage(*values)
        values.append(value)
        out.append(Outcome("ok", value, time.perf_counter() - t0, budget))
    return out


# ---------------------------------------------------------------------------------- the worker
class _Pickler(pickle.Pickler):
    """Pickles references (indices) for the objects the other side already holds."""

    def __init__(self, file: io.BytesIO, known: dict[int, int]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._known = known

    def persistent_id(self, obj: Any) -> int | None:
        return self._known.get(id(obj))


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, objects: list[Any]) -> None:
        super().__init__(file)
        self._objects = objects

    def persistent_load(self, pid: Any) -> Any:
        return self._objects[pid]


def _remember(objects: list[Any], value: Any) -> None:
    """Make ``value`` (and the items of a tuple value) referable by later stages; both sides
    call this in the same order, so the indices agree."""
    objects.append(value)
    if isinstance(value, tuple):
        objects.extend(value)


def _dumps(value: Any, objects: list[Any]) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, {id(o): i for i, o in enumerate(objects)}).dump(value)
    return buf.getvalue()


#: The exit status of a capped worker that ran out of memory even to say so.
_MEMORY_EXIT = 75
#: Python's recursion limit in a worker: pickling a value nested as deep as the graphs allow
#: (:data:`workbench.values.graph_items.MAX_CONTROL_DEPTH` levels of control flow, ~11 frames
#: each) must not fail because the worker was forked from a deep stack.
_WORKER_RECURSION_LIMIT = 4000


def _worker(orders: Any, conn: Any, jobs: Sequence[tuple[Sequence[Stage], Any]],
            shared: tuple[Any, ...], memory_bytes: int | None = None) -> None:
    """The child: for each job index read from ``orders``, cap its memory, run the job's stages
    and send ``("ok", value)`` after each, or ``("memory" | "died" | "error", ...)``; after
    ``"memory"`` or ``"died"`` it exits, and out of memory even to say so it exits with
    :data:`_MEMORY_EXIT`."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), _WORKER_RECURSION_LIMIT))
    try:
        while True:
            try:
                index = orders.recv()
            except EOFError:  # the parent is gone or closed the worker
                break
            if not _work(conn, jobs[index][0], shared, memory_bytes):
                break
    except MemoryError:
        os._exit(_MEMORY_EXIT)  # no traceback on stderr: the parent reports the budget
    finally:
        conn.close()


def _work(conn: Any, stages: Sequence[Stage], shared: tuple[Any, ...],
          memory_bytes: int | None) -> bool:
    """One job in the worker; False when the worker should not take another (it ran out of
    memory or died)."""
    objects = list(shared)
    values: list[Any] = []
    capped = memory_bytes is not None and cap_memory(memory_bytes)
    over = f"memory budget {format_bytes(memory_bytes or 0)} exceeded"
    try:
        for stage in stages:
            value = stage(*values)
            conn.send_bytes(_dumps(("ok", value), objects))
            values.append(value)
            _remember(objects, value)
    except MemoryError as exc:  # like being killed for memory: the stage cannot finish here
        values.clear()
        if capped and not isinstance(exc, WorkbenchError):  # a refusal has its own message
            conn.send_bytes(_dumps(("memory", over), []))
        else:
            why = str(exc) or "out of memory (MemoryError in the worker)"  # a refusal says why
            conn.send_bytes(_dumps(("died", why), []))
        return False
    except (ImportError, OSError) as exc:
        if not (capped and _unmappable(exc)):
            _send_error(conn, exc, objects)
            return True
        conn.send_bytes(_dumps(("memory", f"{over} (could not load a library: "
                                          f"{str(exc)[:80]})"), []))
        return False
    except BaseException as exc:  # sent to the parent, which re-raises it
        _send_error(conn, exc, objects)
    return True


def _unmappable(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) says that a library or a mapping
    did not fit in the address space."""
    import errno

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        text = str(seen).lower()
        if (getattr(seen, "errno", None) == errno.ENOMEM or "failed to map" in text
                or "cannot allocate memory" in text):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _send_error(conn: Any, exc: BaseException, objects: list[Any]) -> None:
    """Send an exception (with the worker's traceback) for the parent to re-raise."""
    trace = traceback.format_exc()
    try:
        payload = _dumps(("error", exc, trace), objects)
    except Exception:  # an exception that does not pickle: its text
        payload = _dumps(("error", WorkbenchError(f"{type(exc).__name__}: {exc}"), trace), [])
    conn.send_bytes(payload)


def _collect(recv: Any, proc: Any, budgets: Sequence[float | None], shared: tuple[Any, ...],
             memory_bytes: int | None) -> tuple[list[Outcome], BaseException | None]:
    """The parent's side of one job: each stage's answer waited for at most its budget.
    Returns the outcomes up to the first stage that did not end ``"ok"`` (the worker must then
    be killed), and the exception a stage raised (with the worker's traceback as a note), if
    one did."""
    objects = list(shared)
    out: list[Outcome] = []
    for budget in budgets:
        t0 = time.perf_counter()
        if not recv.poll(budget):
            if memory_bytes is not None and _at_cap(proc.pid, memory_bytes):
                out.append(Outcome("memory", None, time.perf_counter() - t0, budget,
                                   f"memory budget {format_bytes(memory_bytes)} exceeded "
                                   f"(stalled at its cap past the time budget of "
                                   f"{budget:g} s)"))
            else:
                out.append(Outcome("budget", None, time.perf_counter() - t0, budget,
                                   f"did not finish within its budget of {budget:g} s"))
            break
        try:
            data = recv.recv_bytes()
        except EOFError:
            proc.join(5)
            if memory_bytes is not None and proc.exitcode == _MEMORY_EXIT:
                out.append(Outcome("memory", None, time.perf_counter() - t0, budget,
                                   f"memory budget {format_bytes(memory_bytes)} exceeded"))
            else:
                out.append(Outcome("died", None, time.perf_counter() - t0, budget,
                                   _death(proc.exitcode)))
            break
        kind, *rest = _Unpickler(io.BytesIO(data), objects).load()
        if kind in ("died", "memory"):
            out.append(Outcome(kind, None, time.perf_counter() - t0, budget, rest[0]))
            break
        if kind == "error":
            exc, trace = rest
            if not isinstance(exc, BaseException):
                return out, WorkbenchError(str(exc))
            if hasattr(exc, "add_note"):  # Python 3.11+
                exc.add_note(f"(raised in the worker process)\n{trace}")
            return out, exc
        value = rest[0]
        _remember(objects, value)
        out.append(Outcome("ok", value, time.perf_counter() - t0, budget))
    return out, None


#: Modules the stages import on first use, imported before a capped worker starts (module
#: docstring): SciPy's sparse graphs (and its OpenBLAS) for the memory bounds, networkx.
CAPPED_PRELOAD = ("networkx", "scipy.sparse.csgraph")


def _preload() -> None:
    import importlib

    for name in CAPPED_PRELOAD:
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except ImportError:  # not installed: the stage that needs it will say so
                pass


def _at_cap(pid: int | None, budget: int) -> bool:
    """Whether process ``pid``'s address space is within a quarter of ``budget`` (at most 64 MiB)
    of its ``RLIMIT_AS`` (Linux; False where that cannot be read): allocations past that gap fail
    (a stalled OpenBLAS stopped 21 MiB short of a 100 MiB budget's cap)."""
    try:
        import resource

        soft, _ = resource.prlimit(pid or 0, resource.RLIMIT_AS)
        with open(f"/proc/{pid}/statm", "rb") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (ImportError, AttributeError, OSError, ValueError, IndexError):
        return False
    return soft != resource.RLIM_INFINITY and size >= soft - min(64 << 20, budget // 4)


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        hint = " (out of memory?)" if exitcode == -9 else ""
        return f"worker killed by signal {-exitcode}{hint}"
    return f"worker exited with code {exitcode} without an answer"

