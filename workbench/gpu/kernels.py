"""CUDA kernel sources, their argument layout, the lowering of ops to kernel calls, and the fused
elementwise code generator.  Pure Python: CuPy is imported only by :func:`get_function`.

**Sources.**  The ``.cu`` files live in the repository's top-level ``kernels/`` directory, which the
wheel ships as ``workbench/kernels`` (``[tool.hatch.build.targets.wheel.force-include]``);
:func:`kernels_dir` finds them in both layouts.  ``#include "x.cuh"`` lines are inlined
(:func:`module_source`), so NVRTC needs no include path.

**Argument layout.**  The CUDA source is the single source of truth: :func:`signature` parses each
``extern "C" __global__`` kernel's parameters (name and type: ``ptr``, ``i64``, ``i32``, ``f32``),
:func:`make_call` orders keyword arguments by that signature and refuses missing or unknown names,
and the NumPy twins of :mod:`workbench.gpu.reference` read arguments by the same names.

**Lowering.**  :data:`LOWERINGS` maps op kinds to functions ``(op, ctx) -> list[Call]``.  A
:class:`Call` names a kernel, its launch shape and *symbolic* arguments (:class:`In`, :class:`Out`,
:class:`RowLen`, ...) that :mod:`workbench.gpu.launch_plan` resolves to arena offsets.  Every
output is written through the row mapping of ``kernels/common.cuh``, so a producer can write into
its slice of a concat output.  Ops of toy graphs (kind ``"op"``, no shapes, or not on ``gpu``) run
the calibrated ``spin`` kernel.

**Fused ops.**  :func:`fused_kernel` turns ``attrs["expr"]`` of an O1 fused op
(:mod:`workbench.passes.fusion`) into a small SSA program (``stmts``) and renders it as ONE CUDA
kernel; a ``reduce``-pattern group (elementwise ops feeding a softmax, layer norm or global average
pool) becomes a prologue functor of the row reductions in ``kernels/reduce.cuh``.  The same program
is evaluated with NumPy by :func:`workbench.gpu.reference.eval_stmts`, so the generator is tested on
the CPU.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from workbench.errors import DeviceUnavailable, OptionError
from workbench.graph import NO_TASK_KINDS, Op, TensorId

#: The kernel source files (modules), without the ``.cu`` suffix.
SOURCE_FILES: tuple[str, ...] = ("elementwise", "conv", "gemm", "pool", "norm", "layout", "spin")
COMPILE_OPTIONS: tuple[str, ...] = ("-std=c++17",)

UNARY_CODES: dict[str, int] = {"identity": 0, "relu": 1, "gelu": 2, "sigmoid": 3, "tanh": 4,
                               "exp": 5, "log": 6, "neg": 7, "abs": 8, "sqrt": 9, "atan": 10}
BINARY_CODES: dict[str, int] = {"add": 0, "sub": 1, "mul": 2, "div": 3}
ACT_CODES: dict[str | None, int] = {None: 0, "relu": 1, "gelu": 2, "sigmoid": 3, "tanh": 4}
COPY_KINDS = frozenset({"h2d", "d2h", "d2d", "print"})
STATE_KINDS = frozenset({"assign", "assign_add", "assign_sub"})
ELEM_THREADS = 256      # threads per block of the grid-stride kernels
ELEMS_PER_BLOCK = 1024  # elements per block (4 per thread): the _layers thread-block estimate
ROW_THREADS = 256       # threads per row of the reductions
MAX_GRID_X = 2**31 - 1
MAX_GRID_YZ = 65535


# ------------------------------------------------------------------------------------ sources
def kernels_dir() -> Path:
    """The directory holding the ``.cu`` sources: ``workbench/kernels`` in an installed wheel,
    the repository's ``kernels/`` in a source checkout or editable install."""
    candidates: list[Path] = []
    try:
        packaged = resources.files("workbench").joinpath("kernels")
        candidates.append(Path(str(packaged)))
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - odd loaders
        pass
    candidates.append(Path(__file__).resolve().parents[2] / "kernels")
    for path in candidates:
        if (path / "common.cuh").is_file():
            return path
    raise DeviceUnavailable("the CUDA kernel sources (kernels/*.cu) were not found next to the "
                            "workbench package; reinstall schedule-workbench")


@cache
def raw_source(filename: str) -> str:
    """The text of one file of :func:`kernels_dir` (``"conv.cu"``, ``"common.cuh"``)."""
    path = kernels_dir() / filename
    if not path.is_file():
        raise OptionError(f"no kernel source {filename!r} in {kernels_dir()}")
    return path.read_text(encoding="utf-8")


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)


def inline_includes(text: str, _seen: set[str] | None = None) -> str:
    """Replace ``#include "x.cuh"`` by the file's text (each file once; ``#pragma once`` kept)."""
    seen = set() if _seen is None else _seen

    def expand(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in seen:
            return f"// (already included: {name})"
        seen.add(name)
        return inline_includes(raw_source(name), seen)

    return _INCLUDE.sub(expand, text)


@cache
def module_source(module: str) -> str:
    """Compilable source of a kernel module (a name of :data:`SOURCE_FILES`), includes inlined."""
    if module not in SOURCE_FILES:
        raise OptionError(f"unknown kernel module {module!r} (known: {', '.join(SOURCE_FILES)})")
    return inline_includes(raw_source(f"{module}.cu"))


# ------------------------------------------------------------------------------------ signatures
@dataclass(frozen=True)
class Param:
    """One kernel parameter: its name and type (``ptr``, ``i64``, ``i32``, ``u64`` or ``f32``)."""

    name: str
    type: str


_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?'
                     r"(\w+)\s*\(([^)]*)\)", re.S)
_SCALARS = {"i64": "i64", "long long": "i64", "int": "i32", "float": "f32", "u64": "u64",
            "unsigned long long": "u64"}


def _param(text: str) -> Param:
    words = text.replace("__restrict__", " ").replace("const ", " ").split()
    if len(words) < 2:
        raise OptionError(f"cannot parse kernel parameter {text.strip()!r}")
    name = words[-1].lstrip("*")
    decl = " ".join(words[:-1]) + ("*" if words[-1].startswith("*") else "")
    if "*" in decl:
        return Param(name, "ptr")
    try:
        return Param(name, _SCALARS[decl.strip()])
    except KeyError:
        raise OptionError(f"kernel parameter {text.strip()!r} has an unsupported type") from None


def parse_signatures(source: str) -> dict[str, tuple[Param, ...]]:
    """Every ``extern "C" __global__`` kernel of ``source`` → its parameters, in order."""
    out = {}
    for match in _KERNEL.finditer(source):
        params = [p for p in match.group(2).split(",") if p.strip()]
        out[match.group(1)] = tuple(_param(p) for p in params)
    return out


@cache
def _module_signatures(module: str) -> dict[str, tuple[Param, ...]]:
    return parse_signatures(module_source(module))


def signature(module: str, kernel: str, source: str | None = None) -> tuple[Param, ...]:
    """Parameters of ``kernel`` in ``module`` (or in ``source`` for generated modules)."""
    table = parse_signatures(source) if source is not None else _module_signatures(module)
    try:
        return table[kernel]
    except KeyError:
        raise OptionError(f"kernel {kernel!r} is not defined in module {module!r} "
                          f"(kernels: {', '.join(table)})") from None


# ------------------------------------------------------------------------------------ symbols
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


# ------------------------------------------------------------------------------------ device
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
        """Limits of a :class:`~workbench.costs.DeviceSpec` (threads per SM default 2048)."""
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


# ------------------------------------------------------------------------------------ lowerings
def lower_conv2d(op: Op, ctx: LowerContext) -> list[Call]:
    """``conv2d``: implicit GEMM when ``groups == 1``, else the direct kernel."""
    x, w = op.inputs[0], op.inputs[1]
    bias = op.inputs[2] if len(op.inputs) > 2 else NULL
    y = op.outputs[0]
    n, c, h, wd = ctx.shape_of(x)
    yn, k, ho, wo = ctx.shape_of(y)
    a = op.attrs
    kh, kw = _pair(a.get("kernel"), 1)
    sh, sw = _pair(a.get("stride"), 1)
    ph, pw = _pair(a.get("padding"), 0)
    groups = int(a.get("groups", 1) or 1)
    if (h + 2 * ph - kh) // sh + 1 != ho or (wd + 2 * pw - kw) // sw + 1 != wo or yn != n:
        raise OptionError(f"op {op.id!r}: output shape {ctx.shape_of(y)} does not follow from "
                          f"input {ctx.shape_of(x)} and kernel {kh}x{kw}/{sh}/{ph}")
    geo = dict(x=In(x), w=In(w), bias=In(bias) if bias else NULL, y=Out(y), N=n, C=c, H=h, W=wd,
               K=k, Ho=ho, Wo=wo, kh=kh, kw=kw, sh=sh, sw=sw, ph=ph, pw=pw,
               act=_act(a.get("act"), op), pre_act=_act(a.get("pre_act"), op), **_out_args(y))
    if groups == 1:
        m = n * ho * wo
        grid = (-(-m // 64), -(-k // 64), 1)
        return [make_call("conv", "conv2d_igemm", grid, _BLOCK, **geo)]
    return [make_call("conv", "conv2d_direct", _thread_grid(n * k * ho * wo), _BLOCK,
                      groups=groups, **geo)]


def lower_sepconv(op: Op, ctx: LowerContext) -> list[Call]:
    """``sepconv``: pre-activation + depthwise (direct kernel) into the stream's scratch, then the
    1×1 pointwise conv (implicit GEMM) from it."""
    x, dw, pw = op.inputs[0], op.inputs[1], op.inputs[2]
    y = op.outputs[0]
    n, c, h, w = ctx.shape_of(x)
    _, k, ho, wo = ctx.shape_of(y)
    a = op.attrs
    kh, kw = _pair(a.get("kernel"), 3)
    sh, sw = _pair(a.get("stride"), 1)
    ph, pwd = _pair(a.get("padding"), kh // 2)
    mid = n * c * ho * wo
    scratch = ScratchPtr(mid * 4)
    depthwise = make_call(
        "conv", "conv2d_direct", _thread_grid(mid), _BLOCK, x=In(x), w=In(dw), bias=NULL,
        y=scratch, N=n, C=c, H=h, W=w, K=c, Ho=ho, Wo=wo, kh=kh, kw=kw, sh=sh, sw=sw, ph=ph,
        pw=pwd, groups=c, act=0, pre_act=_act(a.get("pre_act", "relu"), op), row_len=mid,
        row_stride=mid)
    pointwise = make_call(
        "conv", "conv2d_igemm", (-(-(n * ho * wo) // 64), -(-k // 64), 1), _BLOCK, x=scratch,
        w=In(pw), bias=NULL, y=Out(y), N=n, C=c, H=ho, W=wo, K=k, Ho=ho, Wo=wo, kh=1, kw=1,
        sh=1, sw=1, ph=0, pw=0, act=0, pre_act=0, **_out_args(y))
    return [depthwise, pointwise]


def lower_pool(op: Op, ctx: LowerContext) -> list[Call]:
    """``maxpool`` / ``avgpool`` (padding counted in the average's divisor)."""
    x, y = op.inputs[0], op.outputs[0]
    n, c, h, w = ctx.shape_of(x)
    _, _, ho, wo = ctx.shape_of(y)
    a = op.attrs
    kh, kw = _pair(a.get("kernel"), 1)
    sh, sw = _pair(a.get("stride") or a.get("kernel"), 1)
    ph, pw = _pair(a.get("padding"), 0)
    mode = 0 if op.kind == "maxpool" else 1
    if mode == 1 and a.get("count_include_pad", True) is False:
        raise OptionError(f"op {op.id!r}: avgpool without count_include_pad has no GPU kernel")
    return [make_call("pool", "pool2d", _thread_grid(n * c * ho * wo), _BLOCK, x=In(x), y=Out(y),
                      N=n, C=c, H=h, W=w, Ho=ho, Wo=wo, kh=kh, kw=kw, sh=sh, sw=sw, ph=ph, pw=pw,
                      mode=mode, **_out_args(y))]


def lower_global_avgpool(op: Op, ctx: LowerContext) -> list[Call]:
    x, y = op.inputs[0], op.outputs[0]
    shape = ctx.shape_of(x)
    planes, hw = shape[0] * shape[1], math.prod(shape[2:])
    return [make_call("pool", "global_avgpool", _row_grid(planes), (ROW_THREADS, 1, 1), x=In(x),
                      y=Out(y), planes=planes, hw=hw, **_out_args(y))]


def lower_unary(op: Op, ctx: LowerContext) -> list[Call]:
    x, y = op.inputs[0], op.outputs[0]
    n = ctx.numel(y)
    return [make_call("elementwise", "unary", elem_grid(n), _BLOCK, x=In(x), y=Out(y), n=n,
                      code=UNARY_CODES[op.kind], **_out_args(y))]


def lower_binary(op: Op, ctx: LowerContext) -> list[Call]:
    y = op.outputs[0]
    n = ctx.numel(y)
    if op.kind == "add" and len(op.inputs) != 2:
        if len(op.inputs) == 1:
            return [_copy(op.inputs[0], y, n)]
        return [make_call("elementwise", "add_n", elem_grid(n), _BLOCK,
                          ptrs=PtrTable(tuple(op.inputs)), k=len(op.inputs), y=Out(y), n=n,
                          **_out_args(y))]
    a, b = op.inputs[0], op.inputs[1]
    return [make_call("elementwise", "binary", elem_grid(n), _BLOCK, a=In(a), b=In(b), y=Out(y),
                      n=n, code=BINARY_CODES[op.kind], **_out_args(y))]


def lower_batchnorm(op: Op, ctx: LowerContext) -> list[Call]:
    x, params, y = op.inputs[0], op.inputs[1], op.outputs[0]
    shape = ctx.shape_of(x)
    axis = op.attrs.get("axis", 1) % len(shape)
    n = math.prod(shape)
    return [make_call("elementwise", "batchnorm", elem_grid(n), _BLOCK, x=In(x),
                      params=In(params), y=Out(y), n=n, C=shape[axis],
                      inner=math.prod(shape[axis + 1:]), eps=float(op.attrs.get("eps", 1e-3)),
                      act=0, **_out_args(y))]


def _copy(src: TensorId, dst: TensorId, n: int) -> Call:
    return make_call("elementwise", "copy_rows", elem_grid(n), _BLOCK, x=In(src), y=Out(dst),
                     n=n, **_out_args(dst))


def concat_geometry(shapes: Sequence[tuple[int, ...]], axis: int
                    ) -> list[tuple[int, int, int]]:
    """For each input of a concat along ``axis``: ``(elem_offset, row_len, row_stride)`` of its
    slice in the (contiguous) output.

    >>> concat_geometry([(2, 3, 4), (2, 5, 4)], axis=1)
    [(0, 12, 32), (12, 20, 32)]
    """
    rank = len(shapes[0])
    ax = axis % rank
    inner = math.prod(shapes[0][ax + 1:])
    total = sum(s[ax] for s in shapes)
    out, start = [], 0
    for s in shapes:
        out.append((start * inner, s[ax] * inner, total * inner))
        start += s[ax]
    return out


def lower_concat(op: Op, ctx: LowerContext) -> list[Call]:
    """``concat``: one copy into its slice per input that its producer did not write in place."""
    y = op.outputs[0]
    shapes = [ctx.shape_of(t) for t in op.inputs]
    calls = []
    for t, (offset, row_len, row_stride) in zip(op.inputs, concat_geometry(
            shapes, op.attrs.get("axis", 1) if len(shapes[0]) > 1 else 0), strict=True):
        if t in ctx.in_place:
            continue
        n = ctx.numel(t)
        calls.append(make_call("elementwise", "copy_rows", elem_grid(n), _BLOCK, x=In(t),
                               y=OutSlice(y, offset), n=n, row_len=row_len,
                               row_stride=row_stride))
    return calls


def lower_matmul(op: Op, ctx: LowerContext) -> list[Call]:
    """``matmul`` (batched) and ``linear`` (a 2-D weight shared by all rows, optional bias)."""
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    bias = op.inputs[2] if len(op.inputs) > 2 else NULL
    sa, sb = ctx.shape_of(a), ctx.shape_of(b)
    if len(sb) == 2:
        batch, m, k, n = 1, math.prod(sa[:-1]), sa[-1], sb[-1]
        stride_b = 0
    else:
        batch, m, k, n = math.prod(sa[:-2]), sa[-2], sa[-1], sb[-1]
        stride_b = k * n
    if sb[-2] != k:
        raise OptionError(f"op {op.id!r}: cannot multiply shapes {sa} and {sb}")
    if batch > MAX_GRID_YZ or -(-m // 64) > MAX_GRID_YZ:
        raise OptionError(f"op {op.id!r}: matmul of batch {batch} x {m} rows is too large for "
                          f"the GEMM grid")
    grid = (-(-n // 64), -(-m // 64), batch)
    return [make_call("gemm", "gemm", grid, _BLOCK, A=In(a), B=In(b),
                      bias=In(bias) if bias else NULL, Cout=Out(y), M=m, N=n, K=k,
                      stride_a=m * k, stride_b=stride_b, act=0, **_out_args(y))]


def softmax_geometry(shape: Sequence[int], axis: int) -> tuple[int, int, int]:
    """``(outer, L, inner)`` of a softmax along ``axis``."""
    ax = axis % len(shape)
    return math.prod(shape[:ax]), shape[ax], math.prod(shape[ax + 1:])


def lower_softmax(op: Op, ctx: LowerContext) -> list[Call]:
    x, y = op.inputs[0], op.outputs[0]
    outer, length, inner = softmax_geometry(ctx.shape_of(x), op.attrs.get("axis", -1))
    rows = outer * inner
    return [make_call("norm", "softmax", _row_grid(rows), (ROW_THREADS, 1, 1), x=In(x), y=Out(y),
                      rows=rows, L=length, inner=inner, scale=float(op.attrs.get("scale", 1.0)),
                      **_out_args(y))]


def lower_layernorm(op: Op, ctx: LowerContext) -> list[Call]:
    x, params, y = op.inputs[0], op.inputs[1], op.outputs[0]
    shape = ctx.shape_of(x)
    d = shape[-1]
    rows = math.prod(shape) // d
    return [make_call("norm", "layernorm", _row_grid(rows), (ROW_THREADS, 1, 1), x=In(x),
                      params=In(params), y=Out(y), rows=rows, D=d,
                      eps=float(op.attrs.get("eps", 1e-5)), **_out_args(y))]


def transpose_geometry(shape: Sequence[int], perm: Sequence[int]
                       ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Output dims and, per output axis, the input stride, both padded in front to rank 6.

    >>> transpose_geometry((2, 3, 4), (0, 2, 1))
    ((1, 1, 1, 2, 4, 3), (0, 0, 0, 12, 1, 4))
    """
    if len(shape) > 6:
        raise OptionError(f"transpose of rank {len(shape)} > 6 has no GPU kernel")
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    dims = [shape[p] for p in perm]
    st = [strides[p] for p in perm]
    pad = 6 - len(shape)
    return tuple([1] * pad + dims), tuple([0] * pad + st)


def lower_transpose(op: Op, ctx: LowerContext) -> list[Call]:
    x, y = op.inputs[0], op.outputs[0]
    dims, strides = transpose_geometry(ctx.shape_of(x), op.attrs["perm"])
    n = ctx.numel(x)
    named: dict[str, Any] = {f"d{i}": d for i, d in enumerate(dims)}
    named.update({f"s{i}": s for i, s in enumerate(strides)})
    return [make_call("layout", "transpose6", elem_grid(n), _BLOCK, x=In(x), y=Out(y), n=n,
                      **named, **_out_args(y))]


def lower_copy(op: Op, ctx: LowerContext) -> list[Call]:
    """Identity ops (``h2d``, ``d2h``, ``d2d``, ``print``): a device copy per output."""
    return [_copy(op.inputs[0], t, ctx.numel(t)) for t in op.outputs]


def lower_assign(op: Op, ctx: LowerContext) -> list[Call]:
    """``assign`` / ``assign_add`` / ``assign_sub``: compute the new value into the output, then
    copy it over the parameter named by ``attrs["writes"]`` (else the first input)."""
    target = op.attrs.get("writes") or op.inputs[0]
    if not isinstance(target, str):
        target = list(target)[0]
    value = op.inputs[1] if len(op.inputs) > 1 else op.inputs[0]
    y = op.outputs[0]
    n = ctx.numel(y)
    if op.kind == "assign":
        first = _copy(value, y, n)
    else:
        first = make_call("elementwise", "binary", elem_grid(n), _BLOCK, a=In(target),
                          b=In(value), y=Out(y), n=n,
                          code=BINARY_CODES["add" if op.kind == "assign_add" else "sub"],
                          **_out_args(y))
    return [first, _copy(y, target, n)]


def spin_shape(op: Op, ctx: LowerContext) -> tuple[int, int, int]:
    """``(grid, block, spin_ns)`` of a spin op: ``thread_blocks`` blocks (unknown: the whole
    device, ``limits.slots``), :attr:`DeviceLimits.spin_block` threads, and the op's duration
    minus the calibrated launch overhead, spread over ``ceil(grid / slots)`` waves."""
    limits = ctx.limits
    grid = op.thread_blocks or limits.slots
    waves = -(-grid // limits.slots)
    busy_us = max(0.0, ctx.duration_us(op) - limits.spin_overhead_us)
    return grid, limits.spin_block, int(round(busy_us * 1000.0 / waves))


def lower_spin(op: Op, ctx: LowerContext) -> list[Call]:
    """Toy ops: the spin kernel of duration ``duration_us`` on ``thread_blocks`` blocks; it writes
    ``1 + sum(input[0])`` to every output element (extra outputs: zero-length spins)."""
    grid, block, spin_ns = spin_shape(op, ctx)
    inputs = tuple(t for t in dict.fromkeys(op.inputs) if ctx.numel(t) > 0)
    table = PtrTable(inputs) if inputs else NULL
    outs: list[TensorId | None] = list(op.outputs) or [None]
    calls = []
    for i, y in enumerate(outs):
        n = ctx.numel(y) if y is not None else 0
        calls.append(make_call(
            "spin", "spin", (min(grid, MAX_GRID_X), 1, 1), (block, 1, 1), in_ptrs=table,
            n_in=len(inputs), y=Out(y) if y is not None else NULL, n=n,
            spin_ns=spin_ns if i == 0 else 0,
            row_len=RowLen(y) if y is not None else 1, row_stride=RowStride(y) if y is not None
            else 1))
    return calls


def lower_fused(op: Op, ctx: LowerContext) -> list[Call]:
    """O1 fused ops: one generated kernel (see :func:`fused_kernel`)."""
    fk = fused_kernel(op, ctx.shape_of)
    named: dict[str, Any] = {f"in{i}": In(t) for i, t in enumerate(fk.inputs)}
    for i, t in enumerate(fk.outputs):
        named[f"out{i}"] = Out(t)
        named[f"rl{i}"] = RowLen(t)
        named[f"rs{i}"] = RowStride(t)
    named.update(dict(fk.ints))
    if fk.reduce is None:
        grid, block = elem_grid(fk.n), _BLOCK
    else:
        grid, block = _row_grid(fk.rows), (ROW_THREADS, 1, 1)
    return [make_call(fk.name, fk.name, grid, block, source=fk.source, fused=fk, **named)]


Lowering = Callable[[Op, LowerContext], list[Call]]

#: Lowering per op kind (STYLE.md R2: one table).  No-task kinds launch nothing (their output
#: aliases the input); ``"op"`` and shapeless ops use :func:`lower_spin`.
LOWERINGS: dict[str, Lowering] = {
    "conv2d": lower_conv2d,
    "sepconv": lower_sepconv,
    "maxpool": lower_pool,
    "avgpool": lower_pool,
    "global_avgpool": lower_global_avgpool,
    **{k: lower_unary for k in UNARY_CODES if k != "identity"},
    **{k: lower_binary for k in BINARY_CODES},
    "batchnorm": lower_batchnorm,
    "concat": lower_concat,
    "matmul": lower_matmul,
    "softmax": lower_softmax,
    "layernorm": lower_layernorm,
    "transpose": lower_transpose,
    **{k: lower_copy for k in COPY_KINDS},
    **{k: lower_assign for k in STATE_KINDS},
    "fused": lower_fused,
    "op": lower_spin,
}


def lowering_of(op: Op, has_shapes: Callable[[Op], bool]) -> str:
    """How ``op`` runs: ``"alias"`` (no-task op: no kernel), ``"spin"`` (toy op: kind ``"op"``,
    tensors without shapes, or a device other than ``gpu``) or ``"kernel"`` (its lowering)."""
    if op.kind in NO_TASK_KINDS and len(op.inputs) == 1 and len(op.outputs) == 1:
        return "alias"
    if op.kind == "op" or op.device != "gpu" or not has_shapes(op):
        return "spin"
    if op.kind not in LOWERINGS:
        raise OptionError(f"op {op.id!r} has kind {op.kind!r}, which has no GPU kernel "
                          f"(known: {', '.join(sorted(LOWERINGS))})")
    return "kernel"


def lower(op: Op, ctx: LowerContext, how: str) -> list[Call]:
    """The kernel calls of ``op`` (``how`` from :func:`lowering_of`)."""
    if how == "alias":
        return []
    if how == "spin":
        return lower_spin(op, ctx)
    try:
        return LOWERINGS[op.kind](op, ctx)
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        if isinstance(exc, OptionError):
            raise
        raise OptionError(f"op {op.id!r} ({op.kind}): cannot lower to a kernel: "
                          f"{type(exc).__name__}: {exc}") from None


# ------------------------------------------------------------------------------------ fused
FUSED_UNARY = frozenset(UNARY_CODES) - {"identity"}
FUSED_BINARY = frozenset(BINARY_CODES)
FUSED_REDUCE = frozenset({"softmax", "layernorm", "global_avgpool"})


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


def _float_literal(value: float) -> str:
    import numpy as np

    text = f"{float(np.float32(value)):.9g}"
    if not any(ch in text for ch in ".e"):
        text += ".0"
    return text + "f"


def _fused_shape(op: Op, shape_of: Callable[[TensorId], tuple[int, ...]]
                 ) -> tuple[int, ...]:
    """Shape of the elementwise part: the first external activation input of a member."""
    external = set(op.inputs)
    for member in op.attrs["expr"]:
        inputs = member["inputs"][:1] if member["kind"] == "batchnorm" else member["inputs"]
        if member["kind"] in FUSED_REDUCE:
            continue
        for t in inputs:
            if t in external:
                return tuple(shape_of(t))
    raise OptionError(f"fused op {op.id!r}: no elementwise member reads an external tensor")


def fused_kernel(op: Op, shape_of: Callable[[TensorId], tuple[int, ...]]) -> FusedKernel:
    """Generate ONE kernel for a fused op (``attrs["members"]``, ``attrs["expr"]``).

    Elementwise members are evaluated per element in topological order, intermediates stay in
    registers, and only the op's kept outputs are stored; a reduce member (the group's last)
    becomes the row reduction of ``kernels/reduce.cuh`` over a prologue functor that computes its
    input on the fly.  Kernel name = ``wb_fused_`` + a hash of the source, so identical groups
    (e.g. the 94 BN+ReLU pairs of Inception V3) share one compiled kernel.
    """
    expr = op.attrs.get("expr")
    if not expr:
        raise OptionError(f"fused op {op.id!r} has no attrs['expr']")
    shape = _fused_shape(op, shape_of)
    n = math.prod(shape)
    inputs = list(op.inputs)
    kept = list(op.outputs)
    var: dict[TensorId, str] = {}
    stmts: list[tuple[Any, ...]] = []
    ints: list[tuple[str, int]] = []
    counter = [0]

    def fresh() -> str:
        counter[0] += 1
        return f"v{counter[0] - 1}"

    def value(t: TensorId) -> str:
        if t in var:
            return var[t]
        if t not in inputs:
            raise OptionError(f"fused op {op.id!r}: tensor {t!r} is neither an input nor made "
                              f"by an earlier member")
        if math.prod(shape_of(t)) != n:
            raise OptionError(f"fused op {op.id!r}: input {t!r} of shape {shape_of(t)} does not "
                              f"match the group's shape {shape}")
        v = fresh()
        stmts.append(("load", v, inputs.index(t)))
        var[t] = v
        return v

    reduce = None
    for k, member in enumerate(expr):
        kind, ins, outs = member["kind"], list(member["inputs"]), list(member["outputs"])
        attrs = member.get("attrs", {}) or {}
        if kind in FUSED_REDUCE:
            if k != len(expr) - 1:
                raise OptionError(f"fused op {op.id!r}: reduce member {member['op']!r} is not "
                                  f"the group's last")
            reduce = _reduce_info(op, kind, attrs, value(ins[0]), ins, inputs, shape, ints)
            continue
        if kind in FUSED_UNARY:
            v = fresh()
            stmts.append(("un", v, UNARY_CODES[kind], value(ins[0])))
        elif kind in FUSED_BINARY and len(ins) >= 2:
            v = value(ins[0])
            for other in ins[1:]:
                w = fresh()
                stmts.append(("bin", w, BINARY_CODES[kind], v, value(other)))
                v = w
        elif kind == "add" and len(ins) == 1:
            v = value(ins[0])
        elif kind == "batchnorm":
            axis = attrs.get("axis", 1) % len(shape)
            slot = inputs.index(ins[1])
            c_name, inner_name = f"c{len(ints)}", f"inner{len(ints)}"
            ints += [(c_name, shape[axis]), (inner_name, math.prod(shape[axis + 1:]))]
            v = fresh()
            stmts.append(("bn", v, value(ins[0]), slot, c_name, inner_name,
                          float(attrs.get("eps", 1e-3))))
        else:
            raise OptionError(f"fused op {op.id!r}: member kind {kind!r} has no fused code "
                              f"(known: {', '.join(sorted(FUSED_UNARY | FUSED_BINARY))}, "
                              f"batchnorm, {', '.join(sorted(FUSED_REDUCE))})")
        var[outs[0]] = v
    outputs: list[TensorId] = []
    if reduce is not None:
        outputs.append(expr[-1]["outputs"][0])
    for t in kept:
        if t in outputs:
            continue
        if t not in var:
            raise OptionError(f"fused op {op.id!r}: kept output {t!r} is not computed")
        stmts.append(("store", len(outputs), var[t]))
        outputs.append(t)
    if reduce is None:
        ints.append(("n", n))
    source = _render(tuple(stmts), len(inputs), len(outputs), ints, reduce)
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    name = f"wb_fused_{digest}"
    return FusedKernel(name, source.replace("WB_KERNEL_NAME", name), tuple(inputs),
                       tuple(outputs), tuple(ints), tuple(stmts), reduce, n, shape)


def _reduce_info(op: Op, kind: str, attrs: Mapping[str, Any], v: str, ins: list[TensorId],
                 inputs: list[TensorId], shape: tuple[int, ...], ints: list[tuple[str, int]]
                 ) -> tuple[str, str, dict[str, Any]]:
    info: dict[str, Any]
    if kind == "softmax":
        outer, length, inner = softmax_geometry(shape, attrs.get("axis", -1))
        info = {"rows": outer * inner, "L": length, "inner": inner,
                "scale": float(attrs.get("scale", 1.0))}
        ints += [("rows", outer * inner), ("L", length), ("inner", inner)]
    elif kind == "layernorm":
        d = shape[-1]
        info = {"rows": math.prod(shape) // d, "D": d, "eps": float(attrs.get("eps", 1e-5)),
                "params": inputs.index(ins[1])}
        ints += [("rows", info["rows"]), ("D", d)]
    else:  # global_avgpool
        info = {"rows": shape[0] * shape[1], "HW": math.prod(shape[2:])}
        ints += [("rows", info["rows"]), ("HW", info["HW"])]
    return (kind, v, info)


def _render_stmt(st: tuple[Any, ...], store_guard: str | None) -> str:
    tag = st[0]
    if tag == "load":
        return f"const float {st[1]} = in{st[2]}[i];"
    if tag == "un":
        return f"const float {st[1]} = wb_unary({st[3]}, {st[2]});"
    if tag == "bin":
        return f"const float {st[1]} = wb_binary({st[3]}, {st[4]}, {st[2]});"
    if tag == "bn":
        _, v, x, slot, c, inner, eps = st
        return (f"const float {v} = wb_batchnorm({x}, in{slot}, (i / {inner}) % {c}, {c}, "
                f"{_float_literal(eps)});")
    if tag == "store":
        line = f"out{st[1]}[wb_store_index(i, rl{st[1]}, rs{st[1]})] = {st[2]};"
        return f"if ({store_guard}) {line}" if store_guard else line
    raise OptionError(f"unknown fused statement {st!r}")


def _render(stmts: tuple[tuple[Any, ...], ...], n_in: int, n_out: int,
            ints: list[tuple[str, int]], reduce: tuple[str, str, Mapping[str, Any]] | None
            ) -> str:
    ins = [f"const float* __restrict__ in{k}" for k in range(n_in)]
    outs = [f"float* __restrict__ out{k}, i64 rl{k}, i64 rs{k}" for k in range(n_out)]
    params = ", ".join(ins + outs + [f"i64 {name}" for name, _ in ints])
    head = "// generated by workbench.gpu.kernels.fused_kernel\n"
    if reduce is None:
        body = "\n        ".join(_render_stmt(s, None) for s in stmts)
        return (f'{head}#include "common.cuh"\n\n'
                f'extern "C" __global__ void WB_KERNEL_NAME({params}) {{\n'
                f"    WB_GRID_STRIDE(i, n) {{\n        {body}\n    }}\n}}\n")
    kind, v, info = reduce
    # The prologue functor: a member per input, kept output (slot >= 1) and i64 parameter.
    members = ([f"const float* __restrict__ in{k};" for k in range(n_in)]
               + [f"float* __restrict__ out{k}; i64 rl{k}; i64 rs{k};" for k in range(1, n_out)]
               + [f"i64 {name};" for name, _ in ints])
    inits = ([f"in{k}" for k in range(n_in)]
             + [x for k in range(1, n_out) for x in (f"out{k}", f"rl{k}", f"rs{k}")]
             + [name for name, _ in ints])
    body = "\n        ".join(_render_stmt(s, "first") for s in stmts)
    if kind == "softmax":
        call = (f"wb_softmax_rows(load, out0, rows, L, inner, {_float_literal(info['scale'])}, "
                f"rl0, rs0, smem);")
    elif kind == "layernorm":
        call = (f"wb_layernorm_rows(load, in{info['params']}, out0, rows, D, "
                f"{_float_literal(info['eps'])}, rl0, rs0, smem);")
    else:
        call = "wb_mean_rows(load, out0, rows, HW, rl0, rs0, smem);"
    member_text = "\n    ".join(members)
    return (f'{head}#include "reduce.cuh"\n\nstruct WbPrologue {{\n    {member_text}\n'
            f"    __device__ __forceinline__ float operator()(i64 i, bool first) const {{\n"
            f"        {body}\n        return {v};\n    }}\n}};\n\n"
            f'extern "C" __global__ void WB_KERNEL_NAME({params}) {{\n'
            f"    __shared__ float smem[{ROW_THREADS}];\n"
            f"    const WbPrologue load{{{', '.join(inits)}}};\n    {call}\n}}\n")


def call_source(call: Call) -> str:
    """Compilable source of the module a call's kernel lives in."""
    if call.source is not None:
        return inline_includes(call.source)
    return module_source(call.module)


# ------------------------------------------------------------------------------------ compile
_MODULES: dict[tuple[str, str], Any] = {}


def get_function(module: str, kernel: str, source: str | None = None) -> Any:
    """The compiled ``cupy.RawKernel`` for ``kernel`` (GPU only; one RawModule per module and
    source text, options :data:`COMPILE_OPTIONS`, cached for the process)."""
    import cupy

    text = inline_includes(source) if source is not None else module_source(module)
    key = (module, hashlib.sha1(text.encode()).hexdigest())
    mod = _MODULES.get(key)
    if mod is None:
        mod = _MODULES[key] = cupy.RawModule(code=text, options=COMPILE_OPTIONS)
    return mod.get_function(kernel)


__all__ = [
    "ACT_CODES", "BINARY_CODES", "COMPILE_OPTIONS", "LOWERINGS", "SOURCE_FILES", "UNARY_CODES",
    "Call", "DeviceLimits", "FusedKernel", "In", "LowerContext", "Out", "OutSlice", "Param",
    "PtrTable", "RowLen", "RowStride", "ScratchPtr", "call_source", "concat_geometry",
    "elem_grid", "fused_kernel", "get_function", "inline_includes", "kernels_dir", "lower",
    "lowering_of", "make_call", "module_source", "parse_signatures", "signature",
    "softmax_geometry", "spin_shape", "transpose_geometry",
]
