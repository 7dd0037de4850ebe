"""The values of an Execution Trace's tensors while its calls are walked: which graph tensors
hold each ET tensor, who wrote its bytes, who read them (:class:`Values`), for
:mod:`workbench.io.traces.execution_trace`.

An ET tensor argument is ``[tensor id, storage id, offset, elements, element size, device]``
(:class:`Ref`); a storage id is the address of its allocation.  The rules (by tensor id, through
storage aliases, in-place writes after readers, fresh allocations) are in the module docstring
of :mod:`workbench.io.traces.execution_trace`; this module keeps the bookkeeping.  Every method is
O(writes and reads kept for the storage it touches).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from workbench.values.graph import Tensor

TensorKey = tuple[int, int]  # (tensor id, storage id)
Span = tuple[int, int]       # bytes [start, stop) of a storage


class Ref(NamedTuple):
    """A tensor argument: its ids, shape, element size and the bytes of its storage it covers
    (from its storage offset and element count: the extent of a contiguous tensor; a strided
    view's last elements may lie past it)."""

    key: TensorKey
    shape: tuple[int, ...]
    itemsize: int
    span: Span


@dataclass
class Call:
    """One outermost operator call of the execution trace."""

    node_id: int
    name: str
    rf_id: int | str | None
    ins: list[Ref]
    outs: list[Ref]
    values: list[Any]
    kernels: list[dict[str, Any]] = field(default_factory=list)
    host: dict[str, Any] | None = None
    phase: str = "forward"
    grad_fn: str | None = None
    parts: list[tuple[str, list[Any], list[Any], list[Any]]] = field(default_factory=list)
    mutated: set[TensorKey] = field(default_factory=set)  # the inputs it writes in place
    hidden: list[tuple[Ref, bool]] = field(default_factory=list)  # nested writes (in place?)
    step: int | None = None  # N of the ProfilerStep#N scope it ran in, if any


class Write(NamedTuple):
    """A write of a storage's bytes: the tensor written, the call, the graph tensors holding
    the value and the ops that wrote it; ``fresh``: a new allocation (:class:`Values`)."""

    ref: Ref
    call: int
    tids: list[str]
    writers: list[str]
    fresh: bool


@dataclass
class Values:
    """Which graph tensors hold each ET tensor's value while the calls are walked in trace
    order (call ``n`` reads, then writes), by tensor id and through storage aliases (module
    docstring).  An output is written ``in_place`` (its tensor is an input), is an ``alias``
    (a new tensor on an input's storage: a view, ``.grad`` made by ``detach``; no bytes
    written) or ``fresh`` (new bytes: a new storage, or a freed one reused; a storage id is
    its allocation's address, so everything the storage held before is gone)."""

    tensors: dict[str, Tensor] = field(default_factory=dict)
    current: dict[TensorKey, list[str]] = field(default_factory=dict)  # key -> its value's tensors
    dated: dict[TensorKey, int] = field(default_factory=dict)  # key -> call its value dates from
    readers: dict[TensorKey, list[str]] = field(default_factory=lambda: defaultdict(list))
    # storage id -> its allocation's writes still visible, oldest first; the ops that read since
    writes: dict[int, list[Write]] = field(default_factory=dict)
    reads: dict[int, list[tuple[Span, str]]] = field(default_factory=dict)

    def read(self, ref: Ref, n: int) -> tuple[list[str], list[str]]:
        """The tensors holding ``ref``'s value, and the ops call ``n`` must follow for having
        written its bytes since through another tensor of the same allocation.

        A tensor id first seen here (a saved tensor unpacked, ``.grad``), or seen before its
        storage was allocated again, is read where the last writes of its bytes left them when
        one of those writes made a tensor of its element size that holds all of its bytes
        (else it is an allocation the trace does not show: an input of the graph, no edge)."""
        later = self._since(ref, self.dated.get(ref.key, n))
        if ref.key in self.current and not any(w.fresh for w in later):
            return self.current[ref.key], [op for w in later for op in w.writers]
        last = self._since(ref, -1)
        start, stop = ref.span
        if not any(w.ref.itemsize == ref.itemsize and w.ref.span[0] <= start
                   and stop <= w.ref.span[1] for w in last):
            last = []
        held = list(dict.fromkeys(t for w in last for t in w.tids))
        if not held:
            tid = f"t{ref.key[0]}.{ref.key[1]}"
            self.tensors[tid] = Tensor(tid, nbytes_of(ref.shape, ref.itemsize), role="input",
                                       shape=ref.shape, dtype=dtype_name(ref.itemsize))
            held = [tid]
        self.current[ref.key], self.dated[ref.key] = held, n - 1
        return held, [op for w in last for op in w.writers]

    def hold(self, ref: Ref, n: int, tids: list[str], how: str, writers: list[str]) -> None:
        """Call ``n`` (an op of ``writers``) leaves ``ref``'s value in ``tids`` (``how``: class
        docstring)."""
        self.current[ref.key], self.dated[ref.key] = list(tids), n
        self.hide(ref, n, how, writers, tids)

    def hide(self, ref: Ref, n: int, how: str, writers: list[str],
             tids: list[str] | None = None) -> None:
        """Call ``n`` wrote ``ref`` (for :meth:`hold`, or inside a nested call, with no graph
        tensor holding it: its readers follow ``writers``)."""
        start, stop = ref.span
        if how == "alias" or start >= stop:
            return
        sid = ref.key[1]  # fresh: the storage's old writes are gone; in place: those it covers
        kept = [] if how == "fresh" else [w for w in self.writes.get(sid, []) if not
                                          start <= w.ref.span[0] <= w.ref.span[1] <= stop]
        self.writes[sid] = [*kept, Write(ref, n, list(tids or []), list(writers),
                                          how == "fresh")]

    def overwrite(self, ref: Ref, how: str) -> list[str]:
        """An op writes ``ref``: the ops that read the old bytes, which it must follow when
        it writes in place (a fresh value's bytes were free: their readers read a dead
        tensor, no edge).  Readers of the bytes written are forgotten."""
        start, stop = ref.span
        sid, key = ref.key[1], ref.key
        before, self.readers[key] = self.readers[key], []
        if how == "fresh" and start < stop:
            self.reads.pop(sid, None)
        if how != "in_place":
            return []
        old = self.reads.get(sid, [])
        self.reads[sid] = [(span, op) for span, op in old
                           if not start <= span[0] <= span[1] <= stop]
        return before + [op for (a, b), op in old if a < stop and start < b]

    def reader(self, ref: Ref, op_id: str) -> None:
        """``op_id`` reads ``ref``."""
        self.readers[ref.key].append(op_id)
        if ref.span[0] < ref.span[1]:
            self.reads.setdefault(ref.key[1], []).append((ref.span, op_id))

    def _since(self, ref: Ref, after: int) -> list[Write]:
        """The writes of ``ref``'s bytes after call ``after`` still visible, oldest first."""
        start, stop = ref.span
        return [w for w in self.writes.get(ref.key[1], ())
                if w.call > after and w.ref.span[0] < stop and start < w.ref.span[1]]


def how_written(ref: Ref, call: Call, mutated: bool) -> str:
    """How ``call`` writes ``ref`` ((:class:`Values`); ``mutated``: written in place."""
    if mutated:
        return "in_place"
    return "alias" if any(r.key[1] == ref.key[1] for r in call.ins) else "fresh"


def nbytes_of(shape: tuple[int, ...], itemsize: int) -> int:
    n = 1
    for d in shape:
        n *= max(0, d)
    return n * itemsize


def dtype_name(itemsize: int) -> str:
    return {2: "float16", 8: "float64", 1: "uint8"}.get(itemsize, "float32")


__all__ = ["Call", "Ref", "Span", "TensorKey", "Values", "Write", "dtype_name", "how_written",
           "nbytes_of"]
