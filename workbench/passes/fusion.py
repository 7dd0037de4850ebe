"""O1 graph-kernel fusion of elementwise ops (seed 004, "Introduction to the O1 Model"; notes B.4).

MindSpore's graph-kernel fusion classifies ops by compute pattern and merges neighbouring fusable
ops into one generated kernel (AKG/DVM), which saves launches and, above all, the global-memory
round trip of every intermediate tensor.  The rules implemented here (:func:`pattern_of`):

* **ELEMWISE / BROADCAST** (:data:`ELEMWISE_KINDS`, :data:`BROADCAST_KINDS`: relu, add, sub, mul,
  div, gelu, sigmoid, tanh, exp, bias, inference batchnorm as a per-channel affine, ...) fuse freely
  with each other along data edges (producer → consumer).
* **REDUCE** (:data:`REDUCE_KINDS`: softmax, layernorm, global average pool, reduce_*) can absorb
  elementwise producers ahead of it: an elementwise group joins a reduce's group only when every
  member of the group feeds the reduce (inside the merged group).  Nothing is fused *after* a reduce
  (MindSpore allows some elementwise epilogues under restrictions; we take none), and two reduces
  never share a kernel.
* **OPAQUE**: everything else (MatMul, Conv, pools, concat, transpose, copies, no-task ops, ops with
  side effects, ops not on ``gpu``/``npu``) is never fused.  In particular MatMul/Conv are not fused
  with their elementwise epilogues (some backends do that; basic O1 does not).
* Only ops on the same device fuse, only along data edges ("neighbouring": siblings that merely
  share an input are not fused horizontally), and a merge is made only if the graph stays acyclic:
  two groups joined by an edge may not also be joined by a path through a third group.

Greedy: ops are visited in topological order and each data edge ``u -> v`` is tried in argument
order; passes repeat until nothing merges, so every group is maximal (no further legal merge
exists).

The fused op: id = member ids joined by ``+``, kind ``"fused"``, ``attrs["members"]`` (ids in
topological order), ``attrs["pattern"]`` (``"elemwise"`` or ``"reduce"``), ``attrs["expr"]`` (one
dict per member: ``op, kind, inputs, outputs, attrs`` — the expression list a code generator turns
into one kernel, and :func:`workbench.executors.reference.run_reference` evaluates),
``attrs["saved_bytes"]``.
Costs: ``flops`` = sum of the members; ``bytes_read`` = the group's external inputs,
``bytes_written`` = its kept outputs (tensors used outside the group or graph outputs; an
intermediate consumed outside stays an output), so the intermediate traffic is the gain;
``thread_blocks`` = max of the members; ``duration_us`` = sum of the members' pinned durations when
all are pinned (only the launches are saved then), else none (roofline).  Complexity: O(k · (V + E))
for k merges.

Examples
--------
>>> import workbench as wb
>>> g = fuse_elementwise(wb.models.transformer_block())
>>> [op.id for op in g.ops if op.kind == "fused"]
['block0/residual1+block0/ln2']
"""

from __future__ import annotations

from dataclasses import replace

from workbench.ops import BROADCAST_KINDS as BROADCAST_KINDS  # re-exported
from workbench.ops import ELEMWISE_KINDS as ELEMWISE_KINDS  # re-exported
from workbench.ops import IO_KINDS, WRITE_KINDS
from workbench.ops import REDUCE_KINDS as REDUCE_KINDS  # re-exported
from workbench.ops.generic import FUSED
from workbench.values.graph import (
    NO_TASK_KINDS,
    Graph,
    Op,
    OpId,
    Tensor,
    TensorId,
    priority_topological_order,
)

FUSABLE_DEVICES = frozenset({"gpu", "npu"})


def pattern_of(op: Op) -> str:
    """``"elemwise"`` (elementwise or broadcast), ``"reduce"`` or ``"opaque"`` (see the rules).

    >>> pattern_of(Op("r", kind="relu")), pattern_of(Op("m", kind="matmul"))
    ('elemwise', 'opaque')
    """
    if (op.device not in FUSABLE_DEVICES or op.kind in NO_TASK_KINDS or op.kind in WRITE_KINDS
            or op.kind in IO_KINDS or "writes" in op.attrs or "reads" in op.attrs):
        return "opaque"
    if op.kind in ELEMWISE_KINDS or op.kind in BROADCAST_KINDS:
        return "elemwise"
    if op.kind in REDUCE_KINDS:
        return "reduce"
    return "opaque"


class _Groups:
    """Fusion groups over op indices, with the contracted-graph acyclicity test."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.succ = graph.succ_index
        self.kind = [pattern_of(op) for op in graph.ops]
        self.group = list(range(len(graph)))
        self.members: dict[int, list[int]] = {i: [i] for i in range(len(graph))}
        self.gkind = {i: self.kind[i] for i in range(len(graph))}
        self.pos = {i: k for k, i in enumerate(graph.topo_index)}

    def _path_through_others(self, a: int, b: int) -> bool:
        """Is there a path group a -> X -> ... -> group b with X another group?"""
        group, succ = self.group, self.succ
        frontier = []
        seen = {a, b}
        for m in self.members[a]:
            for s in succ[m]:
                g = group[s]
                if g not in seen:
                    seen.add(g)
                    frontier.append(g)
        while frontier:
            x = frontier.pop()
            for m in self.members[x]:
                for s in succ[m]:
                    g = group[s]
                    if g == b:
                        return True
                    if g not in seen:
                        seen.add(g)
                        frontier.append(g)
        return False

    def _all_feed(self, a: int, b: int) -> bool:
        """Does every member of elementwise group ``a`` reach group ``b`` inside ``a ∪ b``?"""
        inside = set(self.members[a])
        feeds: set[int] = set()
        for m in sorted(inside, key=self.pos.__getitem__, reverse=True):
            if any(self.group[s] == b or s in feeds for s in self.succ[m]):
                feeds.add(m)
        return feeds == inside

    def try_merge(self, u: int, v: int) -> bool:
        a, b = self.group[u], self.group[v]
        if a == b or self.graph.ops[u].device != self.graph.ops[v].device:
            return False
        ka, kb = self.gkind[a], self.gkind[b]
        if ka != "elemwise" or kb not in ("elemwise", "reduce"):
            return False
        if kb == "reduce" and not self._all_feed(a, b):
            return False
        if self._path_through_others(a, b):
            return False
        for m in self.members[a]:
            self.group[m] = b
        self.members[b].extend(self.members.pop(a))
        del self.gkind[a]
        return True


def fusion_groups(graph: Graph) -> list[list[OpId]]:
    """The groups :func:`fuse_elementwise` would fuse (two or more members each), members in
    topological order, groups by their first member."""
    groups = _Groups(graph)
    data_pred = {j: [graph.index(p) for p in dict.fromkeys(
        graph.tensor(t).producer for t in op.inputs) if p is not None]
        for j, op in enumerate(graph.ops)}
    changed = True
    while changed:
        changed = False
        for v in graph.topo_index:
            if groups.kind[v] == "opaque":
                continue
            for u in data_pred[v]:
                if groups.kind[u] != "opaque" and groups.try_merge(u, v):
                    changed = True
    pos = {i: k for k, i in enumerate(graph.topo_index)}
    out = [sorted(ms, key=pos.__getitem__) for ms in groups.members.values() if len(ms) > 1]
    out.sort(key=lambda ms: pos[ms[0]])
    return [[graph.ops[i].id for i in ms] for ms in out]


def fuse_elementwise(graph: Graph) -> Graph:
    """Return a copy of ``graph`` with maximal fusable groups replaced by ``"fused"`` ops (see the
    module docstring for the rules and the fused op's costs)."""
    groups = fusion_groups(graph)
    if not groups:
        return graph
    tensors = graph.tensors
    rep: dict[OpId, OpId] = {}
    fused_ops: dict[OpId, Op] = {}
    dropped: set[TensorId] = set()
    new_producer: dict[TensorId, OpId] = {}
    graph_outputs = set(graph.outputs)
    for members in groups:
        op, internal = _fused_op(graph, members, graph_outputs)
        fused_ops[op.id] = op
        dropped |= internal
        for m in members:
            rep[m] = op.id
        for t in op.outputs:
            new_producer[t] = op.id
    # contracted program order: Kahn, smallest original topological position first
    pos = {op_id: k for k, op_id in enumerate(graph.topo_order())}
    node_pos: dict[OpId, int] = {}
    for op_id in graph.topo_order():
        node_pos.setdefault(rep.get(op_id, op_id), pos[op_id])
    preds: dict[OpId, set[OpId]] = {n: set() for n in node_pos}
    for a, b in graph.edges:
        ra, rb = rep.get(a, a), rep.get(b, b)
        if ra != rb:
            preds[rb].add(ra)
    order = priority_topological_order(preds, node_pos)
    new_ops = [fused_ops[n] if n in fused_ops else graph.op(n) for n in order]
    new_tensors: list[Tensor] = []
    for tid, tensor in tensors.items():
        if tid in dropped:
            continue
        if tid in new_producer:
            tensor = replace(tensor, producer=new_producer[tid])
        new_tensors.append(tensor)
    control: dict[tuple[OpId, OpId], None] = {}
    for a, b in graph.control_edges:
        ra, rb = rep.get(a, a), rep.get(b, b)
        if ra != rb:
            control[(ra, rb)] = None
    return graph.replace(ops=new_ops, tensors=new_tensors, control_edges=list(control),
                         outputs=graph.outputs)


def _fused_op(graph: Graph, members: list[OpId], graph_outputs: set[TensorId]
              ) -> tuple[Op, set[TensorId]]:
    """The fused op of one group and the intermediate tensors it no longer writes."""
    member_set = set(members)
    ops = [graph.op(m) for m in members]
    produced = {t for op in ops for t in op.outputs}
    inputs: list[TensorId] = []
    for op in ops:
        for t in op.inputs:
            if t not in produced and t not in inputs:
                inputs.append(t)
    outputs: list[TensorId] = []
    internal: set[TensorId] = set()
    for op in ops:
        for t in op.outputs:
            if t in graph_outputs or any(c not in member_set for c in graph.consumers(t)):
                outputs.append(t)
            else:
                internal.add(t)
    tensors = graph.tensors
    bytes_read = sum(tensors[t].size_bytes for t in inputs)
    bytes_written = sum(tensors[t].size_bytes for t in outputs)
    before = sum(op.bytes_read + op.bytes_written for op in ops)
    blocks = [op.thread_blocks for op in ops if op.thread_blocks is not None]
    durations = [op.duration_us for op in ops]
    patterns = {pattern_of(op) for op in ops}
    expr = tuple({"op": op.id, "kind": op.kind, "inputs": op.inputs, "outputs": op.outputs,
                  "attrs": dict(op.attrs)} for op in ops)
    fused = Op(
        "+".join(members), kind=FUSED, device=ops[0].device,
        flops=sum(op.flops for op in ops), bytes_read=bytes_read, bytes_written=bytes_written,
        inputs=tuple(inputs), outputs=tuple(outputs),
        thread_blocks=max(blocks) if blocks else None,
        duration_us=(sum(d for d in durations if d is not None)
                     if all(d is not None for d in durations) else None),
        workspace_bytes=max(op.workspace_bytes for op in ops),
        attrs={"members": tuple(members),
               "pattern": "reduce" if "reduce" in patterns else "elemwise",
               "expr": expr, "saved_bytes": max(0, before - bytes_read - bytes_written)},
    )
    return fused, internal
