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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from workbench.errors import OptionError
from workbench.graph import Graph, Op
from workbench.registry import Registry


@dataclass(frozen=True)
class DeviceSpec:
    """A GPU as the cost model sees it.  Units are in the names."""

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

    @property
    def slots(self) -> int:
        return self.sm_count * self.blocks_per_sm


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


def op_cost(op: Op, spec: DeviceSpec, calibration: Mapping[str, float] | None = None) -> OpCost:
    """The cost of ``op`` on ``spec`` (see the module docstring for the model)."""
    f = occupancy(op.thread_blocks, spec)
    g = min(1.0, spec.bandwidth_per_sm_factor * f)
    fixed = None
    if calibration is not None and op.id in calibration:
        fixed = calibration[op.id]
    elif op.duration_us is not None:
        fixed = op.duration_us
    if fixed is not None:
        work = max(0.0, fixed - spec.kernel_latency_us)
        return OpCost(compute_us=work * f, memory_us=0.0, sm_cap=f, bw_cap=g,
                      latency_us=min(fixed, spec.kernel_latency_us))
    compute = op.flops / (spec.peak_tflops * 1e6 * spec.compute_efficiency)
    memory = (op.bytes_read + op.bytes_written) / (spec.bandwidth_gbps * 1e3
                                                    * spec.bandwidth_efficiency)
    return OpCost(compute_us=compute, memory_us=memory, sm_cap=f, bw_cap=g,
                  latency_us=spec.kernel_latency_us)


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
    for op, c in zip(graph.ops, costs):
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
