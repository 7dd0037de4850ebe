"""Single-stream execution orders from MindSpore's execution-order module (seed 004): BFS and DFS.

MindSpore reports that on its six-kernel example the BFS order peaks at 5G and the DFS order at
4G; ``workbench.models.mindspore_six_kernels`` reproduces both orders and both peaks.
"""

from __future__ import annotations

import heapq

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
    Inputs/parameters are not counted (they are lifelong).  The ready ops sit in a heap keyed by
    (change, -rank, index); an op's change only falls, by a tensor's size, when it becomes that
    tensor's last unrun reader, which happens once per tensor, and then a fresh entry is pushed
    (stale ones are skipped).  O((V + E) log V).
    """
    from workbench.schedulers._dag import longest_chain_after

    ops = graph.ops
    succ, pred = graph.succ_index, graph.pred_index
    rank = longest_chain_after(graph.topo_index, succ)
    tensors = graph.tensors
    index, consumers = graph.index, graph.consumers
    remaining_users = {tid: len(consumers(tid)) for tid in tensors}
    exact = all(type(t.size_bytes) is int for t in tensors.values())  # noqa: E721 (bool, float)

    def delta(i: int) -> int:
        op = ops[i]
        born = sum(tensors[t].size_bytes for t in op.outputs)
        freed = sum(tensors[t].size_bytes for t in set(op.inputs)
                    if tensors[t].producer is not None and remaining_users[t] == 1)
        return born - freed

    indeg = [len(p) for p in pred]
    current: dict[int, int] = {}   # ready op -> its change now
    heap: list[tuple[int, int, int]] = []
    for i in range(len(ops)):
        if indeg[i] == 0:
            current[i] = delta(i)
            heap.append((current[i], -rank[i], i))
    heapq.heapify(heap)
    done = [False] * len(ops)
    order = []
    while heap:
        d, _, best = heapq.heappop(heap)
        if done[best] or current[best] != d:
            continue  # run already, or its change fell since this entry
        done[best] = True
        del current[best]
        order.append(best)
        for t in set(ops[best].inputs):
            remaining_users[t] -= 1
            if remaining_users[t] != 1 or tensors[t].producer is None:
                continue
            last = next(j for j in map(index, consumers(t)) if not done[j])  # frees t when run
            if last in current:
                current[last] = current[last] - tensors[t].size_bytes if exact else delta(last)
                heapq.heappush(heap, (current[last], -rank[last], last))
        for j in succ[best]:
            indeg[j] -= 1
            if indeg[j] == 0:
                current[j] = delta(j)
                heapq.heappush(heap, (current[j], -rank[j], j))
    return order


def schedule_memory_greedy(graph: Graph, *, max_streams: int | None = None) -> Schedule:
    """One stream in a memory-aware order (:func:`memory_greedy_order`): a greedy answer to the
    seed-004 remark that execution order decides peak memory.  O((V + E) log V)."""
    check_max_streams(max_streams)
    order = [graph.ops[i].id for i in memory_greedy_order(graph)]
    return build_schedule(graph, "memory_greedy", {op: 0 for op in order}, order, syncs=(),
                          options={"max_streams": max_streams}, notes={"order": order})
