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

In-process fallback: with ``isolate=False``, inside a daemonic process (which may not have
children), or with no budget at all, the stages run in the calling process, timed, and cannot be
stopped.
"""

from __future__ import annotations

import io
import multiprocessing
import pickle
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.errors import WorkbenchError

Stage = Callable[..., Any]


@dataclass(frozen=True)
class Outcome:
    """What became of one stage: ``status`` is ``"ok"`` (``value`` holds its result),
    ``"budget"`` (killed after ``budget_s``), ``"skipped"`` (an earlier stage did not finish) or
    ``"died"`` (the worker ended without an answer, e.g. killed for memory, or ran out of it:
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
               shared: Sequence[Any] = ()) -> list[Outcome]:
    """Run ``stages[i](*values_of_earlier_stages)`` in order, each within ``budgets[i]`` seconds.

    Returns one :class:`Outcome` per stage.  Exceptions raised by a stage propagate (re-raised in
    the parent).  Overhead per call when isolated: one process start (~15 ms with fork) plus
    pickling each value once.  Complexity: that of the stages.
    """
    if len(stages) != len(budgets):
        raise ValueError("run_stages() needs one budget per stage")
    if not isolate or all(b is None for b in budgets) or not can_isolate():
        return _run_here(stages, budgets)
    return _run_in_worker(stages, budgets, tuple(shared))


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


def _worker(conn: Any, stages: Sequence[Stage], shared: tuple[Any, ...]) -> None:
    """The child: run each stage, send ``("ok", value)`` after each, or ``("error", ...)``."""
    objects = list(shared)
    values: list[Any] = []
    try:
        for stage in stages:
            value = stage(*values)
            conn.send_bytes(_dumps(("ok", value), objects))
            values.append(value)
            _remember(objects, value)
    except MemoryError as exc:  # like being killed for memory: the stage cannot finish here
        values.clear()
        why = str(exc) or "out of memory (MemoryError in the worker)"  # a refusal says why
        conn.send_bytes(_dumps(("died", why), []))
    except BaseException as exc:  # sent to the parent, which re-raises it
        trace = traceback.format_exc()
        try:
            payload = _dumps(("error", exc, trace), objects)
        except Exception:  # an exception that does not pickle: its text
            payload = _dumps(("error", WorkbenchError(f"{type(exc).__name__}: {exc}"), trace), [])
        conn.send_bytes(payload)
    finally:
        conn.close()


def _run_in_worker(stages: Sequence[Stage], budgets: Sequence[float | None],
                   shared: tuple[Any, ...]) -> list[Outcome]:
    ctx: Any = multiprocessing.get_context(start_method())
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(send, tuple(stages), shared), daemon=True)
    objects = list(shared)
    out: list[Outcome] = []
    try:
        proc.start()
        send.close()
        for budget in budgets:
            t0 = time.perf_counter()
            if not recv.poll(budget):
                out.append(Outcome("budget", None, time.perf_counter() - t0, budget,
                                   f"did not finish within its budget of {budget:g} s"))
                break
            try:
                data = recv.recv_bytes()
            except EOFError:
                proc.join(5)
                out.append(Outcome("died", None, time.perf_counter() - t0, budget,
                                   _death(proc.exitcode)))
                break
            kind, *rest = _Unpickler(io.BytesIO(data), objects).load()
            if kind == "died":
                out.append(Outcome("died", None, time.perf_counter() - t0, budget, rest[0]))
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


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        hint = " (out of memory?)" if exitcode == -9 else ""
        return f"worker killed by signal {-exitcode}{hint}"
    return f"worker exited with code {exitcode} without an answer"
