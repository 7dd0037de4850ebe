"""GPTO, MindSpore's Graph Parallel Topology Optimizer (seed 004; notes nnc_mindspore.md §B.1).

Objective: the smallest makespan whose memory fits a limit.  For each priority of a portfolio:

1. **List scheduling** on typed processing elements (PEs = streams): ``compute_streams`` compute
   streams and ``copy_streams`` copy/communication streams for ops whose kind is in
   :data:`COPY_KINDS`.  The ready op with the best priority goes to the PE of its type where it
   can start earliest, into the *first idle gap* that holds it (insertion-based), no sooner than
   the end of its last predecessor.  Op durations are the simulator's stand-alone times
   (``graph_costs``: shape-aware kernels).
2. **Events** (ScheduleToEvents, simplified): ops are issued in (start, end) order, each PE is a
   stream running its ops in that order, and the syncs are the transitively reduced cross-stream
   dependencies (:func:`~workbench.values.schedule.insert_syncs`).  The choice reads makespans
   (and, for the candidates it plans, arenas), so a candidate's schedule and syncs are built
   only when its arena is planned or it wins: once, for the winner, on a big graph with no
   memory limit (was once per priority).
3. **Memory**: the candidate schedule's activation arena, as
   ``plan_memory(schedule, "greedy_by_size").arena_bytes`` (happens-before conflicts across
   streams); identical placements are planned once, and what the lifetimes take from the graph
   alone (planned tensors, consumers, aliases) is computed once for all candidates.  Memory is
   checked per candidate schedule, never per insertion.

The winner is the candidate with the smallest list-schedule makespan among those whose arena fits
``memory_limit_bytes`` (ties: smaller arena, then portfolio order; when the memory stage refuses
to plan the graph, e.g. sizes past what int64 offsets hold, ties keep portfolio order and
``notes["arenas_refused"]`` says why, or, under a limit, that refusal is the error).  If none
fits, the portfolio runs again on one compute stream fewer, down to one; if even that does not
fit, a one-line OptionError says so and names the smallest arena found (as every other policy
does under ``memory_limit_bytes``: an over-limit schedule is never returned).
``notes["portfolio"]`` lists every priority's estimated makespan and arena (on graphs above
:data:`ARENA_ALL_MAX_OPS` ops only the arenas the choice needed are planned, in makespan order:
none at all without a memory limit unless the shortest makespans tie; the others are None).

Priorities (:data:`PRIORITIES`; ties: longer op first, then topological order): ``bottom_level``
(max), ``top_level`` (min: earliest-available first), ``top_plus_bottom`` (max: critical-path ops
first), ``bottom_minus_top`` (max; Ahmad–Kwok–Wu), ``depth_max`` (DFS-like), ``depth_min``
(BFS-like), ``weighted_length`` (max; Shirazi et al.: cost + max child wl + sum child wl / max child
wl), ``cost_max``, ``cost_min``, ``memory_greedy`` (smallest memory impact first: bytes an op
allocates minus the inputs it is the last to read, updated as consumers are placed).

Simplified against MindSpore's ``gpto.cc``: one device (no cross-device communication groups);
no subgraph/ConditionSwitch/Gather/if-block handling; costs from
:mod:`workbench.simulator.cost_model.costs` instead of
MindSpore's integer formulas; two PE types (compute, copy; no "cube" PEs); the PE is chosen by
earliest start over all PEs of the type rather than least-loaded first; the memory limit filters
whole candidates (MindSpore also skips ready tasks that would exceed a soft limit while list
scheduling) and memory is the planned arena rather than a running peak; no 512-byte padding;
events come from ``insert_syncs`` rather than ScheduleToEvents' interval sweep (both give the
cross-type orderings the placement needs; ours are transitively reduced).

Complexity: P list-scheduling passes (P = number of priorities), each O((V + E) log V) plus the
gap search (O(V · S · g), g intervals scanned per stream), plus one schedule (syncs:
``insert_syncs``) and one memory plan per distinct placement that the choice needs
(near-linear: ``workbench.memory.streams`` and ``workbench.memory.placement``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from workbench._checks import check_limit, first_line, show
from workbench.errors import MemoryPlanError, OptionError
from workbench.memory.lifetimes import Usage
from workbench.ops import OFF_DEVICE_TRANSFER_KINDS
from workbench.schedulers.critical_path import (
    _list_schedule,
    bottom_levels,
    placement_schedule,
    topo_positions,
)
from workbench.simulator.cost_model.costs import (
    DeviceSpec,
    critical_path_us,
    get_device,
    graph_costs,
)
from workbench.values.graph import Graph
from workbench.values.schedule import MAX_STREAMS_LIMIT, Schedule, check_max_streams

#: The kinds GPTO sends to the communication PE: every transfer that leaves a device.
COPY_KINDS = OFF_DEVICE_TRANSFER_KINDS
PRIORITIES = ("bottom_level", "top_level", "top_plus_bottom", "bottom_minus_top", "depth_max",
              "depth_min", "weighted_length", "cost_max", "cost_min", "memory_greedy")
MEMORY_PLANNER = "greedy_by_size"
#: Up to this many ops every candidate's arena is planned (for the notes); above, only those the
#: choice needs.  Each plan costs far more than a list-scheduling pass (lifetimes and the
#: happens-before conflicts of a multi-stream schedule): on nasnet_a_large unfused (963 ops) the
#: ten arenas took 0.50 CPU s, the ten list schedules 0.03 s, and at 1,000 ops (the old bound)
#: gpto on a random DAG took 0.71 s against 0.51 s at 10,000 ops.  Every built-in model but
#: nasnet_a_large unfused is under the bound.
ARENA_ALL_MAX_OPS = 500
#: ``portfolio_arenas``: "auto" (every arena up to ARENA_ALL_MAX_OPS ops), "all", or "needed"
#: (only those the choice needs; what compare() asks for: its memory stage plans the winner).
PORTFOLIO_ARENAS = ("auto", "all", "needed")


def schedule_gpto(graph: Graph, *, device: str | DeviceSpec = "h100",
                  max_streams: int | None = None, compute_streams: int | None = None,
                  copy_streams: int = 1, memory_limit_bytes: float | None = None,
                  priorities: Sequence[str] | None = None,
                  time_budget_s: float | None = None,
                  portfolio_arenas: str = "auto") -> Schedule:
    """Best list schedule of a priority portfolio under a memory limit (see the module docstring).

    ``compute_streams`` defaults to ``max_streams`` (less the copy streams when the graph has copy
    ops) or 4; copy streams are only opened when the graph has copy ops, and with
    ``copy_streams=0`` copy ops share the compute streams.  With ``time_budget_s``, the portfolio
    stops after the first priority that ends past the budget and the best of the priorities tried
    wins (``notes["budget_hit"]``, ``notes["priorities_tried"]``).  ``portfolio_arenas`` says
    which candidates' arenas ``notes["portfolio"]`` gets (:data:`PORTFOLIO_ARENAS`): ``"auto"``
    (every one on graphs of at most :data:`ARENA_ALL_MAX_OPS` ops), ``"all"``, or ``"needed"``
    (only those the choice needs; the others are None); the winner is the same either way.

    Examples
    --------
    >>> g = Graph.from_edges([("x", "y")], ops={"x": "h2d", "y": "conv2d", "z": "relu"},
    ...                      durations={"x": 20, "y": 10, "z": 5})
    >>> s = schedule_gpto(g, compute_streams=1, priorities=["bottom_level"])
    >>> s.notes["start_us"]
    {'x': 0.0, 'y': 20.0, 'z': 0.0}
    >>> s.stream_of("x") != s.stream_of("z")
    True
    """
    max_streams = check_max_streams(max_streams, len(graph))
    spec = get_device(device)
    names = _check_priorities(priorities)
    limit = _check_limit(memory_limit_bytes)
    deadline = _deadline(time_budget_s)
    if portfolio_arenas not in PORTFOLIO_ARENAS:
        raise OptionError(f"portfolio_arenas must be one of {', '.join(PORTFOLIO_ARENAS)}, got "
                          f"{portfolio_arenas!r:.80}")
    is_copy = [op.kind.lower() in COPY_KINDS for op in graph.ops]
    n_compute, n_copy = _stream_counts(max_streams, compute_streams, copy_streams, any(is_copy))
    types = [1 if c and n_copy else 0 for c in is_copy]

    n = len(graph)
    dur = [c.alone_us for c in graph_costs(graph, spec)]  # the simulator's kernels
    levels = _levels(graph, dur)
    topo_pos = topo_positions(graph)
    memory: _MemoryImpact | None = None  # built for the memory_greedy priority only
    candidates: list[dict[str, Any]] = []
    for name in names:
        if name == "memory_greedy":
            memory = (memory or _MemoryImpact(graph)).fresh()
        key, on_placed = _priority(name, levels, dur, topo_pos, memory)
        start, end, stream = _list_schedule(graph, dur, types, [n_compute, n_copy], key, on_placed)
        candidates.append({"priority": name, "makespan_us": max(end, default=0.0),
                           "arena_bytes": None, "fits": None, "schedule": None,
                           "placement": (start, end, stream)})
        if deadline is not None and time.perf_counter() > deadline:
            break  # out of time: the best of the priorities tried so far

    def schedule_of(c: dict[str, Any]) -> Schedule:
        """The candidate's schedule (streams, issue order, syncs), built the first time the
        choice or the result needs it: the makespans choose without syncs."""
        if c["schedule"] is None:
            c["schedule"] = placement_schedule(graph, "gpto", *c["placement"], options={},
                                               notes={}, max_streams=max_streams)
        return c["schedule"]  # type: ignore[no-any-return]

    plan_all = portfolio_arenas == "all" or (portfolio_arenas == "auto"
                                             and n <= ARENA_ALL_MAX_OPS)
    refused = None
    try:
        best, fitting = _choose(candidates, limit, schedule_of, plan_all=plan_all)
    except MemoryPlanError as exc:  # no arena can be planned (e.g. sizes past int64 offsets)
        if limit is not None:
            raise  # a limit it cannot check: the one-line reason
        refused = first_line(exc)
        for c in candidates:
            c["arena_bytes"] = c["fits"] = None
        best, fitting = min(candidates, key=lambda c: round(c["makespan_us"], 6)), True
    winner = schedule_of(best)
    sums = [0.0, 0.0]
    for i in range(n):
        sums[types[i]] += dur[i]
    lower = max(critical_path_us(graph, spec), sums[0] / n_compute,
                sums[1] / n_copy if n_copy else 0.0)
    notes = {
        **winner.notes,
        "winner": best["priority"],
        "portfolio": [{k: c[k] for k in ("priority", "makespan_us", "arena_bytes", "fits")}
                      for c in candidates],
        "estimated_makespan_us": best["makespan_us"],
        "start_us": dict(zip(graph.op_ids, best["placement"][0], strict=True)),
        "arena_bytes": best["arena_bytes"],
        "memory_limit_bytes": limit,
        "memory_limit_met": fitting,
        "compute_streams": n_compute,
        "copy_streams": n_copy,
        "copy_ops": sum(types),
        "lower_bound_us": lower,
        "budget_hit": len(candidates) < len(names),
        "priorities_tried": len(candidates),
    }
    if refused is not None:
        notes["arenas_refused"] = refused
    if not fitting:
        left = None if deadline is None else deadline - time.perf_counter()
        if n_compute > 1 and (left is None or left > 0):
            return schedule_gpto(graph, device=spec, max_streams=max_streams,
                                 compute_streams=n_compute - 1, copy_streams=copy_streams,
                                 memory_limit_bytes=limit, priorities=names, time_budget_s=left,
                                 portfolio_arenas=portfolio_arenas)
        raise OptionError(f"policy 'gpto' cannot fit {graph.name!r} in {int(limit or 0)} bytes: "
                          f"the smallest arena found is {best['arena_bytes']} bytes (priority "
                          f"{best['priority']!r}, {n_compute} compute stream"
                          f"{'s' if n_compute > 1 else ''})")
    options = {"device": spec.name, "max_streams": max_streams, "compute_streams": compute_streams,
               "copy_streams": copy_streams, "memory_limit_bytes": memory_limit_bytes,
               "priorities": list(names), "time_budget_s": time_budget_s,
               "portfolio_arenas": portfolio_arenas}
    from dataclasses import replace

    return replace(winner, options=options, notes=notes)


def _choose(candidates: list[dict[str, Any]], limit: float | None,
            schedule_of: Callable[[dict[str, Any]], Schedule], *,
            plan_all: bool) -> tuple[dict[str, Any], bool]:
    """The winner and whether it fits: candidates by estimated makespan (rounded to 1e-6 µs),
    the first makespan with a fitting arena wins (ties: smaller arena, then portfolio order); if
    none fits, the smallest arena.  Arenas are planned lazily (all of them when ``plan_all``),
    each on ``schedule_of(candidate)`` (built only then); identical placements are planned
    once.  Without a limit, a makespan no other candidate ties needs no arena at all: it wins
    unplanned (its ``arena_bytes`` stays None; on a 10k-op random DAG that is half of gpto's
    time)."""
    planned: dict[tuple[Any, ...], int] = {}
    # candidates with the same placement (a fan's priorities all tie) share one schedule: it is
    # built (syncs and all) and planned once
    placed: dict[tuple[Any, ...], dict[str, Any]] = {}
    usage: list[Any] = []  # the graph's part of the lifetimes, computed on the first plan

    def plan(c: dict[str, Any]) -> None:
        if c["arena_bytes"] is None:
            key = tuple(tuple(column) for column in c["placement"])
            twin = placed.setdefault(key, c)  # a twin was planned when it was placed here
            if twin is not c:
                c["schedule"] = twin["schedule"]
                c["arena_bytes"], c["fits"] = twin["arena_bytes"], twin["fits"]
                return
            sched = schedule_of(c)
            sig = (sched.issue_order, tuple(sched.streams.items()))
            if sig not in planned:
                if not usage:
                    from workbench.memory.lifetimes import graph_usage

                    usage.append(graph_usage(sched.graph))
                planned[sig] = _arena_bytes(sched, usage[0])
            c["arena_bytes"] = planned[sig]
            c["fits"] = limit is None or planned[sig] <= limit

    if plan_all:
        for c in candidates:
            plan(c)
    by_makespan: dict[float, list[dict[str, Any]]] = {}
    for c in candidates:
        by_makespan.setdefault(round(c["makespan_us"], 6), []).append(c)
    for span in sorted(by_makespan):
        group = by_makespan[span]
        if limit is None and len(group) == 1 and not plan_all:
            return group[0], True  # no limit and no tie: no arena decides anything
        for c in group:
            plan(c)
        fit = [c for c in group if c["fits"]]
        if fit:
            return min(fit, key=lambda c: c["arena_bytes"]), True
    return min(candidates, key=lambda c: (c["arena_bytes"], round(c["makespan_us"], 6))), False


def _arena_bytes(sched: Schedule, usage: Usage) -> int:
    """``plan_memory(sched, MEMORY_PLANNER).arena_bytes`` without the clique lower bound that
    ``plan_memory`` also computes (it is not needed here), reusing the graph's ``usage``."""
    from workbench.memory import plan_usage
    from workbench.memory.lifetimes import from_schedule

    lt = from_schedule(sched, usage=usage)
    options = {} if lt.conflicts is None else {"conflicts": lt.conflicts}
    return plan_usage(lt.records, MEMORY_PLANNER, **options).arena_bytes


# ---------------------------------------------------------------------------------- options
def _check_priorities(priorities: Sequence[str] | None) -> tuple[str, ...]:
    if priorities is None:
        return PRIORITIES
    if isinstance(priorities, str) or not isinstance(priorities, Sequence) or not priorities:
        raise OptionError(f"priorities must be a non-empty list of names "
                          f"(known: {', '.join(PRIORITIES)}), got {priorities!r}")
    for name in priorities:
        if name not in PRIORITIES:
            raise OptionError(f"unknown gpto priority {name!r} (known: {', '.join(PRIORITIES)})")
    return tuple(dict.fromkeys(priorities))


def _check_limit(limit: Any) -> float | None:
    if limit is None:
        return None
    return check_limit(limit, "memory_limit_bytes")


def _deadline(budget: Any) -> float | None:
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget > 0:
        raise OptionError(f"time_budget_s must be a positive number or None, got {budget!r}")
    return time.perf_counter() + budget


def _check_count(value: Any, what: str, minimum: int) -> int:
    if (isinstance(value, bool) or not isinstance(value, int) or value < minimum
            or value > MAX_STREAMS_LIMIT):
        kind = "positive" if minimum > 0 else "non-negative"
        raise OptionError(f"{what} must be a {kind} integer, got {show(value)}")
    return value


def _stream_counts(max_streams: int | None, compute_streams: int | None, copy_streams: int,
                   has_copy: bool) -> tuple[int, int]:
    """(compute PEs, copy PEs) honouring ``max_streams``."""
    if compute_streams is not None:
        _check_count(compute_streams, "compute_streams", 1)
    copy_n = _check_count(copy_streams, "copy_streams", 0)  # checked even when unused
    if not has_copy:
        copy_n = 0
    if max_streams is None:
        return (compute_streams or 4), copy_n
    if compute_streams is not None:
        if compute_streams > max_streams:
            raise OptionError(f"compute_streams ({compute_streams}) exceeds max_streams "
                              f"({max_streams})")
        return compute_streams, min(copy_n, max_streams - compute_streams)
    copy_n = min(copy_n, max_streams - 1)
    return max_streams - copy_n, copy_n


# ---------------------------------------------------------------------------------- priorities
def _levels(graph: Graph, dur: list[float]) -> dict[str, list[float]]:
    """Bottom and top levels (µs), depth (edges from a source) and weighted length per op."""
    n = len(graph)
    pred, succ = graph.pred_index, graph.succ_index
    bl = bottom_levels(graph, dur)
    tl, depth = [0.0] * n, [0.0] * n
    for i in graph.topo_index:
        tl[i] = max((tl[p] + dur[p] for p in pred[i]), default=0.0)
        depth[i] = max((depth[p] + 1 for p in pred[i]), default=0.0)
    wl = [0.0] * n
    for i in reversed(graph.topo_index):
        kids = [wl[j] for j in succ[i]]
        top = max(kids, default=0.0)
        wl[i] = dur[i] + top + (sum(kids) / top if top > 0 else 0.0)
    return {"bl": bl, "tl": tl, "depth": depth, "wl": wl}


_STATIC: dict[str, Callable[[dict[str, list[float]], list[float], int], float]] = {
    "bottom_level": lambda lv, d, i: -lv["bl"][i],
    "top_level": lambda lv, d, i: lv["tl"][i],
    "top_plus_bottom": lambda lv, d, i: -(lv["tl"][i] + lv["bl"][i]),
    "bottom_minus_top": lambda lv, d, i: -(lv["bl"][i] - lv["tl"][i]),
    "depth_max": lambda lv, d, i: -lv["depth"][i],
    "depth_min": lambda lv, d, i: lv["depth"][i],
    "weighted_length": lambda lv, d, i: -lv["wl"][i],
    "cost_max": lambda lv, d, i: -d[i],
    "cost_min": lambda lv, d, i: d[i],
}


def _priority(name: str, levels: dict[str, list[float]], dur: list[float], topo_pos: list[int],
              memory: _MemoryImpact | None) -> tuple[Sequence[Any] | Callable[[int], Any],
                                              Callable[[int], Sequence[int]] | None]:
    """Sort keys (smallest first: a list for static priorities, a function for the dynamic
    one) and, for the dynamic one, the update hook."""
    if name == "memory_greedy":
        assert memory is not None
        impact = memory.impact
        return (lambda i: (impact[i], -dur[i], topo_pos[i])), memory.place
    score = _STATIC[name]
    return [(score(levels, dur, i), -dur[i], topo_pos[i]) for i in range(len(dur))], None


class _MemoryImpact:
    """Bytes an op would add to live memory if placed now: its outputs and workspace, minus the
    activations it is the last to read (graph outputs never die; inputs and parameters are
    lifelong and not counted).  Updated as ops are placed."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        outputs = set(graph.outputs)
        tensors = graph.tensors
        self.size: dict[str, int] = {}
        self.readers: dict[str, list[int]] = {}
        for tid, t in tensors.items():
            if t.producer is None or tid in outputs:
                continue
            self.size[tid] = t.size_bytes
            self.readers[tid] = [graph.index(c) for c in graph.consumers(tid)]
        self.base = [sum(tensors[t].size_bytes for t in op.outputs) + op.workspace_bytes
                     for op in graph.ops]
        self.inputs = [[t for t in dict.fromkeys(op.inputs) if t in self.size]
                       for op in graph.ops]
        self.impact: list[float] = []
        self.left: dict[str, int] = {}
        self.placed: list[bool] = []

    def fresh(self) -> _MemoryImpact:
        """Reset the running state for a new list-scheduling pass."""
        self.left = {t: len(r) for t, r in self.readers.items()}
        self.impact = [float(self.base[i] - sum(self.size[t] for t in self.inputs[i]
                                                if self.left[t] == 1))
                       for i in range(len(self.base))]
        self.placed = [False] * len(self.base)
        return self

    def place(self, i: int) -> list[int]:
        """Op ``i`` was placed: the ops that became the last reader of a tensor get cheaper."""
        self.placed[i] = True
        changed = []
        for t in self.inputs[i]:
            self.left[t] -= 1
            if self.left[t] == 1:
                last = next(j for j in self.readers[t] if not self.placed[j])
                self.impact[last] -= self.size[t]
                changed.append(last)
        return changed
