"""How long one GPU kernel launch takes on a device, and why: waves, the tail wave, efficiency.

A :class:`Launch` is one kernel: its class (``gemm``, ``winograd``, ``direct``, ``elementwise``,
``generic``), the FLOPs it executes, the DRAM bytes it moves, its grid (``blocks`` of
``threads``) and the resources each block holds (registers per thread, shared memory).
:func:`time_launch` turns it into a :class:`KernelTime` on a
:class:`~workbench.simulator.cost_model.devices.DeviceSpec`:

1. **Residency.**  Blocks resident per SM ``r = min(max_blocks_per_sm, max_threads_per_sm //
   threads, registers_per_sm // (registers * threads), shared_memory_per_sm // shared_bytes)``
   (the CUDA occupancy rule); ``P·r`` blocks run at once on ``P`` SMs.
2. **Waves.**  ``W = ceil(blocks / (P·r))`` waves; the last (tail) wave has ``B_t`` blocks and
   spreads over ``min(P, B_t)`` SMs with ``k_t = ceil(B_t / P)`` blocks on the busiest SM.
3. **Per-block speed.**  On an SM holding ``k`` blocks of the kernel, the SM computes at
   ``peak_SM · min(e, k · u₁)`` (``u₁ = warps · warp_utilization``: what one block sustains alone,
   limited by its warps; ``e``: the class's best efficiency), shared by its ``k`` blocks.  Memory:
   each block keeps ``threads · bytes_in_flight`` bytes in flight, so by Little's law it streams
   at most that over ``memory_latency`` (a small grid cannot saturate DRAM; a GEMM tile keeps its
   double-buffered K-slices of A and B in flight); all running blocks
   share ``bandwidth · bandwidth_efficiency``.  A block takes the longer of its compute and memory
   times (a roofline per block).  With ``cold_weights`` a convolution's blocks, in a run, also
   take at least the time to stream their slice of the weights from DRAM with their
   double-buffered K-slices of it in flight (``KernelTime.cold_us``: the stand-alone time is
   the L2-warm one of back-to-back replays; the simulator adds the difference).
4. **Phases.**  The full waves form one phase (all block slots held) and the tail wave another
   (``B_t / (P·r)`` of the slots held): the simulator lets other streams' kernels use the slots a
   tail leaves free (:mod:`workbench.simulator.simulate`).  Each phase records what fraction of the
   device's
   slots, peak FLOP/s and bandwidth it uses when running alone.

Library kernels (GEMM-based convolutions and matmuls) are chosen as cuDNN's ``Find`` / cuBLAS's
heuristics do: every candidate tile shape and split-K factor of :class:`GpuModel` is timed and the
fastest kept (:func:`fastest`).  Parameters come from ``workbench/data/gpu_model.json``
(:func:`default_model`); every value there says whether it is a spec figure, an assumption or a fit
(``benchmarks/fidelity.py`` fits them on published measurements).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from typing import Any, NamedTuple

from workbench._checks import did_you_mean
from workbench.errors import OptionError
from workbench.simulator.cost_model.devices import (
    RUN_PRECISIONS,
    DeviceSpec,
    HashedOnce,
    gpu_model_parameters,
)

KERNEL_CLASSES = ("gemm", "winograd", "direct", "elementwise", "window", "generic")
Tile = tuple[int, int, int, int, int]  # tile_m, tile_n, threads, registers/thread, shared bytes


@dataclass(frozen=True, eq=True)
class GpuModel(HashedOnce):
    """Kernel-library parameters shared by every device (see the JSON file for
    each value's provenance).  Frozen and hashable, so timings are cached per model."""

    warp_utilization: float        # share of an SM's peak one warp of a library kernel sustains
    gemm_efficiency: float         # best share of FP32 peak a GEMM tile kernel reaches
    tensor_efficiency: float       # the same for tensor-core GEMM kernels (tf32/fp16/bf16)
    winograd_efficiency: float     # Winograd's throughput relative to a GEMM on the same tiles
    winograd_flop_ratio: float     # direct-convolution FLOPs / Winograd FLOPs (F(2x2, 3x3): 2.25)
    direct_efficiency: float       # best share of peak a direct (depthwise) convolution reaches
    bandwidth_efficiency: float    # best share of DRAM bandwidth a streaming kernel reaches
    bytes_in_flight_per_thread: float  # outstanding memory bytes per thread (Little's law)
    elementwise_threads: int       # threads per block of elementwise/copy kernels
    generic_threads: int           # threads per block of a kernel known only by its grid
    conv_tiles: tuple[Tile, ...]   # implicit-GEMM convolution kernels (cuDNN), FP32, no split-K
    gemm_tiles: tuple[Tile, ...]   # cuBLAS-like FP32 GEMM kernels (with split-K)
    tensor_tiles: tuple[Tile, ...]  # tensor-core GEMM/convolution kernels (tf32/fp16/bf16)
    split_k: tuple[int, ...]
    tile_intensity_ref: float = 0.0  # tile intensity tm*tn/(tm+tn) reaching e (0: every tile)
    l2_bandwidth_ratio: float = 1.0  # bandwidth of an L2-resident kernel over DRAM's
    hardware_queues: int = 8         # CUDA_DEVICE_MAX_CONNECTIONS: streams share these queues
    event_wait_us: float = 0.0       # device delay of a cross-stream (event) dependency
    elementwise_efficiency: float = 0.0  # share of FP32 peak of elementwise/pool arithmetic (0: e)
    concat_one_kernel: int = 0       # 1: a concat is one batched copy (PyTorch), 0: one per input
    separate_epilogue: int = 0       # 1: bias and activation are kernels of their own (PyTorch)
    op_gap_us: float = 0.0           # device time before an op's first kernel in a run (not alone)
    gemm_k_overhead: float = 0.0     # FP32 GEMM tiles: fixed prologue/epilogue, in K-steps' worth
    tensor_k_overhead: float = 0.0   # the same for tensor-core tiles (tf32/fp16/bf16)
    bn_per_channel: int = 0          # 1: batchnorm is cuDNN's one-block-per-channel kernel
    chained_add: int = 0             # 1: an add of k inputs is k - 1 binary kernels (PyTorch)
    elementwise_block_flops: float = 0.0  # setup work per block of an elementwise kernel
    tensor_layout_conversion: int = 0  # 1: tensor-core convolutions transpose NCHW <-> NHWC
    tensor_intensity_ref: float = 0.0  # tile_intensity_ref of tensor-core tiles (0: the same)
    window_efficiency: float = 0.0   # share of FP32 peak of pooling windows (0: elementwise's)
    cold_weights: int = 0            # 1: in a run a layer's weights stream from DRAM, not L2

    __hash__ = HashedOnce.__hash__  # explicit: the dataclass decorator would generate one

    def tiles(self, precision: str, *, conv: bool = False) -> tuple[Tile, ...]:
        if precision != "fp32":
            return self.tensor_tiles
        return self.conv_tiles if conv else self.gemm_tiles

    def with_values(self, **changes: Any) -> GpuModel:
        """A copy with some parameters changed (fitting, what-if studies)."""
        unknown = sorted(set(changes) - set(self.__dataclass_fields__))
        if unknown:
            raise OptionError(f"unknown GPU model parameter {unknown[0]!r}")
        return replace(self, **changes)


@cache
def default_model() -> GpuModel:
    """The :class:`GpuModel` of ``workbench/data/gpu_model.json``."""
    raw = gpu_model_parameters()["library"]

    def value(key: str) -> Any:
        entry = raw[key]
        return entry["value"] if isinstance(entry, dict) and "value" in entry else entry

    return GpuModel(
        warp_utilization=float(value("warp_utilization")),
        gemm_efficiency=float(value("gemm_efficiency")),
        tensor_efficiency=float(value("tensor_efficiency")),
        winograd_efficiency=float(value("winograd_efficiency")),
        winograd_flop_ratio=float(value("winograd_flop_ratio")),
        direct_efficiency=float(value("direct_efficiency")),
        bandwidth_efficiency=float(value("bandwidth_efficiency")),
        bytes_in_flight_per_thread=float(value("bytes_in_flight_per_thread")),
        elementwise_threads=int(value("elementwise_threads")),
        generic_threads=int(value("generic_threads")),
        conv_tiles=tuple(tuple(t) for t in value("conv_tiles")),  # type: ignore[misc]
        gemm_tiles=tuple(tuple(t) for t in value("gemm_tiles")),  # type: ignore[misc]
        tensor_tiles=tuple(tuple(t) for t in value("tensor_tiles")),  # type: ignore[misc]
        split_k=tuple(int(s) for s in value("split_k")),
        tile_intensity_ref=float(value("tile_intensity_ref")),
        l2_bandwidth_ratio=float(value("l2_bandwidth_ratio")),
        hardware_queues=int(value("hardware_queues")),
        event_wait_us=float(value("event_wait_us")),
        elementwise_efficiency=float(value("elementwise_efficiency")),
        concat_one_kernel=int(value("concat_one_kernel")),
        separate_epilogue=int(value("separate_epilogue")),
        op_gap_us=float(value("op_gap_us")),
        gemm_k_overhead=float(value("gemm_k_overhead")),
        tensor_k_overhead=float(value("tensor_k_overhead")),
        bn_per_channel=int(value("bn_per_channel")),
        chained_add=int(value("chained_add")),
        elementwise_block_flops=float(value("elementwise_block_flops")),
        tensor_layout_conversion=int(value("tensor_layout_conversion")),
        tensor_intensity_ref=float(value("tensor_intensity_ref")),
        window_efficiency=float(value("window_efficiency")),
        cold_weights=int(value("cold_weights")),
    )


class Launch(NamedTuple):
    """One kernel launch.  ``flops`` is the arithmetic it executes (tile padding included),
    ``bytes`` its DRAM traffic; ``precision`` picks the peak of GEMM-class kernels.  (Named
    tuples, not dataclasses: a million-op graph builds a million of them.)"""

    name: str
    kind: str
    flops: float
    bytes: float
    blocks: int
    threads: int
    registers: int = 32
    shared_bytes: int = 0
    precision: str = "fp32"
    fixed_us: float | None = None   # a pinned stand-alone time (duration_us, calibration)
    resident: int | None = None     # blocks per SM when known a priori (overrides the rule)
    bytes_in_flight: float | None = None  # per block (GEMM tiles prefetch whole K-slices)
    detail: str = ""
    tile_intensity: float = 0.0     # GEMM tiles: tm*tn/(tm+tn), FLOPs per operand element loaded
    weight_bytes: float = 0.0       # per block: the slice of a layer's weights it reads
    weight_in_flight: float = 0.0   # per block: weight bytes it keeps in flight (its K-slices)


class Phase(NamedTuple):
    """A stretch of a kernel's run with constant demands: its stand-alone duration and the shares
    of the device's block slots, peak FLOP/s and DRAM bandwidth it uses when alone."""

    alone_us: float
    slots: float
    compute: float
    bandwidth: float


class KernelTime(NamedTuple):
    """The timing of one :class:`Launch` on one device, with the reasons."""

    launch: Launch
    latency_us: float
    phases: tuple[Phase, ...]
    resident_per_sm: int
    waves: int
    tail_blocks: int
    bound: str            # "compute", "memory" or "latency"
    efficiency: float     # executed FLOP/s over the precision's peak, during the work phases
    extra: tuple[tuple[str, Any], ...] = ()
    cold_us: float = 0.0  # more work time in a run, where the weights come cold from DRAM

    @property
    def work_us(self) -> float:
        return sum(p.alone_us for p in self.phases)

    @property
    def alone_us(self) -> float:
        return self.latency_us + self.work_us

    def explain(self) -> str:
        """One line: what ran, its grid, waves, efficiency and bound."""
        ln = self.launch
        tail = f", tail {self.tail_blocks} blocks" if self.waves > 1 else ""
        return (f"{ln.name}: {ln.blocks} blocks x {ln.threads} thr, {self.resident_per_sm}/SM, "
                f"{self.waves} wave{'s' if self.waves != 1 else ''}{tail}, "
                f"{100 * self.efficiency:.0f}% of peak, {self.bound}-bound, "
                f"{self.alone_us:.1f} µs")


def resident_blocks(spec: DeviceSpec, threads: int, registers: int, shared_bytes: int) -> int:
    """Blocks of one kernel that fit on an SM at once (CUDA occupancy rule), at least 1."""
    by_threads = spec.max_threads_per_sm // max(1, threads)
    by_regs = spec.registers_per_sm // max(1, registers * threads)
    by_smem = (int(spec.shared_memory_per_sm_kib * 1024) // shared_bytes
               if shared_bytes > 0 else spec.max_blocks_per_sm)
    return max(1, min(spec.max_blocks_per_sm, by_threads, by_regs, by_smem))


def _class_limits(kernel: str, precision: str, model: GpuModel) -> tuple[float, float]:
    """(best efficiency e, per-warp utilisation) of a kernel class."""
    if kernel == "gemm":
        e = model.gemm_efficiency if precision == "fp32" else model.tensor_efficiency
        return e, model.warp_utilization
    if kernel == "winograd":
        e = model.gemm_efficiency if precision == "fp32" else model.tensor_efficiency
        return e * model.winograd_efficiency, model.warp_utilization
    if kernel == "direct":
        return model.direct_efficiency, model.warp_utilization
    if kernel == "window" and model.window_efficiency > 0.0:
        return model.window_efficiency, model.warp_utilization
    if kernel in ("elementwise", "window") and model.elementwise_efficiency > 0.0:
        return model.elementwise_efficiency, model.warp_utilization
    return model.gemm_efficiency, model.warp_utilization  # elementwise, generic


def model_for(spec: DeviceSpec) -> GpuModel:
    """The :class:`GpuModel` for a device: the shipped parameters with the device file's
    ``gpu_model`` overrides (e.g. fitted on measurements of that device) applied; for a
    resolved :class:`~workbench.simulator.cost_model.target.DeviceTarget`, the model it holds."""
    held = getattr(spec, "gpu_model", None)
    if held is not None:
        return held
    return _model_for(spec.model_overrides)


@lru_cache(maxsize=64)
def _model_for(overrides: tuple[tuple[str, Any], ...]) -> GpuModel:
    model = default_model()
    return model.with_values(**dict(overrides)) if overrides else model


def time_launch(launch: Launch, spec: DeviceSpec, model: GpuModel | None = None) -> KernelTime:
    """Stand-alone timing of ``launch`` on ``spec`` (the module docstring gives the model).
    O(1)."""
    return _time_launch(launch, spec, model or model_for(spec))


@lru_cache(maxsize=1 << 16)
def _device_constants(spec: DeviceSpec, model: GpuModel) -> tuple[float, float, float]:
    """(FP32 peak FLOP/µs, achievable bandwidth in bytes/µs, memory latency in µs)."""
    return (spec.peak_tflops * 1e6, spec.bandwidth_gbps * 1e3 * model.bandwidth_efficiency,
            spec.memory_latency_ns * 1e-3)


@lru_cache(maxsize=1 << 16)
def _time_launch(launch: Launch, spec: DeviceSpec, model: GpuModel) -> KernelTime:
    # Written with plain arithmetic (no min/max calls, no closures): a million-op graph times a
    # million distinct launches.
    P = spec.sm_count
    latency = spec.kernel_latency_us
    r = launch.resident or resident_blocks(spec, launch.threads, launch.registers,
                                           launch.shared_bytes)
    blocks = launch.blocks if launch.blocks > 1 else 1
    slots_total = P * r
    waves = -(-blocks // slots_total)
    tail = blocks - (waves - 1) * slots_total
    fp32_peak, bandwidth, mem_latency = _device_constants(spec, model)
    if launch.kind == "gemm" or launch.kind == "winograd":
        peak = spec.peak_flops(launch.precision) / 1e6   # FLOP per µs
    else:
        peak = fp32_peak
    if launch.fixed_us is not None:
        return _pinned(launch, spec, r, waves, tail, latency, peak * 1e6)
    sm_peak = peak / P
    in_flight = launch.bytes_in_flight or launch.threads * model.bytes_in_flight_per_thread
    per_block_stream = in_flight / mem_latency  # bytes/µs (Little's law)
    e, u_warp = _class_limits(launch.kind, launch.precision, model)
    ref = model.tile_intensity_ref
    if launch.precision != "fp32" and model.tensor_intensity_ref > 0.0:
        ref = model.tensor_intensity_ref  # tensor cores need more operand reuse per load
    if ref > 0.0 and 0.0 < launch.tile_intensity < ref:
        e *= launch.tile_intensity / ref  # a small tile re-reads its operands: less per load
    warps = launch.threads // 32
    u1 = (warps if warps > 1 else 1) * u_warp
    if u1 > e:
        u1 = e
    c_b = launch.flops / blocks
    m_b = launch.bytes / blocks
    full_bw = bandwidth / model.bandwidth_efficiency
    l2_ratio = model.l2_bandwidth_ratio
    if l2_ratio != 1.0 and launch.bytes > 0:
        # the share of the traffic the L2 can hold is served at the L2's rate
        hit = spec.l2_cache_mib * 1048576.0 / launch.bytes
        bandwidth *= 1.0 + (l2_ratio - 1.0) * (hit if hit < 1.0 else 1.0)
    phases = []
    work = 0.0
    compute_time = 0.0
    cold = 0.0
    # in a run the weights come from DRAM: a block streams its slice at its in-flight bytes per
    # DRAM latency (Little's law), which bounds each wave from below
    cold_wave = (launch.weight_bytes * mem_latency / launch.weight_in_flight
                 if model.cold_weights and launch.weight_in_flight > 0 else 0.0)
    for k, active, n_waves, slots in (
            ((r, slots_total, waves - 1, 1.0),) if waves > 1 else ()) + (
            (-(-tail // P), tail, 1, tail / slots_total),):
        n_blocks = n_waves * active
        share = k * u1
        if share > e:
            share = e
        compute = c_b * k / (sm_peak * share) if c_b > 0 else 0.0
        stream = bandwidth / active
        if per_block_stream < stream:
            stream = per_block_stream
        memory = m_b / stream if m_b > 0 else 0.0
        per_wave = compute if compute >= memory else memory
        d = per_wave * n_waves
        if d <= 0:
            phases.append(Phase(0.0, slots if slots < 1.0 else 1.0, 0.0, 0.0))
            continue
        if cold_wave > per_wave:
            cold += (cold_wave - per_wave) * n_waves
        if compute >= memory:
            compute_time += d
        cf = n_blocks * c_b / (d * peak)
        bf = n_blocks * m_b / (d * full_bw)
        phases.append(Phase(d, slots if slots < 1.0 else 1.0, cf if cf < 1.0 else 1.0,
                            bf if bf < 1.0 else 1.0))
        work += d
    bound = ("latency" if latency >= work else
             "compute" if compute_time >= 0.5 * work else "memory")
    eff = launch.flops / (work * peak) if work > 0 else 0.0
    return KernelTime(launch, latency, tuple(phases), r, waves, tail, bound,
                      eff if eff < 1.0 else 1.0, cold_us=cold)


def _pinned(launch: Launch, spec: DeviceSpec, r: int, waves: int, tail: int, latency: float,
            peak: float) -> KernelTime:
    """A launch with a measured or given stand-alone time: the time is kept, the grid says how
    much of the device it holds (one phase)."""
    fixed = float(launch.fixed_us or 0.0)
    work = max(0.0, fixed - latency)
    slots = min(1.0, launch.blocks / (spec.sm_count * r)) if waves == 1 else 1.0
    phase = Phase(work, slots, slots, 0.0)
    return KernelTime(launch, min(fixed, latency), (phase,) if work > 0 else (), r, waves, tail,
                      "latency" if work <= latency else "compute", slots)


# ------------------------------------------------------------------------------ library choice
def check_precision(precision: str) -> str:
    if precision not in RUN_PRECISIONS:
        hint = did_you_mean(precision, RUN_PRECISIONS) if isinstance(precision, str) else ""
        raise OptionError(f"unknown precision {precision!r}{hint} "
                          f"(known: {', '.join(RUN_PRECISIONS)})")
    return precision


def kernel_precision(precision: str, spec: DeviceSpec, *, convolution: bool) -> str:
    """The precision GEMM-class kernels run at: ``precision`` itself, or for ``"auto"`` TF32
    for convolutions on devices with TF32 tensor cores (cuDNN 8's default math mode; PyTorch's
    ``cudnn.allow_tf32`` default) and FP32 otherwise (cuBLAS's default math for matmuls)."""
    if precision != "auto":
        spec.peak_flops(precision)  # an error if the device lacks it
        return precision
    if convolution and "tf32" in spec.precisions():
        return "tf32"
    return "fp32"


def gemm_candidates(m: int, n: int, k: int, *, batch: int, precision: str, model: GpuModel,
                    element_bytes: int, name: str, operand_bytes: float | None = None,
                    kind: str = "gemm", flop_scale: float = 1.0, conv: bool = False,
                    split: bool = True, prefix: Sequence[Launch] = (),
                    weights: bool = False) -> list[list[Launch]]:
    """Every tile shape × split-K choice for a batched ``(m × k) @ (k × n)`` product, each as the
    list of launches it takes (split-K adds a reduction kernel).  ``operand_bytes``: DRAM bytes of
    the two inputs (default: both matrices once; an implicit-GEMM convolution passes its input
    tensor and weights instead of the unfolded matrix); the output is written once per split.
    ``flop_scale`` scales the executed FLOPs (Winograd).  Each tile also pays a fixed prologue
    and epilogue (filling the pipeline, writing its output tile) worth ``gemm_k_overhead``
    (FP32) or ``tensor_k_overhead`` (tensor cores) more K-steps: a small-K product (SqueezeNet's
    1x1 expand convolutions, K = 16) runs far below the peak a large-K one reaches.
    ``conv``: the implicit-GEMM convolution tiles (no split-K) instead of the GEMM library's;
    ``split``: allow split-K (cuBLAS does; cuDNN's convolution algorithms do not); ``prefix``:
    launches every candidate runs first (an im2col); ``weights``: the ``k × n`` operand is a
    layer's weights, which a run reads cold from DRAM (``GpuModel.cold_weights``: each block
    streams its ``k × tn`` slice with its double-buffered K-slices of it in flight, which bounds
    the block's time from below; the stand-alone table's back-to-back replays find it in L2).
    O(tiles × splits)."""
    if operand_bytes is None:
        operand_bytes = element_bytes * batch * (m * k + k * n)
    out = []
    k_fixed = model.gemm_k_overhead if precision == "fp32" else model.tensor_k_overhead
    splits: tuple[int, ...] = model.split_k if split and not conv else (1,)
    for tm, tn, threads, regs, smem in model.tiles(precision, conv=conv):
        bm, bn = math.ceil(m / tm), math.ceil(n / tn)
        for parts in splits:
            if parts > 1 and k / parts < 32:
                continue
            blocks = batch * bm * bn * parts
            # padded tiles compute too; each tile's fixed part counts as k_fixed more K-steps
            flops = 2.0 * batch * bm * tm * bn * tn * (k / parts + k_fixed) * parts * flop_scale
            nbytes = operand_bytes + element_bytes * batch * m * n * parts
            k_step = 8 if precision == "fp32" else 32
            in_flight = 2 * (tm + tn) * k_step * element_bytes  # double-buffered K-slices
            b_in_flight = 2 * tn * k_step * element_bytes if weights else 0.0
            launches = [*prefix, Launch(f"{name} {tm}x{tn}" + (f" split-k {parts}" if parts > 1
                                                                  else ""),
                               kind, flops, nbytes, blocks, threads, regs, smem, precision,
                               bytes_in_flight=in_flight,
                               detail=f"M={m} N={n} K={k}" + (f" x{batch}" if batch > 1 else ""),
                               tile_intensity=tm * tn / (tm + tn),
                               weight_bytes=(k / parts) * tn * element_bytes if weights else 0.0,
                               weight_in_flight=b_in_flight)]
            if parts > 1:
                elems = batch * m * n
                launches.append(elementwise_launch(
                    "split-k reduce", elems, element_bytes * elems * (parts + 1), model,
                    flops=elems * parts))
            out.append(launches)
    return out


def fastest(candidates: Sequence[list[Launch]], spec: DeviceSpec,
            model: GpuModel) -> list[Launch]:
    """The candidate (a list of launches run back to back) with the least stand-alone time, as a
    library's benchmark-and-pick (cudnnFind) chooses."""
    best, best_t = None, math.inf
    for launches in candidates:
        t = sum(time_launch(ln, spec, model).alone_us for ln in launches)
        if t < best_t:
            best, best_t = launches, t
    if best is None:
        raise OptionError("no kernel candidate fits this operation")
    return best


def elementwise_launch(name: str, elements: int, nbytes: float, model: GpuModel, *,
                       flops: float = 0.0, grid: tuple[int, int] | None = None,
                       registers: int = 16, detail: str = "") -> Launch:
    """A grid-stride elementwise/copy kernel: one thread per element (capped at 32768 blocks,
    as IOS's and Caffe's ``GET_BLOCKS``), or the library's own ``grid`` (blocks, threads);
    each block also does ``elementwise_block_flops`` of setup (index arithmetic, loading
    per-channel operands)."""
    if grid is None:
        threads = model.elementwise_threads
        blocks = max(1, min(32768, math.ceil(max(1, elements) / threads)))
    else:
        blocks, threads = grid
    flops = float(flops) + blocks * model.elementwise_block_flops
    return Launch(name, "elementwise", flops, float(nbytes), blocks, threads, registers, 0,
                  detail=detail or f"{elements} elements")
