"""The exact optimum for small graphs: the best schedule of all, found by exhaustive search.

The search space is every multi-stream schedule without barriers: every partition of the ops into
streams (restricted growth strings over a topological order) times every dependency-consistent
launch order on each stream (linear extensions of the sub-order), with the transitively reduced
syncs that make it valid.  Each candidate is run by the simulator (default: ``mode="graph"``, the
sink mode, so host issue order does not matter) and the smallest makespan wins.  Every policy
without barriers produces a schedule inside this space, so its simulated makespan is at least the
optimum; barrier policies (wavefront, IOS) add waits to a schedule of the space.

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
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass

from workbench.errors import OptionError
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
    comes back with ``complete=False`` (an OptionError if none was simulated yet).  Complexity:
    O(candidates · V · S) — exponential in the graph's width."""
    clock = _Clock(time_budget_s)

    if len(graph) > max_ops:
        raise OptionError(f"exact optimum: {graph.name!r} has {len(graph)} ops, more than "
                          f"max_ops={max_ops} (exhaustive search is exponential)")
    state = _Search()
    try:
        _search(graph, get_device(device), mode, max_candidates, max_enumerated, clock, state,
                precision)
    except _OutOfTime:
        if state.best is None:
            raise OptionError(f"exact optimum: the time budget of {time_budget_s:g} s ran out "
                              f"before any schedule of {graph.name!r} was simulated") from None
        return Optimum(state.best[1], state.best[0], state.count, complete=False)
    if state.best is None:
        raise OptionError(f"exact optimum: no schedule found for {graph.name!r}")
    return Optimum(state.best[1], state.best[0], state.count)


class _Search:
    """The incumbent (makespan, schedule) and the number of simulated candidates."""

    def __init__(self) -> None:
        self.best: tuple[float, Schedule] | None = None
        self.count = 0


def _search(graph: Graph, spec: DeviceSpec, mode: str, max_candidates: int,
            max_enumerated: int, clock: _Clock, state: _Search, precision: str = "auto") -> None:
    """Branch and bound over partitions and stream orders; the incumbent is kept in ``state``
    so that a search stopped by ``clock`` still has it."""
    from workbench.simulator.cost_model.costs import critical_path_us, op_cost
    from workbench.simulator.simulate import simulate_makespan

    order = list(graph.topo_order())
    before = _ancestors(graph)
    alone = {op.id: op_cost(op, spec, graph=graph, precision=precision).alone_us
             for op in graph.ops}
    offset = spec.graph_launch_us if mode == "graph" else 0.0
    floor = critical_path_us(graph, spec, precision=precision) + offset
    preds = {op: graph.predecessors(op) for op in order}
    seen: set[frozenset[tuple[OpId, ...]]] = set()
    for blocks in _partitions(order):
        clock.tick()
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
            state.count += 1
            if state.count > max_candidates:
                raise OptionError(f"exact optimum: more than {max_candidates} schedules to "
                                  f"simulate for {graph.name!r} (too wide for exhaustive search)")
            stream_of = {op: s for s, ops in enumerate(streams) for op in ops}
            issue = derive_issue_order(graph, stream_of, dict(enumerate(streams)))
            sched = build_schedule(graph, "optimum", stream_of, issue)
            makespan = simulate_makespan(sched, spec, mode=mode, precision=precision)
            if state.best is None or makespan < state.best[0] - 1e-9:
                state.best = (makespan, sched)
            if state.best[0] <= floor + 1e-9:
                return  # the critical path is reached


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


def _partitions(items: list[OpId]) -> Iterator[list[list[OpId]]]:
    """All set partitions, each block in the given order (restricted growth strings); partitions
    with many streams come first, so a good incumbent is found early."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _partitions(rest):
        yield [[first], *part]
    for part in _partitions(rest):
        for k in range(len(part)):
            yield [*part[:k], [first, *part[k]], *part[k + 1:]]


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
