"""ONNX op type -> (op kind, shape-cost rule): :data:`RULES`.

The cost functions themselves (FLOPs, bytes and thread blocks from tensor shapes, the builders'
conventions) live in :mod:`workbench.values.shape_costs`, shared with :mod:`workbench.io.torch.fx`,
:mod:`workbench.io.traces.execution_trace` and the model builders; this module adapts them to ONNX
nodes.  The rules read the node's attributes in the op vocabulary
(:mod:`workbench.ops.attrs`: ``kernel``, ``trans_a``, ``window``), as
:mod:`workbench.io.onnx.attrs` converted them.  Every rule is O(rank of its tensors).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.ops import ONNX_ALIASES, OPS
from workbench.values.shape_costs import VIEW_COST as VIEW_COST  # re-exported
from workbench.values.shape_costs import Info as Info  # re-exported
from workbench.values.shape_costs import Rule as Rule  # re-exported
from workbench.values.shape_costs import ShapeCost as ShapeCost  # re-exported
from workbench.values.shape_costs import TensorInfo as TensorInfo  # re-exported
from workbench.values.shape_costs import (
    blocks,
    conv_cost,
    copy_cost,
    einsum_cost,
    elementwise_cost,
    global_pool_cost,
    matmul_cost,
    numel,
    recurrent_cost,
    resize_cost,
    total_bytes,
    window_cost,
)
from workbench.values.shape_costs import default_cost as default_cost  # re-exported

MAX_ELEMENTS = 1 << 53  # larger tensors are treated as "shape unknown" (corrupt or absurd files)

# ------------------------------------------------------------------------- rules per ONNX op type
def _first(seq: Sequence[Info]) -> Info:
    return seq[0] if seq else None


def _conv(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return conv_cost(_first(ins), ins[1] if len(ins) > 1 else None, _first(outs), ins, outs)


def _conv_t(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return conv_cost(_first(ins), ins[1] if len(ins) > 1 else None, _first(outs), ins, outs,
                     transpose=True)


def _gemm(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    """Gemm ``op(A) @ op(B) + C`` with ``A`` 2-D: inner size is ``A[0]`` if ``trans_a`` else
    ``A[1]``."""
    x = _first(ins)
    if x is None or len(x.shape) != 2:
        return None
    return matmul_cost(x.shape[0] if a.get("trans_a") else x.shape[1], _first(outs), ins, outs)


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
    """LRN: ``2*window + 3`` FLOPs per element (square and sum over the window, scale, power,
    divide)."""
    size = a.get("window", 1)
    size = size if isinstance(size, int) and 0 < size < MAX_ELEMENTS else 1
    return elementwise_cost(_first(outs), ins, outs, per_element=2 * size + 3)


def _pool(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    kernel = a.get("kernel")
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
    return ShapeCost(0, total_bytes(outs[:1]) + total_bytes(ins[1:]), total_bytes(outs),
                     blocks(y.elements))


def _einsum(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    """A two-operand Einsum: :func:`~workbench.values.shape_costs.einsum_cost`."""
    return einsum_cost(str(a.get("equation", "")), ins, outs)


def _resize(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    """Resize/Upsample: :func:`~workbench.values.shape_costs.resize_cost` in its mode."""
    return resize_cost(_first(ins), _first(outs), str(a.get("mode") or "nearest"), ins, outs)


def _recurrent(kind: str) -> Rule:
    """LSTM / GRU / RNN: :func:`~workbench.values.shape_costs.recurrent_cost` of the node's
    vocabulary attributes (``hidden_size``, ``direction``, ``layout`` as ``batch_first``)."""
    def rule(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
        return recurrent_cost(kind, a, ins, outs)
    return rule


def _view(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return VIEW_COST


def _camel_to_snake(name: str) -> str:
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower() or "op"


def kind_of(op_type: str) -> str:
    """The op kind an ONNX op type imports as: the table's alias, else its snake_case spelling.

    >>> kind_of("Conv"), kind_of("LeakyRelu")
    ('conv2d', 'leaky_relu')
    """
    return ONNX_ALIASES.get(op_type) or _camel_to_snake(op_type)


#: The cost rule of each ONNX op type named here (:data:`RULES` adds the kind: the alias in
#: :data:`workbench.ops.ONNX_ALIASES`, else the type's snake_case spelling; :func:`kind_of`).
_COSTS: dict[str, Rule] = {
    "Conv": _conv,
    "ConvTranspose": _conv_t,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "Sum": _variadic,
    "Max": _variadic,
    "Min": _variadic,
    "Mean": _variadic,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "GlobalAveragePool": _global,
    "GlobalMaxPool": _global,
    "LRN": _lrn,
    "Resize": _resize,
    "Upsample": _resize,
    "Gather": _gather,
    "GatherElements": _gather,
    "Einsum": _einsum,
    "LSTM": _recurrent(kind_of("LSTM")),
    "GRU": _recurrent(kind_of("GRU")),
    "RNN": _recurrent(kind_of("RNN")),
    "Slice": _gather,
    "Reshape": _view,
    "Flatten": _view,
    "Squeeze": _view,
    "Unsqueeze": _view,
    "Identity": _view,
    "Dropout": _view,  # identity at inference
    "Constant": _view,
    "ConstantOfShape": _view,
    "Shape": _view,
    "Size": _view,
}
#: ONNX op types that copy their inputs (:func:`_copy`) and that reduce (:func:`_global`).
_COPIES = "Concat Split Transpose Pad Tile Expand Cast DepthToSpace SpaceToDepth".split()
_REDUCTIONS = ("ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL2 ReduceSumSquare "
               "ArgMax ArgMin").split()
#: ONNX op types costed per output element (:func:`_unary`): every ONNX type a kind of the table
#: lists (``OpKind.onnx``) when the kind counts FLOPs per element (``flops_per_element``:
#: arithmetic and simple maps 1, clip and leaky relu 2, exp-based maps 3, sigmoid 4, tanh 5,
#: gelu 8; batch norm 2, layer/instance/group norm 8, softmax 5, log-softmax 6) and the type has
#: no rule of its own above.
_PER_ELEMENT: dict[str, tuple[str, Rule]] = {
    t: (name, _unary(info.flops_per_element)) for name, info in OPS.items()
    if info.flops_per_element is not None for t in info.onnx if t not in _COSTS}

#: ONNX op type -> (op kind, cost rule).
RULES: dict[str, tuple[str, Rule]] = {
    **{t: (kind_of(t), rule) for t, rule in _COSTS.items()},
    **_PER_ELEMENT,
    **{t: (kind_of(t), _copy) for t in _COPIES},
    **{t: (kind_of(t), _global) for t in _REDUCTIONS}}

VIEW_OP_TYPES = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})
CONSTANT_OP_TYPES = frozenset({"Constant", "ConstantOfShape"})

