"""torch.fx import: a PyTorch ``nn.Module`` traced into a :class:`~workbench.values.graph.Graph`.

:func:`from_torch` traces the module with ``torch.fx.symbolic_trace`` (``torch.export`` when that
fails, e.g. on Python control flow) and propagates shapes with
``torch.fx.passes.shape_prop.ShapeProp`` on fake tensors (nothing is computed and batch-norm
statistics are left alone).  ``call_module``/``call_function``/``call_method`` nodes that produce
tensors become ops (id = the fx node name); nodes producing only Python values (``x.size(0)``) are
host work and are left out.  Placeholders are graph inputs; ``get_attr`` nodes and the parameters
and buffers of called modules are parameters (``"<module path>.<name>"``).  Each call's kind and
cost come from :mod:`workbench.io.torch.costs` (the model builders' conventions), its attributes
from :mod:`workbench.io.torch.attrs`.  ``torch`` is
imported inside the function.
"""

from __future__ import annotations

import operator
import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any

from workbench.errors import FormatError, GraphError, OptionError
from workbench.io.torch.attrs import call_attrs, module_attrs
from workbench.io.torch.calls import (
    data_dependent_size,
    every_argument,
    left_out,
    nodes_in,
    plain_outputs,
    shared_storage,
    tensors_in,
)
from workbench.io.torch.costs import FUNCTIONS, MODULES, cost_of_call, cost_rule, shapes_of
from workbench.io.torch.program import TorchProgram, effects, target_label
from workbench.ops.costs import (
    Info,
    TensorInfo,
    default_cost,
)
from workbench.ops.generic import GENERIC
from workbench.values.graph import Graph, Op, OpId, Tensor, TensorId
from workbench.values.storage import STORAGE_ATTR

TORCH_MISSING = "importing a torch module needs torch: pip install 'schedule-workbench[torch]'"

# ================================================================================ tracing
def _trace(torch: Any, module: Any, args: tuple[Any, ...], tracer: str = "auto",
           kwargs: dict[str, Any] | None = None) -> tuple[Any, str]:
    """(GraphModule with shapes in node.meta, tracer used): ``torch.export`` first (it traces
    through composite modules: ``nn.MultiheadAttention`` becomes its linears and
    ``scaled_dot_product_attention``), ``torch.fx.symbolic_trace`` where export fails
    (``tracer``: ``auto``, ``export`` or ``fx`` alone).  ``kwargs``: keyword arguments of the
    example (export takes them as they are; fx traces every parameter of ``forward`` as an
    input, those the example leaves out specialised to their defaults)."""
    gm, used, _ = _traced(torch, module, args, tracer, dict(kwargs or {}))
    return gm, used


def _traced(torch: Any, module: Any, args: tuple[Any, ...], tracer: str,
            kwargs: dict[str, Any]) -> tuple[Any, str, Any]:
    """:func:`_trace`, plus the function that rebuilds the model's outputs from the traced
    module's where export carried them otherwise (``None``: none needed).  Outputs pytree does
    not know (a ``@dataclass``) make ``torch.export`` refuse the module; it is then exported
    through a wrapper that returns them as dicts (:func:`~workbench.io.torch.calls.
    plain_outputs`: its parameters are ``model.<name>``) and the rebuild function puts the
    dataclasses back."""
    export_exc: Exception | None = None
    if tracer in ("auto", "export"):
        try:
            ep = torch.export.export(module, args, kwargs=kwargs or None)
            return _inline_disabled_autocast(_without_vmap(ep)), "torch.export", None
        except Exception as exc:  # noqa: BLE001 - any export failure sends us to torch.fx
            export_exc = exc
        if "pytree" in str(export_exc):  # an output type pytree does not know
            wrapper = plain_outputs(module)
            try:
                ep = torch.export.export(wrapper, args, kwargs=kwargs or None)
                return _inline_disabled_autocast(_without_vmap(ep)), "torch.export", \
                    wrapper.rebuild
            except Exception:  # noqa: BLE001 - report the first failure, not the wrapper's
                pass
    try:
        gm = torch.fx.symbolic_trace(module, concrete_args=left_out(module, args, kwargs)) \
            if tracer != "export" else None
    except Exception as fx_exc:  # noqa: BLE001
        raise OptionError(_line(
            f"from_torch: cannot trace {type(module).__name__} (fx: {type(fx_exc).__name__}: "
            f"{fx_exc}" + ("" if export_exc is None else
                          f"; torch.export: {type(export_exc).__name__}: {export_exc}")
            + ")")) from None
    if gm is None:
        raise OptionError(_line(f"from_torch: torch.export cannot trace "
                                f"{type(module).__name__} ({type(export_exc).__name__}: "
                                f"{export_exc}); try tracer='fx'"))
    _propagate_shapes(torch, gm, every_argument(module, args, kwargs), type(module).__name__)
    return gm, "torch.fx", None


#: functorch's vmap bookkeeping calls, which a traced ``torch.vmap`` leaves in the graph
#: (Hugging Face's attention masks are made with one): stateful host calls the importer would
#: reorder or drop, so such graphs are traced again through them (:func:`_without_vmap`).
VMAP_CALLS = frozenset({"_vmap_increment_nesting", "_vmap_decrement_nesting", "_add_batch_dim",
                        "_remove_batch_dim"})


def _has_vmap(gm: Any) -> bool:
    return any(node.op == "call_function" and getattr(node.target, "__name__", "") in VMAP_CALLS
               for node in gm.graph.nodes)


def _has_setitem(gm: Any) -> bool:
    """Whether ``gm`` assigns into a tensor by ``x[i] = v`` (``operator.setitem``: TorchDynamo
    keeps it; it returns nothing, so the importer would take it for host work)."""
    return any(node.op == "call_function" and node.target is operator.setitem
               for node in gm.graph.nodes)


def _without_vmap(ep: Any) -> Any:
    """The exported program's module, with ``torch.vmap`` regions traced through when it has
    them (``run_decompositions({})``: the batched ops themselves, in-place updates made
    functional; ~1.5 s for a small decoder), else as exported."""
    gm = ep.module()
    return ep.run_decompositions({}).module() if _has_vmap(gm) else gm


def _inline_disabled_autocast(gm: Any) -> Any:
    """``gm`` with every ``wrap_with_autocast`` region whose autocast is *disabled* (timm's
    ``torch.autocast(..., enabled=False)`` around an attention kept in FP32) inlined: its calls
    run in their inputs' dtypes either way, so they become ops of their own, costed from their
    shapes.  An enabled region (mixed precision inside the model) is left as one call.
    O(nodes)."""
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or getattr(node.target, "__name__", "") != \
                "wrap_with_autocast" or len(node.args) < 5 or node.args[2] is not False:
            continue
        sub = getattr(gm, node.args[4].target)
        env = dict(zip([n for n in sub.graph.nodes if n.op == "placeholder"], node.args[5:],
                       strict=False))
        with gm.graph.inserting_before(node):
            out = gm.graph.graph_copy(sub.graph, env)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for user in list(node.users):  # getitem(region, i) -> the region's i-th output
            user.replace_all_uses_with(outs[user.args[1]])
            gm.graph.erase_node(user)
        gm.graph.erase_node(node)
        changed = True
    if changed:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return gm


def _propagate_shapes(torch: Any, gm: Any, args: tuple[Any, ...], what: str) -> None:
    """Run ``torch.fx``'s ShapeProp over ``gm`` on fake tensors (nothing is computed, batch-norm
    statistics are left alone): every node gets its ``tensor_meta``."""
    from torch.fx.passes.shape_prop import ShapeProp

    try:
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake: Any = FakeTensorMode(allow_non_fake_inputs=True)
    except ImportError:  # pragma: no cover - private module moved: run the module for real
        fake = None
    try:
        with torch.no_grad():
            ShapeProp(gm, fake_mode=fake).propagate(*args)
    except Exception as exc:  # noqa: BLE001 - the user's module failed on example_inputs
        raise OptionError(_line(f"from_torch: running {what} on example_inputs "
                                f"failed ({type(exc).__name__}: {exc})")) from None


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 400 else text[:397] + "..."


def _meta(node: Any) -> list[Any]:
    found = tensors_in(node.meta.get("tensor_meta"))
    return found or tensors_in(node.meta.get("val"))


def _info(meta: Any) -> TensorInfo | None:
    try:
        shape = tuple(int(d) for d in meta.shape)
        itemsize = int(meta.dtype.itemsize)
    except (TypeError, ValueError, AttributeError):
        return None  # symbolic sizes
    return TensorInfo(shape, itemsize)


_target_name = target_label  # the call's name as the tables know it (program.py)


# ================================================================================ the importer
def from_torch(module: Any, example_inputs: Any = (), *, name: str | None = None,
               tracer: str = "auto", kwargs: dict[str, Any] | None = None) -> Graph:
    """Trace ``module`` on ``example_inputs`` (a tensor or a tuple of them, the positional
    arguments) and ``kwargs`` (its keyword arguments) into a Graph.

    Op kinds follow the model builders (``Conv2d`` -> ``conv2d``, ``Linear`` -> ``matmul``,
    ``cat`` -> ``concat``, ``+`` -> ``add``, ``view`` -> ``reshape``, ...).  Unknown targets get
    a default cost (FLOPs = output elements) and ``attrs["cost"] = "default"``, listed in one
    warning.

    The graph keeps the traced module as its program (``graph.program``, a
    :class:`~workbench.io.torch.program.TorchProgram`): the torch executor then runs each op as
    the call the model makes, with the module's own parameters and buffers, so a schedule of the
    graph computes what ``module(*example_inputs, **kwargs)`` computes; its ``example`` is the
    arguments (a tuple, or a :class:`~workbench.io.torch.program.Call` with ``kwargs``), and
    later calls are matched to them by ``module.forward``'s signature.  In-place calls
    (``relu_``, ``add_``, ``copy_`` into a view) become ordering edges: an op that reads a
    storage after an in-place write follows the writer, and the ops that read it before the
    write precede it (control edges), so no schedule can reorder a read across a write.  Python
    values computed from tensors (``x.size(0)``) are host work, not ops; an op that uses one
    follows the ops it was computed from.  Complexity: one fake-tensor pass over the module plus
    O(nodes + edges).
    """
    try:
        import torch
        import torch.fx  # noqa: F401 - makes torch.fx importable as an attribute
    except ImportError:
        raise FormatError(TORCH_MISSING) from None
    from workbench._checks import check_choice
    from workbench.io.torch.program import Call

    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (
        example_inputs,)
    keywords = dict(kwargs or {})
    gm, used, rebuild = _traced(torch, module, args, check_choice(
        tracer, ("auto", "export", "fx"), "tracer"), keywords)
    graph = graph_of_module(gm, tracer=used, name=name or type(module).__name__,
                            example=Call(args, keywords) if keywords else args, model=module)
    program = graph.program
    assert isinstance(program, TorchProgram)
    program.rebuild = rebuild
    return graph


def graph_of_traced(gm: Any, example: tuple[Any, ...], *, tracer: str, name: str,
                    parameters: set[int] | frozenset[int] = frozenset()) -> Graph:
    """The Graph of a ``torch.fx.GraphModule`` someone else traced (TorchDynamo hands one to a
    ``torch.compile`` backend), run on ``example`` to find its shapes; the module is its own
    program and its own reference.  ``parameters``: positions of placeholders that hold the
    model's weights (``role="parameter"``).  A graph holding ``torch.vmap``'s bookkeeping calls
    (:data:`VMAP_CALLS`) or assignments ``x[i] = v`` (``operator.setitem``, which returns
    nothing) is traced again on fake tensors (``make_fx``, for ``example``'s shapes), so that
    those become the aten calls they run (batched ops; ``copy_`` into a view).
    O(nodes + edges) after one fake-tensor pass."""
    try:
        import torch
    except ImportError:
        raise FormatError(TORCH_MISSING) from None
    traced = gm
    if _has_vmap(gm) or _has_setitem(gm):  # traced through on fake tensors: aten calls
        from torch.fx.experimental.proxy_tensor import make_fx

        traced = make_fx(gm, tracing_mode="fake")(*example)
    _propagate_shapes(torch, traced, example, name)
    return graph_of_module(traced, tracer=tracer, name=name, example=example, model=gm,
                           parameters=parameters)


def graph_of_module(gm: Any, *, tracer: str, name: str, example: Any = (),
                    model: Any = None, parameters: set[int] | frozenset[int] = frozenset()
                    ) -> Graph:
    """The Graph of a traced ``torch.fx.GraphModule`` whose nodes carry shapes (``tensor_meta`` or
    ``val`` in ``node.meta``), with the module as its program (``example``: the arguments it was
    traced with; ``model``: the user's module; ``parameters``: positions of placeholders that
    are weights); see :func:`from_torch`.  O(nodes + edges)."""
    builder = _Importer(gm, tracer, parameters)
    for node in gm.graph.nodes:
        builder.visit(node)
    return builder.graph(name, example, model)


class _Importer:
    """One pass over the fx nodes in program order: tensors, ops, costs and ordering edges."""

    def __init__(self, gm: Any, tracer: str, parameters: set[int] | frozenset[int]) -> None:
        self.gm, self.tracer, self.parameters = gm, tracer, parameters
        self.tensors: dict[TensorId, Tensor] = {}
        self.infos: dict[TensorId, Info] = {}
        self.produced: dict[str, TensorId] = {}  # fx node name -> tensor id
        self.ops: list[Op] = []
        self.defaulted: Counter[str] = Counter()
        self.outputs: list[TensorId] = []
        self.placeholders: list[str] = []
        # storage aliasing: fx node -> storage root; root -> last in-place writer, readers since
        self.root: dict[str, str] = {}
        self.writer: dict[str, OpId] = {}
        self.readers: dict[str, list[OpId]] = {}
        self.control: dict[tuple[OpId, OpId], None] = {}
        self.host_deps: dict[str, tuple[OpId, ...]] = {}  # host node -> ops it was computed from
        self.op_of: dict[str, OpId] = {}  # fx node name -> op id (ops only)
        self.position: dict[str, int] = {}  # fx node name -> index in program order

    def add_tensor(self, tid: TensorId, metas: list[Any], producer: str | None,
                   role: str) -> None:
        parts = [_info(m) for m in metas]
        size = sum(i.nbytes for i in parts if i is not None)
        one = parts[0] if len(parts) == 1 else None
        dtype = str(metas[0].dtype).replace("torch.", "") if len(metas) == 1 else "float32"
        self.tensors[tid] = Tensor(tid, size, producer=producer, role=role,
                                   shape=one.shape if one else (), dtype=dtype)
        # a container output (split, chunk) is known by its bytes only
        self.infos[tid] = one if len(parts) == 1 else (
            TensorInfo((size,), 1) if parts and None not in parts else None)

    def visit(self, node: Any) -> None:
        self.position[node.name] = len(self.position)
        if node.op == "placeholder":
            role = "parameter" if len(self.placeholders) in self.parameters else "input"
            self.add_tensor(node.name, _meta(node), None, role)
            self.produced[node.name] = node.name
            self.placeholders.append(node.name)
            self.root[node.name] = node.name
        elif node.op == "get_attr":
            tid = str(node.target)
            if tid not in self.tensors:
                self.add_tensor(tid, _meta(node), None, "parameter")
            self.produced[node.name] = tid
            self.root[node.name] = tid
        elif node.op == "output":
            self.outputs = [self.produced[n.name] for n in nodes_in(node.args)
                            if n.name in self.produced]
        elif node.op in ("call_module", "call_function", "call_method"):
            if _meta(node):
                self.visit_op(node)
            else:  # Python values (sizes, shapes): host work, not a kernel
                self.host_deps[node.name] = self.ops_behind(nodes_in((node.args, node.kwargs)))

    def ops_behind(self, nodes: Sequence[Any]) -> tuple[OpId, ...]:
        """The ops whose results the host values among ``nodes`` were computed from."""
        found: dict[OpId, None] = {}
        for n in nodes:
            if n.name in self.op_of:
                found[self.op_of[n.name]] = None
            for op in self.host_deps.get(n.name, ()):
                found[op] = None
        return tuple(found)

    def visit_op(self, node: Any) -> None:
        metas = _meta(node)
        dependent = data_dependent_size(metas)
        if dependent:
            raise OptionError(_line(
                f"from_torch: op {node.name!r} ({_target_name(node)}) makes a tensor whose "
                f"shape depends on the values of its inputs (size {dependent}: a boolean mask "
                f"index, nonzero, masked_select, unique ...), and a schedule needs fixed shapes; "
                f"keep the shape fixed (torch.where(mask, x, 0) instead of x[mask]) or compute "
                f"it outside the module"))
        sub = self.gm.get_submodule(node.target) if node.op == "call_module" else None
        arg_nodes = nodes_in((node.args, node.kwargs))
        inputs = [self.produced[n.name] for n in arg_nodes if n.name in self.produced]
        attrs: dict[str, Any] = {"fx_op": node.op, "tracer": self.tracer}
        out_shapes = shapes_of([_info(m) for m in metas])
        out_dtype = str(metas[0].dtype).replace("torch.", "") if metas else None
        if sub is not None:
            type_name = type(sub).__name__
            entry = MODULES.get(type_name)
            attrs.update({"target": str(node.target), "module": type_name})
            for pname, p in [*sub.named_parameters(recurse=False),
                             *sub.named_buffers(recurse=False)]:
                if pname == "num_batches_tracked":
                    continue  # a training counter, not read by the kernel
                tid = f"{node.target}.{pname}"
                if tid not in self.tensors:
                    self.add_tensor(tid, [p], None, "parameter")
                inputs.append(tid)
            attrs.update(module_attrs(sub, ins=shapes_of([self.infos[t] for t in inputs]),
                                      outs=out_shapes, out_dtype=out_dtype))
            label = type_name
        else:
            label = _target_name(node)
            entry = FUNCTIONS.get(label) or FUNCTIONS.get(label.rstrip("_"))  # relu_: relu
            attrs["target"] = label
            attrs.update(call_attrs(label, node.args, node.kwargs,
                                    ins=shapes_of([self.infos[t] for t in inputs]),
                                    outs=out_shapes, out_dtype=out_dtype))
        tid = f"{node.name}:out"
        self.add_tensor(tid, metas, node.name, "activation")
        self.produced[node.name] = tid
        self.op_of[node.name] = node.name
        ins = [self.infos[t] for t in inputs]
        outs = [_info(m) for m in metas]
        kind = entry[0] if entry else label.lower().strip("_") or GENERIC
        cost = (cost_rule(entry[1], entry[2], ins, outs, sub, node.args, node.kwargs)
                if entry else None)
        view = bool(entry and entry[1] == "view")
        if view:
            attrs["view"] = True
        if cost is None:
            self.defaulted[f"{label} ({'unknown' if entry is None else 'shapes unknown'})"] += 1
            cost = default_cost(ins, outs)
            attrs["cost"] = "default"
        alias, written = effects(node, module=sub, view=view)
        shared = shared_storage(node, arg_nodes, alias)
        if shared is not None and self.produced.get(shared.name) in inputs:
            # a view or an in-place write (workbench.values.storage)
            attrs[STORAGE_ATTR] = self.produced[shared.name]
        stale = self.order(node, arg_nodes, view, alias, written)
        if stale:
            attrs["program_only"] = stale
        self.ops.append(Op(node.name, kind=kind, flops=float(cost.flops),
                           bytes_read=int(cost.bytes_read),
                           bytes_written=int(cost.bytes_written),
                           inputs=tuple(dict.fromkeys(inputs)), outputs=(tid,),
                           thread_blocks=int(cost.thread_blocks), attrs=attrs))

    def order(self, node: Any, arg_nodes: Sequence[Any], view: bool, alias: Any,
              written: Sequence[Any]) -> str | None:
        """The ordering edges of op ``node`` beyond its data edges: after the ops its host
        arguments came from; after the last in-place writer of every storage it reads through a
        value named before that write (a value named after it already depends on the writer);
        and, when it writes a storage in place, after every op that read that storage since the
        last write (which then must not see the new value).  Returns why the op's value is
        the program's alone, where it is (a read through a value named before an in-place
        write, such as Swin's ``mask[a:b] = k`` then ``mask.view(...)``: the graph's data
        edges carry the value before the write, so only the program's own calls, not the
        kinds' torch forms, compute it), else ``None``."""
        stale = None
        op = node.name
        self.root[op] = self.root.get(alias.name, alias.name) if alias is not None else op
        for before in self.ops_behind([n for n in arg_nodes if n.name in self.host_deps]):
            self.control[(before, op)] = None
        roots = {self.root[n.name] for n in arg_nodes if n.name in self.root}
        for n in arg_nodes:
            w = self.writer.get(self.root.get(n.name, ""))
            if w is not None and w != op and self.position[n.name] < self.position[w]:
                self.control[(w, op)] = None
                stale = stale or f"reads {n.name} after the in-place write {w}"
        for target in written:
            r = self.root.get(target.name, target.name)
            for reader in self.readers.get(r, ()):
                if reader != op:
                    self.control[(reader, op)] = None
            self.writer[r] = op
            self.readers[r] = []
        if not view:  # a view reads no data; its consumers read the storage
            for r in roots:
                self.readers.setdefault(r, []).append(op)
        return stale

    def graph(self, name: str, example: tuple[Any, ...], model: Any) -> Graph:
        if self.defaulted:
            listed = ", ".join(f"{k} ×{v}" for k, v in sorted(self.defaulted.items()))
            warnings.warn(f"from_torch: {sum(self.defaulted.values())} op(s) imported with a "
                          f"default cost (flops = output elements): {listed}", stacklevel=3)
        for t in dict.fromkeys(self.outputs):
            old = self.tensors[t]
            if old.producer is not None:
                self.tensors[t] = Tensor(old.id, old.size_bytes, producer=old.producer,
                                         role="output", shape=old.shape, dtype=old.dtype)
        data = {(p, o.id) for o in self.ops for t in o.inputs
                for p in [self.tensors[t].producer] if p is not None}
        control = [edge for edge in self.control if edge not in data]
        program = TorchProgram(self.gm, placeholders=self.placeholders,
                               outputs=list(dict.fromkeys(self.outputs)),
                               tracer=self.tracer, name=name,
                               example=example, model=model,
                               tensors={t: n for n, t in self.produced.items()})
        try:
            return Graph(self.ops, self.tensors.values(), control,
                         outputs=list(dict.fromkeys(self.outputs)), name=name, program=program)
        except GraphError as exc:
            raise GraphError(_line(f"from_torch: {exc}")) from None


__all__ = ["FUNCTIONS", "MODULES", "cost_of_call", "from_torch", "graph_of_module",
           "graph_of_traced"]
