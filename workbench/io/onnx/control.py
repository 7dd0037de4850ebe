"""ONNX control flow (``If``, ``Loop``, ``Scan``) as real sub-graphs (:mod:`workbench.control`).

Each body ``GraphProto`` becomes a :class:`~workbench.values.graph.Graph` (:func:`body_graphs`,
which
imports nested bodies the same way), and the node one control-flow op:

* ``If`` → ``case_of`` with branches ``then_branch`` and ``else_branch`` on the selector ``cond``
  (a device→host sync); its default branch is the costlier one (by FLOPs, then bytes);
* ``Loop`` → ``while``: the loop-carried values are carried tensors; with a ``cond`` input the
  loop state ``cond_in`` is the flag the host reads before every iteration, without one the host
  counts the iterations (ONNX ignores the condition then); the iteration number ``i`` is a
  host-supplied ``parameter`` of the body; scan outputs are results; the default trip count is
  ``M`` when it is a constant, else 1 (``attrs["trip_count"] = "unknown"``);
* ``Scan`` → ``while`` counted by the host over the length of the first scan input, each scan
  input bound to its per-iteration slice.

Values a body reads from the outer scope become inputs of the body and of the op (bound by name).
``flops`` / ``bytes`` on the op are summary figures (:func:`control_flow_cost`: the costlier branch,
the body times the trip count), with ``attrs`` ``body_ops``, ``body_kinds``, ``costed_from`` /
``trip_count``; the simulator runs the sub-graphs themselves.  A node whose bodies do not fit the
ONNX signature keeps the old flattened form: one op carrying that summary cost
(``attrs["launch"] = "given"``).  Complexity: O(body nodes), recursively for nested bodies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from workbench.control.ops import case_of_op, while_op
from workbench.io.onnx.rules import ShapeCost
from workbench.values.graph import Graph, Op

#: Op type -> the attributes that hold its body graphs.
CONTROL_FLOW: dict[str, tuple[str, ...]] = {"If": ("then_branch", "else_branch"),
                                            "Loop": ("body",), "Scan": ("body",)}

#: (body GraphProto, op id prefix) -> the body's ops.
BodyImporter = Callable[[Any, str], list[Op]]


def body_ops(node: Any, op_id: str, import_body: BodyImporter) -> dict[str, list[Op]]:
    """The ops of each body graph of a control-flow ``NodeProto``, keyed by attribute name; body
    op ids are ``"<op_id>/<attribute>/<body op id>"`` (the flattened view).  O(body nodes)."""
    wanted = CONTROL_FLOW.get(str(node.op_type), ())
    out: dict[str, list[Op]] = {}
    for attr in node.attribute:
        name = attr.name.decode() if isinstance(attr.name, bytes) else str(attr.name)
        if name in wanted and attr.HasField("g"):
            out[name] = import_body(attr.g, f"{op_id}/{name}/")
    return out


class Body(NamedTuple):
    """One imported body: the Graph, its declared inputs and outputs (ONNX order) and the outer
    values it reads (captured by name)."""

    graph: Graph
    inputs: list[str]
    outputs: list[str]
    captured: list[str]


#: (body GraphProto, body name) -> the imported body.
GraphImporter = Callable[[Any, str], Body]


def body_graphs(node: Any, import_graph: GraphImporter) -> dict[str, Body]:
    """Each body of a control-flow ``NodeProto`` imported as a :class:`Body`, keyed by attribute
    name (``then_branch``, ``else_branch``, ``body``).  O(body nodes)."""
    wanted = CONTROL_FLOW.get(str(node.op_type), ())
    out: dict[str, Body] = {}
    for attr in node.attribute:
        name = attr.name.decode() if isinstance(attr.name, bytes) else str(attr.name)
        if name in wanted and attr.HasField("g"):
            out[name] = import_graph(attr.g, name)
    return out


def control_op(op_type: str, op_id: str, inputs: Sequence[str], outputs: Sequence[str],
               attrs: Mapping[str, Any], bodies: Mapping[str, Body],
               repeats: int | None) -> Op:
    """The ``case_of`` / ``while`` op of an ``If`` / ``Loop`` / ``Scan`` node (module docstring).
    Raises ``ValueError`` or :class:`~workbench.errors.GraphError` when the bodies do not fit the
    node's signature."""
    captured = [t for b in bodies.values() for t in b.captured]
    ins = list(dict.fromkeys([t for t in inputs if t] + captured))
    summary, extra = control_flow_cost(op_type, {k: list(b.graph.ops) for k, b in
                                                 bodies.items()}, repeats)
    extra.pop("launch", None)
    if op_type == "If":
        if set(bodies) != {"then_branch", "else_branch"} or not inputs or not inputs[0]:
            raise ValueError("If needs both branches and a condition")
        branches = [(k, bodies[k].graph) for k in ("then_branch", "else_branch")]
        default = [k for k, _ in branches].index(extra["costed_from"])
        op = case_of_op(op_id, selector=inputs[0], branches=branches, default=default,
                        inputs=ins, outputs=outputs)
    elif op_type == "Loop":
        op = _loop(op_id, bodies["body"], inputs, outputs, ins, repeats)
    else:
        op = _scan(op_id, bodies["body"], inputs, outputs, ins, attrs, repeats)
    onnx_attrs = {k: v for k, v in attrs.items() if k not in CONTROL_FLOW[op_type]}
    return replace(op, flops=float(summary.flops), bytes_read=int(summary.bytes_read),
                   bytes_written=int(summary.bytes_written),
                   thread_blocks=int(summary.thread_blocks),
                   attrs={**onnx_attrs, **extra, **op.attrs})


def _loop(op_id: str, body: Body, inputs: Sequence[str], outputs: Sequence[str],
          ins: list[str], repeats: int | None) -> Op:
    """``Loop(M, cond, v...)``: body ``(i, cond_in, v_in...) -> (cond_out, v_out..., scans...)``,
    node outputs ``(v_final..., scan outputs...)``."""
    n_state = len(inputs) - 2
    if n_state < 0 or len(body.inputs) != n_state + 2 or len(body.outputs) < n_state + 1 \
            or len(outputs) != len(body.outputs) - 1:
        raise ValueError("Loop signature does not match its body")
    v_in, v_out = body.inputs[2:], body.outputs[1:1 + n_state]
    carried = list(zip(v_in, inputs[2:], v_out, strict=True))
    flag = None
    host_supplied = [body.inputs[0]]
    if inputs[1]:
        carried.append((body.inputs[1], inputs[1], body.outputs[0]))
        flag = body.inputs[1]
    else:
        host_supplied.append(body.inputs[1])
    graph = _as_parameters(body.graph, host_supplied)
    return while_op(op_id, body=graph, carried=carried, flag=flag,
                    iterations=repeats if repeats is not None and repeats >= 0 else 1,
                    inputs=ins, outputs=outputs,
                    results=[*v_in, *body.outputs[1 + n_state:]])


def _scan(op_id: str, body: Body, inputs: Sequence[str], outputs: Sequence[str],
          ins: list[str], attrs: Mapping[str, Any], repeats: int | None) -> Op:
    """``Scan(s..., xs...)`` (opset 9+): body ``(s_in..., x_slices...) -> (s_out...,
    y_slices...)``, node outputs ``(s_final..., ys...)``."""
    n_scan = attrs.get("num_scan_inputs")
    if not isinstance(n_scan, int) or not 0 < n_scan <= len(inputs):
        raise ValueError("Scan without a valid num_scan_inputs")
    n_state = len(inputs) - n_scan
    if len(body.inputs) != len(inputs) or len(body.outputs) != len(outputs) \
            or len(outputs) < n_state:
        raise ValueError("Scan signature does not match its body")
    carried = list(zip(body.inputs[:n_state], inputs[:n_state], body.outputs[:n_state],
                       strict=True))
    bind = dict(zip(body.inputs[n_state:], inputs[n_state:], strict=True))
    return while_op(op_id, body=body.graph, carried=carried, flag=None,
                    iterations=repeats if repeats is not None and repeats >= 0 else 1,
                    inputs=ins, outputs=outputs, bind=bind,
                    results=[*body.inputs[:n_state], *body.outputs[n_state:]])


def _as_parameters(graph: Graph, names: Sequence[str]) -> Graph:
    """The body with ``names`` (values the host supplies: the iteration number, an ignored
    condition) turned into its own parameters, which need no binding."""
    tensors = [replace(t, role="parameter") if t.id in names and t.producer is None else t
               for t in graph.tensors.values()]
    return graph.replace(tensors=tensors)


def _total(ops: Sequence[Op]) -> ShapeCost:
    blocks = max((op.thread_blocks or 1 for op in ops), default=1)
    return ShapeCost(sum(op.flops for op in ops), sum(op.bytes_read for op in ops),
                     sum(op.bytes_written for op in ops), blocks)


def control_flow_cost(op_type: str, bodies: Mapping[str, Sequence[Op]],
                      repeats: int | None) -> tuple[ShapeCost, dict[str, Any]]:
    """The node's cost from its bodies (module docstring) and attrs that explain it.

    >>> a = Op("c", kind="conv2d", flops=100.0, bytes_read=8, thread_blocks=4)
    >>> cost, attrs = control_flow_cost("If", {"then_branch": [a], "else_branch": []}, None)
    >>> cost.flops, attrs["costed_from"]
    (100.0, 'then_branch')
    """
    if not bodies:
        return ShapeCost(0, 0, 0, 1), {"body_ops": {}}
    totals = {name: _total(ops) for name, ops in bodies.items()}
    attrs: dict[str, Any] = {"launch": "given",
                             "body_ops": {name: len(ops) for name, ops in bodies.items()}}
    kinds: Counter[str] = Counter(op.kind for ops in bodies.values() for op in ops)
    attrs["body_kinds"] = dict(sorted(kinds.items()))
    if op_type == "If":
        name = max(totals, key=lambda k: (totals[k].flops, totals[k].bytes_read
                                         + totals[k].bytes_written))
        attrs["costed_from"] = name
        return totals[name], attrs
    body = next(iter(totals.values()))
    times = repeats if repeats is not None and repeats > 0 else 1
    attrs["trip_count"] = repeats if repeats is not None else "unknown"
    return ShapeCost(body.flops * times, body.bytes_read * times, body.bytes_written * times,
                     body.thread_blocks), attrs


__all__ = ["CONTROL_FLOW", "Body", "body_graphs", "body_ops", "control_flow_cost",
           "control_op"]
