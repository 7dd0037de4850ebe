"""SOMAS's ancestor rule without vector clocks: live sets carried along the happens-before order.

Tensor ``A`` (born at its producer's issue index) and a later-born ``B`` may share memory only if
every *user* of ``A`` (its consumers, or its producer when it has none) happens before ``B``'s
producer ``p`` (seed 004, notes §1.2; :mod:`workbench.memory.streams` states the rule).  Call ``A``
*dead at* ``p`` when that holds.  Happens-before is stream order + syncs + barriers, so the users
of ``A`` that ``p`` has seen are the union of what its *predecessors* saw: the previous op on its
stream, the sources of the syncs it waits on, and the last barrier issued since that previous op
(a barrier has seen every op issued before it).  One sweep in issue order therefore computes, for
every op ``p``:

* ``live(p)``: the tensors born before ``p`` and not dead at ``p``, each with the set of its users
  ``p``'s predecessors have seen (a bit mask over the users kept: only the last user of a tensor on
  each stream matters, stream order implies the others).  ``A`` is live at ``p`` iff it is live at
  (or born after) every predecessor and the union of their masks misses a user; it is enough to
  look at the tensors live at, or completed by, the predecessor issued last, plus those born since.
  The listed conflicts of the tensors ``p`` produces are exactly ``live(p)``;
* the *frontier*: ``A`` dead at ``p`` while dead at none of ``p``'s predecessors (the first dead op
  of ``A`` along some path).  Every op ``A`` is dead at is reachable from one of them, which is
  what the order skeleton of the clique bound needs (a barrier node is a frontier target of the
  tensors that die at it and nowhere before).

*Tails* never die (graph outputs, and tensors whose users have no common strict descendant); they
conflict with every later tensor by rule (:class:`~workbench.memory.conflicts.ConflictGraph`) and
are not carried.  They are found before the sweep from the sinks of the happens-before order
(ops with no successor): a tensor dies somewhere iff one sink is a strict descendant of all its
users, so a reverse sweep ORs bit sets of reachable sinks (:func:`never_dead`).

The answer is the relation the vector clocks give (same tails, same listed pairs); only the cost
differs.  Clocks cost V · S time and memory (S streams): a fan 1 -> 10,000 -> 1 under NNC has
10,000 streams and asked for 10^8 clock entries.  Here time and memory are
O(V + E + syncs + P · (1 + w)) for P listed pairs and w syncs waited per op, plus
O(V · Z / 64) words for the sink sets (Z sinks; freed as the reverse sweep passes), and nothing
is stored per stream pair.  Measured constant: about 0.3 µs per listed pair on this machine for
the NumPy sweep; from :data:`SWEEP_KERNEL_MIN_OPS` ops a schedule is swept by the same sweep
compiled (:mod:`workbench.memory.live_kernel`): NNC's schedule of a 100k-op
random DAG (29.3 M pairs), the whole relation 7.6 -> 1.7 CPU s.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

import numpy as np

from workbench.memory.live_arrays import TooManyPairs
from workbench.values.schedule import Schedule

#: Frontier edges: (tensor rows, skeleton node columns); a column ``< V`` is an op's issue index,
#: ``V + k`` the k-th barrier (in issue order).
Frontier = tuple[list[np.ndarray], list[np.ndarray]]


class _Order:
    """The happens-before predecessors of every op, by issue index."""

    def __init__(self, schedule: Schedule) -> None:
        order = schedule.issue_order
        self.n = n = len(order)
        self.index = index = {op: i for i, op in enumerate(order)}
        self.prev = prev = [-1] * n
        self.has_next = has_next = [False] * n
        for ops in schedule.streams.values():
            at = [index[op] for op in ops]
            for a, b in zip(at, at[1:]):
                prev[b] = a
                has_next[a] = True
        self.waits: list[list[int]] = [[] for _ in range(n)]
        self.waiters = [0] * n
        for src, dst in dict.fromkeys(schedule.syncs):
            ia, ib = index[src], index[dst]
            if ia < ib and ia != prev[ib]:  # a sync on the same stream's previous op adds nothing
                self.waits[ib].append(ia)
                self.waiters[ia] += 1
        self.barriers = sorted(b for b in set(schedule.barriers) if 0 <= b < n)
        self.barrier_number = {b: k for k, b in enumerate(self.barriers)}

    def barrier_before(self, i: int) -> int:
        """The last barrier issued after op ``i``'s stream predecessor and before ``i`` (-1)."""
        k = bisect_right(self.barriers, i) - 1
        if k < 0:
            return -1
        b = self.barriers[k]
        return b if b > self.prev[i] else -1


def _reduced_users(users: Sequence[Sequence[str]], order: _Order,
                   schedule: Schedule) -> list[list[int]]:
    """Per tensor, the issue indices of its last user on each stream (in issue order)."""
    stream_of, index = schedule._stream_of, order.index
    out = []
    for u in users:
        last: dict[object, int] = {}
        for op in u:
            i, s = index[op], stream_of[op]
            if i > last.get(s, -1):
                last[s] = i
        out.append(sorted(last.values()))
    return out


def never_dead(order: _Order, users: Sequence[Sequence[int]], candidates: np.ndarray) -> np.ndarray:
    """Flags, over ``candidates`` (tensor indices), of the tensors dead at no op: no sink of the
    happens-before order is a strict descendant of all their users.  An op issued before the last
    barrier reaches every sink (they all come after it).  A reverse sweep; a tensor is decided
    when the sweep reaches its first user, and an op's sink set is dropped once its readers are
    done, so memory is Z bits per op on the sweep's frontier.  O(V + syncs) ORs of Z-bit
    integers."""
    n = order.n
    last_barrier = order.barriers[-1] if order.barriers else -1
    sink_bit: dict[int, int] = {}
    for i in range(n):
        if not order.has_next[i] and not order.waiters[i] and i >= last_barrier:
            sink_bit[i] = 1 << len(sink_bit)
    everything = (1 << len(sink_bit)) - 1
    succ_of: list[list[int]] = [[] for _ in range(n)]
    need = [0] * n  # readers of an op's sink set still to come
    for i in range(n):
        if order.prev[i] >= 0:
            succ_of[order.prev[i]].append(i)
        for a in order.waits[i]:
            succ_of[a].append(i)
    for v in range(n):
        need[v] = len(order.waits[v]) + (order.prev[v] >= 0)
    decide_at: dict[int, list[int]] = {}
    for j, k in enumerate(candidates.tolist()):
        decide_at.setdefault(users[k][0], []).append(j)
        for u in users[k]:
            need[u] += 1
    reach: dict[int, int] = {}
    flags = np.zeros(len(candidates), dtype=bool)
    keys = candidates.tolist()
    for i in range(n - 1, -1, -1):
        mask = everything if i < last_barrier else 0
        for v in succ_of[i]:
            if i >= last_barrier:
                mask |= reach[v] | sink_bit.get(v, 0)
            need[v] -= 1
            if not need[v]:
                del reach[v]
        if need[i]:
            reach[i] = mask
        for j in decide_at.get(i, ()):
            common = everything
            for u in users[keys[j]]:
                common &= reach[u]
                need[u] -= 1
                if not need[u]:
                    del reach[u]
            flags[j] = not common
    return flags


#: From this many ops a schedule is swept by the compiled sweep
#: (:mod:`workbench.memory.live_kernel`) where Numba imports: below it the NumPy sweep costs less
#: than Numba's first use in a process (~0.6 s; the placement kernel starts at 2,000 tensors).
SWEEP_KERNEL_MIN_OPS = 2_000
SWEEP_ENGINES = ("auto", "numpy", "kernel")
#: The most pairs a sweep lists before the schedule is refused in one line
#: (:class:`~workbench.memory.live_arrays.TooManyPairs`) instead of filling the machine's memory:
#: about 16 bytes a pair at the peak (the pairs, then the CSR built from them), so ~4 GiB here.
#: NNC's schedules of random DAGs (3 edges an op) list 1.3 M pairs at 10k ops, 29 M at 100k and
#: 195 M at 300k (3.0 GiB at the lifetimes' peak; exponent 1.7): at 1M ops, before this cap, the
#: process was killed for memory (24 GiB).  Read at each call: raise it on a larger machine.
MAX_LISTED_PAIRS = 1 << 28


def live_set_relation(schedule: Schedule, users: Sequence[Sequence[str]],
                      producers: Sequence[str], outputs: np.ndarray, *, skeleton: bool,
                      engine: str = "auto"
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Frontier]:
    """``(births, tails, rows, cols, frontier)`` of the ancestor rule (see the module docstring):
    births are producers' issue indices, ``(rows[k], cols[k])`` the listed pairs (each once, the
    row born first), ``frontier`` the skeleton's tensor -> first-dead-node edges (with
    ``skeleton``).  Tensors with at most :data:`~workbench.memory.live_arrays.MASK_BITS` users
    kept are swept with arrays (:mod:`workbench.memory.live_arrays`; ``engine="kernel"``, or
    ``"auto"`` from :data:`SWEEP_KERNEL_MIN_OPS` ops, by the same sweep compiled: the same
    arrays), the few wider ones here."""
    from workbench.memory.compiled import sweep_compiled, sweep_kernel
    from workbench.memory.live_arrays import MASK_BITS, sweep_arrays

    if engine not in SWEEP_ENGINES:
        raise ValueError(f"unknown sweep engine {engine!r} (known: {', '.join(SWEEP_ENGINES)})")

    order = _Order(schedule)
    index = order.index
    births = np.array([index[p] for p in producers], dtype=np.int64)
    kept = _reduced_users(users, order, schedule)
    tails = np.asarray(outputs, dtype=bool).copy()
    heads = np.flatnonzero(~tails)
    if len(heads):
        tails[heads[never_dead(order, kept, heads)]] = True
    heads = np.flatnonzero(~tails)
    produced: list[list[int]] = [[] for _ in range(order.n)]  # every planned tensor, by producer
    for k, b in enumerate(births.tolist()):
        produced[b].append(k)
    wide = np.array([len(kept[k]) > MASK_BITS for k in heads.tolist()], dtype=bool)
    compiled = engine == "kernel" or (engine == "auto" and order.n >= SWEEP_KERNEL_MIN_OPS
                                      and sweep_kernel() is not None)
    sweep = sweep_compiled if compiled else sweep_arrays
    rows, cols, f_rows, f_cols = sweep(order, births, kept, heads[~wide], produced,
                                       skeleton=skeleton, max_pairs=MAX_LISTED_PAIRS)
    if wide.any():
        w_rows, w_cols, wf_rows, wf_cols = _sweep(order, births, kept, heads[wide], produced,
                                                  skeleton=skeleton,
                                                  max_pairs=MAX_LISTED_PAIRS - len(rows))
        rows, cols = np.concatenate((rows, w_rows)), np.concatenate((cols, w_cols))
        f_rows = np.concatenate((f_rows, np.array(wf_rows, dtype=np.int64)))
        f_cols = np.concatenate((f_cols, np.array(wf_cols, dtype=np.int64)))
    return births, tails, rows, cols, ([f_rows], [f_cols])


def _sweep(order: _Order, births: np.ndarray, kept: Sequence[Sequence[int]], carried: np.ndarray,
           produced: Sequence[Sequence[int]], *, skeleton: bool, max_pairs: int | None = None
           ) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    """The forward sweep over dictionaries, for the ``carried`` tensors (those with many users):
    a mask is the frozenset of the user ops seen (see the module docstring); the same cap on
    its listed pairs as the array sweeps."""
    n = order.n
    birth = births.tolist()
    heads = [int(k) for k in carried[np.argsort(births[carried], kind="stable")]]
    head_births = births[heads] if heads else np.zeros(0, dtype=np.int64)
    head_start = np.searchsorted(head_births, np.arange(n + 1), side="left").tolist()
    full = [0] * len(kept)  # number of users kept
    uses: list[list[int]] = [[] for _ in range(n)]  # op -> carried tensors it uses
    for k in heads:
        full[k] = len(kept[k])
        for u in kept[k]:
            uses[u].append(k)
    is_head = set(heads)
    prev, waits, barriers = order.prev, order.waits, order.barriers
    refs = [int(order.has_next[i]) + order.waiters[i] for i in range(n)]
    out: dict[int, dict[int, frozenset[int]]] = {}  # op -> {live tensor: user ops seen}
    done: dict[int, set[int]] = {}  # op -> tensors whose last unseen user it was
    rows: list[int] = []
    cols: list[int] = []
    f_rows: list[int] = []
    f_cols: list[int] = []
    crossing = _Crossing(heads, head_start, birth, kept)
    bar_out: dict[int, frozenset[int]] = {}
    next_bar = 0
    no_done: frozenset[int] = frozenset()
    nothing: frozenset[int] = frozenset()
    completed: AbstractSet[int]
    for i in range(n):
        while next_bar < len(barriers) and barriers[next_bar] <= i:
            b = barriers[next_bar]
            bar_out = crossing.at(b, f_rows, f_cols, n + next_bar if skeleton else -1)
            next_bar += 1
        q0, ws = prev[i], waits[i]
        top = max(q0, max(ws)) if ws else q0
        b = order.barrier_before(i)
        others: list[int] = []
        if b > top:  # the barrier saw every other predecessor: it is the only one that counts
            base, completed, fresh_from, owned = bar_out, no_done, b, False
        elif top >= 0:
            base, completed, fresh_from = out[top], done.get(top, no_done), top + 1
            owned = refs[top] == 1
            others = [a for a in ws if a != top]
            if q0 >= 0 and q0 != top:
                others.append(q0)
        else:
            base, completed, fresh_from, owned = {}, no_done, 0, True
        if not others:
            live = base if owned else dict(base)
            if completed and skeleton:  # dead here, live at the only predecessor
                f_rows.extend(completed)
                f_cols.extend([i] * len(completed))
                crossing.mark(completed)
        else:
            live = {}
            checks = [(a, out[a], done.get(a, no_done)) for a in others]
            for k, m in base.items():
                seen, dead_before = _seen(k, m, checks, birth)
                if seen is not None and len(seen) != full[k]:
                    live[k] = seen
                elif not dead_before and skeleton:
                    f_rows.append(k)
                    f_cols.append(i)
                    crossing.mark((k,))
            for k in completed:
                if skeleton and not _seen(k, nothing, checks, birth)[1]:
                    f_rows.append(k)
                    f_cols.append(i)
                    crossing.mark((k,))
        for k in heads[head_start[fresh_from]:head_start[i]]:
            live[k] = nothing
        made = produced[i]
        if made and live:
            keys = list(live)
            if max_pairs is not None and len(rows) + len(keys) * len(made) > max_pairs:
                raise TooManyPairs(max_pairs, i, n)
            for t in made:
                rows.extend(keys)
                cols.extend([t] * len(keys))
        finished: set[int] = set()
        for k in uses[i]:
            seen_k = live.get(k)
            if seen_k is not None:
                seen_k = seen_k | {i}
                if len(seen_k) == full[k]:
                    del live[k]
                    finished.add(k)
                else:
                    live[k] = seen_k
        for t in made:
            if t in is_head:
                if kept[t] == [i]:  # its producer is its only user
                    finished.add(t)
                else:
                    live[t] = nothing
        for a in (q0, *ws):
            if a >= 0:
                refs[a] -= 1
                if not refs[a]:
                    out.pop(a, None)
                    done.pop(a, None)
        if refs[i]:
            out[i] = live
            if finished:
                done[i] = finished
    return (np.array(rows, dtype=np.int32), np.array(cols, dtype=np.int32), f_rows, f_cols)


def _seen(k: int, mask: frozenset[int],
          checks: Sequence[tuple[int, Mapping[int, frozenset[int]], AbstractSet[int]]],
          birth: Sequence[int]) -> tuple[frozenset[int] | None, bool]:
    """Tensor ``k``'s users seen through the other predecessors (``mask``: those seen through the
    one issued last; ``None``: all of them), and whether one of them was already dead for it.  The
    union is built in one set, so merging many predecessors costs their masks' sizes, not a copy
    each."""
    acc: set[int] | None = None
    complete = False
    for a, live_a, done_a in checks:
        m = live_a.get(k)
        if m is not None:
            if m and not complete:
                if acc is None:
                    acc = set(mask)
                acc |= m
        elif k in done_a:
            complete = True
        elif birth[k] < a:
            return None, True
    if complete:
        return None, False
    return (mask if acc is None else frozenset(acc)), False


class _Crossing:
    """The tensors alive across each barrier, kept as the sweep goes (born before it, a user at
    or after it), for the barrier's live set."""

    def __init__(self, heads: Sequence[int], head_start: Sequence[int], birth: Sequence[int],
                 kept: Sequence[Sequence[int]]) -> None:
        self.heads, self.head_start, self.kept = heads, head_start, kept
        self.by_last: dict[int, list[int]] = {}
        for k in heads:
            self.by_last.setdefault(kept[k][-1], []).append(k)
        self.alive: dict[int, None] = {}
        self.edged: set[int] = set()  # tensors with a frontier edge already
        self.at_ = 0

    def mark(self, tensors: Iterable[int]) -> None:
        self.edged.update(tensors)

    def at(self, b: int, f_rows: list[int], f_cols: list[int], node: int
           ) -> dict[int, frozenset[int]]:
        """The live set of the barrier issued before op ``b``.  Tensors whose users are all
        before it and that died nowhere yet get a frontier edge to its ``node`` (-1: none)."""
        start = self.at_
        for k in self.heads[self.head_start[start]:self.head_start[b]]:
            self.alive[k] = None
        for j in range(start, b):
            for k in self.by_last.get(j, ()):
                del self.alive[k]
                if node >= 0 and k not in self.edged:
                    f_rows.append(k)
                    f_cols.append(node)
                    self.edged.add(k)
        self.at_ = b
        return {k: frozenset(u for u in self.kept[k] if u < b) for k in self.alive}
