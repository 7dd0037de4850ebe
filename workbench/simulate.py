"""Discrete-event simulator: run a Schedule on a modelled GPU and return a Trace.

What it models (deterministically):

* **Host issue.**  ``mode="eager"``: one host thread issues ops in the schedule's issue order,
  paying ``launch_overhead_us`` per kernel and ``event_overhead_us`` per event record/wait and per
  barrier stream join; a kernel cannot start before it is issued, so host-bound graphs look
  host-bound.  ``mode="graph"`` (sink execution, a CUDA graph): everything is issued at once after
  one ``graph_launch_us``; no per-op host cost at all (MindSpore O2).
* **Host pipeline** (seed 004, MindSpore's multi-level pipeline; eager mode only).  Each op's host
  work is InferShape, Resize and Launch (:meth:`~workbench.costs.DeviceSpec.host_stages_us`).
  ``host_pipeline="serial"`` (the default, and the behaviour before this option existed) pays
  ``infer + resize + launch`` per op on one thread.  ``host_pipeline="pipelined"`` runs the three
  stages on three threads with queues between them, a 3-stage flow shop: op ``i`` leaves stage ``k``
  at ``C[i][k] = max(C[i-1][k], C[i][k-1]) + stage_k(i)``, so in steady state the host issues one op
  per ``max(infer, resize, launch)``.  Event records/waits and barrier joins are paid on the Launch
  thread.
* **Non-GPU devices.**  Ops run in the resource pool :func:`~workbench.costs.pool_of` names: their
  device (``gpu``, ``cpu``, ``npu``, ...) or one copy engine per direction (``copy:h2d``,
  ``copy:d2h``, ``copy:d2d``), with the cost model of :mod:`workbench.costs`.  CPU ops cost the
  host ``host.dispatch_us`` to hand to the core pool and then run there.  A ``python`` op runs *on
  the host thread* (the interpreter): in eager mode the host issues it, waits for it to become ready
  and finish, and only then issues the next op (with a pipelined host the Launch thread blocks;
  InferShape and Resize of later ops go on).  In graph mode nothing is left to block.
* **Streams, syncs, barriers.**  A stream runs its ops in order; an op waits for the ops its syncs
  name and, after a barrier, for every op issued before the barrier.  Data dependencies are *not*
  enforced by the simulator: only what the schedule says is, so an invalid schedule shows up as a
  dependency violation in the trace.
* **Sharing a device.**  Each running op has a stand-alone speed (:mod:`workbench.costs`); the ops
  in one pool share its SMs (cores) and its memory bandwidth by max-min fair progressive filling,
  each capped by its occupancy.  Small kernels (batch 1) leave room and overlap well; kernels that
  fill the device (batch 64) only slow each other down.  Every op first spends its fixed
  ``kernel_latency_us``, which uses no shared capacity.  Exclusive pools
  (:func:`~workbench.costs.is_exclusive_pool`: each copy engine, the Python interpreter) run one op
  at a time, first come first served: a DMA engine works through its queue in order, and the
  interpreter holds the GIL.

``Trace.meta`` records ``host_pipeline``, ``host_end_us`` (when the host issued its last op) and
``host_bound_fraction`` (share of ops that started the moment they were issued, i.e. waited on the
host, not on the device; 0 in graph mode): near 1, the run is host-bound.

Complexity: O(V · S) events × O(S) work per event for S streams.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from workbench.costs import (
    DeviceSpec,
    OpCost,
    get_device,
    is_exclusive_pool,
    op_cost,
    pool_of,
)
from workbench.errors import OptionError
from workbench.graph import Op
from workbench.schedule import Schedule
from workbench.trace import Trace

MODES = ("eager", "graph")
HOST_PIPELINES = ("serial", "pipelined")
_EPS = 1e-9


def simulate(schedule: Schedule, device: str | DeviceSpec = "h100", *, mode: str = "eager",
             calibration: Mapping[str, float] | None = None,
             host_pipeline: str = "serial") -> Trace:
    """Simulate ``schedule`` on ``device`` and return the :class:`~workbench.trace.Trace`.

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> t = simulate(wb.schedule(g, "serial"), "h100")
    >>> round(t.makespan, 1)
    44.0
    >>> round(simulate(wb.schedule(g, "serial"), "h100", host_pipeline="pipelined").makespan, 1)
    44.0
    """
    run = _simulate(schedule, device, mode, calibration, host_pipeline)
    order, ops, costs, stream_of, start, end, issue, phase, spec = run
    graph = schedule.graph
    n = len(order)
    df = pd.DataFrame({
        "op": order,
        "kind": [op.kind for op in ops],
        "stream": stream_of,
        "device": [op.device for op in ops],
        "start_us": start,
        "end_us": end,
        "duration_us": [e - s for s, e in zip(start, end, strict=True)],
        "issue_us": issue,
        "alone_us": [c.alone_us for c in costs],
        "compute_us": [c.compute_us for c in costs],
        "memory_us": [c.memory_us for c in costs],
        "flops": [op.flops for op in ops],
        "bytes": [op.bytes_read + op.bytes_written for op in ops],
        "phase": phase,
    })
    gated = 0 if mode == "graph" else sum(
        1 for s, i in zip(start, issue, strict=True) if s <= i + 1e-6)
    meta = {"executor": "simulator", "host_pipeline": host_pipeline,
            "host_end_us": max(issue, default=0.0),
            "host_bound_fraction": gated / n if n else 0.0}
    return Trace(df, graph=graph, policy=schedule.policy, device=spec.name, mode=mode,
                 schedule=schedule, meta=meta)


def simulate_makespan(schedule: Schedule, device: str | DeviceSpec = "h100", *,
                      mode: str = "eager", calibration: Mapping[str, float] | None = None,
                      host_pipeline: str = "serial") -> float:
    """Only the makespan of :func:`simulate` (no Trace, no DataFrame): what search loops such as
    IOS's stage oracle need.  The schedule need not cover the whole graph."""
    end = _simulate(schedule, device, mode, calibration, host_pipeline)[5]
    return max(end, default=0.0)


def _simulate(schedule: Schedule, device: str | DeviceSpec, mode: str,
              calibration: Mapping[str, float] | None, host_pipeline: str) -> tuple:
    if mode not in MODES:
        raise OptionError(f"unknown simulation mode {mode!r} (known: {', '.join(MODES)})")
    if host_pipeline not in HOST_PIPELINES:
        raise OptionError(f"unknown host pipeline {host_pipeline!r} "
                          f"(known: {', '.join(HOST_PIPELINES)})")
    spec = get_device(device)
    graph = schedule.graph
    order = list(schedule.issue_order)
    index = {op: i for i, op in enumerate(order)}
    n = len(order)
    ops = [graph.op(op) for op in order]
    costs = [op_cost(op, spec, calibration) for op in ops]
    stream_of = [schedule.stream_of(op) for op in order]
    waits: list[list[int]] = [[] for _ in range(n)]
    for a, b in schedule.syncs:
        waits[index[b]].append(index[a])
    host = _Host(schedule, ops, waits, spec, mode, host_pipeline)
    phase = [schedule.phase[op] for op in order]
    start, end = _run(n, costs, stream_of, waits, host, phase, [pool_of(op) for op in ops])
    return order, ops, costs, stream_of, start, end, host.issue, phase, spec


class _Host:
    """The host side: computes issue times in issue order, lazily, because a ``python`` op blocks
    the host until it ends (:meth:`ended` resumes issuing).  ``issue[i]`` is ``inf`` until known."""

    def __init__(self, schedule: Schedule, ops: list[Op], waits: list[list[int]],
                 spec: DeviceSpec, mode: str, pipeline: str) -> None:
        n = len(ops)
        self.n = n
        if mode == "graph":
            self.issue = [spec.graph_launch_us] * n
            self.next = n
            self.blocked_on: int | None = None
            return
        self.issue = [math.inf] * n
        self.spec = spec
        self.pipelined = pipeline == "pipelined"
        self.records = {a for a, _ in schedule.syncs}
        self.ids = [op.id for op in ops]
        self.devices = [op.device for op in ops]
        self.n_waits = [len(w) for w in waits]
        self.barrier_at = set(schedule.barriers)
        self.n_streams = max(1, schedule.n_streams)
        self.host = 0.0                 # serial: the one host thread; pipelined: the Launch thread
        self.stage_free = [0.0, 0.0]    # pipelined: when the InferShape / Resize threads are free
        self.next = 0
        self.blocked_on = None
        self._advance()

    def _advance(self) -> None:
        spec = self.spec
        while self.next < self.n and self.blocked_on is None:
            i = self.next
            device = self.devices[i]
            host = self.host
            if self.pipelined:
                infer, resize, launch = spec.host_stages_us(device)
                t1 = self.stage_free[0] + infer
                t2 = max(self.stage_free[1], t1) + resize
                self.stage_free = [t1, t2]
                host = max(host, t2)
            else:
                launch = spec.host_op_us(device)  # the three stages back to back, one thread
            if i in self.barrier_at:
                host += spec.event_overhead_us * 2 * self.n_streams  # record + wait on every stream
            host += spec.event_overhead_us * self.n_waits[i]
            host += launch
            self.issue[i] = host
            if self.ids[i] in self.records:
                host += spec.event_overhead_us
            self.host = host
            self.next += 1
            if device == "python":
                self.blocked_on = i

    def ended(self, i: int, t: float) -> None:
        """Op ``i`` ended at ``t``: a blocked host resumes."""
        if i == self.blocked_on:
            self.blocked_on = None
            self.host = max(self.host, t)
            self._advance()


def _run(n: int, costs: list[OpCost], stream_of: list[int], waits: list[list[int]],
         host: _Host, phase: list[int], pools: list[str]) -> tuple[list[float], list[float]]:
    issue = host.issue  # filled in lazily by the host (a blocking python op)
    queues: dict[int, list[int]] = {}
    for i in range(n):
        queues.setdefault(stream_of[i], []).append(i)
    head = {s: 0 for s in queues}
    phase_left: dict[int, int] = {}
    for p in phase:
        phase_left[p] = phase_left.get(p, 0) + 1
    done_phase = -1  # every phase <= done_phase has finished
    last_phase = max(phase_left, default=0)
    start = [0.0] * n
    end = [0.0] * n
    ended = [False] * n
    started = [False] * n
    exclusive = [is_exclusive_pool(p) for p in pools]
    busy: set[str] = set()  # exclusive pools (copy engines, the interpreter) now running an op
    latency_until: dict[int, float] = {}
    left: dict[int, float] = {}  # remaining stand-alone work time of kernels in their work phase
    t = 0.0
    finished = 0
    while finished < n:
        for s, q in queues.items():
            k = head[s]
            if k >= len(q):
                continue
            i = q[k]
            if started[i] or issue[i] > t + _EPS or phase[i] > done_phase + 1:
                continue
            if any(not ended[a] for a in waits[i]):
                continue
            if exclusive[i]:
                if pools[i] in busy:
                    continue
                busy.add(pools[i])
            started[i] = True
            start[i] = t
            latency_until[i] = t + costs[i].latency_us
        rates = _share(left, costs, pools)
        candidates = [u for u in latency_until.values()]
        candidates += [t + left[i] / rates[i] for i in left if rates[i] > 0]
        candidates += [issue[q[head[s]]] for s, q in queues.items()
                       if head[s] < len(q) and not started[q[head[s]]]
                       and t < issue[q[head[s]]] < math.inf]
        if not candidates:
            raise RuntimeError("simulation stalled: the schedule deadlocks")  # validate() prevents
        nxt = max(t, min(candidates))
        dt = nxt - t
        for i in list(left):
            left[i] -= rates[i] * dt
        t = nxt
        for i in [i for i, u in latency_until.items() if u <= t + _EPS]:
            del latency_until[i]
            left[i] = costs[i].work_us
        for i in [i for i, w in left.items() if w <= _EPS * max(1.0, costs[i].work_us)]:
            del left[i]
            ended[i] = True
            end[i] = t
            finished += 1
            head[stream_of[i]] += 1
            phase_left[phase[i]] -= 1
            if exclusive[i]:
                busy.discard(pools[i])
            host.ended(i, t)
        while done_phase < last_phase and phase_left.get(done_phase + 1, 0) == 0:
            done_phase += 1
    return start, end


def _share(left: Mapping[int, float], costs: list[OpCost], pools: list[str]) -> dict[int, float]:
    """Speeds (fraction of stand-alone speed) of the kernels in their work phase: max-min fair
    progressive filling of SM and bandwidth capacity, per resource pool (device or copy engine)."""
    rates: dict[int, float] = {}
    by_device: dict[str, list[int]] = {}
    for i in left:
        by_device.setdefault(pools[i], []).append(i)
    for members in by_device.values():
        use = {}
        for i in members:
            w = costs[i].work_us
            if w <= 0:
                rates[i] = 1.0
                continue
            use[i] = (costs[i].compute_us / w, costs[i].memory_us / w)
        free = [1.0, 1.0]
        active = set(use)
        while active:
            demand = [sum(use[i][r] for i in active) for r in (0, 1)]
            lam = 1.0
            for r in (0, 1):
                if demand[r] > _EPS:
                    lam = min(lam, free[r] / demand[r])
            lam = max(lam, 0.0)
            saturated = [r for r in (0, 1)
                         if demand[r] > _EPS and free[r] - lam * demand[r] <= 1e-12]
            frozen = active if lam >= 1.0 or not saturated else {
                i for i in active if any(use[i][r] > _EPS for r in saturated)}
            for i in frozen:
                rates[i] = lam
                for r in (0, 1):
                    free[r] -= lam * use[i][r]
            active -= frozen
    return rates
