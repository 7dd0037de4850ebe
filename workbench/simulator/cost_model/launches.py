"""Which kernels an op launches on a GPU, with their grids: op → list of :class:`Launch`.

The rules follow a cuDNN-based inference engine such as IOS's runtime (notes ios.md §4,
``src/ios/ios_runtime.cu`` of mit-han-lab/inter-operator-scheduler), so that an op costs the kernels
it really runs:

* ``conv2d`` (and ``conv1d`` / ``conv3d``, the same rule over one or three spatial axes: a 1-D
  convolution is the 2-D one over a height of 1 that PyTorch gives cuDNN, a 3-D one the implicit
  GEMM over its volume): a ``pre_act`` (IOS's ``ReluConv``) is its own elementwise kernel on the
  input; the convolution is the fastest of the implicit-GEMM tile/split-K candidates and, for 2-D
  3×3 stride-1 convolutions, Winograd F(2×2, 3×3), and explicit GEMM (im2col + GEMM tiles, no
  split-K: cuDNN's convolution algorithms do not split K)
  (:func:`workbench.simulator.cost_model.kernel_model.fastest`, as
  ``cudnnFindConvolutionForwardAlgorithmEx``); a depthwise convolution (``groups == cin ==
  cout``) is a direct kernel (one thread per output); other grouped convolutions are a batched
  GEMM over the groups.  A bias without a fused activation is one more kernel (``cudnnAddTensor``,
  as IOS's runtime does for convolutions whose activation is ``identity``); bias + activation is
  fused (``cudnnConvolutionBiasActivationForward``).
* ``sepconv`` (IOS's ``ReluSepConv``): ReLU, depthwise convolution (+ bias kernel), pointwise 1×1
  convolution (+ bias kernel): three to five kernels.
* ``matmul``: the fastest GEMM candidate, plus a bias kernel when it has a bias.
* ``concat``: one strided copy per input (IOS's ``assign_with_stride_src``).
* ``attention``: one fused kernel (flash / memory-efficient SDPA), timed as a batched GEMM
  (:func:`_attention`).
* views (``attrs["view"]``; reshape/flatten/squeeze ... moving no bytes): no kernel.  In graph
  mode they cost nothing; in eager mode the host still dispatches them (its InferShape stage,
  :mod:`workbench.simulator.host`), which the no-task pass (seed 004, MindSpore's no-task nodes)
  saves by turning each into an alias of its input.
* every other op with a known output shape: one elementwise-class kernel over its output elements
  with the op's FLOPs and bytes (pools, activations, norms, adds, softmax ...).
* ops with no shape information (toy graphs, random DAGs, imported traces), or whose launch
  shape is given (``attrs["launch"] == "given"``, e.g. the RAF seed's 48-block example): one
  ``generic`` kernel with the op's FLOPs and bytes on ``thread_blocks`` blocks, ``blocks_per_sm``
  resident per SM; ``duration_us`` (or a calibration entry) pins its time.

Bytes of the graph's tensors are scaled from their dtype to the run's ``precision``.  Complexity:
O(candidates) per op; timings are cached per distinct kernel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from workbench.ops import OPS, SHAPE_ONLY_KINDS
from workbench.ops.costs import einsum_gemm
from workbench.ops.generic import GENERIC
from workbench.ops.recurrent import recurrent_sizes
from workbench.simulator.cost_model.convolutions import conv_geometry, conv_kernels, plane, volume
from workbench.simulator.cost_model.devices import PRECISION_BYTES, DeviceSpec
from workbench.simulator.cost_model.kernel_model import (
    GpuModel,
    Launch,
    elementwise_launch,
    fastest,
    gemm_candidates,
    kernel_precision,
    time_launch,
)
from workbench.values.graph import Graph, Op
from workbench.values.storage import input_shapes

_DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8,
                "double": 8, "int8": 1, "uint8": 1, "int32": 4, "int64": 8, "bool": 1}
#: Kinds that launch nothing when they move no bytes (``shape_only`` in
# :data:`workbench.ops.OPS`).
VIEW_KINDS = SHAPE_ONLY_KINDS


def is_view(op: Op) -> bool:
    """Whether ``op`` only rewrites shape metadata and moves no data (a view the importer
    marked, or a ``shape_only`` kind with no bytes): it launches no kernel."""
    return bool(op.attrs.get("view")) or (op.kind in VIEW_KINDS
                                          and op.bytes_read + op.bytes_written == 0)


def op_launches(op: Op, graph: Graph | None, spec: DeviceSpec, model: GpuModel, *,
                precision: str = "fp32", fixed_us: float | None = None) -> list[Launch]:
    """The kernels ``op`` launches on ``spec`` (module docstring).  ``fixed_us`` pins the total
    stand-alone time: an op the model runs as several kernels (a PyTorch convolution with its
    bias and activation, a separable convolution, a chained add) keeps its kernels, each
    scaled by the same factor, so the host still launches each of them; any other op becomes
    one generic kernel of that time."""
    if fixed_us is not None:
        modelled = op_launches(op, graph, spec, model, precision=precision) \
            if graph is not None else []
        if len(modelled) > 1:
            times = [time_launch(ln, spec, model).alone_us for ln in modelled]
            total = sum(times)
            ratio = fixed_us / total if total > 0 else 0.0
            pinned = [t * ratio for t in times[:-1]]
            pinned.append(max(0.0, fixed_us - sum(pinned)))  # the parts add up to fixed_us
            return [ln._replace(fixed_us=t, detail="calibrated: " + ln.detail)
                    for ln, t in zip(modelled, pinned, strict=True)]
        return [_generic(op, spec, model, fixed_us=fixed_us)]
    if op.attrs.get("launch") == "given":
        return [_generic(op, spec, model, scale=_byte_scale(op, graph, precision),
                         precision=precision)]
    if is_view(op):
        return []  # shape metadata only: no kernel (the host still dispatches it in eager mode)
    out = graph.tensors.get(op.outputs[0]) if graph is not None and op.outputs else None
    scale = _scale_for(out.dtype if out is not None else "float32", precision)
    rule = _RULES.get(op.kind)
    if rule is not None:
        shapes = _Shapes(op, graph)
        if shapes.known or rule in _FROM_INPUTS and shapes.ins and shapes.ins[0] is not None:
            launches = rule(op, shapes, spec, model, precision, scale)
            if launches is not None:
                return launches
    if out is not None and out.shape and op.kind != GENERIC:
        elements = math.prod(out.shape)
        info = OPS.get(op.kind)
        if info is not None and info.category == "reduction" and graph is not None:
            # a reduction's grid spans what it reads (a block per slice), not its output
            elements = max(elements, _Shapes(op, graph).numel(0))
        return [elementwise_launch(op.kind, elements,
                                   (op.bytes_read + op.bytes_written) * scale, model,
                                   flops=op.flops)]
    return [_generic(op, spec, model, scale=scale, precision=precision)]


class _Shapes:
    """Input and output tensor shapes of an op, where the graph knows them."""

    def __init__(self, op: Op, graph: Graph | None) -> None:
        self.ins: list[tuple[int, ...] | None] = []
        self.out: tuple[int, ...] | None = None
        if graph is None:
            self.known = False
            return
        tensors = graph.tensors
        self.ins = [shape or None for shape in input_shapes(op, tensors)]  # views' shapes too
        if op.outputs and op.outputs[0] in tensors:
            shape = tensors[op.outputs[0]].shape
            self.out = tuple(shape) if shape else None
        self.known = self.out is not None and bool(self.ins) and self.ins[0] is not None

    def numel(self, i: int) -> int:
        shape = self.ins[i] if i < len(self.ins) else None
        return math.prod(shape) if shape else 0


def _byte_scale(op: Op, graph: Graph | None, precision: str) -> float:
    """Bytes of the run's precision per byte of the op's output dtype (fp16 run of an fp32 graph:
    0.5)."""
    dtype = "float32"
    if graph is not None and op.outputs and op.outputs[0] in graph.tensors:
        dtype = graph.tensors[op.outputs[0]].dtype
    return _scale_for(dtype, precision)


def _element_bytes(scale: float) -> int:
    """Bytes of one element at the run's precision (``scale``: run bytes per FP32 byte)."""
    return max(1, round(4 * scale))


def _scale_for(dtype: str, precision: str) -> float:
    have = _DTYPE_BYTES.get(str(dtype).lower(), 4)
    if have != 2 and have != 4:  # integer or double tensors keep their size
        return 1.0
    return PRECISION_BYTES[precision] / have


def _generic(op: Op, spec: DeviceSpec, model: GpuModel, *, scale: float = 1.0,
             fixed_us: float | None = None, precision: str = "fp32") -> Launch:
    """A kernel known only by its FLOPs, bytes and grid: ``thread_blocks`` blocks with
    ``spec.blocks_per_sm`` resident per SM (the RAF seed's occupancy assumption).  Unknown grid:
    as many blocks as the device has such slots (it fills the device).  A convolution or matmul
    runs at the precision its shape-aware kernels would (``auto``: TF32 convolutions where the
    device has them), so the same op costs the same arithmetic with or without its graph."""
    blocks = op.thread_blocks or spec.sm_count * spec.blocks_per_sm
    info = OPS.get(op.kind)
    rule = info.launch_rule if info is not None else None
    run = "fp32"
    if rule in ("convolution", "separable_convolution", "gemm") and fixed_us is None:
        run = kernel_precision(precision, spec, convolution=rule != "gemm")
    return Launch(op.kind, "gemm" if run != "fp32" else "generic", float(op.flops),
                  (op.bytes_read + op.bytes_written) * scale, blocks, model.generic_threads, 0,
                  0, run, fixed_us=fixed_us, resident=spec.blocks_per_sm,
                  detail="given duration" if fixed_us is not None else "from op figures")


def _pair(value: Any, default: int) -> tuple[int, int]:
    """A 2-D window size from an int or a list (``None`` or an empty list: ``default``)."""
    if value is None:
        return (default, default)
    if isinstance(value, (int, float)):
        return (int(value), int(value))
    seq = list(value) or [default]
    if len(seq) == 1:
        return (int(seq[0]), int(seq[0]))
    return (int(seq[0]), int(seq[1]))


def _bias_kernel(name: str, elems: int, channels: int, eb: int, model: GpuModel) -> Launch:
    return elementwise_launch(f"{name} bias", elems, eb * (2 * elems + channels), model,
                              flops=elems)


def _relu_kernel(name: str, elems: int, eb: int, model: GpuModel) -> Launch:
    return elementwise_launch(f"{name} relu", elems, eb * 2 * elems, model, flops=elems)


def _conv(op: Op, shapes: _Shapes, spec: DeviceSpec, model: GpuModel, precision: str,
          scale: float) -> list[Launch] | None:
    g = conv_geometry(op.attrs, shapes.ins, shapes.out)
    if g is None:
        return None
    eb = _element_bytes(scale)
    out: list[Launch] = []
    if op.attrs.get("pre_act"):
        out.append(_relu_kernel(op.kind, g["n"] * g["cin"] * volume(g, ""), eb, model))
    out += conv_kernels(g, "conv", spec, model, precision, eb)
    bias = op.attrs.get("bias", len(op.inputs) > 2)
    act = op.attrs.get("act")
    elems = g["n"] * g["cout"] * volume(g, "o")
    if bias and (not act or model.separate_epilogue):
        out.append(_bias_kernel("conv", elems, g["cout"], eb, model))
    if act and model.separate_epilogue:  # PyTorch: the activation is its own op
        out.append(_relu_kernel(f"conv {act}", elems, eb, model))
    return out


def _sepconv(op: Op, shapes: _Shapes, spec: DeviceSpec, model: GpuModel, precision: str,
             scale: float) -> list[Launch] | None:
    x, out_shape = shapes.ins[0], shapes.out
    if x is None or out_shape is None or len(x) != 4 or len(out_shape) != 4 \
            or min(*x, *out_shape) < 1:
        return None
    a = op.attrs
    n, cin, h, w = x
    _, cout, ho, wo = out_shape
    kh, kw = _pair(a.get("kernel"), 3)
    sh, sw = _pair(a.get("stride"), 1)
    eb = _element_bytes(scale)
    bias = bool(a.get("bias"))
    out: list[Launch] = []
    if a.get("pre_act"):
        out.append(_relu_kernel("sepconv", n * cin * h * w, eb, model))
    dw = plane(n, cin, h, w, cin, ho, wo, kh, kw, sh, sw, groups=cin)
    out += conv_kernels(dw, "sepconv", spec, model, precision, eb)
    if bias and not model.separate_epilogue:  # PyTorch's sepconv: the depthwise has no bias
        out.append(_bias_kernel("sepconv dw", n * cin * ho * wo, cin, eb, model))
    pw = plane(n, cin, ho, wo, cout, ho, wo, 1, 1, 1, 1, groups=1)
    out += conv_kernels(pw, "sepconv pointwise", spec, model, precision, eb)
    if bias:
        out.append(_bias_kernel("sepconv pw", n * cout * ho * wo, cout, eb, model))
    return out


def _matmul(op: Op, shapes: _Shapes, spec: DeviceSpec, model: GpuModel, precision: str,
            scale: float) -> list[Launch] | None:
    a = op.attrs
    if not all(a.get(k) is not None for k in ("m", "k", "n")) and "equation" in a:
        gemm = einsum_gemm(str(a.get("equation", "")), shapes.ins)
        if gemm is None:
            return None
        a = {**a, **gemm}
    if not all(a.get(k) is not None for k in ("m", "k", "n")):
        out = shapes.out
        # addmm(bias, a, b) (bias_first): the inner size is a's last axis, not the bias's
        x = shapes.ins[1] if a.get("bias_first") and len(shapes.ins) > 2 else shapes.ins[0]
        if out is None or x is None or len(out) < 2:
            return None
        m, n, k = math.prod(out[:-1]), out[-1], x[-1]
        batch = 1
    else:
        m, k, n, batch = int(a["m"]), int(a["k"]), int(a["n"]), int(a.get("batch") or 1)
    eb = _element_bytes(scale)
    precision = kernel_precision(precision, spec, convolution=False)
    launches = fastest(gemm_candidates(m, n, k, batch=batch, precision=precision, model=model,
                                       element_bytes=eb, name="gemm"), spec, model)
    if a.get("bias"):
        launches = [*launches, _bias_kernel("gemm", batch * m * n, n, eb, model)]
    return launches


def _attention(op: Op, shapes: _Shapes, spec: DeviceSpec, model: GpuModel, precision: str,
               scale: float) -> list[Launch] | None:
    """``scaled_dot_product_attention`` as the one fused kernel PyTorch runs on Ampere and
    Hopper: FlashAttention (fp16/bf16) or the memory-efficient kernel, which runs FP32 on tensor
    cores as 3xTF32 (CUTLASS's ``OpMultiplyAddFastF32``: three TF32 products per FP32 one;
    plain FP32 where the device has no TF32).  Each block takes a tile of query rows of one
    (batch, head) and streams every key and value through it, so it is timed as one batched
    GEMM of ``L`` rows by ``Ev`` columns whose depth carries both products
    (``2·B·L·S·(E + Ev)`` FLOPs, halved under a causal mask, whose masked tiles are skipped), with
    no split-K, reading q, k, v once and writing the output once: the score matrix never
    reaches DRAM.  A ``MultiheadAttention`` module call (its projections inside) is one GEMM
    chain of its FLOPs."""
    q, k, v = (shapes.ins[i] if i < len(shapes.ins) else None for i in range(3))
    eb = _element_bytes(scale)
    run = kernel_precision(precision, spec, convolution=False)
    if op.attrs.get("needs_program") or q is None or k is None or v is None \
            or min(len(q), len(k), len(v)) < 2:
        rows = math.prod(q[:-1]) if q else 1
        width = q[-1] if q else 1
        depth = max(1, round(op.flops / max(1.0, 2.0 * rows * width)))
        return fastest(gemm_candidates(rows, width, depth, batch=1, precision=run, model=model,
                                       element_bytes=eb, name="attention"), spec, model)
    batch, (length, e), keys, ev = math.prod(q[:-2]), q[-2:], k[-2], v[-1]
    fast_f32 = run == "fp32" and "tf32" in spec.precisions()
    causal = 0.5 if op.attrs.get("is_causal") else 1.0
    depth = max(1, round(keys * (e + ev) / ev))
    ampere = "tf32" in spec.precisions()  # FlashAttention needs sm80+; older: CUTLASS's kernel
    name = ("attention (memory-efficient, 3xTF32)" if fast_f32 else
            f"attention ({'flash' if ampere and run != 'fp32' else 'memory-efficient'}, {run})")
    return fastest(gemm_candidates(
        length, ev, depth, batch=batch, precision="tf32" if fast_f32 else run, model=model,
        element_bytes=eb, name=name, split=False, flop_scale=(3.0 if fast_f32 else 1.0) * causal,
        operand_bytes=eb * batch * (length * e + keys * e + keys * ev)), spec, model)


def _concat(op: Op, shapes: _Shapes, spec: DeviceSpec, model: GpuModel, precision: str,
            scale: float) -> list[Launch] | None:
    eb = _element_bytes(scale)
    out = []
    for i, t in enumerate(op.inputs):
        elems = shapes.numel(i)
        if elems == 0:
            return None
        out.append(elementwise_launch(f"concat copy {i}", elems, eb * 2 * elems, model))
        del t
    if model.concat_one_kernel and len(out) > 1:  # PyTorch's batched cat: one launch for all
        elems = sum(shapes.numel(i) for i in range(len(op.inputs)))
        return [elementwise_launch(f"concat batched copy of {len(out)}", elems, eb * 2 * elems,
                                   model)]
    return out


def _sum(op: Op, shapes: _Shapes, spec: DeviceSpec, model: GpuModel, precision: str,
         scale: float) -> list[Launch] | None:
    """An add of k inputs: one kernel reading all of them, or with ``chained_add`` (PyTorch's
    ``a + b + c``) k - 1 binary kernels, each writing a full output."""
    if not model.chained_add or len(op.inputs) < 3 or shapes.out is None:
        return None
    eb = _element_bytes(scale)
    elems = math.prod(shapes.out)
    return [elementwise_launch(f"add {i + 1}/{len(op.inputs) - 1}", elems, eb * 3 * elems, model,
                               flops=elems) for i in range(len(op.inputs) - 1)]


def _batchnorm(op: Op, shapes: _Shapes, spec: DeviceSpec, model: GpuModel, precision: str,
               scale: float) -> list[Launch] | None:
    """Inference batchnorm as cuDNN's ``bn_fw_inf_1C11_kernel_NCHW`` (``bn_per_channel``): one
    block per (sample, channel) plane, threads by the plane's size (half of it, rounded down
    to a power of two, within 64..512: 64 for 8x8, 128 for 17x17, 512 from 35x35, as the H200
    profiler trace of Inception V3 shows).  A grid of many small blocks pays the per-block
    setup (``elementwise_block_flops``) many times: 8x8 planes run at a fifth of the bandwidth
    35x35 planes reach."""
    x = shapes.ins[0]
    if not model.bn_per_channel or x is None or len(x) != 4:
        return None
    n, c, h, w = x
    plane = h * w
    threads = 1 << max(6, min(9, (max(1, plane // 2)).bit_length() - 1))
    eb = _element_bytes(scale)
    elems = n * c * plane
    return [elementwise_launch("batchnorm per-channel", elems, eb * (2 * elems + 4 * c), model,
                               flops=op.flops, grid=(n * c, threads), registers=32,
                               detail=f"{n * c} planes of {plane}")]


def _window(op: Op, shapes: _Shapes, spec: DeviceSpec, model: GpuModel, precision: str,
            scale: float) -> list[Launch] | None:
    """A pooling window (PyTorch's ``max_pool_forward_nchw``, ``avg_pool2d_out_cuda_frame``):
    one thread per output looping over its window, class ``window`` (``window_efficiency``:
    comparisons, index tracking and divisors cost more than an elementwise op's arithmetic)."""
    if shapes.out is None:
        return None
    elems = math.prod(shapes.out)
    ln = elementwise_launch(op.kind, elems, (op.bytes_read + op.bytes_written) * scale, model,
                            flops=op.flops)
    return [ln._replace(kind="window")]


def _recurrent(op: Op, shapes: _Shapes, spec: DeviceSpec, model: GpuModel, precision: str,
               scale: float) -> list[Launch] | None:
    """An LSTM / GRU / RNN as cuDNN's standard algorithm runs it: per layer and direction, one
    GEMM projecting every step's input at once (``T*B x G*H x inputs``), then per step the
    recurrent GEMM (``B x G*H x state``; an LSTM's projection ``B x P x H`` after it) and one
    gate kernel over the batch's hidden units (it reads both projections, the biases and the
    cell, and writes the new state), in cuDNN's default math (TF32 where the device has it,
    PyTorch's ``cudnn.allow_tf32``, as for convolutions).  Each GEMM is the fastest candidate
    (:func:`fastest`), the input projection reading its weights cold.  Simplified: the
    directions run one after the other (cuDNN overlaps them on streams of its own) and no
    persistent kernel keeps the recurrent weights on chip."""
    r = recurrent_sizes(op.kind, op.attrs, shapes.ins[0])
    if r is None:
        return None
    eb = _element_bytes(scale)
    run = kernel_precision(precision, spec, convolution=True)
    gh = r.gates * r.hidden

    def gemm(m: int, n: int, k: int, name: str, cold: bool = False) -> list[Launch]:
        return fastest(gemm_candidates(m, n, k, batch=1, precision=run, model=model,
                                       element_bytes=eb, name=f"{op.kind} {name}",
                                       weights=cold), spec, model)

    units = r.batch * r.hidden
    step = [*gemm(r.batch, gh, r.state, "recurrent gemm"),
            *(gemm(r.batch, r.proj, r.hidden, "projection") if r.proj else []),
            elementwise_launch(f"{op.kind} gates", units, eb * (2 * r.batch * gh + 2 * gh
                                                                + 3 * units), model,
                               flops=(OPS[op.kind].flops_per_element or 0) * units)]
    out: list[Launch] = []
    for layer in range(r.layers):
        inputs = r.inputs if layer == 0 else r.directions * r.state
        projection = gemm(r.steps * r.batch, gh, inputs, "input gemm", cold=True)
        for _ in range(r.directions):
            out += projection + step * r.steps
    return out


_Rule = Any
#: The GPU model's kernel rules by name; an op kind picks one with ``launch_rule`` in
#: :data:`workbench.ops.OPS`.
LAUNCH_RULES: Mapping[str, _Rule] = {
    "convolution": _conv,
    "separable_convolution": _sepconv,
    "gemm": _matmul,
    "attention": _attention,
    "copy_each_input": _concat,
    "n_ary_sum": _sum,
    "per_channel_norm": _batchnorm,
    "window": _window,
    "recurrent": _recurrent,
}
#: Rules that read their inputs' shapes only (a recurrent op of from_torch has one container
#: output, y and its states, of no single shape).
_FROM_INPUTS = (_recurrent,)
_RULES: Mapping[str, _Rule] = {name: LAUNCH_RULES[info.launch_rule] for name, info in OPS.items()
                               if info.launch_rule is not None}
