"""Shape-cost rules: what an op costs from its tensor shapes (FLOPs, bytes, thread blocks).

The conventions of the model builders (:mod:`workbench.models._layers`) and of the importers
(:mod:`workbench.io.onnx.rules`, :mod:`workbench.io.torch.fx`,
:mod:`workbench.io.traces.execution_trace`), kept in one place: a multiply-add is two FLOPs,
``bytes_read`` is every input tensor the op reads (weights included), ``bytes_written`` its outputs,
``thread_blocks`` is the implicit-GEMM tile count (:data:`GEMM_TILE` square tiles) for convolutions
and matmuls and ``ceil(output elements / ELEMENTS_PER_BLOCK)`` for everything else.  Every rule is
O(rank of its tensors).

>>> conv_cost(TensorInfo((1, 3, 8, 8)), TensorInfo((4, 3, 3, 3)), TensorInfo((1, 4, 8, 8)),
...           [TensorInfo((1, 3, 8, 8))], [TensorInfo((1, 4, 8, 8))]).flops
13824
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

GEMM_TILE = 64  # implicit-GEMM output tile edge (thread_blocks heuristic)
ELEMENTS_PER_BLOCK = 1024  # 256 threads x 4 elements (thread_blocks heuristic)


def numel(shape: Sequence[int]) -> int:
    """Number of elements of a tensor of this shape."""
    return math.prod(shape)


def blocks(elements: int) -> int:
    """Thread blocks of an elementwise-style grid over ``elements``."""
    return max(1, math.ceil(elements / ELEMENTS_PER_BLOCK))


def gemm_blocks(m: int, n: int, batch: int = 1) -> int:
    """Implicit-GEMM thread blocks of an ``m x n`` output, ``batch`` times."""
    return max(1, batch * math.ceil(m / GEMM_TILE) * math.ceil(n / GEMM_TILE))


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


def total_bytes(infos: Sequence[Info]) -> int:
    """Bytes of the tensors whose shapes are known."""
    return sum(t.nbytes for t in infos if t is not None)


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
    return ShapeCost(2 * macs, total_bytes(ins), total_bytes(outs), gemm_blocks(rows, cout))


def matmul_cost(k: int, y: Info, ins: Sequence[Info], outs: Sequence[Info]) -> ShapeCost | None:
    """Matrix product with inner size ``k`` and output ``(..., M, N)``: FLOPs = ``2 * y elements
    * k``; thread blocks ``batch * ceil(M/64) * ceil(N/64)`` (a 1-D output is ``1 x N``)."""
    if y is None:
        return None
    shape = y.shape
    m = shape[-2] if len(shape) >= 2 else 1
    n = shape[-1] if shape else 1
    return ShapeCost(2 * y.elements * k, total_bytes(ins), total_bytes(outs),
                     gemm_blocks(m, n, numel(shape[:-2])))


def elementwise_cost(y: Info, ins: Sequence[Info], outs: Sequence[Info], *,
                     per_element: float = 1.0, count: int = 1) -> ShapeCost | None:
    """``per_element * count`` FLOPs per output element (``count`` = ``k - 1`` for a sum of ``k``
    tensors); reads every input (broadcast inputs read their own size), writes the outputs."""
    if y is None:
        return None
    return ShapeCost(per_element * count * y.elements, total_bytes(ins), total_bytes(outs),
                     blocks(y.elements))


def window_cost(y: Info, window: int, ins: Sequence[Info],
                outs: Sequence[Info]) -> ShapeCost | None:
    """Pooling: one compare/add per window element per output element."""
    if y is None:
        return None
    return ShapeCost(y.elements * window, total_bytes(ins), total_bytes(outs), blocks(y.elements))


def global_pool_cost(x: Info, ins: Sequence[Info], outs: Sequence[Info]) -> ShapeCost | None:
    """Global pooling / full reductions: one FLOP per input element, a grid over the input."""
    if x is None:
        return None
    return ShapeCost(x.elements, total_bytes(ins), total_bytes(outs), blocks(x.elements))


def copy_cost(y: Info, ins: Sequence[Info], outs: Sequence[Info]) -> ShapeCost | None:
    """Data movement only (concat, transpose, split, pad, ...): no FLOPs."""
    if y is None:
        return None
    return ShapeCost(0, total_bytes(ins), total_bytes(outs), blocks(y.elements))


VIEW_COST = ShapeCost(0, 0, 0, 1)  # reshape-likes and constants: nothing moves


def einsum_gemm(equation: str, shapes: Sequence[Sequence[int] | None]) -> dict[str, int] | None:
    """A two-operand ``einsum`` as the batched GEMM it runs: ``{"batch", "m", "k", "n"}``, the
    products of the sizes of the indices in both operands and the output (batch), in the first
    operand and the output only (m), in both operands but not the output, or in one operand only
    and summed (k), and in the second operand and the output only (n); ``None`` for another
    number of operands or unknown shapes.  ``...`` stands for the leading axes (each its own
    index).  FLOPs are ``2·batch·m·k·n``, as ``FlopCounterMode`` counts the ``bmm`` torch runs.
    O(length of the equation).

    >>> einsum_gemm("bhid,bhjd->bhij", [(2, 4, 8, 16), (2, 4, 9, 16)])
    {'batch': 8, 'm': 8, 'k': 16, 'n': 9}
    """
    eq = equation.replace(" ", "")
    lhs, _, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != 2 or len(shapes) < 2 or any(s is None for s in shapes[:2]):
        return None
    sizes: dict[str, int] = {}
    letters: list[list[str]] = []
    for term, shape in zip(terms, shapes[:2], strict=True):
        assert shape is not None
        named = [c for c in term if c != "."]
        idx = named
        if "..." in term:  # the ellipsis stands where it is written
            at, extra = term.index("..."), len(shape) - len(named)
            idx = named[:at] + [f"_{i}" for i in range(extra)] + named[at:]
        if len(idx) != len(shape):
            return None
        for c, n in zip(idx, shape, strict=True):
            sizes[c] = max(sizes.get(c, 1), int(n))
        letters.append(idx)
    a, b = set(letters[0]), set(letters[1])
    if "->" in eq:
        o = {c for c in out if c != "."} | ({c for c in sizes if c.startswith("_")}
                                            if "..." in out else set())
    else:  # implicit output: the indices that occur once
        o = {c for c in sizes if (letters[0] + letters[1]).count(c) == 1}
    prod = {name: numel([sizes[c] for c in group]) for name, group in (
        ("batch", a & b & o), ("m", (a - b) & o), ("k", (a | b) - o), ("n", (b - a) & o))}
    return {"batch": prod["batch"], "m": prod["m"], "k": prod["k"], "n": prod["n"]}


def einsum_cost(equation: str, ins: Sequence[Info], outs: Sequence[Info]) -> ShapeCost | None:
    """A two-operand ``einsum`` (torch's, ONNX's ``Einsum``): the batched GEMM it runs,
    ``2·batch·m·k·n`` FLOPs (:func:`einsum_gemm`), its inputs read and output written once;
    ``None`` when the shapes or the operand count do not allow it."""
    gemm = einsum_gemm(equation, [t.shape if t is not None else None for t in ins])
    if gemm is None or not outs or outs[0] is None:
        return None
    return ShapeCost(2.0 * gemm["batch"] * gemm["m"] * gemm["k"] * gemm["n"], total_bytes(ins),
                     total_bytes(outs), gemm_blocks(gemm["m"], gemm["n"], gemm["batch"]))


def resize_cost(x: Info, y: Info, mode: str, ins: Sequence[Info], outs: Sequence[Info]
                ) -> ShapeCost | None:
    """A resize (ONNX's Resize/Upsample, torch's ``interpolate``): reads its input, writes its
    output; per output element, nearest copies (0 FLOPs), linear interpolates ``2**n - 1``
    times over the ``n`` resized axes (3 FLOPs a lerp), cubic weighs ``4**n`` taps (2 FLOPs
    each)."""
    if x is None or y is None or len(x.shape) != len(y.shape):
        return None
    n = sum(i != o for i, o in zip(x.shape, y.shape, strict=True))
    mode = str(mode or "nearest").lower()
    per_element = (3 * (2**n - 1) if mode in ("linear", "bilinear", "trilinear") else
                   2 * 4**n if mode in ("cubic", "bicubic") else 0)
    return ShapeCost(per_element * y.elements, total_bytes(ins), total_bytes(outs),
                     blocks(y.elements))


def default_cost(ins: Sequence[Info], outs: Sequence[Info]) -> ShapeCost:
    """Unknown op or shapes: bytes from the known shapes, FLOPs = output elements."""
    elements = sum(t.elements for t in outs if t is not None)
    return ShapeCost(elements, total_bytes(ins), total_bytes(outs), blocks(elements))


# ---------------------------------------------------------- ONNX cost rules shared by families
#: Larger tensors are treated as "shape unknown" (corrupt or absurd files).
MAX_ELEMENTS = 1 << 53


def first_of(seq: Sequence[Info]) -> Info:
    return seq[0] if seq else None


def _view(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return VIEW_COST


def _copy(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return copy_cost(first_of(outs), ins, outs)


def _gather(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    """Gather/Slice read only what they copy: output bytes + the index inputs."""
    y = first_of(outs)
    if y is None:
        return None
    return ShapeCost(0, total_bytes(outs[:1]) + total_bytes(ins[1:]), total_bytes(outs),
                     blocks(y.elements))


def _global(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    return global_pool_cost(first_of(ins), ins, outs)


#: The rules several families give their ONNX types: a view (no kernel), a copy of the
#: output, a gather / slice (reads what it copies), a global pool or reduction.
view_rule = _view
copy_rule = _copy
gather_rule = _gather
global_rule = _global



__all__ = [
    "MAX_ELEMENTS", "copy_rule", "first_of", "gather_rule", "global_rule", "view_rule",
    "ELEMENTS_PER_BLOCK", "GEMM_TILE", "VIEW_COST", "Info", "Rule",
    "ShapeCost", "TensorInfo", "blocks", "conv_cost", "copy_cost", "default_cost", "einsum_cost",
    "einsum_gemm", "elementwise_cost", "gemm_blocks", "global_pool_cost",
    "matmul_cost", "numel",
    "resize_cost", "total_bytes", "window_cost",
]
