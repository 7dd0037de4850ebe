"""Shape-cost rules: what an op costs from its tensor shapes, keyed by ONNX op type.

A multiply-add is two FLOPs, ``bytes_read`` is every input tensor the op reads (weights included),
``bytes_written`` its outputs, ``thread_blocks`` is the implicit-GEMM tile count for convolutions
and matmuls and ``ceil(output elements / 1024)`` for everything else (the conventions of
:mod:`workbench.models._layers`).  The rules are kept in one table, :data:`RULES`, keyed by ONNX op
type; the same shape-cost functions serve :mod:`workbench.io.fx` and
:mod:`workbench.io.execution_trace`.  Every rule is O(rank of its tensors).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.models._layers import ACTIVATION_FLOPS, _blocks, _gemm_blocks, numel

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

