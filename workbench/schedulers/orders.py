"""Single-stream execution orders from MindSpore's execution-order module (seed 004): BFS and DFS.

MindSpore reports that on its six-kernel example the BFS order peaks at 5G and the DFS order at
4G; ``workbench.models.mindspore_six_kernels`` reproduces both orders and both peaks.
"""

from __future__ import annotations

from workbench.graph import Graph
from workbench.schedule import Schedule, build_schedule, check_max_streams
from workbench.schedulers._dag import mindspore_bfs_order, post_dfs_order


def schedule_bfs(graph: Graph, *, max_streams: int | None = None) -> Schedule:
    """One stream in MindSpore's BFS order (:func:`~workbench.schedulers._dag.mindspore_bfs_order`:
    FIFO Kahn from the sources in program order; a ready successor of a single-user node goes to the
    queue's front).  O(V + E)."""
    check_max_streams(max_streams)
    order = [graph.ops[i].id for i in mindspore_bfs_order(graph)]
    return build_schedule(graph, "bfs", {op: 0 for op in order}, order, syncs=(),
                          options={"max_streams": max_streams}, notes={"order": order})


def schedule_dfs(graph: Graph, *, max_streams: int | None = None) -> Schedule:
    """One stream in DFS order: post-order depth-first search from the outputs, inputs in argument
    order, so each branch finishes before the next starts (lower peak memory).  O(V + E)."""
    check_max_streams(max_streams)
    order = [graph.ops[i].id for i in post_dfs_order(graph)]
    return build_schedule(graph, "dfs", {op: 0 for op in order}, order, syncs=(),
                          options={"max_streams": max_streams}, notes={"order": order})
