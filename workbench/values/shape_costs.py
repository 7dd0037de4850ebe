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


@dataclass(frozen=True)
class RecurrentSizes:
    """The sizes of a recurrent op (LSTM, GRU, RNN) over a sequence: ``steps`` x ``batch``
    inputs of ``inputs`` features, ``hidden`` units with ``gates`` gates each, ``layers``
    stacked, ``directions`` (1, or 2 when bidirectional), an LSTM's ``proj`` (torch's
    ``proj_size``; 0: none)."""

    steps: int
    batch: int
    inputs: int
    hidden: int
    gates: int
    layers: int = 1
    directions: int = 1
    proj: int = 0

    @property
    def state(self) -> int:
        """The size of ``h`` (the projection's, when there is one)."""
        return self.proj or self.hidden

    def gemms(self) -> list[tuple[int, int, int, int]]:
        """``(count, m, n, k)`` of the matrix products cuDNN runs, per layer and direction:
        the input projection of every step at once (``T*B x G*H x inputs``, layer 1's input
        is the previous layer's output), then per step the recurrent product (``B x G*H x
        state``) and an LSTM's projection (``B x P x H``)."""
        out = []
        gh = self.gates * self.hidden
        for layer in range(self.layers):
            k = self.inputs if layer == 0 else self.directions * self.state
            for _ in range(self.directions):
                out += [(1, self.steps * self.batch, gh, k), (self.steps, self.batch, gh,
                                                               self.state)]
                if self.proj:
                    out.append((self.steps, self.batch, self.proj, self.hidden))
        return out

    @property
    def gemm_flops(self) -> float:
        """``2*m*n*k`` per product: ``2*T*B*in*G*H + T * 2*B*H*G*H`` per layer and direction
        (as ``FlopCounterMode`` counts the ``addmm``/``mm`` an unfused LSTM runs)."""
        return float(sum(2 * c * m * n * k for c, m, n, k in self.gemms()))

    @property
    def cells(self) -> int:
        """Hidden units updated over the run: ``T * B * H`` per layer and direction."""
        return self.steps * self.batch * self.hidden * self.layers * self.directions


def recurrent_sizes(kind: str, attrs: Mapping[str, Any], x: Sequence[int] | None
                    ) -> RecurrentSizes | None:
    """The :class:`RecurrentSizes` of a recurrent op of ``kind`` (``lstm``, ``gru``, ``rnn``)
    from its attributes (``hidden_size``, ``layers``, ``direction``, ``batch_first``,
    ``proj_size``) and its input's shape ``(T, B, in)`` (``(B, T, in)`` batch first, ``(T,
    in)`` unbatched); ``None`` when they are unknown."""
    from workbench.ops import RECURRENT_GATES

    hidden = attrs.get("hidden_size")
    if x is None or not 2 <= len(x) <= 3 or not isinstance(hidden, int) or hidden < 1 \
            or kind not in RECURRENT_GATES:
        return None
    steps, batch = (x[0], 1) if len(x) == 2 else (x[1], x[0]) if attrs.get("batch_first") \
        else (x[0], x[1])
    return RecurrentSizes(int(steps), int(batch), int(x[-1]), hidden, RECURRENT_GATES[kind],
                          int(attrs.get("layers") or 1),
                          2 if attrs.get("direction") == "bidirectional" else 1,
                          int(attrs.get("proj_size") or 0))


def recurrent_cost(kind: str, attrs: Mapping[str, Any], ins: Sequence[Info],
                   outs: Sequence[Info]) -> ShapeCost | None:
    """A recurrent op as the work cuDNN does: its GEMMs (:meth:`RecurrentSizes.gemm_flops`)
    plus the gate arithmetic, the kind's ``flops_per_element`` per hidden unit and step
    (biases counted whether given or not; an RNN's ReLU as its tanh); reads its inputs and
    writes its outputs once (the gates' round trips through memory are the launch rule's);
    thread blocks: the input projection's tiles."""
    from workbench.ops import FLOPS_PER_ELEMENT

    x = ins[0] if ins else None
    r = recurrent_sizes(kind, attrs, x.shape if x is not None else None)
    if r is None:
        return None
    flops = r.gemm_flops + FLOPS_PER_ELEMENT[kind] * r.cells
    return ShapeCost(flops, total_bytes(ins), total_bytes(outs),
                     gemm_blocks(r.steps * r.batch, r.gates * r.hidden))


def gemm_flops(op: Any, x: Sequence[int] | None = None) -> float:
    """The FLOPs of ``op``'s matrix products, as ``FlopCounterMode`` counts them: all of a GEMM
    kind's (convolutions, matmul, einsum) and attention's, a recurrent op's GEMMs
    (:meth:`RecurrentSizes.gemm_flops` of its input shape ``x``, not its gate arithmetic), 0
    for any other op.  O(layers)."""
    from workbench.ops import OPS

    info = OPS.get(op.kind)
    if info is None:
        return 0.0
    if info.gemm or info.launch_rule == "attention":
        return float(op.flops)
    r = recurrent_sizes(op.kind, op.attrs, x) if info.recurrent else None
    return 0.0 if r is None else r.gemm_flops


def default_cost(ins: Sequence[Info], outs: Sequence[Info]) -> ShapeCost:
    """Unknown op or shapes: bytes from the known shapes, FLOPs = output elements."""
    elements = sum(t.elements for t in outs if t is not None)
    return ShapeCost(elements, total_bytes(ins), total_bytes(outs), blocks(elements))


__all__ = [
    "ELEMENTS_PER_BLOCK", "GEMM_TILE", "VIEW_COST", "Info", "RecurrentSizes", "Rule",
    "ShapeCost", "TensorInfo", "blocks", "conv_cost", "copy_cost", "default_cost", "einsum_cost",
    "einsum_gemm", "elementwise_cost", "gemm_blocks", "gemm_flops", "global_pool_cost",
    "matmul_cost", "numel",
    "recurrent_cost", "recurrent_sizes", "resize_cost", "total_bytes", "window_cost",
]
