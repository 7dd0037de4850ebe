"""NumPy references for the GPU kernels: what each op computes, from its attrs and shapes.

:data:`REFERENCES`, :func:`reference_op` and :func:`run_graph_reference`, each op lowered the way
the GPU executor lowers it.  The references are the table's (:data:`workbench.ops.OPS`,
written in
:mod:`workbench.ops`, shared with :mod:`workbench.executors.reference`); this module
adds the
GPU's own meaning of the generic kind (the spin kernel) and of fused ops, and names the
elementwise maps by the kernels' activation codes (:data:`UNARY`, :data:`BINARY`).  The kernel
twins and the CPU emulator of launch plans are in :mod:`workbench.executors.gpu.emulator`.

Inputs are drawn exactly as :func:`workbench.executors.reference.run_reference` draws them
(:func:`workbench.executors.reference.draw_inputs`, re-exported here), so results compare directly.
Complexity: one NumPy call per op.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from workbench.errors import OptionError, ScheduleError
from workbench.executors.gpu.lowering import lowering_of
from workbench.executors.reference import draw_inputs, shape_or_flat
from workbench.ops import ASSIGN_KINDS, OPS
from workbench.ops import arrays as _ref
from workbench.ops.arrays import F32, Array, UnaryFn, batchnorm, layernorm, matmul, pool2d, softmax
from workbench.ops.generic import spin_value
from workbench.values.graph import Graph, Op, TensorId
from workbench.values.schedule import Schedule

#: Elementwise maps by activation name (``None``: identity), as the kernels' codes name them.
UNARY: dict[str | None, UnaryFn] = {None: _ref.identity, **{
    name: info.unary for name, info in OPS.items() if info.unary is not None}}
#: Two-input elementwise maps by kind.
BINARY: dict[str, Callable[[Array, Array], Array]] = {
    name: info.binary for name, info in OPS.items() if info.binary is not None}


def conv2d(x: Array, w: Array, bias: Array | None = None, *, stride: Any = 1, padding: Any = 0,
           groups: int = 1, act: str | None = None, pre_act: str | None = None) -> Array:
    """:func:`workbench.ops.arrays.conv2d` with the activations named as the kernels name
    them (:data:`UNARY`)."""
    return _ref.conv2d(x, w, bias, stride=stride, padding=padding, groups=groups,
                       act=UNARY[act], pre_act=UNARY[pre_act])


ShapeOf = Callable[[TensorId], tuple[int, ...]]


Reference = Callable[[Op, list[Array], ShapeOf], list[Array]]


def _ref_spin(op: Op, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    unique = dict(zip(op.inputs, a, strict=True))  # the kernel reads each tensor once
    v = spin_value(list(unique.values()))
    return [np.full(shape_of(t), v, dtype=F32) for t in op.outputs]


def _ref_fused(op: Op, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    env = dict(zip(op.inputs, a, strict=True))

    def member_shape(t: TensorId) -> tuple[int, ...]:
        return tuple(env[t].shape) if t in env else shape_of(t)

    for e in op.attrs["expr"]:
        member = Op(e["op"], kind=e["kind"], inputs=tuple(e["inputs"]),
                    outputs=tuple(e["outputs"]), attrs=e.get("attrs", {}) or {})
        args = [env[t] for t in member.inputs]
        env.update(zip(member.outputs, reference_op(member, args, member_shape), strict=True))
    return [env[t] for t in op.outputs]


#: Reference per op kind: the table's (:data:`workbench.ops.OPS`), with the GPU's own meaning
# of
#: two kinds: the generic kind ``"op"`` runs the spin kernel (:func:`spin_value`), and ``fused``
#: evaluates its members through this table.
REFERENCES: dict[str, Reference] = {
    **{name: info.reference for name, info in OPS.items() if info.reference is not None},
    "fused": _ref_fused,
    "op": _ref_spin,
}


def reference_op(op: Op, inputs: list[Array], shape_of: ShapeOf, *, how: str = "kernel"
                 ) -> list[Array]:
    """Outputs of one op (``how="spin"``: the spin op's semantics whatever the kind;
    ``"alias"``: a view of the input with the output's shape)."""
    if how == "alias":
        return [inputs[0].reshape(shape_of(op.outputs[0]))]
    kind = "op" if how == "spin" else op.kind
    try:
        fn = REFERENCES[kind]
    except KeyError:
        raise OptionError(f"no NumPy reference for op kind {op.kind!r} (op {op.id!r})") from None
    return [np.asarray(v, dtype=F32) for v in fn(op, inputs, shape_of)]


def run_graph_reference(schedule_or_graph: Schedule | Graph,
                        inputs: Mapping[TensorId, Any] | None = None,
                        *, seed: int = 0) -> dict[TensorId, Array]:
    """Every tensor of a graph computed with :data:`REFERENCES`, each op lowered the way the GPU
    executor lowers it (no-task ops alias, toy ops spin), in the schedule's issue order (a Graph:
    topological order).  Parameters written by ``assign`` ops end with their last value."""
    if isinstance(schedule_or_graph, Graph):
        graph, order = schedule_or_graph, list(schedule_or_graph.topo_order())
    else:
        graph, order = schedule_or_graph.graph, list(schedule_or_graph.issue_order)
    values = draw_inputs(graph, seed, inputs)
    shape_of = shape_or_flat(graph)
    has_shapes = _has_shapes(graph)
    for op_id in order:
        op = graph.op(op_id)
        try:
            args = [values[t] for t in op.inputs]
        except KeyError as exc:
            raise ScheduleError(f"op {op_id!r} runs before its input {exc.args[0]!r} is "
                                f"computed") from None
        how = lowering_of(op, has_shapes)
        outs = reference_op(op, args, shape_of, how=how)
        values.update(zip(op.outputs, outs, strict=True))
        if how == "kernel" and op.kind in ASSIGN_KINDS:
            target = op.attrs.get("writes") or op.inputs[0]
            values[target if isinstance(target, str) else list(target)[0]] = outs[0].copy()
    return values


def _has_shapes(graph: Graph) -> Callable[[Op], bool]:
    tensors = graph.tensors

    def check(op: Op) -> bool:
        for t in op.outputs:
            if not tensors[t].shape:
                return False
        for t in op.inputs:
            if tensors[t].role != "parameter" and not tensors[t].shape:
                return False
        return True

    return check


__all__ = [
    "BINARY", "F32", "REFERENCES", "UNARY", "Reference", "ShapeOf", "batchnorm", "conv2d",
    "draw_inputs", "layernorm", "matmul", "pool2d", "reference_op", "run_graph_reference",
    "shape_or_flat", "softmax", "spin_value",
]
