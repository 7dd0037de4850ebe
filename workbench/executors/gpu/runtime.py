"""The CuPy side of a launch plan: :class:`Runtime` (allocations, uploaded inputs, compiled
kernels, streams, events, the issue program), the eager and graph timing loops, and per-op
stand-alone timing (part of the CuPy executor, :mod:`workbench.executors.gpu.executor`, whose
docstring
describes a run).  CuPy is imported inside functions only (STYLE.md R11).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from workbench.errors import OptionError
from workbench.executors.gpu.launch_plan import (
    ORIGIN,
    Launch,
    LaunchPlan,
    OpBegin,
    OpEnd,
    Ptr,
    Record,
    Wait,
)
from workbench.executors.gpu.sources import get_function, signature
from workbench.executors.reference import draw_inputs, shape_or_flat

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


def _time_launches(rt: Runtime, launch: Callable[[], Any], repeats: int
                   ) -> tuple[list[float], list[float]]:
    """``repeats`` runs of ``launch()`` between two events on the origin stream: device spans
    (µs, CUDA events) and host issue times (µs, wall clock)."""
    cp = rt.cp
    origin = rt.streams[ORIGIN]
    spans, host = [], []
    for _ in range(repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(origin)
        t0 = time.perf_counter()
        launch()
        host.append((time.perf_counter() - t0) * 1e6)
        end.record(origin)
        end.synchronize()
        spans.append(cp.cuda.get_elapsed_time(start, end) * 1000.0)
    return spans, host


def time_eager(rt: Runtime, repeats: int) -> tuple[list[float], list[float]]:
    """Eager mode: the host issues every launch of the schedule each run."""
    return _time_launches(rt, rt.issue, repeats)


def time_graph(rt: Runtime, graph: Any, repeats: int) -> tuple[list[float], list[float]]:
    """Graph mode: one launch of the captured CUDA graph each run."""
    return _time_launches(rt, lambda: graph.launch(rt.streams[ORIGIN]), repeats)


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


__all__ = ["Runtime", "measure_alone_us", "time_eager", "time_graph"]
