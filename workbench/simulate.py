"""Discrete-event simulator: run a Schedule on a modelled GPU and return a Trace.

What it models (deterministically):

* **Host issue.**  ``mode="eager"``: one host thread issues ops in the schedule's issue order, paying
  ``launch_overhead_us`` per kernel and ``event_overhead_us`` per event record/wait and per barrier
  stream join; a kernel cannot start before it is issued, so host-bound graphs look host-bound.
  ``mode="graph"`` (sink execution, a CUDA graph): everything is issued at once after one
  ``graph_launch_us``.
* **Streams, syncs, barriers.**  A stream runs its ops in order; an op waits for the ops its syncs
  name and, after a barrier, for every op issued before the barrier.  Data dependencies are *not*
  enforced by the simulator: only what the schedule says is, so an invalid schedule shows up as a
  dependency violation in the trace.
* **Sharing the device.**  Each running kernel has a stand-alone speed (:mod:`workbench.costs`); the
  kernels on one device share its SMs and its memory bandwidth by max-min fair progressive filling,
  each capped by its occupancy.  Small kernels (batch 1) leave room and overlap well; kernels that
  fill the device (batch 64) only slow each other down.  Every kernel first spends its fixed
  ``kernel_latency_us``, which uses no shared capacity.

Complexity: O(V · S) events × O(S) work per event for S streams.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from workbench.costs import DeviceSpec, OpCost, get_device, op_cost
from workbench.errors import OptionError
from workbench.schedule import Schedule
from workbench.trace import Trace

MODES = ("eager", "graph")
_EPS = 1e-9


def simulate(schedule: Schedule, device: str | DeviceSpec = "h100", *, mode: str = "eager",
             calibration: Mapping[str, float] | None = None) -> Trace:
    """Simulate ``schedule`` on ``device`` and return the :class:`~workbench.trace.Trace`.

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> t = simulate(wb.schedule(g, "serial"), "h100")
    >>> round(t.makespan, 1)
    44.0
    """
    if mode not in MODES:
        raise OptionError(f"unknown simulation mode {mode!r} (known: {', '.join(MODES)})")
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
    issue = _issue_times(n, waits, schedule, spec, mode)
    phase = [schedule.phase[op] for op in order]
    start, end = _run(n, costs, stream_of, waits, issue, phase, ops)
    df = pd.DataFrame({
        "op": order,
        "kind": [op.kind for op in ops],
        "stream": stream_of,
        "device": [op.device for op in ops],
        "start_us": start,
        "end_us": end,
        "duration_us": [e - s for s, e in zip(start, end)],
        "issue_us": issue,
        "alone_us": [c.alone_us for c in costs],
        "compute_us": [c.compute_us for c in costs],
        "memory_us": [c.memory_us for c in costs],
        "flops": [op.flops for op in ops],
        "bytes": [op.bytes_read + op.bytes_written for op in ops],
        "phase": phase,
    })
    return Trace(df, graph=graph, policy=schedule.policy, device=spec.name, mode=mode,
                 schedule=schedule, meta={"executor": "simulator"})


def _issue_times(n: int, waits: list[list[int]], schedule: Schedule, spec: DeviceSpec,
                 mode: str) -> list[float]:
    if mode == "graph":
        return [spec.graph_launch_us] * n
    records = {a for a, _ in schedule.syncs}
    barrier_at = set(schedule.barriers)
    n_streams = max(1, schedule.n_streams)
    host = 0.0
    issue = [0.0] * n
    for i, op in enumerate(schedule.issue_order):
        if i in barrier_at:
            host += spec.event_overhead_us * 2 * n_streams  # record + wait on every stream
        host += spec.event_overhead_us * len(waits[i])
        host += spec.launch_overhead_us
        issue[i] = host
        if op in records:
            host += spec.event_overhead_us
    return issue


def _run(n: int, costs: list[OpCost], stream_of: list[int], waits: list[list[int]],
         issue: list[float], phase: list[int], ops) -> tuple[list[float], list[float]]:
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
            started[i] = True
            start[i] = t
            latency_until[i] = t + costs[i].latency_us
        rates = _share(left, costs, ops)
        candidates = [u for u in latency_until.values()]
        candidates += [t + left[i] / rates[i] for i in left if rates[i] > 0]
        candidates += [issue[q[head[s]]] for s, q in queues.items()
                       if head[s] < len(q) and not started[q[head[s]]] and issue[q[head[s]]] > t]
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
        while done_phase < last_phase and phase_left.get(done_phase + 1, 0) == 0:
            done_phase += 1
    return start, end


def _share(left: Mapping[int, float], costs: list[OpCost], ops) -> dict[int, float]:
    """Speeds (fraction of stand-alone speed) of the kernels in their work phase: max-min fair
    progressive filling of SM and bandwidth capacity, per device."""
    rates: dict[int, float] = {}
    by_device: dict[str, list[int]] = {}
    for i in left:
        by_device.setdefault(ops[i].device, []).append(i)
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
