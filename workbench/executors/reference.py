"""A NumPy reference executor: really compute a small graph on the CPU, op by op, in a schedule's
issue order (STYLE.md R5: an oracle that shares no code with the schedulers or the simulator).

It answers "does this schedule compute the right values?", which is what side effects make
interesting (seed 003 §7.5.2): with the textbook's ``x = y; x = z; r = x - y``, an issue order that
runs the Sub first gives ``r = x₀ - y``; after :func:`workbench.passes.add_side_effect_edges`, every
valid schedule gives ``r = z - y``.

Semantics:

* Ops run one at a time in ``schedule.issue_order`` (a Graph runs in ``graph.topo_order()``).  This
  is one serialisation of the schedule; :meth:`Schedule.validate` guarantees every dependency points
  forward in it, so it is a legal execution.  An op whose input has not been computed yet raises
  :class:`~workbench.errors.ScheduleError`.
* **State.**  Tensors of role ``parameter`` live in a state dict; every read sees the *current*
  value.  ``assign`` / ``assign_add`` / ``assign_sub`` write ``attrs["writes"]`` (else their first
  input) with their second input and output the new value.
* Graph inputs not given in ``inputs`` are drawn from ``numpy.random.default_rng(seed)``
  (:func:`draw_inputs` with ``init="reference"``):
  activations/inputs ~ N(0, 1), parameters ~ U(0.5, 1.5) (positive, so norm variances are valid),
  with the tensor's ``shape`` (else ``size_bytes // 4`` elements), float32.
* Kernels (:data:`KERNELS`): the NumPy reference of each op kind in :data:`workbench.ops.OPS`
  (:mod:`workbench.ops`: elementwise maps, conv2d, sepconv, pools, matmul, concat,
  softmax, layernorm, batchnorm, transpose, views to the output tensor's shape, copies and
  print as identity, the generic kind ``"op"`` of :meth:`Graph.from_edges` graphs), computed in
  float64 and returned in the inputs' floating type; ``fused`` evaluates ``attrs["expr"]``
  member by member.  No-task aliases (``attrs["view_shapes"]``) are applied as reshapes.  Any
  other kind raises :class:`~workbench.errors.OptionError`, and so does an op of a kind that
  needs operands but reads no tensor (e.g. the ``conv2d`` source of a structure-only seed graph
  such as ``nnc_diamond``): there is nothing to compute it from.

Returns every tensor's value by id (parameters: their value at the end of the run).

Examples
--------
>>> import numpy as np
>>> import workbench as wb
>>> from workbench.passes import add_side_effect_edges
>>> g = add_side_effect_edges(wb.models.textbook_side_effects())
>>> y, z = np.float32([0.2]), np.float32([0.3])
>>> out = run_reference(wb.schedule(g, "nnc"), {"x": np.float32([1.0]), "y": y, "z": z})
>>> bool(np.allclose(out["r"], z - y))
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from workbench.errors import OptionError, ScheduleError
from workbench.ops import ASSIGN_KINDS, OPS
from workbench.ops.generic import FUSED
from workbench.values.graph import Graph, Op, TensorId
from workbench.values.schedule import Schedule

Array = np.ndarray
ShapeOf = Callable[[TensorId], tuple[int, ...] | None]
Kernel = Callable[[Op, list[Array], ShapeOf], list[Array]]

#: Kernel per op kind: the NumPy reference of every entry of :data:`workbench.ops.OPS` that
# has
#: one (``fused`` and the ``assign`` family's state are handled by the executor itself).
KERNELS: dict[str, Kernel] = {name: info.reference for name, info in OPS.items()
                              if info.reference is not None}
STATE_KINDS = ASSIGN_KINDS


def _initial(graph: Graph, inputs: Mapping[TensorId, Any] | None, seed: int) -> dict[str, Array]:
    given = dict(inputs or {})
    for k in given:
        if k not in graph.tensors:
            raise OptionError(f"input {k!r} is not a tensor of graph {graph.name!r}")
    values = draw_inputs(graph, seed, given, init="reference")
    for k in values.keys() & given.keys():
        values[k] = np.asarray(given[k])  # as given (draw_inputs makes it float32)
    return values


def draw_inputs(graph: Graph, seed: int = 0, given: Mapping[TensorId, Any] | None = None, *,
                init: str = "scaled") -> dict[TensorId, Array]:
    """Values of the graph inputs and parameters (float32), from ``default_rng(seed)`` in tensor
    order, as :func:`run_reference` draws them: parameters U(0.5, 1.5), others N(0, 1).  The GPU
    executor and its references draw with it too, so their results compare directly.

    ``init="scaled"`` (the default here) then maps every *weight* — a parameter read as the
    kernel of a conv2d/sepconv or the right operand of a matmul — from U(0.5, 1.5) to
    U(-1, 1) · sqrt(6 / fan_in), variance 2 / fan_in (He initialisation), so that deep networks
    keep their activations finite; the draws themselves (and every other tensor) are those of
    ``init="reference"``.
    """
    if init not in ("scaled", "reference"):
        raise OptionError(f"unknown init {init!r} (known: scaled, reference)")
    rng = np.random.default_rng(seed)
    given = dict(given or {})
    out: dict[TensorId, Array] = {}
    for t in graph.tensors.values():
        if t.producer is not None:
            continue
        if t.id in given:
            out[t.id] = np.asarray(given[t.id], dtype=np.float32)
            continue
        shape = t.shape or (max(1, t.size_bytes // 4),)
        if t.role == "parameter":
            out[t.id] = rng.uniform(0.5, 1.5, size=shape).astype(np.float32)
        else:
            out[t.id] = rng.standard_normal(size=shape).astype(np.float32)
    if init == "scaled":
        for name, fan_in in _weight_fan_in(graph).items():
            if name in given or name not in out:
                continue
            u = 2.0 * (out[name].astype(np.float64) - 0.5) - 1.0  # U(0.5, 1.5) -> U(-1, 1)
            out[name] = (u * math.sqrt(6.0 / fan_in)).astype(np.float32)
    return out


def _weight_fan_in(graph: Graph) -> dict[TensorId, int]:
    """Parameters used as weights → their fan-in (elements summed per output element)."""
    tensors = graph.tensors
    out: dict[TensorId, int] = {}
    for op in graph.ops:
        info = OPS.get(op.kind)
        positions = info.weight_inputs if info is not None else ()
        for pos in positions:
            if pos >= len(op.inputs):
                continue
            t = tensors[op.inputs[pos]]
            if t.role != "parameter" or t.producer is not None:
                continue
            size = max(1, t.size_bytes // 4)
            if info.fan_in == "features":  # type: ignore[union-attr]
                fan = tensors[op.inputs[0]].shape[-1] if tensors[op.inputs[0]].shape else size
            elif info.fan_in == "depthwise" and pos == 1:  # type: ignore[union-attr]
                kernel = op.attrs.get("kernel", (3, 3))
                fan = int(kernel[0]) * int(kernel[1])
            else:
                cout = (tensors[op.outputs[0]].shape or (1, 1))[1]
                fan = max(1, size // max(1, cout))
            out[t.id] = max(1, int(fan))
    return out


def shape_or_flat(graph: Graph) -> Callable[[TensorId], tuple[int, ...]]:
    """``shape_of`` for a graph: the tensor's shape, else ``(size_bytes // 4,)``."""
    tensors = graph.tensors

    def shape_of(t: TensorId) -> tuple[int, ...]:
        tensor = tensors[t]
        return tuple(tensor.shape) if tensor.shape else (tensor.size_bytes // 4,)

    return shape_of


def _run_op(op: Op, args: list[Array], shape_of: ShapeOf, state: dict[str, Array]) -> list[Array]:
    views = op.attrs.get("view_shapes") or {}
    for pos, shape in views.items():
        args[int(pos)] = args[int(pos)].reshape(shape)
    if op.kind in STATE_KINDS:
        target = op.attrs.get("writes") or op.inputs[0]
        if not isinstance(target, str):
            target = list(target)[0]
        value = args[1] if len(args) > 1 else args[0]
        sign = OPS[op.kind].accumulate
        if sign > 0:
            value = state.get(target, args[0]) + value
        elif sign < 0:
            value = state.get(target, args[0]) - value
        state[target] = np.array(value, copy=True)
        return [np.array(value, copy=True) for _ in op.outputs]
    if op.kind == FUSED:
        return _run_fused(op, args, shape_of, state)
    kernel = KERNELS.get(op.kind)
    if kernel is None:
        known = ", ".join(sorted([*KERNELS, *STATE_KINDS, FUSED]))
        raise OptionError(f"reference executor: op {op.id!r} has kind {op.kind!r}, which it "
                          f"cannot compute (known: {known})")
    try:
        return kernel(op, args, shape_of)
    except (IndexError, ValueError, KeyError, TypeError) as exc:
        raise OptionError(f"reference executor: op {op.id!r} ({op.kind}) cannot run on inputs of "
                          f"shapes {[a.shape for a in args]}: {exc}") from None


def _run_fused(op: Op, args: list[Array], shape_of: ShapeOf,
               state: dict[str, Array]) -> list[Array]:
    env = dict(zip(op.inputs, args, strict=True))
    for e in op.attrs["expr"]:
        member = Op(e["op"], kind=e["kind"], inputs=tuple(e["inputs"]),
                    outputs=tuple(e["outputs"]), attrs=e.get("attrs", {}))
        outs = _run_op(member, [env[t] for t in member.inputs], shape_of, state)
        env.update(zip(member.outputs, outs, strict=True))
    return [env[t] for t in op.outputs]


def run_reference(schedule_or_graph: Schedule | Graph,
                  inputs: Mapping[TensorId, Any] | None = None, *,
                  seed: int = 0) -> dict[TensorId, Array]:
    """Compute every tensor of a small graph with NumPy, running ops in the schedule's issue order
    (see the module docstring for the semantics).  O(V) kernel calls."""
    if isinstance(schedule_or_graph, Graph):
        graph, order = schedule_or_graph, list(schedule_or_graph.topo_order())
    elif hasattr(schedule_or_graph, "issue_order") and hasattr(schedule_or_graph, "graph"):
        graph, order = schedule_or_graph.graph, list(schedule_or_graph.issue_order)
    else:
        raise OptionError(f"run_reference needs a Schedule or a Graph, "
                          f"got {type(schedule_or_graph).__name__}")
    values = _initial(graph, inputs, seed)
    tensors = graph.tensors
    state = {t.id: values[t.id] for t in tensors.values() if t.role == "parameter"
             and t.id in values}

    def shape_of(t: TensorId) -> tuple[int, ...] | None:
        tt = tensors.get(t)
        return tt.shape if tt is not None and tt.shape else None

    for op_id in order:
        op = graph.op(op_id)
        args = []
        for t in op.inputs:
            if t in state:
                args.append(state[t])
            elif t in values:
                args.append(values[t])
            else:
                raise ScheduleError(f"op {op_id!r} runs before its input {t!r} is computed (the "
                                    f"order violates a dependency)")
        try:
            outs = _run_op(op, args, shape_of, state)
        except OptionError:
            if op.inputs or op.kind not in KERNELS:
                raise
            raise OptionError(f"reference executor: op {op_id!r:.80} ({op.kind}) of graph "
                              f"{graph.name!r:.80} reads no tensor, so it has no values to compute "
                              f"from (a graph built from edges alone describes dependencies, not "
                              f"data); give it input tensors with shapes, or use the simulator"
                              ) from None
        values.update(zip(op.outputs, outs, strict=True))
    values.update(state)
    return values


def outputs_of(graph: Graph, values: Mapping[TensorId, Array]) -> dict[TensorId, Array]:
    """Just the graph outputs of a :func:`run_reference` result."""
    return {t: values[t] for t in graph.outputs}


__all__: Sequence[str] = ["KERNELS", "draw_inputs", "outputs_of", "run_reference", "shape_or_flat"]
