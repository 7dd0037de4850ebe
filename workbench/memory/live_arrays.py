"""The live-set sweep of :mod:`workbench.memory.live_sets` with NumPy arrays, for tensors with at
most :data:`MASK_BITS` users kept (one per stream): each op's live set is a sorted array of tensor
ranks (tensors numbered in birth order, so the tensors born since a predecessor are a range
appended at the end) with an ``int64`` mask of the users seen.  A predecessor other than the one
issued last is merged by one ``searchsorted``; the cost per op is a few array calls plus
O(|live set| · predecessors) element operations, so a 100,000-op random DAG with 300 live tensors
per op runs at array speed rather than a dictionary lookup per pair.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from workbench.errors import MemoryPlanError

#: Most users (after keeping the last one on each stream) a tensor may have to be swept here.
MASK_BITS = 62

_EMPTY = np.zeros(0, dtype=np.int32)
_NO_MASK = np.zeros(0, dtype=np.int64)


class _Ranks:
    """Tensors by birth rank: births, the masks of all users, and each op's user entries."""

    def __init__(self, n: int, births: np.ndarray, kept: Sequence[Sequence[int]],
                 heads: np.ndarray) -> None:
        order = np.argsort(births[heads], kind="stable")
        self.tensor = heads[order]  # rank -> tensor
        self.birth = births[self.tensor]
        self.start = np.searchsorted(self.birth, np.arange(n + 1), side="left").tolist()
        users = [kept[t] for t in self.tensor.tolist()]
        counts = np.array([len(u) for u in users], dtype=np.int64)
        self.full = (np.left_shift(1, counts) - 1).astype(np.int64)
        self.last_user = np.array([u[-1] for u in users], dtype=np.int64)
        flat_op = np.array([x for u in users for x in u], dtype=np.int64)
        flat_rank = np.repeat(np.arange(len(users), dtype=np.int32), counts)
        flat_bit = np.left_shift(1, np.concatenate(
            [np.arange(c, dtype=np.int64) for c in counts.tolist()] or [_NO_MASK]))
        by = np.lexsort((flat_rank, flat_op))
        self.user_op = flat_op[by]
        self.user_rank = flat_rank[by]
        self.user_bit = flat_bit[by].astype(np.int64)
        self.user_start = np.searchsorted(self.user_op, np.arange(n + 1), side="left").tolist()
        self.flat = (flat_op, flat_bit.astype(np.int64), np.r_[0, np.cumsum(counts)])


class TooManyPairs(MemoryPlanError):
    """The listed pairs of a sweep would pass its cap ``max_pairs`` at op ``op`` of ``n``."""

    def __init__(self, max_pairs: int, op: int, n: int) -> None:
        super().__init__(
            f"this schedule's happens-before conflicts list more than {max_pairs:,} pairs of "
            f"tensors (by op {op:,} of {n:,}; about {16 * max_pairs / 2**30:.0f} GiB to hold): "
            f"its streams leave too many tensors unordered to plan; plan a schedule with fewer "
            f"streams (serial, or max_streams=) or raise "
            f"workbench.memory.live_sets.MAX_LISTED_PAIRS")
        self.max_pairs, self.op, self.n = max_pairs, op, n


def sweep_arrays(order: object, births: np.ndarray, kept: Sequence[Sequence[int]],
                 heads: np.ndarray, produced: Sequence[Sequence[int]], *, skeleton: bool,
                 max_pairs: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Listed pairs ``(rows, cols)`` (row born first) and frontier edges ``(tensor, node)`` of
    the tensors ``heads`` (see :mod:`workbench.memory.live_sets`; ``order`` is its ``_Order``).
    :class:`TooManyPairs` as soon as the pairs would pass ``max_pairs`` (``None``: no cap)."""
    n = order.n  # type: ignore[attr-defined]
    prev, waits = order.prev, order.waits  # type: ignore[attr-defined]
    barriers = order.barriers  # type: ignore[attr-defined]
    ranks = _Ranks(n, births, kept, heads)
    start, full = ranks.start, ranks.full
    u_start, u_rank, u_bit = ranks.user_start, ranks.user_rank, ranks.user_bit
    refs = [int(h) + w for h, w in zip(order.has_next, order.waiters)]  # type: ignore[attr-defined]
    out_k: dict[int, np.ndarray] = {}
    out_m: dict[int, np.ndarray] = {}
    done: dict[int, np.ndarray] = {}
    row_parts: list[np.ndarray] = []
    col_parts: list[tuple[int, int]] = []
    f_rank: list[np.ndarray] = []
    f_node: list[tuple[int, int]] = []
    crossing = _Crossing(ranks, len(ranks.tensor)) if barriers else None
    bar_k, bar_m = _EMPTY, _NO_MASK
    next_bar, listed = 0, 0
    for i in range(n):
        while next_bar < len(barriers) and barriers[next_bar] <= i:
            assert crossing is not None
            bar_k, bar_m, died = crossing.at(barriers[next_bar])
            if skeleton and len(died):
                f_rank.append(died)
                f_node.append((n + next_bar, len(died)))
            next_bar += 1
        q0, ws = prev[i], waits[i]
        top = max(q0, max(ws)) if ws else q0
        b = order.barrier_before(i)  # type: ignore[attr-defined]
        others: list[int] = []
        if b > top:
            k0, m0, c0, fresh_from = bar_k, bar_m, _EMPTY, b
        elif top >= 0:
            k0, m0, c0, fresh_from = out_k[top], out_m[top], done.get(top, _EMPTY), top + 1
            others = [a for a in ws if a != top]
            if q0 >= 0 and q0 != top:
                others.append(q0)
        else:
            k0, m0, c0, fresh_from = _EMPTY, _NO_MASK, _EMPTY, 0
        lo, hi = start[fresh_from], start[i]
        if others and (len(k0) or len(c0)):
            k, m, first_dead = _merge(k0, m0, c0, others, out_k, out_m, done, start,
                                                 full)
            if skeleton and len(first_dead):
                f_rank.append(first_dead)
                f_node.append((i, len(first_dead)))
                if crossing is not None:
                    crossing.mark(first_dead)
        else:
            k, m = k0, m0
            if skeleton and len(c0):
                f_rank.append(c0)
                f_node.append((i, len(c0)))
                if crossing is not None:
                    crossing.mark(c0)
        if hi > lo:
            k = np.concatenate((k, np.arange(lo, hi, dtype=np.int32)))
            m = np.concatenate((m, np.zeros(hi - lo, dtype=np.int64)))
        made = produced[i]
        if made and len(k):
            listed += len(k) * len(made)
            if max_pairs is not None and listed > max_pairs:
                raise TooManyPairs(max_pairs, i, n)
            for t in made:
                row_parts.append(k)
                col_parts.append((t, len(k)))
        us, ue = u_start[i], u_start[i + 1]
        finished = _EMPTY
        born_lo, born_hi = start[i], start[i + 1]
        own_only = _EMPTY
        if ue > us:
            ur, ub = u_rank[us:ue], u_bit[us:ue]
            here = ur >= born_lo
            if here.any():  # tensors whose only user is their producer
                own_only = ur[here]
                ur, ub = ur[~here], ub[~here]
            if len(ur):
                pos = np.searchsorted(k, ur)
                m = m.copy()
                m[pos] |= ub
                fin = m[pos] == full[ur]
                if fin.any():
                    finished = ur[fin]
                    keep = np.ones(len(k), dtype=bool)
                    keep[pos[fin]] = False
                    k, m = k[keep], m[keep]
            if len(own_only):
                finished = np.concatenate((finished, own_only)) if len(finished) else own_only
        if born_hi > born_lo:
            new = np.arange(born_lo, born_hi, dtype=np.int32)
            if len(own_only):
                new = np.setdiff1d(new, own_only, assume_unique=True).astype(np.int32)
            k = np.concatenate((k, new))
            m = np.concatenate((m, np.zeros(len(new), dtype=np.int64)))
        for a in (q0, *ws):
            if a >= 0:
                refs[a] -= 1
                if not refs[a]:
                    del out_k[a], out_m[a]
                    done.pop(a, None)
        if refs[i]:
            out_k[i], out_m[i] = k, m
            if len(finished):
                done[i] = finished
    tensor = ranks.tensor.astype(np.int32)  # the pairs are built in int32: no copy to narrow
    rows = tensor[np.concatenate(row_parts)] if row_parts else _EMPTY
    cols = np.repeat(np.array([t for t, _ in col_parts], dtype=np.int32),
                     [c for _, c in col_parts]) if col_parts else _EMPTY
    f_rows = tensor[np.concatenate(f_rank)] if f_rank else _EMPTY
    f_cols = np.repeat(np.array([x for x, _ in f_node], dtype=np.int64),
                       [c for _, c in f_node]) if f_node else _EMPTY
    return rows, cols, f_rows.astype(np.int64), f_cols.astype(np.int64)


def _merge(k0: np.ndarray, m0: np.ndarray, c0: np.ndarray, others: Sequence[int],
           out_k: dict[int, np.ndarray], out_m: dict[int, np.ndarray], done: dict[int, np.ndarray],
           start: Sequence[int], full: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The live set after merging the other predecessors into the last one's (``k0``, ``m0``):
    kept ranks and masks, and the ranks that die here while live at every predecessor (from
    ``k0`` and from ``c0``, the ones the last predecessor completed)."""
    m = m0.copy()
    alive = np.ones(len(k0), dtype=bool)
    c_ok = np.ones(len(c0), dtype=bool)
    for a in others:
        ka, ma, da = out_k[a], out_m[a], done.get(a, _EMPTY)
        born = start[a + 1]  # ranks born at or before a
        if len(k0):
            if len(ka):
                pos = np.searchsorted(ka, k0)
                np.minimum(pos, len(ka) - 1, out=pos)
                hit = ka[pos] == k0
                m |= np.where(hit, ma[pos], 0)
                miss = ~hit & (k0 < born)
            else:
                miss = k0 < born
            if miss.any():
                idx = np.flatnonzero(miss)
                completed = _member(da, k0[idx])
                m[idx[completed]] = full[k0[idx[completed]]]
                alive[idx[~completed]] = False
        if len(c0):
            dead = c0 < born
            if dead.any():
                dead &= ~_member(ka, c0)
                dead &= ~_member(da, c0)
                c_ok &= ~dead
    full_now = m == full[k0]
    keep = alive & ~full_now
    first = k0[alive & full_now]
    if len(c0):
        first = np.concatenate((first, c0[c_ok]))
    return k0[keep], m[keep], first


def _member(sorted_ranks: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Which of ``x`` are in the sorted array ``sorted_ranks`` (``np.isin``, by one search)."""
    if not len(sorted_ranks):
        return np.zeros(len(x), dtype=bool)
    pos = np.searchsorted(sorted_ranks, x)
    np.minimum(pos, len(sorted_ranks) - 1, out=pos)
    return sorted_ranks[pos] == x


class _Crossing:
    """Per barrier: the tensors born before it with a user at or after it (and the users before
    it seen), kept incrementally; the tensors whose last user falls before a barrier and that got
    no frontier edge yet die at the barrier's node."""

    def __init__(self, ranks: _Ranks, count: int) -> None:
        self.ranks = ranks
        self.alive = _EMPTY
        self.edged = np.zeros(count, dtype=bool)
        self.at_ = 0

    def at(self, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r = self.ranks
        lo, hi = r.start[self.at_], r.start[b]
        pool = np.concatenate((self.alive, np.arange(lo, hi, dtype=np.int32)))
        crosses = r.last_user[pool] >= b
        gone = pool[~crosses]
        died = gone[~self.edged[gone]]
        self.edged[died] = True
        self.alive = pool[crosses]
        self.at_ = b
        flat_op, flat_bit, ptr = r.flat
        lo_u, hi_u = ptr[self.alive], ptr[self.alive + 1]
        counts = hi_u - lo_u
        at = np.repeat(lo_u - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        owner = np.repeat(np.arange(len(self.alive)), counts)
        bits = np.where(flat_op[at] < b, flat_bit[at], 0)
        masks = np.zeros(len(self.alive), dtype=np.int64)
        np.bitwise_or.at(masks, owner, bits)
        return self.alive, masks, died

    def mark(self, ranks: np.ndarray) -> None:
        self.edged[ranks] = True
