"""torch.fx import: a PyTorch ``nn.Module`` traced into a :class:`~workbench.graph.Graph`.

:func:`from_torch` traces the module with ``torch.fx.symbolic_trace`` (``torch.export`` when that
fails, e.g. on Python control flow) and propagates shapes with
``torch.fx.passes.shape_prop.ShapeProp`` on fake tensors (nothing is computed and batch-norm
statistics are left alone).  ``call_module``/``call_function``/``call_method`` nodes that produce
tensors become ops (id = the fx node name); nodes producing only Python values (``x.size(0)``) are
host work and are left out.  Placeholders are graph inputs; ``get_attr`` nodes and the parameters
and buffers of called modules are parameters (``"<module path>.<name>"``).  Costs use the
shape-cost rules of :mod:`workbench.io.onnx` (the model builders' conventions).  ``torch`` is
imported inside the function.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.errors import FormatError, GraphError, OptionError
from workbench.graph import Graph, Op, Tensor
from workbench.ops import ACTIVATION_FLOPS
from workbench.shape_costs import (
    VIEW_COST,
    Info,
    ShapeCost,
    TensorInfo,
    conv_cost,
    copy_cost,
    default_cost,
    elementwise_cost,
    global_pool_cost,
    matmul_cost,
    numel,
    window_cost,
)

TORCH_MISSING = "importing a torch module needs torch: pip install 'schedule-workbench[torch]'"

#: Module type name -> (op kind, cost formula, per-element FLOPs where it applies).
MODULES: dict[str, tuple[str, str, float]] = {
    "Conv1d": ("conv1d", "conv", 0), "Conv2d": ("conv2d", "conv", 0),
    "Conv3d": ("conv3d", "conv", 0), "ConvTranspose2d": ("conv_transpose", "conv_t", 0),
    "Linear": ("matmul", "linear", 0),
    "BatchNorm1d": ("batchnorm", "elementwise", 2), "BatchNorm2d": ("batchnorm", "elementwise", 2),
    "BatchNorm3d": ("batchnorm", "elementwise", 2), "LayerNorm": ("layernorm", "elementwise", 8),
    "GroupNorm": ("groupnorm", "elementwise", 8),
    "InstanceNorm2d": ("instancenorm", "elementwise", 8),
    "ReLU": ("relu", "elementwise", 1), "ReLU6": ("relu6", "elementwise", 2),
    "GELU": ("gelu", "elementwise", ACTIVATION_FLOPS["gelu"]),
    "Sigmoid": ("sigmoid", "elementwise", ACTIVATION_FLOPS["sigmoid"]),
    "Tanh": ("tanh", "elementwise", ACTIVATION_FLOPS["tanh"]), "SiLU": ("silu", "elementwise", 5),
    "LeakyReLU": ("leaky_relu", "elementwise", 2), "Hardswish": ("hard_swish", "elementwise", 4),
    "Hardsigmoid": ("hard_sigmoid", "elementwise", 3),
    "Softmax": ("softmax", "elementwise", 5), "LogSoftmax": ("log_softmax", "elementwise", 6),
    "MaxPool2d": ("maxpool", "pool", 0), "AvgPool2d": ("avgpool", "pool", 0),
    "AdaptiveAvgPool2d": ("global_avgpool", "adaptive", 0),
    "AdaptiveMaxPool2d": ("global_maxpool", "adaptive", 0),
    "Dropout": ("dropout", "view", 0), "Flatten": ("flatten", "view", 0),
    "Identity": ("identity", "view", 0), "Embedding": ("embedding", "gather", 0),
}

#: Function / method / aten op name -> (op kind, cost formula, per-element FLOPs).
FUNCTIONS: dict[str, tuple[str, str, float]] = {
    "conv1d": ("conv1d", "conv", 0), "conv2d": ("conv2d", "conv", 0),
    "conv3d": ("conv3d", "conv", 0), "convolution": ("conv2d", "conv", 0),
    "linear": ("matmul", "linear", 0), "matmul": ("matmul", "matmul", 0),
    "mm": ("matmul", "matmul", 0), "bmm": ("matmul", "matmul", 0),
    "addmm": ("matmul", "addmm", 0),
    "batch_norm": ("batchnorm", "elementwise", 2), "layer_norm": ("layernorm", "elementwise", 8),
    "group_norm": ("groupnorm", "elementwise", 8),
    "softmax": ("softmax", "elementwise", 5), "log_softmax": ("log_softmax", "elementwise", 6),
    "max_pool2d": ("maxpool", "pool", 0), "avg_pool2d": ("avgpool", "pool", 0),
    "adaptive_avg_pool2d": ("global_avgpool", "adaptive", 0),
    "adaptive_max_pool2d": ("global_maxpool", "adaptive", 0),
    "mean": ("reduce_mean", "adaptive", 0), "sum": ("reduce_sum", "adaptive", 0),
    "amax": ("reduce_max", "adaptive", 0),
    "cat": ("concat", "copy", 0), "concat": ("concat", "copy", 0),
    "concatenate": ("concat", "copy", 0), "stack": ("stack", "copy", 0),
    "contiguous": ("contiguous", "copy", 0), "clone": ("clone", "copy", 0),
    "to": ("cast", "copy", 0), "float": ("cast", "copy", 0), "half": ("cast", "copy", 0),
    "pad": ("pad", "copy", 0), "embedding": ("embedding", "gather", 0),
    "index_select": ("gather", "gather", 0),
    "flatten": ("flatten", "view", 0), "view": ("reshape", "view", 0),
    "reshape": ("reshape", "view", 0), "squeeze": ("squeeze", "view", 0),
    "unsqueeze": ("unsqueeze", "view", 0), "permute": ("transpose", "view", 0),
    "transpose": ("transpose", "view", 0), "t": ("transpose", "view", 0),
    "expand": ("expand", "view", 0), "getitem": ("getitem", "view", 0),
    "slice": ("getitem", "view", 0), "select": ("getitem", "view", 0),
    "split": ("split", "view", 0), "chunk": ("split", "view", 0),
    "dropout": ("dropout", "view", 0), "identity": ("identity", "view", 0),
    "relu": ("relu", "elementwise", 1), "relu_": ("relu", "elementwise", 1),
    "gelu": ("gelu", "elementwise", ACTIVATION_FLOPS["gelu"]),
    "sigmoid": ("sigmoid", "elementwise", ACTIVATION_FLOPS["sigmoid"]),
    "tanh": ("tanh", "elementwise", ACTIVATION_FLOPS["tanh"]),
    "silu": ("silu", "elementwise", 5), "leaky_relu": ("leaky_relu", "elementwise", 2),
    "hardswish": ("hard_swish", "elementwise", 4), "exp": ("exp", "elementwise", 1),
    "sqrt": ("sqrt", "elementwise", 1), "rsqrt": ("rsqrt", "elementwise", 1),
    "pow": ("pow", "elementwise", 1), "erf": ("erf", "elementwise", 1),
    "clamp": ("clip", "elementwise", 2), "neg": ("neg", "elementwise", 1),
}
for _name, _kind in {"add": "add", "iadd": "add", "add_": "add", "sub": "sub", "isub": "sub",
                     "mul": "mul", "imul": "mul", "mul_": "mul", "truediv": "div", "div": "div",
                     "itruediv": "div", "floordiv": "div", "maximum": "max",
                     "minimum": "min", "where": "where"}.items():
    FUNCTIONS[_name] = (_kind, "elementwise", 1)


def _first(seq: Sequence[Info]) -> Info:
    return seq[0] if seq else None


def _window(module: Any) -> int | None:
    k = getattr(module, "kernel_size", None)
    if isinstance(k, int):
        return k * k
    if isinstance(k, (tuple, list)) and all(isinstance(v, int) for v in k):
        return numel(k)
    return None


def _cost(formula: str, per_element: float, ins: Sequence[Info], outs: Sequence[Info],
          module: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    """The shared shape-cost rule for one traced node (``None``: shapes unknown)."""
    x, y = _first(ins), _first(outs)
    if formula == "view":
        return VIEW_COST
    if formula in ("conv", "conv_t"):
        return conv_cost(x, ins[1] if len(ins) > 1 else None, y, ins, outs,
                         transpose=formula == "conv_t")
    if formula == "linear":
        return None if x is None or not x.shape else matmul_cost(x.shape[-1], y, ins, outs)
    if formula in ("matmul", "addmm"):
        a = ins[1] if formula == "addmm" and len(ins) > 1 else x
        return None if a is None or not a.shape else matmul_cost(a.shape[-1], y, ins, outs)
    if formula == "elementwise":
        return elementwise_cost(y, ins, outs, per_element=per_element)
    if formula == "pool":
        window = _window(module) if module is not None else _arg_window(args, kwargs)
        return None if window is None else window_cost(y, window, ins, outs)
    if formula == "adaptive":
        return global_pool_cost(x, ins, outs)
    if formula == "copy":
        return copy_cost(y, ins, outs)
    if formula == "gather":  # reads what it copies plus the index tensor (the smaller input)
        known = [t.nbytes for t in ins if t is not None]
        if y is None or not known:
            return None
        return ShapeCost(0, y.nbytes + min(known), y.nbytes, max(1, math.ceil(y.elements / 1024)))
    return None


def _arg_window(args: Sequence[Any], kwargs: Mapping[str, Any]) -> int | None:
    """The pooling window of ``F.max_pool2d(x, k)`` / ``F.avg_pool2d(x, kernel_size=k)``."""
    k = args[1] if len(args) > 1 else kwargs.get("kernel_size")
    if isinstance(k, int):
        return k * k
    if isinstance(k, (tuple, list)) and all(isinstance(v, int) for v in k):
        return numel(k)
    return None


#: Positional parameters of functional calls whose values the cost model reads (after the
#: tensor arguments): ``F.conv2d(x, w, b, stride, padding, dilation, groups)``, pooling windows.
_CALL_PARAMS: dict[str, tuple[str, ...]] = {
    "conv1d": ("", "", "", "stride", "padding", "dilation", "groups"),
    "conv2d": ("", "", "", "stride", "padding", "dilation", "groups"),
    "conv3d": ("", "", "", "stride", "padding", "dilation", "groups"),
    "max_pool2d": ("", "kernel_size", "stride", "padding"),
    "avg_pool2d": ("", "kernel_size", "stride", "padding"),
}


def _call_attrs(label: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``stride``/``groups``/``kernel_size``... of a functional call, positional or keyword."""
    names = _CALL_PARAMS.get(label, ())
    found = {name: args[i] for i, name in enumerate(names) if name and i < len(args)}
    found.update({k: v for k, v in kwargs.items() if k in names})
    return {k: _plain(v) for k, v in found.items()
            if isinstance(v, (int, list, tuple)) and not isinstance(v, bool)}


def cost_of_call(label: str, ins: Sequence[Info], outs: Sequence[Info],
                 args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None
                 ) -> tuple[str, ShapeCost | None, dict[str, Any]]:
    """(op kind, shape cost or None, attrs) of a call to the function or aten op ``label``
    (``conv2d``, ``cat``, ``relu_``) with these tensor infos and arguments: the rules
    :func:`from_torch` uses, for importers of recorded runs.  Unknown labels: kind from the name,
    cost None.  O(rank)."""
    kwargs = kwargs or {}
    entry = FUNCTIONS.get(label) or FUNCTIONS.get(label.rstrip("_"))
    attrs = _call_attrs(label, args, kwargs)
    if entry is None:
        return label.strip("_").lower() or "op", None, attrs
    if entry[1] == "view":
        attrs["view"] = True
    return entry[0], _cost(entry[1], entry[2], ins, outs, None, args, kwargs), attrs


# ================================================================================ tracing
def _trace(torch: Any, module: Any, args: tuple[Any, ...]) -> tuple[Any, str]:
    """(GraphModule with shapes in node.meta, tracer used)."""
    from torch.fx.passes.shape_prop import ShapeProp

    try:
        gm = torch.fx.symbolic_trace(module)
    except Exception as fx_exc:  # noqa: BLE001 - any tracing failure sends us to torch.export
        try:
            return torch.export.export(module, args).module(), "torch.export"
        except Exception as exc:  # noqa: BLE001
            raise OptionError(_line(f"from_torch: cannot trace {type(module).__name__} "
                                    f"(fx: {type(fx_exc).__name__}: {fx_exc}; torch.export: "
                                    f"{type(exc).__name__}: {exc})")) from None
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake: Any = FakeTensorMode(allow_non_fake_inputs=True)
    except ImportError:  # pragma: no cover - private module moved: run the module for real
        fake = None
    try:
        with torch.no_grad():
            ShapeProp(gm, fake_mode=fake).propagate(*args)
    except Exception as exc:  # noqa: BLE001 - the user's module failed on example_inputs
        raise OptionError(_line(f"from_torch: running {type(module).__name__} on example_inputs "
                                f"failed ({type(exc).__name__}: {exc})")) from None
    return gm, "torch.fx"


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 400 else text[:397] + "..."


def _tensors_in(value: Any) -> list[Any]:
    """Tensor-like metadata (anything with ``shape`` and ``dtype``) inside nested containers."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_in(v)]
    return []


def _meta(node: Any) -> list[Any]:
    found = _tensors_in(node.meta.get("tensor_meta"))
    return found or _tensors_in(node.meta.get("val"))


def _info(meta: Any) -> TensorInfo | None:
    try:
        shape = tuple(int(d) for d in meta.shape)
        itemsize = int(meta.dtype.itemsize)
    except (TypeError, ValueError, AttributeError):
        return None  # symbolic sizes
    return TensorInfo(shape, itemsize)


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return str(value)


_MODULE_ATTRS = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                 "groups", "in_features", "out_features", "eps", "output_size", "p",
                 "normalized_shape", "num_features", "negative_slope", "dim")


def _target_name(node: Any) -> str:
    target = node.target
    if isinstance(target, str):
        return target
    text = str(target)
    if text.startswith("aten."):  # torch.export: aten.conv2d.default -> conv2d
        return text.split(".")[1]
    if target in (operator.getitem,):
        return "getitem"
    return getattr(target, "__name__", text)


# ================================================================================ the importer
def from_torch(module: Any, example_inputs: Any, *, name: str | None = None) -> Graph:
    """Trace ``module`` on ``example_inputs`` (a tensor or a tuple of them) into a Graph.

    Op kinds follow the model builders (``Conv2d`` -> ``conv2d``, ``Linear`` -> ``matmul``,
    ``cat`` -> ``concat``, ``+`` -> ``add``, ``view`` -> ``reshape``, ...).  Unknown targets get
    a default cost (FLOPs = output elements) and ``attrs["cost"] = "default"``, listed in one
    warning.  Complexity: one fake-tensor pass over the module plus O(nodes).
    """
    try:
        import torch
        import torch.fx  # noqa: F401 - makes torch.fx importable as an attribute
    except ImportError:
        raise FormatError(TORCH_MISSING) from None
    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (
        example_inputs,)
    gm, tracer = _trace(torch, module, args)
    tensors: dict[str, Tensor] = {}
    infos: dict[str, Info] = {}
    produced: dict[str, str] = {}  # fx node name -> tensor id
    ops: list[Op] = []
    defaulted: Counter[str] = Counter()
    outputs: list[str] = []

    def add_tensor(tid: str, metas: list[Any], producer: str | None, role: str) -> None:
        parts = [_info(m) for m in metas]
        size = sum(i.nbytes for i in parts if i is not None)
        one = parts[0] if len(parts) == 1 else None
        dtype = str(metas[0].dtype).replace("torch.", "") if len(metas) == 1 else "float32"
        tensors[tid] = Tensor(tid, size, producer=producer, role=role,
                              shape=one.shape if one else (), dtype=dtype)
        # a container output (split, chunk) is known by its bytes only
        infos[tid] = one if len(parts) == 1 else (
            TensorInfo((size,), 1) if parts and None not in parts else None)

    for node in gm.graph.nodes:
        if node.op == "placeholder":
            add_tensor(node.name, _meta(node), None, "input")
            produced[node.name] = node.name
        elif node.op == "get_attr":
            tid = str(node.target)
            if tid not in tensors:
                add_tensor(tid, _meta(node), None, "parameter")
            produced[node.name] = tid
        elif node.op == "output":
            outputs = [produced[n.name] for n in _arg_nodes(node.args) if n.name in produced]
        elif node.op in ("call_module", "call_function", "call_method"):
            metas = _meta(node)
            if not metas:
                continue  # Python values (sizes, shapes): host work, not a kernel
            sub = gm.get_submodule(node.target) if node.op == "call_module" else None
            inputs = [produced[n.name] for n in _arg_nodes((node.args, node.kwargs))
                      if n.name in produced]
            attrs: dict[str, Any] = {"fx_op": node.op, "tracer": tracer}
            if sub is not None:
                type_name = type(sub).__name__
                entry = MODULES.get(type_name)
                attrs.update({"target": str(node.target), "module": type_name})
                attrs.update({a: _plain(getattr(sub, a)) for a in _MODULE_ATTRS
                              if hasattr(sub, a)})
                for pname, p in [*sub.named_parameters(recurse=False),
                                 *sub.named_buffers(recurse=False)]:
                    if pname == "num_batches_tracked":
                        continue  # a training counter, not read by the kernel
                    tid = f"{node.target}.{pname}"
                    if tid not in tensors:
                        add_tensor(tid, [p], None, "parameter")
                    inputs.append(tid)
                label = type_name
            else:
                label = _target_name(node)
                entry = FUNCTIONS.get(label)
                attrs["target"] = label
                attrs.update(_call_attrs(label, node.args, node.kwargs))
            tid = f"{node.name}:out"
            add_tensor(tid, metas, node.name, "activation")
            produced[node.name] = tid
            ins = [infos[t] for t in inputs]
            outs = [_info(m) for m in metas]
            kind = entry[0] if entry else label.lower().strip("_") or "op"
            cost = (_cost(entry[1], entry[2], ins, outs, sub, node.args, node.kwargs)
                    if entry else None)
            if entry and entry[1] == "view":
                attrs["view"] = True
            if cost is None:
                defaulted[f"{label} ({'unknown' if entry is None else 'shapes unknown'})"] += 1
                cost = default_cost(ins, outs)
                attrs["cost"] = "default"
            ops.append(Op(node.name, kind=kind, flops=float(cost.flops),
                          bytes_read=int(cost.bytes_read), bytes_written=int(cost.bytes_written),
                          inputs=tuple(dict.fromkeys(inputs)), outputs=(tid,),
                          thread_blocks=int(cost.thread_blocks), attrs=attrs))
    if defaulted:
        listed = ", ".join(f"{k} ×{v}" for k, v in sorted(defaulted.items()))
        warnings.warn(f"from_torch: {sum(defaulted.values())} op(s) imported with a default cost "
                      f"(flops = output elements): {listed}", stacklevel=2)
    for t in dict.fromkeys(outputs):
        old = tensors[t]
        if old.producer is not None:
            tensors[t] = Tensor(old.id, old.size_bytes, producer=old.producer, role="output",
                                shape=old.shape, dtype=old.dtype)
    try:
        return Graph(ops, tensors.values(), outputs=list(dict.fromkeys(outputs)),
                     name=name or type(module).__name__)
    except GraphError as exc:
        raise GraphError(_line(f"from_torch: {exc}")) from None


def _arg_nodes(args: Any) -> list[Any]:
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


__all__ = ["FUNCTIONS", "MODULES", "cost_of_call", "from_torch"]
