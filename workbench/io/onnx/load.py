"""ONNX import as a compiler sees the model: weights folded, control flow costed from its bodies.

:func:`load_onnx` reads a ``.onnx`` file (the ``onnx`` package is imported inside the function),
sets the symbolic input dimensions (``dims=``, ``input_shapes=``), runs
``onnx.shape_inference.infer_shapes`` and completes its shapes where exporters' shape arithmetic
stopped it (:mod:`workbench.io.onnx.shapes`), and turns every node that computes on activations,
in file order, into an
:class:`~workbench.values.graph.Op`.  Reading the protobuf into plain values (the file checked,
its symbolic dimensions set, value infos, nodes, op ids) is :mod:`workbench.io.onnx.proto`'s
job; this module builds the graph from them.  Nodes that compute only from weights (``Constant``,
``ConstantOfShape``, ``Identity``/``Cast``/``Unsqueeze`` of initializers, shape arithmetic on
static shapes) are folded, as an inference compiler does (:mod:`workbench.io.onnx.fold`): their
outputs are parameters and no kernel is scheduled for them.  ``If``/``Loop``/``Scan`` become
``case_of``/``while`` ops holding their bodies as sub-graphs (:mod:`workbench.io.onnx.control`).

Op attributes are written in the op vocabulary (:mod:`workbench.io.onnx.attrs`: ``kernel_shape``
/``strides``/``pads``/``group`` become ``kernel``/``stride``/``padding``/``groups``, ONNX's
defaults written out, constant inputs such as ``Slice``'s starts lifted into attributes).  The
graph carries its weights (``graph.program``, a :class:`~workbench.values.program.Weights`): the
initializers and the folded constants its ops read (:mod:`workbench.io.onnx.weights`), the
graph inputs that are not initializers (file order) and the graph outputs (file order), so the
torch executor runs the model itself.

Tensors are the ONNX values: their byte size is the number of elements times the element size of
their ONNX data type (float32 = 4 bytes).  Initializers and folded values are
``role="parameter"``, the other graph inputs ``role="input"``, the graph outputs ``role="output"``.
Costs come from the shape-cost rules of :mod:`workbench.io.onnx.rules` (re-exported here).  The
graph is named after the model's graph, or after the file when that name is a generic exporter
default (``main_graph``, ``torch-jit-export``, empty).

Unknown op types, and known ones whose shapes inference could not find, get a default cost (bytes
from whatever shapes are known, FLOPs = output elements), ``attrs["cost"] = "default"`` and one
warning per file that lists the commonest with counts, and says how to find the shapes
(``simplify=True``, ``input_shapes=``) when they are what is missing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench._checks import warn_line
from workbench.errors import FormatError, GraphError, OptionError
from workbench.io.onnx.attrs import Node, vocabulary_attrs
from workbench.io.onnx.checks import check_structure
from workbench.io.onnx.control import (
    CONTROL_FLOW,
    Body,
    body_graphs,
    body_ops,
    control_flow_cost,
    control_op,
)
from workbench.io.onnx.fold import weight_only_nodes
from workbench.io.onnx.proto import (
    PlainNode,
    ValueInfo,
    fix_symbolic_dims,
    one_line,
    op_ids,
    plain_nodes,
    read_model,
    small_ints,
    text_of,
    value_infos,
)
from workbench.io.onnx.rules import (
    CONSTANT_OP_TYPES,
    MAX_ELEMENTS,
    RULES,
    VIEW_OP_TYPES,
    kind_of,
)
from workbench.io.onnx.shapes import StaticShapes, infer_shapes, static_shapes
from workbench.io.onnx.simplify import simplify as _simplify
from workbench.io.onnx.weights import parameter_values
from workbench.ops import canonical_kind
from workbench.ops.costs import (
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
from workbench.values.graph import Graph, Op, Tensor
from workbench.values.program import Weights

ONNX_MISSING = "reading .onnx needs the onnx package: pip install 'schedule-workbench[onnx]'"
#: Graph names exporters write by default; the file name is used instead.
GENERIC_NAMES = frozenset({"", "main_graph", "torch-jit-export", "torch_jit", "torch-jit",
                           "graph"})


# ================================================================================ the loader
def load_onnx(path: str | Path, *, dims: Mapping[str, int] | None = None,
              simplify: bool = False,
              input_shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    """Read an ONNX model into a :class:`~workbench.values.graph.Graph`.

    ``input_shapes`` gives example shapes of the model's inputs (``{"input": (1, 3, 224,
    224)}``) and ``dims`` values of symbolic dimensions by their name (``{"batch": 8}``); both
    set the same thing, the symbolic dimensions of the inputs (an input shape sets the symbolic
    dimensions it covers, for every input that shares them: ``input_shapes={"ids": (1, 128)}``
    on ``ids: (batch, seq)`` is ``dims={"batch": 1, "seq": 128}``, and also shapes a ``mask:
    (batch, seq)``).  Dimensions neither sets are 1 (with a warning) so that shape inference can
    reach every node.  A ``dims`` name that is not a symbolic dimension of the graph, an input
    name the graph does not have, a shape of another rank, a dimension that is not positive or
    that the file fixes to another value, is a one-line :class:`~workbench.errors.OptionError`
    listing what the graph has.  Op ids are the node names verbatim; unnamed nodes get
    ``<op_type>_<k>``.  Complexity: O(nodes + values), bodies included, after ONNX's own shape
    inference.  Every problem with the file is a one-line :class:`~workbench.errors.FormatError`
    naming it.

    Shapes: ONNX's shape inference (data propagation on) runs first; then one pass
    (:mod:`workbench.io.onnx.shapes`) evaluates the shape arithmetic real exporters write
    (``Shape``/``Gather``/``Concat``/``Div``/``Where``/``Range``/...) and infers again every
    node inference left without a static shape, with those values as constant inputs, so the
    legacy exporter's BERT or Swin transformer imports with every op shaped, in seconds.

    The graph's program (``graph.program``) holds the weights: every initializer and folded
    constant an op reads, as NumPy arrays (one copy of each; folded nodes no op needs are not
    evaluated), with the model's inputs and outputs in file order; ``wb.execute(...,
    executor="torch", inputs=...)`` then runs the model (``inputs``: its inputs, positional or
    by name).

    ``simplify=True`` first runs onnxscript's optimizer (``onnxscript.optimizer.optimize``:
    constant folding, shape-op elimination, dead code; the legacy exporter's transformers lose
    their ``Shape``/``Gather``/``Concat`` chains) when onnxscript is installed (the ``onnx``
    extra), else warns that it did not run.
    """
    try:
        import onnx
    except ImportError:
        raise FormatError(ONNX_MISSING) from None
    path = Path(path)
    for key, value in (dims or {}).items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < MAX_ELEMENTS:
            raise OptionError(f"dims[{key!r}] must be a positive integer, got {value!r}")
    if input_shapes is not None and not isinstance(input_shapes, Mapping):
        raise OptionError(one_line(f"input_shapes must map input names to shapes, got "
                                   f"{input_shapes!r}"[:300]))
    model = read_model(onnx, path)
    check_structure(onnx, model, path)
    fix_symbolic_dims(model, dims or {}, path, input_shapes)
    if simplify:
        model = _simplify(model, path)
    failed = infer_shapes(onnx, model)
    try:
        return _build(onnx, model, path, failed, static_shapes(onnx, model, str(path.parent)))
    except GraphError as exc:
        raise GraphError(one_line(f"{path}: {exc}")) from None


#: How many op types the default-cost warning lists by name.
LISTED_TYPES = 6
#: What the warning suggests when shapes stay unknown.
SHAPES_REMEDY = ("to find them, load with simplify=True (CLI --simplify) or give example input "
                 "shapes: input_shapes={name: shape} (CLI --input-shape NAME=1,3,224,224)")


def defaulted_text(name: str, defaulted: Mapping[str, int], failed: str = "") -> str:
    """The one-line warning for ops imported with a default cost: how many, the commonest
    types with counts (:data:`LISTED_TYPES` of them, then how many more), why, and the remedy
    when shapes stayed unknown.

    >>> defaulted_text("m.onnx", {"MatMul (shapes unknown)": 3, "Foo (unknown op type)": 1})
    ... # doctest: +NORMALIZE_WHITESPACE
    'm.onnx: 4 op(s) imported with a default cost (flops = output elements): MatMul (shapes
    unknown) ×3, Foo (unknown op type) ×1; to find them, load with simplify=True (CLI
    --simplify) or give example input shapes: input_shapes={name: shape} (CLI --input-shape
    NAME=1,3,224,224)'
    """
    ranked = sorted(defaulted.items(), key=lambda kv: (-kv[1], kv[0]))
    listed = ", ".join(f"{k} ×{v}" for k, v in ranked[:LISTED_TYPES])
    if len(ranked) > LISTED_TYPES:
        rest = sum(v for _, v in ranked[LISTED_TYPES:])
        listed += f" and {rest} more of {len(ranked) - LISTED_TYPES} other types"
    note = f"; {failed}" if failed else ""
    if any(k.endswith("(shapes unknown)") for k in defaulted):
        note += f"; {SHAPES_REMEDY}"
    return one_line(f"{name}: {sum(defaulted.values())} op(s) imported with a default cost "
                    f"(flops = output elements): {listed}{note}")


def graph_name(model_name: str, path: Path) -> str:
    """The model's graph name, or the file's stem when the name is a generic exporter default.

    >>> graph_name("main_graph", Path("models/branchy.onnx")), graph_name("resnet50", Path("x"))
    ('branchy', 'resnet50')
    """
    name = model_name.strip()
    return path.stem if name in GENERIC_NAMES else name


@dataclass
class _Scope:
    """What the import of one graph (the model's, or a body) knows and collects."""

    infos: dict[str, ValueInfo]
    weights: set[str]
    ints: dict[str, int]
    graph_outputs: frozenset[str] = frozenset()
    tensors: dict[str, Tensor] = field(default_factory=dict)
    defaulted: Counter[str] = field(default_factory=Counter)
    values: dict[str, Any] = field(default_factory=dict)  # folded constants and initializers
    opset: int = 17

    def info(self, name: str) -> Info:
        shape, _, itemsize = self.infos.get(name, (None, "float32", 4))
        return None if shape is None else TensorInfo(shape, itemsize)

    def add_tensor(self, name: str, producer: str | None, role: str) -> None:
        if name in self.tensors:
            return
        shape, dtype, itemsize = self.infos.get(name, (None, "float32", 4))
        size = numel(shape) * itemsize if shape is not None else 0
        self.tensors[name] = Tensor(name, size, producer=producer, role=role, shape=shape or (),
                                    dtype=dtype)


def _import_nodes(onnx: Any, graph: Any, scope: _Scope, prefix: str = "") -> list[Op]:
    """The ops of one graph's nodes in file order, weight-only nodes folded into parameters,
    control-flow nodes costed from their bodies (imported recursively).  O(nodes)."""
    nodes = plain_nodes(onnx, graph)
    folded, _ = weight_only_nodes(nodes, scope.weights,
                                  lambda name: scope.infos.get(name, (None,))[0] is not None)
    ops: list[Op] = []
    for k, (node, op_id) in enumerate(zip(nodes, op_ids(nodes), strict=True)):
        op_id = prefix + op_id
        outputs = [t for t in node.outputs if t]
        if k in folded:
            for t in outputs:
                scope.add_tensor(t, None, "parameter")
            continue
        for t in outputs:
            scope.add_tensor(t, op_id, "output" if t in scope.graph_outputs else "activation")
        ops.append(_node_op(onnx, graph.node[k], node, op_id, scope))
    return ops


def _node_op(onnx: Any, proto: Any, node: PlainNode, op_id: str, scope: _Scope) -> Op:
    inputs = [t for t in node.inputs if t]
    outputs = [t for t in node.outputs if t]
    kind, rule = RULES.get(node.op_type, (kind_of(node.op_type), None))
    ins, outs = [scope.info(t) for t in inputs], [scope.info(t) for t in outputs]
    if node.op_type == "Conv" and len(ins) > 1 and ins[1] is not None and len(
            ins[1].shape) != 4:
        kind = f"conv{max(1, len(ins[1].shape) - 2)}d"
    attrs = _vocabulary(node, canonical_kind(kind), scope)
    if node.op_type in CONTROL_FLOW and node.domain in ("", "ai.onnx"):
        op = _control_node(onnx, proto, node, op_id, scope, attrs)
        if op is not None:
            return op
        bodies = body_ops(proto, op_id, lambda body, pre: _import_body(onnx, body, scope, pre))
        cost: ShapeCost | None
        cost, extra = control_flow_cost(node.op_type, bodies, _repeats(node, scope))
        attrs.update(extra)
    else:
        cost = rule(ins, outs, attrs) if rule is not None else None
    if cost is not None and max(cost.flops, cost.bytes_read, cost.bytes_written) > 2**62:
        cost = None  # absurd sizes from a corrupt file: treat as unknown
    attrs["onnx_op_type"] = node.op_type
    if node.domain not in ("", "ai.onnx"):
        attrs["onnx_domain"] = node.domain
    if node.op_type in VIEW_OP_TYPES:
        attrs["view"] = True
    if cost is None:
        why = "unknown op type" if rule is None else "shapes unknown"
        scope.defaulted[f"{node.op_type or '?'} ({why})"] += 1
        cost = default_cost(ins, outs)
        attrs["cost"] = "default"
    return Op(op_id, kind=kind, device="gpu", flops=float(cost.flops),
              bytes_read=int(cost.bytes_read), bytes_written=int(cost.bytes_written),
              inputs=tuple(inputs), outputs=tuple(outputs), thread_blocks=int(cost.thread_blocks),
              attrs=attrs)


def _vocabulary(node: PlainNode, kind: str, scope: _Scope) -> dict[str, Any]:
    """The node's attributes in the op vocabulary (:mod:`workbench.io.onnx.attrs`); a node of
    a custom domain keeps its own."""
    if node.domain not in ("", "ai.onnx"):
        return dict(node.attrs)

    def shape(name: str) -> tuple[int, ...] | None:
        info = scope.info(name) if name else None
        return None if info is None else tuple(info.shape)

    outputs = [t for t in node.outputs if t]
    view = Node(node.inputs, [shape(t) for t in node.inputs], [shape(t) for t in outputs],
                scope.values, scope.opset,
                [scope.infos.get(t, (None, "float32", 4))[1] for t in outputs],
                tuple(node.outputs))
    return vocabulary_attrs(node.op_type, kind, node.attrs, view)


def _repeats(node: PlainNode, scope: _Scope) -> int | None:
    """A ``Loop``'s constant trip count or a ``Scan``'s sequence length; None if unknown."""
    if node.op_type == "Loop":
        trips = scope.ints.get(node.inputs[0]) if node.inputs and node.inputs[0] else None
        if isinstance(trips, int) and trips < 0:
            raise FormatError(one_line(f"Loop node {node.name or node.op_type!r}: trip count "
                                       f"M={trips} is negative"))
        return trips
    if node.op_type == "Scan":
        n_scan = node.attrs.get("num_scan_inputs")
        if not isinstance(n_scan, int) or not 0 < n_scan <= len(node.inputs):
            return None
        first = scope.info(node.inputs[len(node.inputs) - n_scan])
        axes = node.attrs.get("scan_input_axes") or [0]
        axis = axes[0] if isinstance(axes, list) and axes and isinstance(axes[0], int) else 0
        if first is None or not -len(first.shape) <= axis < len(first.shape):
            return None
        return first.shape[axis]
    return None


def _control_node(onnx: Any, proto: Any, node: PlainNode, op_id: str, scope: _Scope,
                  attrs: dict[str, Any]) -> Op | None:
    """The ``case_of``/``while`` op of a control-flow node with its bodies as sub-graphs; None
    when they do not fit the node (the caller then flattens them)."""
    try:
        bodies = body_graphs(proto, lambda body, name: _import_subgraph(onnx, body, scope,
                                                                        f"{op_id}/{name}"))
        return control_op(node.op_type, op_id, node.inputs, [t for t in node.outputs if t],
                          {**attrs, "onnx_op_type": node.op_type}, bodies,
                          _repeats(node, scope))
    except (ValueError, GraphError):
        return None


def _import_subgraph(onnx: Any, body: Any, outer: _Scope, name: str) -> Body:
    """A body as a Graph: declared inputs (``role="input"``), initializers and folded weights
    (``parameter``), and the outer values it reads, captured by name as further inputs."""
    infos = {**outer.infos, **value_infos(onnx, body)}
    inits = [text_of(t.name) for t in body.initializer if t.name]
    declared = [text_of(vi.name) for vi in body.input if vi.name]
    outs = list(dict.fromkeys(text_of(vi.name) for vi in body.output if vi.name))
    scope = _Scope(infos, outer.weights | set(inits), {**outer.ints, **small_ints(onnx, body)},
                   frozenset(outs), defaulted=outer.defaulted, values=outer.values,
                   opset=outer.opset)
    for t in declared:
        scope.add_tensor(t, None, "input")
    for t in inits:
        scope.add_tensor(t, None, "parameter")
    ops = _import_nodes(onnx, body, scope)
    captured = []
    for t in [*(x for op in ops for x in op.inputs), *outs]:
        if t not in scope.tensors:
            scope.add_tensor(t, None, "input")
            captured.append(t)
    graph = Graph(ops, scope.tensors.values(), outputs=outs, name=name)
    return Body(graph, declared, outs, captured)


def _import_body(onnx: Any, body: Any, outer: _Scope, prefix: str) -> list[Op]:
    """A body graph's ops: outer-scope values are visible, outer weights stay weights."""
    infos = {**outer.infos, **value_infos(onnx, body)}
    weights = outer.weights | {text_of(t.name) for t in body.initializer}
    scope = _Scope(infos, weights, {**outer.ints, **small_ints(onnx, body)},
                   defaulted=outer.defaulted, values=outer.values, opset=outer.opset)
    return _import_nodes(onnx, body, scope, prefix)


def _build(onnx: Any, model: Any, path: Path, failed: str, found: StaticShapes) -> Graph:
    g = model.graph
    # in the file's order (a set's order changes with the process's string hashing)
    initializers = list(dict.fromkeys(text_of(t.name) for t in g.initializer))
    graph_outputs = [text_of(vi.name) for vi in g.output if vi.name]
    infos = value_infos(onnx, g)
    infos.update(found.infos)
    weights = set(initializers)
    scope = _Scope(infos, weights, small_ints(onnx, g), frozenset(graph_outputs))
    for vi in g.input:
        name = text_of(vi.name)
        if name:
            scope.add_tensor(name, None, "parameter" if name in weights else "input")
    for name in initializers:
        if name:
            scope.add_tensor(name, None, "parameter")
    scope.opset = _opset(model)
    scope.values = _weights(onnx, model, scope, path, found.values)
    ops = _import_nodes(onnx, g, scope)
    if scope.defaulted:
        warn_line(defaulted_text(path.name, scope.defaulted, failed), str(path))
    outputs = list(dict.fromkeys(graph_outputs))
    inputs = [text_of(vi.name) for vi in g.input
              if vi.name and text_of(vi.name) not in weights]
    read = {t for op in ops for t in op.inputs} | set(outputs)
    program = Weights({t: v for t, v in scope.values.items() if t in read}, inputs, outputs)
    return Graph(ops, scope.tensors.values(), outputs=outputs,
                 name=graph_name(text_of(g.name), path), program=program)


def _opset(model: Any) -> int:
    """The model's default-domain opset (17 when the file names none)."""
    versions = [int(o.version) for o in model.opset_import
                if text_of(o.domain) in ("", "ai.onnx")]
    return max(versions, default=17)


def _weights(onnx: Any, model: Any, scope: _Scope, path: Path,
             known: Mapping[str, Any]) -> dict[str, Any]:
    """The value of every initializer or folded constant a kept node of the main graph reads
    (or the graph returns), for the graph's :class:`~workbench.values.program.Weights`
    (:mod:`workbench.io.onnx.weights`); folded nodes no kept node needs are not evaluated."""
    g = model.graph
    nodes = plain_nodes(onnx, g)
    folded, _ = weight_only_nodes(nodes, scope.weights,
                                  lambda name: scope.infos.get(name, (None,))[0] is not None)
    needed = {t for k, n in enumerate(nodes) if k not in folded for t in n.inputs if t}
    needed |= scope.graph_outputs
    return parameter_values(onnx, g, nodes, folded, needed,
                            lambda name: scope.infos.get(name, (None,))[0],
                            opsets=list(model.opset_import), path=path, known=known)


__all__ = ["CONSTANT_OP_TYPES", "GENERIC_NAMES", "RULES", "VIEW_COST", "VIEW_OP_TYPES", "Info",
           "ShapeCost", "TensorInfo", "conv_cost", "copy_cost", "default_cost",
           "elementwise_cost", "global_pool_cost", "graph_name", "load_onnx", "matmul_cost",
           "window_cost"]
