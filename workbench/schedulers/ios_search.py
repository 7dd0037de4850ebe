"""IOS's dynamic program over endings for one part, with bounded work, time and memory.

A *part* is at most ``max_part_size`` units in topological order (local index = position).  A
state is the bitmask ``S`` of units still to schedule; an *ending* of ``S`` is a non-empty subset
``E`` with no edge from ``E`` back into ``S - E`` (it can be the last stage).  Its weakly
connected components are the stage's groups: at most ``s`` groups of at most ``r`` units.
``cost(S) = min_E cost(S - E) + latency(E)`` (notes ios.md §3).

**Endings, lazily.**  The closure of a unit ``u`` in ``S`` is ``u`` plus its descendants in
``S``; every ending is a union of closures, and two closures are connected iff they intersect.
So the candidate *groups* of ``S`` are the connected unions of closures with at most ``r`` units
(grown one predecessor at a time), and the endings are the families of at most ``s`` pairwise
disjoint groups, generated one at a time by an explicit stack: memory is O(groups + s) per state,
never the list of all endings (the cause of the old ``MemoryError`` on wide graphs).  This is the
same space as enumerating every ending and filtering by components (issue #10 of the paper's
code fixed), so the state count on Inception V3 stays at the paper's 1,206.

**Fewer stage evaluations, same result.**  A stage never runs faster than any of its groups alone,
nor than the stage without its last-issued group (more work sharing the device; checked on the
simulator by ``tests/test_ios.py``), and an ending grows by groups issued after the ones it has,
so its latency is at least that of its slowest group alone and of the ending it grew from.
One-group endings come first (a good incumbent early); an ending whose bound cannot beat the best
so far is never evaluated, and new stages wait (up to :data:`DEFER` per state) to be evaluated in
order of their bound.  The winner is the cheapest ending, ties going to the first enumerated,
exactly as a plain scan would choose.  In eager mode a stage of several groups is also no faster
than its host's issue time plus the oracle's sync (:mod:`workbench.schedulers.ios_bounds`, an
exact bound).  The bounds are used with the simulator oracle only
(``bounds=False`` for a user's oracle, which need not be monotone, e.g. a noisy measurement).

**Bounded work.**  One attempt at a (sub)part may spend ``work_cap`` work units (a transition is
1, a stage seen for the first time in this part is :data:`STAGE_WORK` more).  Past that the
attempt stops and the subpart is split into its first and second half in topological order, each
searched on its own: the memo stays valid across attempts (``cost(S)`` depends on ``S`` alone), so
the first half reuses what the aborted attempt solved; later subparts at least as large as an
aborted one are split without an attempt.  The memo and latency table live per part and are
trimmed at every split, so memory is O(work_cap).  Everything here counts work, never time, so a
search is deterministic; only the time budget (checked every 256 transitions and before every
subpart) is not.

**Budgets.**  When the deadline passes or the global state budget is spent, the subpart being
searched is finished from the largest state already solved (an optimal prefix) plus a greedy
forward pass over the rest, and every later subpart of the part greedily: each greedy step runs
the first ``s`` ready units as one stage when the oracle says that beats running them one by one,
else the first ready unit alone.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field

STAGE_WORK = 16        # a first-seen stage costs this many transitions' worth of work
TICK = 255             # check the clock every TICK + 1 transitions
MERGE_TIE = 1e-9       # µs added to a merged stage: on a tie, keep the graph unmerged
DEFER = 2048           # new stages of one state evaluated best bound first (memory: per level)
# The bounds below rest on "a stage is no faster than a part of it"; first-come-first-served block
# slots make that hold only approximately (a scheduling anomaly can shave a few 0.1% off), so
# bounds of multi-group stages are taken with this much slack.
BOUND_SLACK = 0.97
HOST_MARGIN = 1 - 1e-9  # the host-time bound is exact; this covers float sums in another order

GroupOracle = Callable[[list[list[int]]], float]   # groups of global unit ids -> µs
MergeOracle = Callable[[tuple[int, ...]], float]   # units to merge -> µs


class _Abort(Exception):
    """This attempt spent its work cap: split the subpart."""


class _OutOfBudget(Exception):
    def __init__(self, budget: str) -> None:
        super().__init__(budget)
        self.budget = budget


@dataclass
class PartResult:
    """What the search of one part found.  ``stages`` hold global unit ids; ``merged[i]`` says
    whether stage ``i`` runs as one merged convolution."""

    index: int
    stages: list[list[list[int]]] = field(default_factory=list)
    merged: list[bool] = field(default_factory=list)
    cost_us: float = 0.0
    states: int = 0
    transitions: int = 0
    evaluated: int = 0
    hits: int = 0
    pruned: int = 0
    simulations: int = 0
    splits: int = 0
    greedy_units: int = 0
    budget_hit: str | None = None
    seconds: float = 0.0
    peak_waiting: int = 0     # most endings held at once (waiting lists over the recursion)


class PartSearch:
    """The memoised DP over one part (see the module docstring)."""

    def __init__(self, units: Sequence[int], succ: Sequence[int], r: int, s: int,
                 latency: GroupOracle, *, work_cap: int | None = None,
                 states_cap: int | None = None, deadline: float | None = None,
                 merge_keys: Sequence[Hashable | None] | None = None,
                 merge_latency: MergeOracle | None = None, bounds: bool = True,
                 on_tick: Callable[[PartSearch], None] | None = None,
                 host_us: Sequence[float] | None = None, sync_us: float = 0.0) -> None:
        n = len(units)
        self.units, self.n, self.r, self.s = list(units), n, r, s
        self.latency_of, self.merge_latency_of = latency, merge_latency
        self.succ = list(succ)
        self.pred = [0] * n
        for k in range(n):
            m = self.succ[k]
            while m:
                low = m & -m
                self.pred[low.bit_length() - 1] |= 1 << k
                m ^= low
        self.desc = [0] * n
        for k in range(n - 1, -1, -1):
            m, d = self.succ[k], self.succ[k]
            while m:
                low = m & -m
                d |= self.desc[low.bit_length() - 1]
                m ^= low
            self.desc[k] = d
        self.merge_keys = list(merge_keys) if merge_keys is not None else None
        self.work_cap, self.states_cap, self.deadline = work_cap, states_cap, deadline
        self.on_tick, self.bounds = on_tick, bounds
        self.host_us = list(host_us) if host_us is not None and bounds else None
        self.sync_us = sync_us
        self.memo: dict[int, tuple[float, int, bool]] = {0: (0.0, 0, False)}
        self.lat: dict[int, float] = {}
        self.mlat: dict[int, float | None] = {}
        self.work = 0
        self.waiting = 0
        self.result = PartResult(-1)

    # ---------------------------------------------------------------------------- driver
    def run(self, index: int = 0) -> PartResult:
        """Search the whole part; always returns a schedule covering every unit."""
        t0 = time.perf_counter()
        res = self.result
        res.index = index
        queue = [(1 << self.n) - 1] if self.n else []
        too_big = self.n + 1          # the smallest subpart size whose attempt was aborted
        while queue:
            mask = queue.pop(0)
            if res.budget_hit is None and self.deadline is not None \
                    and time.time() > self.deadline:
                res.budget_hit = "time_budget_s"
            if res.budget_hit is not None:
                self._emit(self._greedy(mask))
                continue
            if too_big <= mask.bit_count() > 1:   # as large as a failed one: split it unattempted
                queue[:0] = list(_halves(mask))
                res.splits += 1
                continue
            self.work = self.waiting = 0
            try:
                cost = self._solve(mask) if mask not in self.memo else self.memo[mask][0]
                res.cost_us += cost
                self._emit(self._reconstruct(mask))
                self._trim(0)
            except _Abort:
                first, second = _halves(mask)
                queue[:0] = [first, second]
                res.splits += 1
                too_big = min(too_big, mask.bit_count())
                self._trim(first)
            except _OutOfBudget as hit:
                res.budget_hit = hit.budget
                prefix = self._best_prefix(mask)
                res.cost_us += self.memo[prefix][0]
                self._emit(self._reconstruct(prefix) + self._greedy(mask & ~prefix))
        res.seconds = time.perf_counter() - t0
        return res

    def _emit(self, stages: list[tuple[list[list[int]], bool]]) -> None:
        res = self.result
        for groups, merged in stages:
            res.stages.append([[self.units[k] for k in g] for g in groups])
            res.merged.append(merged)

    def _trim(self, keep: int) -> None:
        """Drop memo and latency entries outside ``keep`` (memory stays O(work cap))."""
        self.memo = {k: v for k, v in self.memo.items() if not k & ~keep}
        self.lat = {k: v for k, v in self.lat.items() if not k & ~keep}
        self.mlat = {k: v for k, v in self.mlat.items() if not k & ~keep}

    # ---------------------------------------------------------------------------- the DP
    def _solve(self, state: int) -> float:
        """cost(state), memoised.  Every ending is a transition; its stage is evaluated only
        if its lower bound could still win, and new stages wait (up to :data:`DEFER` of them)
        until the cheap ones are known and are then evaluated best bound first.  The winner
        is the cheapest ending, ties to the first enumerated (parallel before merged), so the
        result does not depend on the evaluation order."""
        res = self.result
        res.states += 1
        if self.states_cap is not None and res.states > self.states_cap:
            raise _OutOfBudget("max_states")
        memo, lat = self.memo, self.lat
        merging = self.merge_keys is not None
        best, best_at, best_ending, best_merged = math.inf, -1, 0, False
        waiting: list[tuple[float, int, int, float]] = []
        at = -1
        for ending, bound in self._endings(state):
            at += 1
            res.transitions += 1
            self.work += 1
            if not res.transitions & TICK:
                self._tick()
            rest = state ^ ending
            hit = memo.get(rest)
            cost = hit[0] if hit is not None else self._solve(rest)
            low = cost + bound
            if low > best or (low == best and at > best_at):
                res.pruned += 1          # cannot win: its slowest part alone is too slow
            else:
                stage = lat.get(ending)
                if stage is None and len(waiting) < DEFER:
                    waiting.append((low, at, ending, cost))
                    self.waiting += 1
                    if self.waiting > res.peak_waiting:
                        res.peak_waiting = self.waiting
                else:
                    if stage is None:
                        stage = self._stage_latency(ending)
                    else:
                        res.hits += 1
                    total = cost + stage
                    if total < best or (total == best and at < best_at):
                        best, best_at, best_ending, best_merged = total, at, ending, False
            if merging:
                merged = self._merge_latency(ending)
                if merged is not None:
                    total = cost + merged
                    if total < best or (total == best and at < best_at):
                        best, best_at, best_ending, best_merged = total, at, ending, True
        waiting.sort()
        self.waiting -= len(waiting)
        for low, at, ending, cost in waiting:
            if low > best or (low == best and at > best_at):
                res.pruned += 1
                continue
            stage = lat.get(ending)
            if stage is None:
                stage = self._stage_latency(ending)
            else:
                res.hits += 1
            total = cost + stage
            if total < best or (total == best and at <= best_at):
                best, best_at, best_ending, best_merged = total, at, ending, False
        memo[state] = (best, best_ending, best_merged)
        return best

    def _tick(self) -> None:
        if self.work_cap is not None and self.work > self.work_cap:
            raise _Abort
        if self.deadline is not None and time.time() > self.deadline:
            raise _OutOfBudget("time_budget_s")
        if self.on_tick is not None:
            self.on_tick(self)

    def _stage_latency(self, ending: int, transition: bool = True) -> float:
        """Latency of the stage ``ending`` from the oracle, kept in the part's table.  Counts a
        transition's stage as evaluated (simulated now) or a hit (the oracle's signature cache
        knew it); ``simulations`` counts every oracle run."""
        res = self.result
        self.work += STAGE_WORK
        before = getattr(self.latency_of, "simulated", None)
        value = self.latency_of([[self.units[k] for k in g] for g in self.groups(ending)])
        after = getattr(self.latency_of, "simulated", None)
        fresh = before is None or after != before
        res.simulations += fresh
        if transition:
            if fresh:
                res.evaluated += 1
            else:
                res.hits += 1
        self.lat[ending] = value
        return value

    def _merge_latency(self, ending: int) -> float | None:
        """Latency of the ending as one merged conv, or None when its units cannot merge."""
        if ending in self.mlat:
            return self.mlat[ending]
        keys = self.merge_keys
        assert keys is not None and self.merge_latency_of is not None
        members, key, ok = [], None, ending & (ending - 1) != 0   # at least two units
        m = ending
        while m and ok:
            low = m & -m
            k = low.bit_length() - 1
            m ^= low
            ok = keys[k] is not None and (key is None or keys[k] == key) and \
                not self.succ[k] & ending
            key = keys[k]
            members.append(self.units[k])
        value = self.merge_latency_of(tuple(members)) + MERGE_TIE if ok else None
        if value is not None:
            self.result.simulations += 1
        self.mlat[ending] = value
        return value

    def _endings(self, state: int) -> Iterator[tuple[int, float]]:
        """Every ending of ``state`` with at most s groups of at most r units, lazily, each with
        a lower bound on its latency.

        Endings grow one group at a time (depth-first), each new group issued after the
        others, and a stage (nearly: :data:`BOUND_SLACK`) never runs faster with one more group
        issued last, so the bound of ``E + g`` is the larger of ``latency(E)`` (when the caller
        has computed it meanwhile, else ``E``'s own bound) and ``g`` run alone, times the
        slack."""
        groups = self._candidate_groups(state)
        if self.bounds:
            alone, known = [self._group_latency(g) for g in groups], self.lat
        else:                              # a user's oracle need not be monotone: no bounds
            alone, known = [-math.inf] * len(groups), {}
        yield from zip(groups, alone)      # one-group stages first: a good bound early
        if self.s > 1:
            host = self.host_us
            issue = None if host is None else [sum(host[k] for k in _bits(g)) for g in groups]
            yield from self._wider_endings(groups, alone, self.s - 1, known, issue,
                                           self.sync_us)

    @staticmethod
    def _wider_endings(groups: list[int], alone: list[float], more: int,
                       lat: dict[int, float], issue: list[float] | None = None,
                       sync_us: float = 0.0) -> Iterator[tuple[int, float]]:
        """The endings of two or more groups: depth-first, each group followed by later
        disjoint ones (at most ``more`` of them); ``lat``: known stage latencies; ``issue``:
        each group's eager host time (:mod:`workbench.schedulers.ios_bounds`), a bound with
        the oracle's ``sync_us`` too."""
        n = len(groups)
        nxt, used = [0] * (more + 2), [0] * (more + 2)
        bound, hsum = [0.0] * (more + 2), [0.0] * (more + 2)
        for first in range(n):
            used[1], nxt[1] = groups[first], first + 1
            bound[1] = lat.get(groups[first], alone[first])
            hsum[1] = issue[first] if issue is not None else 0.0
            depth = 1
            while depth >= 1:
                i, u = nxt[depth], used[depth]
                while i < n and groups[i] & u:
                    i += 1
                if i == n:
                    depth -= 1
                    continue
                nxt[depth] = i + 1
                ending = u | groups[i]
                b = bound[depth] if bound[depth] > alone[i] else alone[i]
                low, h = b * BOUND_SLACK, 0.0
                if issue is not None:
                    h = hsum[depth] + issue[i]
                    low = max(low, h * HOST_MARGIN + sync_us)
                yield ending, low
                if depth < more:
                    depth += 1
                    used[depth], nxt[depth] = ending, i + 1
                    bound[depth] = lat.get(ending, b)
                    hsum[depth] = h

    def _group_latency(self, group: int) -> float:
        """The latency of the stage ``group`` (from the table, else the oracle), not counted as
        a transition's: one group alone, or the greedy finish's stages."""
        value = self.lat.get(group)
        if value is None:
            value = self._stage_latency(group, transition=False)
        return value

    def _candidate_groups(self, state: int) -> list[int]:
        """Connected successor-closed subsets of ``state`` with at most r units, ordered by
        their first unit (so a family of disjoint groups lists its groups in stage order)."""
        r, desc, pred = self.r, self.desc, self.pred
        closure: dict[int, int] = {}
        m = state
        while m:
            low = m & -m
            m ^= low
            c = (desc[low.bit_length() - 1] | low) & state
            if c.bit_count() <= r:
                closure[low] = c
        found = set(closure.values())
        frontier = list(found)
        while frontier:
            grown = []
            for g in frontier:
                size = g.bit_count()
                if size >= r:
                    continue
                preds, m = 0, g
                while m:
                    low = m & -m
                    preds |= pred[low.bit_length() - 1]
                    m ^= low
                preds &= state & ~g
                while preds:
                    low = preds & -preds
                    preds ^= low
                    if low not in closure:
                        continue
                    union = g | closure[low]
                    if union not in found and union.bit_count() <= r:
                        found.add(union)
                        grown.append(union)
            frontier = grown
        return sorted(found, key=lambda g: ((g & -g), g))

    def groups(self, ending: int) -> list[list[int]]:
        """Weakly connected components of ``ending`` (local ids), each in topological order,
        ordered by their first unit."""
        comps: list[list[int]] = []
        left = ending
        while left:
            low = left & -left
            comp, frontier = low, low
            while frontier:
                f = frontier & -frontier
                frontier ^= f
                k = f.bit_length() - 1
                new = (self.succ[k] | self.pred[k]) & ending & ~comp
                comp |= new
                frontier |= new
            left &= ~comp
            comps.append(_bits(comp))
        return comps

    # ---------------------------------------------------------------------------- finishing
    def _reconstruct(self, mask: int) -> list[tuple[list[list[int]], bool]]:
        stages = []
        while mask:
            _, ending, merged = self.memo[mask]
            groups = self.groups(ending)
            stages.append(([[k for g in groups for k in g]] if merged else groups, merged))
            mask &= ~ending
        stages.reverse()
        return stages

    def _best_prefix(self, mask: int) -> int:
        """The largest solved state inside ``mask`` that can run first (no predecessor in
        ``mask`` outside it); 0 when none."""
        best = 0
        for key in self.memo:
            if key & ~mask or key.bit_count() <= best.bit_count():
                continue
            preds, m = 0, key
            while m:
                low = m & -m
                preds |= self.pred[low.bit_length() - 1]
                m ^= low
            if not preds & mask & ~key:
                best = key
        return best

    def _greedy(self, mask: int) -> list[tuple[list[list[int]], bool]]:
        """Forward greedy stages over ``mask``: the first s ready units together when the
        oracle prefers that to running them one after another, else the first one alone."""
        res = self.result
        res.greedy_units += mask.bit_count()
        stages: list[tuple[list[list[int]], bool]] = []
        done = ~mask
        while mask & ~done:
            ready = [k for k in _bits(mask & ~done) if not self.pred[k] & ~done]
            take = ready[: self.s]
            cost = self._group_latency(1 << take[0])
            if len(take) > 1:       # ready units share no edge: each is its own group
                together = self._group_latency(sum(1 << k for k in take))
                apart = sum(self._group_latency(1 << k) for k in take)
                if together < apart:
                    cost = together
                else:
                    take = take[:1]
            res.cost_us += cost
            stages.append(([[k] for k in take], False))
            for k in take:
                done |= 1 << k
        return stages


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _halves(mask: int) -> tuple[int, int]:
    """The first ceil(k/2) units of ``mask`` in topological order, and the rest."""
    ids = _bits(mask)
    first = 0
    for k in ids[: (len(ids) + 1) // 2]:
        first |= 1 << k
    return first, mask & ~first
