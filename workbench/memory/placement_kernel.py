"""The greedy offset placement of :mod:`workbench.memory.placement`, compiled (Numba).

The same placement, step for step, as :func:`workbench.memory.placement.place_until`'s NumPy form
(which stays the reference: ``tests/test_placement_kernel.py`` asserts equal offsets): a tensor's
offset depends only on the *union* of the byte ranges it must avoid, and both forms block the same
union (its CSR partners placed earlier, its placed siblings, the placed tails born no later; for a
tail, every placed tensor whose ``tail_key`` reaches its birth, plus, when that key is not
complete, every placed tail and its CSR partners).  What changes is the cost of a step: the NumPy
form pays ~10 array calls a step and ~30 ns a wall a fit, which a wide random DAG turns into most
of SOMAS (the walls grow with the graph: 1,143 a step at 100k serial ops).  Here the walls are
kept sorted by offset per fit (tails placed since are read as partners until
:data:`WALL_BATCH` of them wait, then merged in), and a step reads them and its sorted partners
with no allocation.  First fit streams them merged and stops at the first gap that holds the
tensor; highest fit reads them (and a tail its ranges) from the top down and stops the same
way (:func:`scan_down`, :func:`tail_scan_down`).
Best and worst fit see every gap, so they take the walls' gaps first, with masks instead of
branches (:func:`wall_gaps`, ~0.7 ns a wall where the branchy merged scan paid 2-3 ns: half
the walls are born later and skipped, at random), fold the partners in (:func:`scan_all`) and
reduce the gaps with SIMD (:func:`best_gap`).  On NNC's schedule of a 100k-op random DAG that
took SOMAS's 24 placements from 84 to 46 CPU s, offsets unchanged.

Imported on first use (Numba's import and its cached machine code cost ~0.6 s once per process;
the first compile, ~8 s, is written to ``__pycache__`` and reused).  Complexity per step:
O(f · (d + w)) for f fits, d partners (sorted by buckets; O(d log d) when their offsets bunch)
and w walls; for a tail O(f · (p + b + d)) for p pieces of the tails' step function, which is
folded every :data:`FOLD_BATCH` placements, and b blocks of the walls' union.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from workbench.memory.kernel_gaps import (
    BEST,
    BIG,
    FIRST,
    HIGHEST,
    WORST,
    scan_all,
    scan_down,
    see,
    tail_scan_down,
    wall_gaps,
)
from workbench.memory.kernel_ranges import (
    add_block,
    grow,
    kept_room,
    lower_bound,
    merge_touching,
    quick_sort,
    room,
    sort_by_start,
)

FIT_CODES = {"best": BEST, "first": FIRST, "worst": WORST, "highest": HIGHEST}
FOLD_BATCH = 256
CHECK_EVERY = 1024  # steps between two looks at the watcher's stop flag (:mod:`.watch`)
WALL_BATCH = 16  # placed tails a non-tail reads as partners before they join the walls


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
    quick_sort(ends, np.empty(2 * npend, dtype=np.int64), 2 * npend,
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
        for t in range(lower_bound(pts, c, off[q, r]), lower_bound(pts, c, off[q, r] + size[q])):
            if val[t] < kq:
                val[t] = kq
    xs = grow(xs, c)
    vs = grow(vs, c)
    kept = 0
    for t in range(c):
        if kept == 0 or val[t] != vs[r, kept - 1]:
            xs[r, kept], vs[r, kept] = pts[t], val[t]
            kept += 1
    pieces[r] = kept
    return xs, vs


@njit(cache=True, nogil=True)
def place_kernel(order: np.ndarray, size: np.ndarray, births: np.ndarray, birth_rank: np.ndarray,
                 tails: np.ndarray, key: np.ndarray, complete: bool, ptr: np.ndarray,
                 idx: np.ndarray, fits: np.ndarray, stop_at: int, out: np.ndarray,
                 stopped: np.ndarray, control: np.ndarray) -> None:
    """Place ``order`` under every fit in ``fits`` (codes), writing ``out`` (fits x tensors) and
    ``stopped`` (per fit the arena it reached when it stopped at ``stop_at``, -1 when it did not;
    ``stop_at < 0``: never).  ``ptr`` / ``idx``: the relation's CSR (a step reads the partners
    placed before it); ``birth_rank``: births as dense ranks (for the siblings' lists).
    ``control`` (3 int64, shared with the thread that watches it, :mod:`.watch`): every
    :data:`CHECK_EVERY` steps the kernel writes the steps done into ``control[0]`` and, when
    ``control[1]`` is set, stops there and sets ``control[2]`` (the pass is cut, ``out`` is
    incomplete); at its end ``control[0]`` is the steps it went through."""
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
    w_birth = np.empty((rows, 16), dtype=np.int32)  # birth ranks: as births compare, 4 bytes
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
    gaps = np.empty(64, dtype=np.int64)  # per wall, the gap below it (:func:`wall_gaps`)
    below = np.empty(64, dtype=np.int64)
    steps = 0  # tensors of ``order`` gone through
    for q in order:
        if steps and steps % CHECK_EVERY == 0:
            control[0] = steps
            if control[1] != 0:
                control[2] = 1
                break
        steps += 1
        s = size[q]
        if s == 0:
            continue
        bq, rq = births[q], birth_rank[q]
        tail = tails[q]
        reads_partners = not tail or not complete
        if npend_walls >= WALL_BATCH and not tail:  # merge them into every fit's sorted walls
            need = nwalls + npend_walls
            w_start, w_end, w_birth = grow(w_start, need), grow(w_end, need), grow(w_birth, need)
            as_, ae = room(as_, need), room(ae, need)
            keys, counts = room(keys, 2 * need), room(counts, 2 * need + 1)
            for r in range(rows):
                if not active[r]:
                    continue
                for j in range(npend_walls):
                    w = pend_walls[j]
                    as_[j], ae[j] = off[w, r], j
                sort_by_start(as_, ae, npend_walls, keys, counts, qstack)  # (start, slot)
                i, j, c = nwalls - 1, npend_walls - 1, need - 1
                while j >= 0:  # merge from the top down, in place
                    if i >= 0 and w_start[r, i] > as_[j]:
                        w_start[r, c], w_end[r, c] = w_start[r, i], w_end[r, i]
                        w_birth[r, c] = w_birth[r, i]
                        i -= 1
                    else:
                        w = pend_walls[ae[j]]
                        w_start[r, c], w_end[r, c] = as_[j], as_[j] + size[w]
                        w_birth[r, c] = birth_rank[w]
                        j -= 1
                    c -= 1
            nwalls = need
            npend_walls = 0
        # the partners, once for every fit: its placed CSR partners (a tail whose key is
        # complete finds them through the step function) and, for a non-tail, its placed siblings
        mates = room(mates, ptr[q + 1] - ptr[q] + 1)
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
                mates = kept_room(mates, d, d + 1)  # (a scratch room lost the ids)
                mates[d] = sib
                d += 1
                sib = nxt[sib]
            mates = kept_room(mates, d, d + npend_walls)
            for j in range(npend_walls):  # the walls not merged yet, born no later: partners
                w = pend_walls[j]
                if birth_rank[w] <= rq:
                    mates[d] = w
                    d += 1
        starts, ends = grow(starts, d + FOLD_BATCH), grow(ends, d + FOLD_BATCH)
        keys, counts = room(keys, 2 * starts.shape[1]), room(counts, 2 * starts.shape[1] + 1)
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
            if tail:  # its partners include the pending tensors whose key reaches its birth
                for j in range(npend):
                    p = pend_ids[j]
                    if key[p] >= bq:
                        ps[k], pe[k] = off[p, r], off[p, r] + size[p]
                        k += 1
            # sorted by start, those that touch joined: the offset depends only on their union
            sort_by_start(ps, pe, k, keys, counts, qstack)
            k = merge_touching(ps, pe, k)
            if tail:
                # three lists sorted by start, scanned as one: the pieces of the step function
                # at or above its birth, (key not complete) the union of the walls, and the
                # partners
                xr, vr, npieces = xs[r], vs[r], pieces[r] - 1
                ws, we = u_start[r], u_end[r]
                nw = 0 if complete else blocks[r]
                if fits[r] == HIGHEST:
                    chosen = tail_scan_down(xr, vr, npieces, bq, ws, we, nw, ps, pe, k, s)
                    done = True
                a, i, j = 0, 0, 0
                while not done:
                    while a < npieces and vr[a] < bq:
                        a += 1
                    lo, hi, src = BIG, 0, -1
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
                    top_seen, chosen, spare, done = see(fits[r], lo, hi, s, top_seen, chosen,
                                                         spare)
            elif fits[r] == FIRST:
                i, j = 0, 0
                wb, ws, we = w_birth[r], w_start[r], w_end[r]
                while not done:  # the walls born no later and the sorted partners, merged
                    while i < nwalls and wb[i] > rq:
                        i += 1
                    if i < nwalls and (j >= k or ws[i] <= ps[j]):
                        lo, hi = ws[i], we[i]
                        i += 1
                    elif j < k:
                        lo, hi = ps[j], pe[j]
                        j += 1
                    else:
                        break
                    top_seen, chosen, spare, done = see(fits[r], lo, hi, s, top_seen, chosen,
                                                         spare)
            elif fits[r] == HIGHEST:
                chosen = scan_down(w_start[r], w_end[r], w_birth[r], nwalls, rq, ps, pe, k, s)
            else:  # best, worst: every gap is seen, so the walls' gaps come first
                gaps, below = room(gaps, nwalls + 1), room(below, nwalls + 1)
                wall_gaps(w_start[r], w_end[r], w_birth[r], nwalls, rq, gaps, below)
                chosen = scan_all(fits[r], w_start[r], gaps, below, nwalls, ps, pe, k, s)
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
                u_start, u_end = grow(u_start, blocks.max() + 1), grow(u_end, blocks.max() + 1)
                for r in range(rows):
                    if active[r]:
                        add_block(u_start[r], u_end[r], blocks, r, off[q, r], off[q, r] + s)
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
    control[0] = steps
    for r in range(rows):
        for i in range(n):
            out[r, i] = off[i, r]
