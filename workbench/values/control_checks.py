"""Reading and checking NNC's control-flow ops (``while``, ``case_of``): the sub-graphs an op
holds, their bindings to outer tensors, the size of an output, and the checks a
:class:`~workbench.values.graph.Graph` runs on each of its control-flow ops.

The layout of these ops is documented in :mod:`workbench.control.ops` (which builds them and
re-exports these helpers, ``subgraphs`` typed with the Graph class).  This module sits below
:mod:`workbench.values.graph` (a graph checks its control-flow ops with it, and control-flow ops
hold graphs), so it reads a sub-graph through the :class:`SubGraph` protocol (what a Graph has)
and imports nothing of the graph module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from workbench.errors import GraphError, OptionError
from workbench.ops import CONTROL_KINDS
from workbench.ops.control import CASE_OF, WHILE
from workbench.values.graph_items import Op, Tensor, TensorId


class SubGraph(Protocol):
    """What these helpers read of a sub-graph (a :class:`~workbench.values.graph.Graph`)."""

    @property
    def tensors(self) -> Mapping[TensorId, Tensor]: ...
    @property
    def outputs(self) -> tuple[TensorId, ...]: ...
    def tensor(self, tensor_id: TensorId) -> Tensor: ...


__all__ = ["bindings", "branch_index", "check_control_op", "control_output_bytes", "output_bytes",
           "result_names", "same_control",
           "subgraphs"]


def subgraphs(op: Op) -> tuple[tuple[str, SubGraph], ...]:
    """The named sub-graphs of a control-flow op (``cond``/``body``, or the branches); ``()`` for
    any other op."""
    if op.kind == WHILE:
        return (("cond", op.attrs["cond"]), ("body", op.attrs["body"]))
    if op.kind == CASE_OF:
        return tuple((str(n), g) for n, g in op.attrs["branches"])
    return ()


def result_names(op: Op) -> tuple[str, ...]:
    """Per output of a ``while`` op: the loop state or body tensor it stands for."""
    results = op.attrs.get("results")
    if results is None:
        return tuple(state for state, _, _ in op.attrs.get("carried", ()))
    return tuple(results)


def bindings(op: Op, sub: SubGraph) -> dict[TensorId, TensorId]:
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
        if op.kind == CASE_OF:
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


def check_control_op(op: Op, tensors: Mapping[TensorId, Tensor], graph_type: type[SubGraph]
                     ) -> None:
    """Check a control-flow op against the outer graph's ``tensors``; raise a one-line
    :class:`~workbench.errors.GraphError` naming the op and the tensor.  ``graph_type`` is
    :class:`~workbench.values.graph.Graph` (passed in by the graph module, which imports this one).
    O(sub-graph tensors)."""
    if op.kind == WHILE:
        _check_while(op, tensors, graph_type)
    elif op.kind == CASE_OF:
        _check_case(op, tensors, graph_type)


def _graph_attr(op: Op, key: str, graph_type: type[SubGraph]) -> SubGraph:
    g = op.attrs.get(key)
    if not isinstance(g, graph_type):
        raise GraphError(f"{op.kind} {op.id!r}: attrs[{key!r}] must be a Graph, got "
                         f"{type(g).__name__}")
    return g


def _size(t: Tensor | None) -> int:
    return t.size_bytes if t is not None else 0


def _check_while(op: Op, tensors: Mapping[TensorId, Tensor], graph_type: type[SubGraph]) -> None:
    where = f"loop {op.id!r}"
    cond, body = _graph_attr(op, "cond", graph_type), _graph_attr(op, "body", graph_type)
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


def _check_case(op: Op, tensors: Mapping[TensorId, Tensor], graph_type: type[SubGraph]) -> None:
    where = f"case_of {op.id!r}"
    branches = op.attrs.get("branches")
    if not isinstance(branches, (list, tuple)) or not branches or not all(
            isinstance(b, (list, tuple)) and len(b) == 2 and isinstance(b[1], graph_type)
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


def _check_bindings(op: Op, subs: Sequence[tuple[str, SubGraph]], where: str) -> None:
    bind = op.attrs.get("bind") or {}
    if not isinstance(bind, Mapping):
        raise GraphError(f"{where}: bind must map sub-graph inputs to outer tensors")
    for name, g in subs:
        for inner, outer in bindings(op, g).items():
            if outer not in op.inputs:
                raise GraphError(f"{where}: {name} input {inner!r} is bound to no outer tensor "
                                 f"(list {outer!r} in the op's inputs or bind it)")


def control_output_bytes(op: Op, tensor: TensorId) -> int:
    """Size of a control-flow op's output that the tensor table does not list: the size of the
    sub-graph tensor it stands for (0 for other ops)."""
    if op.kind not in CONTROL_KINDS:
        return 0
    return output_bytes(op, tensor)


def same_control(a: Op, b: Op) -> bool:
    """Control-flow ops compare their sub-graphs and mappings too (``attrs`` is not compared for
    other ops)."""
    return dict(a.attrs) == dict(b.attrs)
