"""NumPy references for the GPU kernels, at two levels, plus a CPU emulator of launch plans.

* **Op references** (:data:`REFERENCES`, :func:`reference_op`, :func:`run_graph_reference`): what
  an op computes, from its attrs and shapes, one function per kind (conv2d with groups and
  pre/post activations, sepconv, pools, elementwise and activations, batchnorm, concat, matmul and
  linear, softmax, layernorm, transpose, copies, assign, the spin op and fused ops).  They agree
  with :mod:`workbench.reference` where both define a kind (the tests check it).
* **Kernel twins** (:data:`TWINS`): one NumPy function per CUDA kernel, reading its arguments *by
  the parameter names parsed from the CUDA source* and memory through the same pointers, row
  mappings and pointer tables as the kernel.  :func:`eval_stmts` runs the fused code generator's
  program.
* **The emulator** (:func:`emulate`): runs a :class:`~workbench.gpu.launch_plan.LaunchPlan` on a
  NumPy "device" (one byte array per memory space), either in issue order or in a random
  interleaving of the streams that respects only the plan's events (``order="random"``), so a
  missing sync or an arena overlap shows up as wrong outputs on the CPU.  Kernels run atomically
  (no overlap inside a kernel), which is enough to exercise every ordering the events allow
  between kernels.

Inputs are drawn exactly as :func:`workbench.reference.run_reference` draws them
(:func:`draw_inputs`), so results compare directly.  Complexity: one NumPy call per kernel.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from workbench.errors import OptionError, ScheduleError
from workbench.graph import Graph, Op, TensorId

Array = np.ndarray
F32 = np.float32


# ----------------------------------------------------------------------------------- inputs
def draw_inputs(graph: Graph, seed: int = 0, given: Mapping[TensorId, Any] | None = None, *,
                init: str = "scaled") -> dict[TensorId, Array]:
    """Values of the graph inputs and parameters (float32), from ``default_rng(seed)`` in tensor
    order, as :mod:`workbench.reference` draws them: parameters U(0.5, 1.5), others N(0, 1).

    ``init="scaled"`` (the default here) then maps every *weight* — a parameter read as the
    kernel of a conv2d/sepconv or the right operand of a matmul — from U(0.5, 1.5) to
    U(-1, 1) · sqrt(6 / fan_in), variance 2 / fan_in (He initialisation), so that deep networks
    keep their activations finite; the draws themselves (and every other tensor) are those of
    ``init="reference"``.
    """
    if init not in ("scaled", "reference"):
        raise OptionError(f"unknown init {init!r} (known: scaled, reference)")
    rng = np.random.default_rng(seed)
    given = dict(given or {})
    out: dict[TensorId, Array] = {}
    for t in graph.tensors.values():
        if t.producer is not None:
            continue
        if t.id in given:
            out[t.id] = np.asarray(given[t.id], dtype=F32)
            continue
        shape = t.shape or (max(1, t.size_bytes // 4),)
        if t.role == "parameter":
            out[t.id] = rng.uniform(0.5, 1.5, size=shape).astype(F32)
        else:
            out[t.id] = rng.standard_normal(size=shape).astype(F32)
    if init == "scaled":
        for name, fan_in in _weight_fan_in(graph).items():
            if name in given or name not in out:
                continue
            u = 2.0 * (out[name].astype(np.float64) - 0.5) - 1.0  # U(0.5, 1.5) -> U(-1, 1)
            out[name] = (u * math.sqrt(6.0 / fan_in)).astype(F32)
    return out


def _weight_fan_in(graph: Graph) -> dict[TensorId, int]:
    """Parameters used as weights → their fan-in (elements summed per output element)."""
    tensors = graph.tensors
    out: dict[TensorId, int] = {}
    for op in graph.ops:
        positions = {"conv2d": (1,), "sepconv": (1, 2), "matmul": (1,)}.get(op.kind, ())
        for pos in positions:
            if pos >= len(op.inputs):
                continue
            t = tensors[op.inputs[pos]]
            if t.role != "parameter" or t.producer is not None:
                continue
            size = max(1, t.size_bytes // 4)
            if op.kind == "matmul":
                fan = tensors[op.inputs[0]].shape[-1] if tensors[op.inputs[0]].shape else size
            elif op.kind == "sepconv" and pos == 1:
                kernel = op.attrs.get("kernel", (3, 3))
                fan = int(kernel[0]) * int(kernel[1])
            else:
                cout = (tensors[op.outputs[0]].shape or (1, 1))[1]
                fan = max(1, size // max(1, cout))
            out[t.id] = max(1, int(fan))
    return out


def shape_or_flat(graph: Graph) -> Callable[[TensorId], tuple[int, ...]]:
    """``shape_of`` for a graph: the tensor's shape, else ``(size_bytes // 4,)``."""
    tensors = graph.tensors

    def shape_of(t: TensorId) -> tuple[int, ...]:
        tensor = tensors[t]
        return tuple(tensor.shape) if tensor.shape else (tensor.size_bytes // 4,)

    return shape_of


# ----------------------------------------------------------------------------------- op references
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
    from workbench.gpu.kernels import lowering_of

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


# ----------------------------------------------------------------------------------- the device
class Memory:
    """NumPy stand-in for device memory: one byte array per space of a launch plan; pointers are
    ``Ptr(space, offset)`` values and ``"tables"`` pointers index the plan's pointer tables."""

    def __init__(self, spaces: Mapping[str, int], tables: Sequence[Any], *,
                 fill: float = float("nan")) -> None:
        self.spaces = {}
        for name, nbytes in spaces.items():
            buf = np.empty(-(-nbytes // 4) * 4, dtype=np.uint8)
            buf.view(F32)[:] = fill
            self.spaces[name] = buf
        self.tables = tuple(tables)

    def _floats(self, ptr: Any, count: int) -> Array:
        if ptr is None or ptr.space == "null":
            raise OptionError("kernel dereferences a null pointer")
        buf = self.spaces[ptr.space]
        if ptr.offset % 4 or ptr.offset + 4 * count > len(buf):
            raise OptionError(f"access of {count} floats at {ptr.space}+{ptr.offset} is outside "
                              f"the space ({len(buf)} bytes) or misaligned")
        return buf[ptr.offset:ptr.offset + 4 * count].view(F32)

    def read(self, ptr: Any, count: int) -> Array:
        return self._floats(ptr, count).copy()

    def write(self, ptr: Any, values: Array, row_len: int = 0, row_stride: int = 0) -> None:
        flat = np.asarray(values, dtype=F32).reshape(-1)
        n = flat.size
        if n == 0:
            return
        if not row_len or row_len == row_stride:
            self._floats(ptr, n)[:] = flat
            return
        e = np.arange(n)
        index = (e // row_len) * row_stride + e % row_len
        self._floats(ptr, int(index[-1]) + 1)[index] = flat

    def table(self, ptr: Any, count: int) -> list[Any]:
        if count == 0:
            return []
        start = ptr.offset // 8
        return list(self.tables[start:start + count])


Args = Mapping[str, Any]


def _y(mem: Memory, a: Args, values: Array) -> None:
    mem.write(a[_out_name(a)], values, int(a["row_len"]), int(a["row_stride"]))


def _out_name(a: Args) -> str:
    return "Cout" if "Cout" in a else "y"


def _twin_unary(mem: Memory, a: Args, call: Any) -> None:
    code = {v: k for k, v in _codes()[0].items()}[int(a["code"])]
    x = mem.read(a["x"], int(a["n"]))
    _y(mem, a, UNARY[code](x))


def _twin_binary(mem: Memory, a: Args, call: Any) -> None:
    code = {v: k for k, v in _codes()[1].items()}[int(a["code"])]
    n = int(a["n"])
    _y(mem, a, BINARY[code](mem.read(a["a"], n), mem.read(a["b"], n)))


def _twin_add_n(mem: Memory, a: Args, call: Any) -> None:
    n = int(a["n"])
    ptrs = mem.table(a["ptrs"], int(a["k"]))
    out = mem.read(ptrs[0], n)
    for p in ptrs[1:]:
        out = (out + mem.read(p, n)).astype(F32)
    _y(mem, a, out)


def _twin_batchnorm(mem: Memory, a: Args, call: Any) -> None:
    n, c, inner = int(a["n"]), int(a["C"]), int(a["inner"])
    x = mem.read(a["x"], n).reshape(-1, c, inner)
    out = batchnorm(x, mem.read(a["params"], 4 * c), eps=float(a["eps"]), axis=1)
    code = {v: k for k, v in _codes()[0].items()}[int(a["act"])]
    _y(mem, a, UNARY[code](out))


def _twin_copy(mem: Memory, a: Args, call: Any) -> None:
    _y(mem, a, mem.read(a["x"], int(a["n"])))


def _act_name(code: int) -> str | None:
    name = {v: k for k, v in _codes()[0].items()}[int(code)]
    return None if name == "identity" else name


def _twin_conv(mem: Memory, a: Args, call: Any) -> None:
    n, c, h, w, k = (int(a[s]) for s in ("N", "C", "H", "W", "K"))
    kh, kw = int(a["kh"]), int(a["kw"])
    groups = int(a.get("groups", 1))
    x = mem.read(a["x"], n * c * h * w).reshape(n, c, h, w)
    wt = mem.read(a["w"], k * (c // groups) * kh * kw).reshape(k, c // groups, kh, kw)
    bias = mem.read(a["bias"], k) if a["bias"] is not None and a["bias"].space != "null" else None
    out = conv2d(x, wt, bias, stride=(int(a["sh"]), int(a["sw"])),
                 padding=(int(a["ph"]), int(a["pw"])), groups=groups, act=_act_name(a["act"]),
                 pre_act=_act_name(a["pre_act"]))
    if out.shape[2:] != (int(a["Ho"]), int(a["Wo"])):
        raise OptionError(f"{call.kernel}: Ho/Wo arguments {a['Ho']}x{a['Wo']} disagree with the "
                          f"geometry ({out.shape[2]}x{out.shape[3]})")
    _y(mem, a, out)


def _twin_gemm(mem: Memory, a: Args, call: Any) -> None:
    m, n, k = int(a["M"]), int(a["N"]), int(a["K"])
    batch = call.grid[2]
    sa, sb = int(a["stride_a"]), int(a["stride_b"])
    A = np.stack([mem.read(_shift(a["A"], i * sa), m * k).reshape(m, k) for i in range(batch)])
    B = np.stack([mem.read(_shift(a["B"], i * sb), k * n).reshape(k, n) for i in range(batch)])
    bias = mem.read(a["bias"], n) if a["bias"] is not None and a["bias"].space != "null" else None
    out = matmul(A, B, bias)
    _y(mem, a, UNARY[_act_name(a["act"])](out))


def _shift(ptr: Any, elems: int) -> Any:
    return type(ptr)(ptr.space, ptr.offset + 4 * elems)


def _twin_pool(mem: Memory, a: Args, call: Any) -> None:
    n, c, h, w = (int(a[s]) for s in ("N", "C", "H", "W"))
    x = mem.read(a["x"], n * c * h * w).reshape(n, c, h, w)
    out = pool2d(x, kernel=(int(a["kh"]), int(a["kw"])), stride=(int(a["sh"]), int(a["sw"])),
                 padding=(int(a["ph"]), int(a["pw"])), mode="max" if int(a["mode"]) == 0 else "avg")
    _y(mem, a, out)


def _twin_gap(mem: Memory, a: Args, call: Any) -> None:
    planes, hw = int(a["planes"]), int(a["hw"])
    x = mem.read(a["x"], planes * hw).reshape(planes, hw)
    _y(mem, a, x.astype(np.float64).mean(axis=1).astype(F32))


def _twin_softmax(mem: Memory, a: Args, call: Any) -> None:
    rows, length, inner = int(a["rows"]), int(a["L"]), int(a["inner"])
    x = mem.read(a["x"], rows * length).reshape(rows // inner, length, inner)
    _y(mem, a, softmax(x, axis=1, scale=float(a["scale"])))


def _twin_layernorm(mem: Memory, a: Args, call: Any) -> None:
    rows, d = int(a["rows"]), int(a["D"])
    x = mem.read(a["x"], rows * d).reshape(rows, d)
    _y(mem, a, layernorm(x, mem.read(a["params"], 2 * d), eps=float(a["eps"])))


def _twin_transpose(mem: Memory, a: Args, call: Any) -> None:
    n = int(a["n"])
    dims = [int(a[f"d{i}"]) for i in range(6)]
    strides = [int(a[f"s{i}"]) for i in range(6)]
    x = mem.read(a["x"], n)
    idx = np.zeros(dims, dtype=np.int64)
    for axis, (d, s) in enumerate(zip(dims, strides, strict=True)):
        shape = [1] * 6
        shape[axis] = d
        idx = idx + (np.arange(d) * s).reshape(shape)
    _y(mem, a, x[idx.reshape(-1)])


def _twin_spin(mem: Memory, a: Args, call: Any) -> None:
    ptrs = mem.table(a["in_ptrs"], int(a["n_in"])) if int(a["n_in"]) else []
    value = spin_value([mem.read(p, 1) for p in ptrs])
    n = int(a["n"])
    if n:
        _y(mem, a, np.full(n, value, dtype=F32))


def _twin_stamp(mem: Memory, a: Args, call: Any) -> None:
    return None


def _twin_fused(mem: Memory, a: Args, call: Any) -> None:
    fk = call.fused
    n = fk.n
    ints = {name: int(a[name]) for name, _ in fk.ints}
    ins = []
    for slot, _ in enumerate(fk.inputs):
        ins.append(_FusedInput(mem, a[f"in{slot}"], n))
    env, stores = eval_stmts(fk.stmts, ins, ints, n)
    for slot, values in stores.items():
        mem.write(a[f"out{slot}"], values, int(a[f"rl{slot}"]), int(a[f"rs{slot}"]))
    if fk.reduce is None:
        return
    kind, v, info = fk.reduce
    x = env[v]
    if kind == "softmax":
        out = softmax(x.reshape(-1, int(info["L"]), int(info["inner"])), axis=1,
                      scale=info["scale"])
    elif kind == "layernorm":
        d = int(info["D"])
        out = layernorm(x.reshape(-1, d), ins[info["params"]].get(2 * d), eps=info["eps"])
    else:
        out = x.reshape(int(info["rows"]), -1).astype(np.float64).mean(axis=1).astype(F32)
    mem.write(a["out0"], out, int(a["rl0"]), int(a["rs0"]))


class _FusedInput:
    """A fused kernel input, read lazily: ``n`` elements when loaded elementwise, or a given
    count (batch-norm or layer-norm parameters)."""

    def __init__(self, mem: Memory, ptr: Any, n: int) -> None:
        self.mem, self.ptr, self.n = mem, ptr, n

    def get(self, count: int | None = None) -> Array:
        return self.mem.read(self.ptr, self.n if count is None else count)


def eval_stmts(stmts: Sequence[tuple[Any, ...]], inputs: Sequence[Any], ints: Mapping[str, int],
               n: int) -> tuple[dict[str, Array], dict[int, Array]]:
    """Run a fused kernel's program (:class:`~workbench.gpu.kernels.FusedKernel` ``stmts``) over
    all ``n`` elements at once.  ``inputs[k]`` is an array (or has ``.get(count)``); returns the
    variables and the stored outputs by slot."""
    codes_u = {v: k for k, v in _codes()[0].items()}
    codes_b = {v: k for k, v in _codes()[1].items()}

    def load(slot: int, count: int | None = None) -> Array:
        src = inputs[slot]
        if hasattr(src, "get"):
            return np.asarray(src.get(count), dtype=F32).reshape(-1)
        flat = np.asarray(src, dtype=F32).reshape(-1)
        return flat if count is None else flat[:count]

    env: dict[str, Array] = {}
    stores: dict[int, Array] = {}
    for st in stmts:
        tag = st[0]
        if tag == "load":
            env[st[1]] = load(st[2])
        elif tag == "un":
            env[st[1]] = UNARY[codes_u[st[2]]](env[st[3]]).astype(F32)
        elif tag == "bin":
            env[st[1]] = np.asarray(BINARY[codes_b[st[2]]](env[st[3]], env[st[4]]), dtype=F32)
        elif tag == "bn":
            _, v, x, slot, c_name, inner_name, eps = st
            c, inner = ints[c_name], ints[inner_name]
            env[v] = batchnorm(env[x].reshape(-1, c, inner), load(slot, 4 * c), eps=eps,
                               axis=1).reshape(-1)
        elif tag == "store":
            stores[st[1]] = env[st[2]]
        else:
            raise OptionError(f"unknown fused statement {st!r}")
    return env, stores


def _codes() -> tuple[dict[str, int], dict[str, int]]:
    from workbench.gpu.kernels import BINARY_CODES, UNARY_CODES

    return UNARY_CODES, BINARY_CODES


Twin = Callable[[Memory, Args, Any], None]

#: NumPy twin per CUDA kernel name (fused kernels: ``"fused"``).
TWINS: dict[str, Twin] = {
    "unary": _twin_unary,
    "binary": _twin_binary,
    "add_n": _twin_add_n,
    "batchnorm": _twin_batchnorm,
    "copy_rows": _twin_copy,
    "conv2d_direct": _twin_conv,
    "conv2d_igemm": _twin_conv,
    "gemm": _twin_gemm,
    "pool2d": _twin_pool,
    "global_avgpool": _twin_gap,
    "softmax": _twin_softmax,
    "layernorm": _twin_layernorm,
    "transpose6": _twin_transpose,
    "spin": _twin_spin,
    "stamp": _twin_stamp,
    "fused": _twin_fused,
}


def run_launch(mem: Memory, launch: Any) -> None:
    """Run one kernel launch of a plan on the NumPy device (arguments by parameter name)."""
    from workbench.gpu.kernels import signature

    params = signature(launch.call.module, launch.call.kernel, launch.call.source)
    if len(params) != len(launch.args):
        raise OptionError(f"launch of {launch.call.kernel!r} for op {launch.op!r} passes "
                          f"{len(launch.args)} arguments; the kernel takes {len(params)}")
    named = {p.name: v for p, v in zip(params, launch.args, strict=True)}
    twin = TWINS["fused" if launch.call.fused is not None else launch.call.kernel]
    twin(mem, named, launch.call)


# ----------------------------------------------------------------------------------- emulator
def emulate(plan: Any, inputs: Mapping[TensorId, Any] | None = None, *, seed: int = 0,
            order: str = "issue", interleave_seed: int = 0,
            tensors: Sequence[TensorId] | None = None) -> dict[TensorId, Array]:
    """Run a launch plan on the NumPy device and return the graph outputs (or ``tensors``).

    ``order="issue"`` runs the steps in the host's issue order (one legal execution);
    ``order="random"`` runs the streams in a random interleaving (``interleave_seed``) in which a
    wait blocks its stream until the matching record has run: only the plan's events order work
    across streams, as on a GPU.  Device memory starts as NaN.  Inputs as :func:`draw_inputs`.
    """
    from workbench.gpu.launch_plan import Launch, Record, Wait

    if order not in ("issue", "random"):
        raise OptionError(f"unknown emulation order {order!r} (known: issue, random)")
    graph = plan.schedule.graph
    mem = Memory(plan.spaces, plan.tables)
    for t, value in draw_inputs(graph, seed, inputs).items():
        place = plan.placements[t]
        mem.write(_ptr_of(place), value.reshape(-1), place.row_len, place.row_stride)
    steps = list(plan.steps)
    if order == "issue":
        for step in steps:
            if isinstance(step, Launch):
                run_launch(mem, step)
    else:
        queues: dict[int, list[Any]] = {}
        for step in steps:
            queues.setdefault(step.stream, []).append(step)
        heads = {s: 0 for s in queues}
        fired: set[int] = set()
        rng = random.Random(interleave_seed)
        while True:
            ready = []
            for s, q in queues.items():
                if heads[s] < len(q):
                    step = q[heads[s]]
                    if not isinstance(step, Wait) or step.event in fired:
                        ready.append(s)
            if not ready:
                stuck = [s for s, q in queues.items() if heads[s] < len(q)]
                if stuck:
                    raise ScheduleError(f"emulation deadlocked: streams {stuck} wait on events "
                                        f"that are never recorded")
                break
            s = rng.choice(sorted(ready))
            step = queues[s][heads[s]]
            heads[s] += 1
            if isinstance(step, Record):
                fired.add(step.event)
            elif isinstance(step, Launch):
                run_launch(mem, step)
    wanted = list(tensors) if tensors is not None else list(graph.outputs)
    shape_of = shape_or_flat(graph)
    out = {}
    for t in wanted:
        place = plan.placements[t]
        n = math.prod(shape_of(t))
        if place.row_len == place.row_stride:
            flat = mem.read(_ptr_of(place), n)
        else:
            e = np.arange(n)
            idx = (e // place.row_len) * place.row_stride + e % place.row_len
            flat = mem.read(_ptr_of(place), int(idx[-1]) + 1 if n else 0)[idx]
        out[t] = flat.reshape(shape_of(t))
    return out


def _ptr_of(place: Any) -> Any:
    from workbench.gpu.launch_plan import Ptr

    return Ptr(place.space, place.offset)


__all__ = [
    "REFERENCES", "TWINS", "Memory", "batchnorm", "conv2d", "draw_inputs", "emulate",
    "eval_stmts", "layernorm", "matmul", "pool2d", "reference_op", "run_graph_reference",
    "run_launch", "shape_or_flat", "softmax", "spin_value",
]
