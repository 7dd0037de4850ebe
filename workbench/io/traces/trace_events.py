"""Reading Chrome/PyTorch trace files: the parsed JSON (gzip or plain, size-limited, duplicate
keys refused), the ``traceEvents`` list, and event times checked against what a real trace can
hold, each failure a one-line :class:`~workbench.errors.FormatError` naming the file and event;
and the one-line warning of an imported graph with nothing to schedule
(:func:`nothing_to_schedule`).  Shared by the Kineto importer
(:mod:`workbench.io.traces.pytorch_profile`) and the execution-trace importer
(:mod:`workbench.io.traces.execution_trace`)."""

from __future__ import annotations

import functools
import gc
import gzip
import io
import math
import sys
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from workbench._atomic import max_input_bytes, read_input
from workbench._bounded.memory import memory_cap
from workbench._checks import parse_json, unique_keys
from workbench.errors import FormatError

if TYPE_CHECKING:
    from workbench.values.graph import Graph

T = TypeVar("T")


def read_trace_json(path: Path) -> Any:
    """The parsed JSON of a (possibly gzipped) trace file; one-line errors, running out of
    memory included (:func:`memory_bounded`).

    Bounded memory: the file's bytes are dropped once decoded, before parsing; short strings
    (event names, categories, phases: a trace repeats a few of them a million times) are
    shared, not copied per event; the cyclic garbage collector waits while the parser builds
    millions of containers that cannot be garbage.  A 10^6-event Kineto trace (204 MB) parses
    to about 0.5 GB."""
    with memory_bounded(path):
        return _parse_trace(read_input(path, what="trace file"), path)


def _parse_trace(data: bytes, path: Path) -> Any:
    if data[:2] == b"\x1f\x8b":
        limit = max_input_bytes()
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
                data = unzipped.read(limit + 1)
        except (OSError, EOFError, zlib.error):
            raise FormatError(f"{path}: broken or truncated gzip file") from None
        if len(data) > limit:
            raise FormatError(f"{path}: unzips to over the input limit of {limit:,} bytes "
                              f"(raise it with WORKBENCH_MAX_INPUT_BYTES)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not a text file (is it really a JSON trace?)") from None
    del data
    if not text.strip():
        raise FormatError(f"{path}: empty file (not a trace)")
    collecting = gc.isenabled()
    gc.disable()
    try:
        return parse_json(text, path, object_hook=_shared_strings)
    finally:
        if collecting:
            gc.enable()


def _shared_strings(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """:func:`~workbench._checks.unique_keys`, with string values of up to 256 characters
    interned (one copy of ``"kernel"`` or a kernel's name for all the events that carry it)."""
    return unique_keys([(k, sys.intern(v) if type(v) is str and len(v) <= 256 else v)
                        for k, v in pairs])


@contextmanager
def memory_bounded(path: Path | str) -> Iterator[None]:
    """Turn a :class:`MemoryError` inside the block into a one-line :class:`FormatError` naming
    ``path`` and the address-space cap (``RLIMIT_AS``, ``ulimit -v``) the process runs under."""
    try:
        yield
    except MemoryError:
        raise FormatError(f"{path}: out of memory while reading it ({memory_cap()}); give the "
                          f"process more memory or read a smaller trace") from None


def refuses_out_of_memory(load: Callable[..., T]) -> Callable[..., T]:
    """Decorate a reader whose first argument is the file: :func:`memory_bounded` around it."""
    @functools.wraps(load)
    def bounded(path: Any, *args: Any, **kwargs: Any) -> T:
        with memory_bounded(path):
            return load(path, *args, **kwargs)

    return bounded


def trace_events(data: Any, path: Path) -> list[Any]:
    """The ``traceEvents`` list of a parsed trace (a bare list is accepted too); an event whose
    ``pid`` or ``tid`` is not a number or a string (``[]``) is a one-line error.  O(events)."""
    if isinstance(data, dict):
        if "traceEvents" not in data:
            raise FormatError(f"{path}: not a Chrome/PyTorch trace (no 'traceEvents')")
        raw = data["traceEvents"]
    elif isinstance(data, list):
        raw = data
    else:
        raise FormatError(f"{path}: not a Chrome/PyTorch trace (top level is "
                          f"{type(data).__name__})")
    if not isinstance(raw, list):
        raise FormatError(f"{path}: 'traceEvents' must be a list, got {type(raw).__name__}")
    for k, ev in enumerate(raw):  # events are grouped by (pid, tid): both must be hashable
        if isinstance(ev, dict):
            for key in ("pid", "tid"):
                if not isinstance(ev.get(key), _THREAD_ID) or isinstance(ev.get(key), bool):
                    name = str(ev.get("name", "?"))[:60]
                    raise FormatError(f"{path}: traceEvents[{k}] ({name!r}): '{key}' must be "
                                      f"a number or a string, got {str(ev.get(key))[:40]}"
                                      .replace("\n", "\\n"))
    return raw


#: What a trace event's ``pid``/``tid`` may be (absent: None).
_THREAD_ID = (int, float, str, type(None))


#: Largest magnitude of a trace time (µs): Unix-epoch microseconds are ~1.8e15; 1e17 is 3,000
#: years.  Beyond it a value is corrupt (and sums of such values lose all precision).
MAX_TRACE_US = 1e17
#: Largest span of one trace (µs, ~28 hours): a kernel moved to ts=-5e9 or 5e12 is refused.
MAX_SPAN_US = 1e11


def number(event: dict[str, Any], key: str, k: int, path: Path) -> float:
    """``event[key]`` as a finite float (numeric strings accepted) of magnitude at most
    :data:`MAX_TRACE_US` (``ts``: not negative), else a one-line error naming the event."""
    value = event.get(key)
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        try:
            value = float(value)
        except (ValueError, OverflowError):
            pass
    if not isinstance(value, float) or not math.isfinite(value):
        name = str(event.get("name", "?"))[:60]
        raise FormatError(f"{path}: traceEvents[{k}] ({name!r}): '{key}' must be a number, "
                          f"got {value!r}"[:300].replace("\n", "\\n"))
    if abs(value) > MAX_TRACE_US or (key == "ts" and value < 0):
        name = str(event.get("name", "?"))[:60]
        need = "not negative" if value < 0 and key == "ts" else f"at most {MAX_TRACE_US:g} µs"
        raise FormatError(f"{path}: traceEvents[{k}] ({name!r}): '{key}' = {value:g} is "
                          f"impossible (must be {need})".replace("\n", "\\n"))
    return float(value)


def duration(event: dict[str, Any], k: int, path: Path) -> float:
    """``event["dur"]`` as a finite non-negative float; a negative one (a corrupt or mis-merged
    trace) is a one-line error naming the event, never silently clamped to 0."""
    dur = number(event, "dur", k, path)
    if dur < 0:
        name = str(event.get("name", "?"))[:60]
        raise FormatError(f"{path}: traceEvents[{k}] ({name!r}): negative duration {dur!r} µs "
                          f"(a corrupt trace?)".replace("\n", "\\n"))
    return dur


def args_of(event: Mapping[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    return args if isinstance(args, dict) else {}


#: How the line of :func:`nothing_to_schedule` begins.
NOTHING_TO_SCHEDULE = "nothing to schedule:"


def nothing_to_schedule(graph: Graph) -> str:
    """One line when ``graph`` leaves a scheduler no choice, else ``""``: it is one chain (every
    op has at most one predecessor and one successor, and they are all linked: each op waits for
    the one before it), or no op has a cost (no FLOPs, no bytes, no measured time).  Then every
    policy runs the ops as serial does and ties with it.  O(ops + edges).

    >>> from workbench.values.graph import Graph
    >>> nothing_to_schedule(Graph.from_edges([("a", "b"), ("b", "c")], name="g"))[:52]
    "nothing to schedule: graph 'g' is one chain of 3 ops"
    """
    n = len(graph)
    if n == 0:
        return ""
    if all(not op.flops and not op.bytes_read and not op.bytes_written and not op.duration_us
           for op in graph.ops):
        return (f"{NOTHING_TO_SCHEDULE} no op of graph {graph.name!r} has a cost (no FLOPs, "
                f"bytes or measured time), so every policy ties with serial")
    succ, pred = graph.succ_index, graph.pred_index
    if n > 1 and len(graph.edges) == n - 1 and all(
            len(succ[i]) <= 1 and len(pred[i]) <= 1 for i in range(n)):
        return (f"{NOTHING_TO_SCHEDULE} graph {graph.name!r} is one chain of {n} ops (each op "
                f"waits for the one before it), so every policy runs them in serial's order "
                f"and ties with it")
    return ""


def warn_nothing_to_schedule(graph: Graph, path: Path | str, *, profile_alone: bool) -> str:
    """Warn in one line (:func:`workbench._checks.warn_line`, naming ``path``) when the imported
    ``graph`` has nothing to schedule (:func:`nothing_to_schedule`); ``profile_alone``: a
    profiler trace read without its Execution Trace, whose edges are only the order each thread
    and stream ran in (the hint names the ET).  Returns the line (``""`` when none)."""
    from workbench._checks import warn_line

    line = nothing_to_schedule(graph)
    if line and profile_alone and " one chain " in line:
        line += ("; a profile alone holds only the order each thread or stream ran its ops in: "
                 "import it with the run's Execution Trace (--et, load_execution_trace) for "
                 "the data dependencies")
    if line:
        warn_line(line, str(path))
    return line
