"""Single-stream execution orders from MindSpore's execution-order module (seed 004): BFS and DFS.

MindSpore reports that on its six-kernel example the BFS order peaks at 5G and the DFS order at
4G; ``workbench.models.mindspore_six_kernels`` reproduces both orders and both peaks.
"""

from __future__ import annotations

from workbench.schedulers._dag import mindspore_bfs_order, post_dfs_order
from workbench.values.graph import Graph
from workbench.values.schedule import Schedule, build_schedule, check_max_streams


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


def memory_greedy_order(graph: Graph) -> list[int]:
    """At each step run the ready op that leaves the fewest live bytes, ties by NNC rank (longer
    chain after it first), then program order.

    Live bytes after running ``v`` change by ``size(outputs of v) - size(inputs v consumes last)``.
    Inputs/parameters are not counted (they are lifelong).  O(V · R) for R ready ops at a time.
    """
    from workbench.schedulers._dag import longest_chain_after

    ops = graph.ops
    succ, pred = graph.succ_index, graph.pred_index
    rank = longest_chain_after(graph.topo_index, succ)
    tensors = graph.tensors
    remaining_users = {tid: len(graph.consumers(tid)) for tid in tensors}
    indeg = [len(p) for p in pred]
    ready = [i for i in range(len(ops)) if indeg[i] == 0]
    order = []

    def delta(i: int) -> int:
        op = ops[i]
        born = sum(tensors[t].size_bytes for t in op.outputs)
        freed = sum(tensors[t].size_bytes for t in set(op.inputs)
                    if tensors[t].producer is not None and remaining_users[t] == 1)
        return born - freed

    while ready:
        best = min(ready, key=lambda i: (delta(i), -rank[i], i))
        ready.remove(best)
        order.append(best)
        for t in set(ops[best].inputs):
            remaining_users[t] -= 1
        for j in succ[best]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    return order


def schedule_memory_greedy(graph: Graph, *, max_streams: int | None = None) -> Schedule:
    """One stream in a memory-aware order (:func:`memory_greedy_order`): a greedy answer to the
    seed-004 remark that execution order decides peak memory.  O(V · R)."""
    check_max_streams(max_streams)
    order = [graph.ops[i].id for i in memory_greedy_order(graph)]
    return build_schedule(graph, "memory_greedy", {op: 0 for op in order}, order, syncs=(),
                          options={"max_streams": max_streams}, notes={"order": order})
