"""IOS's operator-merge stage strategy (Ding et al., MLSys 2021; notes ios.md §2 "Operator merge").

Convolutions that read the same input tensor with the same stride and output size (groups = 1)
can run as ONE wider convolution: output channels concatenated, the largest kernel used for all
(smaller kernels zero-padded and centred), consumers reading channel slices of the merged output.
In IOS's Inception V3 schedules the three 1×1 convolutions of an Inception-A block become one
176-channel 1×1 conv.  Here a *unit* (conv → batchnorm → activation, see ``ios_units``) merges
with the other units of the same key into one merged unit whose ops are the merged conv and
merged tails (their flops and bytes summed).

Simplification: the merged conv's cost uses the largest kernel for every member (as IOS's padded
merge does); padding mismatches are accepted because the padded kernel is centred.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from workbench.ops.convolution import CONV2D
from workbench.values.graph import Graph, Op, OpId, Tensor

MERGEABLE = "conv2d"


def merge_key(graph: Graph, unit: Sequence[OpId]) -> tuple[Any, ...] | None:
    """What a unit must share with others to merge, or ``None`` when it cannot merge."""
    head = graph.op(unit[0])
    attrs = head.attrs
    if head.kind != MERGEABLE or int(attrs.get("groups", 1)) != 1 or not head.inputs:
        return None
    if attrs.get("pre_act"):
        return None
    out = graph.tensor(head.outputs[0])
    if len(out.shape) != 4:
        return None
    tails = tuple(graph.op(op).kind for op in unit[1:])
    return (head.inputs[0], tuple(attrs.get("stride", (1, 1))), out.shape[2:], attrs.get("act"),
            tails)


def merged_graph(graph: Graph, unit_ops: Sequence[Sequence[OpId]],
                 merges: Sequence[Sequence[int]]) -> tuple[Graph, dict[int, list[OpId]]]:
    """Apply the merges: each group of units becomes one merged unit.  Returns the new graph and,
    per merged group (keyed by its first unit index), the merged unit's op ids."""
    replaced: dict[str, str] = {}   # old unit output tensor -> merged output tensor
    removed: set[OpId] = set()
    new_ops: dict[OpId, list[Op]] = {}  # first removed op id -> merged ops to insert there
    new_tensors: list[Tensor] = []
    merged_ids: dict[int, list[OpId]] = {}
    for group in merges:  # first every renaming: a merged unit may read another's output
        units = [list(unit_ops[u]) for u in group]
        last = "merge(" + "+".join(graph.op(u[-1]).id for u in units) + "):out"
        for u in units:
            replaced[graph.op(u[-1]).outputs[0]] = last  # consumers read a channel slice
    for group in merges:
        units = [list(unit_ops[u]) for u in group]
        depth = len(units[0])
        ops_here: list[Op] = []
        prev_out: str | None = None
        for level in range(depth):
            members = [graph.op(u[level]) for u in units]
            mid = "merge(" + "+".join(m.id for m in members) + ")"
            out_id = f"{mid}:out"
            shapes = [graph.tensor(m.outputs[0]).shape for m in members]
            cout = sum(s[1] for s in shapes)
            n, _, ho, wo = shapes[0]
            size = sum(graph.tensor(m.outputs[0]).size_bytes for m in members)
            if level == 0:
                op = _merged_conv(graph, members, mid, out_id, n, ho, wo, cout,
                                  replaced.get(members[0].inputs[0], members[0].inputs[0]))
            else:
                op = Op(mid, kind=members[0].kind, device=members[0].device,
                        flops=sum(m.flops for m in members),
                        bytes_read=sum(m.bytes_read for m in members),
                        bytes_written=sum(m.bytes_written for m in members),
                        inputs=(prev_out,) if prev_out else (),
                        outputs=(out_id,),
                        thread_blocks=sum(m.thread_blocks or 1 for m in members),
                        attrs={"merged": [m.id for m in members]})
            new_tensors.append(Tensor(out_id, size, producer=mid, shape=(n, cout, ho, wo)))
            ops_here.append(op)
            prev_out = out_id
            removed.update(m.id for m in members)
        assert prev_out is not None
        new_ops[units[0][0]] = ops_here
        merged_ids[group[0]] = [op.id for op in ops_here]
    ops: list[Op] = []
    for op in graph.ops:
        if op.id in new_ops:
            ops.extend(new_ops[op.id])
        if op.id in removed:
            continue
        inputs = tuple(dict.fromkeys(replaced.get(t, t) for t in op.inputs))
        ops.append(op if inputs == op.inputs else _with_inputs(op, inputs))
    dropped = {t for op_id in removed for t in graph.op(op_id).outputs}
    tensors = [t for t in graph.tensors.values() if t.id not in dropped] + new_tensors
    outputs = [replaced.get(t, t) for t in graph.outputs]
    control = [(a, b) for a, b in graph.control_edges if a not in removed and b not in removed]
    return Graph(ops, tensors, control, outputs=list(dict.fromkeys(outputs)),
                 name=f"{graph.name}+merge"), merged_ids


def _merged_conv(graph: Graph, members: list[Op], mid: str, out_id: str, n: int, ho: int,
                 wo: int, cout: int, x: str) -> Op:
    """The merged convolution reading ``x`` (the members' input, renamed if its producer was
    merged too): largest kernel, padding to keep the output size, the members' bias and
    activation (they share the activation: :func:`merge_key`)."""
    kernels = [tuple(m.attrs.get("kernel", (1, 1))) for m in members]
    kh, kw = max(k[0] for k in kernels), max(k[1] for k in kernels)
    original = members[0].inputs[0]
    cin = int(members[0].attrs.get("cin", 0)) or graph.tensor(original).shape[1]
    weights = 4 * cout * cin * kh * kw
    in_bytes = graph.tensor(original).size_bytes
    out_bytes = 4 * n * cout * ho * wo
    return Op(mid, kind=CONV2D, device=members[0].device,
              flops=2.0 * n * cout * ho * wo * cin * kh * kw,
              bytes_read=in_bytes + weights, bytes_written=out_bytes, inputs=(x,),
              outputs=(out_id,),
              thread_blocks=math.ceil(n * ho * wo / 64) * math.ceil(cout / 64),
              attrs={"kernel": (kh, kw), "stride": members[0].attrs.get("stride", (1, 1)),
                     "padding": (kh // 2, kw // 2), "cin": cin, "cout": cout, "groups": 1,
                     "bias": any(m.attrs.get("bias") for m in members),
                     "act": members[0].attrs.get("act"), "merged": [m.id for m in members]})


def _with_inputs(op: Op, inputs: tuple[str, ...]) -> Op:
    from dataclasses import replace

    return replace(op, inputs=inputs)
