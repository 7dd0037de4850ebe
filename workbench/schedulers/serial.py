"""The baseline: every op on one stream in program order."""

from __future__ import annotations

from workbench.graph import Graph
from workbench.schedule import Schedule, build_schedule, check_max_streams


def schedule_serial(graph: Graph, *, max_streams: int | None = None) -> Schedule:
    """One stream, ops in program order (the topological order closest to it when program order is
    not topological).  The baseline every comparison reports speedups against.  O(V + E).

    >>> schedule_serial(Graph.from_edges([("a", "b"), ("a", "c")])).streams
    {0: ('a', 'b', 'c')}
    """
    check_max_streams(max_streams)
    order = list(graph.topo_order())
    return build_schedule(graph, "serial", {op: 0 for op in order}, order, syncs=(),
                          options={"max_streams": max_streams})
