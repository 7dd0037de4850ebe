"""ONNX control flow (``If``, ``Loop``, ``Scan``): import the body graphs, cost the node from them.

For now a control-flow node stays one op of the outer graph and carries the cost of its bodies:

* ``If``: the costlier branch (by FLOPs, then bytes): the schedule must leave room for either;
* ``Loop``: the body times the trip count ``M`` when it is a constant, else once
  (``attrs["trip_count"] = "unknown"``);
* ``Scan``: the body times the length of the first scan input along its scan axis.

FLOPs and bytes add up, the grid is the widest body op's, and ``attrs["launch"] = "given"`` makes
the cost model run it as one kernel of those figures.  :func:`body_ops` is the one place that
imports bodies (its result, the body ops keyed by attribute name, is what a later sub-graph
representation can reuse).  Complexity: O(body nodes), recursively for nested bodies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench.graph import Op
from workbench.io.onnx_rules import ShapeCost

#: Op type -> the attributes that hold its body graphs.
CONTROL_FLOW: dict[str, tuple[str, ...]] = {"If": ("then_branch", "else_branch"),
                                            "Loop": ("body",), "Scan": ("body",)}

#: (body GraphProto, op id prefix) -> the body's ops.
BodyImporter = Callable[[Any, str], list[Op]]


def body_ops(node: Any, op_id: str, import_body: BodyImporter) -> dict[str, list[Op]]:
    """The ops of each body graph of a control-flow ``NodeProto``, keyed by attribute name; body
    op ids are ``"<op_id>/<attribute>/<body op id>"``.  O(body nodes)."""
    wanted = CONTROL_FLOW.get(str(node.op_type), ())
    out: dict[str, list[Op]] = {}
    for attr in node.attribute:
        name = attr.name.decode() if isinstance(attr.name, bytes) else str(attr.name)
        if name in wanted and attr.HasField("g"):
            out[name] = import_body(attr.g, f"{op_id}/{name}/")
    return out


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


__all__ = ["CONTROL_FLOW", "body_ops", "control_flow_cost"]
