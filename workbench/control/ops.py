"""NNC's ``while`` and ``case..of`` as graph ops: the data model, builders and checks (seed 000,
"while and case..of"; notes nnc_mindspore.md §A.2 step 9, §A.3).

A control-flow op is a plain :class:`~workbench.values.graph.Op` whose ``kind`` is ``"while"`` or
``"case_of"`` and whose ``attrs`` hold :class:`~workbench.values.graph.Graph` values (immutable,
like the
outer graph) and the tensor mappings.  To the outer graph it is one op: it reads ``op.inputs``,
produces ``op.outputs``, has one stream in the parent schedule (NNC: the sub-graph's stream 0 is
the parent node's stream) and its own sub-schedules.

``while`` (``attrs``):

* ``cond`` (Graph, may be empty) and ``body`` (Graph).  Iteration ``k`` runs ``cond`` and, if the
  host decides to go on, ``body``; ``N`` iterations run ``cond`` ``N + 1`` times and ``body``
  ``N`` times.
* ``carried``: ``((state, init, next), ...)``: loop state ``state`` is an input tensor of
  ``cond``/``body``; it starts as the outer tensor ``init`` (one of ``op.inputs``) and after each
  body takes the body tensor ``next``.  Sizes must agree (a one-line error names the tensor).
* ``flag``: the tensor whose value the host reads before each iteration (a ``cond`` output or a
  loop state): a device→host sync.  ``None``: the host counts the iterations itself (no sync).
* ``iterations``: the default trip count when a run does not say (``simulate(iterations=...)``).
* ``results`` (optional): one name per ``op.outputs``: a loop state (its final value) or a body
  tensor (its last iteration's value: ONNX scan outputs).  Default: the loop states in order.
* ``bind`` (optional): sub-graph input → outer tensor; an unbound input reads the outer tensor of
  the same name, which must be one of ``op.inputs`` (ONNX's outer-scope capture).

``case_of`` (``attrs``): ``branches`` (``((name, Graph), ...)``), ``selector`` (the outer tensor
whose value picks the branch: a device→host sync; ``None``: the host knows), ``default`` (branch
index or name when a run does not say) and ``bind``.  Branch ``b``'s ``outputs[j]`` becomes
``op.outputs[j]``.  Inputs with ``role="parameter"`` inside a sub-graph are its own weights.

Complexity: the checks are O(sub-graph tensors) per op; sub-graphs check themselves when built.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from workbench.ops.control import CASE_OF, WHILE
from workbench.values.control_checks import bindings as bindings
from workbench.values.control_checks import branch_index as branch_index
from workbench.values.control_checks import check_control_op as _check_control_op
from workbench.values.control_checks import output_bytes as output_bytes
from workbench.values.control_checks import result_names as result_names
from workbench.values.control_checks import subgraphs as _subgraphs
from workbench.values.graph import CONTROL_KINDS, Graph, Op, OpId, Tensor, TensorId

__all__ = ["CONTROL_KINDS", "branch_index", "bindings", "case_of_op", "check_control_op",
           "output_bytes", "result_names", "subgraphs", "while_op"]


def subgraphs(op: Op) -> tuple[tuple[str, Graph], ...]:
    """The named sub-graphs of a control-flow op (``cond``/``body``, or the branches; ``()`` for
    any other op): :func:`workbench.values.control_checks.subgraphs`, typed with the Graph class
    (a Graph checks on construction that they are Graphs).  O(branches)."""
    return cast("tuple[tuple[str, Graph], ...]", _subgraphs(op))


EMPTY = Graph([], name="empty")


# ------------------------------------------------------------------------------------ builders
def _free_inputs(subs: Iterable[Graph], states: Iterable[str], bind: Mapping[str, str]
                 ) -> list[TensorId]:
    skip = set(states)
    out: list[TensorId] = []
    for g in subs:
        for t in g.tensors.values():
            if t.producer is None and t.role != "parameter" and t.id not in skip:
                outer = bind.get(t.id, t.id)
                if outer not in out:
                    out.append(outer)
    return out


def _totals(parts: Iterable[tuple[Graph, int]]) -> dict[str, Any]:
    flops = 0.0
    read = written = 0
    for g, times in parts:
        flops += times * sum(o.flops for o in g.ops)
        read += times * sum(o.bytes_read for o in g.ops)
        written += times * sum(o.bytes_written for o in g.ops)
    return {"flops": flops, "bytes_read": read, "bytes_written": written}


def while_op(op_id: OpId, *, cond: Graph | None = None, body: Graph,
             carried: Sequence[tuple[str, TensorId, TensorId]], flag: TensorId | None,
             iterations: int = 1, inputs: Sequence[TensorId] | None = None,
             outputs: Sequence[TensorId] | None = None, results: Sequence[str] | None = None,
             bind: Mapping[str, TensorId] | None = None, device: str = "gpu") -> Op:
    """A ``while`` op (module docstring).  ``inputs`` default to the initial values of the loop
    states plus the outer tensors the sub-graphs read; ``outputs`` to ``"<op_id>:<result>"``.
    ``flops``/``bytes`` are the totals of the default run (for summaries; the simulator runs the
    sub-graphs).

    >>> body = Graph([Op("mm", kind="matmul", inputs=("h",), outputs=("h2",), duration_us=5.0)],
    ...              [Tensor("h", 64, role="input")])
    >>> op = while_op("loop", body=body, carried=[("h", "x", "h2")], flag=None, iterations=3)
    >>> op.kind, op.inputs, op.outputs
    ('while', ('x',), ('loop:h',))
    """
    cond = cond if cond is not None else EMPTY
    carried = tuple((str(s), str(i), str(n)) for s, i, n in carried)
    bind = dict(bind or {})
    states = [s for s, _, _ in carried]
    if inputs is None:
        inputs = list(dict.fromkeys([i for _, i, _ in carried]
                                    + _free_inputs((cond, body), states, bind)))
    names = tuple(results) if results is not None else tuple(states)
    if outputs is None:
        outputs = [f"{op_id}:{r}" for r in names]
    attrs: dict[str, Any] = {"cond": cond, "body": body, "carried": carried, "flag": flag,
                             "iterations": iterations}
    if results is not None:
        attrs["results"] = names
    if bind:
        attrs["bind"] = bind
    n = iterations if isinstance(iterations, int) and iterations >= 0 else 0
    return Op(op_id, kind=WHILE, device=device, inputs=tuple(inputs), outputs=tuple(outputs),
              attrs=attrs, **_totals([(cond, n + 1), (body, n)]))


def case_of_op(op_id: OpId, *, selector: TensorId | None,
               branches: Mapping[str, Graph] | Sequence[tuple[str, Graph]],
               default: int | str = 0, inputs: Sequence[TensorId] | None = None,
               outputs: Sequence[TensorId] | None = None,
               bind: Mapping[str, TensorId] | None = None, device: str = "gpu") -> Op:
    """A ``case_of`` op (module docstring).  ``inputs`` default to the selector plus the outer
    tensors the branches read; ``outputs`` to ``"<op_id>:out<j>"``, one per branch output.

    >>> a = Graph.from_edges([], ops=["conv"])
    >>> b = Graph.from_edges([], ops=["relu"])
    >>> case_of_op("pick", selector="p", branches={"a": a, "b": b}).outputs
    ('pick:out0',)
    """
    items = tuple((str(n), g) for n, g in (branches.items() if isinstance(branches, Mapping)
                                           else branches))
    bind = dict(bind or {})
    if inputs is None:
        inputs = list(dict.fromkeys(([selector] if selector is not None else [])
                                    + _free_inputs((g for _, g in items), (), bind)))
    if outputs is None:
        width = len(items[0][1].outputs) if items else 0
        outputs = [f"{op_id}:out{j}" for j in range(width)]
    attrs: dict[str, Any] = {"branches": items, "selector": selector, "default": default}
    if bind:
        attrs["bind"] = bind
    first = items[_branch_index_safe(items, default)][1] if items else EMPTY
    return Op(op_id, kind=CASE_OF, device=device, inputs=tuple(inputs),
              outputs=tuple(outputs), attrs=attrs, **_totals([(first, 1)]))


def _branch_index_safe(items: Sequence[tuple[str, Graph]], choice: Any) -> int:
    names = [n for n, _ in items]
    if isinstance(choice, str) and choice in names:
        return names.index(choice)
    if isinstance(choice, int) and 0 <= choice < len(names):
        return choice
    return 0


def check_control_op(op: Op, tensors: Mapping[TensorId, Tensor]) -> None:
    """Check a control-flow op against the outer graph's ``tensors``
    (:func:`workbench.values.control_checks.check_control_op`); a Graph runs this on each of its
    control-flow ops when built."""
    _check_control_op(op, tensors, Graph)
