"""The program of a graph imported from a PyTorch module: the traced calls, runnable op by op.

:func:`workbench.io.from_torch` traces a module into an fx ``GraphModule`` (``torch.export``, else
``torch.fx.symbolic_trace``) and keeps it as ``graph.program``, a :class:`TorchProgram`.  Each op
of the graph is one fx node (the op id is the node's name); :meth:`TorchProgram.call` runs that
node exactly as the traced module's ``forward`` would (``aten.conv2d(x, weight, bias, ...)`` with
the module's own parameters), so the torch executor computes the model's outputs under any
schedule.  fx nodes that are not ops (Python values such as ``x.size(0)``, guards, views a pass
dropped) are computed on demand, when an op needs them.

:func:`effects` reads what a call does to storage: which argument its output aliases (views,
in-place calls) and which it writes in place, from the aten schema's alias annotations
(``relu_(Tensor(a!) self) -> Tensor(a!)``), else from torch's naming conventions (``x.add_``,
``operator.iadd``, ``inplace=True``).  The importer turns them into ordering edges.

torch is imported inside functions only.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench.errors import OptionError
from workbench.values.program import ModelProgram, TensorId

#: ``operator`` functions that update their first operand in place when it is a tensor.
INPLACE_OPERATORS = frozenset({
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor, operator.ilshift,
    operator.irshift, operator.imatmul})


def effects(node: Any, *, module: Any = None, view: bool = False) -> tuple[Any, tuple[Any, ...]]:
    """``(aliased, written)`` for one fx call node: the argument node whose storage the output
    shares (``None``: fresh storage) and the argument nodes whose storage the call writes in
    place.  aten overloads answer from their schema's alias annotations; other calls from
    torch's conventions (a method named ``*_``, an in-place ``operator`` function, a module or
    call with ``inplace=True``); ``view``: the importer's kind is a view (``getitem``,
    ``dropout`` at inference, which returns its input).  O(arguments)."""
    from torch.fx import Node

    args, kwargs = list(node.args), dict(node.kwargs)
    first = args[0] if args and isinstance(args[0], Node) else None
    schema = getattr(node.target, "_schema", None)
    if schema is not None and node.op == "call_function":
        def arg(i: int, name: str) -> Any:
            return args[i] if i < len(args) else kwargs.get(name)

        annotated = [(arg(i, a.name), a.alias_info) for i, a in enumerate(schema.arguments)
                     if a.alias_info is not None]
        written = tuple(v for v, info in annotated if info.is_write and isinstance(v, Node))
        aliased = next((v for v, _ in annotated if isinstance(v, Node)), None)
        return (aliased if aliased is not None else (first if view else None)), written
    target = node.target
    inplace = (
        (node.op == "call_method" and isinstance(target, str) and target.endswith("_")
         and not target.endswith("__"))
        or (node.op == "call_function" and target in INPLACE_OPERATORS)
        or kwargs.get("inplace") is True
        or (module is not None and getattr(module, "inplace", False) is True))
    if inplace and first is not None:
        return first, (first,)
    return (first if view else None), ()


def _fetch(module: Any, target: str) -> Any:
    """The attribute ``a.b.c`` of ``module`` (a parameter, buffer or constant)."""
    value = module
    for part in target.split("."):
        value = getattr(value, part)
    return value


class TorchProgram(ModelProgram):
    """A traced PyTorch module as a graph's program (see the module docstring).

    ``placeholders``: the fx placeholder names, which are the graph's input tensor ids, in the
    order of the module's flattened arguments; ``outputs``: the graph output tensors;
    ``example``: the arguments it was traced with (the default inputs of a run); ``model``: the
    user's module (the oracle a verified run is compared with; ``None``: the traced module is);
    ``tensors``: graph tensor id -> the fx node whose value it is.  Holds the ``GraphModule``,
    whose parameters are the user's module's own (``torch.export`` shares them, it does not
    copy).  Which fx nodes are ops is the graph's to say (its op ids are node names).
    """

    source = "torch"

    def __init__(self, gm: Any, *, placeholders: Sequence[str], outputs: Sequence[TensorId],
                 tracer: str, name: str, example: tuple[Any, ...] = (),
                 model: Any = None, tensors: Mapping[TensorId, str] | None = None) -> None:
        super().__init__(placeholders, outputs)
        #: graph tensor id -> the fx node whose value it is (ops: ``<node>:out``)
        self.tensor_nodes = dict(tensors or {})
        self.gm = gm
        self.tracer = tracer
        self.name = name
        self.example = example
        self.model = model
        self.nodes = {n.name: n for n in gm.graph.nodes}
        self.output_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
        self._modules: dict[tuple[str, str], Any] = {}

    def describe(self) -> str:
        return f"the model's own ({self.name}, traced by {self.tracer})"

    def graph_inputs(self, args: Any) -> dict[TensorId, Any]:
        """The placeholder values for the module's arguments: a tensor, a tuple of the
        positional arguments (nested containers flattened as the traced ``forward`` flattens
        them), or a mapping by placeholder name."""
        if isinstance(args, Mapping):
            return super().graph_inputs(args)
        call = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        flat = list(self.gm.graph._codegen.process_inputs(*call))
        if len(flat) != len(self.input_names):
            raise OptionError(f"inputs: {self.name} was traced with {len(self.input_names)} "
                              f"input value(s) ({', '.join(self.input_names)}), got "
                              f"{len(flat)}")
        return dict(zip(self.input_names, flat, strict=True))

    def parameters(self) -> Mapping[TensorId, Any]:
        return {str(n.target): _fetch(self.gm, str(n.target)) for n in self.nodes.values()
                if n.op == "get_attr"}

    def module_on(self, device: Any, dtype: Any = None) -> Any:
        """The traced module with its parameters on ``device`` (cast to ``dtype`` when given):
        the module itself when they are there already, else one cached copy (the user's
        module is never moved)."""
        dev = _torch().device(device)
        if _lives_on(self.gm, dev, dtype):
            return self.gm
        key = (str(dev), str(dtype))
        if key not in self._modules:
            moved = copy.deepcopy(self.gm).to(dev)
            self._modules[key] = moved.to(dtype) if dtype is not None else moved
        return self._modules[key]

    def reference_module(self, device: Any, dtype: Any = None) -> Any:
        """The module a run is checked against: the user's own when its parameters are on
        ``device`` (in ``dtype``), else the traced module there (:meth:`module_on`)."""
        if self.model is not None and _lives_on(self.model, _torch().device(device), dtype):
            return self.model
        return self.module_on(device, dtype)

    def call(self, module: Any, name: str, lookup: Callable[[str], Any],
             device: Any = None) -> Any:
        """Run fx node ``name`` of ``module`` (the traced module or a copy of it) with its
        arguments' values from ``lookup`` (node name -> value), as the traced ``forward`` does.
        ``device``: where the run keeps its tensors; a call that creates a tensor on the device
        it was traced on (``aten.arange(..., device=cpu)``, ``zeros``, ``full``) creates it
        there instead."""
        from torch.fx.node import map_arg

        node = self.nodes[name]
        args = map_arg(node.args, lambda n: lookup(n.name))
        kwargs = map_arg(node.kwargs, lambda n: lookup(n.name))
        if device is not None and kwargs.get("device") is not None:
            kwargs = {**kwargs, "device": device}
        if node.op == "call_function":
            return node.target(*args, **kwargs)
        if node.op == "call_method":
            head, *rest = args
            return getattr(head, node.target)(*rest, **kwargs)
        if node.op == "call_module":
            return module.get_submodule(node.target)(*args, **kwargs)
        if node.op == "get_attr":
            return _fetch(module, str(node.target))
        raise OptionError(f"{self.name}: fx node {name!r} ({node.op}) is not a call")

    def args_of(self, name: str) -> list[str]:
        """The fx nodes node ``name`` reads, in order (each once)."""
        from torch.fx.node import map_arg

        found: dict[str, None] = {}
        node = self.nodes[name]
        map_arg((node.args, node.kwargs), lambda n: found.setdefault(n.name))
        return list(found)

    def result_of(self, lookup: Callable[[str], Any]) -> Any:
        """What the module returns (its own nesting), from node values."""
        from torch.fx.node import map_arg

        flat = map_arg(self.output_node.args[0], lambda n: lookup(n.name))
        return self.gm.graph._codegen.process_outputs(flat)


def _lives_on(module: Any, device: Any, dtype: Any) -> bool:
    """Whether every parameter and buffer of ``module`` is on ``device`` (and, given a
    ``dtype``, every floating one of that dtype)."""
    return all(t.device == device and (dtype is None or not t.is_floating_point()
                                       or t.dtype == dtype)
               for t in (*module.parameters(), *module.buffers()))


def _torch() -> Any:
    import torch

    return torch


__all__ = ["INPLACE_OPERATORS", "TorchProgram", "effects"]
