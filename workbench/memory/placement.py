"""Greedy offset placement over a conflict graph: the one step every offset planner shares.

Tensors are taken in a given order; each goes into a free gap among the already-placed tensors it
conflicts with, chosen by a *fit*, or right above the highest of them when no gap holds it (the
loop of TFLite's "greedy by size for offset calculation", Pisarchyk & Lee 2020, notes §2).  The
gaps are the holes in the union of the conflicting tensors' byte ranges below its top.

Fits: ``"best"`` (smallest gap that holds the tensor, ties lowest offset; TFLite and SOMAS
BestFit), ``"first"`` (lowest such gap; SOMAS SmallestFit), ``"worst"`` (largest gap, ties lowest;
SOMAS debug WorstFit), ``"highest"`` (highest such gap; SOMAS debug LargestFit).

One call places the same order under several fits at once (:func:`place`): the placed set is the
same for every fit, so the conflicting tensors are found once per step and the gaps of all fits are
computed in one vectorised pass; :func:`place_until` also drops a fit once its arena reaches a
bound (SOMAS's pruning).  Conflicting tensors come from a :class:`ConflictGraph`:

* its CSR row, restricted once per order to the partners placed earlier;
* its placed *siblings* (same birth, not tails), kept per birth in placement order
  (:class:`_Siblings`);
* the *walls*: placed tails born no later than the tensor.  Tails are pairwise disjoint, so each
  fit keeps them sorted by offset, and their running top is simply their end;
* for a tail, every placed tensor whose ``tail_key`` reaches its birth: per fit, a step function
  over bytes of the largest key placed there (``_Latest``), folded in batches.  For an interval
  graph the key is the last step, which covers all of a tail's conflicts.

A zero-byte tensor occupies no bytes: it is placed at offset 0 and never shapes another tensor's
gaps (nor is it looked at again: the 100,000 zero-byte outputs of one op cost O(n)).  Complexity
per step: O(f · (d + w) + m) element operations for f fits, d placed partners (siblings
included), w selected and m placed walls; for a tail, O(f · p) for p pieces of the step function.
Walls are tensors live to the end of the schedule (graph outputs, and under several streams the
tensors no later op is known to follow), and they accumulate: a pass is O(n · w) where w grows
with the graph.  On random DAGs (3 edges an op, window 64; 5% of ops are sinks, i.e. outputs)
the compiled best-fit pass of NNC's schedule reads 1,060 walls a step at 10k ops and 9,628 at
100k, and a tail step 1,400 and 9,444 pieces: SOMAS there takes 1.1 and 36.5 CPU s (local
exponent 1.5; 1.4 on the serial schedule).  Chains and fans have few walls and stay linear.

Two engines place the same offsets (``tests/test_placement_kernel.py``): the NumPy loop below,
and from :data:`KERNEL_MIN_TENSORS` tensors the same steps compiled with Numba
(:mod:`workbench.memory.placement_kernel`), which streams the walls and partners per fit
instead of paying ~10 array calls a step, and reads the walls' gaps with masks and SIMD for the
fits that see every gap: SOMAS on the nnc schedule of random 10k, 5.9 -> 1.8 CPU s; greedy by
size 1.1 -> 0.75 s (most of what is left is the relation); serial random 100k SOMAS 55 -> 12 s;
nnc random 100k 84 -> 46 s for the 24 placements.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Sequence

import numpy as np

from workbench.memory.compiled import kernel, place_compiled
from workbench.memory.conflicts import ConflictGraph, expand_ranges
from workbench.memory.watch import CHECK_EVERY, PlacementCut, Watch

FIT_NAMES: tuple[str, ...] = ("best", "first", "worst", "highest")
_BIG = np.iinfo(np.int64).max
FOLD_BATCH = 256  # placements between two folds of the tails' step functions
ENGINES = ("auto", "numpy", "kernel")
#: From this many tensors ``engine="auto"`` places with the compiled kernel: below it the NumPy
#: loop costs less than the kernel's first use in a process (Numba's import 0.2 s, its cached
#: machine code 0.4 s); at 2,000 a SOMAS plan costs the NumPy loop 0.2-1 s.
KERNEL_MIN_TENSORS = 2_000


class _Walls:
    """Placed tails of one order, one row per fit (tails are pairwise disjoint, so every row
    holds the same tensors in its own offset order).

    Two views.  ``span[0]`` / ``span[1]`` (shape 2 x fits x walls) hold start and end offsets
    sorted by offset per row, with ``birth`` beside them, for the walls born up to a step
    (:meth:`up_to`); new walls wait in a pending list and are merged in only when that view is
    asked for, one O(m) merge for all of them (it was one O(m) copy per wall: a fan's 100,000
    tails copied 10^10 entries).  Both live at the front of buffers that grow by an eighth, so
    the common merge (one wall) shifts each row in place instead of copying it into a new
    array.  ``union`` keeps, per row, the union of all walls as sorted disjoint blocks,
    touching walls merged (:meth:`all_rows`, for a tail of a relation whose tail key is not
    complete): a stack of n touching tails is one block, not n ranges."""

    def __init__(self, rows: int, union: bool = True) -> None:
        self.keep_union = union  # only a relation whose tail key is incomplete reads it
        self.rows, self.m = rows, 0
        self.buffer = np.zeros((2, rows, 16), dtype=np.int64)  # span in [:, :, :m]
        self.born = np.full((rows, 16), _BIG, dtype=np.int64)  # birth in [:, :m], then _BIG
        self.births: list[int] = []  # sorted births of the merged walls
        self.new: list[tuple[np.ndarray, int, int]] = []  # (offsets per row, size, birth)
        self.union = [(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
                      for _ in range(rows)]

    @property
    def span(self) -> np.ndarray:
        return self.buffer[:, :, :self.m]

    @property
    def birth(self) -> np.ndarray:
        return self.born[:, :self.m]

    def add(self, offsets: np.ndarray, size: int, birth: int) -> None:
        self.new.append((offsets.copy(), size, birth))
        for r, o in enumerate(offsets.tolist() if self.keep_union else ()):
            self.union[r] = _merge_block(*self.union[r], o, o + size)

    def _room(self, extra: int) -> None:
        """Grow the buffers by an eighth (at least 16) to hold ``extra`` more walls.  Every
        query compares the whole capacity's births, so slack costs on every step while a growth
        copies once (doubling left up to half the slots empty: serial random 100k, 4 fits, -8%)."""
        need = self.m + extra
        if need > self.buffer.shape[2]:
            cap = max(self.buffer.shape[2] + max(self.buffer.shape[2] // 8, 16), need)
            buffer = np.zeros((2, self.rows, cap), dtype=np.int64)
            born = np.full((self.rows, cap), _BIG, dtype=np.int64)
            buffer[:, :, :self.m], born[:, :self.m] = self.span, self.birth
            self.buffer, self.born = buffer, born

    def _flush(self) -> None:
        if not self.new:
            return
        if len(self.new) == 1:  # the common case (a query after each wall): one insertion a row
            self._insert(*self.new.pop())
            return
        off = np.stack([o for o, _, _ in self.new], axis=1)  # rows x k
        size = np.array([s for _, s, _ in self.new], dtype=np.int64)
        born = np.array([b for _, _, b in self.new], dtype=np.int64)
        self.new = []
        rows, m = self.rows, self.m
        k = len(size)
        span = np.empty((2, rows, m + k), dtype=np.int64)
        birth = np.empty((rows, m + k), dtype=np.int64)
        old_span, old_birth = self.span, self.birth
        for r in range(rows):
            o = off[r].argsort(kind="stable")
            starts = off[r, o]
            at = np.searchsorted(old_span[0, r], starts) + np.arange(k)
            keep = np.ones(m + k, dtype=bool)
            keep[at] = False
            span[0, r, at], span[1, r, at], birth[r, at] = starts, starts + size[o], born[o]
            span[0, r, keep], span[1, r, keep] = old_span[0, r], old_span[1, r]
            birth[r, keep] = old_birth[r]
        self._room(k)
        self.buffer[:, :, :m + k], self.born[:, :m + k] = span, birth
        self.m = m + k
        self.births = sorted(self.births + born.tolist())

    def _insert(self, offsets: np.ndarray, size: int, birth: int) -> None:
        self._room(1)
        m, buffer, born = self.m, self.buffer, self.born
        for r, o in enumerate(offsets.tolist()):
            p = int(np.searchsorted(buffer[0, r, :m], o))
            if p < m:  # shift the walls above it up by one (NumPy copies overlapping slices)
                buffer[:, r, p + 1:m + 1] = buffer[:, r, p:m]
                born[r, p + 1:m + 1] = born[r, p:m]
            buffer[0, r, p], buffer[1, r, p], born[r, p] = o, o + size, birth
        self.m = m + 1
        insort(self.births, birth)

    def all_rows(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Start and end offsets of the union of every placed wall in row ``r`` (blocks)."""
        return self.union[r]

    def up_to(self, birth: int) -> np.ndarray:
        """Spans of the walls born at or before ``birth`` (2 x fits x k), rows sorted by offset."""
        self._flush()
        m = self.m
        k = bisect_right(self.births, birth)
        if k == m:
            return self.buffer[:, :, :m]
        if k == 0:
            return self.buffer[:, :, :0]
        keep = (self.born <= birth).ravel().nonzero()[0]  # free slots hold _BIG: never kept
        return self.buffer.reshape(2, -1).take(keep, axis=1).reshape(2, self.rows, k)

    def drop(self, keep: list[int]) -> None:
        """Keep only the rows ``keep``."""
        self.buffer, self.born = self.buffer[:, keep], self.born[keep]
        self.rows = len(keep)
        self.new = [(o[keep], s, b) for o, s, b in self.new]
        self.union = [self.union[k] for k in keep]


def _merge_block(starts: np.ndarray, ends: np.ndarray, lo: int,
                 hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted disjoint blocks with ``[lo, hi)`` (disjoint from them) added, touching ones merged.
    O(1) when it touches a block, else one O(blocks) copy."""
    p = int(np.searchsorted(starts, lo))
    left = p > 0 and int(ends[p - 1]) == lo
    right = p < len(starts) and int(starts[p]) == hi
    if left and right:
        ends[p - 1] = ends[p]
        return np.delete(starts, p), np.delete(ends, p)
    if left:
        ends[p - 1] = hi
        return starts, ends
    if right:
        starts[p] = lo
        return starts, ends
    return np.insert(starts, p, lo), np.insert(ends, p, hi)


class _Latest:
    """For each fit, the largest ``key`` of the placed tensors covering every byte: a step function
    over offsets (``xs`` breakpoints, ``vs`` values, -1 where nothing was placed), kept as a
    snapshot plus the tensors placed since (shared by all fits), folded in every ``batch``
    placements.  A tail born at ``b`` is blocked wherever the key is ``>= b``."""

    def __init__(self, rows: int, key: np.ndarray) -> None:
        self.key = key
        self.batch = FOLD_BATCH
        self.xs = [np.zeros(1, dtype=np.int64) for _ in range(rows)]
        self.vs = [np.full(1, -1, dtype=np.int64) for _ in range(rows)]
        self.buffer = np.empty(self.batch, dtype=np.int64)  # the tensors placed since the fold
        self.pending = 0
        self.chosen: tuple[int, np.ndarray] | None = None  # (threshold, pending ids at or above)

    def add(self, q: int, offsets: np.ndarray, size: np.ndarray) -> None:
        self.buffer[self.pending] = q
        self.pending += 1
        self.chosen = None
        if self.pending >= self.batch:
            self._fold(offsets, size)

    def _fold(self, offsets: np.ndarray, size: np.ndarray) -> None:
        ids = self.buffer[:self.pending].copy()
        value = self.key[ids]
        for r in range(len(self.xs)):
            lo, hi = offsets[r, ids], offsets[r, ids] + size[ids]
            xs = np.union1d(self.xs[r], np.concatenate((lo, hi)))
            vs = self.vs[r][np.searchsorted(self.xs[r], xs, side="right") - 1]
            owner, at = expand_ranges(np.searchsorted(xs, lo), np.searchsorted(xs, hi))
            np.maximum.at(vs, at, value[owner])
            keep = np.ones(len(xs), dtype=bool)
            keep[1:] = vs[1:] != vs[:-1]
            self.xs[r], self.vs[r] = xs[keep], vs[keep]
        self.pending = 0

    def blocked(self, r: int, threshold: int, offsets: np.ndarray, size: np.ndarray,
                starts: list[np.ndarray], ends: list[np.ndarray]) -> None:
        """Append to ``starts`` / ``ends`` the byte ranges of fit ``r`` covered by a tensor with
        key ``>= threshold`` (in pieces: the caller concatenates once)."""
        xs, vs = self.xs[r], self.vs[r]
        mask = vs[:-1] >= threshold  # the last piece runs to infinity and is always free
        starts.append(xs[:-1][mask])
        ends.append(xs[1:][mask])
        if self.pending:
            chosen = self.chosen  # the same for every fit of a step: chosen once
            if chosen is None or chosen[0] != threshold:
                ids = self.buffer[:self.pending]
                chosen = self.chosen = (threshold, ids[self.key[ids] >= threshold])
            lo = offsets[r, chosen[1]]
            starts.append(lo)
            ends.append(lo + size[chosen[1]])


class _Siblings:
    """The placed non-tail tensors of each birth, in placement order: a growable array per
    birth, so that a step reads its siblings as one slice.  Amortised O(1) an insertion."""

    def __init__(self) -> None:
        self.ids: dict[int, np.ndarray] = {}
        self.count: dict[int, int] = {}

    def of(self, birth: int) -> np.ndarray:
        k = self.count.get(birth, 0)
        return self.ids[birth][:k] if k else _NONE

    def add(self, birth: int, q: int) -> None:
        k = self.count.get(birth, 0)
        ids = self.ids.get(birth)
        if ids is None or k == len(ids):
            grown = np.empty(max(4, 2 * k), dtype=np.int64)
            if ids is not None:
                grown[:k] = ids
            self.ids[birth] = ids = grown
        ids[k] = q
        self.count[birth] = k + 1


_NONE = np.zeros(0, dtype=np.int64)


def _choose(fits: Sequence[str], starts: np.ndarray, top: np.ndarray, size: int) -> list[int]:
    """Per row (one fit each), the offset that row's fit gives a tensor of ``size`` bytes among
    blocked ranges sorted by start (``starts``, rows x width) with running tops ``top``: the
    gaps are ``starts[j] - top[j - 1]`` (from 0 for ``j = 0``), one array of gap minus size for
    every row (a gap holds the tensor where it is >= 0; :func:`_choose_row` picks)."""
    spare = _spare(starts, top, size)
    return [_choose_row(fit, spare[r], top[r]) for r, fit in enumerate(fits)]


def _spare(starts: np.ndarray, top: np.ndarray, size: int) -> np.ndarray:
    """Each gap (``starts[..., j] - top[..., j - 1]``, from 0 for ``j = 0``) minus ``size``,
    along the last axis: one row or one per fit."""
    spare = starts - size
    spare[..., 1:] -= top[..., :-1]
    return spare


def _choose_row(fit: str, spare: np.ndarray, top: np.ndarray) -> int:
    """The offset ``fit`` picks from one row's gap-minus-size ``spare`` and tops ``top``: best
    takes the smallest gap that holds the tensor, first the lowest, worst the largest, highest
    the highest (ties: lowest offset); with none, the tensor goes on top of everything.  Best is
    the argmin of ``spare`` read as unsigned (a negative reads as a huge value), worst its plain
    argmax (the largest gap, when it holds the tensor): one reduction and no masked copy (it was
    a masked copy and a call a row: SOMAS serial random 30k -4%)."""
    if fit == "best":
        j = int(spare.view(np.uint64).argmin())
    elif fit == "worst":
        j = int(spare.argmax())
    elif fit == "first":
        j = int((spare >= 0).argmax())
    else:
        j = len(spare) - 1 - int((spare[::-1] >= 0).argmax())
    if spare[j] < 0:
        return int(top[-1])
    return int(top[j - 1]) if j else 0


def _fit_one(fit: str, starts: np.ndarray, ends: np.ndarray, size: int) -> int:
    """The offset ``fit`` gives a tensor of ``size`` bytes among unsorted blocked byte ranges."""
    if not len(starts):
        return 0
    o = starts.argsort(kind="stable")
    starts, top = starts[o], np.maximum.accumulate(ends[o])
    return _choose_row(fit, _spare(starts, top, size), top)


def _earlier_partners(graph: ConflictGraph, size: np.ndarray,
                      order: Sequence[int]) -> tuple[list[int], np.ndarray]:
    """The CSR restricted to non-empty partners that come earlier in ``order`` (the ones placed
    when a tensor's turn comes).  O(P)."""
    rank = np.empty(graph.n, dtype=np.int32)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(graph.n, dtype=np.int32)
    keep = rank[graph.idx] < np.repeat(rank, np.diff(graph.ptr))
    if (size <= 0).any():  # (one pass over the pairs fewer when every tensor has bytes)
        keep &= (size > 0)[graph.idx]
    seen = np.zeros(len(keep) + 1, dtype=np.int64 if len(keep) >= 1 << 31 else np.int32)
    np.cumsum(keep, out=seen[1:])
    return seen[graph.ptr].tolist(), graph.idx[keep]


class _Rows:
    """The per-fit state of one pass (offsets, walls, tails' step functions), row by row, so that
    rows can be dropped when their fit stops."""

    def __init__(self, graph: ConflictGraph, fits: Sequence[str]) -> None:
        rows = len(fits)
        self.ids = list(range(rows))  # original row of each remaining row
        self.fits = list(fits)
        self.span = np.zeros((2, rows, graph.n), dtype=np.int64)  # start and end of every tensor
        self.walls = _Walls(rows, union=not graph.tail_key_complete)
        self.latest = _Latest(rows, graph.tail_key) if graph.tails.any() else None
        self.base = np.arange(rows, dtype=np.int64)[:, None]
        self.top = [0] * rows  # highest end placed so far

    def drop(self, keep: list[int]) -> None:
        self.ids = [self.ids[k] for k in keep]
        self.fits = [self.fits[k] for k in keep]
        self.span = self.span[:, keep]
        self.walls.drop(keep)
        if self.latest is not None:
            self.latest.xs = [self.latest.xs[k] for k in keep]
            self.latest.vs = [self.latest.vs[k] for k in keep]
        self.base = np.arange(len(keep), dtype=np.int64)[:, None]
        self.top = [self.top[k] for k in keep]


def place(graph: ConflictGraph, sizes: Sequence[int] | np.ndarray, order: Sequence[int],
          fits: Sequence[str]) -> np.ndarray:
    """Offsets (one row per fit, one column per tensor) of placing ``order`` greedily.

    ``sizes`` are the (aligned) byte sizes; ``order`` must list every tensor once.  Deterministic.
    """
    return place_until(graph, sizes, order, fits)[0]


def place_until(graph: ConflictGraph, sizes: Sequence[int] | np.ndarray, order: Sequence[int],
                fits: Sequence[str], stop_at: int | None = None, *, engine: str = "auto",
                watch: Watch | None = None) -> tuple[np.ndarray, list[int | None]]:
    """:func:`place`, but a fit stops as soon as its arena reaches ``stop_at`` bytes.

    Returns the offsets and, per fit, ``None`` when it placed every tensor, else the arena it had
    reached when it stopped (then its offsets are incomplete).  Stopped fits cost nothing further.
    ``engine``: ``"numpy"`` (the loop below), ``"kernel"`` (the same placement compiled,
    :mod:`workbench.memory.placement_kernel`) or ``"auto"`` (the kernel from
    :data:`KERNEL_MIN_TENSORS` tensors when Numba imports, else NumPy); the offsets are equal.
    ``watch`` (:mod:`workbench.memory.watch`) is told the steps done and looked at every
    :data:`~workbench.memory.watch.CHECK_EVERY` of them: past its deadline the pass raises
    :class:`~workbench.memory.watch.PlacementCut`.
    """
    for fit in fits:
        if fit not in FIT_NAMES:
            raise ValueError(f"unknown fit {fit!r} (known: {', '.join(FIT_NAMES)})")
    if engine not in ENGINES:
        raise ValueError(f"unknown placement engine {engine!r} (known: {', '.join(ENGINES)})")
    size = np.asarray(sizes, dtype=np.int64)
    if engine == "kernel" or (engine == "auto" and graph.n >= KERNEL_MIN_TENSORS
                              and kernel() is not None):
        return place_compiled(graph, size, order, fits, stop_at, watch)
    out = np.zeros((len(fits), graph.n), dtype=np.int64)
    stopped: list[int | None] = [None] * len(fits)
    births, tails = graph.births.tolist(), graph.tails.tolist()
    complete = graph.tail_key_complete
    ptr, idx = _earlier_partners(graph, size, order)
    state = _Rows(graph, fits)
    siblings = _Siblings()
    sizes_list = size.tolist()
    for step, q in enumerate(order):
        if watch is not None and step and step % CHECK_EVERY == 0:
            watch.reached(step)
            if watch.expired():
                raise PlacementCut(step, len(order))
        s = sizes_list[q]
        if s == 0:
            continue
        bq = births[q]
        nb = idx[ptr[q]:ptr[q + 1]]
        if not tails[q]:  # a tail's siblings are placed tensors whose key reaches its birth
            near = siblings.of(bq)
            if len(near):
                nb = np.concatenate((nb, near))
            siblings.add(bq, q)
        span_of, walls, latest = state.span, state.walls, state.latest
        offsets = span_of[0]
        column = [0] * len(state.ids)
        if tails[q]:
            assert latest is not None
            for r, fit in enumerate(state.fits):
                starts_of: list[np.ndarray] = []
                ends_of: list[np.ndarray] = []
                latest.blocked(r, bq, offsets, size, starts_of, ends_of)
                if not complete:
                    wall_starts, wall_ends = walls.all_rows(r)
                    starts_of += (wall_starts, offsets[r, nb])
                    ends_of += (wall_ends, span_of[1, r, nb])
                column[r] = _fit_one(fit, np.concatenate(starts_of), np.concatenate(ends_of), s)
        else:
            ws = walls.up_to(bq)
            if len(nb):
                span = span_of[:, :, nb]
                if ws.shape[2]:
                    span = np.concatenate((ws, span), axis=2)
                width = span.shape[2]
                o = span[0].argsort(axis=1, kind="stable")
                if len(o) > 1:  # flat indices of each row's order (one row: already flat)
                    o += state.base * width
                span = span.reshape(2, -1).take(o, axis=1)
                starts, top = span[0], np.maximum.accumulate(span[1], axis=1)
            elif ws.shape[2]:
                width = ws.shape[2]
                starts, top = ws[0], ws[1]  # disjoint sorted walls: their running top is their end
            else:
                width = 0
            if width:
                column = _choose(state.fits, starts, top, s)
        ends = [c + s for c in column]
        span_of[:, :, q] = (column, ends)
        if tails[q]:
            walls.add(span_of[0, :, q], s, bq)
        if latest is not None and (complete or not tails[q]):
            latest.add(q, offsets, size)  # (else a tail is a wall, which every tail reads)
        tops = state.top = list(map(max, state.top, ends))
        if stop_at is not None and max(tops) >= stop_at:
            keep = [k for k, t in enumerate(tops) if t < stop_at]
            for k, t in enumerate(tops):
                if t >= stop_at:
                    stopped[state.ids[k]] = t
                    out[state.ids[k]] = span_of[0, k]
            if not keep:
                return out, stopped
            state.drop(keep)
    for k, row in enumerate(state.ids):
        out[row] = state.span[0, k]
    return out, stopped
