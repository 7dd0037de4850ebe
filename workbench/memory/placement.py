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
computed in one vectorised pass.  Conflicting tensors come from a :class:`ConflictGraph`: its CSR
row, the *walls* (placed tails born no later than the tensor, kept sorted by offset per fit) and,
for a tail, every placed tensor born at or after it.

A zero-byte tensor occupies no bytes: it is placed at offset 0 and never shapes another tensor's
gaps.  Complexity per step: O(d + w + log n) for d placed CSR partners and w placed walls (numpy),
plus O(n) for a tail (its later-born partners); O(n · (d + w)) per order.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Sequence

import numpy as np

from workbench.memory.conflicts import ConflictGraph, expand_ranges

FIT_NAMES: tuple[str, ...] = ("best", "first", "worst", "highest")
_BIG = np.iinfo(np.int64).max
_EMPTY = np.zeros((0, 0), dtype=np.int64)
FOLD_BATCH = 256  # placements between two folds of the tails' step functions


class _Walls:
    """Placed tails of one order, one row per fit, each row sorted by offset (tails are pairwise
    disjoint, so every row holds the same tensors in its own offset order).  ``span[0]`` holds
    the start offsets and ``span[1]`` the end offsets (shape 2 x fits x walls)."""

    def __init__(self, rows: int) -> None:
        self.span = np.zeros((2, rows, 0), dtype=np.int64)
        self.birth = np.zeros((rows, 0), dtype=np.int64)
        self.births: list[int] = []  # sorted births of the placed walls

    def add(self, offsets: np.ndarray, size: int, birth: int) -> None:
        _, rows, m = self.span.shape
        span = np.empty((2, rows, m + 1), dtype=np.int64)
        born = np.empty((rows, m + 1), dtype=np.int64)
        for r in range(rows):
            p = int(np.searchsorted(self.span[0, r], offsets[r]))
            span[:, r, :p] = self.span[:, r, :p]
            span[:, r, p] = (offsets[r], offsets[r] + size)
            span[:, r, p + 1:] = self.span[:, r, p:]
            born[r, :p] = self.birth[r, :p]
            born[r, p] = birth
            born[r, p + 1:] = self.birth[r, p:]
        self.span, self.birth = span, born
        insort(self.births, birth)

    def up_to(self, birth: int) -> np.ndarray:
        """Spans of the walls born at or before ``birth`` (2 x fits x k), rows sorted by offset."""
        _, rows, m = self.span.shape
        k = bisect_right(self.births, birth)
        if k == m:
            return self.span
        if k == 0:
            return self.span[:, :, :0]
        keep = np.flatnonzero(self.birth.ravel() <= birth)
        return self.span.reshape(2, -1).take(keep, axis=1).reshape(2, rows, k)


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
        self.pending: list[int] = []

    def add(self, q: int, offsets: np.ndarray, size: np.ndarray) -> None:
        self.pending.append(q)
        if len(self.pending) >= self.batch:
            self._fold(offsets, size)

    def _fold(self, offsets: np.ndarray, size: np.ndarray) -> None:
        ids = np.array(self.pending, dtype=np.int64)
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
        self.pending.clear()

    def blocked(self, r: int, threshold: int, offsets: np.ndarray,
                size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Byte ranges of fit ``r`` covered by a tensor with key ``>= threshold``."""
        xs, vs = self.xs[r], self.vs[r]
        mask = vs[:-1] >= threshold  # the last piece runs to infinity and is always free
        starts, ends = [xs[:-1][mask]], [xs[1:][mask]]
        if self.pending:
            ids = np.array(self.pending, dtype=np.int64)
            ids = ids[self.key[ids] >= threshold]
            starts.append(offsets[r, ids])
            ends.append(offsets[r, ids] + size[ids])
        return np.concatenate(starts), np.concatenate(ends)


def _pick(fit: str, ok: np.ndarray, gap: np.ndarray) -> int:
    """Index of the gap ``fit`` chooses among the gaps flagged ``ok`` (-1 if none)."""
    if fit == "first":
        j = int(ok.argmax())
    elif fit == "best":
        j = int(np.where(ok, gap, _BIG).argmin())
    elif fit == "worst":
        j = int(np.where(ok, gap, -1).argmax())
    else:  # highest
        j = len(ok) - 1 - int(ok[::-1].argmax())
    return j if ok[j] else -1


def _fit_one(fit: str, starts: np.ndarray, ends: np.ndarray, size: int) -> int:
    """The offset ``fit`` gives a tensor of ``size`` bytes among unsorted blocked byte ranges."""
    if not len(starts):
        return 0
    o = starts.argsort(kind="stable")
    starts, top = starts[o], np.maximum.accumulate(ends[o])
    gap = starts.copy()
    gap[1:] -= top[:-1]
    j = _pick(fit, gap >= size, gap)
    return int(top[-1]) if j < 0 else (int(top[j - 1]) if j else 0)


def place(graph: ConflictGraph, sizes: Sequence[int] | np.ndarray, order: Sequence[int],
          fits: Sequence[str]) -> np.ndarray:
    """Offsets (one row per fit, one column per tensor) of placing ``order`` greedily.

    ``sizes`` are the (aligned) byte sizes; ``order`` must list every tensor once.  Deterministic.
    """
    for fit in fits:
        if fit not in FIT_NAMES:
            raise ValueError(f"unknown fit {fit!r} (known: {', '.join(FIT_NAMES)})")
    size = np.asarray(sizes, dtype=np.int64)
    n, rows = graph.n, len(fits)
    offsets = np.zeros((rows, n), dtype=np.int64)
    placed = np.zeros(n, dtype=bool)
    births, tails, ptr, idx = (graph.births.tolist(), graph.tails.tolist(), graph.ptr.tolist(),
                               graph.idx)
    row_base = np.arange(rows, dtype=np.int64)[:, None]
    walls = _Walls(rows)
    latest = _Latest(rows, graph.tail_key) if graph.tails.any() else None
    fit_rows = list(enumerate(fits))
    column = np.empty(rows, dtype=np.int64)
    for q in order:
        s = int(size[q])
        if s == 0:
            continue
        bq = births[q]
        if tails[q]:
            assert latest is not None
            nb = idx[ptr[q]:ptr[q + 1]]
            nb = nb[placed[nb]]
            for r, fit in fit_rows:
                starts, ends = latest.blocked(r, bq, offsets, size)
                if not graph.tail_key_complete:
                    starts = np.concatenate((starts, walls.span[0, r], offsets[r, nb]))
                    ends = np.concatenate((ends, walls.span[1, r], offsets[r, nb] + size[nb]))
                column[r] = _fit_one(fit, starts, ends, s)
            walls.add(column, s, bq)
        else:
            ws = walls.up_to(bq)
            nb = idx[ptr[q]:ptr[q + 1]]
            nb = nb[placed[nb]]
            if len(nb):
                span = np.empty((2, rows, len(nb)), dtype=np.int64)
                span[0] = offsets[:, nb]
                span[1] = span[0] + size[nb]
                if ws.shape[2]:
                    span = np.concatenate((ws, span), axis=2)
                o = span[0].argsort(axis=1, kind="stable")
                o += row_base * span.shape[2]
                span = span.reshape(2, -1).take(o, axis=1)
                starts, top = span[0], np.maximum.accumulate(span[1], axis=1)
            elif ws.shape[2]:
                starts, top = ws[0], ws[1]  # disjoint sorted walls: their running top is their end
            else:
                column[:] = 0
                starts = top = _EMPTY
            if len(top):
                gap = starts.copy()
                gap[:, 1:] -= top[:, :-1]
                ok = gap >= s
                for r, fit in fit_rows:
                    j = _pick(fit, ok[r], gap[r])
                    column[r] = top[r, -1] if j < 0 else (top[r, j - 1] if j else 0)
        offsets[:, q] = column
        placed[q] = True
        if latest is not None:
            latest.add(q, offsets, size)
    return offsets
