"""The calls of a traced program compiled once into closures over a run's values.

:meth:`workbench.io.torch.program.TorchProgram.call` runs an fx node by walking its arguments
with ``map_arg`` and a lookup function on every call.  :func:`compile_call` does that walk once:
it returns ``thunk(env)`` that gathers the arguments straight from ``env`` (fx node name ->
value) with ``operator.itemgetter`` where they are plain nodes, and rebuilds only the containers
that hold nodes (as ``map_arg`` does: lists as fx's ``immutable_list``, dicts as
``immutable_dict``, tuples and slices as themselves), then calls the target: the same call, with
the same values, as ``TorchProgram.call`` makes.  The submodule of a ``call_module`` node is
looked up once; a ``get_attr`` node's value is fetched on every call (a parameter replaced
between runs is seen).  A ``device=`` keyword the trace recorded is the run's device, as in
``TorchProgram.call``.

The executor's replay of a recorded run (:class:`workbench.executors.torch_exec.calls.
CallEvaluator`) calls these thunks; every name a thunk reads is in ``env`` by then.
Complexity: O(arguments) once per node; one Python closure call per node call afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter, itemgetter
from typing import Any

Env = dict[str, Any]
Thunk = Callable[[Env], Any]
#: ``None`` (the value holds no fx node: pass it as it is) or what builds it from ``env``
Getter = Callable[[Env], Any] | None


def _node_class() -> Any:
    from torch.fx import Node

    return Node


def _getter(value: Any, node_class: Any) -> Getter:
    """What rebuilds ``value`` (an fx argument) from ``env``, or ``None`` when it holds no node."""
    if isinstance(value, node_class):
        return itemgetter(value.name)
    if isinstance(value, dict):
        keys = tuple(value)
        parts = tuple(value.values())
    elif isinstance(value, slice):
        parts = (value.start, value.stop, value.step)
    elif isinstance(value, (list, tuple)):
        parts = tuple(value)
    else:
        return None
    found = _items(parts, node_class)
    if found is None:
        return None
    items: Callable[[Env], Any] = found
    from torch.fx.immutable_collections import immutable_dict, immutable_list

    if isinstance(value, dict):
        return lambda env: immutable_dict(zip(keys, items(env)))
    if isinstance(value, slice):
        return lambda env: slice(*items(env))
    if isinstance(value, list):
        return lambda env: immutable_list(items(env))
    if hasattr(value, "_fields"):  # a named tuple: rebuilt by position
        make = type(value)
        return lambda env: make(*items(env))
    return lambda env: tuple(items(env))


def _items(values: Any, node_class: Any) -> Callable[[Env], Any] | None:
    """What gathers the elements of the sequence ``values`` from ``env`` as a sequence, or
    ``None`` when none holds a node.  Plain nodes only: one ``itemgetter``; else a copy of the
    constants with the nodes' values put in their places."""
    getters = [_getter(v, node_class) for v in values]
    if all(g is None for g in getters):
        return None
    if all(isinstance(v, node_class) for v in values):
        names = [v.name for v in values]
        if len(names) == 1:
            name = names[0]
            return lambda env: (env[name],)
        return itemgetter(*names)
    template = list(values)
    slots = tuple((i, g) for i, g in enumerate(getters) if g is not None)

    def gather(env: Env) -> list[Any]:
        out = template.copy()
        for i, g in slots:
            out[i] = g(env)
        return out

    return gather


def _kwargs(node: Any, device: Any, node_class: Any) -> tuple[dict[str, Any], Getter]:
    """The node's keyword arguments: ``(constant dict, None)`` when they hold no node, else
    ``({}, getter)``; a recorded ``device=`` becomes ``device`` when that is given."""
    kwargs = dict(node.kwargs)
    getter = _getter(kwargs, node_class) if kwargs else None
    if device is None or "device" not in kwargs:
        return (kwargs, None) if getter is None else ({}, getter)
    if getter is None:
        if kwargs["device"] is not None:
            kwargs["device"] = device
        return kwargs, None
    inner = getter

    def with_device(env: Env) -> dict[str, Any]:
        built = dict(inner(env))
        if built.get("device") is not None:
            built["device"] = device
        return built

    return {}, with_device


def compile_call(node: Any, module: Any, device: Any = None) -> Thunk:
    """``thunk(env)`` computing fx node ``node`` (``call_function``, ``call_method``,
    ``call_module`` or ``get_attr``) of ``module`` as :meth:`TorchProgram.call` does, its
    arguments read from ``env``.  O(arguments)."""
    node_class = _node_class()
    if node.op == "get_attr":
        fetch = attrgetter(str(node.target))
        return lambda env: fetch(module)
    args = tuple(node.args)
    gather = _items(args, node_class)
    kwargs, kw_getter = _kwargs(node, device, node_class)
    if node.op == "call_method":
        method = node.target
        if gather is None:
            head, rest = args[0], args[1:]
            gather = lambda env: (head, *rest)  # a constant receiver (rare)
        if kw_getter is not None:
            get_kw = kw_getter
            return lambda env: _method(gather(env), method, get_kw(env))
        return lambda env: _method(gather(env), method, kwargs)
    if node.op == "call_module":
        target: Any = module.get_submodule(node.target)
    elif node.op == "call_function":
        target = node.target
    else:
        raise ValueError(f"fx node {node.name!r} ({node.op}) is not a call")
    return _call_form(target, args, gather, kwargs, kw_getter)


def _method(values: Any, method: str, kwargs: dict[str, Any]) -> Any:
    head, *rest = values
    return getattr(head, method)(*rest, **kwargs)


def _call_form(target: Any, args: tuple[Any, ...], gather: Any, kwargs: dict[str, Any],
               kw_getter: Getter) -> Thunk:
    """The closure for ``target(*args, **kwargs)``, specialised to what holds nodes: plain
    nodes first and constants after (``aten.slice(x, 0, 0, 8)``, ``aten.add(x, y)``), the
    common case, read their values with no gathering call."""
    if kw_getter is not None:
        get_kw = kw_getter
        if gather is None:
            return lambda env: target(*args, **get_kw(env))
        return lambda env: target(*gather(env), **get_kw(env))
    lead = _leading_nodes(args)
    if lead is not None and not kwargs:
        return _leading_form(target, lead, args[len(lead):])
    if kwargs:
        if gather is None:
            return lambda env: target(*args, **kwargs)
        return lambda env: target(*gather(env), **kwargs)
    if gather is None:
        return lambda env: target(*args)
    return lambda env: target(*gather(env))


def _leading_nodes(args: tuple[Any, ...]) -> list[str] | None:
    """The names of ``args``' one or two leading plain nodes when no later argument holds a
    node, else ``None``."""
    node_class = _node_class()
    lead = []
    for a in args:
        if not isinstance(a, node_class):
            break
        lead.append(a.name)
    if not lead or len(lead) > 2:
        return None
    if any(_getter(a, node_class) is not None for a in args[len(lead):]):
        return None
    return lead


def _leading_form(target: Any, lead: list[str], rest: tuple[Any, ...]) -> Thunk:
    if len(lead) == 1:
        a = lead[0]
        if rest:
            return lambda env: target(env[a], *rest)
        return lambda env: target(env[a])
    a, b = lead
    if rest:
        return lambda env: target(env[a], env[b], *rest)
    return lambda env: target(env[a], env[b])


__all__ = ["Env", "Thunk", "compile_call"]
