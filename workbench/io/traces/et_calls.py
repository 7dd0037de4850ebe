"""The calls of a PyTorch Execution Trace: its outermost operator calls with the tensors they read
and write (:func:`read_calls`), for :mod:`workbench.io.traces.execution_trace`.

Reads Chakra's "host ET" schema (and its older attribute spellings), looks through
record-function scopes to the outermost operator calls, turns each into a
:class:`~workbench.io.traces.et_values.Call` with its tensor arguments
(:class:`~workbench.io.traces.et_values.Ref`), the arguments its ``op_schema`` marks as written in
place, the writes of the calls nested in it, and, for a training step, its autograd scope
(:mod:`workbench.io.traces.et_autograd`).  O(nodes + tensor arguments).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from workbench._checks import show
from workbench.errors import FormatError
from workbench.io.traces.et_autograd import (
    grad_fn_of,
    inner_calls,
    nearest_scope,
    phase_of,
    phases_below,
    scope_children,
)
from workbench.io.traces.et_values import Call, Ref, TensorKey
from workbench.io.traces.kineto_links import step_number


def key_of(value: Any) -> int | str | None:
    """An id usable as a dict key (a corrupt file may hold lists or objects there)."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _attr(node: Mapping[str, Any], name: str) -> Any:
    attrs = node.get("attrs")
    for a in attrs if isinstance(attrs, list) else ():
        if isinstance(a, dict) and a.get("name") == name:
            return a.get("value")
    return None


def _is_operator(node: Mapping[str, Any]) -> bool:
    schema = _attr(node, "op_schema")
    name = str(node.get("name", ""))
    return bool(schema) or ("::" in name and not name.startswith("["))


def _tensors(values: Any, shapes: Any) -> Iterator[Ref]:
    """Tensor references inside an argument list (nested lists of tensors too); an undefined
    tensor (``[id, 0, 0, 0, 0, ""]``: one id for all of them, no storage) is none."""
    if isinstance(values, list) and len(values) == 6 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in values[:5]) and isinstance(
            values[5], str):
        if values[1] == 0 and not values[5]:
            return
        shape = tuple(int(d) for d in shapes) if isinstance(shapes, list) and all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**31
            for d in shapes) else ()
        itemsize = min(max(1, values[4]), 16)
        offset, elements = values[2] * itemsize, max(0, values[3]) * itemsize
        yield Ref((values[0], values[1]), shape, itemsize, (offset, offset + elements))
    elif isinstance(values, list):
        shapes = shapes if isinstance(shapes, list) and len(shapes) == len(values) else [
            None] * len(values)
        for v, s in zip(values, shapes, strict=True):
            yield from _tensors(v, s)


#: ET schema 1.0.x fields that later schemas (1.0.2+, Chakra's 1.1) moved into ``attrs``.
_OLD_ATTRS = ("rf_id", "op_schema", "fw_parent", "seq_id", "scope", "tid", "fw_tid")


def _normalise(node: dict[str, Any]) -> dict[str, Any]:
    """A node of any ET schema HTA reads in the 1.1 layout: schema 1.0.1 (PyTorch 2.0-2.1)
    keeps the parent in ``parent``, ``rf_id``/``op_schema`` at the top and ``inputs`` /
    ``input_shapes`` as parallel lists; later ones have ``ctrl_deps``, ``attrs`` and
    ``inputs: {values, shapes}``.  Nodes already in the new layout are returned as they are."""
    if "ctrl_deps" in node or "parent" not in node:
        return node
    attrs = [a for a in node.get("attrs", []) if isinstance(a, dict)] if isinstance(
        node.get("attrs"), list) else []
    attrs += [{"name": k, "value": node[k]} for k in _OLD_ATTRS if k in node]
    out = {**node, "ctrl_deps": node["parent"], "attrs": attrs}
    for side in ("input", "output"):
        values = node.get(f"{side}s")
        if isinstance(values, list):
            out[f"{side}s"] = {"values": values, "shapes": node.get(f"{side}_shapes"),
                               "types": node.get(f"{side}_types")}
    return out


#: How the names of an execution trace's root scopes begin (PyTorch's ExecutionTraceObserver:
#: ``[pytorch|profiler|execution_trace|process]``, ``...|thread]``; ``execution_graph`` before
#: PyTorch 2.0): the only nodes that may be their own ``ctrl_deps`` parent.
ROOT_PREFIX = "[pytorch|profiler|"


def _is_root(node: Mapping[str, Any]) -> bool:
    return str(node.get("name", "")).startswith(ROOT_PREFIX)


def _below_operator(nodes: Mapping[int, Mapping[str, Any]]) -> dict[int, bool]:
    """Per node id: whether an operator is among its ``ctrl_deps`` ancestors (walked until a
    node repeats: the root names itself).  Memoised, so a 5,000-node chain costs O(V), not
    O(V²) (issue 27): ``above[n] = is_operator(parent) or above[parent]``; on a cycle every
    node's answer is whether another node of the cycle is an operator; a cycle of more than one
    node, or a node other than a root scope (:data:`ROOT_PREFIX`) naming itself, is a one-line
    FormatError naming its nodes."""
    def parent(nid: int) -> int | None:
        p = nodes[nid].get("ctrl_deps")
        return p if isinstance(p, int) and not isinstance(p, bool) and p in nodes else None

    above: dict[int, bool] = {}
    for start in nodes:
        path: list[int] = []
        on_path: dict[int, int] = {}
        cur: int | None = start
        while cur is not None and cur not in above and cur not in on_path:
            on_path[cur] = len(path)
            path.append(cur)
            cur = parent(cur)
        if cur is not None and cur not in above:  # a cycle: path[on_path[cur]:]
            cycle = path[on_path[cur]:]
            if len(cycle) == 1 and not _is_root(nodes[cycle[0]]):
                c = cycle[0]
                raise FormatError(f"node {c} ({str(nodes[c].get('name', '?'))[:40]!r}) is its "
                                  f"own ctrl_deps parent; only the trace's root scope "
                                  f"({ROOT_PREFIX}...]) may be: a corrupt execution trace")
            if len(cycle) > 1:  # only the root names itself; a longer cycle hides its calls
                names = " -> ".join(f"{c} ({str(nodes[c].get('name', '?'))[:40]!r})"
                                    for c in cycle[:4])
                raise FormatError(f"the ctrl_deps parents of {len(cycle)} nodes form a cycle "
                                  f"({names}{' ...' if len(cycle) > 4 else ''}): a corrupt "
                                  f"execution trace")
            ops = sum(_is_operator(nodes[c]) for c in cycle)
            for c in cycle:
                above[c] = ops - _is_operator(nodes[c]) > 0
            path = path[:on_path[cur]]
        for nid in reversed(path):
            p = parent(nid)
            above[nid] = p is not None and (_is_operator(nodes[p]) or above[p])
    return above


def steps_below(nodes: Mapping[int, Mapping[str, Any]]) -> dict[int, int | None]:
    """Per node id: N of the nearest ``ProfilerStep#N`` scope on its ``ctrl_deps`` chain
    (itself included), else None (:func:`~workbench.io.traces.et_autograd.nearest_scope`: O(nodes)
    in all)."""
    return nearest_scope(nodes, step_number, None)


def read_calls(data: Any, path: Path) -> list[Call]:
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise FormatError(f"{path}: not a PyTorch execution trace (no 'nodes' list)")
    if "schema" in data and not isinstance(data["schema"], str):   # "1.1.1-chakra.0.0.4"
        raise FormatError(f"{path}: the execution trace's 'schema' must be a version string "
                          f"such as \"1.1.1\", got {show(data['schema'], 40)}")
    nodes: dict[int, dict[str, Any]] = {}
    for n in data["nodes"]:
        if isinstance(n, dict) and isinstance(n.get("id"), int):
            if n["id"] in nodes:  # the later node would silently replace the earlier one
                raise FormatError(f"{path}: node id {n['id']} appears twice "
                                  f"({str(nodes[n['id']].get('name'))[:40]!r} and "
                                  f"{str(n.get('name'))[:40]!r}): a corrupt execution trace")
            nodes[n["id"]] = _normalise(n)
    try:
        below_operator = _below_operator(nodes)
    except FormatError as exc:
        raise FormatError(f"{path}: {exc}") from None
    below = phases_below(nodes)
    children = scope_children(nodes)
    steps = steps_below(nodes)
    calls = []
    for nid in sorted(nodes):
        node = nodes[nid]
        if not _is_operator(node) or below_operator[nid]:
            continue
        t_in, t_out, mutated = _io(node)
        values = _args(node, "inputs").get("values")
        call = Call(nid, str(node.get("name")), key_of(_attr(node, "rf_id")), t_in, t_out,
                     values if isinstance(values, list) else [], mutated=mutated)
        call.grad_fn = grad_fn_of(call.name)
        call.phase = phase_of(nid, nodes, call.grad_fn is not None, below)
        call.step = steps.get(nid)
        if call.grad_fn is not None:
            _autograd_scope(call, [nodes[c] for c in inner_calls(nid, nodes, children,
                                                                 _is_operator)])
        call.hidden = _hidden_writes(nid, nodes, children, call.outs)
        calls.append(call)
    if not calls:
        raise FormatError(f"{path}: the execution trace records no operator calls")
    return calls


def _args(node: Mapping[str, Any], side: str) -> dict[str, Any]:
    args = node.get(side)
    return args if isinstance(args, dict) else {}


def _io(node: Mapping[str, Any]) -> tuple[list[Ref], list[Ref], set[TensorKey]]:
    """A call's tensor inputs, its outputs and the inputs it writes in place: those its
    ``op_schema`` marks ``(a!)`` (added to the outputs when it does not return them, as a
    foreach op's lists); without a schema, the outputs that are inputs."""
    ins, outs = _args(node, "inputs"), _args(node, "outputs")
    t_in = list(_tensors(ins.get("values"), ins.get("shapes")))
    t_out = list(_tensors(outs.get("values"), outs.get("shapes")))
    schema = _attr(node, "op_schema")
    if not isinstance(schema, str) or not schema:
        in_keys = {r.key for r in t_in}
        return t_in, t_out, {r.key for r in t_out if r.key in in_keys}
    values, shapes = ins.get("values"), ins.get("shapes")
    values = values if isinstance(values, list) else []
    shapes = shapes if isinstance(shapes, list) and len(shapes) == len(values) else [None] * len(
        values)
    written = {r.key: r for i in _mutated_args(schema) if i < len(values)
               for r in _tensors(values[i], shapes[i])}
    shown = {r.key for r in t_out}
    return t_in, t_out + [r for k, r in written.items() if k not in shown], set(written)


@lru_cache(maxsize=1024)
def _mutated_args(schema: str) -> tuple[int, ...]:
    """Positions of the arguments an operator schema marks as written (``Tensor(a!)``,
    ``Tensor(a!)[]``), counting the keyword-only ones after ``*`` as the trace lists them.

    >>> _mutated_args("aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1)"
    ...               " -> Tensor(a!)")
    (0,)
    >>> _mutated_args("aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, "
    ...               "ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)")
    (4,)
    """
    start = schema.find("(")
    args, depth, part = [], 0, ""
    for ch in schema[start + 1:] if start >= 0 else "":
        if ch in "([":
            depth += 1
        elif ch in ")]":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append(part.strip())
            part = ""
        else:
            part += ch
    args = [a for a in [*args, part.strip()] if a and a != "*"]
    return tuple(i for i, a in enumerate(args) if re.match(r"[\w.]+\(\w+!\)", a))


def _hidden_writes(nid: int, nodes: Mapping[int, Mapping[str, Any]],
                   children: Mapping[int, list[int]], shown: list[Ref]) -> list[tuple[Ref, bool]]:
    """What the calls nested in call ``nid`` wrote that its outputs ``shown`` leave out
    (batch norm's saved statistics and running stats, temporaries), in node order, each with
    whether the nested call wrote it in place: the storages they overwrite must not be linked
    to their earlier writers."""
    keys = {r.key for r in shown}
    found: list[tuple[int, Ref, bool]] = []
    stack, seen = list(children.get(nid, [])), {nid}
    while stack:
        c = stack.pop()
        if c in seen:
            continue
        seen.add(c)
        stack.extend(children.get(c, []))
        _, outs, mutated = _io(nodes[c])
        found.extend((c, r, r.key in mutated) for r in outs if r.key not in keys)
    return [(r, m) for _, r, m in sorted(found, key=lambda f: f[0])]


def _autograd_scope(call: Call, inner: list[Mapping[str, Any]]) -> None:
    """An autograd function's scope as one call (:mod:`workbench.io.traces.et_autograd`): its inner
    calls as ``parts``; inputs: what they read that no earlier one wrote; outputs: what they
    wrote (the last value per tensor)."""
    written: dict[TensorKey, Ref] = {}
    read: dict[TensorKey, Ref] = {}
    call.mutated = set()
    for node in inner:
        t_in, t_out, mutated = _io(node)
        values = _args(node, "inputs").get("values")
        call.parts.append((str(node.get("name", "")).split("::", 1)[-1], t_in, t_out,
                           values if isinstance(values, list) else []))
        for t in t_in:
            if t.key not in written:
                read.setdefault(t.key, t)
        for t in t_out:
            written[t.key] = t
        call.mutated |= mutated
    call.ins, call.outs = list(read.values()), list(written.values())


__all__ = ["key_of", "read_calls", "steps_below"]
