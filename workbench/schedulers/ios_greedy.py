"""IOS's "Greedy" baseline (Ding et al., MLSys 2021; notes ios.md §6.1): every stage runs all
ready operators at once, each on its own stream, at most ``max_streams_per_stage`` (IOS: 10) of
them; the rest wait for the next stage.  Stages are separated by device-wide synchronisations
(IOS's runtime calls ``cudaDeviceSynchronize`` between stages; consecutive single-operator stages
share stream 0 with no sync), so this is the schedule IOS's paper measures as "Greedy" and the one
its DP must beat.

Implements ``Block.greedy_schedule`` of mit-han-lab/inter-operator-scheduler (``python/ios/ir.py``):
Kahn's algorithm level by level; a stage takes the first ``max_streams_per_stage`` ready units in
queue order, the rest go to the front of the next queue, followed by the units that became ready
(in the order their last predecessor was processed, successors in program order).  Units are IOS's
schedulable operators (:func:`workbench.schedulers.ios.ios_units`: conv → bn → activation chains
as one unit).  Complexity O(V + E).
"""

from __future__ import annotations

from collections import deque

from workbench.errors import OptionError
from workbench.ops import BARRIER_KINDS
from workbench.values.graph import Graph, OpId
from workbench.values.schedule import Schedule, build_schedule, check_max_streams


def schedule_ios_greedy(graph: Graph, *, max_streams_per_stage: int = 10,
                        barrier: str = "device_sync", units: bool = True,
                        max_streams: int | None = None) -> Schedule:
    """IOS's Greedy schedule (module docstring).  ``barrier``: ``"device_sync"`` (IOS's runtime,
    default) or ``"join"`` (event joins: the host keeps issuing); ``max_streams`` also caps the
    stage width.

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> schedule_ios_greedy(g).notes["stages"]
    [[['a']], [['b'], ['c']], [['d']]]
    """
    from workbench.schedulers.ios import emit_stages, ios_units

    if isinstance(max_streams_per_stage, bool) or not isinstance(max_streams_per_stage, int) \
            or max_streams_per_stage < 1:
        raise OptionError(f"ios_greedy option max_streams_per_stage must be a positive integer, "
                          f"got {max_streams_per_stage!r}")
    if barrier not in BARRIER_KINDS:
        raise OptionError(f"ios_greedy option barrier must be 'device_sync' or 'join', "
                          f"got {barrier!r}")
    max_streams = check_max_streams(max_streams)
    width = min(max_streams_per_stage, max_streams or max_streams_per_stage)
    unit_ops = ios_units(graph) if units else [[op] for op in graph.topo_order()]
    stages = greedy_stages(graph, unit_ops, width)
    order, stream_of, barriers = emit_stages(stages)
    notes = {"stages": stages, "n_stages": len(stages), "units": len(unit_ops)}
    options = {"max_streams_per_stage": max_streams_per_stage, "barrier": barrier,
               "units": units, "max_streams": max_streams}
    return build_schedule(graph, "ios_greedy", stream_of, order, barriers=barriers, syncs=(),
                          options=options, notes=notes, barrier_kind=barrier)


def greedy_stages(graph: Graph, unit_ops: list[list[OpId]],
                  width: int) -> list[list[list[OpId]]]:
    """IOS's greedy stages over ``unit_ops``: each stage a list of single-unit groups."""
    unit_of = {op: u for u, ops in enumerate(unit_ops) for op in ops}
    succ: list[list[int]] = [[] for _ in unit_ops]
    indeg = [0] * len(unit_ops)
    linked: set[tuple[int, int]] = set()
    for a, b in graph.edges:
        ua, ub = unit_of[a], unit_of[b]
        if ua != ub and (ua, ub) not in linked:
            linked.add((ua, ub))
            succ[ua].append(ub)
            indeg[ub] += 1
    for s in succ:
        s.sort()
    queue = deque(u for u in range(len(unit_ops)) if indeg[u] == 0)
    stages: list[list[list[OpId]]] = []
    while queue:  # a stage takes the queue's first ``width``; the newly ready go to its back
        stage = [queue.popleft() for _ in range(min(width, len(queue)))]
        stages.append([list(unit_ops[u]) for u in stage])
        for u in stage:
            for v in succ[u]:
                indeg[v] -= 1
                if indeg[v] == 0:
                    queue.append(v)
    return stages
