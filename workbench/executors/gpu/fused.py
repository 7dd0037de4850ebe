"""The fused elementwise code generator: one CUDA kernel per O1 fused op.

:func:`fused_kernel` turns ``attrs["expr"]`` of an O1 fused op (:mod:`workbench.passes.fusion`)
into a small SSA program (``stmts``) and renders it as ONE CUDA kernel; a ``reduce``-pattern group
(elementwise ops feeding a softmax, layer norm or global average pool) becomes a prologue functor
of the row reductions in ``kernels/reduce.cuh``.  The same program is evaluated with NumPy by
:func:`workbench.executors.gpu.emulator.eval_stmts`, so the generator is tested on the CPU.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from typing import Any

from workbench.errors import OptionError
from workbench.executors.gpu.calls import (
    BINARY_CODES,
    ROW_THREADS,
    UNARY_CODES,
    FusedKernel,
    softmax_geometry,
)
from workbench.values.graph import Op, TensorId

FUSED_UNARY = frozenset(UNARY_CODES) - {"identity"}


FUSED_BINARY = frozenset(BINARY_CODES)


FUSED_REDUCE = frozenset({"softmax", "layernorm", "global_avgpool"})


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
    head = "// generated by workbench.executors.gpu.kernels.fused_kernel\n"
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


__all__ = [
    "FUSED_BINARY", "FUSED_REDUCE", "FUSED_UNARY", "fused_kernel",
]
