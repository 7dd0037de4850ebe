"""The per-op cost model: what each op costs on a device, and why.

An op's cost (:class:`OpCost`) is the list of kernels it launches
(:mod:`workbench.simulator.cost_model.launches`), each
timed by the occupancy / waves / tail-wave model of
:mod:`workbench.simulator.cost_model.kernel_model` on a
:class:`~workbench.simulator.cost_model.devices.DeviceSpec` (spec-sheet figures, one JSON file per
device), plus the
host time to issue them (``launch_overhead_us`` per kernel, eager mode).  The simulator
(:mod:`workbench.simulator.simulate`) runs the kernels' phases, sharing the device between streams.

* ``duration_us`` on an op pins its stand-alone time (one kernel on ``thread_blocks`` blocks) and
  overrides the model; a calibration table (:func:`calibrate`) does the same per op from
  measurements.
* ``precision``: ``auto`` (default: FP32 tensors, convolutions on TF32 tensor cores where the
  device has them, as cuDNN 8 and PyTorch do by default; FP32 CUDA cores on V100/T4), ``fp32``
  (CUDA cores only), ``tf32``, ``fp16`` or ``bf16``: the peak GEMM-class kernels run at (dense
  tensor cores for the last three) and the element size of every tensor.

**Other devices** (seed 003's heterogeneous graphs).  ``op.device`` picks the cost model through
:data:`COST_MODELS`; ``"gpu"`` gets the kernel model above.  Each of the others is one kernel:

* ``"cpu"``: C++ kernels on the host's core pool
(:class:`~workbench.simulator.cost_model.devices.HostSpec`):
  ``compute_us = flops / (cores · gflops_per_core · compute_efficiency)``, ``memory_us = bytes /
  (host bandwidth · efficiency)``; ``thread_blocks`` is the number of parallel chunks, filling
  ``cores`` like blocks fill SMs (unknown: all cores); fixed ``kernel_latency_us`` of the host.
* ``"python"``: the interpreter on ONE core: ``python_overhead_us`` fixed plus the single-core cost
  (``gflops_per_core``, ``core_bandwidth_gbps``).  The simulator runs it on the host thread, which
  issues nothing else meanwhile (eager mode).
* ``"npu"``: an Ascend-like accelerator (:class:`~workbench.simulator.cost_model.devices.NpuSpec`):
a roofline with AI
  cores for SMs.
* ``"copy"``: a transfer of ``max(bytes_read, bytes_written)`` bytes on a copy engine at
  ``copy_bandwidth_gbps`` (``h2d``/``d2h``: PCIe) or ``d2d_bandwidth_gbps`` (device to device),
  plus ``kernel_latency_us``; no SMs.  :func:`pool_of` puts each direction on its own engine (one
  H2D, one D2H, one D2D), so copies overlap compute and copies in the other direction; one engine
  runs one copy at a time (:func:`is_exclusive_pool`).

Any other device name is an error (:func:`check_op_device`).

**Control flow** (``while``, ``case_of``; :mod:`workbench.control`).  To the schedulers and the
lower bounds such an op is one kernel as long as its sub-graphs' critical paths in a row for its
default run (``cond`` ``N + 1`` times and ``body`` ``N`` times; the default branch): a lower bound
of what the simulator, which runs the sub-graphs themselves, finds (the host's round trips come on
top).  Its compute, memory and host figures are the sub-graphs' sums.

**Host issue stages** (seed 004, MindSpore's multi-level pipeline).  The host's per-kernel cost
``launch_overhead_us`` (GPU and copy ops; ``npu.launch_overhead_us`` for NPU ops,
``host.dispatch_us`` for cpu and python ops) is split into InferShape / Resize / Launch by
``host_stage_split`` (default 25% / 25% / 50%): :meth:`DeviceSpec.host_stages_us`.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from workbench.errors import GraphError
from workbench.ops import ENGINE_COPY_KINDS, OPS
from workbench.ops.control import WHILE
from workbench.simulator.cost_model.calibration import (
    FrozenCalibration,
    calibrate,
    load_calibration,
    save_calibration,
)
from workbench.simulator.cost_model.devices import (
    DEVICES,
    HOST_DEVICES,
    DeviceSpec,
    HostSpec,
    NpuSpec,
    devices,
    get_device,
    with_host_stages,
    with_overrides,
)
from workbench.simulator.cost_model.kernel_model import (
    GpuModel,
    KernelTime,
    Launch,
    Phase,
    kernel_precision,
    model_for,
    time_launch,
)
from workbench.simulator.cost_model.launches import op_launches
from workbench.simulator.cost_model.target import resolve_device
from workbench.values.graph import CONTROL_KINDS, Graph, Op
from workbench.values.state import state_order

#: The launch rules of the convolutions, whose peak (for the work bound) is the convolution
#: precision's (TF32 under ``auto`` where the device has it, as cuDNN runs them).
_CONVOLUTION_RULES = ("convolution", "separable_convolution")

__all__ = [
    "COPY_KINDS", "COST_MODELS", "DEVICES", "GPU_DEVICES", "HOST_DEVICES", "KNOWN_DEVICES",
    "DeviceSpec", "HostSpec", "NpuSpec", "OpCost", "calibrate", "check_op_device",
    "critical_path_us", "devices", "get_device", "graph_costs", "is_exclusive_pool",
    "load_calibration", "lower_bound_us", "occupancy", "op_cost", "pool_of", "save_calibration",
    "with_host_stages", "with_overrides", "work_bound_us",
]


class OpCost(NamedTuple):
    """What one op costs on one device: its kernels (each a :class:`KernelTime`: latency, then
    work phases), the host time to issue them, and its arithmetic / memory time at full device
    (``compute_us``, ``memory_us``: the inputs of the work lower bound)."""

    kernels: tuple[KernelTime, ...]
    host_us: float
    compute_us: float
    memory_us: float

    @property
    def latency_us(self) -> float:
        return sum(k.latency_us for k in self.kernels)

    @property
    def work_us(self) -> float:
        """Stand-alone time of the work phases (latencies excluded)."""
        return sum(k.work_us for k in self.kernels)

    @property
    def alone_us(self) -> float:
        """Stand-alone duration: the least time this op can take on the device."""
        return sum(k.alone_us for k in self.kernels)

    @property
    def n_kernels(self) -> int:
        return len(self.kernels)

    def explain(self) -> str:
        """Why the op takes what it takes: one clause per kernel."""
        if not self.kernels:
            return "no kernel"
        return "; ".join(k.explain() for k in self.kernels)


def occupancy(thread_blocks: int | None, spec: DeviceSpec) -> float:
    """Average fraction of block slots a launch of ``thread_blocks`` blocks fills with
    ``spec.blocks_per_sm`` blocks per SM (wave quantisation): the RAF seed's occupancy example.

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


def _single(name: str, latency: float, compute_us: float, memory_us: float, cap: float,
            bw_cap: float, fixed: float | None) -> KernelTime:
    """A one-phase kernel of a roofline device (cpu, npu, copy engine, python)."""
    if fixed is not None:
        work = max(0.0, fixed - latency)
        latency = min(fixed, latency)
        phase = Phase(work, cap, cap, 0.0)
    else:
        work = max(compute_us / cap if compute_us else 0.0,
                   memory_us / bw_cap if memory_us else 0.0)
        phase = Phase(work, cap, compute_us / work if work else 0.0,
                      memory_us / work if work else 0.0)
    launch = Launch(name, "generic", 0.0, 0.0, 1, 1, fixed_us=fixed)
    bound = "latency" if latency >= work else (
        "memory" if memory_us / bw_cap > compute_us / cap else "compute")
    return KernelTime(launch, latency, (phase,) if work > 0 else (), 1, 1, 1, bound, cap)


def _roofline(k: KernelTime, host_us: float, compute: float, memory: float) -> OpCost:
    """The cost of a one-kernel op of a roofline device.  Given a fixed time (a duration or a
    calibration), the work bound counts the device share the kernel occupies for that time,
    not the roofline time of its bytes: a 20 µs python op whose bytes would take 599 µs at
    one core's bandwidth put 599 µs into a work "lower bound" above the simulated makespan."""
    if k.launch.fixed_us is not None:
        compute, memory = sum(p.alone_us * p.compute for p in k.phases), 0.0
    return OpCost((k,), host_us, compute, memory)


def _gpu_cost(op: Op, spec: DeviceSpec, calibration: Mapping[str, float] | None,
              graph: Graph | None, precision: str, model: GpuModel) -> OpCost:
    fixed = _fixed_time(op, calibration)
    launches = op_launches(op, graph, spec, model, precision=precision, fixed_us=fixed)
    kernels = tuple([time_launch(ln, spec, model) for ln in launches])
    info = OPS.get(op.kind)
    if info is not None and info.launch_rule in _CONVOLUTION_RULES:  # conv1d/2d/3d, sepconv
        peak = spec.peak_flops(kernel_precision(precision, spec, convolution=True))
    elif precision == "auto" or precision == "fp32":
        peak = spec.peak_tflops * 1e12
    else:
        peak = spec.peak_flops(precision)
    compute = op.flops / (peak / 1e6)
    memory = (op.bytes_read + op.bytes_written) / (spec.bandwidth_gbps * 1e3)
    if fixed is not None:
        compute, memory = sum(p.alone_us * p.compute for k in kernels for p in k.phases), 0.0
    return OpCost(kernels, spec.host_op_us(op.device) * len(kernels), compute, memory)


def _cpu_cost(op: Op, spec: DeviceSpec, calibration: Mapping[str, float] | None,
              graph: Graph | None, precision: str, model: GpuModel) -> OpCost:
    host = spec.host
    f = _slot_fill(op.thread_blocks, host.cores)
    g = min(1.0, 2.0 * f)
    compute = op.flops / (host.cores * host.gflops_per_core * 1e3 * host.compute_efficiency)
    memory = (op.bytes_read + op.bytes_written) / (host.bandwidth_gbps * 1e3
                                                    * host.bandwidth_efficiency)
    k = _single(op.kind, host.kernel_latency_us, compute, memory, f, g,
                _fixed_time(op, calibration))
    return _roofline(k, spec.host_op_us("cpu"), compute, memory)


def _python_cost(op: Op, spec: DeviceSpec, calibration: Mapping[str, float] | None,
                 graph: Graph | None, precision: str, model: GpuModel) -> OpCost:
    host = spec.host
    compute = op.flops / (host.gflops_per_core * 1e3 * host.compute_efficiency)
    memory = (op.bytes_read + op.bytes_written) / (host.core_bandwidth_gbps * 1e3
                                                    * host.bandwidth_efficiency)
    k = _single(op.kind, host.python_overhead_us, compute, memory, 1.0, 1.0,
                _fixed_time(op, calibration))
    return _roofline(k, spec.host_op_us("python"), compute, memory)


def _npu_cost(op: Op, spec: DeviceSpec, calibration: Mapping[str, float] | None,
              graph: Graph | None, precision: str, model: GpuModel) -> OpCost:
    npu = spec.npu
    f = _slot_fill(op.thread_blocks, npu.ai_cores * npu.blocks_per_core)
    g = min(1.0, npu.bandwidth_per_core_factor * f)
    compute = op.flops / (npu.peak_tflops * 1e6 * npu.compute_efficiency)
    memory = (op.bytes_read + op.bytes_written) / (npu.bandwidth_gbps * 1e3
                                                    * npu.bandwidth_efficiency)
    k = _single(op.kind, npu.kernel_latency_us, compute, memory, f, g,
                _fixed_time(op, calibration))
    return _roofline(k, spec.host_op_us("npu"), compute, memory)


def _copy_cost(op: Op, spec: DeviceSpec, calibration: Mapping[str, float] | None,
               graph: Graph | None, precision: str, model: GpuModel) -> OpCost:
    bw = spec.copy_bandwidth_gbps
    info = OPS.get(op.kind)
    if info is not None and info.within_device and spec.d2d_bandwidth_gbps is not None:
        bw = spec.d2d_bandwidth_gbps
    memory = max(op.bytes_read, op.bytes_written) / (bw * 1e3)
    k = _single(op.kind, spec.kernel_latency_us, 0.0, memory, 1.0, 1.0,
                _fixed_time(op, calibration))
    return _roofline(k, spec.host_op_us("copy"), 0.0, memory)


CostModel = Callable[[Op, DeviceSpec, "Mapping[str, float] | None", "Graph | None", str,
                      GpuModel], OpCost]

#: Cost model per ``op.device``.
COST_MODELS: dict[str, CostModel] = {
    "gpu": _gpu_cost,
    "cpu": _cpu_cost,
    "python": _python_cost,
    "npu": _npu_cost,
    "copy": _copy_cost,
}
GPU_DEVICES = frozenset({"gpu"})
KNOWN_DEVICES = tuple(COST_MODELS)
#: Host/device copies, one copy engine per direction (``engine_copy`` in workbench.ops.OPS).
COPY_KINDS = tuple(k for k in OPS if k in ENGINE_COPY_KINDS)


def check_op_device(device: str, *, where: str = "op") -> str:
    """``device`` if the cost model knows it, else a one-line error listing the known ones (a
    typo such as ``"GPU"`` or ``"tpu"`` must not silently become a second GPU)."""
    if device not in COST_MODELS:
        lower = str(device).lower()
        hint = f"; did you mean {lower!r}?" if lower in COST_MODELS else ""
        raise GraphError(f"{where}: unknown device {device!r} (known: "
                         f"{', '.join(KNOWN_DEVICES)}){hint}")
    return device


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


def op_cost(op: Op, spec: DeviceSpec | str, calibration: Mapping[str, float] | None = None, *,
            graph: Graph | None = None, precision: str = "auto",
            model: GpuModel | None = None) -> OpCost:
    """The cost of ``op`` on ``spec`` (see the module docstring for the model).  Pass the
    ``graph`` so tensor shapes decide the kernels (without it an op is one generic kernel)."""
    spec = resolve_device(spec, precision=precision, model=model)
    model = model_for(spec)  # the target's own model: no lookup
    if op.kind in CONTROL_KINDS:
        return _control_cost(op, spec, precision, model)
    fn = COST_MODELS.get(op.device)
    if fn is None:
        check_op_device(op.device, where=f"op {op.id!r}")
        raise AssertionError  # unreachable
    return fn(op, spec, calibration, graph, precision, model)


def _control_cost(op: Op, spec: DeviceSpec, precision: str, model: GpuModel) -> OpCost:
    """A control-flow op as one kernel (module docstring).  O(sub-graph ops), cached per
    sub-graph."""
    from workbench.control.ops import branch_index, subgraphs

    if op.kind == WHILE:
        n = int(op.attrs.get("iterations", 1))
        parts = [(op.attrs["cond"], n + 1), (op.attrs["body"], n)]
    else:
        parts = [(subgraphs(op)[branch_index(op, None)][1], 1)]
    span = compute = memory = host = 0.0
    for g, times in parts:
        if not times or not len(g):
            continue
        costs = graph_costs(g, spec, precision=precision, model=model)
        span += times * _longest_path(g, costs)
        compute += times * sum(c.compute_us for c in costs)
        memory += times * sum(c.memory_us for c in costs)
        host += times * sum(c.host_us for c in costs)
    kernel = _single(op.kind, 0.0, compute, memory, 1.0, 1.0, span)
    return OpCost((kernel,), host, compute, memory)


def _longest_path(graph: Graph, costs: list[OpCost], after: Mapping[int, list[int]] | None = None
                  ) -> float:
    """The longest path of stand-alone times over the graph's edges and, with ``after``, the
    extra predecessors it lists per op index (each earlier in the topological order)."""
    finish = [0.0] * len(graph)
    pred = graph.pred_index
    for i in graph.topo_index:
        before = pred[i] if after is None or i not in after else [*pred[i], *after[i]]
        finish[i] = costs[i].alone_us + max((finish[p] for p in before), default=0.0)
    return max(finish, default=0.0)


def graph_costs(graph: Graph, device: str | DeviceSpec,
                calibration: Mapping[str, float] | None = None, *, precision: str = "auto",
                model: GpuModel | None = None) -> list[OpCost]:
    """:func:`op_cost` for every op, in program order.  Cached on the graph, since schedulers,
    the simulator and IOS's oracle ask again and again: without a calibration, one table per
    device, precision and model; under a :class:`FrozenCalibration` (what the simulator checks a
    calibration into, and a device profile's times), the :data:`CALIBRATED_KEPT` most recently
    used (a fit's finite differences try hundreds, which are not all kept).  A plain mapping is
    not cached: it could change.  O(V) when computed, O(1) (plus the key's hash) when cached."""
    spec = resolve_device(device, precision=precision, model=model)
    model = model_for(spec)
    cache: dict[Any, Any] = graph._cache  # the graph's own memo table
    recent: _RecentTables | None = None
    key: tuple[Any, ...] = ("costs", spec, precision, model)
    if calibration is None:
        hit = cache.get(key)
    elif isinstance(calibration, FrozenCalibration):
        recent = cache.get("calibrated_costs")
        if recent is None:  # first use, or the graph was unpickled (the tables stay behind)
            recent = cache["calibrated_costs"] = _RecentTables()
        key = (spec, precision, model, calibration)
        hit = recent.get(key)
        if hit is not None:
            recent.move_to_end(key)
    else:
        hit = None
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    costs = [op_cost(op, spec, calibration, graph=graph, precision=precision, model=model)
             for op in graph.ops]
    if calibration is None:
        cache[key] = costs
    elif recent is not None:
        recent[key] = costs
        if len(recent) > CALIBRATED_KEPT:
            recent.popitem(last=False)
    return costs


#: Calibrated cost tables kept per graph (least recently used dropped first).
CALIBRATED_KEPT = 4


class _RecentTables(OrderedDict):  # type: ignore[type-arg]
    """A graph's calibrated cost tables, most recently used last.  Not pickled with the graph
    (it unpickles as ``None``): the tables are O(V) to recompute, and the calibrations in the
    keys would make the pickle as large again."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (unpickled_as_none, ())


def unpickled_as_none() -> None:
    """What a memo that is not pickled with its graph unpickles as (its ``__reduce__``)."""
    return None


def critical_path_us(graph: Graph, device: str | DeviceSpec,
                     calibration: Mapping[str, float] | None = None, *,
                     precision: str = "auto") -> float:
    """Longest path of stand-alone op durations over the graph as it runs (its edges, and its
    declared side effects in program order, :func:`workbench.values.state.state_order`, which
    every policy keeps): no schedule can finish sooner.  O(V + E + side-effect pairs)."""
    costs = graph_costs(graph, device, calibration, precision=precision)
    after: dict[int, list[int]] = {}
    for a, b, _ in state_order(graph):
        after.setdefault(graph.index(b), []).append(graph.index(a))
    return _longest_path(graph, costs, after or None)


def work_bound_us(graph: Graph, device: str | DeviceSpec,
                  calibration: Mapping[str, float] | None = None, *,
                  precision: str = "auto") -> float:
    """Total work over device capacity: max(sum of compute_us, sum of memory_us) per device."""
    costs = graph_costs(graph, device, calibration, precision=precision)
    per_device: dict[str, list[float]] = {}
    for op, c in zip(graph.ops, costs, strict=True):
        acc = per_device.setdefault(pool_of(op), [0.0, 0.0])
        acc[0] += c.compute_us
        acc[1] += c.memory_us
    return max((max(v) for v in per_device.values()), default=0.0)


def lower_bound_us(graph: Graph, device: str | DeviceSpec,
                   calibration: Mapping[str, float] | None = None, *,
                   precision: str = "auto") -> dict[str, float]:
    """The makespan lower bounds: critical path, work over capacity, and their max."""
    cp = critical_path_us(graph, device, calibration, precision=precision)
    work = work_bound_us(graph, device, calibration, precision=precision)
    return {"critical_path_us": cp, "work_us": work, "lower_bound_us": max(cp, work)}
