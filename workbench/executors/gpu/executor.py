"""CuPy multi-stream executor: run a Schedule on a CUDA GPU and return a measured Trace.

CuPy is imported inside functions only (STYLE.md R11); everything up to the launches comes from
the pure-Python :class:`~workbench.executors.gpu.launch_plan.LaunchPlan`.  Without CuPy or a GPU,
:func:`run` raises a one-line :class:`~workbench.errors.DeviceUnavailable`.

What a run does (ecosystem notes §1):

* **Setup.**  One CuPy allocation per memory space of the plan (the planned ``arena`` at the
  memory plan's offsets, ``persistent`` inputs and parameters after it, per-stream ``scratch``,
  the device pointer ``tables``), made before anything is issued or captured; inputs drawn at
  random on the host (:func:`~workbench.executors.gpu.reference.draw_inputs`, seeded) and uploaded;
  every
  kernel compiled (NVRTC, ``-std=c++17``) and warmed up.  One *non-blocking* stream per schedule
  stream plus the origin stream; sync events are created with ``disable_timing=True``.
* **Eager** (``mode="eager"``): a Python loop issues the plan's steps in issue order
  (``Stream.use()`` + ``RawKernel(...)``, ``Event.record(stream)``, ``Stream.wait_event``).
  **Graph** (``mode="graph"``): the same loop runs once under stream capture on the origin stream
  (fork/join events make every stream part of the capture;
  :mod:`workbench.executors.gpu.graph_capture`),
  and the CUDA graph is replayed.  Only the project's own kernels run, so capture never meets
  cuBLAS.
* **Timing.**  The makespan comes from separate runs with only two timing events on the origin
  stream around the whole graph (warm-up, then ``repeats`` runs: median, quartiles
  ``makespan_q1_us`` / ``makespan_q3_us`` and spread).  The timeline
  comes from one more run with per-op start/end marks: CUDA events in eager mode; in graph mode
  (where CuPy cannot time events inside a graph) 1-thread ``stamp`` kernels that write
  ``%globaltimer`` on the op's stream.  ``trace.makespan`` is that per-op run's end;
  ``meta["makespan_median_us"]`` the whole-graph median.
* **Memory.**  ``meta["peak_memory_bytes"]`` is what CuPy's pool held for the run (every space
  is allocated up front, so that is the peak, upload temporaries included);
  ``meta["live_bytes"]`` the arrays alive during the run (the plan's spaces, tables, stamps);
  ``meta["device_used_bytes"]`` the drop in free device memory (includes modules and graphs).

Simplifications: every op runs on the GPU (ops of other devices spin for their duration); inputs
stay on the device (no host copies are timed); one device.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from workbench.errors import DeviceUnavailable, OptionError, ScheduleError
from workbench.executors.gpu import is_available, unavailable_reason
from workbench.executors.gpu.calls import DeviceLimits
from workbench.executors.gpu.launch_plan import (
    ORIGIN,
    LaunchPlan,
    build_launch_plan,
)
from workbench.executors.gpu.runtime import (
    Runtime,
    measure_alone_us,
    time_eager,
    time_graph,
)
from workbench.executors.gpu.sources import get_function
from workbench.memory.plan import MemoryPlan
from workbench.simulator.cost_model.costs import DeviceSpec, get_device, op_cost
from workbench.values.schedule import Schedule
from workbench.values.trace import Trace, makespan_stats

MODES = ("eager", "graph")


def require_gpu() -> None:
    """Raise the one-line DeviceUnavailable unless CuPy and a CUDA device are usable."""
    if not is_available():
        raise DeviceUnavailable(f"executor 'cupy' needs CuPy and a CUDA GPU: {unavailable_reason()}"
                                f"; use executor='simulator'")


# ----------------------------------------------------------------------------------- device
@lru_cache(maxsize=1)
def device_info() -> dict[str, Any]:
    """Name, attributes and library versions of the current CUDA device (cached)."""
    require_gpu()
    import cupy as cp

    dev = cp.cuda.Device()
    attrs = dev.attributes
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return {
        "name": name,
        "compute_capability": dev.compute_capability,
        "sm_count": int(attrs["MultiProcessorCount"]),
        "max_threads_per_sm": int(attrs["MaxThreadsPerMultiProcessor"]),
        "clock_khz": int(attrs.get("ClockRate", 0)),
        "memory_bytes": int(cp.cuda.runtime.memGetInfo()[1]),
        "versions": {"cupy": cp.__version__,
                     "cuda_runtime": str(cp.cuda.runtime.runtimeGetVersion()),
                     "cuda_driver": str(cp.cuda.runtime.driverGetVersion())},
    }


_SPIN_OVERHEAD: dict[str, float] = {}


def device_limits(spec: DeviceSpec | None = None, *, spin_overhead_us: float | None = None
                  ) -> DeviceLimits:
    """:class:`DeviceLimits` of the real device; ``blocks_per_sm`` from the cost model's spec,
    ``spin_overhead_us`` measured once (:func:`measure_spin_overhead`) unless given."""
    info = device_info()
    spec = spec or get_device("h100")
    limits = DeviceLimits(name=info["name"], sm_count=info["sm_count"],
                          max_threads_per_sm=info["max_threads_per_sm"],
                          blocks_per_sm=spec.blocks_per_sm)
    if spin_overhead_us is None:
        spin_overhead_us = measure_spin_overhead(limits)
    return DeviceLimits(limits.name, limits.sm_count, limits.max_threads_per_sm,
                        limits.blocks_per_sm, spin_overhead_us)


def measure_spin_overhead(limits: DeviceLimits, *, repeats: int = 50) -> float:
    """Median device time (µs) of a zero-length spin launch alone: the fixed cost subtracted
    from every spin op's duration (cached per device)."""
    key = f"{limits.name}/{limits.spin_block}"
    if key in _SPIN_OVERHEAD:
        return _SPIN_OVERHEAD[key]
    import cupy as cp

    fn = get_function("spin", "spin")
    out = cp.empty(1, dtype=cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    args = (np.uint64(0), np.int32(0), np.uint64(out.data.ptr), np.int64(1), np.int64(0),
            np.int64(1), np.int64(1))
    times = []
    with stream:
        for k in range(repeats + 5):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(stream)
            fn((1,), (limits.spin_block,), args)
            end.record(stream)
            end.synchronize()
            if k >= 5:
                times.append(cp.cuda.get_elapsed_time(start, end) * 1000.0)
    _SPIN_OVERHEAD[key] = float(statistics.median(times))
    return _SPIN_OVERHEAD[key]


def run(schedule: Schedule, *, mode: str = "eager", memory: str | MemoryPlan = "somas",
        repeats: int = 20, warmup: int = 3, seed: int = 0, device: str | DeviceSpec = "h100",
        verify: bool = False, measure_alone: bool = False, alone_repeats: int = 10,
        concat_in_place: bool | None = None, inputs: Mapping[str, Any] | None = None,
        return_outputs: bool = False, limits: DeviceLimits | None = None,
        **unknown: Any) -> Trace:
    """Execute ``schedule`` on the GPU and return the measured
    :class:`~workbench.values.trace.Trace`.

    ``mode``: ``"eager"`` or ``"graph"``; ``memory``: planner name, MemoryPlan or ``"pool"``;
    ``repeats``/``warmup``: whole-graph timing runs; ``device``: the cost-model spec used for
    spin ops without a pinned duration and for the ``compute_us``/``memory_us`` columns;
    ``verify``: also run the ``serial`` schedule and require bitwise-equal outputs (raises
    ScheduleError otherwise); ``measure_alone``: time every op alone (fills ``alone_us``, see
    :func:`workbench.simulator.cost_model.costs.calibrate`); ``return_outputs``: keep the outputs in
    ``meta["outputs"]``.  Without CuPy or a GPU: a one-line DeviceUnavailable.
    """
    require_gpu()
    if unknown:
        raise OptionError(f"executor 'cupy' has no option(s) {sorted(unknown)} (options: mode, "
                          f"memory, repeats, warmup, seed, device, verify, measure_alone, ...)")
    if mode not in MODES:
        raise OptionError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
    if repeats < 1 or warmup < 0:
        raise OptionError(f"repeats must be >= 1 and warmup >= 0, got {repeats}, {warmup}")
    import cupy as cp

    from workbench.executors.gpu import graph_capture

    spec = get_device(device)
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    free_before = cp.cuda.runtime.memGetInfo()[0]
    limits = limits or device_limits(spec)
    plan = build_launch_plan(schedule, memory=memory, device=spec, limits=limits,
                             concat_in_place=concat_in_place)
    rt = Runtime(plan, seed=seed, inputs=inputs)
    for _ in range(max(1, warmup)):
        rt.issue()
    cp.cuda.Device().synchronize()
    graph = stamped = None
    issue_times = [float("nan")] * len(rt.ops)
    if mode == "eager":
        rt.issue(marks="events", issue_times=issue_times)
        start, end = rt.timeline_from_events()
        spans, host = time_eager(rt, repeats)
        timeline = "events"
    else:
        graph = graph_capture.capture(rt)
        stamped = graph_capture.capture(rt, marks="stamps")
        for _ in range(max(1, warmup)):
            graph.launch(rt.streams[ORIGIN])
        stamped.launch(rt.streams[ORIGIN])
        rt.streams[ORIGIN].synchronize()
        start, end = rt.timeline_from_stamps()
        spans, host = time_graph(rt, graph, repeats)
        issue_times = [0.0] * len(rt.ops)
        timeline = "stamps"
    peak = int(pool.total_bytes())
    live = int(pool.used_bytes())
    device_used = int(free_before - cp.cuda.runtime.memGetInfo()[0])
    outputs = None
    if verify or return_outputs:
        rt.poison()
        if graph is not None:
            graph.launch(rt.streams[ORIGIN])
            rt.streams[ORIGIN].synchronize()
        else:
            rt.issue()
        outputs = rt.read()
    alone = measure_alone_us(rt, alone_repeats) if measure_alone else None
    meta = {
        "executor": "cupy", "mode": mode, "repeats": repeats, "warmup": warmup, "seed": seed,
        **makespan_stats(spans),
        "per_op_event_makespan_us": float(max(end, default=0.0)), "timeline": timeline,
        "host_us_median": float(statistics.median(host)),
        "host_us_per_launch": float(statistics.median(host)) / max(1, rt.n_launches),
        "n_launches": rt.n_launches, "peak_memory_bytes": peak, "live_bytes": live,
        "device_used_bytes": device_used, "planned_bytes": plan.device_bytes,
        "arena_bytes": plan.arena_bytes, "memory": plan.notes.get("memory"),
        "in_place_concat_inputs": len(plan.notes.get("in_place", {})),
        "device_info": device_info(), "simulated_device": spec.name,
        "spin_overhead_us": limits.spin_overhead_us, "plan": plan.summary(),
    }
    if verify:
        reference = serial_outputs(schedule, memory=memory if isinstance(memory, str) else "somas",
                                   seed=seed, inputs=inputs, limits=limits, device=spec)
        compare_outputs(outputs or {}, reference, what=f"policy {schedule.policy!r} ({mode})")
        meta["verified"] = True
    if return_outputs:
        meta["outputs"] = outputs
    df = _frame(schedule, spec, start, end, issue_times, alone)
    return Trace(df, graph=schedule.graph, policy=schedule.policy, device=device_info()["name"],
                 executor="cupy", mode=mode, schedule=schedule, meta=meta)


def _frame(schedule: Schedule, spec: DeviceSpec, start: Sequence[float], end: Sequence[float],
           issue: Sequence[float], alone: Mapping[str, float] | None) -> pd.DataFrame:
    graph = schedule.graph
    order = list(schedule.issue_order)
    ops = [graph.op(o) for o in order]
    costs = [op_cost(op, spec, precision="fp32") for op in ops]  # the kernels are FP32
    return pd.DataFrame({
        "op": order, "kind": [op.kind for op in ops],
        "stream": [schedule.stream_of(o) for o in order], "device": ["gpu"] * len(order),
        "start_us": list(start), "end_us": list(end),
        "duration_us": [e - s for s, e in zip(start, end, strict=True)],
        "issue_us": list(issue),
        "alone_us": [alone.get(o, math.nan) if alone else math.nan for o in order],
        "compute_us": [c.compute_us for c in costs], "memory_us": [c.memory_us for c in costs],
        "flops": [op.flops for op in ops],
        "bytes": [op.bytes_read + op.bytes_written for op in ops],
        "phase": [schedule.phase[o] for o in order],
    })


def run_outputs(schedule: Schedule, *, mode: str = "eager", memory: str | MemoryPlan = "somas",
                seed: int = 0, inputs: Mapping[str, Any] | None = None,
                limits: DeviceLimits | None = None, device: str | DeviceSpec = "h100",
                concat_in_place: bool | None = None, plan: LaunchPlan | None = None
                ) -> dict[str, np.ndarray]:
    """Run ``schedule`` once on a poisoned (NaN) arena and return the graph outputs."""
    require_gpu()
    from workbench.executors.gpu import graph_capture

    spec = get_device(device)
    limits = limits or device_limits(spec)
    plan = plan or build_launch_plan(schedule, memory=memory, device=spec, limits=limits,
                                     concat_in_place=concat_in_place)
    rt = Runtime(plan, seed=seed, inputs=inputs)
    rt.poison()
    if mode == "graph":
        graph = graph_capture.capture(rt)
        graph.launch(rt.streams[ORIGIN])
        rt.streams[ORIGIN].synchronize()
    elif mode == "eager":
        rt.issue()
    else:
        raise OptionError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
    return rt.read()


def serial_outputs(schedule: Schedule, **options: Any) -> dict[str, np.ndarray]:
    """Outputs of the ``serial`` schedule of the same graph (the verification baseline)."""
    from workbench.schedulers import schedule as make_schedule

    return run_outputs(make_schedule(schedule.graph, "serial"), **options)


def compare_outputs(got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray], *,
                    what: str = "run") -> None:
    """Require bitwise-equal float32 outputs (NaN patterns included); one-line ScheduleError
    naming the first differing tensor otherwise."""
    for t, expected in want.items():
        actual = got.get(t)
        if actual is None:
            raise ScheduleError(f"{what}: output {t!r} is missing (the run returned "
                                f"{sorted(got)}; compare graph outputs only)")
        a = np.ascontiguousarray(actual, dtype=np.float32).view(np.uint32)
        b = np.ascontiguousarray(expected, dtype=np.float32).view(np.uint32)
        if a.shape != b.shape or not np.array_equal(a, b):
            diff = np.nanmax(np.abs(actual.astype(np.float64) - expected.astype(np.float64))) \
                if a.shape == b.shape else float("nan")
            raise ScheduleError(f"{what}: output {t!r} differs from the serial run "
                                f"(max |diff| {diff:.3g}): a missing sync or a memory overlap")


__all__ = [
    "MODES", "Runtime", "compare_outputs", "device_info", "device_limits", "measure_alone_us",
    "measure_spin_overhead", "require_gpu", "run", "run_outputs", "serial_outputs",
]
