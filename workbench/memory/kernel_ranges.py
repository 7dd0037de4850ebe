"""Buffers, sorts and searches for the compiled placement (:mod:`.placement_kernel`).

Numba functions: growable buffers, and over ``(start, end)`` pairs kept in two arrays, sorts
by start that stay O(k) for spread starts, binary and chunked searches, the merging of sorted
ranges that overlap or touch, and the sorted disjoint blocks a tail reads (:func:`add_block`).
Plain loops, not NumPy calls: each NumPy call compiled adds seconds to the kernel's first use.

Numba's on-disk cache keys each compiled function on its own file: the kernel inlines these,
so after editing this module touch ``placement_kernel.py`` (or clear its ``__pycache__``), or
the cached kernel keeps the old code (``benchmarks/mutate.py`` gives each run a fresh cache).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def sort_by_start(starts: np.ndarray, ends: np.ndarray, k: int, scratch: np.ndarray,
                  counts: np.ndarray, stack: np.ndarray) -> None:
    """Sort the first ``k`` ranges by start, in place.  Up to 16: insertion sort.  Else one
    bucket pass (about one bucket a range, over the starts' span by their high bits) and an
    insertion sort inside each bucket, or a quicksort (``stack`` its stack) for a bucket of
    more than 32 (starts bunched up).  Sorting the partners as pairs by a general sort took
    half the placement's time; this is O(k) for spread starts, O(k log k) at worst."""
    if k <= 16:
        insertion_sort(starts, ends, 0, k)
        return
    lo, hi = starts[0], starts[0]
    for i in range(1, k):
        if starts[i] < lo:
            lo = starts[i]
        elif starts[i] > hi:
            hi = starts[i]
    bucket_bits = 0
    while (1 << bucket_bits) < k:
        bucket_bits += 1
    buckets = 1 << bucket_bits
    span_bits = 0  # start - lo < 2 ** span_bits
    while span_bits < 63 and (hi - lo) >> span_bits:
        span_bits += 1
    shift = span_bits - bucket_bits if span_bits > bucket_bits else 0  # (start - lo) >> shift
    counts[:buckets + 1] = 0
    for i in range(k):
        counts[((starts[i] - lo) >> shift) + 1] += 1
    for b in range(buckets):
        counts[b + 1] += counts[b]
    for i in range(k):  # scatter into the scratch by bucket (stable), then back
        b = (starts[i] - lo) >> shift
        at = counts[b]
        scratch[at], scratch[k + at] = starts[i], ends[i]
        counts[b] = at + 1
    for i in range(k):
        starts[i], ends[i] = scratch[i], scratch[k + i]
    first = 0
    for b in range(buckets):  # counts[b] is now where bucket b ends
        if counts[b] - first > 32:  # bunched starts: this bucket by quicksort
            quick_sort(starts[first:], ends[first:], counts[b] - first, stack)
        elif counts[b] - first > 1:
            insertion_sort(starts, ends, first, counts[b])
        first = counts[b]


@njit(cache=True, nogil=True)
def quick_sort(starts: np.ndarray, ends: np.ndarray, k: int, stack: np.ndarray) -> None:
    """Sort the first ``k`` ranges by start in place: quicksort of the pairs (median of three,
    the smaller side first so that ``stack`` needs 2 log2 k slots, insertion sort below 17)."""
    depth = 0
    lo, hi = 0, k - 1
    while True:
        while hi - lo >= 16:
            mid = (lo + hi) >> 1
            if starts[mid] < starts[lo]:
                _swap(starts, ends, mid, lo)
            if starts[hi] < starts[lo]:
                _swap(starts, ends, hi, lo)
            if starts[hi] < starts[mid]:
                _swap(starts, ends, hi, mid)
            pivot = starts[mid]
            i, j = lo, hi
            while i <= j:
                while starts[i] < pivot:
                    i += 1
                while starts[j] > pivot:
                    j -= 1
                if i <= j:
                    _swap(starts, ends, i, j)
                    i += 1
                    j -= 1
            if j - lo < hi - i:  # recurse into the smaller side: push the larger one
                stack[depth], stack[depth + 1] = i, hi
                hi = j
            else:
                stack[depth], stack[depth + 1] = lo, j
                lo = i
            depth += 2
        insertion_sort(starts, ends, lo, hi + 1)
        if depth == 0:
            return
        depth -= 2
        lo, hi = stack[depth], stack[depth + 1]


@njit(cache=True, nogil=True)
def insertion_sort(starts: np.ndarray, ends: np.ndarray, lo: int, hi: int) -> None:
    """Sort ranges ``lo:hi`` by start in place (pairs moved together)."""
    for i in range(lo + 1, hi):
        s, e = starts[i], ends[i]
        j = i - 1
        while j >= lo and starts[j] > s:
            starts[j + 1], ends[j + 1] = starts[j], ends[j]
            j -= 1
        starts[j + 1], ends[j + 1] = s, e


@njit(cache=True, nogil=True)
def _swap(starts: np.ndarray, ends: np.ndarray, i: int, j: int) -> None:
    starts[i], starts[j] = starts[j], starts[i]
    ends[i], ends[j] = ends[j], ends[i]


@njit(cache=True, nogil=True)
def lower_bound(values: np.ndarray, k: int, x: int) -> int:
    """The first index of the sorted ``values[:k]`` holding ``x`` or more (binary search)."""
    lo, hi = 0, k
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def upper_from(values: np.ndarray, lo: int, hi: int, x: int) -> int:
    """The first index in ``lo:hi`` of the sorted ``values`` holding more than ``x``: forward
    from ``lo`` 16 at a time, then the last 16 counted without a branch (the partners walk up
    the walls some 50 at a time; a galloping search paid a mispredicted branch a step)."""
    while lo + 16 <= hi and values[lo + 15] <= x:
        lo += 16
    part = values[lo:min(hi, lo + 16)]
    below = 0
    for t in range(len(part)):
        below += part[t] <= x
    return lo + below


@njit(cache=True, nogil=True)
def merge_touching(starts: np.ndarray, ends: np.ndarray, k: int) -> int:
    """Merge the first ``k`` ranges (sorted by start) that overlap or touch, in place; the
    number left.  A step's offset depends only on the union of what it avoids (its gaps are
    that union's holes), so this changes no placement, only how many ranges the scan reads."""
    m = 0
    for j in range(k):
        if m and starts[j] <= ends[m - 1]:
            if ends[j] > ends[m - 1]:
                ends[m - 1] = ends[j]
        else:
            starts[m], ends[m] = starts[j], ends[j]
            m += 1
    return m


@njit(cache=True, nogil=True)
def grow(a: np.ndarray, need: int) -> np.ndarray:
    """``a`` (rows x capacity) with room for ``need`` columns (capacity doubled)."""
    rows, cap = a.shape
    if cap >= need:
        return a
    grown = np.empty((rows, max(need, 2 * cap)), dtype=a.dtype)
    for r in range(rows):
        for j in range(cap):
            grown[r, j] = a[r, j]
    return grown


@njit(cache=True, nogil=True)
def room(a: np.ndarray, need: int) -> np.ndarray:
    """A 1-D scratch array of at least ``need`` slots (``a`` itself when it has them); its
    contents are not kept (:func:`kept_room` keeps them)."""
    return a if len(a) >= need else np.empty(2 * need, dtype=a.dtype)


@njit(cache=True, nogil=True)
def kept_room(a: np.ndarray, filled: int, need: int) -> np.ndarray:
    """``a`` with at least ``need`` slots and its first ``filled`` entries kept."""
    if len(a) >= need:
        return a
    grown = np.empty(2 * need, dtype=a.dtype)
    for i in range(filled):
        grown[i] = a[i]
    return grown


@njit(cache=True, nogil=True)
def add_block(starts: np.ndarray, ends: np.ndarray, blocks: np.ndarray, r: int, lo: int,
              hi: int) -> None:
    """Add ``[lo, hi)`` (disjoint from them) to row ``r``'s sorted disjoint blocks, merging the
    ones it touches: O(log b) when it touches one, else one O(b) shift (a stack of touching
    tails stays one block: a fan's 100,000 tails read as one range, not 100,000)."""
    b = blocks[r]
    p = lower_bound(starts, b, lo)
    left = p > 0 and ends[p - 1] == lo
    right = p < b and starts[p] == hi
    if left and right:
        ends[p - 1] = ends[p]
        for j in range(p, b - 1):
            starts[j], ends[j] = starts[j + 1], ends[j + 1]
        blocks[r] = b - 1
    elif left:
        ends[p - 1] = hi
    elif right:
        starts[p] = lo
    else:
        for j in range(b, p, -1):
            starts[j], ends[j] = starts[j - 1], ends[j - 1]
        starts[p], ends[p] = lo, hi
        blocks[r] = b + 1
