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

A model's arguments: :class:`Call` holds positional and keyword arguments as the model takes
them, and :meth:`TorchProgram.graph_inputs` matches a call to the traced example by the model's
``forward`` signature (keywords may come positionally and the other way round); a call that
gives an optional argument the example left out, or leaves out one it gave, is an
:class:`ArgumentsDiffer` (the program was traced without that branch).  What the program
returns is the model's own nesting: fx's immutable containers become ``dict`` / ``list``, and
outputs the tracer could not carry (dataclasses) are rebuilt (:attr:`TorchProgram.rebuild`).

torch is imported inside functions only.
"""

from __future__ import annotations

import copy
import inspect
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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


class ArgumentsDiffer(OptionError):
    """A call's arguments are not laid out as the traced example's: another set of arguments
    given (an optional one added or left out), another structure, or arguments the model's
    ``forward`` does not take.  One line, naming what differs."""


@dataclass(frozen=True)
class Call:
    """A model's arguments as it takes them: ``model(*args, **kwargs)``.

    >>> Call((1,), {"mask": None})
    Call(args=(1,), kwargs={'mask': None})
    """

    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def of(value: Any, kwargs: Mapping[str, Any] | None = None) -> Call:
        """``value`` as a Call: a Call itself, a tuple or list of positional arguments, or one
        positional argument; ``kwargs`` added."""
        if isinstance(value, Call):
            return Call(value.args, {**value.kwargs, **dict(kwargs or {})})
        args = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        return Call(args, dict(kwargs or {}))


def same_device(a: Any, b: Any) -> bool:
    """Whether two torch devices are one: same type and index, a missing CUDA index being the
    current device's (``torch.device("cuda")`` is ``"cuda:0"`` when device 0 is current).

    >>> import torch
    >>> same_device(torch.device("cpu"), "cpu"), same_device("cuda:1", "cuda:0")
    (True, False)
    """
    torch = _torch()
    a, b = torch.device(a), torch.device(b)
    if a.type != b.type:
        return False
    if a.index == b.index:
        return True
    return _index(torch, a) == _index(torch, b)


def _index(torch: Any, device: Any) -> int:
    if device.index is not None:
        return int(device.index)
    if device.type == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.current_device())
    return 0


def plain_containers(value: Any) -> Any:
    """``value`` with fx's immutable containers (``immutable_dict``, ``immutable_list``, which
    ``map_arg`` makes of a traced ``return {...}``) turned into ``dict`` and ``list``, as the
    model's own ``forward`` returns them.  O(leaves)."""
    from torch.fx.immutable_collections import immutable_dict, immutable_list

    if type(value) in (immutable_dict, dict):
        return {k: plain_containers(v) for k, v in value.items()}
    if type(value) in (immutable_list, list):
        return [plain_containers(v) for v in value]
    if type(value) is tuple:
        return tuple(plain_containers(v) for v in value)
    return value


def target_label(node: Any) -> str:
    """The name of an fx call node's target as the importer's tables know it: a method or
    module path as it is, ``aten.conv2d.default`` -> ``conv2d``, ``operator.getitem`` ->
    ``getitem``, else the function's ``__name__``."""
    target = node.target
    if isinstance(target, str):
        return target
    text = str(target)
    if text.startswith("aten."):  # torch.export: aten.conv2d.default -> conv2d
        return text.split(".")[1]
    if target in (operator.getitem,):
        return "getitem"
    return getattr(target, "__name__", text)


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
    ``example``: the arguments it was traced with (the default inputs of a run: a tuple of
    positional arguments, or a :class:`Call` with keywords); ``model``: the user's module (the
    oracle a verified run is compared with, and whose ``forward`` signature matches calls to
    the example; ``None``: the traced module is, and calls are positional);
    ``tensors``: graph tensor id -> the fx node whose value it is.  Holds the ``GraphModule``,
    whose parameters are the user's module's own (``torch.export`` shares them, it does not
    copy).  Which fx nodes are ops is the graph's to say (its op ids are node names).
    ``rebuild``: turns what the traced module returns into what the model returns, where the
    tracer carried the model's outputs in other containers (dataclasses as dicts; ``None``:
    nothing to rebuild).
    """

    source = "torch"

    def __init__(self, gm: Any, *, placeholders: Sequence[str], outputs: Sequence[TensorId],
                 tracer: str, name: str, example: Any = (),
                 model: Any = None, tensors: Mapping[TensorId, str] | None = None) -> None:
        super().__init__(placeholders, outputs)
        #: graph tensor id -> the fx node whose value it is (ops: ``<node>:out``)
        self.tensor_nodes = dict(tensors or {})
        self.gm = gm
        self.tracer = tracer
        self.name = name
        self.example = example
        self.model = model
        self.rebuild: Callable[[Any], Any] | None = None
        self.nodes = {n.name: n for n in gm.graph.nodes}
        self.output_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
        self._modules: dict[tuple[str, str], Any] = {}
        self._layout: _Layout | None = None

    def describe(self) -> str:
        return f"the model's own ({self.name}, traced by {self.tracer})"

    def graph_inputs(self, args: Any, kwargs: Mapping[str, Any] | None = None
                     ) -> dict[TensorId, Any]:
        """The placeholder values for a call of the module: ``args`` a tensor, a tuple of the
        positional arguments (nested containers flattened as the traced ``forward`` flattens
        them) or a :class:`Call`, with ``kwargs``; or a mapping by placeholder name.  Arguments
        are matched to the example's by the model's signature; a call laid out otherwise is a
        one-line :class:`ArgumentsDiffer`.  O(arguments)."""
        if isinstance(args, Mapping) and not kwargs:
            return super().graph_inputs(args)
        call = Call.of(args, kwargs)
        flat = self._flatten(call)
        if len(flat) != len(self.input_names):
            raise ArgumentsDiffer(f"inputs: {self.name} was traced with "
                                  f"{len(self.input_names)} input value(s) "
                                  f"({', '.join(self.input_names)}), got {len(flat)}")
        return dict(zip(self.input_names, flat, strict=True))

    def _flatten(self, call: Call) -> list[Any]:
        """The call's values in placeholder order (see :meth:`graph_inputs`)."""
        from torch.utils._pytree import tree_flatten

        layout = self.layout()
        args, kwargs = layout.arrange(call, self)
        in_spec = getattr(getattr(self.gm.graph._codegen, "pytree_info", None), "in_spec", None)
        if in_spec is not None and _args_kwargs_spec(in_spec):
            order = [k for k in in_spec.child(1).context if k in kwargs]
            leaves, spec = tree_flatten((tuple(args), {k: kwargs[k] for k in order}))
            if spec != in_spec:
                if len(leaves) != len(self.input_names):
                    return leaves  # the count says it in graph_inputs' words
                raise ArgumentsDiffer(f"inputs: the call's arguments are nested otherwise than "
                                      f"the example {self.name} was traced with")
            return leaves
        if kwargs:
            raise ArgumentsDiffer(f"inputs: {self.name} takes positional inputs only, got "
                                  f"keyword(s) {', '.join(kwargs)}")
        return list(self.gm.graph._codegen.process_inputs(*args))

    def layout(self) -> _Layout:
        """How the example's arguments were given (see :class:`_Layout`)."""
        if self._layout is None:
            self._layout = _Layout.of(self.model, Call.of(self.example),
                                      every_parameter=self.tracer == "torch.fx")
        return self._layout

    def written_inputs(self) -> tuple[int, ...]:
        """Positions (in :attr:`input_names`) of the inputs whose storage a call writes in
        place (``x.add_(1)``, ``x[0] = ...``, a write through a view of ``x``), from
        :func:`effects`; views are the importer's view kinds.  O(nodes)."""
        from workbench.io.torch.costs import FUNCTIONS, MODULES

        root: dict[str, str] = {}
        written: set[str] = set()
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                root[node.name] = node.name
            if node.op not in ("call_function", "call_method", "call_module"):
                continue
            sub = self.gm.get_submodule(node.target) if node.op == "call_module" else None
            label = type(sub).__name__ if sub is not None else target_label(node)
            table = MODULES if sub is not None else FUNCTIONS
            entry = table.get(label) or table.get(label.rstrip("_"))
            alias, writes = effects(node, module=sub, view=bool(entry and entry[1] == "view"))
            root[node.name] = root.get(alias.name, alias.name) if alias is not None else \
                node.name
            written.update(root.get(w.name, w.name) for w in writes)
        return tuple(i for i, name in enumerate(self.input_names) if name in written)

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
        out = plain_containers(self.gm.graph._codegen.process_outputs(flat))
        return out if self.rebuild is None else self.rebuild(out)


def _lives_on(module: Any, device: Any, dtype: Any) -> bool:
    """Whether every parameter and buffer of ``module`` is on ``device`` (:func:`same_device`:
    ``cuda`` is ``cuda:0``) and, given a ``dtype``, every floating one of that dtype."""
    return all(same_device(t.device, device) and (dtype is None or not t.is_floating_point()
                                                  or t.dtype == dtype)
               for t in (*module.parameters(), *module.buffers()))


def _args_kwargs_spec(spec: Any) -> bool:
    """Whether a pytree spec is torch.export's ``(args, kwargs)`` pair."""
    return (spec is not None and spec.type is tuple and spec.num_children == 2
            and spec.child(0).type is tuple and spec.child(1).type is dict)


@dataclass(frozen=True)
class _Layout:
    """How the example's arguments were given, to lay a later call out the same way.

    ``signature``: the model's ``forward`` signature (``None``: unknown, or it takes
    ``*args`` / ``**kwargs``: calls must then be laid out as the example, positions and keyword
    names); ``positional``: the names the example gave by position; ``keywords``: those it gave
    by keyword; ``given``: every argument it gave (an argument left at a ``None`` default
    counts as not given); ``every_parameter``: the trace has a placeholder for every parameter
    of ``forward`` (``torch.fx.symbolic_trace``), so calls fill in the defaults."""

    signature: inspect.Signature | None
    positional: tuple[str, ...]
    keywords: tuple[str, ...]
    given: frozenset[str]
    n_args: int
    every_parameter: bool = False

    @staticmethod
    def of(model: Any, example: Call, *, every_parameter: bool = False) -> _Layout:
        sig = _signature_of(model)
        try:
            bound = sig.bind(*example.args, **example.kwargs) if sig is not None else None
        except TypeError:
            bound = None
        if sig is None or bound is None:
            return _Layout(None, (), tuple(example.kwargs), frozenset(), len(example.args))
        names = list(sig.parameters)
        return _Layout(sig, tuple(names[:len(example.args)]), tuple(example.kwargs),
                       _given(sig, bound.arguments), len(example.args), every_parameter)

    def arrange(self, call: Call, program: TorchProgram) -> tuple[list[Any], dict[str, Any]]:
        """``call`` laid out as the example (positional values, keyword values in the
        example's order), or :class:`ArgumentsDiffer`."""
        if self.signature is None:
            if len(call.args) != self.n_args or set(call.kwargs) != set(self.keywords):
                raise _differ(program, call, f"{self.n_args} positional argument(s)"
                                             f"{_named(self.keywords)} expected")
            return list(call.args), {k: call.kwargs[k] for k in self.keywords}
        try:
            bound = self.signature.bind(*call.args, **call.kwargs)
        except TypeError as exc:
            raise _differ(program, call, str(exc)) from None
        given = _given(self.signature, bound.arguments)
        if given != self.given:
            added, missing = sorted(given - self.given), sorted(self.given - given)
            raise _differ(program, call, "; ".join(
                [f"{', '.join(added)} given, which the example left out"] * bool(added)
                + [f"{', '.join(missing)} left out, which the example gave"] * bool(missing)))
        params = self.signature.parameters

        def value(name: str) -> Any:
            return bound.arguments[name] if name in bound.arguments else params[name].default

        if self.every_parameter:
            return [value(n) for n in params], {}
        return [value(n) for n in self.positional], {k: value(k) for k in self.keywords}


def _signature_of(model: Any) -> inspect.Signature | None:
    """``model.forward``'s signature, or ``None`` when it has none to bind by (no model, or
    ``*args`` / ``**kwargs`` in it)."""
    forward = getattr(model, "forward", None)
    if forward is None:
        return None
    try:
        sig = inspect.signature(forward)
    except (TypeError, ValueError):
        return None
    kinds = {p.kind for p in sig.parameters.values()}
    if kinds & {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}:
        return None
    return sig


def _given(sig: inspect.Signature, arguments: Mapping[str, Any]) -> frozenset[str]:
    """The arguments a call gave: bound, and not ``None`` where the default is ``None``."""
    return frozenset(k for k, v in arguments.items()
                     if not (v is None and sig.parameters[k].default is None))


def _differ(program: TorchProgram, call: Call, why: str) -> ArgumentsDiffer:
    from torch.utils._pytree import tree_leaves

    n = len(tree_leaves((call.args, call.kwargs)))
    return ArgumentsDiffer(f"inputs: {program.name} was traced with {len(program.input_names)} "
                           f"input value(s) ({', '.join(program.input_names)}), got {n}: {why}")


def _named(keywords: tuple[str, ...]) -> str:
    return f" and keyword(s) {', '.join(keywords)}" if keywords else ""


def _torch() -> Any:
    import torch

    return torch


__all__ = ["INPLACE_OPERATORS", "ArgumentsDiffer", "Call", "TorchProgram", "effects",
           "plain_containers", "same_device", "target_label"]
