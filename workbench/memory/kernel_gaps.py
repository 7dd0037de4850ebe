"""How one step of the compiled placement (:mod:`.placement_kernel`) picks its gap.

Every function here sees the byte ranges a tensor must avoid, sorted by start, and returns the
offset a fit takes: :func:`see` is one range of the merged scan that first fit (and a tail's
best and worst fit) runs from the bottom up; :func:`scan_down` and :func:`tail_scan_down` read
the ranges from the top down for highest fit and stop at the first gap that holds the tensor;
:func:`wall_gaps`, :func:`scan_all` and :func:`best_gap` give best and worst fit every gap
with masks and SIMD instead of branches.  All of them give the offset the merged scan would:
``tests/test_placement_kernel.py`` holds the kernel to the NumPy loop.

Numba's on-disk cache keys each compiled function on its own file: the kernel inlines these,
so after editing this module touch ``placement_kernel.py`` (or clear its ``__pycache__``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from workbench.memory.kernel_ranges import upper_from

BEST, FIRST, WORST, HIGHEST = 0, 1, 2, 3
BIG = np.iinfo(np.int64).max
_COVERED = -2  # a counted wall that starts below a partner's end: no gap below it
GAP_BLOCK = 256  # gaps reduced per block (vectorised) before the block that won is searched


@njit(cache=True, nogil=True)
def see(fit: int, start: int, end: int, size: int, top: int, chosen: int, spare_of_chosen: int
        ) -> tuple[int, int, int, bool]:
    """One blocked range of a step's scan, seen in start order: the new running top, the
    gap chosen so far (its offset, -1 for none) and its spare bytes, and whether the fit is
    decided (first takes the lowest gap that holds the tensor)."""
    spare = start - top - size
    done = False
    if spare >= 0:
        if fit == FIRST:
            chosen, done = top, True
        elif fit == HIGHEST:
            chosen = top
        elif fit == BEST:
            if chosen < 0 or spare < spare_of_chosen:
                chosen, spare_of_chosen = top, spare
        elif chosen < 0 or spare > spare_of_chosen:  # worst
            chosen, spare_of_chosen = top, spare
    if end > top:
        top = end
    return top, chosen, spare_of_chosen, done


@njit(cache=True, nogil=True)
def scan_down(ws: np.ndarray, we: np.ndarray, wb: np.ndarray, nwalls: int, born: int,
              ps: np.ndarray, pe: np.ndarray, k: int, size: int) -> int:
    """Highest fit's offset: the walls born no later than ``born`` and the ``k`` disjoint
    partners merged by start (walls first on ties) and read from the top down, stopping at the
    first gap that holds ``size`` (the last one :func:`see` would take in order).  Below an
    item lie the counted wall and the partner just before it, the highest ends before it
    (both lists are disjoint and sorted).  O(w + k) at worst, usually a few walls."""
    i, j = nwalls - 1, k - 1
    while i >= 0 and wb[i] > born:
        i -= 1
    above_all = max(we[i] if i >= 0 else 0, pe[j] if j >= 0 else 0)  # where no gap holds it
    while i >= 0 or j >= 0:
        if j >= 0 and (i < 0 or ps[j] >= ws[i]):  # a partner after a wall of its start
            start = ps[j]
            j -= 1
        else:
            start = ws[i]
            i -= 1
            while i >= 0 and wb[i] > born:
                i -= 1
        top = max(we[i] if i >= 0 else 0, pe[j] if j >= 0 else 0)
        if start - top >= size:
            return top
    return above_all


@njit(cache=True, nogil=True)
def tail_scan_down(xr: np.ndarray, vr: np.ndarray, npieces: int, born: int, us: np.ndarray,
                   ue: np.ndarray, nw: int, ps: np.ndarray, pe: np.ndarray, k: int, size: int
                   ) -> int:
    """:func:`scan_down` for a tail: three disjoint sorted lists, the pieces of the tails'
    step function whose key reaches ``born`` (piece ``a`` is ``xr[a]..xr[a + 1]``), the ``nw``
    blocks of the walls' union and the ``k`` partners, read from the top down."""
    a, i, j = npieces - 1, nw - 1, k - 1
    while a >= 0 and vr[a] < born:
        a -= 1
    above_all = max(xr[a + 1] if a >= 0 else 0, ue[i] if i >= 0 else 0, pe[j] if j >= 0 else 0)
    while a >= 0 or i >= 0 or j >= 0:
        start, src = -1, -1  # the highest start; on ties the one later in merged order
        if j >= 0:
            start, src = ps[j], 2
        if i >= 0 and us[i] > start:
            start, src = us[i], 1
        if a >= 0 and xr[a] > start:
            start, src = xr[a], 0
        if src == 2:
            j -= 1
        elif src == 1:
            i -= 1
        else:
            a -= 1
            while a >= 0 and vr[a] < born:
                a -= 1
        top = max(xr[a + 1] if a >= 0 else 0, ue[i] if i >= 0 else 0, pe[j] if j >= 0 else 0)
        if start - top >= size:
            return top
    return above_all


@njit(cache=True, nogil=True)
def wall_gaps(ws: np.ndarray, we: np.ndarray, wb: np.ndarray, n: int, born: int,
              gaps: np.ndarray, below: np.ndarray) -> None:
    """Per wall ``i`` (sorted by offset, disjoint), ``below[i]``: the end of the last wall below
    it born no later than ``born`` (0 when none is; ``below[n]`` past the last), and
    ``gaps[i]``: the bytes from there to the wall, or -1 when the wall is born later itself.
    Masks, not branches: the only chain is the last end, about 0.7 ns a wall where a branchy
    merged scan paid 2-3 ns (half the walls pass, at random)."""
    last = 0
    for i in range(n):
        keep = -np.int64(wb[i] <= born)  # all ones when the wall counts, else 0
        gaps[i] = ((ws[i] - last) & keep) | ~keep
        below[i] = last
        last = (we[i] & keep) | (last & ~keep)
    below[n] = last


@njit(cache=True, nogil=True)
def scan_all(fit: int, ws: np.ndarray, gaps: np.ndarray, below: np.ndarray, nwalls: int,
             ps: np.ndarray, pe: np.ndarray, k: int, size: int) -> int:
    """The offset that ``fit`` (best or worst: each sees every gap) takes among the counted
    walls (:func:`wall_gaps`) and the ``k`` partners sorted by start: what :func:`see` over
    them merged by start (walls first on ties) gives, in O(w + k log w).

    A wall's gap is cut short only by the highest partner end before it, and only the first
    counted wall at or above that end feels it (later ones sit above that wall's end), so
    each partner walks the walls from where it ends until the first one above its reach:
    the walls are walked once in all.  The gaps left are then reduced without a branch
    (:func:`best_gap`).  Gaps in merged order sit at rising offsets, so "the first of
    equals" is "the lowest"."""
    chosen, spare_of_chosen = -1, 0
    reach, b, walked = 0, 0, 0  # the highest partner end so far
    for j in range(k):
        b = upper_from(ws, b, nwalls, ps[j])  # walls b: come after partner j
        top = max(reach, below[b])
        chosen, spare_of_chosen = _take(fit, top, ps[j] - top - size, chosen, spare_of_chosen)
        if pe[j] > reach:
            reach = pe[j]
        i = max(b, walked)
        while i < nwalls and ws[i] < reach:
            if gaps[i] != -1:
                gaps[i] = _COVERED
            i += 1
        while i < nwalls and gaps[i] == -1:
            i += 1
        if i < nwalls and ws[i] - reach < gaps[i]:
            gaps[i] = ws[i] - reach
        walked = i
    at, gap = best_gap(fit, gaps, nwalls, size)
    if at >= 0:
        chosen, _ = _take(fit, ws[at] - gap, gap - size, chosen, spare_of_chosen)
    return chosen if chosen >= 0 else max(reach, below[nwalls])


@njit(cache=True, nogil=True)
def _take(fit: int, offset: int, spare: int, chosen: int, spare_of_chosen: int
          ) -> tuple[int, int]:
    """The gap best or worst fit keeps between the one chosen so far and a gap at ``offset``
    with ``spare`` bytes over (none when negative): the smaller (larger) spare, the lower
    offset of equals, as :func:`see` in merged order would."""
    if spare < 0:
        return chosen, spare_of_chosen
    if (chosen < 0
            or (fit == BEST and (spare < spare_of_chosen
                                 or (spare == spare_of_chosen and offset < chosen)))
            or (fit == WORST and (spare > spare_of_chosen
                                  or (spare == spare_of_chosen and offset < chosen)))):
        return offset, spare
    return chosen, spare_of_chosen


@njit(cache=True, nogil=True)
def best_gap(fit: int, gaps: np.ndarray, n: int, size: int) -> tuple[int, int]:
    """The gap in ``gaps[:n]`` that holds ``size`` and that ``fit`` takes, as (index, gap),
    (-1, 0) when none holds it: the smallest (best) or largest (worst), the lowest of equals,
    as :func:`see` in order would.  Each block of :data:`GAP_BLOCK` is reduced without a
    branch (SIMD: 0.1 ns a gap), then the block that won is searched.  The loops index block
    views from 0: an index Numba cannot prove non-negative gets a wraparound test that stops
    LLVM vectorising (0.5 ns a gap)."""
    won, block = -1, -1
    for b0 in range(0, n, GAP_BLOCK):
        part = gaps[b0:min(n, b0 + GAP_BLOCK)]
        if fit == BEST:
            m = BIG
            for t in range(len(part)):
                v = part[t]
                v = v if v >= size else BIG
                m = min(m, v)
            if m < BIG and (block < 0 or m < won):
                won, block = m, b0
        else:
            m = -1
            for t in range(len(part)):
                v = part[t]
                m = max(m, v)
            if m >= size and (block < 0 or m > won):
                won, block = m, b0
    if block < 0:
        return -1, 0
    for t in range(block, min(n, block + GAP_BLOCK)):
        if gaps[t] == won:
            return t, won
    return -1, 0
