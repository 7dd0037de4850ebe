"""Heterogeneous graphs: partition into single-device subgraphs, copy ops, split vs merge execution
(seed 003 §7.5.3, Fig. 7.5.9–7.5.13).

**Devices.**  ``cpu`` and ``python`` ops both run on the host (:data:`DEVICE_CLASS` maps both to
the class ``"cpu"``; they share host memory, so no copy between them); ``gpu`` and ``npu`` are
classes of their own; any other device name is its own class.  Subgraph names follow the textbook:
``Graph_<k>_<label>`` with labels CPU, GPU, Ascend (:data:`LABELS`).

**Partition (fewest subgraphs).**  :func:`partition` visits the ops in topological order (the one
closest to program order) and puts each op into the most recently opened subgraph of its class into
which it can go, else opens a new one.  An op ``v`` can join subgraph ``S`` iff no predecessor of
``v`` lies in another subgraph ``P`` that ``S`` already reaches (contracted graph): otherwise a path
would leave ``S`` and re-enter it (``S -> ... -> P -> v ∈ S``), a cycle between subgraphs that no
subgraph-after-subgraph execution can run.  Every join keeps the contracted graph acyclic, so the
subgraphs can always be run in the order they were opened.  Complexity: O(V · K · (K + E_K)) for K
subgraphs.

**Why this is the minimum for the textbook graph.**  A lower bound for *any* acyclic partition
(:func:`min_subgraphs_lower_bound`): along any path, count the runs of consecutive same-class ops.
Two different runs can never share a subgraph: runs of different classes obviously not, and two runs
of the same class are separated on the path by an op of another class, so putting them together
would make a cycle through that op's subgraph.  In the textbook graph the path Kernel_1 (CPU) →
Kernel_3 (GPU) → Kernel_5 → Kernel_6 (CPU, Python is a host op) → Kernel_7 → Kernel_8 (NPU) →
Kernel_9 (CPU) has 5 runs, so 5 subgraphs are needed; the greedy finds 5 — Graph_1_CPU {1, 2},
Graph_2_GPU {3, 4}, Graph_3_CPU {5, 6}, Graph_4_Ascend {7, 8}, Graph_5_CPU {9} — hence it is
optimal there.  In general the greedy is a heuristic (it is optimal whenever it meets the bound).

**Copies.**  :func:`insert_copies` adds one copy op per (tensor, destination memory space) wherever
a data edge crosses memory spaces: kind ``h2d`` (host → device), ``d2h`` (device → host) or ``d2d``
(GPU ↔ NPU), device ``"copy"``, ``bytes_read = bytes_written = tensor size``; the consumers read the
copy's output ``"<tensor>@<space>"``.  Graph inputs are assumed to be resident where they are read.

**Split vs merge** execution of the partitioned graph runs a scheduler on it, so it lives one layer
up, in :mod:`workbench.orchestration.pipelines`
(:func:`~workbench.orchestration.pipelines.split_schedule`,
:func:`~workbench.orchestration.pipelines.merge_schedule`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from workbench.values.graph import Graph, Op, OpId, Tensor, TensorId

DEVICE_CLASS = {"cpu": "cpu", "python": "cpu", "gpu": "gpu", "npu": "npu", "copy": "copy"}
LABELS = {"cpu": "CPU", "gpu": "GPU", "npu": "Ascend"}
MEMORY_SPACE = {"cpu": "host", "python": "host", "gpu": "gpu", "npu": "npu"}


@dataclass(frozen=True)
class Subgraph:
    """One single-device piece of a heterogeneous graph.

    ``ops`` are in topological order; ``inputs`` are tensors it reads from other subgraphs or from
    the graph's inputs; ``outputs`` are tensors other subgraphs read or graph outputs.
    """

    name: str
    device: str
    ops: tuple[OpId, ...]
    inputs: tuple[TensorId, ...] = ()
    outputs: tuple[TensorId, ...] = ()


def device_class(op: Op) -> str:
    """The partition class of an op (cpu and python ops are both ``"cpu"``)."""
    return DEVICE_CLASS.get(op.device, op.device)


def memory_space(op: Op) -> str:
    """Where an op's outputs live: ``host`` for cpu/python, the device otherwise; a copy op's output
    lives in its destination space."""
    if op.device == "copy":
        return str(op.attrs.get("dst_space", "copy"))
    return MEMORY_SPACE.get(op.device, op.device)


def partition(graph: Graph) -> list[Subgraph]:
    """Single-device subgraphs, greedily the fewest (see the module docstring for the algorithm and
    the minimality argument).

    >>> from workbench.models import textbook_heterogeneous
    >>> [s.name for s in partition(textbook_heterogeneous())]
    ['Graph_1_CPU', 'Graph_2_GPU', 'Graph_3_CPU', 'Graph_4_Ascend', 'Graph_5_CPU']
    """
    classes: list[str] = []
    members: list[list[OpId]] = []
    succ: list[set[int]] = []
    sub_of: dict[OpId, int] = {}

    def reaches(a: int, b: int) -> bool:
        stack, seen = [a], {a}
        while stack:
            for x in succ[stack.pop()]:
                if x == b:
                    return True
                if x not in seen:
                    seen.add(x)
                    stack.append(x)
        return False

    for v in graph.topo_order():
        cls = device_class(graph.op(v))
        pred_subs = {sub_of[p] for p in graph.predecessors(v)}
        chosen = None
        for k in range(len(members) - 1, -1, -1):
            if classes[k] == cls and not any(p != k and reaches(k, p) for p in pred_subs):
                chosen = k
                break
        if chosen is None:
            chosen = len(members)
            classes.append(cls)
            members.append([])
            succ.append(set())
        members[chosen].append(v)
        sub_of[v] = chosen
        for p in pred_subs:
            if p != chosen:
                succ[p].add(chosen)
    out = []
    graph_outputs = set(graph.outputs)
    for k, ops in enumerate(members):
        inside = set(ops)
        inputs: list[TensorId] = []
        outputs: list[TensorId] = []
        for op_id in ops:
            op = graph.op(op_id)
            for t in op.inputs:
                producer = graph.tensor(t).producer
                if (producer is None or producer not in inside) and t not in inputs:
                    inputs.append(t)
            for t in op.outputs:
                if t in graph_outputs or any(c not in inside for c in graph.consumers(t)):
                    outputs.append(t)
        label = LABELS.get(classes[k], classes[k].upper())
        out.append(Subgraph(f"Graph_{k + 1}_{label}", classes[k], tuple(ops), tuple(inputs),
                            tuple(outputs)))
    return out


def min_subgraphs_lower_bound(graph: Graph) -> int:
    """The most device-class runs on any path: no acyclic partition has fewer subgraphs.  O(V + E).

    >>> from workbench.models import textbook_heterogeneous
    >>> min_subgraphs_lower_bound(textbook_heterogeneous())
    5
    """
    runs: dict[OpId, int] = {}
    for v in graph.topo_order():
        cls = device_class(graph.op(v))
        runs[v] = max((runs[p] + (device_class(graph.op(p)) != cls)
                       for p in graph.predecessors(v)), default=1)
    return max(runs.values(), default=0)


def _copy_kind(src: str, dst: str) -> str:
    if src == "host":
        return "h2d"
    if dst == "host":
        return "d2h"
    return "d2d"


def insert_copies(graph: Graph) -> Graph:
    """Return a copy of ``graph`` with a copy op on every data edge that crosses memory spaces (one
    per tensor and destination; see the module docstring).  Each copy is placed in program order
    right after the tensor's producer.  Idempotent.

    >>> from workbench.models import textbook_heterogeneous
    >>> [op.id for op in insert_copies(textbook_heterogeneous()).ops if op.device == "copy"][:2]
    ['h2d:Kernel_1:out@gpu', 'h2d:Kernel_2:out@gpu']
    """
    tensors = graph.tensors
    copies: dict[tuple[TensorId, str], Op] = {}
    after: dict[OpId, list[Op]] = {}
    new_inputs: dict[OpId, tuple[TensorId, ...]] = {}
    new_tensors: list[Tensor] = []
    for op in graph.ops:
        if op.device == "copy":
            continue
        dst = memory_space(op)
        ins = list(op.inputs)
        for pos, t in enumerate(op.inputs):
            producer = tensors[t].producer
            if producer is None:
                continue
            src_op = graph.op(producer)
            src = memory_space(src_op)
            if src == dst:
                continue
            key = (t, dst)
            if key not in copies:
                kind = _copy_kind(src, dst)
                size = tensors[t].size_bytes
                out = f"{t}@{dst}"
                copies[key] = Op(
                    f"{kind}:{t}@{dst}", kind=kind, device="copy", inputs=(t,), outputs=(out,),
                    bytes_read=size, bytes_written=size,
                    attrs={"tensor": t, "src": src_op.device, "dst": op.device, "src_space": src,
                           "dst_space": dst})
                after.setdefault(producer, []).append(copies[key])
                new_tensors.append(Tensor(out, size, producer=copies[key].id,
                                          shape=tensors[t].shape, dtype=tensors[t].dtype))
            ins[pos] = copies[key].outputs[0]
        if tuple(ins) != op.inputs:
            new_inputs[op.id] = tuple(ins)
    if not copies:
        return graph
    ops: list[Op] = []
    for op in graph.ops:
        ops.append(replace(op, inputs=new_inputs[op.id]) if op.id in new_inputs else op)
        ops.extend(after.get(op.id, ()))
    return graph.replace(ops=ops, tensors=[*tensors.values(), *new_tensors],
                         outputs=graph.outputs)
