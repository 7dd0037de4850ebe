"""The greedy offset placement of :mod:`workbench.memory.placement`, compiled (Numba).

The same placement, step for step, as :func:`workbench.memory.placement.place_until`'s NumPy form
(which stays the reference: ``tests/test_placement_kernel.py`` asserts equal offsets): a tensor's
offset depends only on the *union* of the byte ranges it must avoid, and both forms block the same
union (its CSR partners placed earlier, its placed siblings, the placed tails born no later; for a
tail, every placed tensor whose ``tail_key`` reaches its birth, plus, when that key is not
complete, every placed tail and its CSR partners).  What changes is the cost of a step: the NumPy
form pays ~10 array calls a step and ~30 ns a wall a fit, which a wide random DAG turns into most
of SOMAS (the walls grow with the graph: 1,143 a step at 100k serial ops).  Here a step streams
the walls (kept sorted by offset per fit, new ones merged in when a non-tail next reads them) and
its sorted partners once per fit, picking the fit's gap on the way, with no allocation.

Imported on first use (Numba's import and its cached machine code cost ~0.6 s once per process;
the first compile, ~8 s, is written to ``__pycache__`` and reused).  Complexity per step:
O(f · (d + w)) for f fits, d partners (sorted by buckets; O(d log d) when their offsets bunch)
and w walls; for a tail O(f · (p + b + d)) for p pieces of the tails' step function, which is
folded every :data:`FOLD_BATCH` placements, and b blocks of the walls' union.
"""

from __future__ import annotations

import numpy as np
from numba import njit

BEST, FIRST, WORST, HIGHEST = 0, 1, 2, 3
FIT_CODES = {"best": BEST, "first": FIRST, "worst": WORST, "highest": HIGHEST}
FOLD_BATCH = 256
_BIG = np.iinfo(np.int64).max


@njit(cache=True, nogil=True)
def _see(fit: int, start: int, end: int, size: int, top: int, chosen: int, spare_of_chosen: int
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
def _grow(a: np.ndarray, need: int) -> np.ndarray:
    """``a`` (rows x capacity) with room for ``need`` columns (capacity doubled).  Plain loops
    here and below, not NumPy calls: each NumPy call compiled adds seconds to the first use."""
    rows, cap = a.shape
    if cap >= need:
        return a
    grown = np.empty((rows, max(need, 2 * cap)), dtype=a.dtype)
    for r in range(rows):
        for j in range(cap):
            grown[r, j] = a[r, j]
    return grown


@njit(cache=True, nogil=True)
def _quick_sort(starts: np.ndarray, ends: np.ndarray, k: int, stack: np.ndarray) -> None:
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
        _insertion_sort(starts, ends, lo, hi + 1)
        if depth == 0:
            return
        depth -= 2
        lo, hi = stack[depth], stack[depth + 1]


@njit(cache=True, nogil=True)
def _swap(starts: np.ndarray, ends: np.ndarray, i: int, j: int) -> None:
    starts[i], starts[j] = starts[j], starts[i]
    ends[i], ends[j] = ends[j], ends[i]


@njit(cache=True, nogil=True)
def _lower(values: np.ndarray, k: int, x: int) -> int:
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
def _insertion_sort(starts: np.ndarray, ends: np.ndarray, lo: int, hi: int) -> None:
    """Sort ranges ``lo:hi`` by start in place (pairs moved together)."""
    for i in range(lo + 1, hi):
        s, e = starts[i], ends[i]
        j = i - 1
        while j >= lo and starts[j] > s:
            starts[j + 1], ends[j + 1] = starts[j], ends[j]
            j -= 1
        starts[j + 1], ends[j + 1] = s, e


@njit(cache=True, nogil=True)
def _sort_by_start(starts: np.ndarray, ends: np.ndarray, k: int, scratch: np.ndarray,
                   counts: np.ndarray, stack: np.ndarray) -> None:
    """Sort the first ``k`` ranges by start, in place.  Up to 16: insertion sort.  Else one
    bucket pass (about one bucket a range, over the starts' span by their high bits) and an
    insertion sort inside each bucket, or a quicksort (``stack`` its stack) for a bucket of
    more than 32 (starts bunched up).  Sorting the partners as pairs by a general sort took
    half the placement's time; this is O(k) for spread starts, O(k log k) at worst."""
    if k <= 16:
        _insertion_sort(starts, ends, 0, k)
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
            _quick_sort(starts[first:], ends[first:], counts[b] - first, stack)
        elif counts[b] - first > 1:
            _insertion_sort(starts, ends, first, counts[b])
        first = counts[b]


@njit(cache=True, nogil=True)
def _fold(xs: np.ndarray, vs: np.ndarray, pieces: np.ndarray, r: int, ids: np.ndarray, npend: int,
          off: np.ndarray, size: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fold the ``npend`` pending tensors into row ``r`` of the tails' step function (per byte,
    the largest key placed there; -1 where nothing is): the breakpoints of both, each new piece
    raised to the keys covering it, equal neighbours merged.  O(p + b log b) for p pieces and b
    pending."""
    m = pieces[r]
    ends = np.empty(2 * npend, dtype=np.int64)  # the pending tensors' ends, sorted
    for i in range(npend):
        q = ids[i]
        ends[2 * i], ends[2 * i + 1] = off[q, r], off[q, r] + size[q]
    _quick_sort(ends, np.empty(2 * npend, dtype=np.int64), 2 * npend,
                np.empty(130, dtype=np.int64))
    pts = np.empty(m + 2 * npend, dtype=np.int64)  # both sets of breakpoints merged, unique
    val = np.empty(m + 2 * npend, dtype=np.int64)  # each one's old value
    i, j, c = 0, 0, 0
    while i < m or j < 2 * npend:
        if j >= 2 * npend or (i < m and xs[r, i] <= ends[j]):
            x, i = xs[r, i], i + 1
        else:
            x, j = ends[j], j + 1
        if c and pts[c - 1] == x:
            continue
        pts[c] = x
        c += 1
    j = 0
    for t in range(c):
        while j + 1 < m and xs[r, j + 1] <= pts[t]:
            j += 1
        val[t] = vs[r, j]
    for i in range(npend):
        q = ids[i]
        kq = key[q]
        for t in range(_lower(pts, c, off[q, r]), _lower(pts, c, off[q, r] + size[q])):
            if val[t] < kq:
                val[t] = kq
    xs = _grow(xs, c)
    vs = _grow(vs, c)
    kept = 0
    for t in range(c):
        if kept == 0 or val[t] != vs[r, kept - 1]:
            xs[r, kept], vs[r, kept] = pts[t], val[t]
            kept += 1
    pieces[r] = kept
    return xs, vs


@njit(cache=True, nogil=True)
def _add_block(starts: np.ndarray, ends: np.ndarray, blocks: np.ndarray, r: int, lo: int,
               hi: int) -> None:
    """Add ``[lo, hi)`` (disjoint from them) to row ``r``'s sorted disjoint blocks, merging the
    ones it touches: O(log b) when it touches one, else one O(b) shift (a stack of touching
    tails stays one block: a fan's 100,000 tails read as one range, not 100,000)."""
    b = blocks[r]
    p = _lower(starts, b, lo)
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


@njit(cache=True, nogil=True)
def _room(a: np.ndarray, need: int) -> np.ndarray:
    """A 1-D scratch array of at least ``need`` slots (``a`` itself when it has them)."""
    return a if len(a) >= need else np.empty(2 * need, dtype=a.dtype)


@njit(cache=True, nogil=True)
def place_kernel(order: np.ndarray, size: np.ndarray, births: np.ndarray, birth_rank: np.ndarray,
                 tails: np.ndarray, key: np.ndarray, complete: bool, ptr: np.ndarray,
                 idx: np.ndarray, fits: np.ndarray, stop_at: int, out: np.ndarray,
                 stopped: np.ndarray) -> None:
    """Place ``order`` under every fit in ``fits`` (codes), writing ``out`` (fits x tensors) and
    ``stopped`` (per fit the arena it reached when it stopped at ``stop_at``, -1 when it did not;
    ``stop_at < 0``: never).  ``ptr`` / ``idx``: the relation's CSR (a step reads the partners
    placed before it); ``birth_rank``: births as dense ranks (for the siblings' lists)."""
    rows, n = len(fits), len(size)
    off = np.zeros((n, rows), dtype=np.int64)  # offsets, tensor-major (a partner's in one line)
    active = np.ones(rows, dtype=np.bool_)
    alive = rows
    top = np.zeros(rows, dtype=np.int64)
    has_tails = False
    ranks = 1
    for i in range(n):
        has_tails |= tails[i]
        ranks = max(ranks, birth_rank[i] + 1)
    # siblings: the placed non-tails of each birth, a linked list per birth rank
    head = np.full(ranks, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    # walls: placed tails, per fit sorted by offset (start, end, birth side by side); the ones
    # placed since a non-tail last read them wait in ``pend_walls`` (ids)
    w_start = np.empty((rows, 16), dtype=np.int64)
    w_end = np.empty((rows, 16), dtype=np.int64)
    w_birth = np.empty((rows, 16), dtype=np.int64)
    nwalls = 0
    # and (key not complete: a tail reads every wall) their union per fit, touching ones merged
    u_start = np.empty((rows, 16), dtype=np.int64)
    u_end = np.empty((rows, 16), dtype=np.int64)
    blocks = np.zeros(rows, dtype=np.int64)
    pend_walls = np.empty(16, dtype=np.int64)
    npend_walls = 0
    # the tails' step function per fit, and the tensors placed since its last fold
    xs = np.zeros((rows, 16), dtype=np.int64)
    vs = np.full((rows, 16), -1, dtype=np.int64)
    pieces = np.ones(rows, dtype=np.int64)
    pend_ids = np.empty(FOLD_BATCH, dtype=np.int64)
    npend = 0
    # scratch: the partners' ranges, and the pending walls sorted by offset
    starts = np.empty((rows, 64), dtype=np.int64)
    ends = np.empty((rows, 64), dtype=np.int64)
    keys, counts = np.empty(128, dtype=np.int64), np.empty(129, dtype=np.int64)
    mates = np.empty(64, dtype=np.int64)
    qstack = np.empty(130, dtype=np.int64)  # a quicksort's pending ranges (2 log2 k slots)
    placed = np.zeros(n, dtype=np.bool_)
    as_, ae = np.empty(64, dtype=np.int64), np.empty(64, dtype=np.int64)
    for q in order:
        s = size[q]
        if s == 0:
            continue
        bq = births[q]
        tail = tails[q]
        reads_partners = not tail or not complete
        if npend_walls and not tail:  # merge the pending walls into every fit's sorted walls
            need = nwalls + npend_walls
            w_start, w_end, w_birth = _grow(w_start, need), _grow(w_end, need), _grow(w_birth, need)
            as_, ae = _room(as_, need), _room(ae, need)
            keys, counts = _room(keys, 2 * need), _room(counts, 2 * need + 1)
            for r in range(rows):
                if not active[r]:
                    continue
                for j in range(npend_walls):
                    w = pend_walls[j]
                    as_[j], ae[j] = off[w, r], j
                _sort_by_start(as_, ae, npend_walls, keys, counts, qstack)  # (start, slot)
                i, j, c = nwalls - 1, npend_walls - 1, need - 1
                while j >= 0:  # merge from the top down, in place
                    if i >= 0 and w_start[r, i] > as_[j]:
                        w_start[r, c], w_end[r, c] = w_start[r, i], w_end[r, i]
                        w_birth[r, c] = w_birth[r, i]
                        i -= 1
                    else:
                        w = pend_walls[ae[j]]
                        w_start[r, c], w_end[r, c] = as_[j], as_[j] + size[w]
                        w_birth[r, c] = births[w]
                        j -= 1
                    c -= 1
            nwalls = need
            npend_walls = 0
        # the partners, once for every fit: its placed CSR partners (a tail whose key is
        # complete finds them through the step function) and, for a non-tail, its placed siblings
        mates = _room(mates, ptr[q + 1] - ptr[q] + 1)
        d = 0
        if reads_partners:
            for t in range(ptr[q], ptr[q + 1]):
                p = idx[t]
                if placed[p]:
                    mates[d] = p
                    d += 1
        if not tail:
            sib = head[birth_rank[q]]
            while sib >= 0:
                mates = _room(mates, d + 1)
                mates[d] = sib
                d += 1
                sib = nxt[sib]
        starts, ends = _grow(starts, d + FOLD_BATCH), _grow(ends, d + FOLD_BATCH)
        keys, counts = _room(keys, 2 * starts.shape[1]), _room(counts, 2 * starts.shape[1] + 1)
        for k in range(d):  # every fit's offsets of a partner lie side by side: one read each
            p = mates[k]
            for r in range(rows):
                starts[r, k] = off[p, r]
                ends[r, k] = off[p, r] + size[p]
        for r in range(rows):
            if not active[r]:
                continue
            ps, pe = starts[r], ends[r]
            k = d
            top_seen, chosen, spare, done = 0, -1, 0, False
            if tail:
                # three lists sorted by start, scanned as one: the pieces of the step function
                # at or above its birth, (key not complete) the union of the walls, and the
                # partners with the pending tensors whose key reaches the birth (sorted here)
                for j in range(npend):
                    p = pend_ids[j]
                    if key[p] >= bq:
                        ps[k], pe[k] = off[p, r], off[p, r] + size[p]
                        k += 1
                _sort_by_start(ps, pe, k, keys, counts, qstack)
                xr, vr, npieces = xs[r], vs[r], pieces[r] - 1
                ws, we = u_start[r], u_end[r]
                nw = 0 if complete else blocks[r]
                a, i, j = 0, 0, 0
                while not done:
                    while a < npieces and vr[a] < bq:
                        a += 1
                    lo, hi, src = _BIG, 0, -1
                    if a < npieces:
                        lo, hi, src = xr[a], xr[a + 1], 0
                    if i < nw and ws[i] < lo:
                        lo, hi, src = ws[i], we[i], 1
                    if j < k and ps[j] < lo:
                        lo, hi, src = ps[j], pe[j], 2
                    if src < 0:
                        break
                    if src == 0:
                        a += 1
                    elif src == 1:
                        i += 1
                    else:
                        j += 1
                    top_seen, chosen, spare, done = _see(fits[r], lo, hi, s, top_seen, chosen,
                                                         spare)
            else:
                _sort_by_start(ps, pe, k, keys, counts, qstack)
                i, j = 0, 0
                wb, ws, we = w_birth[r], w_start[r], w_end[r]
                while not done:  # the walls born no later and the sorted partners, merged
                    while i < nwalls and wb[i] > bq:
                        i += 1
                    if i < nwalls and (j >= k or ws[i] <= ps[j]):
                        lo, hi = ws[i], we[i]
                        i += 1
                    elif j < k:
                        lo, hi = ps[j], pe[j]
                        j += 1
                    else:
                        break
                    top_seen, chosen, spare, done = _see(fits[r], lo, hi, s, top_seen, chosen,
                                                         spare)
            offset = chosen if chosen >= 0 else top_seen
            off[q, r] = offset
            if offset + s > top[r]:
                top[r] = offset + s
        placed[q] = True
        if tail:
            if npend_walls == len(pend_walls):
                grown = np.empty(2 * len(pend_walls), dtype=np.int64)
                grown[:npend_walls] = pend_walls
                pend_walls = grown
            pend_walls[npend_walls] = q
            npend_walls += 1
            if not complete:
                u_start, u_end = _grow(u_start, blocks.max() + 1), _grow(u_end, blocks.max() + 1)
                for r in range(rows):
                    if active[r]:
                        _add_block(u_start[r], u_end[r], blocks, r, off[q, r], off[q, r] + s)
        else:
            nxt[q] = head[birth_rank[q]]
            head[birth_rank[q]] = q
        if has_tails and (complete or not tail):
            pend_ids[npend] = q
            npend += 1
            if npend == FOLD_BATCH:
                for r in range(rows):
                    if active[r]:
                        xs, vs = _fold(xs, vs, pieces, r, pend_ids, npend, off, size, key)
                npend = 0
        if stop_at >= 0:
            for r in range(rows):
                if active[r] and top[r] >= stop_at:
                    active[r] = False
                    stopped[r] = top[r]
                    alive -= 1
            if alive == 0:
                break
    for r in range(rows):
        for i in range(n):
            out[r, i] = off[i, r]
