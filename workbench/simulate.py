"""Discrete-event simulator: run a Schedule on a modelled GPU and return a Trace.

What it models (deterministically):

* **Kernels.**  Each op runs the kernels of its :class:`~workbench.costs.OpCost` back to back on
  its stream: per kernel a latency (``kernel_latency_us``: no device resources) and then its work
  phases (full waves, tail wave; :mod:`workbench.kernel_model`).  A later kernel of an op cannot
  start before the host has issued it.
* **Host issue.**  ``mode="eager"``: one host thread issues ops in the schedule's issue order,
  paying ``launch_overhead_us`` per kernel and ``event_overhead_us`` per event record/wait; a
  kernel cannot start before it is issued, so host-bound graphs look host-bound.
  ``mode="graph"`` (sink execution, a CUDA graph): everything is issued at once after one
  ``graph_launch_us``; no per-op host cost at all (MindSpore O2).
* **Barriers** (:attr:`~workbench.schedule.Schedule.barrier_kind`).  ``"join"``: every op issued
  after the barrier waits for every op issued before it; the host pays an event record and wait
  per stream and goes on issuing.  ``"device_sync"`` (IOS's runtime): the host stops at the barrier
  until the device is idle, then pays ``device_sync_us`` before it issues the next op, so the
  device idles for the host's round trip at every stage boundary.  In graph mode both are joins.
* **Host pipeline** (seed 004, MindSpore's multi-level pipeline; eager mode only).
  ``host_pipeline="serial"`` pays ``infer + resize + launch`` per op on one thread;
  ``"pipelined"`` runs the three stages on three threads (a 3-stage flow shop: op ``i`` leaves
  stage ``k`` at ``C[i][k] = max(C[i-1][k], C[i][k-1]) + stage_k(i)``); event records/waits and
  barrier joins are paid on the Launch thread.
* **Control flow** (seed 000, NNC's ``while`` and ``case..of``; :mod:`workbench.control`).  A
  schedule whose graph has control-flow ops runs one flat schedule of every executed op instance
  (:func:`workbench.control.expand.expand`; ``iterations=`` and ``branch=`` are inputs of the run:
  numbers, names, rules of the iteration index, or mappings per op).  Before each iteration and
  branch the host reads a value from the device (the flag's op ends, a ``d2h`` copy, then
  ``device_sync_us``); ``control="coroutine"`` (NNC) keeps issuing independent ops meanwhile,
  ``"blocking"`` stops the host (:mod:`workbench.control.host`).  The trace has one row per op
  instance (``loop/body/matmul#3``) with columns ``iteration`` (-1 outside loops), ``parent`` (the
  control-flow op instance) and ``region`` (``cond``, ``body``, a branch); ``trace.graph`` and
  ``trace.schedule`` are the flat ones and ``trace.meta["control"]`` holds the source schedule,
  the trip counts, the branches and one row per host decision.  In graph mode the decisions are
  device-side conditional nodes (CUDA 12.4): no host round trip.
* **Non-GPU devices.**  Ops run in the resource pool :func:`~workbench.costs.pool_of` names; CPU
  ops cost the host ``host.dispatch_us``; a ``python`` op runs on the host thread: in eager mode
  the host waits for it to finish before issuing the next op.  Exclusive pools (each copy engine,
  the interpreter) run one op at a time, first come first served.
* **Streams, syncs.**  A stream runs its ops in order; an op waits for the ops its syncs name.
  Data dependencies are *not* enforced by the simulator: only what the schedule says is, so an
  invalid schedule shows up as a dependency violation in the trace.
* **Sharing a device.**  At most ``max_concurrent_kernels`` kernels are resident per pool (the
  hardware limit); the rest wait.  Block slots go to kernels first come first served (the block
  scheduler dispatches an earlier kernel's blocks first): a kernel gets ``min(its slot share,
  what is left)`` and runs at that fraction of its stand-alone speed at most.  Within that, peak
  FLOP/s and DRAM bandwidth are shared max-min fairly.  A co-runner slows the others
  (``interference``: a kernel's speed is divided by ``1 + interference · slots held by the
  others``), so concurrency gains come from filling slots that small grids and tail waves leave
  idle, and a full-device kernel neither waits for nor is slowed by kernels queued behind it.

Times are floats in µs; completion is an explicit event (no tolerance against absolute times), so
runs of 1e9 µs advance exactly.  ``Trace.meta`` records ``host_pipeline``, ``host_end_us`` and
``host_bound_fraction`` (share of ops that started the moment they were issued).

Complexity: O(K log K) heap events for K kernel phases, times O(R) work per event for the R
kernels sharing slots at that moment (R ≤ ``max_concurrent_kernels``).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from workbench._checks import did_you_mean
from workbench.costs import (
    DeviceSpec,
    OpCost,
    get_device,
    graph_costs,
    is_exclusive_pool,
    pool_of,
)
from workbench.errors import OptionError, ScheduleError
from workbench.graph import Graph, Op
from workbench.kernel_model import GpuModel, check_precision, model_for
from workbench.schedule import Schedule
from workbench.trace import Trace

MODES = ("eager", "graph")
HOST_PIPELINES = ("serial", "pipelined")
EXPLAIN_LIMIT = 50_000  # ops: above this the trace has no per-op "why" column (page weight)


def simulate(schedule: Schedule, device: str | DeviceSpec = "h100", *, mode: str = "eager",
             calibration: Mapping[str, float] | None = None, host_pipeline: str = "serial",
             precision: str = "auto", model: GpuModel | None = None,
             control: str = "coroutine", iterations: Any = None, branch: Any = None) -> Trace:
    """Simulate ``schedule`` on ``device`` and return the :class:`~workbench.trace.Trace`.

    ``precision``: ``auto`` (default), ``fp32``, ``tf32``, ``fp16`` or ``bf16`` (see
    :mod:`workbench.costs`);
    ``model``: a :class:`~workbench.kernel_model.GpuModel` replacing the fitted parameters;
    ``control``, ``iterations``, ``branch``: how control-flow ops run (module docstring; ignored
    by graphs without them).

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> t = simulate(wb.schedule(g, "serial"), "h100")
    >>> t.makespan > 0 and t.respects()
    True
    """
    run = _simulate(schedule, device, mode, calibration, host_pipeline, precision, model,
                    (control, iterations, branch))
    graph = run.graph
    ops, costs = run.ops, run.costs
    n = len(run.order)
    df = pd.DataFrame({
        "op": run.order,
        "kind": [op.kind for op in ops],
        "stream": run.stream_of,
        "device": [op.device for op in ops],
        "start_us": run.start,
        "end_us": run.end,
        "duration_us": [e - s for s, e in zip(run.start, run.end, strict=True)],
        "issue_us": run.issue,
        "alone_us": [c.alone_us for c in costs],
        "compute_us": [c.compute_us for c in costs],
        "memory_us": [c.memory_us for c in costs],
        "flops": [op.flops for op in ops],
        "bytes": [op.bytes_read + op.bytes_written for op in ops],
        "phase": run.phase,
        "kernels": [c.n_kernels for c in costs],
        "bound": [_bound(c) for c in costs],
    })
    if n <= EXPLAIN_LIMIT:
        df["why"] = [c.explain() for c in costs]
    meta: dict[str, Any] = {}
    if run.expansion is not None:
        from workbench.control.trace import control_columns

        meta["control"] = control_columns(df, run, control)
    gated = 0 if mode == "graph" else sum(
        1 for s, i in zip(run.start, run.issue, strict=True) if s <= i + 1e-6 * max(1.0, i))
    meta = {**meta, "executor": "simulator", "host_pipeline": host_pipeline,
            "events": run.events, "sharing_work": run.sharing_work,
            "host_end_us": max(run.issue, default=0.0),
            "host_bound_fraction": gated / n if n else 0.0, "precision": precision,
            "barrier_kind": run.schedule.barrier_kind}
    return Trace(df, graph=graph, policy=schedule.policy, device=run.spec.name, mode=mode,
                 schedule=run.schedule, meta=meta)


def simulate_makespan(schedule: Schedule, device: str | DeviceSpec = "h100", *,
                      mode: str = "eager", calibration: Mapping[str, float] | None = None,
                      host_pipeline: str = "serial", precision: str = "auto",
                      model: GpuModel | None = None, control: str = "coroutine",
                      iterations: Any = None, branch: Any = None) -> float:
    """Only the makespan of :func:`simulate` (no Trace, no DataFrame): what search loops such as
    IOS's stage oracle need.  The schedule need not cover the whole graph."""
    run = _simulate(schedule, device, mode, calibration, host_pipeline, precision, model,
                    (control, iterations, branch))
    return max(run.end, default=0.0)


def _bound(cost: OpCost) -> str:
    if not cost.kernels:
        return "none"
    longest = max(cost.kernels, key=lambda k: k.alone_us)
    return longest.bound


@dataclass
class _Run:
    order: list[str]
    ops: list[Op]
    costs: list[OpCost]
    stream_of: list[int]
    start: list[float]
    end: list[float]
    issue: list[float]
    phase: list[int]
    spec: DeviceSpec
    graph: Graph            # what ran: the schedule's graph, or the flat one (control flow)
    schedule: Schedule      # likewise
    events: int = 0         # heap events processed
    sharing_work: int = 0   # kernels visited by the sharing passes (the O(R) per event)
    expansion: Any = None             # control flow: the workbench.control.expand.Expansion
    host: Any = None                  # control flow: the ControlHost (its decisions)


def _simulate(schedule: Schedule, device: str | DeviceSpec, mode: str,
              calibration: Mapping[str, float] | None, host_pipeline: str, precision: str,
              model: GpuModel | None, control: tuple[str, Any, Any] = ("coroutine", None, None)
              ) -> _Run:
    if not isinstance(schedule, Schedule):
        hint = (" (schedule it first: wb.simulate(wb.schedule(graph, 'serial')))"
                if isinstance(schedule, Graph) else "")
        raise ScheduleError(f"simulate() needs a Schedule, got {type(schedule).__name__}{hint}")
    if mode not in MODES:
        raise OptionError(f"unknown simulation mode {mode!r}{did_you_mean(mode, MODES)} "
                          f"(known: {', '.join(MODES)})")
    if host_pipeline not in HOST_PIPELINES:
        raise OptionError(f"unknown host pipeline {host_pipeline!r} "
                          f"(known: {', '.join(HOST_PIPELINES)})")
    check_precision(precision)
    spec = get_device(device)
    model = model or model_for(spec)
    expansion = None
    if control[0] != "coroutine" or schedule.graph.has_control_flow:
        from workbench.control.expand import expand
        from workbench.control.host import check_control

        check_control(control[0])
        if schedule.graph.has_control_flow:
            expansion = expand(schedule, iterations=control[1], branch=control[2])
            schedule = expansion.schedule
    graph = schedule.graph
    order = list(schedule.issue_order)
    all_costs = graph_costs(graph, spec, calibration, precision=precision, model=model)
    if len(order) == len(graph) and tuple(order) == graph.op_ids:
        ops = list(graph.ops)
        costs = list(all_costs)
    else:  # a partial schedule (IOS's stage oracle): O(len(order)), not O(graph)
        where = [graph.index(o) for o in order]
        ops = [graph.ops[k] for k in where]
        costs = [all_costs[k] for k in where]
    stream_table = schedule._stream_of  # noqa: SLF001 (one dict lookup per op)
    stream_of = [stream_table[op] for op in order]
    index = {op: i for i, op in enumerate(order)}
    waits: list[list[int]] = [[] for _ in order]
    for a, b in schedule.syncs:
        waits[index[b]].append(index[a])
    phase_map = schedule.phase
    phase = [phase_map[op] for op in order]
    host = None
    if expansion is not None and mode != "graph":
        from workbench.control.host import ControlHost

        host = ControlHost(schedule, ops, costs, waits, spec, host_pipeline, expansion,
                           control[0])
    engine = _Engine(schedule, ops, costs, stream_of, waits, phase, spec, mode, host_pipeline,
                     model, host)
    engine.run()
    return _Run(order, ops, costs, stream_of, engine.start, engine.end, engine.host.issue, phase,
                spec, graph, schedule, engine.seq, engine.sharing_work, expansion, host)


class _Host:
    """The host thread(s): issue times in issue order, computed as far as possible; stops at a
    ``python`` op (until it ends) and at a device-sync barrier (until the device is idle)."""

    def __init__(self, schedule: Schedule, ops: list[Op], costs: list[OpCost],
                 waits: list[list[int]], spec: DeviceSpec, mode: str, pipeline: str) -> None:
        n = len(ops)
        self.n = n
        self.issue = [math.inf] * n
        self.kernel_gap = [0.0] * n      # host time between launches of one op's kernels
        self.next = 0                    # next op to issue
        self.blocked_on: int | None = None   # a python op the host waits for
        self.sync_at: int | None = None      # a device-sync barrier the host waits at
        if mode == "graph":
            self.issue = [spec.graph_launch_us] * n
            self.next = n
            return
        self.spec = spec
        self.pipelined = pipeline == "pipelined"
        self.records = {a for a, _ in schedule.syncs}
        self.ids = [op.id for op in ops]
        self.devices = [op.device for op in ops]
        self.n_kernels = [max(1, c.n_kernels) if c.kernels else 0 for c in costs]
        self.n_waits = [len(w) for w in waits]
        self.barrier_at = set(schedule.barriers)
        self.device_sync = schedule.barrier_kind == "device_sync"
        self.n_streams = max(1, schedule.n_streams)
        self.host = 0.0                 # serial: the one host thread; pipelined: the Launch thread
        self.stage_free = [0.0, 0.0]    # pipelined: when the InferShape / Resize threads are free
        self.synced: set[int] = set()

    def advance(self, n_ended: int) -> None:
        """Issue ops until blocked; ``n_ended`` ops have ended so far."""
        if self.next >= self.n or self.blocked_on is not None:
            return
        spec = self.spec
        while self.next < self.n and self.blocked_on is None:
            i = self.next
            if i in self.barrier_at and self.device_sync and i not in self.synced:
                if n_ended < i:
                    self.sync_at = i
                    return
                self.synced.add(i)
            device = self.devices[i]
            per_kernel = spec.host_op_us(device)
            launches = self.n_kernels[i]
            host = self.host
            if self.pipelined:
                infer, resize, launch = (s * max(1, launches) for s in spec.host_stages_us(device))
                t1 = self.stage_free[0] + infer
                t2 = max(self.stage_free[1], t1) + resize
                self.stage_free = [t1, t2]
                host = max(host, t2)
                first, gap = launch, 0.0
            else:
                first, gap = per_kernel, per_kernel
                if launches == 0:
                    first = 0.0
            if i in self.barrier_at and not self.device_sync:
                host += spec.event_overhead_us * 2 * self.n_streams  # record + wait every stream
            host += spec.event_overhead_us * self.n_waits[i]
            host += first
            self.issue[i] = host
            self.kernel_gap[i] = gap
            host += gap * max(0, launches - 1)
            if self.ids[i] in self.records:
                host += spec.event_overhead_us
            self.host = host
            self.next += 1
            if device == "python":
                self.blocked_on = i

    def op_ended(self, i: int, t: float, n_ended: int) -> None:
        """Op ``i`` ended at ``t``: a host blocked on it, or on a device sync, resumes."""
        if i == self.blocked_on:
            self.blocked_on = None
            self.host = max(self.host, t)
            self.advance(n_ended)
        elif self.sync_at is not None and n_ended >= self.sync_at:
            self.host = max(self.host, t) + self.spec.device_sync_us
            self.sync_at = None
            self.advance(n_ended)


class _Pool:
    """Kernels in their work phases on one device (or engine): FIFO slot allocation, fair sharing
    of FLOP/s and bandwidth, interference (module docstring)."""

    __slots__ = ("active", "interference", "prev_prefix", "queue", "running", "limit",
                 "exclusive")

    def __init__(self, interference: float, limit: int, exclusive: bool) -> None:
        # op index -> [remaining alone-µs, rate, last update, version, slots, compute, bw,
        #              1.0 when a completion event of this version is pending, arrival time,
        #              program position of the op (breaks ties between equal arrivals)]
        self.active: dict[int, list[float]] = {}
        self.interference = interference
        self.prev_prefix = 0
        self.queue: deque[int] = deque()  # ops waiting for admission
        self.running = 0                  # ops admitted (any segment)
        self.limit = limit
        self.exclusive = exclusive


_LAT, _WORK = 0, 1


class _Engine:
    def __init__(self, schedule: Schedule, ops: list[Op], costs: list[OpCost],
                 stream_of: list[int], waits: list[list[int]], phase: list[int],
                 spec: DeviceSpec, mode: str, pipeline: str, model: GpuModel,
                 host: Any = None) -> None:
        n = len(ops)
        self.n = n
        self.costs = costs
        self.start = [0.0] * n
        self.end = [0.0] * n
        self.host = host if host is not None else _Host(schedule, ops, costs, waits, spec, mode,
                                                        pipeline)
        # segments per op: (kind, duration, slots, compute, bandwidth, kernel index)
        self.segments: list[list[tuple[int, float, float, float, float, int]]] = []
        for c in costs:
            segs = []
            for k, kt in enumerate(c.kernels):
                segs.append((_LAT, kt.latency_us, 0.0, 0.0, 0.0, k))
                for p in kt.phases:
                    if p.alone_us > 0:
                        segs.append((_WORK, p.alone_us, max(p.slots, 1e-9), p.compute,
                                     p.bandwidth, k))
            self.segments.append(segs)
        self.seg = [0] * n
        # readiness: issue + stream predecessor + syncs + barrier gate
        self.blockers = [1] * n
        self.next_on_stream = [-1] * n
        last: dict[int, int] = {}
        for i in range(n):
            s = stream_of[i]
            if s in last:
                self.next_on_stream[last[s]] = i
                self.blockers[i] += 1
            last[s] = i
        self.dependents: list[list[int]] = [[] for _ in range(n)]
        for b, ws in enumerate(waits):
            for a in ws:
                self.dependents[a].append(b)
            self.blockers[b] += len(ws)
        self.phase = phase
        self.phase_ops: dict[int, list[int]] = {}
        self.phase_left: dict[int, int] = {}
        for i, ph in enumerate(phase):
            self.phase_left[ph] = self.phase_left.get(ph, 0) + 1
            if ph > 0:
                self.phase_ops.setdefault(ph, []).append(i)
                self.blockers[i] += 1
        self.done_phase = -1
        self.last_phase = max(phase, default=0)
        pools = [pool_of(op) for op in ops]
        self.pool_name = pools
        self.pools: dict[str, _Pool] = {}
        for name in dict.fromkeys(pools):
            exclusive = is_exclusive_pool(name)
            self.pools[name] = _Pool(spec.interference, 1 if exclusive else
                                     spec.max_concurrent_kernels, exclusive)
        self.heap: list[tuple[float, int, int, int]] = []  # (time, seq, op, version)
        self.seq = 0
        self.dirty: set[str] = set()
        self.n_ended = 0
        self.sharing_work = 0
        graph = schedule.graph
        self.program = [float(graph.index(op.id)) if op.id in graph else float(k)
                        for k, op in enumerate(ops)]
        self.issue_ptr = 0

    # ------------------------------------------------------------------ main loop
    def run(self) -> None:
        if getattr(self.host, "lazy", False):
            self._run_lazy()
            return
        n = self.n
        host = self.host
        host.advance(0)
        self._advance_phases()
        heap = self.heap
        while self.n_ended < n:
            t_issue = host.issue[self.issue_ptr] if self.issue_ptr < host.next else math.inf
            t_heap = heap[0][0] if heap else math.inf
            t = min(t_issue, t_heap)
            if t == math.inf:
                raise RuntimeError("simulation stalled: the schedule deadlocks")  # validate()
            while self.issue_ptr < host.next and host.issue[self.issue_ptr] <= t:
                i = self.issue_ptr
                self.issue_ptr += 1
                self._unblock(i, t)
            while heap and heap[0][0] <= t:
                _, _, i, version = heapq.heappop(heap)
                if version >= 0:
                    entry = self.pools[self.pool_name[i]].active.get(i)
                    if entry is None or int(entry[3]) != version:
                        continue  # stale completion: the rate changed since
                self._segment_done(i, t)
            for name in list(self.dirty):
                self._reshare(self.pools[name], t)
            self.dirty.clear()

    def _run_lazy(self) -> None:
        """The main loop with a host that decides as it goes (control flow,
        :class:`workbench.control.host.ControlHost`): its next choice is a third kind of event,
        taken after the device events at the same time, and its issues come in ``sequence``."""
        n = self.n
        host: Any = self.host
        seq = host.sequence
        self._advance_phases()
        heap = self.heap
        while self.n_ended < n:
            t_issue = host.issue[seq[self.issue_ptr]] if self.issue_ptr < len(seq) else math.inf
            t_heap = heap[0][0] if heap else math.inf
            t = min(t_issue, t_heap, host.choice_at)
            if t == math.inf:
                raise RuntimeError("simulation stalled: the schedule deadlocks")  # validate()
            while self.issue_ptr < len(seq) and host.issue[seq[self.issue_ptr]] <= t:
                self._unblock(seq[self.issue_ptr], t)
                self.issue_ptr += 1
            while heap and heap[0][0] <= t:
                _, _, i, version = heapq.heappop(heap)
                if version >= 0:
                    entry = self.pools[self.pool_name[i]].active.get(i)
                    if entry is None or int(entry[3]) != version:
                        continue
                self._segment_done(i, t)
            for name in list(self.dirty):
                self._reshare(self.pools[name], t)
            self.dirty.clear()
            if host.choice_at <= t:
                host.choose(t, self.n_ended)

    # ------------------------------------------------------------------ readiness
    def _unblock(self, i: int, t: float) -> None:
        self.blockers[i] -= 1
        if self.blockers[i] == 0:
            self._admit(i, t)

    def _admit(self, i: int, t: float) -> None:
        pool = self.pools[self.pool_name[i]]
        if pool.running >= pool.limit:
            pool.queue.append(i)
            return
        pool.running += 1
        self.start[i] = t
        self._begin_segment(i, t)

    def _begin_segment(self, i: int, t: float) -> None:
        segs = self.segments[i]
        k = self.seg[i]
        if k >= len(segs):
            self._op_done(i, t)
            return
        kind, duration, slots, compute, bw, kernel = segs[k]
        if kind == _LAT:
            begin = t
            if kernel > 0:  # a later kernel of the op starts only once the host launched it
                begin = max(t, self.host.issue[i] + kernel * self.host.kernel_gap[i])
            self._push(begin + duration, i, -1)
            return
        pool_name = self.pool_name[i]
        pool = self.pools[pool_name]
        entry = pool.active.get(i)
        if entry is None:
            pool.active[i] = [duration, 0.0, t, 0.0, slots, compute, bw, 0.0, t, self.program[i]]
        else:  # the next phase of the same kernel keeps its place in the FIFO order
            entry[0], entry[1], entry[2] = duration, 0.0, t
            entry[3] += 1.0
            entry[4], entry[5], entry[6], entry[7] = slots, compute, bw, 0.0
        self.dirty.add(pool_name)

    def _push(self, time: float, i: int, version: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (time, self.seq, i, version))

    def _segment_done(self, i: int, t: float) -> None:
        segs = self.segments[i]
        k = self.seg[i]
        kind = segs[k][0]
        nxt = k + 1
        if kind == _WORK:
            pool_name = self.pool_name[i]
            pool = self.pools[pool_name]
            same_kernel = nxt < len(segs) and segs[nxt][0] == _WORK
            if not same_kernel:
                del pool.active[i]
            self.dirty.add(pool_name)
        self.seg[i] = nxt
        self._begin_segment(i, t)

    def _op_done(self, i: int, t: float) -> None:
        self.end[i] = t
        self.n_ended += 1
        pool = self.pools[self.pool_name[i]]
        pool.running -= 1
        if pool.queue:
            self._admit(pool.queue.popleft(), t)
        nxt = self.next_on_stream[i]
        if nxt >= 0:
            self._unblock(nxt, t)
        for b in self.dependents[i]:
            self._unblock(b, t)
        p = self.phase[i]
        self.phase_left[p] -= 1
        self._advance_phases(t)
        self.host.op_ended(i, t, self.n_ended)

    def _advance_phases(self, t: float = 0.0) -> None:
        while self.done_phase < self.last_phase and self.phase_left.get(self.done_phase + 1,
                                                                        0) == 0:
            self.done_phase += 1
            for j in self.phase_ops.get(self.done_phase + 1, ()):
                self._unblock(j, t)

    # ------------------------------------------------------------------ sharing
    def _reshare(self, pool: _Pool, t: float) -> None:
        active = pool.active
        if not active:
            pool.prev_prefix = 0
            return
        free = 1.0
        chosen: list[tuple[int, list[float], float, float]] = []  # (op, entry, got, cap)
        zeroed: list[tuple[int, list[float]]] = []
        count = 0
        limit = max(pool.prev_prefix, 1)
        # Kernels that arrived at the same instant (consecutive in the FIFO order) are served in
        # program order: neither was first, and the order they happened to be issued in must not
        # decide it (in graph mode nothing orders them; the exact optimum relies on this).
        group: list[tuple[int, list[float]]] = []
        for i, e in active.items():
            if group and e[8] != group[0][1][8]:
                free = self._admit_group(group, free, chosen)
                group = []
            if free <= 1e-12:
                if count >= limit:
                    break
                if e[1] > 0.0:
                    zeroed.append((i, e))
            else:
                group.append((i, e))
            count += 1
        if group:
            self._admit_group(group, free, chosen)
        pool.prev_prefix = len(chosen)
        self.sharing_work += count + 1
        rates = _fair_rates([(c[1][5], c[1][6], c[3]) for c in chosen])
        occupied = sum(c[2] for c in chosen)
        kappa = pool.interference
        for (i, e, got, _), rate in zip(chosen, rates, strict=True):
            if kappa and occupied > got:
                rate = rate / (1.0 + kappa * (occupied - got))
            self._set_rate(i, e, rate, t)
        for i, e in zeroed:
            self._set_rate(i, e, 0.0, t)

    @staticmethod
    def _admit_group(group: list[tuple[int, list[float]]], free: float,
                     chosen: list[tuple[int, list[float], float, float]]) -> float:
        """Give kernels that arrived together their slots, first come first served with ties
        in program order; returns the slots left."""
        if len(group) > 1:
            group.sort(key=lambda item: item[1][9])
        for i, e in group:
            got = e[4] if e[4] < free else free
            free -= got
            chosen.append((i, e, got, got / e[4]))
        return free

    def _set_rate(self, i: int, e: list[float], rate: float, t: float) -> None:
        """Give the phase of op ``i`` a new speed from ``t`` on, and (re)schedule its end."""
        old = e[1]
        if old == rate and (rate == 0.0 or e[7] == 1.0):
            return  # unchanged: its pending completion event stays valid
        if old > 0.0:
            e[0] = max(0.0, e[0] - old * (t - e[2]))
        e[1] = rate
        e[2] = t
        e[3] += 1.0
        e[7] = 0.0
        if rate > 0.0:
            e[7] = 1.0
            self._push(t + e[0] / rate, i, int(e[3]))


def _fair_rates(demands: list[tuple[float, float, float]]) -> list[float]:
    """Max-min fair rates for kernels with (compute share, bandwidth share, cap) when alone:
    progressive filling until a kernel reaches its cap or a resource (FLOP/s or bandwidth)
    saturates, which freezes every kernel that uses it.  O(k log k) for k kernels (a few more
    passes when a saturated resource leaves kernels that do not use it)."""
    k = len(demands)
    rates = [0.0] * k
    if k == 0:
        return rates
    if k == 1:  # alone: its own cap (its shares are what it uses when alone, so they fit)
        return [demands[0][2]]
    total_c = total_b = 0.0
    for c, b, cap in demands:
        total_c += c * cap
        total_b += b * cap
    if total_c <= 1.0 and total_b <= 1.0:  # everyone at its cap fits: nothing to share
        return [d[2] for d in demands]
    order = sorted(range(k), key=lambda j: demands[j][2])
    pending = set(range(k))
    used = [0.0, 0.0]
    sums = [sum(d[0] for d in demands), sum(d[1] for d in demands)]
    pos = 0
    while pending:
        lam = [(1.0 - used[r]) / sums[r] if sums[r] > 1e-12 else math.inf for r in (0, 1)]
        lam_sat = max(0.0, min(lam))
        while pos < k and order[pos] not in pending:
            pos += 1
        cap_next = demands[order[pos]][2] if pos < k else math.inf
        if cap_next <= lam_sat:
            j = order[pos]
            _freeze(j, cap_next, demands, rates, pending, used, sums)
            continue
        saturated = [r for r in (0, 1) if lam[r] <= lam_sat + 1e-15]
        frozen = [j for j in pending if any(demands[j][r] > 1e-12 for r in saturated)]
        if not frozen:
            frozen = list(pending)
        for j in frozen:
            _freeze(j, lam_sat, demands, rates, pending, used, sums)
    return rates


def _freeze(j: int, rate: float, demands: list[tuple[float, float, float]], rates: list[float],
            pending: set[int], used: list[float], sums: list[float]) -> None:
    rates[j] = rate
    pending.discard(j)
    c, b, _ = demands[j]
    used[0] += rate * c
    used[1] += rate * b
    sums[0] -= c
    sums[1] -= b


__all__: list[Any] = ["HOST_PIPELINES", "MODES", "simulate", "simulate_makespan"]
