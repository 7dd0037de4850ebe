"""ONNX import: one op per ONNX node, costs derived from the shapes ONNX shape inference finds.

:func:`load_onnx` reads a ``.onnx`` file (the ``onnx`` package is imported inside the function),
runs ``onnx.shape_inference.infer_shapes`` and turns every node, in file order, into an
:class:`~workbench.graph.Op`.  Tensors are the ONNX values: their byte size is the number of
elements times the element size of their ONNX data type (float32 = 4 bytes).  Initializers are
``role="parameter"``, the other graph inputs ``role="input"``, the graph outputs ``role="output"``.
Outputs of ``Constant``/``ConstantOfShape`` nodes are weights made at run time, so they are
parameters too.

Costs follow the conventions of :mod:`workbench.models._layers` (the model builders): a
multiply-add is two FLOPs, ``bytes_read`` is every input tensor the op reads (weights included),
``bytes_written`` its outputs, ``thread_blocks`` is the implicit-GEMM tile count for convolutions
and matmuls and ``ceil(output elements / 1024)`` for everything else.  The rules are kept in one
table, :data:`RULES`, keyed by ONNX op type; the same shape-cost functions serve
:mod:`workbench.io.fx`.

Unknown op types, and known ones whose shapes inference could not find, get a default cost (bytes
from whatever shapes are known, FLOPs = output elements), ``attrs["cost"] = "default"`` and one
warning per file that lists them with counts.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import FormatError, GraphError, OptionError
from workbench.graph import Graph, Op, Tensor
from workbench.models._layers import ACTIVATION_FLOPS, _blocks, _gemm_blocks, numel

ONNX_MISSING = "reading .onnx needs the onnx package: pip install 'schedule-workbench[onnx]'"
MAX_ELEMENTS = 1 << 53  # larger tensors are treated as "shape unknown" (corrupt or absurd files)


# ================================================================================ shape-cost rules
@dataclass(frozen=True)
class TensorInfo:
    """What a cost rule knows of one tensor: its shape and bytes per element."""

    shape: tuple[int, ...]
    itemsize: int = 4

    @property
    def elements(self) -> int:
        return numel(self.shape)

    @property
    def nbytes(self) -> int:
        return self.elements * self.itemsize


Info = TensorInfo | None  # None: the shape is unknown


@dataclass(frozen=True)
class ShapeCost:
    flops: float
    bytes_read: int
    bytes_written: int
    thread_blocks: int


Rule = Callable[[Sequence[Info], Sequence[Info], Mapping[str, Any]], ShapeCost | None]


def _total(infos: Sequence[Info]) -> int:
    return sum(t.nbytes for t in infos if t is not None)


def _need(*infos: Info) -> bool:
    return all(t is not None for t in infos)


def conv_cost(x: Info, w: Info, y: Info, ins: Sequence[Info], outs: Sequence[Info], *,
              transpose: bool = False) -> ShapeCost | None:
    """Convolution ``x (N, C, *S) * w -> y (N, M, *S')``: FLOPs = ``2 * y elements * w[1:]
    elements`` (``w`` is ``(M, C/groups, *k)``, so this is ``2*N*M*prod(S')*(C/groups)*prod(k)``;
    strides, pads, dilations and groups act through the shapes).  Transposed: ``w`` is
    ``(C, M/groups, *k)`` and every *input* element does ``w[1:]`` multiply-adds.  Thread blocks:
    implicit GEMM over ``(N*prod(S')) x M``."""
    if x is None or w is None or y is None or len(y.shape) < 2 or len(w.shape) < 2:
        return None
    macs = (x.elements if transpose else y.elements) * numel(w.shape[1:])
    cout = y.shape[1]
    rows = y.elements // cout if cout else 0
    return ShapeCost(2 * macs, _total(ins), _total(outs), _gemm_blocks(rows, cout))


def matmul_cost(k: int, y: Info, ins: Sequence[Info], outs: Sequence[Info]) -> ShapeCost | None:
    """Matrix product with inner size ``k`` and output ``(..., M, N)``: FLOPs = ``2 * y elements
    * k``; thread blocks ``batch * ceil(M/64) * ceil(N/64)`` (a 1-D output is ``1 x N``)."""
    if y is None:
        return None
    shape = y.shape
    m = shape[-2] if len(shape) >= 2 else 1
    n = shape[-1] if shape else 1
    return ShapeCost(2 * y.elements * k, _total(ins), _total(outs),
                     _gemm_blocks(m, n, numel(shape[:-2])))


def elementwise_cost(y: Info, ins: Sequence[Info], outs: Sequence[Info], *,
                     per_element: float = 1.0, count: int = 1) -> ShapeCost | None:
    """``per_element * count`` FLOPs per output element (``count`` = ``k - 1`` for a sum of ``k``
    tensors); reads every input (broadcast inputs read their own size), writes the outputs."""
    if y is None:
        return None
    return ShapeCost(per_element * count * y.elements, _total(ins), _total(outs),
                     _blocks(y.elements))


def window_cost(y: Info, window: int, ins: Sequence[Info],
                outs: Sequence[Info]) -> ShapeCost | None:
    """Pooling: one compare/add per window element per output element."""
    if y is None:
        return None
    return ShapeCost(y.elements * window, _total(ins), _total(outs), _blocks(y.elements))


def global_pool_cost(x: Info, ins: Sequence[Info], outs: Sequence[Info]) -> ShapeCost | None:
    """Global pooling / full reductions: one FLOP per input element, a grid over the input."""
    if x is None:
        return None
    return ShapeCost(x.elements, _total(ins), _total(outs), _blocks(x.elements))


def copy_cost(y: Info, ins: Sequence[Info], outs: Sequence[Info]) -> ShapeCost | None:
    """Data movement only (concat, transpose, split, pad, ...): no FLOPs."""
    if y is None:
        return None
    return ShapeCost(0, _total(ins), _total(outs), _blocks(y.elements))


VIEW_COST = ShapeCost(0, 0, 0, 1)  # reshape-likes and constants: nothing moves


def default_cost(ins: Sequence[Info], outs: Sequence[Info]) -> ShapeCost:
    """Unknown op or shapes: bytes from the known shapes, FLOPs = output elements."""
    elements = sum(t.elements for t in outs if t is not None)
    return ShapeCost(elements, _total(ins), _total(outs), _blocks(elements))


# ------------------------------------------------------------------------- rules per ONNX op type
def _first(seq: Sequence[Info]) -> Info:
    return seq[0] if seq else None


def _conv(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return conv_cost(_first(ins), ins[1] if len(ins) > 1 else None, _first(outs), ins, outs)


def _conv_t(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return conv_cost(_first(ins), ins[1] if len(ins) > 1 else None, _first(outs), ins, outs,
                     transpose=True)


def _gemm(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    """Gemm ``op(A) @ op(B) + C`` with ``A`` 2-D: inner size is ``A[0]`` if ``transA`` else
    ``A[1]``."""
    x = _first(ins)
    if x is None or len(x.shape) != 2:
        return None
    return matmul_cost(x.shape[0] if a.get("transA") else x.shape[1], _first(outs), ins, outs)


def _matmul(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    x = _first(ins)
    if x is None or not x.shape:
        return None
    return matmul_cost(x.shape[-1], _first(outs), ins, outs)


def _unary(per_element: float) -> Rule:
    def rule(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
        return elementwise_cost(_first(outs), ins, outs, per_element=per_element)
    return rule


def _variadic(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return elementwise_cost(_first(outs), ins, outs, count=max(1, len(ins) - 1))


def _lrn(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    """LRN: ``2*size + 3`` FLOPs per element (square and sum over the window, scale, power,
    divide)."""
    size = a.get("size", 1)
    size = size if isinstance(size, int) and 0 < size < MAX_ELEMENTS else 1
    return elementwise_cost(_first(outs), ins, outs, per_element=2 * size + 3)


def _pool(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    kernel = a.get("kernel_shape")
    if not isinstance(kernel, list) or not all(isinstance(k, int) and k > 0 for k in kernel):
        return None
    window = numel(kernel)
    return None if window > MAX_ELEMENTS else window_cost(_first(outs), window, ins, outs)


def _global(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return global_pool_cost(_first(ins), ins, outs)


def _copy(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return copy_cost(_first(outs), ins, outs)


def _gather(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    """Gather/Slice read only what they copy: output bytes + the index inputs."""
    y = _first(outs)
    if y is None:
        return None
    return ShapeCost(0, _total(outs[:1]) + _total(ins[1:]), _total(outs), _blocks(y.elements))


def _view(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return VIEW_COST


def _camel_to_snake(name: str) -> str:
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower() or "op"


#: ONNX op type -> (op kind, cost rule).  Elementwise FLOPs per element: 1 for arithmetic and
#: simple maps, :data:`~workbench.models._layers.ACTIVATION_FLOPS` for sigmoid (4), tanh (5) and
#: gelu (8), 2 for two-step maps (clip, leaky relu), 3 for exp-based ones (elu, softplus).
#: Normalisations: batch norm 2 FLOPs per element (folded ``x*a + b``), layer/instance/group norm 8,
#: softmax 5, log-softmax 6 (as the builders count them).
RULES: dict[str, tuple[str, Rule]] = {
    "Conv": ("conv2d", _conv),
    "ConvTranspose": ("conv_transpose", _conv_t),
    "Gemm": ("matmul", _gemm),
    "MatMul": ("matmul", _matmul),
    "Sum": ("add", _variadic),
    "Max": ("max", _variadic),
    "Min": ("min", _variadic),
    "Mean": ("mean", _variadic),
    "MaxPool": ("maxpool", _pool),
    "AveragePool": ("avgpool", _pool),
    "GlobalAveragePool": ("global_avgpool", _global),
    "GlobalMaxPool": ("global_maxpool", _global),
    "LRN": ("lrn", _lrn),
    "BatchNormalization": ("batchnorm", _unary(2)),
    "LayerNormalization": ("layernorm", _unary(8)),
    "InstanceNormalization": ("instancenorm", _unary(8)),
    "GroupNormalization": ("groupnorm", _unary(8)),
    "Softmax": ("softmax", _unary(5)),
    "LogSoftmax": ("log_softmax", _unary(6)),
    "Gather": ("gather", _gather),
    "Slice": ("slice", _gather),
    "Reshape": ("reshape", _view),
    "Flatten": ("flatten", _view),
    "Squeeze": ("squeeze", _view),
    "Unsqueeze": ("unsqueeze", _view),
    "Identity": ("identity", _view),
    "Dropout": ("dropout", _view),  # identity at inference
    "Constant": ("constant", _view),
    "ConstantOfShape": ("constant", _view),
    "Shape": ("shape", _view),
    "Size": ("size", _view),
}
for _op_type, _flops in {
    "Add": 1, "Sub": 1, "Mul": 1, "Div": 1, "Pow": 1, "Mod": 1, "Where": 1, "Relu": 1,
    "Exp": 1, "Log": 1, "Sqrt": 1, "Erf": 1, "Reciprocal": 1, "Neg": 1, "Abs": 1, "Floor": 1,
    "Ceil": 1, "Round": 1, "Sign": 1, "Sin": 1, "Cos": 1, "Not": 1, "And": 1, "Or": 1, "Xor": 1,
    "Equal": 1, "Greater": 1, "Less": 1, "GreaterOrEqual": 1, "LessOrEqual": 1, "IsNaN": 1,
    "ThresholdedRelu": 1, "Clip": 2, "LeakyRelu": 2, "PRelu": 2, "HardSigmoid": 3, "Elu": 3,
    "Selu": 3, "Celu": 3, "Softplus": 3, "Softsign": 3, "HardSwish": 4,
    "Sigmoid": ACTIVATION_FLOPS["sigmoid"], "Tanh": ACTIVATION_FLOPS["tanh"],
    "Gelu": ACTIVATION_FLOPS["gelu"],
}.items():
    RULES[_op_type] = (_camel_to_snake(_op_type), _unary(_flops))
for _op_type in ("Concat", "Split", "Transpose", "Pad", "Tile", "Expand", "Cast",
                 "DepthToSpace", "SpaceToDepth"):
    RULES[_op_type] = (_camel_to_snake(_op_type), _copy)
for _op_type in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
                 "ReduceSumSquare", "ArgMax", "ArgMin"):
    RULES[_op_type] = (_camel_to_snake(_op_type), _global)

VIEW_OP_TYPES = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})
CONSTANT_OP_TYPES = frozenset({"Constant", "ConstantOfShape"})


# ================================================================================ the loader
def load_onnx(path: str | Path, *, dims: Mapping[str, int] | None = None) -> Graph:
    """Read an ONNX model into a :class:`~workbench.graph.Graph`.

    ``dims`` gives values for symbolic input dimensions (``{"batch": 8}``); the others are set to
    1 (with a warning) so that shape inference can reach every node.  Op ids are the node names
    verbatim; unnamed nodes get ``<op_type>_<k>``.  Complexity: O(nodes + values) after ONNX's own
    shape inference.  Every problem with the file is a one-line
    :class:`~workbench.errors.FormatError` naming it.
    """
    try:
        import onnx
    except ImportError:
        raise FormatError(ONNX_MISSING) from None
    path = Path(path)
    for key, value in (dims or {}).items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < MAX_ELEMENTS:
            raise OptionError(f"dims[{key!r}] must be a positive integer, got {value!r}")
    model = _read_model(onnx, path)
    _fix_symbolic_dims(model, dims or {}, path)
    failed = ""
    try:
        # data_prop folds Shape -> Gather -> Reshape chains; a model that trips ONNX's own checker
        # falls back to the shapes stored in the file (so any exception type is acceptable here).
        model = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False,
                                                  data_prop=True)
    except Exception as exc:  # noqa: BLE001 - third-party inference on an arbitrary file
        failed = f"shape inference failed ({type(exc).__name__})"
    try:
        return _build(onnx, model, path, failed)
    except GraphError as exc:
        raise GraphError(_one_line(f"{path}: {exc}")) from None


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _s(value: Any) -> str:
    """A protobuf string field as text (a corrupt file can hold invalid UTF-8, read as bytes)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _read_model(onnx: Any, path: Path) -> Any:
    from google.protobuf.message import DecodeError

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not data:
        raise FormatError(f"{path}: empty file (not an ONNX model)")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError, RecursionError) as exc:
        raise FormatError(_one_line(f"{path}: not an ONNX model or truncated file "
                                    f"({type(exc).__name__})")) from None
    if not model.HasField("graph") or not (model.ir_version or model.opset_import):
        raise FormatError(f"{path}: not an ONNX model (no graph or version found)")
    return model


def _fix_symbolic_dims(model: Any, dims: Mapping[str, int], path: Path) -> None:
    """Set symbolic or missing input dimensions to ``dims[name]`` (default 1), in place."""
    initializers = {_s(t.name) for t in model.graph.initializer}
    defaulted: list[str] = []
    for vi in model.graph.input:
        if _s(vi.name) in initializers or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        for d in tt.shape.dim:
            if d.WhichOneof("value") == "dim_value" and d.dim_value >= 0:
                continue
            name = _s(d.dim_param) if d.WhichOneof("value") == "dim_param" else "?"
            value = dims.get(name)
            if value is None:
                value = 1
                if name not in defaulted:
                    defaulted.append(name)
            d.dim_value = int(value)
    if defaulted:
        warnings.warn(_one_line(f"{path.name}: symbolic input dimensions set to 1: "
                                f"{', '.join(map(repr, defaulted))} (pass dims={{...}} to choose)"),
                      stacklevel=3)


def _tensor_type(onnx: Any, elem_type: int) -> tuple[str, int] | None:
    """(dtype name, bytes per element) of an ONNX data type, None if unknown."""
    if elem_type in (0, onnx.TensorProto.STRING):
        return None
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem_type)
    except Exception:  # noqa: BLE001 - unknown or corrupt data-type code
        return None
    return dtype.name, max(1, dtype.itemsize)


def _shape_of(dims: Sequence[Any]) -> tuple[int, ...] | None:
    shape = []
    for d in dims:
        if isinstance(d, int):
            value = d
        elif d.WhichOneof("value") == "dim_value":
            value = d.dim_value
        else:
            return None
        if value < 0:
            return None
        shape.append(value)
    return tuple(shape) if numel(shape) <= MAX_ELEMENTS else None


def _value_infos(onnx: Any, model: Any) -> dict[str, tuple[tuple[int, ...] | None, str, int]]:
    """Value name -> (shape or None, dtype, itemsize) from initializers and value infos."""
    table: dict[str, tuple[tuple[int, ...] | None, str, int]] = {}
    g = model.graph
    for vi in (*g.value_info, *g.input, *g.output):
        if not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        kind = _tensor_type(onnx, tt.elem_type) or ("float32", 4)
        shape = _shape_of(tt.shape.dim) if tt.HasField("shape") else None
        old = table.get(_s(vi.name))
        if old is None or old[0] is None:
            table[_s(vi.name)] = (shape, *kind)
    for init in g.initializer:
        kind = _tensor_type(onnx, init.data_type) or ("float32", 4)
        table[_s(init.name)] = (_shape_of(list(init.dims)), *kind)
    return table


def _plain(onnx: Any, value: Any) -> Any:
    """An ONNX attribute value as plain Python (lists, numbers, strings)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (int, float, str, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(onnx, v) for v in value]
    if isinstance(value, onnx.TensorProto):
        dims = list(value.dims)
        if value.data_location != onnx.TensorProto.EXTERNAL and 0 <= numel(dims) <= 16 and all(
                d >= 0 for d in dims):
            try:
                return onnx.numpy_helper.to_array(value).tolist()
            except Exception:  # noqa: BLE001 - corrupt tensor payload
                pass
        return f"<tensor {dims}>"
    if isinstance(value, onnx.GraphProto):
        return f"<graph {_s(value.name)}>"
    return f"<{type(value).__name__}>"


def _attrs(onnx: Any, node: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attr in node.attribute:
        try:
            out[_s(attr.name)] = _plain(onnx, onnx.helper.get_attribute_value(attr))
        except Exception:  # noqa: BLE001 - unknown or corrupt attribute type
            out[_s(attr.name)] = None
    return out


@dataclass(frozen=True)
class _Node:
    """One ONNX node as plain Python values."""

    name: str
    op_type: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any]


def _nodes(onnx: Any, graph: Any) -> list[_Node]:
    return [_Node(_s(n.name), _s(n.op_type), _s(n.domain), tuple(_s(t) for t in n.input),
                  tuple(_s(t) for t in n.output), _attrs(onnx, n)) for n in graph.node]


def _op_ids(nodes: Sequence[_Node]) -> list[str]:
    """Node names verbatim; unnamed (or repeated) nodes get ``<op_type>_<k>`` / ``<name>_<k>``."""
    taken = {n.name for n in nodes if n.name}
    seen: set[str] = set()
    counters: Counter[str] = Counter()
    ids = []
    for n in nodes:
        if n.name and n.name not in seen:
            op_id = n.name
        else:
            base = n.name or n.op_type or "node"
            while True:
                op_id = f"{base}_{counters[base]}"
                counters[base] += 1
                if op_id not in taken and op_id not in seen:
                    break
        seen.add(op_id)
        ids.append(op_id)
    return ids


def _build(onnx: Any, model: Any, path: Path, failed: str) -> Graph:
    g = model.graph
    infos = _value_infos(onnx, model)

    def info(name: str) -> Info:
        shape, _, itemsize = infos.get(name, (None, "float32", 4))
        return None if shape is None else TensorInfo(shape, itemsize)

    nodes = _nodes(onnx, g)
    initializers = {_s(t.name) for t in g.initializer}
    graph_outputs = [_s(vi.name) for vi in g.output if vi.name]
    constants = {o for n in nodes if n.op_type in CONSTANT_OP_TYPES for o in n.outputs if o}
    ops: list[Op] = []
    tensors: dict[str, Tensor] = {}

    def add_tensor(name: str, producer: str | None, role: str) -> None:
        if name in tensors:
            return
        shape, dtype, itemsize = infos.get(name, (None, "float32", 4))
        size = numel(shape) * itemsize if shape is not None else 0
        tensors[name] = Tensor(name, size, producer=producer, role=role, shape=shape or (),
                               dtype=dtype)

    for vi in g.input:
        name = _s(vi.name)
        if name:
            add_tensor(name, None, "parameter" if name in initializers else "input")
    for name in initializers:
        if name:
            add_tensor(name, None, "parameter")
    defaulted: Counter[str] = Counter()
    for node, op_id in zip(nodes, _op_ids(nodes), strict=True):
        inputs = [t for t in node.inputs if t]
        outputs = [t for t in node.outputs if t]
        for t in outputs:
            role = "parameter" if t in constants else (
                "output" if t in graph_outputs else "activation")
            add_tensor(t, op_id, role)
        attrs = dict(node.attrs)
        kind, rule = RULES.get(node.op_type, (_camel_to_snake(node.op_type), None))
        ins, outs = [info(t) for t in inputs], [info(t) for t in outputs]
        cost = rule(ins, outs, attrs) if rule is not None else None
        if cost is not None and max(cost.flops, cost.bytes_read, cost.bytes_written) > 2**62:
            cost = None  # absurd sizes from a corrupt file: treat as unknown
        if node.op_type == "Conv" and len(ins) > 1 and ins[1] is not None and len(
                ins[1].shape) != 4:
            kind = f"conv{max(1, len(ins[1].shape) - 2)}d"
        attrs["onnx_op_type"] = node.op_type
        if node.domain not in ("", "ai.onnx"):
            attrs["onnx_domain"] = node.domain
        if node.op_type in VIEW_OP_TYPES:
            attrs["view"] = True
        if cost is None:
            why = "unknown op type" if rule is None else "shapes unknown"
            defaulted[f"{node.op_type or '?'} ({why})"] += 1
            cost = default_cost(ins, outs)
            attrs["cost"] = "default"
        ops.append(Op(op_id, kind=kind, device="gpu", flops=float(cost.flops),
                      bytes_read=int(cost.bytes_read), bytes_written=int(cost.bytes_written),
                      inputs=tuple(inputs), outputs=tuple(outputs),
                      thread_blocks=int(cost.thread_blocks), attrs=attrs))
    if defaulted:
        listed = ", ".join(f"{k} ×{v}" for k, v in sorted(defaulted.items()))
        note = f"; {failed}" if failed else ""
        warnings.warn(_one_line(f"{path.name}: {sum(defaulted.values())} op(s) imported with a "
                                f"default cost (flops = output elements): {listed}{note}"),
                      stacklevel=3)
    name = _s(g.name) or path.stem
    return Graph(ops, tensors.values(), outputs=list(dict.fromkeys(graph_outputs)), name=name)


__all__ = ["RULES", "ShapeCost", "TensorInfo", "conv_cost", "copy_cost", "default_cost",
           "elementwise_cost", "global_pool_cost", "load_onnx", "matmul_cost", "window_cost"]
