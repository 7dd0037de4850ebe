"""Compact conflict relations: which tensors must not share bytes, without listing every pair.

A conflict relation over ``n`` tensors is stored as three plain arrays (:class:`ConflictGraph`):

* ``births``: one integer per tensor (its first step, or its producer's issue index);
* ``tails``: tensors that conflict with *every* tensor born at or after them (graph outputs, which
  live to the end of the run; in an interval problem, records that reach the last step);
* a symmetric CSR adjacency (``ptr``, ``idx``) with every other conflicting pair, sorted into
  shape the first time it is read (:class:`ListedPairs`).

Tensors ``i`` and ``j`` conflict iff ``births[i] == births[j]`` (*siblings*: two intervals that
start at one step overlap, two outputs of one op are live together), or ``j`` is in row ``i`` of
the CSR, or ``i`` is a tail and ``births[j] >= births[i]``, or the same with ``i`` and ``j``
swapped.  The two implicit rules are what keep the relation near-linear: a graph output of a
100k-op graph conflicts with every later tensor (5 % of a random DAG's ops are outputs), and the
100,000 outputs of one op conflict pairwise; listing those pairs would be quadratic (issue 34: a
100,000-output op asked for 37 GiB).  An explicit relation (:func:`pairs_graph`) gives every
tensor its own birth, so the sibling rule never applies there.

:func:`interval_graph` builds the relation of interval overlap (``first..last`` inclusive) by a
sweep over records sorted by first step; :func:`pairs_graph` wraps an explicit pair set;
``workbench.memory.streams`` builds the multi-stream (happens-before) relation.
:class:`ConflictSet` is a read-only ``Set`` of ``(i, j)`` pairs (``i < j``) over a graph, so code
that expects a frozenset of pairs keeps working.

>>> g = interval_graph([0, 1, 2], [1, 4, 5])   # tensor 2 reaches the last step: a tail
>>> sorted(ConflictSet(g)), g.tails.tolist()
([(0, 1), (1, 2)], [False, False, True])
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Set
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

Pair = tuple[int, int]


@dataclass(frozen=True, eq=False)
class ConflictGraph:
    """Births, tail flags and the CSR of the remaining conflicting pairs (see the module doc)."""

    births: np.ndarray  # int64, one per tensor
    tails: np.ndarray  # bool, one per tensor
    listed: ListedPairs  # the other conflicting pairs: the CSR ``ptr`` / ``idx``, built when read
    #: per tensor, a key such that a tail born at ``b`` conflicts with every tensor whose key is
    #: ``>= b`` (the births: every later tensor); "complete" when that is *all* its conflicts.
    tail_key: np.ndarray
    tail_key_complete: bool = False

    @property
    def n(self) -> int:
        return len(self.births)

    @property
    def ptr(self) -> np.ndarray:
        """Row pointers of the CSR (int64, n + 1)."""
        return self.listed.csr()[0]

    @property
    def idx(self) -> np.ndarray:
        """Column indices of the CSR (int32, sorted within each row, symmetric)."""
        return self.listed.csr()[1]

    def row(self, i: int) -> np.ndarray:
        """The explicit (CSR) partners of tensor ``i``, sorted."""
        return self.idx[self.ptr[i]:self.ptr[i + 1]]

    def conflict(self, i: int, j: int) -> bool:
        """Whether tensors ``i != j`` conflict.  O(log d)."""
        b = self.births
        if b[i] == b[j] or (self.tails[i] and b[j] >= b[i]) or (self.tails[j] and b[i] >= b[j]):
            return True
        r = self.row(i)
        k = int(np.searchsorted(r, j))
        return k < len(r) and int(r[k]) == j

    def partners(self, i: int) -> np.ndarray:
        """Every tensor that conflicts with ``i``, sorted: its CSR row, its siblings, the tails
        born no later and (for a tail) every tensor born later, each found by one search in the
        tensors sorted by birth (:attr:`_by_birth`, sorted once per graph).  O(log n + k log k)
        for k partners; it was an O(n) mask, so listing a 100,000-tensor relation of three pairs
        took 4.8 s."""
        order, sorted_births, tails, tail_births = self._by_birth
        born = self.births[i]
        first = int(np.searchsorted(sorted_births, born, side="left"))
        after = int(np.searchsorted(sorted_births, born, side="right"))
        parts = [self.row(i), order[first:after],
                 tails[:int(np.searchsorted(tail_births, born, side="right"))]]
        if self.tails[i]:
            parts.append(order[after:])
        found = np.unique(np.concatenate(parts))
        return found[found != i]

    @cached_property
    def _by_birth(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The tensors sorted by birth (stable) and their births; the tails among them and
        theirs.  O(n log n), once."""
        order = np.argsort(self.births, kind="stable")
        tails = order[self.tails[order]]
        return order, self.births[order], tails, self.births[tails]

    @cached_property
    def degrees(self) -> np.ndarray:
        """Number of conflicting partners of every tensor.  O(n log n).

        The listed pairs never repeat an implicit one, so the count is the CSR row's length plus
        the siblings, the older tails and (for a tail) every younger tensor."""
        b = self.births
        explicit = np.diff(self.ptr)
        tail_births = np.sort(b[self.tails])
        all_births = np.sort(b)
        first_same = np.searchsorted(all_births, b, side="left")
        after_same = np.searchsorted(all_births, b, side="right")
        siblings = after_same - first_same - 1
        older_tails = np.searchsorted(tail_births, b, side="left")  # tails born before i
        younger = len(b) - after_same  # born after i
        implicit = siblings + older_tails + np.where(self.tails, younger, 0)
        return (explicit + implicit).astype(np.int64)

    @cached_property
    def n_pairs(self) -> int:
        """Number of conflicting unordered pairs.  O(n log n)."""
        return int(self.degrees.sum()) // 2


class ListedPairs:
    """The explicitly listed pairs of a relation over ``n`` tensors: directed ``(rows, cols)``
    (each unordered pair once), made a symmetric CSR on first read (:func:`_csr`: two counting
    passes, O(P + n), from 2,000 tensors; a sorting conversion below) and then dropped.  A
    caller that never reads a pair (the naive planner, the clique bound, which reads the
    skeleton) never builds it: 5.3 of 14 CPU s for the nnc schedule of a 100k random DAG (58 M
    pairs) when the CSR was one int64 sort."""

    def __init__(self, n: int, rows: np.ndarray, cols: np.ndarray) -> None:
        self.n = n
        self._pending: tuple[np.ndarray, np.ndarray] | None = (rows, cols)
        self._csr: tuple[np.ndarray, np.ndarray] | None = None

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """``(ptr, idx)``; built once."""
        if self._csr is None:
            assert self._pending is not None
            rows, cols = self._pending
            self._pending = None
            self._csr = _csr(self.n, rows, cols)
        return self._csr

    @property
    def built(self) -> bool:
        return self._csr is not None


#: From this many tensors the CSR is built by the compiled passes
#: (:mod:`workbench.memory.csr_kernel`) where
#: Numba imports (a plan that large imports Numba for its placement anyway).
CSR_KERNEL_MIN_TENSORS = 2_000


def _csr(n: int, rows: np.ndarray, cols: np.ndarray, *, engine: str = "auto"
         ) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric CSR (rows sorted) from directed pairs, each unordered pair given exactly once.

    From :data:`CSR_KERNEL_MIN_TENSORS` tensors (``engine="auto"``; ``"kernel"`` always) two
    counting passes, compiled (:func:`workbench.memory.csr_kernel.symmetric_csr`): an LSD radix
    sort, O(P + n), 8 bytes allocated per entry.  On NNC's schedule of a 100k-op random DAG
    (29.3 M pairs) 0.63 CPU s where SciPy's COO -> CSR conversion and its per-row sort take
    2.4.  Below it, with ``engine="scipy"``, and where Numba does not import, that conversion
    (:func:`_csr_by_sorting`): on nasnet_a_large's schedules (25k pairs each) it is the faster
    of the two SciPy routes.  Both give the same arrays."""
    if engine not in ("auto", "kernel", "scipy"):
        raise ValueError(f"unknown CSR engine {engine!r} (known: auto, kernel, scipy)")
    if engine == "kernel" or (engine == "auto" and n >= CSR_KERNEL_MIN_TENSORS):
        try:
            from workbench.memory.csr_kernel import symmetric_csr
        except ImportError:  # no Numba: SciPy's conversion
            if engine == "kernel":
                raise
        else:
            return symmetric_csr(n, np.ascontiguousarray(rows, dtype=np.int32),
                                 np.ascontiguousarray(cols, dtype=np.int32))
    return _csr_by_sorting(n, rows, cols)


def _csr_by_sorting(n: int, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_csr` by SciPy's public COO -> CSR conversion, which sorts each row on its own
    (O(P + n) placement, then O(d log d) per row of d entries)."""
    from scipy.sparse import csr_array

    both_rows = np.concatenate((rows, cols))
    both_cols = np.concatenate((cols, rows))
    ones = np.ones(len(both_rows), dtype=np.int8)
    matrix = csr_array((ones, (both_rows, both_cols)), shape=(n, n))
    del both_rows, both_cols, ones
    matrix.sort_indices()  # sorted by the conversion's duplicate check; a no-op then
    return matrix.indptr.astype(np.int64), matrix.indices.astype(np.int32, copy=False)


def expand_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges ``[lo[k], hi[k])``: (k repeated once per element, the elements).  O(total)."""
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    owner = np.repeat(np.arange(len(lo)), counts)
    start = np.repeat(lo - (np.cumsum(counts) - counts), counts)
    return owner, start + np.arange(total)


def interval_graph(firsts: Sequence[int] | np.ndarray,
                   lasts: Sequence[int] | np.ndarray) -> ConflictGraph:
    """The interval-overlap relation of inclusive intervals ``firsts[i]..lasts[i]``.

    Tails are the intervals reaching the largest last step (they overlap every interval that
    starts at or after them); intervals starting at one step are siblings.  For every other
    interval ``i`` the CSR lists the intervals starting inside it at a later step, found by a
    sweep over the intervals sorted by first step.  O(n log n + P) for P explicit pairs, about n
    times the typical number of intervals starting inside one non-tail interval at later steps.
    """
    first = np.asarray(firsts, dtype=np.int64)
    last = np.asarray(lasts, dtype=np.int64)
    n = len(first)
    tails = last == last.max() if n else np.zeros(0, dtype=bool)
    order = np.lexsort((np.arange(n), first))
    sorted_first = first[order]
    heads = np.flatnonzero(~tails)
    lo = np.searchsorted(sorted_first, first[heads], side="right")  # siblings: the sibling rule
    hi = np.searchsorted(sorted_first, last[heads], side="right")
    owner, at = expand_ranges(lo, hi)
    rows, cols = heads[owner].astype(np.int32), order[at].astype(np.int32)
    del owner, at
    return ConflictGraph(first, tails, ListedPairs(n, rows, cols), last, tail_key_complete=True)


def pairs_graph(n: int, pairs: Iterable[Pair]) -> ConflictGraph:
    """An explicit relation: exactly the given pairs (no tails; every tensor born alone, so no
    siblings).  O(P log P)."""
    arr = np.array(sorted({(min(i, j), max(i, j)) for i, j in pairs}), dtype=np.int64)
    arr = arr.reshape(-1, 2)
    return ConflictGraph(np.arange(n, dtype=np.int64), np.zeros(n, dtype=bool),
                         ListedPairs(n, arr[:, 0], arr[:, 1]), np.zeros(n, dtype=np.int64))


class ConflictSet(Set[Pair]):
    """The pairs ``(i, j)``, ``i < j``, of a :class:`ConflictGraph`, as a read-only set.

    Membership is O(log d); ``len`` O(n log n) once; iteration (sorted) materialises the pairs, so
    use it on small relations only.  Equal to a frozenset holding the same pairs.
    """

    def __init__(self, graph: ConflictGraph, *, source: str = "") -> None:
        self.graph = graph
        self.source = source
        self.skeleton: Any = None  # the happens-before order, when built from a schedule

    def __contains__(self, pair: object) -> bool:
        if not isinstance(pair, tuple) or len(pair) != 2:
            return False
        i, j = pair
        if not (isinstance(i, (int, np.integer)) and isinstance(j, (int, np.integer))):
            return False
        n = self.graph.n
        if not (0 <= i < n and 0 <= j < n) or i >= j:
            return False
        return self.graph.conflict(int(i), int(j))

    def __len__(self) -> int:
        return self.graph.n_pairs

    def __iter__(self) -> Iterator[Pair]:
        for i in range(self.graph.n):
            partners = self.graph.partners(i)
            for j in partners[partners > i].tolist():
                yield (i, j)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ConflictSet) and other.graph is self.graph:
            return True
        return Set.__eq__(self, other)

    def __hash__(self) -> int:
        return self._hash()

    def __repr__(self) -> str:
        return f"ConflictSet({len(self)} pairs over {self.graph.n} tensors{self._from()})"

    def _from(self) -> str:
        return f", {self.source}" if self.source else ""
