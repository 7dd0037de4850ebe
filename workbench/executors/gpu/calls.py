"""What a lowering produces: kernel calls with symbolic arguments, and the device limits they obey.

A :class:`Call` names a kernel, its launch shape and *symbolic* arguments (:class:`In`,
:class:`Out`, :class:`RowLen`, ...) that :mod:`workbench.executors.gpu.layout` resolves to arena
offsets;
:func:`make_call` orders them by the kernel's parameter names parsed from the CUDA source
(:func:`workbench.executors.gpu.sources.signature`).  The integer codes (:data:`UNARY_CODES`, ...)
are those
of ``kernels/common.cuh``.  A generated fused kernel travels with its call as a
:class:`FusedKernel` (:mod:`workbench.executors.gpu.fused` makes it).  Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import OptionError
from workbench.executors.gpu.sources import inline_includes, module_source, signature
from workbench.ops import ASSIGN_KINDS, GPU_COPY_KINDS
from workbench.values.graph import Op, TensorId

UNARY_CODES: dict[str, int] = {"identity": 0, "relu": 1, "gelu": 2, "sigmoid": 3, "tanh": 4,
                               "exp": 5, "log": 6, "neg": 7, "abs": 8, "sqrt": 9, "atan": 10}


BINARY_CODES: dict[str, int] = {"add": 0, "sub": 1, "mul": 2, "div": 3}


ACT_CODES: dict[str | None, int] = {None: 0, "relu": 1, "gelu": 2, "sigmoid": 3, "tanh": 4}


#: Kinds lowered as a plain copy of their input (engine copies and pass-through I/O).
COPY_KINDS = GPU_COPY_KINDS


#: The ``assign`` family (lowered as a copy into the written parameter).
STATE_KINDS = ASSIGN_KINDS


ELEM_THREADS = 256      # threads per block of the grid-stride kernels


ELEMS_PER_BLOCK = 1024  # elements per block (4 per thread): the _layers thread-block estimate


ROW_THREADS = 256       # threads per row of the reductions


MAX_GRID_X = 2**31 - 1


MAX_GRID_YZ = 65535


@dataclass(frozen=True)
class In:
    """Pointer to a tensor the kernel reads."""

    tensor: TensorId


@dataclass(frozen=True)
class Out:
    """Pointer to a tensor the kernel writes (through the tensor's row mapping)."""

    tensor: TensorId


@dataclass(frozen=True)
class OutSlice:
    """Pointer to element ``elem_offset`` of a (contiguous) tensor the kernel writes a part of."""

    tensor: TensorId
    elem_offset: int


@dataclass(frozen=True)
class RowLen:
    """``row_len`` of a tensor's placement (its element count when contiguous)."""

    tensor: TensorId


@dataclass(frozen=True)
class RowStride:
    """``row_stride`` of a tensor's placement."""

    tensor: TensorId


@dataclass(frozen=True)
class ScratchPtr:
    """Pointer to this op's scratch space on its stream (``nbytes`` of it); read and written."""

    nbytes: int


@dataclass(frozen=True)
class PtrTable:
    """Pointer to a device table holding the addresses of ``tensors`` (read)."""

    tensors: tuple[TensorId, ...]


NULL = None  # a null pointer argument


@dataclass(frozen=True)
class Call:
    """One kernel launch of an op, before placement: ``args`` follow the kernel's signature."""

    module: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[Any, ...]
    shared_mem: int = 0
    source: str | None = None          # generated modules carry their source
    fused: FusedKernel | None = None   # the program of a generated fused kernel

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


def make_call(module: str, kernel: str, grid: Sequence[int], block: Sequence[int], *,
              source: str | None = None, fused: FusedKernel | None = None, shared_mem: int = 0,
              **named: Any) -> Call:
    """A :class:`Call` whose arguments are given by the kernel's parameter names.

    >>> c = make_call("elementwise", "copy_rows", (1, 1, 1), (256, 1, 1), x=In("a"), y=Out("b"),
    ...               n=4, row_len=4, row_stride=4)
    >>> [type(a).__name__ for a in c.args]
    ['In', 'Out', 'int', 'int', 'int']
    """
    params = signature(module, kernel, source)
    names = [p.name for p in params]
    missing = [n for n in names if n not in named]
    extra = [n for n in named if n not in names]
    if missing or extra:
        raise OptionError(f"kernel {kernel!r}: arguments do not match its signature "
                          f"(missing {missing}, unknown {extra})")
    grid3 = (tuple(int(g) for g in grid) + (1, 1, 1))[:3]
    block3 = (tuple(int(b) for b in block) + (1, 1, 1))[:3]
    for g in grid3:
        if g < 1:
            raise OptionError(f"kernel {kernel!r}: grid {grid3} has an empty dimension")
    return Call(module, kernel, grid3, block3, tuple(named[n] for n in names), shared_mem,  # type: ignore[arg-type]
                source, fused)


@dataclass(frozen=True)
class DeviceLimits:
    """What the lowering needs to know about the GPU.  Defaults: an H100 SXM (132 SMs, 2048
    threads per SM) with the cost model's 2 blocks per SM; the executor reads the real values.

    ``spin_overhead_us`` is the fixed time of a spin launch (launch latency and tail), measured by
    the executor's calibration and subtracted from each spin op's duration.
    """

    name: str = "h100"
    sm_count: int = 132
    max_threads_per_sm: int = 2048
    blocks_per_sm: int = 2
    spin_overhead_us: float = 3.0

    @property
    def slots(self) -> int:
        """Thread blocks resident at once in the cost model (SMs × blocks per SM)."""
        return self.sm_count * self.blocks_per_sm

    @property
    def spin_block(self) -> int:
        """Threads per spin block: so that exactly ``blocks_per_sm`` spin blocks fit on one SM
        (thread-limited), as the cost model assumes; a multiple of 32, at most 1024."""
        threads = self.max_threads_per_sm // max(1, self.blocks_per_sm)
        return max(32, min(1024, threads // 32 * 32))

    @classmethod
    def from_spec(cls, spec: Any, **changes: Any) -> DeviceLimits:
        """Limits of a :class:`~workbench.simulator.cost_model.costs.DeviceSpec` (threads per SM
        default 2048)."""
        return cls(name=spec.name, sm_count=spec.sm_count, blocks_per_sm=spec.blocks_per_sm,
                   **changes)


@dataclass(frozen=True)
class LowerContext:
    """What a lowering function may ask: shapes, device limits, which concat inputs are written
    in place by their producers, and each spin op's duration."""

    shape_of: Callable[[TensorId], tuple[int, ...]]
    limits: DeviceLimits = field(default_factory=DeviceLimits)
    in_place: frozenset[TensorId] = frozenset()
    duration_us: Callable[[Op], float] = lambda op: op.duration_us or 10.0

    def numel(self, tensor: TensorId) -> int:
        return math.prod(self.shape_of(tensor))


def elem_grid(n: int) -> tuple[int, int, int]:
    """Grid of a grid-stride kernel over ``n`` elements: ``ceil(n / 1024)`` blocks (>= 1)."""
    return (max(1, min(MAX_GRID_X, -(-n // ELEMS_PER_BLOCK))), 1, 1)


def _thread_grid(n: int) -> tuple[int, int, int]:
    return (max(1, min(MAX_GRID_X, -(-n // ELEM_THREADS))), 1, 1)


def _row_grid(rows: int) -> tuple[int, int, int]:
    return (max(1, min(MAX_GRID_YZ, rows)), 1, 1)


_BLOCK = (ELEM_THREADS, 1, 1)


def _out_args(out: TensorId) -> dict[str, Any]:
    return {"row_len": RowLen(out), "row_stride": RowStride(out)}


def _pair(value: Any, default: int) -> tuple[int, int]:
    if value is None:
        return (default, default)
    if isinstance(value, int):
        return (value, value)
    a, b = value
    return (int(a), int(b))


def _act(name: str | None, op: Op) -> int:
    try:
        return ACT_CODES[name]
    except KeyError:
        raise OptionError(f"op {op.id!r}: activation {name!r} has no GPU kernel "
                          f"(known: {', '.join(str(k) for k in ACT_CODES)})") from None


def softmax_geometry(shape: Sequence[int], axis: int) -> tuple[int, int, int]:
    """``(outer, L, inner)`` of a softmax along ``axis``."""
    ax = axis % len(shape)
    return math.prod(shape[:ax]), shape[ax], math.prod(shape[ax + 1:])


@dataclass(frozen=True)
class FusedKernel:
    """A generated kernel for one fused op.

    ``stmts`` is the program, one tuple per statement over float variables ``v<k>``:
    ``("load", v, slot)`` (``v = in<slot>[i]``), ``("un", v, code, a)``, ``("bin", v, code, a,
    b)``, ``("bn", v, x, slot, c_param, inner_param, eps)`` (batch norm with params ``in<slot>``
    and the i64 kernel parameters named ``c_param``/``inner_param``) and ``("store", slot, v)``
    (``out<slot>[row map(i)] = v``).  ``reduce`` is ``None`` for an elementwise group, else
    ``(kind, v, info)``: the reduction applied to variable ``v`` (``info``: ``rows``, ``L``,
    ``inner``, ``scale``, ``params`` slot, ``D``, ``eps``, ``HW``); its result is ``out0``.
    ``ints`` are the i64 parameters (name, value); ``n`` the element count of the elementwise
    part, ``shape`` its shape.
    """

    name: str
    source: str
    inputs: tuple[TensorId, ...]
    outputs: tuple[TensorId, ...]
    ints: tuple[tuple[str, int], ...]
    stmts: tuple[tuple[Any, ...], ...]
    reduce: tuple[str, str, Mapping[str, Any]] | None
    n: int
    shape: tuple[int, ...]

    @property
    def rows(self) -> int:
        return int(self.reduce[2]["rows"]) if self.reduce is not None else 0


def call_source(call: Call) -> str:
    """Compilable source of the module a call's kernel lives in."""
    if call.source is not None:
        return inline_includes(call.source)
    return module_source(call.module)


__all__ = [
    "ACT_CODES", "BINARY_CODES", "COPY_KINDS", "ELEMS_PER_BLOCK", "ELEM_THREADS", "MAX_GRID_X",
    "MAX_GRID_YZ", "NULL", "ROW_THREADS", "STATE_KINDS", "UNARY_CODES", "Call", "DeviceLimits",
    "FusedKernel", "In", "LowerContext", "Out", "OutSlice", "PtrTable", "RowLen", "RowStride",
    "ScratchPtr", "call_source", "elem_grid", "make_call", "softmax_geometry",
]
