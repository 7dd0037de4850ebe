"""The simulator's host thread(s): when each op is issued (part of
:mod:`workbench.simulator.simulate`).

Eager mode issues ops in the schedule's issue order on one host thread (or MindSpore's three-stage
host pipeline), paying launch and event overheads; it stops at a ``python`` op until that op ends
and at a device-sync barrier until the device is idle.  Graph mode issues everything at once after
one graph launch.  The module docstring of :mod:`workbench.simulator.simulate` states the model.
"""

from __future__ import annotations

import math

from workbench.ops.control import DEVICE_SYNC
from workbench.simulator.cost_model.costs import DeviceSpec, OpCost
from workbench.values.graph import Op
from workbench.values.schedule import Schedule


class LaunchCosts:
    """The host-side cost of issuing one op, shared by :class:`Host` and the control-flow host
    (:class:`workbench.control.host.ControlHost`): per-kernel launches (serial host) or
    MindSpore's InferShape / Resize / Launch pipeline, event records and waits, and a barrier's
    record-and-wait on every stream when barriers are event joins."""

    spec: DeviceSpec
    devices: list[str]
    n_kernels: list[int]
    n_waits: list[int]
    pipelined: bool
    stage_free: list[float]
    barrier_at: set[int]
    device_sync: bool
    n_streams: int
    issue: list[float]
    kernel_gap: list[float]

    def launch(self, i: int, host: float, records_event: bool) -> float:
        """Issue op ``i`` when the host is free at ``host``: sets ``issue[i]`` (the first
        kernel's launch) and ``kernel_gap[i]``; returns when the host is free again."""
        spec = self.spec
        device = self.devices[i]
        launches = self.n_kernels[i]
        stages = spec.host_stages_us(device)
        if self.pipelined:
            # a view (no kernel) passes InferShape only: no allocation, nothing to launch
            infer, resize, launch = ((s * launches for s in stages) if launches
                                     else (stages[0], 0.0, 0.0))
            t1 = self.stage_free[0] + infer
            t2 = max(self.stage_free[1], t1) + resize
            self.stage_free = [t1, t2]
            host = max(host, t2)
            first, gap = launch, 0.0
        else:
            first = gap = spec.host_op_us(device)
            if launches == 0:  # a view: the host infers its shape and launches nothing
                first = stages[0]
        if i in self.barrier_at and not self.device_sync:
            host += spec.event_overhead_us * 2 * self.n_streams  # record + wait every stream
        host += spec.event_overhead_us * self.n_waits[i] + first
        self.issue[i] = host
        self.kernel_gap[i] = gap
        host += gap * max(0, launches - 1)
        if records_event:
            host += spec.event_overhead_us
        return host


class Host(LaunchCosts):
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
        self.device_sync = schedule.barrier_kind == DEVICE_SYNC
        self.n_streams = max(1, schedule.n_streams)
        self.host = 0.0                 # serial: the one host thread; pipelined: the Launch thread
        self.stage_free = [0.0, 0.0]    # pipelined: when the InferShape / Resize threads are free
        self.synced: set[int] = set()

    def advance(self, n_ended: int) -> None:
        """Issue ops until blocked; ``n_ended`` ops have ended so far."""
        if self.next >= self.n or self.blocked_on is not None:
            return
        while self.next < self.n and self.blocked_on is None:
            i = self.next
            if i in self.barrier_at and self.device_sync and i not in self.synced:
                if n_ended < i:
                    self.sync_at = i
                    return
                self.synced.add(i)
            device = self.devices[i]
            self.host = self.launch(i, self.host, self.ids[i] in self.records)
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


__all__ = ["Host"]
