"""No-task (ref) node elimination (seed 004, "No-task node Execution Optimization"; notes B.4).

Reshape, ExpandDims, Squeeze, Flatten, FlattenGrad, Reformat (and views) compute nothing and keep
the memory layout: MindSpore turns them into *ref nodes* whose output has the input's address, and
skips their launch.  Here the op is removed from the graph and its consumers read its input tensor
directly, so there is no launch and no memory for it.  The kinds are
:data:`workbench.values.graph.NO_TASK_KINDS` (the memory planners alias the same ops).

What is recorded, so an executor can still give each consumer the shape it expects:

* ``consumer.attrs["aliases"]``: ``{removed tensor id: tensor id now read}`` (chains of no-task ops
  are followed to the first real tensor);
* ``consumer.attrs["view_shapes"]``: ``{input position: shape of the removed tensor}`` (only where
  that shape is known), which :func:`workbench.executors.reference.run_reference` applies as a
  reshape.

A graph output produced by a no-task op is replaced by the tensor it aliases.  Control edges into or
out of a removed op are re-linked to its predecessors / successors.  Ops with no input (nothing to
alias) are kept.  Complexity: O(V + E).

Examples
--------
>>> import workbench as wb
>>> g = wb.models.inception_v3(classifier=True, fused=False)
>>> "flatten" in drop_no_task_ops(g)
False
>>> drop_no_task_ops(g).op("fc").attrs["aliases"]
{'flatten:out': 'avgpool:out'}
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from workbench.values.graph import NO_TASK_KINDS, Graph, OpId, TensorId
from workbench.values.storage import STORAGE_ATTR


def no_task_ops(graph: Graph) -> list[OpId]:
    """Ids of the ops :func:`drop_no_task_ops` removes, in program order."""
    return [op.id for op in graph.ops if op.kind in NO_TASK_KINDS and op.inputs and op.outputs]


def drop_no_task_ops(graph: Graph) -> Graph:
    """Return a copy of ``graph`` without no-task ops; their consumers read the aliased tensor
    (see the module docstring for what is recorded where)."""
    removed = set(no_task_ops(graph))
    if not removed:
        return graph
    tensors = graph.tensors
    root: dict[TensorId, TensorId] = {}
    for op in graph.ops:  # program order; a chain's source is resolved first if topological
        if op.id in removed:
            for out in op.outputs:
                root[out] = op.inputs[0]
    for t in list(root):  # follow chains whatever the program order
        seen = {t}
        r = root[t]
        while r in root and r not in seen:
            seen.add(r)
            r = root[r]
        root[t] = r
    new_ops = []
    for op in graph.ops:
        if op.id in removed:
            continue
        if not any(t in root for t in op.inputs):
            new_ops.append(op)
            continue
        aliases = dict(op.attrs.get("aliases", {}))
        views = dict(op.attrs.get("view_shapes", {}))
        inputs = []
        for pos, t in enumerate(op.inputs):
            if t in root:
                aliases[t] = root[t]
                if tensors[t].shape:
                    views[pos] = tensors[t].shape
                inputs.append(root[t])
            else:
                inputs.append(t)
        attrs = {**op.attrs, "aliases": aliases}
        if attrs.get(STORAGE_ATTR) in root:  # a view or in-place write of a removed view
            attrs[STORAGE_ATTR] = root[attrs[STORAGE_ATTR]]
        if views:
            attrs["view_shapes"] = views
        new_ops.append(replace(op, inputs=tuple(inputs), attrs=attrs))
    new_tensors = [t for tid, t in tensors.items() if tid not in root]
    outputs = list(dict.fromkeys(root.get(t, t) for t in graph.outputs))
    control = _relink_control(graph, removed)
    return graph.replace(ops=new_ops, tensors=new_tensors, control_edges=control, outputs=outputs)


def drop_for_comparison(graph: Graph, keep: bool, notes: list[str]) -> tuple[Graph, int]:
    """What :func:`workbench.compare` schedules: ``graph`` without its no-task ops unless
    ``keep`` (a note in ``notes`` says how many of which kinds went), and that count."""
    dropped = [] if keep else no_task_ops(graph)
    if not dropped:
        return graph, 0
    kinds = Counter(graph.op(o).kind for o in dropped)
    listed = ", ".join(f"{k} ×{n}" for k, n in kinds.most_common())
    notes.append(f"{len(dropped)} no-task ops dropped before scheduling ({listed}): MindSpore's "
                 f"no-task rule, as a graph compiler runs them (keep_views=True / --keep-views "
                 f"keeps them)")
    return drop_no_task_ops(graph), len(dropped)


def _relink_control(graph: Graph, removed: set[OpId]) -> list[tuple[OpId, OpId]]:
    """Control edges with removed ops bypassed: ``a -> n -> b`` becomes ``a -> b``."""
    def kept_preds(op: OpId) -> set[OpId]:
        out: set[OpId] = set()
        stack = [op]
        while stack:
            for p in graph.predecessors(stack.pop()):
                if p in removed:
                    stack.append(p)
                else:
                    out.add(p)
        return out

    def kept_succs(op: OpId) -> set[OpId]:
        out: set[OpId] = set()
        stack = [op]
        while stack:
            for s in graph.successors(stack.pop()):
                if s in removed:
                    stack.append(s)
                else:
                    out.add(s)
        return out

    control: dict[tuple[OpId, OpId], None] = {}  # ordered set
    for a, b in graph.control_edges:
        sources = kept_preds(a) if a in removed else {a}
        targets = kept_succs(b) if b in removed else {b}
        for x in sorted(sources, key=graph.index):
            for y in sorted(targets, key=graph.index):
                if x != y:
                    control[(x, y)] = None
    return list(control)
