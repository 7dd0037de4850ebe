"""The lowering of ops to kernel calls: one function per op kind, in one table.

:data:`LOWERINGS` maps op kinds to functions ``(op, ctx) -> list[Call]``
(:class:`~workbench.executors.gpu.calls.Call`).  Every output is written through the row mapping of
``kernels/common.cuh``, so a producer can write into its slice of a concat output.  Ops of toy
graphs (kind ``"op"``, no shapes, or not on ``gpu``) run the calibrated ``spin`` kernel
(:func:`lower_spin`); no-task ops launch nothing (:func:`lowering_of` says ``"alias"``).  Pure
Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from workbench.errors import OptionError
from workbench.executors.gpu.calls import (
    _BLOCK,
    BINARY_CODES,
    COPY_KINDS,
    MAX_GRID_X,
    MAX_GRID_YZ,
    NULL,
    ROW_THREADS,
    STATE_KINDS,
    UNARY_CODES,
    Call,
    In,
    LowerContext,
    Out,
    OutSlice,
    PtrTable,
    RowLen,
    RowStride,
    ScratchPtr,
    _act,
    _out_args,
    _pair,
    _row_grid,
    _thread_grid,
    elem_grid,
    make_call,
    softmax_geometry,
)
from workbench.executors.gpu.fused import fused_kernel
from workbench.values.graph import NO_TASK_KINDS, Op, TensorId


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


__all__ = [
    "LOWERINGS", "Lowering", "concat_geometry", "lower", "lower_assign", "lower_batchnorm",
    "lower_binary", "lower_concat", "lower_conv2d", "lower_copy", "lower_fused",
    "lower_global_avgpool", "lower_layernorm", "lower_matmul", "lower_pool", "lower_sepconv",
    "lower_softmax", "lower_spin", "lower_transpose", "lower_unary", "lowering_of",
    "spin_shape", "transpose_geometry",
]
