"""Running IOS's parts: one after another in this process, or at once on processes or Dask.

A :class:`SearchContext` holds everything a worker needs; :func:`search_part` (module-level, so
it pickles) searches one part with :class:`~workbench.schedulers.ios_search.PartSearch`.

- **Serial** (``engine="local"``): parts in order, sharing one stage oracle (so a stage seen in an
  earlier part is not simulated again); part ``i`` may use :data:`SHARE_BOOST` times its share
  (its units over the units left) of the states ``max_states`` leaves (:func:`states_share`:
  a count of work, so the schedule does not depend on how busy the machine is), and the same
  share of the time left only when no state budget is given (a wall-clock budget alone).
- **Parallel** (``"processes"``, ``"dask"``; :mod:`workbench._engines`): every part at once, each
  worker process with its own oracle.  Each part may use ``SHARE_BOOST`` × (workers) times its
  share of the budget, never past the deadline.  A state budget is reconciled afterwards in part
  order: a part that used more than the serial search would have let it (:func:`states_share`
  of what the parts before it left) is searched again with that cap, so the schedule is the
  serial one.  Without a time budget running out, parallel and serial schedules are identical.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.schedulers.ios_oracle import StageOracle
from workbench.schedulers.ios_search import PartResult, PartSearch
from workbench.values.graph import Graph, OpId

SHARE_BOOST = 4.0
"""A part may take this many times its proportional share of the states (or time) left."""


def states_share(max_states: int | None, used: int, part_units: int, left_units: int
                 ) -> int | None:
    """The states one part may search: :data:`SHARE_BOOST` times its share (its units over the
    units left, this part's included) of what ``max_states`` leaves after ``used``, at most all
    of it; ``None`` without a state budget.  Pure arithmetic on counts, so a search under a
    state budget is the same on any machine however busy; one hard part cannot starve the
    later ones, and what a part leaves unused goes to them.

    >>> states_share(1000, 0, 10, 100), states_share(1000, 900, 10, 10), states_share(None, 0, 1, 1)
    (400, 100, None)
    """
    if max_states is None:
        return None
    left = max(0, max_states - used)
    return min(left, math.ceil(left * SHARE_BOOST * part_units / max(1, left_units)))

Oracle = Callable[[list[list[OpId]]], float]


@dataclass(frozen=True)
class SearchContext:
    """Everything a worker needs to search any part (pickled once per task)."""

    token: str
    graph: Graph
    unit_ops: list[list[OpId]]
    parts: list[list[int]]
    r: int
    s: int
    device: str
    mode: str
    merge: bool
    part_work: int | None
    cost_oracle: Oracle | None
    sync: str = "device_sync"
    host_us: tuple[float, ...] | None = None   # per unit: eager host issue time (ios_bounds)
    sync_us: float = 0.0                        # the oracle's charge for a multi-group stage


_WORKER_ORACLE: dict[str, Any] = {}   # one oracle per process and search: parts share its cache


def _oracle_for(ctx: SearchContext) -> Any:
    if ctx.token not in _WORKER_ORACLE:
        _WORKER_ORACLE.clear()
        _WORKER_ORACLE[ctx.token] = _UnitOracle(ctx)
    return _WORKER_ORACLE[ctx.token]


class _UnitOracle:
    """Groups of unit ids → µs, over the simulator oracle or the user's; merge latencies too."""

    def __init__(self, ctx: SearchContext) -> None:
        self.ctx = ctx
        self.inner: Any = ctx.cost_oracle or StageOracle(ctx.graph, device=ctx.device,
                                                         mode=ctx.mode, sync=ctx.sync)
        self.merge_cache: dict[tuple[int, ...], float] = {}

    @property
    def simulated(self) -> int | None:
        return getattr(self.inner, "simulated", None)

    def __call__(self, groups: list[list[int]]) -> float:
        unit_ops = self.ctx.unit_ops
        return float(self.inner([[op for u in g for op in unit_ops[u]] for g in groups]))

    def merged(self, units: tuple[int, ...]) -> float:
        hit = self.merge_cache.get(units)
        if hit is None:
            from workbench.schedulers.ios_merge import merged_graph

            merged, ids = merged_graph(self.ctx.graph, self.ctx.unit_ops, [list(units)])
            hit = StageOracle(merged, device=self.ctx.device, mode=self.ctx.mode,
                              sync=self.ctx.sync)([ids[units[0]]])
            self.merge_cache[units] = hit
        return hit


def search_part(ctx: SearchContext, index: int, deadline: float | None, share_s: float | None,
                 states_cap: int | None, on_tick: Callable[[PartSearch], None] | None = None
                 ) -> PartResult:
    """Search part ``index`` (module-level so process and Dask workers can run it)."""
    part = ctx.parts[index]
    if share_s is not None:
        own = time.time() + share_s
        deadline = own if deadline is None else min(deadline, own)
    local = {u: k for k, u in enumerate(part)}
    succ = [0] * len(part)
    graph = ctx.graph
    unit_of = {graph.index(op): u for u in part for op in ctx.unit_ops[u]}  # this part's ops only
    preds = graph.pred_index
    for j, ub in unit_of.items():
        for i in preds[j]:
            ua = unit_of.get(i)
            if ua is not None and ua != ub:
                succ[local[ua]] |= 1 << local[ub]
    oracle = _oracle_for(ctx)
    keys = None
    if ctx.merge:
        from workbench.schedulers.ios_merge import merge_key

        keys = [merge_key(ctx.graph, ctx.unit_ops[u]) for u in part]
    search = PartSearch(part, succ, ctx.r, ctx.s, oracle, work_cap=ctx.part_work,
                        states_cap=states_cap, deadline=deadline, merge_keys=keys,
                        merge_latency=oracle.merged if ctx.merge else None,
                        bounds=ctx.cost_oracle is None, on_tick=on_tick,
                        host_us=None if ctx.host_us is None else [ctx.host_us[u] for u in part],
                        sync_us=ctx.sync_us)
    return search.run(index)


def search_parts(ctx: SearchContext, engine: str, workers: int | None, client: Any,
                 deadline: float | None, budget_s: float | None, max_states: int | None,
                 show_progress: bool,
                 stop: Callable[[PartResult], bool] | None = None) -> list[PartResult]:
    """Every part's result, in part order (see the module docstring); with ``stop`` (serial
    engine only) the results up to the first part for which ``stop`` says True."""
    try:
        return _search_parts(ctx, engine, workers, client, deadline, budget_s, max_states,
                             show_progress, stop)
    finally:
        _WORKER_ORACLE.pop(ctx.token, None)   # the caches go with the search


def _search_parts(ctx: SearchContext, engine: str, workers: int | None, client: Any,
                  deadline: float | None, budget_s: float | None, max_states: int | None,
                  show_progress: bool, stop: Callable[[PartResult], bool] | None = None
                  ) -> list[PartResult]:
    from workbench._progress import progress_bar

    n_parts, total_units = len(ctx.parts), sum(len(p) for p in ctx.parts)
    with progress_bar(total=total_units, desc="IOS search", enabled=show_progress,
                      unit=" units") as bar:
        if engine == "local":
            return _serial_parts(ctx, deadline, max_states, bar, stop)
        from workbench._engines import run_tasks

        width = max(1, min(workers or 2, n_parts))
        tasks = [(ctx, i, deadline, None if budget_s is None or max_states is not None else
                  budget_s * min(1.0, SHARE_BOOST * width * len(p) / max(1, total_units)),
                  max_states) for i, p in enumerate(ctx.parts)]

        def done(i: int, res: PartResult) -> None:
            bar.update(len(ctx.parts[i]))
            bar.note(f"part {i + 1}/{n_parts} done: {res.states:,} states")

        results: list[PartResult] = run_tasks(search_part, tasks, engine=engine,
                                              workers=workers, client=client, on_done=done)
    if max_states is not None:   # as the serial search: part i's share of what i-1 parts left
        used, left_units = 0, total_units
        for i, res in enumerate(results):
            cap = states_share(max_states, used, len(ctx.parts[i]), left_units)
            if cap is not None and (res.states > cap or res.budget_hit == "max_states"):
                results[i] = search_part(ctx, i, deadline, None, cap)
            used += results[i].states
            left_units -= len(ctx.parts[i])
    return results


def _serial_parts(ctx: SearchContext, deadline: float | None, max_states: int | None,
                  bar: Any, stop: Callable[[PartResult], bool] | None = None
                  ) -> list[PartResult]:
    n_parts = len(ctx.parts)
    left_units = sum(len(p) for p in ctx.parts)
    used = 0
    results = []
    last_note = [0.0]
    for i, part in enumerate(ctx.parts):
        share = None
        if deadline is not None and max_states is None:   # its share of the time left
            share = max(0.0, deadline - time.time()) * min(1.0, SHARE_BOOST * len(part)
                                                           / left_units)

        def tick(search: PartSearch, i: int = i, part: list[int] = part) -> None:
            now = time.perf_counter()
            if now - last_note[0] > 0.25:
                last_note[0] = now
                bar.note(f"part {i + 1}/{n_parts} ({len(part)} units): "
                         f"{search.result.states:,} states")

        cap = states_share(max_states, used, len(part), left_units)
        res = search_part(ctx, i, deadline, share, cap, on_tick=tick)
        used += res.states
        left_units -= len(part)
        results.append(res)
        bar.update(len(part))
        if stop is not None and stop(res):
            bar.update(left_units)
            break
    return results


def describe_hit(hit: PartResult, results: Sequence[PartResult], parts: Sequence[list[int]],
                  time_budget_s: float | None, max_states: int | None) -> dict[str, Any]:
    limit = time_budget_s if hit.budget_hit == "time_budget_s" else max_states
    hits = [res.index for res in results if res.budget_hit]
    greedy = sum(res.greedy_units for res in results)
    return {
        "budget": hit.budget_hit, "limit": limit, "part": hit.index + 1, "parts": len(parts),
        "parts_hit": len(hits), "greedy_units": greedy,
        "message": (f"{hit.budget_hit}={limit} ran out in part {hit.index + 1}/{len(parts)}; "
                    f"{greedy} of {sum(len(p) for p in parts)} units in {len(hits)} part(s) were "
                    "scheduled greedily after the best solved prefix"),
    }


def search_counts(results: Sequence[PartResult], parts: Sequence[list[int]],
                  unit_ops: Sequence[Sequence[OpId]], t0: float) -> dict[str, Any]:
    """The notes every IOS schedule carries about its search: blocks and parts, the work counted
    over the parts searched (states, transitions, stages simulated or settled otherwise), and the
    seconds since ``t0``."""
    return {
        "blocks": [[op for u in b for op in unit_ops[u]] for b in parts],
        "parts": len(parts),
        "part_sizes": [len(p) for p in parts],
        "units": len(unit_ops),
        "search_s": time.perf_counter() - t0,
        "states": sum(res.states for res in results),
        "transitions": sum(res.transitions for res in results),
        "stages_evaluated": sum(res.evaluated for res in results),
        # every transition either simulated its stage (stages_evaluated) or did not
        # (cache_hits: the part's table, the oracle's signature cache, or the lower bound
        # alone -- stages_pruned of them -- settled it)
        "cache_hits": sum(res.hits + res.pruned for res in results),
        "stages_pruned": sum(res.pruned for res in results),
        "simulations": sum(res.simulations for res in results),
        "part_splits": sum(res.splits for res in results),
        "peak_endings_held": max((res.peak_waiting for res in results), default=0),
        "greedy_units": sum(res.greedy_units for res in results),
    }
