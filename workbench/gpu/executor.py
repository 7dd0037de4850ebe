"""CuPy multi-stream executor: run a Schedule on a CUDA GPU and return a measured Trace.

CuPy is imported inside functions only (STYLE.md R11); everything up to the launches comes from
the pure-Python :class:`~workbench.gpu.launch_plan.LaunchPlan`.  Without CuPy or a GPU,
:func:`run` raises a one-line :class:`~workbench.errors.DeviceUnavailable`.

What a run does (ecosystem notes §1):

* **Setup.**  One CuPy allocation per memory space of the plan (the planned ``arena`` at the
  memory plan's offsets, ``persistent`` inputs and parameters after it, per-stream ``scratch``,
  the device pointer ``tables``), made before anything is issued or captured; inputs drawn at
  random on the host (:func:`~workbench.gpu.reference.draw_inputs`, seeded) and uploaded; every
  kernel compiled (NVRTC, ``-std=c++17``) and warmed up.  One *non-blocking* stream per schedule
  stream plus the origin stream; sync events are created with ``disable_timing=True``.
* **Eager** (``mode="eager"``): a Python loop issues the plan's steps in issue order
  (``Stream.use()`` + ``RawKernel(...)``, ``Event.record(stream)``, ``Stream.wait_event``).
  **Graph** (``mode="graph"``): the same loop runs once under stream capture on the origin stream
  (fork/join events make every stream part of the capture; :mod:`workbench.gpu.graph_capture`),
  and the CUDA graph is replayed.  Only the project's own kernels run, so capture never meets
  cuBLAS.
* **Timing.**  The makespan comes from separate runs with only two timing events on the origin
  stream around the whole graph (warm-up, then ``repeats`` runs: median and spread).  The timeline
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
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from workbench.costs import DeviceSpec, get_device, op_cost
from workbench.errors import DeviceUnavailable, OptionError, ScheduleError
from workbench.gpu import is_available, unavailable_reason
from workbench.gpu.calls import DeviceLimits
from workbench.gpu.launch_plan import (
    ORIGIN,
    Launch,
    LaunchPlan,
    OpBegin,
    OpEnd,
    Ptr,
    Record,
    Wait,
    build_launch_plan,
)
from workbench.gpu.sources import get_function, signature
from workbench.memory.plan import MemoryPlan
from workbench.reference import draw_inputs, shape_or_flat
from workbench.schedule import Schedule
from workbench.trace import Trace

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


# ----------------------------------------------------------------------------------- runtime
_LAUNCH, _RECORD, _WAIT, _BEGIN, _END = range(5)


class Runtime:
    """A launch plan made real: allocations, uploaded inputs, compiled kernels, streams, events,
    and the issue program (one tuple per step).  Keep it alive as long as any captured graph."""

    def __init__(self, plan: LaunchPlan, *, seed: int = 0,
                 inputs: Mapping[str, Any] | None = None, init: str = "scaled") -> None:
        import cupy as cp

        self.cp = cp
        self.plan = plan
        graph = plan.schedule.graph
        self.spaces = {name: cp.empty(max(4, int(n)), dtype=cp.uint8)
                       for name, n in plan.spaces.items()}
        self.base = {name: int(a.data.ptr) for name, a in self.spaces.items()}
        entries = np.array([self.address(p) for p in plan.tables] or [0], dtype=np.uint64)
        self.table = cp.asarray(entries)
        self.base["tables"] = int(self.table.data.ptr)
        self.ops = list(plan.schedule.issue_order)
        self.op_index = {op: k for k, op in enumerate(self.ops)}
        self.stamps = cp.zeros(2 * len(self.ops) + 2, dtype=cp.uint64)
        for t, value in draw_inputs(graph, seed, inputs, init=init).items():
            target = self.view(t)
            flat = value.reshape(-1)[: target.size]
            if flat.size:
                target[: flat.size] = cp.asarray(flat)
        self.streams = {s: cp.cuda.Stream(non_blocking=True) for s in (ORIGIN, *plan.streams)}
        self.events = [cp.cuda.Event(disable_timing=True) for _ in plan.events]
        self.begin_ev = [cp.cuda.Event() for _ in self.ops]
        self.end_ev = [cp.cuda.Event() for _ in self.ops]
        self.epoch, self.done = cp.cuda.Event(), cp.cuda.Event()
        self.stamp_fn = get_function("spin", "stamp")
        self.program = [self._compile(step) for step in plan.steps]
        self.n_launches = plan.n_launches
        cp.cuda.Device().synchronize()

    # -- memory
    def address(self, ptr: Ptr) -> int:
        if ptr.space == "null":
            return 0
        return self.base[ptr.space] + ptr.offset

    def view(self, tensor: str) -> Any:
        """A float32 CuPy view of a contiguous tensor's bytes."""
        place = self.plan.placements[tensor]
        if not place.contiguous:
            raise OptionError(f"tensor {tensor!r} is a strided concat slice; read the concat")
        n = place.nbytes // 4
        raw = self.spaces[place.space][place.offset:place.offset + 4 * n]
        return raw.view(self.cp.float32)

    def read(self, tensors: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Host copies of ``tensors`` (default: the graph outputs), in their shapes."""
        shape_of = shape_or_flat(self.plan.schedule.graph)
        wanted = self.plan.outputs if tensors is None else tensors
        self.cp.cuda.Device().synchronize()
        return {t: self.cp.asnumpy(self.view(t)).reshape(shape_of(t)) for t in wanted}

    def poison(self) -> None:
        """Fill the activation memory (planned arena, scratch, pool allocations) with 0xFF bytes
        (NaN as float32), so that reading anything this run did not write shows."""
        for name, arr in self.spaces.items():
            if name == "arena":
                arr[: self.plan.arena_bytes].fill(255)
            elif name != "persistent":
                arr.fill(255)
        self.cp.cuda.Device().synchronize()

    # -- issue
    def _compile(self, step: Any) -> tuple[Any, ...]:
        np_types = {"ptr": np.uint64, "i64": np.int64, "i32": np.int32, "u64": np.uint64,
                    "f32": np.float32}
        if isinstance(step, Launch):
            call = step.call
            fn = get_function(call.module, call.kernel, call.source)
            params = signature(call.module, call.kernel, call.source)
            args = tuple(np_types[p.type](self.address(v) if p.type == "ptr" else v)
                         for p, v in zip(params, step.args, strict=True))
            return (_LAUNCH, self.streams[step.stream], fn, call.grid, call.block, args,
                    call.shared_mem)
        if isinstance(step, Record):
            return (_RECORD, self.streams[step.stream], self.events[step.event])
        if isinstance(step, Wait):
            return (_WAIT, self.streams[step.stream], self.events[step.event])
        if isinstance(step, OpBegin):
            return (_BEGIN, self.streams[step.stream], self.op_index[step.op])
        if isinstance(step, OpEnd):
            return (_END, self.streams[step.stream], self.op_index[step.op])
        raise OptionError(f"unknown plan step {step!r}")

    def issue(self, *, marks: str | None = None, issue_times: list[float] | None = None) -> None:
        """Issue the whole plan once from the host.  ``marks``: ``None`` (no per-op marks),
        ``"events"`` (timing events at each op's begin/end) or ``"stamps"`` (stamp kernels, the
        only per-op marks that survive graph capture); the epoch/done marks go on the origin."""
        cp = self.cp
        origin = self.streams[ORIGIN]
        stamp, slots = self.stamp_fn, np.uint64(int(self.stamps.data.ptr))
        last = 2 * len(self.ops)
        if marks == "events":
            self.epoch.record(origin)
        elif marks == "stamps":
            origin.use()
            stamp((1,), (1,), (slots, np.int32(last)))
        t0 = time.perf_counter()
        try:
            for item in self.program:
                kind = item[0]
                if kind == _LAUNCH:
                    item[1].use()
                    item[2](item[3], item[4], item[5], shared_mem=item[6])
                elif kind == _RECORD:
                    item[2].record(item[1])
                elif kind == _WAIT:
                    item[1].wait_event(item[2])
                elif marks is None:
                    continue
                elif kind == _BEGIN:
                    if issue_times is not None:
                        issue_times[item[2]] = (time.perf_counter() - t0) * 1e6
                    if marks == "events":
                        self.begin_ev[item[2]].record(item[1])
                    else:
                        item[1].use()
                        stamp((1,), (1,), (slots, np.int32(2 * item[2])))
                elif marks == "events":
                    self.end_ev[item[2]].record(item[1])
                else:
                    item[1].use()
                    stamp((1,), (1,), (slots, np.int32(2 * item[2] + 1)))
            if marks == "events":
                self.done.record(origin)
            elif marks == "stamps":
                origin.use()
                stamp((1,), (1,), (slots, np.int32(last + 1)))
        finally:
            cp.cuda.Stream.null.use()

    def timeline_from_events(self) -> tuple[list[float], list[float]]:
        self.done.synchronize()
        cp = self.cp
        start = [cp.cuda.get_elapsed_time(self.epoch, e) * 1000.0 for e in self.begin_ev]
        end = [cp.cuda.get_elapsed_time(self.epoch, e) * 1000.0 for e in self.end_ev]
        return start, end

    def timeline_from_stamps(self) -> tuple[list[float], list[float]]:
        values = self.cp.asnumpy(self.stamps).astype(np.int64)
        epoch = values[-2]
        rel = (values - epoch) / 1000.0
        return [float(rel[2 * k]) for k in range(len(self.ops))], [
            float(rel[2 * k + 1]) for k in range(len(self.ops))]


# ----------------------------------------------------------------------------------- runs
def _time_eager(rt: Runtime, repeats: int) -> tuple[list[float], list[float]]:
    cp = rt.cp
    origin = rt.streams[ORIGIN]
    spans, host = [], []
    for _ in range(repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(origin)
        t0 = time.perf_counter()
        rt.issue()
        host.append((time.perf_counter() - t0) * 1e6)
        end.record(origin)
        end.synchronize()
        spans.append(cp.cuda.get_elapsed_time(start, end) * 1000.0)
    return spans, host


def _time_graph(rt: Runtime, graph: Any, repeats: int) -> tuple[list[float], list[float]]:
    cp = rt.cp
    origin = rt.streams[ORIGIN]
    spans, host = [], []
    for _ in range(repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(origin)
        t0 = time.perf_counter()
        graph.launch(origin)
        host.append((time.perf_counter() - t0) * 1e6)
        end.record(origin)
        end.synchronize()
        spans.append(cp.cuda.get_elapsed_time(start, end) * 1000.0)
    return spans, host


def _spread(values: Sequence[float]) -> float:
    """Interquartile range (p75 - p25)."""
    if len(values) < 2:
        return 0.0
    q = np.percentile(np.asarray(values), [25, 75])
    return float(q[1] - q[0])


def run(schedule: Schedule, *, mode: str = "eager", memory: str | MemoryPlan = "somas",
        repeats: int = 20, warmup: int = 3, seed: int = 0, device: str | DeviceSpec = "h100",
        verify: bool = False, measure_alone: bool = False, alone_repeats: int = 10,
        concat_in_place: bool | None = None, inputs: Mapping[str, Any] | None = None,
        return_outputs: bool = False, limits: DeviceLimits | None = None,
        **unknown: Any) -> Trace:
    """Execute ``schedule`` on the GPU and return the measured :class:`~workbench.trace.Trace`.

    ``mode``: ``"eager"`` or ``"graph"``; ``memory``: planner name, MemoryPlan or ``"pool"``;
    ``repeats``/``warmup``: whole-graph timing runs; ``device``: the cost-model spec used for
    spin ops without a pinned duration and for the ``compute_us``/``memory_us`` columns;
    ``verify``: also run the ``serial`` schedule and require bitwise-equal outputs (raises
    ScheduleError otherwise); ``measure_alone``: time every op alone (fills ``alone_us``, see
    :func:`workbench.costs.calibrate`); ``return_outputs``: keep the outputs in
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

    from workbench.gpu import graph_capture

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
        spans, host = _time_eager(rt, repeats)
        timeline = "events"
    else:
        graph = graph_capture.capture(rt)
        stamped = graph_capture.capture(rt, marks="stamps")
        for _ in range(max(1, warmup)):
            graph.launch(rt.streams[ORIGIN])
        stamped.launch(rt.streams[ORIGIN])
        rt.streams[ORIGIN].synchronize()
        start, end = rt.timeline_from_stamps()
        spans, host = _time_graph(rt, graph, repeats)
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
        "makespan_median_us": float(statistics.median(spans)),
        "makespan_spread_us": _spread(spans), "makespan_min_us": float(min(spans)),
        "makespan_max_us": float(max(spans)), "makespans_us": [float(s) for s in spans],
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
    costs = [op_cost(op, spec) for op in ops]
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


def measure_alone_us(rt: Runtime, repeats: int = 10) -> dict[str, float]:
    """Median device time (µs) of each op's launches run alone on one stream, between two timing
    events (after the graph ran once, so inputs hold real data).  Ops without kernels: 0."""
    cp = rt.cp
    stream = rt.streams[ORIGIN]
    by_op: dict[str, list[tuple[Any, ...]]] = {}
    for item, step in zip(rt.program, rt.plan.steps, strict=True):
        if isinstance(step, Launch):
            by_op.setdefault(step.op, []).append(item)
    out = {}
    try:
        stream.use()
        for op in rt.ops:
            items = by_op.get(op, [])
            if not items:
                out[op] = 0.0
                continue
            times = []
            for k in range(repeats + 2):
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record(stream)
                for item in items:
                    item[2](item[3], item[4], item[5], shared_mem=item[6])
                end.record(stream)
                end.synchronize()
                if k >= 2:
                    times.append(cp.cuda.get_elapsed_time(start, end) * 1000.0)
            out[op] = float(statistics.median(times))
    finally:
        cp.cuda.Stream.null.use()
    return out


def run_outputs(schedule: Schedule, *, mode: str = "eager", memory: str | MemoryPlan = "somas",
                seed: int = 0, inputs: Mapping[str, Any] | None = None,
                limits: DeviceLimits | None = None, device: str | DeviceSpec = "h100",
                concat_in_place: bool | None = None, plan: LaunchPlan | None = None
                ) -> dict[str, np.ndarray]:
    """Run ``schedule`` once on a poisoned (NaN) arena and return the graph outputs."""
    require_gpu()
    from workbench.gpu import graph_capture

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
            raise ScheduleError(f"{what}: output {t!r} is missing")
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
