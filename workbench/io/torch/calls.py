"""How a traced PyTorch model is called and what it returns, for
:func:`workbench.io.torch.fx.from_torch`: the parameters of ``forward`` an example leaves out
(:func:`left_out`, :func:`every_argument`), outputs torch.export cannot carry (dataclasses:
:func:`plain_outputs`, rebuilt after), and which argument a call's value shares its storage with
(:func:`shared_storage`, from the traced fake tensors).  torch is imported inside the functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.io.torch.program import _signature_of


def left_out(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
              ) -> dict[str, Any] | None:
    """fx's ``concrete_args``: the parameters of ``forward`` the example does not give, at
    their defaults (a traced ``if mask is not None`` then takes the example's branch, and a
    call that gives ``mask`` is told apart: :class:`~workbench.io.torch.program.TorchProgram`
    matches calls to the example)."""
    sig = _signature_of(module)
    if sig is None:
        return None
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None
    left = {n: p.default for n, p in sig.parameters.items()
            if n not in bound.arguments and p.default is not p.empty}
    return left or None


def every_argument(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> tuple[Any, ...]:
    """Every parameter of ``forward`` in order (defaults for those not given): what an
    fx-traced module's placeholders take."""
    sig = _signature_of(module)
    try:
        bound = sig.bind(*args, **kwargs) if sig is not None else None
    except TypeError:
        bound = None
    if sig is None or bound is None:
        return args
    return tuple(bound.arguments.get(n, p.default) for n, p in sig.parameters.items())


def plain_outputs(model: Any) -> Any:
    """A module whose ``forward`` is ``model``'s with every dataclass in its output turned into
    a dict of its fields (torch.export carries those); its ``rebuild`` turns such an output
    back into the model's (the types are recorded while the wrapper is traced, in a list of the
    closure: export restores the module's own attributes after tracing)."""
    import torch

    shape: list[Any] = [None]

    class PlainOutputs(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: Any, **kwargs: Any) -> Any:
            out, shape[0] = flat_dataclasses(self.model(*args, **kwargs))
            return out

        @staticmethod
        def rebuild(out: Any) -> Any:
            return rebuild_dataclasses(out, shape[0])

    return PlainOutputs(model)


def flat_dataclasses(value: Any) -> tuple[Any, Any]:
    """(``value`` with dataclasses as dicts, the shape that says where they were)."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in dataclasses.fields(value)]
        parts = [flat_dataclasses(getattr(value, n)) for n in names]
        return {n: p[0] for n, p in zip(names, parts, strict=True)}, (
            type(value), {n: p[1] for n, p in zip(names, parts, strict=True)})
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        items = [flat_dataclasses(v) for v in value]
        return type(value)(p[0] for p in items), (type(value), [p[1] for p in items])
    if type(value) is dict:
        keyed = {k: flat_dataclasses(v) for k, v in value.items()}
        return {k: p[0] for k, p in keyed.items()}, (dict, {k: p[1] for k, p in keyed.items()})
    return value, None


def rebuild_dataclasses(value: Any, shape: Any) -> Any:
    if shape is None:
        return value
    kind, inner = shape
    if kind in (tuple, list):
        return kind(rebuild_dataclasses(v, s) for v, s in zip(value, inner, strict=True))
    if kind is dict:
        return {k: rebuild_dataclasses(value[k], s) for k, s in inner.items()}
    return kind(**{k: rebuild_dataclasses(value[k], s) for k, s in inner.items()})


def storages(value: Any) -> set[Any] | None:
    """The storages (weak references, comparable by identity) of the fake tensors in a node's
    ``val`` (``torch.export`` records them), or ``None`` when there are none to compare."""
    leaves = tensors_in(value)
    if not leaves or not all(hasattr(t, "untyped_storage") for t in leaves):
        return None
    from torch.multiprocessing.reductions import StorageWeakRef

    try:
        return {StorageWeakRef(t.untyped_storage()) for t in leaves}
    except (RuntimeError, NotImplementedError):  # a tensor subclass without storage
        return None


def shared_storage(node: Any, arg_nodes: Sequence[Any], alias: Any) -> Any:
    """The argument node whose storage ``node``'s value shares.  From the traced values where
    they are fake tensors (exact, also for the calls that alias only sometimes: ``reshape`` of
    a contiguous tensor is a view, of a transposed one a copy; ``x.to(dtype)`` is ``x`` when the
    dtype is already ``dtype``); else the call's alias annotation or torch's conventions
    (:func:`~workbench.io.torch.program.effects`).  O(arguments)."""
    mine = storages(node.meta.get("val"))
    if mine is None:
        return alias
    for n in arg_nodes:
        theirs = storages(n.meta.get("val"))
        if theirs is not None and mine & theirs:
            return n
    return None


def tensors_in(value: Any) -> list[Any]:
    """Tensor-like values (anything with ``shape`` and ``dtype``) inside nested containers."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(v)]
    return []


def data_dependent_size(metas: Sequence[Any]) -> str | None:
    """The first size among ``metas``' shapes that torch cannot know before the values are
    (an unbacked symbol such as ``u0``: ``x[x > 0]``, ``nonzero``), as text; ``None``."""
    try:
        from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
    except ImportError:  # pragma: no cover - an old torch: no unbacked symbols to find
        return None
    for meta in metas:
        found = free_unbacked_symbols(tuple(getattr(meta, "shape", ())))
        if found:
            return ", ".join(sorted(str(s) for s in found))
    return None


def nodes_in(args: Any) -> list[Any]:
    """fx Nodes inside nested args/kwargs, in order."""
    from torch.fx import Node

    found: list[Any] = []

    def visit(value: Any) -> None:
        if isinstance(value, Node):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            for v in value:
                visit(v)
        elif isinstance(value, dict):
            for v in value.values():
                visit(v)

    visit(args)
    return found


__all__ = ["data_dependent_size", "every_argument", "flat_dataclasses", "left_out", "nodes_in",
           "plain_outputs", "rebuild_dataclasses", "shared_storage", "storages", "tensors_in"]
