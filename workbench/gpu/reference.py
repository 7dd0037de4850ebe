"""NumPy references for the GPU kernels: what each op computes, from its attrs and shapes.

:data:`REFERENCES`, :func:`reference_op` and :func:`run_graph_reference`: one function per kind
(conv2d with groups and pre/post activations, sepconv, pools, elementwise and activations,
batchnorm, concat, matmul and linear, softmax, layernorm, transpose, copies, assign, the spin op
and fused ops), each op lowered the way the GPU executor lowers it.  They agree with
:mod:`workbench.reference` where both define a kind (the tests check it).  The kernel twins and the
CPU emulator of launch plans are in :mod:`workbench.gpu.emulator`.

Inputs are drawn exactly as :func:`workbench.reference.run_reference` draws them
(:func:`workbench.reference.draw_inputs`, re-exported here), so results compare directly.
Complexity: one NumPy call per op.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from workbench.errors import OptionError, ScheduleError
from workbench.gpu.lowering import lowering_of
from workbench.graph import Graph, Op, TensorId
from workbench.reference import draw_inputs, shape_or_flat

Array = np.ndarray


F32 = np.float32


def _gelu(x: Array) -> Array:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


UNARY: dict[str | None, Callable[[Array], Array]] = {
    None: lambda x: x, "identity": lambda x: x, "relu": lambda x: np.maximum(x, 0),
    "gelu": _gelu, "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "tanh": np.tanh,
    "exp": np.exp, "log": np.log, "neg": np.negative, "abs": np.abs, "sqrt": np.sqrt,
    "atan": np.arctan,
}


BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
}


def _pair(value: Any, default: int) -> tuple[int, int]:
    if value is None:
        return (default, default)
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    return (int(value[0]), int(value[1]))


def conv2d(x: Array, w: Array, bias: Array | None = None, *, stride: Any = 1, padding: Any = 0,
           groups: int = 1, act: str | None = None, pre_act: str | None = None) -> Array:
    """NCHW convolution (no dilation), float64 accumulation; ``pre_act`` is applied to the input
    before zero padding, ``act`` after the bias."""
    sh, sw = _pair(stride, 1)
    ph, pw = _pair(padding, 0)
    x = UNARY[pre_act](x.astype(np.float64))
    n, c, _, _ = x.shape
    k, cpg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]
    ho, wo = win.shape[2], win.shape[3]
    win = win.reshape(n, groups, cpg, ho, wo, kh, kw)
    wg = w.astype(np.float64).reshape(groups, k // groups, cpg, kh, kw)
    out = np.einsum("ngchwrs,gkcrs->ngkhw", win, wg, optimize=True).reshape(n, k, ho, wo)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return UNARY[act](out).astype(F32)


def pool2d(x: Array, *, kernel: Any, stride: Any = None, padding: Any = 0,
           mode: str = "max") -> Array:
    """Max pool (padding never wins) or average pool with the padding in the divisor."""
    kh, kw = _pair(kernel, 1)
    sh, sw = _pair(stride if stride is not None else kernel, 1)
    ph, pw = _pair(padding, 0)
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)),
                constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]
    out = win.max(axis=(4, 5)) if mode == "max" else win.sum(axis=(4, 5)) / (kh * kw)
    return out.astype(F32)


def softmax(x: Array, *, axis: int = -1, scale: float = 1.0) -> Array:
    z = x.astype(np.float64) * scale
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(F32)


def layernorm(x: Array, params: Array, *, eps: float = 1e-5) -> Array:
    z = x.astype(np.float64)
    p = params.astype(np.float64).reshape(2, -1)
    mean = z.mean(axis=-1, keepdims=True)
    var = z.var(axis=-1, keepdims=True)
    return ((z - mean) / np.sqrt(var + eps) * p[0] + p[1]).astype(F32)


def batchnorm(x: Array, params: Array, *, eps: float = 1e-3, axis: int = 1) -> Array:
    z = x.astype(np.float64)
    gamma, beta, mean, var = params.astype(np.float64).reshape(4, -1)
    shape = [1] * z.ndim
    shape[axis % z.ndim] = -1
    scale = gamma / np.sqrt(var + eps)
    return (z * scale.reshape(shape) + (beta - mean * scale).reshape(shape)).astype(F32)


def matmul(a: Array, b: Array, bias: Array | None = None) -> Array:
    out = np.matmul(a.astype(np.float64), b.astype(np.float64))
    if bias is not None:
        out = out + bias
    return out.astype(F32)


def spin_value(inputs: Sequence[Array]) -> float:
    """What a spin op writes everywhere: ``1 + sum of element 0 of each non-empty input``."""
    value = F32(1.0)
    for x in inputs:
        if x.size:
            value = F32(value + F32(x.reshape(-1)[0]))
    return float(value)


ShapeOf = Callable[[TensorId], tuple[int, ...]]


Reference = Callable[[Op, list[Array], ShapeOf], list[Array]]


def _ref_conv(op: Op, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    x = a[0]
    at = op.attrs
    kh, kw = _pair(at.get("kernel"), 1)
    groups = int(at.get("groups", 1) or 1)
    k = shape_of(op.outputs[0])[1]
    w = a[1].reshape(k, x.shape[1] // groups, kh, kw)
    bias = a[2] if len(a) > 2 else None
    return [conv2d(x, w, bias, stride=at.get("stride", 1), padding=at.get("padding", 0),
                   groups=groups, act=at.get("act"), pre_act=at.get("pre_act"))]


def _ref_sepconv(op: Op, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    x, dw, pw = a[0], a[1], a[2]
    at = op.attrs
    kh, kw = _pair(at.get("kernel"), 3)
    c = x.shape[1]
    mid = conv2d(x, dw.reshape(c, 1, kh, kw), stride=at.get("stride", 1),
                 padding=at.get("padding", kh // 2), groups=c, pre_act=at.get("pre_act", "relu"))
    k = shape_of(op.outputs[0])[1]
    return [conv2d(mid, pw.reshape(k, c, 1, 1))]


def _ref_pool(op: Op, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    at = op.attrs
    return [pool2d(a[0], kernel=at.get("kernel"), stride=at.get("stride"),
                   padding=at.get("padding", 0), mode="max" if op.kind == "maxpool" else "avg")]


def _ref_add(op: Op, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    out = a[0]
    for x in a[1:]:
        out = (out + x).astype(F32)
    return [np.array(out, dtype=F32)]


def _ref_concat(op: Op, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    axis = op.attrs.get("axis", 1) if a[0].ndim > 1 else 0
    return [np.concatenate(a, axis=axis)]


def _ref_matmul(op: Op, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    return [matmul(a[0], a[1], a[2] if len(a) > 2 else None)]


def _ref_assign(op: Op, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    value = a[1] if len(a) > 1 else a[0]
    if op.kind == "assign_add":
        value = a[0] + value
    elif op.kind == "assign_sub":
        value = a[0] - value
    return [np.array(value, dtype=F32)]


def _ref_spin(op: Op, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    unique = dict(zip(op.inputs, a, strict=True))  # the kernel reads each tensor once
    v = spin_value(list(unique.values()))
    return [np.full(shape_of(t), v, dtype=F32) for t in op.outputs]


def _ref_fused(op: Op, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    env = dict(zip(op.inputs, a, strict=True))

    def member_shape(t: TensorId) -> tuple[int, ...]:
        return tuple(env[t].shape) if t in env else shape_of(t)

    for e in op.attrs["expr"]:
        member = Op(e["op"], kind=e["kind"], inputs=tuple(e["inputs"]),
                    outputs=tuple(e["outputs"]), attrs=e.get("attrs", {}) or {})
        args = [env[t] for t in member.inputs]
        env.update(zip(member.outputs, reference_op(member, args, member_shape), strict=True))
    return [env[t] for t in op.outputs]


def _unary_ref(kind: str) -> Reference:
    fn = UNARY[kind]
    return lambda op, a, s: [fn(a[0].astype(np.float64)).astype(F32)]


def _binary_ref(kind: str) -> Reference:
    fn = BINARY[kind]
    return lambda op, a, s: [np.asarray(fn(a[0], a[1]), dtype=F32)]


#: Reference per op kind (``"op"`` = the spin op of toy graphs).
REFERENCES: dict[str, Reference] = {
    "conv2d": _ref_conv,
    "sepconv": _ref_sepconv,
    "maxpool": _ref_pool,
    "avgpool": _ref_pool,
    "global_avgpool": lambda op, a, s: [a[0].astype(np.float64).mean(axis=(2, 3), keepdims=True)
                                        .astype(F32)],
    **{k: _unary_ref(k) for k in UNARY if k not in (None, "identity")},
    "add": _ref_add,
    **{k: _binary_ref(k) for k in ("sub", "mul", "div")},
    "batchnorm": lambda op, a, s: [batchnorm(a[0], a[1], eps=op.attrs.get("eps", 1e-3),
                                             axis=op.attrs.get("axis", 1))],
    "concat": _ref_concat,
    "matmul": _ref_matmul,
    "softmax": lambda op, a, s: [softmax(a[0], axis=op.attrs.get("axis", -1),
                                         scale=op.attrs.get("scale", 1.0))],
    "layernorm": lambda op, a, s: [layernorm(a[0], a[1], eps=op.attrs.get("eps", 1e-5))],
    "transpose": lambda op, a, s: [np.ascontiguousarray(np.transpose(a[0], op.attrs["perm"]))],
    **{k: (lambda op, a, s: [x.copy() for x in a[:1] for _ in op.outputs])
       for k in ("h2d", "d2h", "d2d", "print")},
    **{k: _ref_assign for k in ("assign", "assign_add", "assign_sub")},
    "fused": _ref_fused,
    "op": _ref_spin,
}


def reference_op(op: Op, inputs: list[Array], shape_of: ShapeOf, *, how: str = "kernel"
                 ) -> list[Array]:
    """Outputs of one op (``how="spin"``: the spin op's semantics whatever the kind;
    ``"alias"``: a view of the input with the output's shape)."""
    if how == "alias":
        return [inputs[0].reshape(shape_of(op.outputs[0]))]
    kind = "op" if how == "spin" else op.kind
    try:
        fn = REFERENCES[kind]
    except KeyError:
        raise OptionError(f"no NumPy reference for op kind {op.kind!r} (op {op.id!r})") from None
    return [np.asarray(v, dtype=F32) for v in fn(op, inputs, shape_of)]


def run_graph_reference(schedule_or_graph: Any, inputs: Mapping[TensorId, Any] | None = None,
                        *, seed: int = 0) -> dict[TensorId, Array]:
    """Every tensor of a graph computed with :data:`REFERENCES`, each op lowered the way the GPU
    executor lowers it (no-task ops alias, toy ops spin), in the schedule's issue order (a Graph:
    topological order).  Parameters written by ``assign`` ops end with their last value."""
    if isinstance(schedule_or_graph, Graph):
        graph, order = schedule_or_graph, list(schedule_or_graph.topo_order())
    else:
        graph, order = schedule_or_graph.graph, list(schedule_or_graph.issue_order)
    values = draw_inputs(graph, seed, inputs)
    shape_of = shape_or_flat(graph)
    has_shapes = _has_shapes(graph)
    for op_id in order:
        op = graph.op(op_id)
        try:
            args = [values[t] for t in op.inputs]
        except KeyError as exc:
            raise ScheduleError(f"op {op_id!r} runs before its input {exc.args[0]!r} is "
                                f"computed") from None
        how = lowering_of(op, has_shapes)
        outs = reference_op(op, args, shape_of, how=how)
        values.update(zip(op.outputs, outs, strict=True))
        if how == "kernel" and op.kind in ("assign", "assign_add", "assign_sub"):
            target = op.attrs.get("writes") or op.inputs[0]
            values[target if isinstance(target, str) else list(target)[0]] = outs[0].copy()
    return values


def _has_shapes(graph: Graph) -> Callable[[Op], bool]:
    tensors = graph.tensors

    def check(op: Op) -> bool:
        for t in op.outputs:
            if not tensors[t].shape:
                return False
        for t in op.inputs:
            if tensors[t].role != "parameter" and not tensors[t].shape:
                return False
        return True

    return check


__all__ = [
    "BINARY", "F32", "REFERENCES", "UNARY", "Reference", "ShapeOf", "batchnorm", "conv2d",
    "draw_inputs", "layernorm", "matmul", "pool2d", "reference_op", "run_graph_reference",
    "shape_or_flat", "softmax", "spin_value",
]
