"""The exact optimum for small graphs: the best schedule of all, found by exhaustive search.

The search space is every multi-stream schedule without barriers: every partition of the ops into
streams (restricted growth strings over a topological order) times every dependency-consistent
launch order on each stream (linear extensions of the sub-order), with the transitively reduced
syncs that make it valid; declared side effects keep their program order as they do for every
policy (the search runs over the graph with ``passes.side_effects.add_side_effect_edges``: without
them it raced two writes of one state).  Each candidate is run by the simulator (default:
``mode="graph"``, the sink mode, so host issue order does not matter) and the smallest makespan
wins.  Every policy without barriers produces a schedule inside this space, so its simulated
makespan is at least the optimum.  Barrier policies (wavefront, IOS) lie outside it: every wait in
the space is a dependency edge, while a barrier makes every op of a stage wait for every op of the
one before, dependency or not.  Such a wait can pay: holding back an op that has no inputs keeps
its thread blocks off the device while a wide predecessor of the critical path runs.  On the 7-op
graph of ``tests/test_optimum.py::test_a_barrier_can_beat_the_optimum`` IOS waits its 312-block
source ``n4`` for the 488-block ``n0`` and comes out at 250.72 µs against the optimum's 251.85 µs
(0.45% below).  IOS starts ``n4`` on a stream of its own the moment ``n0`` ends; in the space
``n4`` starts at once or behind another op on its own stream (behind ``n0`` with ``n1`` beside:
264.43 µs).  Over 300 random graphs of up to 7 ops (``tests.strategies.dags``) IOS came in at most
2.2% under the optimum and wavefront 0.005%.  So a barrier schedule is bounded only by the critical
path and work bounds, not by this optimum.

Branch and bound keeps it tractable: a partition is skipped when its longest stream's total
stand-alone time (a stream runs its ops one after another) or the critical path already reaches the
best makespan found, and the search stops as soon as a schedule meets the critical path.  The space
still grows like the number of ordered set partitions, so ``max_enumerated`` stream orders and
``max_candidates`` simulated schedules guard it with a one-line OptionError, and ``time_budget_s``
bounds its wall time: when the budget runs out the search stops (the clock is read in every loop,
the enumeration of stream orders included) and returns the best schedule found so far with
``complete=False`` (an upper bound on the optimum, not the optimum).  In practice: every
graph of up to 8 ops and dependency-rich graphs of 10–12 ops take seconds; wide graphs of 9+ ops
(e.g. three independent layers of three) exceed the limits.

**Refused before searching** (issue 44; 12 random ops used to run ~20 s before the limit said
no).  Two steps come first, both deterministic and cheap:

1. *A seeded incumbent.*  Every built-in policy that makes barrier-free schedules (all but the
   slow IOS and the policies a user registered, which may not end; any schedule it returns with
   barriers is skipped) is run, and its stream assignment
   and per-stream orders are rebuilt exactly as the search builds a candidate (streams sorted,
   issue order from :func:`~workbench.values.schedule.derive_issue_order`, syncs from
   :func:`~workbench.values.schedule.build_schedule`) and simulated under the same mode and
   precision: a point of the search space, so its makespan ``C`` is an upper bound on the
   optimum and pruning is strong from the first partition.  The best of these is the incumbent
   (``candidates`` counts them); the search replaces it only by a strictly better schedule, so
   the optimum makespan is unchanged and the schedule returned changes only on a tie.
2. *An exact count of the search.*  With the incumbent held at ``C`` the partitions that survive
   the block bound are those whose every block ``B`` has ``offset + alone(B) < C`` (the same
   floating-point test as the search), and each contributes the product of its blocks' numbers
   of linear extensions ``e(B)``.  So the stream orders the search would enumerate number
   ``N(C) = T(all ops)`` with ``T(∅) = 1`` and ``T(S) = Σ e(B)·T(S − B)`` over the blocks
   ``B ⊆ S`` holding the first op of ``S`` with ``offset + alone(B) < C`` (a dynamic programme
   over op subsets, blocks grown in op order and cut once too heavy; ``e`` by the same
   programme over minimal elements).  ``N(C)`` is exact for a fixed incumbent and an upper bound
   on the real search, whose incumbent only improves: its error is the pruning that better
   incumbents add later and the early stop at the critical path, never an undercount.  The count
   stops as soon as any ``T(S)`` passes ``max_enumerated`` (every reachable ``T(S)`` is at most
   ``T(all ops)``), so a refusal costs at most the subsets visited until then; at 12 ops the whole
   programme is at most 3^12/2 ≈ 2.7·10^5 block steps.  Candidates (simulations) are estimated
   as ``N(C)`` times the share of :data:`PROBES` stream orders, drawn uniformly from the counted
   space with a fixed seed, that pass the path bound (no deadlock, longest path below ``C``):
   an unbiased estimate of the candidates under ``C`` (binomial error, relative standard error
   ``sqrt((1-p)/(p·PROBES))`` for a share ``p``), again an upper estimate of the real search.
   Either estimate past its limit (``max_enumerated``, ``max_candidates``) is a one-line
   OptionError naming the graph, the estimate and the limit, before any stream order is tried.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from workbench.errors import OptionError
from workbench.passes.side_effects import add_side_effect_edges
from workbench.simulator.cost_model.costs import DeviceSpec, get_device
from workbench.values.graph import Graph, OpId
from workbench.values.schedule import Schedule, build_schedule, derive_issue_order


@dataclass(frozen=True)
class Optimum:
    """The best schedule found, its makespan and how many candidates were simulated;
    ``complete`` is False when the time budget stopped the search early (then ``makespan_us``
    is only an upper bound on the optimum)."""

    schedule: Schedule
    makespan_us: float
    candidates: int
    complete: bool = True
    note: str | None = None


class _OutOfTime(Exception):
    """Raised inside the search when the time budget is spent."""


class _Clock:
    """The search's deadline, read at every step (``tick``; a clock read costs ~50 ns)."""

    def __init__(self, budget_s: float | None) -> None:
        if budget_s is not None and (isinstance(budget_s, bool) or not isinstance(
                budget_s, (int, float)) or not budget_s > 0):
            raise OptionError(f"time_budget_s must be a positive number or None, got {budget_s!r}")
        self.deadline = None if budget_s is None else time.perf_counter() + budget_s

    def tick(self) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise _OutOfTime


def exact_optimum(graph: Graph, device: str | DeviceSpec = "h100", *, mode: str = "graph",
                  max_ops: int = 12, max_candidates: int = 50_000,
                  max_enumerated: int = 1_000_000,
                  time_budget_s: float | None = None, precision: str = "auto") -> Optimum:
    """Exhaustively search all barrier-free multi-stream schedules of a small graph (see the
    module docstring).  With ``time_budget_s``, the best schedule found when the budget runs out
    comes back with ``complete=False`` (an OptionError if none was simulated yet); a graph whose
    up-front estimate passes a limit then comes back at once with the best policy's schedule,
    ``complete=False`` and the refusal in ``note`` (without a budget: that OptionError).
    Complexity: O(candidates · V · S) — exponential in the graph's width; the estimate
    O(3^V) at worst, cut at the limit.

    >>> import workbench as wb
    >>> exact_optimum(wb.models.nnc_diamond()).complete
    True
    >>> exact_optimum(wb.models.random_dag(12, seed=0))
    Traceback (most recent call last):
    ...
    workbench.errors.OptionError: exact optimum: 'random_12' (12 ops) would enumerate more than \
max_enumerated=1000000 stream orders under the best policy's 325.1 µs (counted before searching; \
too wide for exhaustive search)
    """
    clock = _Clock(time_budget_s)

    if len(graph) > max_ops:
        raise OptionError(f"exact optimum: {graph.name!r} has {len(graph)} ops, more than "
                          f"max_ops={max_ops} (exhaustive search is exponential)")
    # declared side effects keep program order, as for every policy (schedulers.schedule): the
    # search runs over the graph with those edges, and its schedule is of the user's graph
    ordered = add_side_effect_edges(graph)
    state = _Search(graph)
    try:
        _search(ordered, get_device(device), mode, max_candidates, max_enumerated, clock, state,
                precision)
    except _OutOfTime:
        if state.best is None:
            raise OptionError(f"exact optimum: the time budget of {time_budget_s:g} s ran out "
                              f"before any schedule of {graph.name!r} was simulated") from None
        return state.optimum(complete=False)
    except _Refused as refused:
        if time_budget_s is None or state.best is None:
            raise OptionError(str(refused)) from None
        return state.optimum(complete=False, note=str(refused))
    if state.best is None:
        raise OptionError(f"exact optimum: no schedule found for {graph.name!r}")
    return state.optimum()


class _Search:
    """The incumbent (makespan, schedule) and the number of simulated candidates, for the user's
    ``graph`` (the search may run over a copy with side-effect edges)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.best: tuple[float, Schedule] | None = None
        self.count = 0

    def optimum(self, complete: bool = True, note: str | None = None) -> Optimum:
        """The incumbent as an :class:`Optimum` whose schedule is of the user's graph."""
        assert self.best is not None
        makespan, schedule = self.best
        if schedule.graph is not self.graph:  # its syncs keep the side effects' order
            schedule = replace(schedule, graph=self.graph)
        return Optimum(schedule, makespan, self.count, complete=complete, note=note)


def _search(graph: Graph, spec: DeviceSpec, mode: str, max_candidates: int,
            max_enumerated: int, clock: _Clock, state: _Search, precision: str = "auto") -> None:
    """Branch and bound over partitions and stream orders, after the seeded incumbent and the
    up-front estimate (module docstring); the incumbent is kept in ``state`` so that a search
    stopped by ``clock`` still has it."""
    from workbench.simulator.cost_model.costs import critical_path_us, op_cost

    clock.tick()
    order = list(graph.topo_order())
    before = _ancestors(graph)
    alone = {op.id: op_cost(op, spec, graph=graph, precision=precision).alone_us
             for op in graph.ops}
    offset = spec.graph_launch_us if mode == "graph" else 0.0
    floor = critical_path_us(graph, spec, precision=precision) + offset
    preds = {op: graph.predecessors(op) for op in order}
    simulate = _Candidates(graph, spec, mode, precision, state)
    _seed(graph, order, preds, alone, simulate, clock)
    if state.best is not None and state.best[0] <= floor + 1e-9:
        return  # a policy already reaches the critical path
    if state.best is not None and floor < state.best[0] - 1e-9:
        _refuse_if_too_big(graph, order, before, preds, alone, offset, state.best[0],
                           max_enumerated, max_candidates)

    def heavy(weight: float) -> bool:   # a block this heavy is pruned by the bound below
        return state.best is not None and offset + weight > state.best[0] + 1e-6

    seen: set[frozenset[tuple[OpId, ...]]] = set()
    for weighted in _partitions(order, alone, heavy):
        clock.tick()
        blocks = [b for b, _ in weighted]
        # a stream runs its ops one after another: no schedule with these blocks is faster
        bound = max(floor, offset + max(sum(alone[op] for op in b) for b in blocks))
        if state.best is not None and bound >= state.best[0] - 1e-9:
            continue
        for streams in _stream_orders(blocks, before, clock):
            clock.tick()
            key = frozenset(streams)
            if key in seen:
                continue
            seen.add(key)
            if len(seen) > max_enumerated:
                raise OptionError(f"exact optimum: more than {max_enumerated} stream orders to "
                                  f"enumerate for {graph.name!r} (too wide for exhaustive search)")
            path = _path_bound(streams, preds, alone, order)
            if path is None:
                continue  # stream orders that contradict each other deadlock: not a schedule
            if state.best is not None and offset + path >= state.best[0] - 1e-9:
                continue
            if state.count >= max_candidates + simulate.seeds:
                raise OptionError(f"exact optimum: more than {max_candidates} schedules to "
                                  f"simulate for {graph.name!r} (too wide for exhaustive search)")
            simulate(streams)
            assert state.best is not None
            if state.best[0] <= floor + 1e-9:
                return  # the critical path is reached


class _Candidates:
    """Build a candidate from its stream orders exactly as the search does (streams sorted,
    derived issue order, reduced syncs), simulate it, keep it when strictly better."""

    def __init__(self, graph: Graph, spec: DeviceSpec, mode: str, precision: str,
                 state: _Search) -> None:
        self.graph, self.spec, self.mode, self.precision = graph, spec, mode, precision
        self.state = state
        self.seeds = 0

    def __call__(self, streams: tuple[tuple[OpId, ...], ...]) -> float:
        from workbench.simulator.simulate import simulate_makespan

        stream_of = {op: s for s, ops in enumerate(streams) for op in ops}
        issue = derive_issue_order(self.graph, stream_of, dict(enumerate(streams)))
        sched = build_schedule(self.graph, "optimum", stream_of, issue)
        makespan = simulate_makespan(sched, self.spec, mode=self.mode, precision=self.precision)
        state = self.state
        state.count += 1
        if state.best is None or makespan < state.best[0] - 1e-9:
            state.best = (makespan, sched)
        return makespan


def _seed(graph: Graph, order: list[OpId], preds: dict[OpId, tuple[OpId, ...]],
          alone: dict[OpId, float], simulate: _Candidates, clock: _Clock) -> None:
    """The incumbent from every barrier-free policy's streams, rebuilt as a candidate of the
    search space (module docstring, step 1).  Policies that fail or add barriers are skipped."""
    from workbench.errors import WorkbenchError
    from workbench.schedulers import POLICIES, TEST_OPTIONS

    ops = set(order)
    tried: set[tuple[tuple[OpId, ...], ...]] = set()
    for name in POLICIES.names():
        info = POLICIES.get(name)
        if info.slow or not getattr(info.fn, "__module__", "").startswith("workbench."):
            continue  # the slow IOS, and policies a user registered (unbounded, may not end)
        clock.tick()
        try:
            made = info.fn(graph, **TEST_OPTIONS.get(name, {}))
        except WorkbenchError:
            continue
        streams = tuple(sorted(tuple(s) for s in made.streams.values() if s))
        if made.barriers or streams in tried or made.graph.op_ids != graph.op_ids \
                or sorted(op for s in streams for op in s) != sorted(ops) \
                or _path_bound(streams, preds, alone, order) is None:
            continue
        tried.add(streams)
        simulate(streams)
        simulate.seeds += 1


PROBES = 256
"""Stream orders drawn (seeded, uniformly from the counted space) to estimate the candidates."""


class _Refused(Exception):
    """The up-front estimate passed a limit (the message is the OptionError's)."""


class _TooMany(Exception):
    """The count passed its limit."""


class _Count:
    """``N(C)``, the stream orders the search enumerates under a fixed incumbent ``C`` (module
    docstring, step 2), over op bitmasks in topological order, and uniform draws from them."""

    def __init__(self, order: list[OpId], before: dict[OpId, set[OpId]],
                 alone: dict[OpId, float], offset: float, cap: float, limit: int) -> None:
        index = {op: i for i, op in enumerate(order)}
        self.order, self.limit = order, limit
        self.w = [alone[op] for op in order]
        self.anc = [sum(1 << index[a] for a in before[op]) for op in order]
        self.offset, self.cap = offset, cap
        self.t: dict[int, int] = {0: 1}
        self.e: dict[int, int] = {0: 1}

    def blocks(self, state: int) -> list[int]:
        """The blocks holding the first op of ``state`` that the bound keeps (same float sums
        as the search: the block's times added in op order)."""
        low = state & -state
        rest = [1 << k for k in range(len(self.w)) if (state & ~low) >> k & 1]
        out: list[int] = []
        w, offset, cap = self.w, self.offset, self.cap

        def grow(block: int, weight: float, i: int) -> None:
            if offset + weight >= cap - 1e-9:
                return
            out.append(block)
            for j in range(i, len(rest)):
                bit = rest[j]
                grow(block | bit, weight + w[bit.bit_length() - 1], j + 1)

        grow(low, w[low.bit_length() - 1], 0)
        return out

    def extensions(self, block: int) -> int:
        """Linear extensions of the ops in ``block`` (the first op is any minimal one)."""
        hit = self.e.get(block)
        if hit is None:
            hit, m = 0, block
            while m:
                low = m & -m
                m ^= low
                if not self.anc[low.bit_length() - 1] & block:
                    hit += self.extensions(block ^ low)
            self.e[block] = hit
        return hit

    def total(self, state: int) -> int:
        """``T(state)``; raises :class:`_TooMany` past the limit (``T`` of the whole graph is
        at least ``T`` of any state the recursion reaches)."""
        hit = self.t.get(state)
        if hit is None:
            hit = 0
            for block in self.blocks(state):
                hit += self.extensions(block) * self.total(state ^ block)
                if hit > self.limit:
                    raise _TooMany
            self.t[state] = hit
        return hit

    def draw(self, rng: random.Random) -> tuple[tuple[OpId, ...], ...]:
        """One stream-order family, uniformly from the counted ones."""
        streams = []
        state = (1 << len(self.w)) - 1
        while state:
            pick = rng.randrange(self.t[state])
            for block in self.blocks(state):
                pick -= self.extensions(block) * self.t[state ^ block]
                if pick < 0:
                    break
            streams.append(self._order(block, rng))
            state ^= block
        return tuple(sorted(streams))

    def _order(self, block: int, rng: random.Random) -> tuple[OpId, ...]:
        out = []
        while block:
            pick, m = rng.randrange(self.e[block]), block
            while m:
                low = m & -m
                m ^= low
                if not self.anc[low.bit_length() - 1] & block:
                    pick -= self.e[block ^ low]
                    if pick < 0:
                        break
            out.append(self.order[low.bit_length() - 1])
            block ^= low
        return tuple(out)


def _refuse_if_too_big(graph: Graph, order: list[OpId], before: dict[OpId, set[OpId]],
                       preds: dict[OpId, tuple[OpId, ...]], alone: dict[OpId, float],
                       offset: float, cap: float, max_enumerated: int,
                       max_candidates: int) -> None:
    """A one-line OptionError when the search under the incumbent ``cap`` would enumerate more
    than ``max_enumerated`` stream orders or simulate more than about ``max_candidates``
    schedules (module docstring, step 2); nothing otherwise."""
    count = _Count(order, before, alone, offset, cap, max_enumerated)
    try:
        n = count.total((1 << len(order)) - 1)
    except _TooMany:
        raise _Refused(f"exact optimum: {graph.name!r} ({len(order)} ops) would enumerate "
                          f"more than max_enumerated={max_enumerated} stream orders under the "
                          f"best policy's {cap:,.1f} µs (counted before searching; too wide for "
                          f"exhaustive search)") from None
    if n <= max_candidates:
        return
    rng = random.Random(0)
    passed = 0
    for _ in range(PROBES):
        path = _path_bound(count.draw(rng), preds, alone, order)
        passed += path is not None and offset + path < cap - 1e-9
    estimate = n * passed / PROBES
    if estimate > max_candidates:
        raise _Refused(f"exact optimum: {graph.name!r} ({len(order)} ops) would simulate "
                          f"about {estimate:,.0f} schedules ({passed}/{PROBES} probes of "
                          f"{n:,} stream orders beat the best policy's {cap:,.1f} µs), more "
                          f"than max_candidates={max_candidates} (estimated before searching; "
                          f"too wide for exhaustive search)")


def _path_bound(streams: tuple[tuple[OpId, ...], ...], preds: dict[OpId, tuple[OpId, ...]],
                alone: dict[OpId, float], order: list[OpId]) -> float | None:
    """Longest path of stand-alone times through dependencies plus stream order (no op can run
    faster than alone, and a stream runs its ops in turn); ``None`` if the orders deadlock."""
    prev = {ops[k]: ops[k - 1] for ops in streams for k in range(1, len(ops))}
    finish: dict[OpId, float] = {}
    pending = list(order)
    while pending:
        progressed = []
        for op in pending:
            deps = [*preds[op], *([prev[op]] if op in prev else [])]
            if all(d in finish for d in deps):
                finish[op] = alone[op] + max((finish[d] for d in deps), default=0.0)
            else:
                progressed.append(op)
        if len(progressed) == len(pending):
            return None
        pending = progressed
    return max(finish.values(), default=0.0)


def _ancestors(graph: Graph) -> dict[OpId, set[OpId]]:
    anc: dict[OpId, set[OpId]] = {}
    for op in graph.topo_order():
        acc: set[OpId] = set()
        for p in graph.predecessors(op):
            acc.add(p)
            acc |= anc[p]
        anc[op] = acc
    return anc


def _partitions(items: list[OpId], alone: dict[OpId, float],
                heavy: Callable[[float], bool]) -> Iterator[list[tuple[list[OpId], float]]]:
    """All set partitions, each block in the given order with its total stand-alone time
    (restricted growth strings); partitions with many streams come first, so a good incumbent
    is found early.  A block ``heavy`` calls too heavy is cut with every partition holding it
    (block times only grow as ops join), so the partitions left come in the order of the
    unfiltered enumeration."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    w = alone[first]
    if not heavy(w):
        for part in _partitions(rest, alone, heavy):
            yield [([first], w), *part]
    for part in _partitions(rest, alone, heavy):
        for k in range(len(part)):
            block, weight = part[k]
            if not heavy(w + weight):
                yield [*part[:k], ([first, *block], w + weight), *part[k + 1:]]


def _stream_orders(blocks: list[list[OpId]], before: dict[OpId, set[OpId]],
                   clock: _Clock) -> Iterator[tuple[tuple[OpId, ...], ...]]:
    """Every combination of dependency-consistent orders of the blocks (streams sorted so that
    relabelled duplicates coincide)."""
    per_block = [list(_linear_extensions(block, before, clock)) for block in blocks]
    for combo in itertools.product(*per_block):
        yield tuple(sorted(combo))


def _linear_extensions(block: list[OpId], before: dict[OpId, set[OpId]],
                       clock: _Clock) -> Iterator[tuple]:
    clock.tick()
    if len(block) <= 1:
        yield tuple(block)
        return
    for i, op in enumerate(block):
        if any(other in before[op] for other in block if other != op):
            continue  # an ancestor of op is still unplaced
        rest = block[:i] + block[i + 1:]
        for tail in _linear_extensions(rest, before, clock):
            yield (op, *tail)
