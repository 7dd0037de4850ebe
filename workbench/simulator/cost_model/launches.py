"""Which kernels an op launches on a GPU, with their grids: op → list of :class:`Launch`.

The rules follow a cuDNN-based inference engine such as IOS's runtime (notes ios.md §4,
``src/ios/ios_runtime.cu`` of mit-han-lab/inter-operator-scheduler), so that an op costs the kernels
it really runs:

* ``conv2d``: a ``pre_act`` (IOS's ``ReluConv``) is its own elementwise kernel on the input; the
  convolution is the fastest of the implicit-GEMM tile/split-K candidates and, for 3×3 stride-1
  convolutions, Winograd F(2×2, 3×3), and explicit GEMM (im2col + GEMM tiles, no split-K: cuDNN's
  convolution algorithms do not split K)
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
from workbench.values.ops import OPS, SHAPE_ONLY_KINDS
from workbench.values.shape_costs import einsum_gemm

_DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8,
                "double": 8, "int8": 1, "uint8": 1, "int32": 4, "int64": 8, "bool": 1}
#: Kinds that launch nothing when they move no bytes (``shape_only`` in
# :data:`workbench.values.ops.OPS`).
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
        if shapes.known:
            launches = rule(op, shapes, spec, model, precision, scale)
            if launches is not None:
                return launches
    if out is not None and out.shape and op.kind != "op":
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
        for t in op.inputs:
            shape = tensors[t].shape if t in tensors else ()
            self.ins.append(tuple(shape) if shape else None)
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


def _conv_geometry(op: Op, shapes: _Shapes) -> dict[str, int] | None:
    """N, Cin, H, W, Cout, Ho, Wo, kh, kw, stride, groups of a 2-D convolution from its attrs
    (the op vocabulary, :mod:`workbench.values.op_attrs`: ``kernel``, ``stride``, ``groups``;
    every importer writes them), the kernel from the weight's shape when not given; None if
    unknown."""
    x, out = shapes.ins[0], shapes.out
    if x is None or out is None or len(x) != 4 or len(out) != 4:
        return None
    a = op.attrs
    kernel = a.get("kernel")
    if kernel is None and len(shapes.ins) > 1 and shapes.ins[1] is not None \
            and len(shapes.ins[1]) == 4:
        kernel = shapes.ins[1][2:]
    if kernel is None:
        return None
    kh, kw = _pair(kernel, 1)
    sh, sw = _pair(a.get("stride"), 1)
    groups = int(a.get("groups") or 1)
    n, cin, h, w = x
    _, cout, ho, wo = out
    cin = int(a.get("cin") or cin)  # a consumer may read a channel slice of a wider tensor
    if min(n, cin, h, w, cout, ho, wo, kh, kw, sh, sw) < 1 or cin % groups or cout % groups:
        return None  # empty or unknown sizes: the op's own figures cost it
    return {"n": n, "cin": cin, "h": h, "w": w, "cout": cout, "ho": ho, "wo": wo, "kh": kh,
            "kw": kw, "sh": sh, "sw": sw, "groups": groups}


def _conv_kernels(g: dict[str, int], name: str, spec: DeviceSpec, model: GpuModel,
                  precision: str, eb: int) -> list[Launch]:
    n, cin, cout, groups = g["n"], g["cin"], g["cout"], g["groups"]
    kh, kw, ho, wo = g["kh"], g["kw"], g["ho"], g["wo"]
    in_bytes = eb * n * cin * g["h"] * g["w"]
    out_elems = n * cout * ho * wo
    if groups > 1 and groups == cin and cout % cin == 0:
        flops = 2.0 * out_elems * kh * kw
        nbytes = in_bytes + eb * (out_elems + cout * kh * kw)
        blocks = max(1, math.ceil(out_elems / 256))
        return [Launch(f"{name} depthwise {kh}x{kw}", "direct", flops, nbytes, blocks, 256, 32,
                       0, "fp32", detail=f"{out_elems} outputs")]
    # "auto" and "tf32": cuDNN benchmarks its FP32 and its TF32 tensor-core algorithms alike
    # (TF32 is a permission, PyTorch's allow_tf32: a small convolution may still run FP32)
    precisions = {"fp32", kernel_precision(precision, spec, convolution=True)} \
        if precision in ("auto", "tf32") else {precision}
    candidates: list[list[Launch]] = []
    for p in sorted(precisions):
        candidates += _conv_candidates(g, name, model, p, eb, in_bytes)
    return fastest(candidates, spec, model)


def _conv_candidates(g: dict[str, int], name: str, model: GpuModel, precision: str, eb: int,
                     in_bytes: int) -> list[list[Launch]]:
    """cuDNN's convolution algorithms at one precision, each as the launches it takes."""
    n, cin, cout, groups = g["n"], g["cin"], g["cout"], g["groups"]
    kh, kw, ho, wo = g["kh"], g["kw"], g["ho"], g["wo"]
    tag = "" if precision == "fp32" else f" {precision}"
    m = n * ho * wo
    kdim = cin // groups * kh * kw
    w_bytes = eb * cout * (cin // groups) * kh * kw
    # implicit GEMM ...
    candidates = gemm_candidates(m, cout // groups, kdim, batch=groups, precision=precision,
                                 model=model, element_bytes=eb,
                                 name=f"{name} implicit-gemm{tag}",
                                 operand_bytes=in_bytes + w_bytes, conv=True, weights=True)
    # ... explicit GEMM (an im2col unfold unless 1x1 stride 1, then GEMM tiles, no split-K) ...
    pointwise = kh == kw == 1 and g["sh"] == g["sw"] == 1
    unfold = [] if pointwise else [elementwise_launch(
        f"{name} im2col", m * kdim * groups, eb * (n * cin * g["h"] * g["w"] + m * kdim * groups),
        model)]
    candidates += gemm_candidates(m, cout // groups, kdim, batch=groups, precision=precision,
                                  model=model, element_bytes=eb, name=f"{name} gemm{tag}",
                                  split=False, prefix=unfold, weights=True)
    # ... and Winograd F(2x2, 3x3) for 3x3 stride-1 convolutions
    if groups == 1 and kh == kw == 3 and g["sh"] == g["sw"] == 1:
        tiles = n * math.ceil(ho / 2) * math.ceil(wo / 2)
        candidates += gemm_candidates(
            tiles, cout, cin, batch=16, precision=precision, model=model, element_bytes=eb,
            name=f"{name} winograd{tag}", operand_bytes=in_bytes * 16 / 4 + w_bytes * 16 / 9,
            kind="winograd", conv=True, weights=True)
    if precision != "fp32" and model.tensor_layout_conversion:
        # cuDNN's tensor-core kernels want NHWC: an NCHW input is transposed before and the
        # output back after (two memory-bound copies around every candidate)
        out_bytes = eb * m * cout
        to_nhwc = elementwise_launch(f"{name} nchw->nhwc", in_bytes // eb, 2 * in_bytes, model)
        to_nchw = elementwise_launch(f"{name} nhwc->nchw", m * cout, 2 * out_bytes, model)
        candidates = [[to_nhwc, *c, to_nchw] for c in candidates]
    return candidates


def _bias_kernel(name: str, elems: int, channels: int, eb: int, model: GpuModel) -> Launch:
    return elementwise_launch(f"{name} bias", elems, eb * (2 * elems + channels), model,
                              flops=elems)


def _relu_kernel(name: str, elems: int, eb: int, model: GpuModel) -> Launch:
    return elementwise_launch(f"{name} relu", elems, eb * 2 * elems, model, flops=elems)


def _conv(op: Op, shapes: _Shapes, spec: DeviceSpec, model: GpuModel, precision: str,
          scale: float) -> list[Launch] | None:
    g = _conv_geometry(op, shapes)
    if g is None:
        return None
    eb = _element_bytes(scale)
    out: list[Launch] = []
    if op.attrs.get("pre_act"):
        out.append(_relu_kernel(op.kind, g["n"] * g["cin"] * g["h"] * g["w"], eb, model))
    out += _conv_kernels(g, "conv", spec, model, precision, eb)
    bias = op.attrs.get("bias", len(op.inputs) > 2)
    act = op.attrs.get("act")
    elems = g["n"] * g["cout"] * g["ho"] * g["wo"]
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
    dw = {"n": n, "cin": cin, "h": h, "w": w, "cout": cin, "ho": ho, "wo": wo, "kh": kh, "kw": kw,
          "sh": sh, "sw": sw, "groups": cin}
    out += _conv_kernels(dw, "sepconv", spec, model, precision, eb)
    if bias and not model.separate_epilogue:  # PyTorch's sepconv: the depthwise has no bias
        out.append(_bias_kernel("sepconv dw", n * cin * ho * wo, cin, eb, model))
    pw = {"n": n, "cin": cin, "h": ho, "w": wo, "cout": cout, "ho": ho, "wo": wo, "kh": 1,
          "kw": 1, "sh": 1, "sw": 1, "groups": 1}
    out += _conv_kernels(pw, "sepconv pointwise", spec, model, precision, eb)
    if bias:
        out.append(_bias_kernel("sepconv pw", n * cout * ho * wo, cout, eb, model))
    return out


def _matmul(op: Op, shapes: _Shapes, spec: DeviceSpec, model: GpuModel, precision: str,
            scale: float) -> list[Launch] | None:
    a = op.attrs
    if not all(a.get(k) is not None for k in ("m", "k", "n")) and op.kind == "einsum":
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


_Rule = Any
#: The GPU model's kernel rules by name; an op kind picks one with ``launch_rule`` in
#: :data:`workbench.values.ops.OPS`.
LAUNCH_RULES: Mapping[str, _Rule] = {
    "convolution": _conv,
    "separable_convolution": _sepconv,
    "gemm": _matmul,
    "attention": _attention,
    "copy_each_input": _concat,
    "n_ary_sum": _sum,
    "per_channel_norm": _batchnorm,
    "window": _window,
}
_RULES: Mapping[str, _Rule] = {name: LAUNCH_RULES[info.launch_rule] for name, info in OPS.items()
                               if info.launch_rule is not None}
