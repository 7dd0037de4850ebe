"""The scheduling policies: one registry table, ``schedule(graph, name, **options)``.

Every policy is a function ``schedule_<name>(graph, *, <keyword options>) -> Schedule`` and takes
``max_streams=`` (the cap a real device imposes).  ``POLICIES`` is the one table; the common test
runs every entry through the shared invariants.

Engine layer: may import the values, the cost model, the graph transforms, the simulator's
engine and memory; never the executors' backends, views or orchestration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from workbench._checks import check_limit
from workbench._gc import paused_gc
from workbench.errors import OptionError, ScheduleError
from workbench.passes.side_effects import add_side_effect_edges
from workbench.registry import Registry, signature_options
from workbench.schedulers import (
    asap,
    critical_path,
    gpto,
    ios,
    ios_greedy,
    min_streams,
    nnc,
    orders,
    serial,
    wavefront,
)
from workbench.values.graph import Graph
from workbench.values.schedule import Schedule, build_schedule, check_max_streams


@dataclass(frozen=True)
class PolicyInfo:
    """A registered policy: its function, the seed it implements, and flags the tests read.

    ``budgeted``: the function takes ``time_budget_s=`` (seconds, or None for no limit) and, when
    the budget runs out, stops by itself and returns the best schedule found so far with
    ``notes["budget_hit"] = True``; ``compare()`` passes its per-policy budget to these.
    """

    fn: Callable[..., Schedule]
    seed: str
    summary: str
    multi_stream: bool = True
    slow: bool = False
    budgeted: bool = False   # takes time_budget_s / max_states, returns its best when they run out

    def options(self) -> dict[str, Any]:
        """Keyword options and their defaults."""
        return signature_options(self.fn) or {}


POLICIES = Registry[PolicyInfo]("scheduling policy", error=ScheduleError)
POLICIES.register("serial", PolicyInfo(
    serial.schedule_serial, "baseline", "one stream, program order", multi_stream=False))
POLICIES.register("bfs", PolicyInfo(
    orders.schedule_bfs, "004 MindSpore", "one stream, MindSpore BFS order", multi_stream=False))
POLICIES.register("dfs", PolicyInfo(
    orders.schedule_dfs, "004 MindSpore", "one stream, DFS order", multi_stream=False))
POLICIES.register("memory_greedy", PolicyInfo(
    orders.schedule_memory_greedy, "004 MindSpore (memory-aware order)",
    "one stream, ready op that leaves the fewest live bytes first", multi_stream=False))
POLICIES.register("nnc", PolicyInfo(
    nnc.schedule_nnc, "000 NNC", "rank-guided chains, recycled streams, signals"))
POLICIES.register("wavefront", PolicyInfo(
    wavefront.schedule_wavefront, "001 RAF", "waves of chains separated by barriers"))
POLICIES.register("asap", PolicyInfo(
    asap.schedule_asap, "001 RAF", "heavy chains on streams, events on light edges"))
POLICIES.register("ios", PolicyInfo(
    ios.schedule_ios, "001 RAF/IOS", "dynamic program over stages, simulator as cost oracle",
    slow=True, budgeted=True))
POLICIES.register("ios_greedy", PolicyInfo(
    ios_greedy.schedule_ios_greedy, "001 RAF/IOS (IOS's Greedy baseline)",
    "all ready ops per stage (at most 10), device syncs between stages"))
POLICIES.register("min_streams", PolicyInfo(
    min_streams.schedule_min_streams, "Nimble (beyond the seeds)",
    "matching-based chains: fewest syncs at full logical concurrency"))
POLICIES.register("gpto", PolicyInfo(
    gpto.schedule_gpto, "004 MindSpore GPTO",
    "list scheduling with a priority portfolio under a memory limit", budgeted=True))
POLICIES.register("critical_path", PolicyInfo(
    critical_path.schedule_critical_path, "HEFT-like (beyond the seeds)",
    "upward-rank list scheduler, earliest-start stream"))

# Small options that keep the common property tests fast (STYLE.md R3).
TEST_OPTIONS: dict[str, dict[str, Any]] = {
    "ios": {"r": 2, "s": 3, "max_part_size": 8},
    "gpto": {"priorities": ["bottom_level", "depth_min"]},
}


def policies() -> list[str]:
    """Names of all registered scheduling policies."""
    return POLICIES.names()


def schedule(graph: Graph, policy: str, **options: Any) -> Schedule:
    """Schedule ``graph`` with the named policy; options are the policy's keywords.

    Ops that touch the same declared state (:mod:`workbench.values.state`: ``assign``, optimizer
    updates, parameter reads, prints) keep their program order on every policy, as if
    :func:`workbench.passes.add_side_effect_edges` had run (MindSpore's auto-monad), so the
    schedule validates and computes what program order computes; the schedule's graph is still
    ``graph`` itself.

    >>> g = Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> schedule(g, "nnc").stream_of("c")
    1
    """
    info = POLICIES.get(policy)
    if not isinstance(graph, Graph):
        raise ScheduleError(f"policy {policy!r} needs a Graph, got {type(graph).__name__}")
    if "memory_limit_bytes" in options:
        check_limit(options["memory_limit_bytes"], "memory_limit_bytes")
    known = info.options()
    given = dict(options)
    limit = None if "memory_limit_bytes" in known else options.pop("memory_limit_bytes", None)
    POLICIES.check_options(policy, options, extra=["memory_limit_bytes"], label="policy")
    if "max_streams" in options:  # one check for every policy; a cap over the op count is clamped
        options["max_streams"] = check_max_streams(options["max_streams"], len(graph))
    for key in ("r", "s") if policy.startswith("ios") else ():  # IOS's pruning sizes
        value = options.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 2**62:
            raise OptionError(f"policy {policy!r}: {key} must be at most 2**62, got {value:.3g}")
    if not len(graph) and policy in ("ios", "ios_greedy"):  # networkx has nothing to search
        return build_schedule(graph, policy, {}, [], syncs=(), options=options)
    # declared side effects keep program order (a graph without any comes back as it is)
    ordered = add_side_effect_edges(graph)
    with paused_gc():  # a policy's lists and dicts are rarely cycles (nnc 400k: 7.1 -> 6.3 s)
        if limit is None:
            sched = info.fn(ordered, **options)
        else:
            sched = _within_memory_limit(ordered, policy, info, limit, options)
    if ordered is not graph:  # the schedule is of the user's graph; its syncs keep the order
        sched = replace(sched, graph=graph)
    if graph.has_control_flow:
        sched = _with_subschedules(sched, policy, given)
    return sched


def _with_subschedules(sched: Schedule, policy: str, options: dict[str, Any]) -> Schedule:
    """Apply ``policy`` to every sub-graph of every control-flow op (recursively: NNC schedules
    sub-graphs statically too, notes §A.2 step 9); the op stays one unit of ``sched``."""
    from dataclasses import replace

    from workbench.control.ops import subgraphs

    subs: dict[str, dict[str, Schedule]] = {}
    for op in sched.graph.ops:
        for name, g in subgraphs(op):
            subs.setdefault(op.id, {})[name] = (
                schedule(g, policy, **options) if len(g) else Schedule(g, policy, {}, (), ()))
    return replace(sched, subschedules=subs)


def _within_memory_limit(graph: Graph, policy: str, info: PolicyInfo, limit: Any,
                         options: dict[str, Any]) -> Schedule:
    """Respect a memory limit by capping concurrency: plan the schedule's activations (SOMAS
    conflicts, greedy-by-size offsets); while the arena exceeds the limit, reschedule with one
    stream fewer.  A single stream that still does not fit falls back to the memory-aware order;
    if even that exceeds the limit, a one-line OptionError says by how much."""
    from dataclasses import replace

    from workbench.errors import OptionError
    from workbench.memory import plan_memory

    check_limit(limit, "memory_limit_bytes", allow_none=False)
    sched = info.fn(graph, **options)
    tried = []
    while True:
        arena = plan_memory(sched, "greedy_by_size").arena_bytes
        tried.append((sched.n_streams, arena))
        if arena <= limit:
            break
        if sched.n_streams > 1 and info.multi_stream:
            sched = info.fn(graph, **{**options, "max_streams": sched.n_streams - 1})
            continue
        if sched.policy != "memory_greedy":
            sched = orders.schedule_memory_greedy(graph)
            continue
        raise OptionError(f"policy {policy!r} cannot fit {graph.name!r} in {int(limit)} bytes: "
                          f"the smallest arena found is {min(a for _, a in tried)} bytes")
    notes = {**sched.notes, "memory_limit_bytes": limit, "memory_limit_tries": tried}
    return replace(sched, policy=policy, notes=notes)
