"""NNC's ``while`` and ``case..of`` as graph ops: the data model, builders and checks (seed 000,
"while and case..of"; notes nnc_mindspore.md §A.2 step 9, §A.3).

A control-flow op is a plain :class:`~workbench.graph.Op` whose ``kind`` is ``"while"`` or
``"case_of"`` and whose ``attrs`` hold :class:`~workbench.graph.Graph` values (immutable, like the
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
from typing import Any

from workbench.errors import GraphError
from workbench.graph import CONTROL_KINDS, Graph, Op, OpId, Tensor, TensorId

__all__ = ["CONTROL_KINDS", "branch_index", "bindings", "case_of_op", "check_control_op",
           "output_bytes", "result_names", "subgraphs", "while_op"]

EMPTY = Graph([], name="empty")


def subgraphs(op: Op) -> tuple[tuple[str, Graph], ...]:
    """The named sub-graphs of a control-flow op (``cond``/``body``, or the branches); ``()`` for
    any other op."""
    if op.kind == "while":
        return (("cond", op.attrs["cond"]), ("body", op.attrs["body"]))
    if op.kind == "case_of":
        return tuple((str(n), g) for n, g in op.attrs["branches"])
    return ()


def result_names(op: Op) -> tuple[str, ...]:
    """Per output of a ``while`` op: the loop state or body tensor it stands for."""
    results = op.attrs.get("results")
    if results is None:
        return tuple(state for state, _, _ in op.attrs.get("carried", ()))
    return tuple(results)


def bindings(op: Op, sub: Graph) -> dict[TensorId, TensorId]:
    """Sub-graph input → outer tensor for the inputs of ``sub`` that are neither loop states nor
    its own parameters (``bind``, else the same name)."""
    states = {c[0] for c in op.attrs.get("carried", ())}
    bind = op.attrs.get("bind") or {}
    out = {}
    for t in sub.tensors.values():
        if t.producer is None and t.role != "parameter" and t.id not in states:
            out[t.id] = bind.get(t.id, t.id)
    return out


def branch_index(op: Op, choice: int | str | None) -> int:
    """The branch a ``case_of`` runs for ``choice`` (index or name; ``None``: its default); a
    one-line :class:`~workbench.errors.OptionError` names the known branches otherwise."""
    from workbench.errors import OptionError

    names = [n for n, _ in subgraphs(op)]
    if choice is None:
        choice = op.attrs.get("default", 0)
    if isinstance(choice, str) and choice in names:
        return names.index(choice)
    if isinstance(choice, int) and not isinstance(choice, bool) and 0 <= choice < len(names):
        return choice
    raise OptionError(f"case_of {op.id!r} has no branch {choice!r} (branches: "
                      f"{', '.join(names)}; or an index 0..{len(names) - 1})")


def output_bytes(op: Op, tensor: TensorId) -> int:
    """Size of output ``tensor`` of a control-flow op, read from the sub-graph tensor behind it
    (0 when unknown)."""
    if tensor not in op.outputs:
        return 0
    j = op.outputs.index(tensor)
    try:
        if op.kind == "case_of":
            _, first = subgraphs(op)[0]
            return first.tensor(first.outputs[j]).size_bytes
        name = result_names(op)[j]
        body, cond = op.attrs["body"], op.attrs["cond"]
        nexts = {s: n for s, _, n in op.attrs["carried"]}
        size = body.tensor(nexts.get(name, name)).size_bytes
        for g in (body, cond):  # the next value's size unknown: the state's own
            if not size and name in g.tensors:
                size = g.tensors[name].size_bytes
        return size
    except (GraphError, IndexError, KeyError, TypeError, ValueError):
        return 0  # malformed: check_control_op names the problem


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
    return Op(op_id, kind="while", device=device, inputs=tuple(inputs), outputs=tuple(outputs),
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
    return Op(op_id, kind="case_of", device=device, inputs=tuple(inputs),
              outputs=tuple(outputs), attrs=attrs, **_totals([(first, 1)]))


def _branch_index_safe(items: Sequence[tuple[str, Graph]], choice: Any) -> int:
    names = [n for n, _ in items]
    if isinstance(choice, str) and choice in names:
        return names.index(choice)
    if isinstance(choice, int) and 0 <= choice < len(names):
        return choice
    return 0


# ------------------------------------------------------------------------------------ checks
def check_control_op(op: Op, tensors: Mapping[TensorId, Tensor]) -> None:
    """Check a control-flow op against the outer graph's ``tensors``; raise a one-line
    :class:`~workbench.errors.GraphError` naming the op and the tensor.  O(sub-graph tensors)."""
    if op.kind == "while":
        _check_while(op, tensors)
    elif op.kind == "case_of":
        _check_case(op, tensors)


def _graph_attr(op: Op, key: str) -> Graph:
    g = op.attrs.get(key)
    if not isinstance(g, Graph):
        raise GraphError(f"{op.kind} {op.id!r}: attrs[{key!r}] must be a Graph, got "
                         f"{type(g).__name__}")
    return g


def _size(t: Tensor | None) -> int:
    return t.size_bytes if t is not None else 0


def _check_while(op: Op, tensors: Mapping[TensorId, Tensor]) -> None:
    where = f"loop {op.id!r}"
    cond, body = _graph_attr(op, "cond"), _graph_attr(op, "body")
    carried = op.attrs.get("carried", ())
    if not isinstance(carried, (list, tuple)) or not all(
            isinstance(c, (list, tuple)) and len(c) == 3 and all(isinstance(x, str) for x in c)
            for c in carried):
        raise GraphError(f"{where}: carried must be (state, init, next) triples of tensor ids")
    seen: set[str] = set()
    for state, init, nxt in carried:
        if state in seen:
            raise GraphError(f"{where}: carried tensor {state!r} is listed twice")
        seen.add(state)
        if init not in op.inputs:
            raise GraphError(f"{where}: carried tensor {state!r} starts from {init!r}, which is "
                             f"not an input of the op")
        if nxt not in body.tensors:
            raise GraphError(f"{where}: carried tensor {state!r} does not match: the body has no "
                             f"tensor {nxt!r} for its next value")
        inner = [g.tensors[state] for g in (cond, body) if state in g.tensors]
        if not inner:
            raise GraphError(f"{where}: carried tensor {state!r} is read by neither the "
                             f"condition nor the body")
        if any(t.producer is not None for t in inner):
            raise GraphError(f"{where}: carried tensor {state!r} is produced inside the loop; "
                             f"a loop state must be a sub-graph input")
        sizes = {f"{init!r} outside": _size(tensors.get(init)),
                 f"{nxt!r} in the body": body.tensors[nxt].size_bytes,
                 f"{state!r} inside": inner[0].size_bytes}
        known = {k: v for k, v in sizes.items() if v > 0}
        if len(set(known.values())) > 1:
            listed = ", ".join(f"{v} bytes as {k}" for k, v in known.items())
            raise GraphError(f"{where}: carried tensor {state!r} does not match: {listed}")
    flag = op.attrs.get("flag")
    if flag is not None and flag not in seen and not (
            flag in cond.tensors and cond.tensors[flag].producer is not None):
        raise GraphError(f"{where}: flag {flag!r} is neither a tensor the condition produces "
                         f"nor a loop state")
    iterations = op.attrs.get("iterations", 1)
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 0:
        raise GraphError(f"{where}: iterations must be a non-negative integer, got "
                         f"{iterations!r}")
    given = op.attrs.get("results")
    if given is not None and not (isinstance(given, (list, tuple))
                                  and all(isinstance(r, str) for r in given)):
        raise GraphError(f"{where}: results must be a list of tensor ids, got {given!r}"[:300])
    results = result_names(op)
    if len(results) != len(op.outputs):
        raise GraphError(f"{where} has {len(op.outputs)} outputs but {len(results)} results "
                         f"(loop states or body tensors)")
    for r in results:
        if r not in seen and r not in body.tensors:
            raise GraphError(f"{where}: result {r!r} is neither a loop state nor a body tensor")
    _check_bindings(op, (("cond", cond), ("body", body)), where)


def _check_case(op: Op, tensors: Mapping[TensorId, Tensor]) -> None:
    where = f"case_of {op.id!r}"
    branches = op.attrs.get("branches")
    if not isinstance(branches, (list, tuple)) or not branches or not all(
            isinstance(b, (list, tuple)) and len(b) == 2 and isinstance(b[1], Graph)
            for b in branches):
        raise GraphError(f"{where}: branches must be a non-empty list of (name, Graph) pairs")
    names = [str(n) for n, _ in branches]
    if len(set(names)) != len(names):
        raise GraphError(f"{where}: branch names repeat ({', '.join(names)})")
    selector = op.attrs.get("selector")
    if selector is not None and selector not in op.inputs:
        raise GraphError(f"{where}: selector {selector!r} is not an input of the op")
    for name, g in branches:
        if len(g.outputs) != len(op.outputs):
            raise GraphError(f"{where}: branch {name!r} has {len(g.outputs)} outputs, the op "
                             f"has {len(op.outputs)}")
        for inner, outer in zip(g.outputs, op.outputs, strict=True):
            a, b = g.tensors[inner].size_bytes, _size(tensors.get(outer))
            if a and b and a != b:
                raise GraphError(f"{where}: output {outer!r} does not match: {b} bytes outside, "
                                 f"{a} bytes as {inner!r} in branch {name!r}")
    try:
        branch_index(op, None)
    except Exception as exc:  # noqa: BLE001 - re-raised as a graph error
        raise GraphError(str(exc)) from None
    _check_bindings(op, tuple((str(n), g) for n, g in branches), where)


def _check_bindings(op: Op, subs: Sequence[tuple[str, Graph]], where: str) -> None:
    bind = op.attrs.get("bind") or {}
    if not isinstance(bind, Mapping):
        raise GraphError(f"{where}: bind must map sub-graph inputs to outer tensors")
    for name, g in subs:
        for inner, outer in bindings(op, g).items():
            if outer not in op.inputs:
                raise GraphError(f"{where}: {name} input {inner!r} is bound to no outer tensor "
                                 f"(list {outer!r} in the op's inputs or bind it)")
