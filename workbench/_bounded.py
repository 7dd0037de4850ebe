"""Run stages of work under wall-clock budgets that can really stop them: a worker process.

:func:`run_stages` runs a chain of stages (each gets the values of the stages before it) in one
worker process and waits for each stage's value at most its budget; a stage that overruns has its
worker killed (``SIGKILL``: no cooperation needed, C loops included) and is reported as
``"budget"``, the stages after it as ``"skipped"``.  The values already received are kept, so
"scheduled and simulated, but memory planning overran" is one outcome among others.

How values travel.  The worker is started with ``fork`` on Linux (it inherits the graph and
everything else: nothing is pickled on the way in, and starting one costs ~15 ms) and ``spawn``
elsewhere (arguments are pickled; the functions must be importable, module-level ones).  Each
stage's value comes back pickled; objects the parent already holds (``shared=``: the graph) and the
values of earlier stages are sent as references (pickle *persistent ids*), so a Trace comes back
pointing at the parent's own Graph and Schedule instead of copies of them.  An exception raised in
a stage is re-raised in the parent with the worker's traceback as a note.

Memory.  With ``memory_bytes=`` the worker caps its own address space (``RLIMIT_AS``, Linux) at
what it had when it started plus ``memory_bytes``: an allocation past that fails inside the worker
(``MemoryError`` in Python, NumPy and the C extensions that report it), so the stage ends as
``"memory"`` with the budget in its message, its worker exits, and the calling process never holds
the memory.  The cap counts address space, not resident pages, so it is conservative: a stage that
reserves much more than it touches may be stopped before it would have used the budget.  What
else a capped worker reports as ``"memory"``: a native library that cannot be mapped under the cap
(``ImportError``/``OSError``), running out while sending its answer, and a stage that overruns its
time budget with its address space at the cap (a library retrying failed allocations).  The
libraries the stages load lazily (:data:`CAPPED_PRELOAD`) are imported before the worker starts:
loaded under the cap, SciPy's OpenBLAS stalls for minutes retrying its thread buffers.  Budgets
below :data:`MIN_MEMORY_BUDGET` are refused (:func:`memory_budget`).

In-process fallback: with ``isolate=False``, inside a daemonic process (which may not have
children), or with neither a time nor a memory budget, the stages run in the calling process,
timed, and cannot be stopped.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import pickle
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

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
    the parent).  Overhead per call when isolated: one process start (~15 ms with fork) plus
    pickling each value once.  Complexity: that of the stages.
    """
    if len(stages) != len(budgets):
        raise ValueError("run_stages() needs one budget per stage")
    unbounded = all(b is None for b in budgets) and memory_bytes is None
    if not isolate or unbounded or not can_isolate():
        return _run_here(stages, budgets)
    return _run_in_worker(stages, budgets, tuple(shared), memory_bytes)


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


def address_space_bytes() -> int | None:
    """This process's virtual memory size (``/proc/self/statm``), or None where there is none."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def _cap_memory(memory_bytes: int) -> bool:
    """Limit this process's address space to its size now plus ``memory_bytes`` (never above the
    hard limit).  False where that cannot be done (no ``resource`` module, no ``/proc``)."""
    try:
        import resource
    except ImportError:  # not Unix
        return False
    now = address_space_bytes()
    if now is None:
        return False
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = now + memory_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return True


@contextlib.contextmanager
def address_space_headroom(memory_bytes: int | None = None) -> Iterator[None]:
    """Within the block, this process may grow by at most ``memory_bytes`` (default:
    :func:`default_memory_budget`) of address space: an allocation past it fails
    (``MemoryError``, or ``std::bad_alloc`` in C++ code) instead of the process being killed by
    the kernel's out-of-memory killer.  For third-party code that sizes its allocations from a
    file (ONNX's shape inference propagating a ``Range`` to 2**40).  The previous limit is
    restored after; a no-op where limits cannot be set.  Process-wide while it lasts."""
    try:
        import resource
    except ImportError:  # not Unix
        yield
        return
    budget = default_memory_budget() if memory_bytes is None else memory_bytes
    now = address_space_bytes()
    before = resource.getrlimit(resource.RLIMIT_AS)
    soft, hard = before
    cap = None if budget is None or now is None else now + budget
    if cap is not None and hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if cap is None or (soft != resource.RLIM_INFINITY and soft <= cap):
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, before)


def format_bytes(n: float) -> str:
    """``2 GiB``, ``500 MiB``, ``64 KiB`` or ``12 B``: a memory budget for a message."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:g} B"


def memory_cap() -> str:
    """This process's address-space cap for a message: ``"address-space cap 2 GiB
    (RLIMIT_AS)"``, or ``"no address-space cap set"`` (``ulimit -v`` unlimited)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return "no address-space cap known"
    if soft == resource.RLIM_INFINITY:
        return "no address-space cap set"
    return f"address-space cap {format_bytes(soft)} (RLIMIT_AS)"


#: The exit status of a capped worker that ran out of memory even to say so.
_MEMORY_EXIT = 75
#: Python's recursion limit in a worker: pickling a value nested as deep as the graphs allow
#: (:data:`workbench.values.graph_items.MAX_CONTROL_DEPTH` levels of control flow, ~11 frames
#: each) must not fail because the worker was forked from a deep stack.
_WORKER_RECURSION_LIMIT = 4000


def _worker(conn: Any, stages: Sequence[Stage], shared: tuple[Any, ...],
            memory_bytes: int | None = None) -> None:
    """The child: cap its memory, run each stage, send ``("ok", value)`` after each, or
    ``("memory" | "died" | "error", ...)``; out of memory even for that, exit with
    :data:`_MEMORY_EXIT`."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), _WORKER_RECURSION_LIMIT))
    try:
        _work(conn, stages, shared, memory_bytes)
    except MemoryError:
        os._exit(_MEMORY_EXIT)  # no traceback on stderr: the parent reports the budget
    finally:
        conn.close()


def _work(conn: Any, stages: Sequence[Stage], shared: tuple[Any, ...],
          memory_bytes: int | None) -> None:
    objects = list(shared)
    values: list[Any] = []
    capped = memory_bytes is not None and _cap_memory(memory_bytes)
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
    except (ImportError, OSError) as exc:
        if not (capped and _unmappable(exc)):
            _send_error(conn, exc, objects)
        else:
            conn.send_bytes(_dumps(("memory", f"{over} (could not load a library: "
                                              f"{str(exc)[:80]})"), []))
    except BaseException as exc:  # sent to the parent, which re-raises it
        _send_error(conn, exc, objects)


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


def _run_in_worker(stages: Sequence[Stage], budgets: Sequence[float | None],
                   shared: tuple[Any, ...], memory_bytes: int | None = None) -> list[Outcome]:
    ctx: Any = multiprocessing.get_context(start_method())
    if memory_bytes is not None:
        _preload()
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(send, tuple(stages), shared, memory_bytes),
                       daemon=True)
    objects = list(shared)
    out: list[Outcome] = []
    try:
        proc.start()
        send.close()
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
                    raise WorkbenchError(str(exc))
                if hasattr(exc, "add_note"):  # Python 3.11+
                    exc.add_note(f"(raised in the worker process)\n{trace}")
                raise exc
            value = rest[0]
            _remember(objects, value)
            out.append(Outcome("ok", value, time.perf_counter() - t0, budget))
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        recv.close()
    for budget in budgets[len(out):]:
        out.append(Outcome("skipped", None, 0.0, budget, "an earlier stage did not finish"))
    return out


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


# ---------------------------------------------------------------------------------- memory budgets
#: The smallest memory budget (bytes a worker may add to what it inherits): 64 MiB.  Measured
#: (issue 34) with ``compare`` of a 4-op graph, every policy, the lazily loaded libraries
#: preloaded (:data:`CAPPED_PRELOAD`): 16 MiB runs every stage, 4 MiB fails to schedule.  The
#: cap is added to what the worker inherits, which it does not count: after compare's imports
#: the CLI holds 297 MiB of address space, 75 MiB resident.  64 MiB leaves four times the
#: measured need for a library a policy loads on first use.  Below it every row would stop.
MIN_MEMORY_BUDGET = 64 << 20
#: The share of the machine's physical memory a budgeted stage may add by default.
DEFAULT_MEMORY_SHARE = 0.5
_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 10**3, "KIB": 2**10, "M": 2**20, "MB": 10**6,
          "MIB": 2**20, "G": 2**30, "GB": 10**9, "GIB": 2**30, "T": 2**40, "TB": 10**12,
          "TIB": 2**40}


def default_memory_budget() -> int | None:
    """:data:`DEFAULT_MEMORY_SHARE` of the machine's physical memory (``sysconf``), or None where
    the platform does not say."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return int(total * DEFAULT_MEMORY_SHARE) if total > 0 else None


def memory_budget(value: Any, *, what: str = "memory_budget_bytes") -> int | None:
    """A memory budget in bytes from ``value``: ``"auto"`` (:func:`default_memory_budget`),
    None / ``"none"`` (no limit), a number of bytes, or a size such as ``"2G"``, ``"500M"``,
    ``"1.5GiB"`` (K, M, G, T are powers of 1024; KB, MB, GB, TB powers of 1000), of at least
    :data:`MIN_MEMORY_BUDGET`.  Anything else (``0``, ``1K``, ``"lots"``) raises
    :class:`~workbench.errors.OptionError` naming ``what``."""
    from workbench.errors import OptionError

    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().upper()
        if text == "AUTO":
            return default_memory_budget()
        if text == "NONE":
            return None
        number = text.rstrip("BKMGTI")
        unit = text[len(number):]
        try:
            amount = float(number)
        except ValueError:
            amount = float("nan")
        if unit not in _UNITS or not 0 <= amount < 2**70 / _UNITS[unit]:
            raise OptionError(f"{what} must be a size such as 2G or 500M, 'auto' or 'none', "
                              f"got {value!r:.80}")
        size = int(amount * _UNITS[unit])
    elif isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**70:
        raise OptionError(f"{what} must be a positive number of bytes, a size such as '2G', "
                          f"'auto' or None, got {value!r:.80}")
    else:
        size = value
    if size < MIN_MEMORY_BUDGET:
        raise OptionError(f"{what} {value!r:.40} is below the {format_bytes(MIN_MEMORY_BUDGET)} "
                          f"a policy's worker needs to run at all (use 'none' for no limit)")
    return size
