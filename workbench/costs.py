"""Device specs as data and the per-op cost model (roofline + occupancy).

Model (documented so the simulator's numbers can be argued with):

* **Work at full device.**  ``compute_us = flops / (peak_flops · compute_efficiency)`` and
  ``memory_us = bytes / (bandwidth · bandwidth_efficiency)``: how long the op's arithmetic and its
  memory traffic take if the op had the whole GPU.
* **Occupancy.**  A launch of ``B`` thread blocks on a device with ``slots = SMs · blocks_per_sm``
  runs in ``ceil(B / slots)`` waves and fills ``f = B / (ceil(B / slots) · slots)`` of the SMs on
  average (the RAF seed's example: 48 blocks on a 40-SM RTX 3070 Laptop with 2 blocks/SM fill 60%).
  A launch may use at most ``f`` of the SMs and at most ``min(1, bandwidth_per_sm_factor · f)`` of
  the memory bandwidth, so alone it runs for ``max(compute_us / f, memory_us / g)``.  Unknown launch
  shape: ``f = 1``.
* **Fixed costs.**  Every kernel pays ``kernel_latency_us`` on the device (launch latency, tail);
  every eagerly launched op costs the host ``launch_overhead_us``.
* ``duration_us`` on an op pins its stand-alone time (at its occupancy) and overrides the roofline;
  a calibration table (``calibrate``) does the same per op from measurements.

The simulator (``simulate.py``) shares SMs and bandwidth between concurrent kernels.

**Other devices** (seed 003's heterogeneous graphs).  ``op.device`` picks the cost model through the
table :data:`COST_MODELS`; a device not in it (``"gpu"`` and any name a user invents) gets the GPU
roofline above, so every graph costs exactly what it did before non-GPU devices existed.

* ``"cpu"``: C++ kernels on the host's core pool (:class:`HostSpec`): ``compute_us = flops /
  (cores · gflops_per_core · compute_efficiency)``, ``memory_us = bytes / (host bandwidth ·
  efficiency)``; ``thread_blocks`` is the number of parallel chunks, filling ``cores`` like blocks
  fill SMs (unknown: all cores); fixed ``kernel_latency_us`` of the host (thread-pool wake-up).
* ``"python"``: the interpreter on ONE core: ``python_overhead_us`` fixed plus the single-core cost
  (``gflops_per_core``, ``core_bandwidth_gbps``).  The simulator runs it on the host thread, which
  issues nothing else meanwhile (eager mode).
* ``"npu"``: an Ascend-like accelerator (:class:`NpuSpec`): the GPU roofline with AI cores for SMs.
* ``"copy"``: a transfer of ``max(bytes_read, bytes_written)`` bytes on a copy engine at
  ``copy_bandwidth_gbps`` (``h2d``/``d2h``: PCIe) or ``d2d_bandwidth_gbps`` (device to device),
  plus ``kernel_latency_us``; no SMs.  :func:`pool_of` puts each direction on its own engine (one
  H2D, one D2H, one D2D), so copies overlap compute and copies in the other direction; one engine
  runs one copy at a time (:func:`is_exclusive_pool`).

**Host issue stages** (seed 004, MindSpore's multi-level pipeline).  The host's per-op cost
``launch_overhead_us`` (GPU and copy ops; ``npu.launch_overhead_us`` for NPU ops,
``host.dispatch_us`` for cpu and python ops) is split into InferShape / Resize / Launch by
``host_stage_split`` (default 25% / 25% / 50%): :meth:`DeviceSpec.host_stages_us`.  A serial host
pays their sum per op (exactly the old ``launch_overhead_us``); a pipelined host overlaps them (see
``simulate.py``).  :func:`with_host_stages` sets the three stage costs directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from workbench.errors import OptionError
from workbench.graph import Graph, Op
from workbench.registry import Registry


@dataclass(frozen=True)
class HostSpec:
    """The host CPU: a pool of cores for ``cpu`` ops and the interpreter thread for ``python`` ops.

    Defaults describe a 32-core server socket (AVX-512 at about 3 GHz: 100 GFLOP/s per core peak
    FP32, 200 GB/s DRAM, about 20 GB/s for one core).  Assumed figures, not measurements.
    """

    name: str = "host"
    cores: int = 32
    gflops_per_core: float = 100.0     # FP32 peak per core
    bandwidth_gbps: float = 200.0      # DRAM bandwidth for the whole socket
    core_bandwidth_gbps: float = 20.0  # what one core (a python op) can stream
    compute_efficiency: float = 0.5
    bandwidth_efficiency: float = 0.7
    dispatch_us: float = 1.0           # host time to hand one cpu/python op to its executor
    kernel_latency_us: float = 1.0     # fixed time per cpu op (thread-pool wake-up, tail)
    python_overhead_us: float = 20.0   # interpreter overhead per python op (call, boxing, GIL)


@dataclass(frozen=True)
class NpuSpec:
    """An Ascend-910-like NPU (seed 003: graphs sink to it).  32 AI cores; 256 TFLOP/s is the FP16
    cube peak (the graphs are costed with that peak: an assumption, the cube computes in FP16);
    1.2 TB/s HBM.  Per-op launch in single-op mode costs the host ``launch_overhead_us``."""

    name: str = "ascend910"
    ai_cores: int = 32
    peak_tflops: float = 256.0
    bandwidth_gbps: float = 1200.0
    launch_overhead_us: float = 6.0
    kernel_latency_us: float = 3.0
    blocks_per_core: int = 1
    compute_efficiency: float = 0.5
    bandwidth_efficiency: float = 0.8
    bandwidth_per_core_factor: float = 2.0


@dataclass(frozen=True)
class DeviceSpec:
    """A GPU as the cost model sees it (plus the host, an NPU and copy engines beside it for
    heterogeneous graphs).  Units are in the names."""

    name: str
    sm_count: int
    peak_tflops: float            # FP32 CUDA-core peak
    bandwidth_gbps: float         # device memory bandwidth, GB/s
    launch_overhead_us: float = 5.0    # host time to launch one kernel eagerly
    kernel_latency_us: float = 2.0     # device-side fixed time per kernel
    event_overhead_us: float = 0.5     # host time to record or wait one event
    graph_launch_us: float = 8.0       # host time to launch a whole captured graph (sink mode)
    blocks_per_sm: int = 2
    compute_efficiency: float = 0.6
    bandwidth_efficiency: float = 0.8
    bandwidth_per_sm_factor: float = 2.0
    memory_gib: float = 80.0
    copy_bandwidth_gbps: float = 25.0  # host <-> device copies (PCIe)
    description: str = ""
    host: HostSpec = field(default_factory=HostSpec)
    npu: NpuSpec = field(default_factory=NpuSpec)
    d2d_bandwidth_gbps: float | None = None  # device <-> device copies; None: copy_bandwidth_gbps
    # InferShape / Resize / Launch shares of each op's host cost (MindSpore multi-level pipeline)
    host_stage_split: tuple[float, float, float] = (0.25, 0.25, 0.5)

    @property
    def slots(self) -> int:
        return self.sm_count * self.blocks_per_sm

    @property
    def infer_us(self) -> float:
        """Host InferShape time per GPU op."""
        return self.host_stages_us("gpu")[0]

    @property
    def resize_us(self) -> float:
        """Host Resize time per GPU op (tiling, memory sizes)."""
        return self.host_stages_us("gpu")[1]

    @property
    def launch_us(self) -> float:
        """Host Launch time per GPU op (memory alloc/free and the kernel launch)."""
        return self.host_stages_us("gpu")[2]

    def host_op_us(self, device: str) -> float:
        """Serial host cost of issuing one op on ``device`` (the sum of its three stages)."""
        if device == "npu":
            return self.npu.launch_overhead_us
        if device in HOST_DEVICES:
            return self.host.dispatch_us
        return self.launch_overhead_us

    def host_stages_us(self, device: str) -> tuple[float, float, float]:
        """(InferShape, Resize, Launch) host times of one op on ``device``."""
        total = self.host_op_us(device)
        a, b, c = self.host_stage_split
        return (total * a, total * b, total * c)


DEVICES = Registry[DeviceSpec]("device", error=OptionError)
DEVICES.register("v100", DeviceSpec(
    "v100", sm_count=80, peak_tflops=15.7, bandwidth_gbps=900, memory_gib=32,
    copy_bandwidth_gbps=12.0, description="NVIDIA Tesla V100 SXM2 (IOS and RAF measured on it)"))
DEVICES.register("a100", DeviceSpec(
    "a100", sm_count=108, peak_tflops=19.5, bandwidth_gbps=2039, memory_gib=80,
    description="NVIDIA A100 80GB SXM"))
DEVICES.register("h100", DeviceSpec(
    "h100", sm_count=132, peak_tflops=67.0, bandwidth_gbps=3350, memory_gib=80,
    launch_overhead_us=4.0, copy_bandwidth_gbps=50.0, description="NVIDIA H100 SXM5 80GB"))
DEVICES.register("rtx3070_laptop", DeviceSpec(
    "rtx3070_laptop", sm_count=40, peak_tflops=15.97, bandwidth_gbps=448, memory_gib=8,
    launch_overhead_us=6.0, copy_bandwidth_gbps=12.0,
    description="NVIDIA GeForce RTX 3070 Laptop GPU (RAF seed's occupancy example)"))


def devices() -> list[str]:
    return DEVICES.names()


def get_device(device: str | DeviceSpec) -> DeviceSpec:
    """A registered device by name, or the given spec."""
    if isinstance(device, DeviceSpec):
        return device
    return DEVICES.get(str(device).lower())


@dataclass(frozen=True)
class OpCost:
    """What the simulator needs to know about one op on one device."""

    compute_us: float   # arithmetic time with the whole device
    memory_us: float    # memory-traffic time with the whole device
    sm_cap: float       # max fraction of SMs the launch can use (occupancy)
    bw_cap: float       # max fraction of bandwidth it can use
    latency_us: float   # fixed device time

    @property
    def work_us(self) -> float:
        """Stand-alone time of the work phase (latency excluded)."""
        return max(self.compute_us / self.sm_cap if self.compute_us else 0.0,
                   self.memory_us / self.bw_cap if self.memory_us else 0.0)

    @property
    def alone_us(self) -> float:
        """Stand-alone duration: the least time this op can take."""
        return self.latency_us + self.work_us


def occupancy(thread_blocks: int | None, spec: DeviceSpec) -> float:
    """Average fraction of SMs a launch of ``thread_blocks`` blocks fills (wave quantisation).

    >>> round(occupancy(48, get_device("rtx3070_laptop")), 2)
    0.6
    """
    if thread_blocks is None:
        return 1.0
    slots = spec.slots
    waves = math.ceil(thread_blocks / slots)
    return thread_blocks / (waves * slots)


def _slot_fill(thread_blocks: int | None, slots: int) -> float:
    if thread_blocks is None:
        return 1.0
    waves = math.ceil(thread_blocks / slots)
    return thread_blocks / (waves * slots)


def _fixed_time(op: Op, calibration: Mapping[str, float] | None) -> float | None:
    if calibration is not None and op.id in calibration:
        return calibration[op.id]
    return op.duration_us


def _pinned(fixed: float, f: float, g: float, latency: float) -> OpCost:
    work = max(0.0, fixed - latency)
    return OpCost(compute_us=work * f, memory_us=0.0, sm_cap=f, bw_cap=g,
                  latency_us=min(fixed, latency))


def _gpu_cost(op: Op, spec: DeviceSpec, calibration: Mapping[str, float] | None) -> OpCost:
    f = occupancy(op.thread_blocks, spec)
    g = min(1.0, spec.bandwidth_per_sm_factor * f)
    fixed = _fixed_time(op, calibration)
    if fixed is not None:
        return _pinned(fixed, f, g, spec.kernel_latency_us)
    compute = op.flops / (spec.peak_tflops * 1e6 * spec.compute_efficiency)
    memory = (op.bytes_read + op.bytes_written) / (spec.bandwidth_gbps * 1e3
                                                    * spec.bandwidth_efficiency)
    return OpCost(compute_us=compute, memory_us=memory, sm_cap=f, bw_cap=g,
                  latency_us=spec.kernel_latency_us)


def _cpu_cost(op: Op, spec: DeviceSpec, calibration: Mapping[str, float] | None) -> OpCost:
    host = spec.host
    f = _slot_fill(op.thread_blocks, host.cores)
    g = min(1.0, 2.0 * f)
    fixed = _fixed_time(op, calibration)
    if fixed is not None:
        return _pinned(fixed, f, g, host.kernel_latency_us)
    compute = op.flops / (host.cores * host.gflops_per_core * 1e3 * host.compute_efficiency)
    memory = (op.bytes_read + op.bytes_written) / (host.bandwidth_gbps * 1e3
                                                    * host.bandwidth_efficiency)
    return OpCost(compute_us=compute, memory_us=memory, sm_cap=f, bw_cap=g,
                  latency_us=host.kernel_latency_us)


def _python_cost(op: Op, spec: DeviceSpec, calibration: Mapping[str, float] | None) -> OpCost:
    host = spec.host
    fixed = _fixed_time(op, calibration)
    if fixed is not None:
        return _pinned(fixed, 1.0, 1.0, host.python_overhead_us)
    compute = op.flops / (host.gflops_per_core * 1e3 * host.compute_efficiency)
    memory = (op.bytes_read + op.bytes_written) / (host.core_bandwidth_gbps * 1e3
                                                    * host.bandwidth_efficiency)
    return OpCost(compute_us=compute, memory_us=memory, sm_cap=1.0, bw_cap=1.0,
                  latency_us=host.python_overhead_us)


def _npu_cost(op: Op, spec: DeviceSpec, calibration: Mapping[str, float] | None) -> OpCost:
    npu = spec.npu
    f = _slot_fill(op.thread_blocks, npu.ai_cores * npu.blocks_per_core)
    g = min(1.0, npu.bandwidth_per_core_factor * f)
    fixed = _fixed_time(op, calibration)
    if fixed is not None:
        return _pinned(fixed, f, g, npu.kernel_latency_us)
    compute = op.flops / (npu.peak_tflops * 1e6 * npu.compute_efficiency)
    memory = (op.bytes_read + op.bytes_written) / (npu.bandwidth_gbps * 1e3
                                                    * npu.bandwidth_efficiency)
    return OpCost(compute_us=compute, memory_us=memory, sm_cap=f, bw_cap=g,
                  latency_us=npu.kernel_latency_us)


def _copy_cost(op: Op, spec: DeviceSpec, calibration: Mapping[str, float] | None) -> OpCost:
    fixed = _fixed_time(op, calibration)
    if fixed is not None:
        return _pinned(fixed, 1.0, 1.0, spec.kernel_latency_us)
    bw = spec.copy_bandwidth_gbps
    if op.kind == "d2d" and spec.d2d_bandwidth_gbps is not None:
        bw = spec.d2d_bandwidth_gbps
    memory = max(op.bytes_read, op.bytes_written) / (bw * 1e3)
    return OpCost(compute_us=0.0, memory_us=memory, sm_cap=1.0, bw_cap=1.0,
                  latency_us=spec.kernel_latency_us)


CostModel = Callable[[Op, DeviceSpec, Mapping[str, float] | None], OpCost]

#: Cost model per ``op.device``; any other device name gets the GPU roofline.
COST_MODELS: dict[str, CostModel] = {
    "cpu": _cpu_cost,
    "python": _python_cost,
    "npu": _npu_cost,
    "copy": _copy_cost,
}
HOST_DEVICES = frozenset({"cpu", "python"})  # run on the host and share host memory
COPY_KINDS = ("h2d", "d2h", "d2d")


def pool_of(op: Op) -> str:
    """The resource pool an op runs in: its device, except copies, which run on one engine per
    direction (``"copy:h2d"``, ``"copy:d2h"``, ``"copy:d2d"``).

    >>> pool_of(Op("c", kind="h2d", device="copy"))
    'copy:h2d'
    """
    if op.device == "copy":
        return f"copy:{op.kind}"
    return op.device


def is_exclusive_pool(pool: str) -> bool:
    """Pools that run one op at a time (the simulator queues the rest): each copy engine and the
    Python interpreter."""
    return pool == "python" or pool.startswith("copy:")


def op_cost(op: Op, spec: DeviceSpec, calibration: Mapping[str, float] | None = None) -> OpCost:
    """The cost of ``op`` on ``spec`` (see the module docstring for the model)."""
    return COST_MODELS.get(op.device, _gpu_cost)(op, spec, calibration)


def graph_costs(graph: Graph, device: str | DeviceSpec,
                calibration: Mapping[str, float] | None = None) -> list[OpCost]:
    """:func:`op_cost` for every op, in program order."""
    spec = get_device(device)
    return [op_cost(op, spec, calibration) for op in graph.ops]


def critical_path_us(graph: Graph, device: str | DeviceSpec,
                     calibration: Mapping[str, float] | None = None) -> float:
    """Longest path of stand-alone op durations: no schedule can finish sooner.  O(V + E)."""
    costs = graph_costs(graph, device, calibration)
    finish = [0.0] * len(graph)
    pred = graph.pred_index
    for i in graph.topo_index:
        finish[i] = costs[i].alone_us + max((finish[p] for p in pred[i]), default=0.0)
    return max(finish, default=0.0)


def work_bound_us(graph: Graph, device: str | DeviceSpec,
                  calibration: Mapping[str, float] | None = None) -> float:
    """Total work over device capacity: max(sum of compute_us, sum of memory_us) per device."""
    costs = graph_costs(graph, device, calibration)
    per_device: dict[str, list[float]] = {}
    for op, c in zip(graph.ops, costs, strict=True):
        acc = per_device.setdefault(op.device, [0.0, 0.0])
        acc[0] += c.compute_us
        acc[1] += c.memory_us
    return max((max(v) for v in per_device.values()), default=0.0)


def lower_bound_us(graph: Graph, device: str | DeviceSpec,
                   calibration: Mapping[str, float] | None = None) -> dict[str, float]:
    """The makespan lower bounds: critical path, work over capacity, and their max."""
    cp = critical_path_us(graph, device, calibration)
    work = work_bound_us(graph, device, calibration)
    return {"critical_path_us": cp, "work_us": work, "lower_bound_us": max(cp, work)}


def with_overrides(device: str | DeviceSpec, **changes: Any) -> DeviceSpec:
    """A copy of a device spec with some fields changed (e.g. ``launch_overhead_us=0``)."""
    spec = get_device(device)
    try:
        return replace(spec, **changes)
    except TypeError as exc:
        raise OptionError(f"unknown device field in {sorted(changes)}: {exc}") from None


def with_host_stages(device: str | DeviceSpec, *, infer_us: float, resize_us: float,
                     launch_us: float) -> DeviceSpec:
    """A copy of a device spec whose GPU ops cost the host ``infer_us`` + ``resize_us`` +
    ``launch_us`` (``launch_overhead_us`` becomes their sum, ``host_stage_split`` their shares; the
    same shares then apply to NPU, cpu and python ops).

    >>> spec = with_host_stages("h100", infer_us=3.0, resize_us=1.0, launch_us=2.0)
    >>> spec.launch_overhead_us, spec.infer_us
    (6.0, 3.0)
    """
    stages = (infer_us, resize_us, launch_us)
    for v in stages:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or math.isnan(v):
            raise OptionError(f"host stage times must be non-negative numbers, got {stages}")
    total = float(sum(stages))
    split = tuple(v / total for v in stages) if total > 0 else (0.25, 0.25, 0.5)
    return with_overrides(device, launch_overhead_us=total, host_stage_split=split)


def calibrate(trace_or_table: Any) -> dict[str, float]:
    """Per-op stand-alone times (µs) for ``simulate(..., calibration=...)``.

    Accepts a measured :class:`~workbench.trace.Trace` (its ``alone_us`` where finite, else the
    op's measured ``duration_us``), a :class:`~workbench.gpu.calibration.CalibrationTable`, a path
    to one saved as JSON (:func:`save_calibration`), a mapping with an ``"ops"`` entry (the JSON
    layout) or a plain ``{op_id: µs}`` mapping.  Times must be finite and non-negative.

    >>> calibrate({"a": 12.5, "b": 3})
    {'a': 12.5, 'b': 3.0}
    """
    import os

    from workbench.gpu.calibration import CalibrationTable, load_calibration, table_from_trace

    source = trace_or_table
    if isinstance(source, (str, os.PathLike)):
        source = load_calibration(source)
    if hasattr(source, "df") and hasattr(source, "graph"):
        source = table_from_trace(source)
    if isinstance(source, CalibrationTable):
        ops: Mapping[str, Any] = source.ops
    elif isinstance(source, Mapping):
        ops = source["ops"] if isinstance(source.get("ops"), Mapping) else source
    else:
        raise OptionError(f"calibrate() needs a Trace, a calibration table, a path or a mapping, "
                          f"got {type(trace_or_table).__name__}")
    out = {}
    for op, value in ops.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            raise OptionError(f"calibration of op {op!r} is {value!r}; expected a non-negative "
                              f"number of microseconds")
        out[str(op)] = float(value)
    return out


def save_calibration(table: Any, path: Any) -> Any:
    """Write a calibration table (or ``{op: µs}``) as JSON (:mod:`workbench.gpu.calibration`)."""
    from workbench.gpu.calibration import save_calibration as _save

    return _save(table, path)


def load_calibration(path: Any) -> Any:
    """Read a calibration table written by :func:`save_calibration`."""
    from workbench.gpu.calibration import load_calibration as _load

    return _load(path)
