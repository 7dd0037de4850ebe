"""The live-set sweep of :mod:`workbench.memory.live_arrays`, compiled (Numba).

The same sweep, op for op, as :func:`workbench.memory.live_arrays.sweep_arrays` (which stays the
reference: ``tests/test_live_kernel.py`` asserts equal arrays, in the same order): an op's live
set is the sorted ranks of the tensors born before it and not dead at it, each with the mask of
its kept users seen; the last-issued predecessor's set is the base, the other predecessors are
merged in, the op's users are marked and the tensors it completes leave.  What changes is the
cost of an op: the NumPy form pays ~25 array calls an op (and ~15 more per extra predecessor),
~60 µs at 100k random ops under NNC, 6.2 of the 7.9 CPU s of ``lifetimes``; here an op costs
O(|live set| · predecessors) element operations.  The other predecessors are merged by walking
both sorted sets together where the NumPy form searches one in the other (the same members).

A barrier (wavefront, IOS) rebuilds its live set from the tensors crossing it, as
``live_arrays._Crossing`` does (:func:`_cross`).  Imported on first use, like the placement
kernel (Numba's import and cached code cost ~0.6 s once per process; the first compile is
written to ``__pycache__``).  It inlines ``kernel_ranges.kept_room`` / ``lower_bound``, and
Numba's cache keys a function on its own file: after editing ``kernel_ranges.py``, touch this
file too.  Complexity O(V + E + P) for P listed pairs, plus
the merges: O(|live set|) per extra predecessor.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.typed import List

from workbench.memory.kernel_ranges import kept_room, lower_bound


@njit(cache=True, nogil=True)
def _contains(sorted_ranks: np.ndarray, x: int) -> bool:
    """Whether ``x`` is in the sorted array."""
    at = lower_bound(sorted_ranks, len(sorted_ranks), x)
    return at < len(sorted_ranks) and sorted_ranks[at] == x


@njit(cache=True, nogil=True)
def _add_frontier(f_rows: np.ndarray, f_cols: np.ndarray, filled: int, ranks: np.ndarray,
                  node: int, tensor: np.ndarray, edged: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, int]:
    """Frontier edges ``tensor[rank] -> node`` for ``ranks`` appended after the ``filled``
    first (the buffers grown when full), each rank marked as edged (what a barrier's crossing
    reads)."""
    f_rows = kept_room(f_rows, filled, filled + len(ranks))
    f_cols = kept_room(f_cols, filled, filled + len(ranks))
    for p in range(len(ranks)):
        f_rows[filled + p] = tensor[ranks[p]]
        f_cols[filled + p] = node
        edged[ranks[p]] = True
    return f_rows, f_cols, filled + len(ranks)


@njit(cache=True, nogil=True)
def _release(a: int, refs: np.ndarray, out_k: List, out_m: List, done: List,
             empty32: np.ndarray, empty64: np.ndarray) -> None:
    """One reader of op ``a``'s live set is done; the last one drops it."""
    refs[a] -= 1
    if refs[a] == 0:
        out_k[a], out_m[a], done[a] = empty32, empty64, empty32


@njit(cache=True, nogil=True)
def _merge(k0: np.ndarray, m0: np.ndarray, c0: np.ndarray, others: np.ndarray, n_others: int,
           out_k: List, out_m: List, done: List, start: np.ndarray, full: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``live_arrays._merge``: the live set after merging the other predecessors into the last
    one's (``k0``, ``m0``), and the ranks that die here while live at every predecessor."""
    m = m0.copy()
    alive = np.ones(len(k0), dtype=np.bool_)
    c_ok = np.ones(len(c0), dtype=np.bool_)
    for w in range(n_others):
        a = others[w]
        ka, ma, da = out_k[a], out_m[a], done[a]
        born = start[a + 1]  # ranks born at or before a
        j = 0
        for p in range(len(k0)):  # both sorted: one walk finds each of k0 in ka
            x = k0[p]
            while j < len(ka) and ka[j] < x:
                j += 1
            if j < len(ka) and ka[j] == x:
                m[p] |= ma[j]
            elif x < born:
                if _contains(da, x):
                    m[p] = full[x]
                else:
                    alive[p] = False
        for p in range(len(c0)):
            x = c0[p]
            if x < born and not _contains(ka, x) and not _contains(da, x):
                c_ok[p] = False
    k = np.empty(len(k0), dtype=np.int32)
    mk = np.empty(len(k0), dtype=np.int64)
    dead = np.empty(len(k0) + len(c0), dtype=np.int32)
    kept, first = 0, 0
    for p in range(len(k0)):
        if alive[p]:
            if m[p] == full[k0[p]]:
                dead[first] = k0[p]
                first += 1
            else:
                k[kept], mk[kept] = k0[p], m[p]
                kept += 1
    for p in range(len(c0)):
        if c_ok[p]:
            dead[first] = c0[p]
            first += 1
    return k[:kept], mk[:kept], dead[:first]


@njit(cache=True, nogil=True)
def _cross(alive: np.ndarray, lo: int, hi: int, b: int, last_user: np.ndarray, f_op: np.ndarray,
           f_bit: np.ndarray, f_ptr: np.ndarray, edged: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``live_arrays._Crossing.at``: the ranks live across the barrier before op ``b`` (those
    alive at the last barrier, then ranks ``lo..hi-1``, born since, whose last user is at or
    after ``b``), the mask of each one's users before ``b``, and the ranks that died between
    the two barriers with no frontier edge yet (now edged)."""
    pool = len(alive) + max(0, hi - lo)
    kept = np.empty(pool, dtype=np.int32)
    died = np.empty(pool, dtype=np.int32)
    n_kept, n_died = 0, 0
    for p in range(pool):
        x = alive[p] if p < len(alive) else lo + p - len(alive)
        if last_user[x] >= b:
            kept[n_kept] = x
            n_kept += 1
        elif not edged[x]:
            edged[x] = True
            died[n_died] = x
            n_died += 1
    masks = np.zeros(n_kept, dtype=np.int64)
    for j in range(n_kept):
        x = kept[j]
        for u in range(f_ptr[x], f_ptr[x + 1]):
            if f_op[u] < b:
                masks[j] |= f_bit[u]
    return kept[:n_kept], masks, died[:n_died]


@njit(cache=True, nogil=True)
def sweep_kernel(n: int, prev: np.ndarray, w_ptr: np.ndarray, w_idx: np.ndarray,
                 refs: np.ndarray, start: np.ndarray, full: np.ndarray, u_start: np.ndarray,
                 u_rank: np.ndarray, u_bit: np.ndarray, p_ptr: np.ndarray, p_idx: np.ndarray,
                 tensor: np.ndarray, barriers: np.ndarray, last_user: np.ndarray,
                 f_op: np.ndarray, f_bit: np.ndarray, f_ptr: np.ndarray, skeleton: bool,
                 max_pairs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """``(rows, cols, frontier tensors, frontier nodes)`` of ``sweep_arrays``, and -1; or, as
    soon as the listed pairs would pass ``max_pairs`` (>= 0), empty arrays and the op at which
    they would (``sweep_arrays``' cap).  ``prev``:
    stream predecessor per op (-1); ``w_ptr`` / ``w_idx``: the sync sources each op waits on
    (CSR); ``refs``: readers of each op's live set; ``start``: first rank born at each op;
    ``full``: each rank's mask of all users; ``u_*``: each op's user entries (CSR by op: rank,
    bit); ``p_*``: the tensors each op produces (CSR); ``tensor``: rank -> tensor;
    ``barriers``: the ops barriers precede, sorted; ``last_user``: per rank; ``f_*``: each
    rank's users (CSR by rank: op, bit)."""
    refs = refs.copy()
    empty32 = np.zeros(0, dtype=np.int32)
    empty64 = np.zeros(0, dtype=np.int64)
    out_k = List()
    out_m = List()
    done = List()
    for _ in range(n):
        out_k.append(empty32)
        out_m.append(empty64)
        done.append(empty32)
    rows = np.empty(1024, dtype=np.int32)
    cols = np.empty(1024, dtype=np.int32)
    f_rows = np.empty(256, dtype=np.int64)
    f_cols = np.empty(256, dtype=np.int64)
    n_pairs, n_front = 0, 0
    others = np.empty(max(1, int(np.max(np.diff(w_ptr))) + 1 if n else 1), dtype=np.int64)
    most_users = max(1, int(np.max(np.diff(u_start))) if n else 1)
    finished = np.empty(most_users, dtype=np.int32)  # per op: the ranks it completes
    own_only = np.empty(most_users, dtype=np.int32)  # and those only it uses (born here)
    edged = np.zeros(len(full), dtype=np.bool_)  # ranks given a frontier edge (barriers)
    bar_k, bar_m = empty32, empty64  # the live set at the last barrier
    crossed_to, next_bar = 0, 0
    for i in range(n):
        while next_bar < len(barriers) and barriers[next_bar] <= i:
            b = barriers[next_bar]
            bar_k, bar_m, died = _cross(bar_k, start[crossed_to], start[b], b, last_user, f_op,
                                        f_bit, f_ptr, edged)
            crossed_to = b
            if skeleton and len(died):  # (_cross has edged them already)
                f_rows, f_cols, n_front = _add_frontier(f_rows, f_cols, n_front, died,
                                                        n + next_bar, tensor, edged)
            next_bar += 1
        q0 = prev[i]
        top = q0
        for s in range(w_ptr[i], w_ptr[i + 1]):
            if w_idx[s] > top:
                top = w_idx[s]
        # the last barrier issued after the stream predecessor (live_sets._Order.barrier_before)
        bar = barriers[next_bar - 1] if next_bar and barriers[next_bar - 1] > q0 else -1
        n_others = 0
        if bar > top:  # the barrier saw every other predecessor: it alone counts
            k0, m0, c0, fresh_from = bar_k, bar_m, empty32, bar
        elif top >= 0:
            k0, m0, c0, fresh_from = out_k[top], out_m[top], done[top], top + 1
            for s in range(w_ptr[i], w_ptr[i + 1]):
                if w_idx[s] != top:
                    others[n_others] = w_idx[s]
                    n_others += 1
            if q0 >= 0 and q0 != top:
                others[n_others] = q0
                n_others += 1
        else:
            k0, m0, c0, fresh_from = empty32, empty64, empty32, 0
        lo, hi = start[fresh_from], start[i]
        if n_others and (len(k0) or len(c0)):
            k, m, first_dead = _merge(k0, m0, c0, others, n_others, out_k, out_m, done, start,
                                      full)
        else:
            k, m, first_dead = k0, m0, c0
        if skeleton and len(first_dead):
            f_rows, f_cols, n_front = _add_frontier(f_rows, f_cols, n_front, first_dead, i,
                                                    tensor, edged)
        # the live set: k, then the ranks born since the base predecessor (one buffer with
        # room for the ranks born here; the op keeps a view of it)
        fresh = max(0, hi - lo)
        size = len(k) + fresh
        live = np.empty(size + start[i + 1] - start[i], dtype=np.int32)
        mask = np.empty(size + start[i + 1] - start[i], dtype=np.int64)
        live[:len(k)] = k
        mask[:len(k)] = m
        for p in range(fresh):
            live[len(k) + p] = lo + p
            mask[len(k) + p] = 0
        if size:
            if 0 <= max_pairs < n_pairs + size * (p_ptr[i + 1] - p_ptr[i]):
                return rows[:0], cols[:0], f_rows[:0], f_cols[:0], i
            for s in range(p_ptr[i], p_ptr[i + 1]):
                rows = kept_room(rows, n_pairs, n_pairs + size)
                cols = kept_room(cols, n_pairs, n_pairs + size)
                t = p_idx[s]
                for p in range(size):
                    rows[n_pairs + p] = tensor[live[p]]
                    cols[n_pairs + p] = t
                n_pairs += size
        # this op's users: masks grow, the tensors it completes leave (marked -1, then dropped)
        born_lo, born_hi = start[i], start[i + 1]
        n_fin, n_own = 0, 0
        j = 0
        for s in range(u_start[i], u_start[i + 1]):  # by rank ascending
            r = u_rank[s]
            if r >= born_lo:  # produced here and used only here
                own_only[n_own] = r
                n_own += 1
                continue
            while j < size and live[j] < r:
                j += 1
            mask[j] |= u_bit[s]
            if mask[j] == full[r]:
                finished[n_fin] = r
                n_fin += 1
                live[j] = -1
        c = 0
        if n_fin:
            for p in range(size):
                if live[p] >= 0:
                    live[c], mask[c] = live[p], mask[p]
                    c += 1
        else:
            c = size
        o = 0
        for r in range(born_lo, born_hi):
            if o < n_own and own_only[o] == r:
                o += 1
                continue
            live[c], mask[c] = r, 0
            c += 1
        if q0 >= 0:  # this op has read its predecessors' live sets: the last reader frees one
            _release(q0, refs, out_k, out_m, done, empty32, empty64)
        for s in range(w_ptr[i], w_ptr[i + 1]):
            _release(w_idx[s], refs, out_k, out_m, done, empty32, empty64)
        if refs[i]:
            out_k[i], out_m[i] = live[:c], mask[:c]
            if n_fin + n_own:
                fin = np.empty(n_fin + n_own, dtype=np.int32)
                fin[:n_fin] = finished[:n_fin]
                fin[n_fin:] = own_only[:n_own]
                done[i] = fin
    return rows[:n_pairs], cols[:n_pairs], f_rows[:n_front], f_cols[:n_front], -1
