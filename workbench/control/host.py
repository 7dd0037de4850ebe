"""The host thread of a run with control flow: NNC's coroutines, or a host that blocks.

The simulator (:mod:`workbench.simulator.simulate`) runs the flat schedule of
:mod:`workbench.control.expand`
with this host instead of its in-order one.  At a decision the host needs a value from the device:
the op instance that computes it ends, a small device→host copy brings it over (the cost model's
``d2h`` copy of the flag's bytes) and the host syncs (``device_sync_us``); the value is *ready* at
``max(reached, flag end) + d2h + device_sync_us``.  A host-known decision (a counted loop, the end
of a branch) is ready when reached.

* ``control="blocking"``: the host issues in the schedule's issue order and, at each decision,
  waits until the value is ready: nothing else is issued meanwhile.
* ``control="coroutine"`` (NNC, seed 000 "while and case..of"): the loop or branch is a task that
  yields while it waits; the one scheduling thread keeps issuing whatever is not held back: an op
  is issued once the ops before it on its stream and the events it waits on are issued and the
  decisions that gate it are known (its loop's last decision, or — for what follows a control-flow
  op — that op's end: NNC marks those streams blocked).  Among those, the earliest in issue order
  goes first, so a resumed task takes precedence over independent work queued behind it.

Both pay the same per-kernel launch and event costs as the simulator's eager host (serial or
MindSpore's pipelined stages), stop at ``python`` ops until they end and at device-sync barriers
until the device is idle.  The engine asks :meth:`ControlHost.choose` at :attr:`choice_at` and
reports every op end to :meth:`ControlHost.op_ended`; issue times come out in :attr:`sequence`
order, non-decreasing.  Complexity: O(log I) per issued instance and per decision.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

from workbench.control.expand import Expansion
from workbench.errors import OptionError
from workbench.ops.control import DEVICE_SYNC
from workbench.ops.copies import D2H
from workbench.simulator.cost_model.costs import DeviceSpec, OpCost, op_cost
from workbench.simulator.host import LaunchCosts
from workbench.values.graph import Op
from workbench.values.schedule import Schedule

CONTROL_MODES = ("coroutine", "blocking")


def check_control(control: str) -> str:
    if control not in CONTROL_MODES:
        raise OptionError(f"unknown control model {control!r} (known: "
                          f"{', '.join(CONTROL_MODES)})")
    return control


def decision_latency_us(spec: DeviceSpec, flag_bytes: int) -> float:
    """A device→host round trip for a value of ``flag_bytes`` bytes: the ``d2h`` copy of the cost
    model plus ``device_sync_us``."""
    copy = Op("flag", kind=D2H, device="copy", bytes_read=flag_bytes, bytes_written=flag_bytes)
    return op_cost(copy, spec).alone_us + spec.device_sync_us


class ControlHost(LaunchCosts):
    """The host of a run with control flow (module docstring)."""

    lazy = True

    def __init__(self, schedule: Schedule, ops: list[Op], costs: list[OpCost],
                 waits: list[list[int]], spec: DeviceSpec, pipeline: str,
                 expansion: Expansion, control: str) -> None:
        n = len(ops)
        self.n = n
        self.spec = spec
        self.issue = [math.inf] * n
        self.kernel_gap = [0.0] * n
        self.sequence: list[int] = []
        self.choice_at = 0.0
        self.host = 0.0
        self.stage_free = [0.0, 0.0]
        self.pipelined = pipeline == "pipelined"
        self.blocking = check_control(control) == "blocking"
        index = {op.id: i for i, op in enumerate(ops)}
        self.records = {index[a] for a, _ in schedule.syncs}
        self.devices = [op.device for op in ops]
        self.n_kernels = [max(1, c.n_kernels) if c.kernels else 0 for c in costs]
        self.n_waits = [len(w) for w in waits]
        self.barrier_at = set(schedule.barriers)
        self.device_sync = schedule.barrier_kind == DEVICE_SYNC
        self.sync_bars = sorted(schedule.barriers) if self.device_sync else []
        self.bar_ptr = 0
        self.barrier_wait: int | None = None
        self.n_streams = max(1, schedule.n_streams)
        self.python_blocked: int | None = None
        # decisions
        self.decisions = expansion.decisions
        self.run_of = expansion.run_of
        self.left = [d.waits_for for d in self.decisions]
        self.latency = [0.0 if d.host_known else decision_latency_us(spec, d.flag_bytes)
                        for d in self.decisions]
        self.reached = [math.nan] * len(self.decisions)
        self.ready_at = [math.nan] * len(self.decisions)
        self.flags = {d.flag for d in self.decisions if d.flag >= 0 and not d.host_known}
        self.flag_end: dict[int, float] = {}
        self.flag_waiters: dict[int, list[int]] = {}
        self.resolved: list[tuple[float, int]] = []
        # issue constraints (coroutine): stream order, events, gates
        self.blockers = [0] * n
        self.after_issue: list[list[int]] = [[] for _ in range(n)]
        if not self.blocking:
            for ops_on in schedule.streams.values():
                for x, y in zip(ops_on, ops_on[1:]):
                    self.after_issue[index[x]].append(index[y])
                    self.blockers[index[y]] += 1
            for j, ws in enumerate(waits):
                for k in ws:
                    self.after_issue[k].append(j)
                    self.blockers[j] += 1
            for dec in self.decisions:
                for k in dec.gates:
                    self.blockers[k] += 1
        self.ready = [i for i in range(n) if self.blockers[i] == 0]
        heapq.heapify(self.ready)
        self.next_in_order = 0      # blocking: next instance to issue
        self.next_decision = 0      # blocking: next decision to take
        if not self.blocking:
            for d0, left in enumerate(self.left):
                if left == 0:
                    self._reach(d0, 0.0)

    # ------------------------------------------------------------------ decisions
    def _reach(self, d: int, t: float) -> None:
        self.reached[d] = t
        dec = self.decisions[d]
        if dec.host_known or dec.flag < 0:
            self._resolve(d, t + self.latency[d])
        elif dec.flag in self.flag_end:
            self._resolve(d, max(t, self.flag_end[dec.flag]) + self.latency[d])
        else:
            self.flag_waiters.setdefault(dec.flag, []).append(d)

    def _resolve(self, d: int, ready: float) -> None:
        self.ready_at[d] = ready
        heapq.heappush(self.resolved, (ready, d))

    def _apply(self, d: int, t: float) -> None:
        """The host learns decision ``d`` (at ``t``): what it gates may go, what waits on it
        counts it."""
        for i in self.decisions[d].gates:
            self.blockers[i] -= 1
            if self.blockers[i] == 0:
                heapq.heappush(self.ready, i)
        for e in self.decisions[d].notifies:
            self.left[e] -= 1
            if self.left[e] == 0:
                self._reach(e, t)

    # ------------------------------------------------------------------ choosing
    def choose(self, t: float, n_ended: int) -> None:
        """The host is free at ``t``: issue the next op, or wait (sets :attr:`choice_at`)."""
        self.choice_at = math.inf
        if self.python_blocked is not None:
            return
        i = self._next_blocking(t) if self.blocking else self._next_coroutine(t)
        if i is None:
            return
        while self.bar_ptr < len(self.sync_bars) and self.sync_bars[self.bar_ptr] <= i:
            b = self.sync_bars[self.bar_ptr]
            if n_ended < b:
                self.barrier_wait = b  # an op end or a decision (lower ops may go) wakes us
                self.choice_at = self.resolved[0][0] if self.resolved else math.inf
                return
            self.bar_ptr += 1  # the device was idle already: no wait, no sync cost
            if self.barrier_wait == b:
                self.barrier_wait = None
        if not self.blocking:
            heapq.heappop(self.ready)
        else:
            self.next_in_order += 1
        self._issue(i, max(self.host, t))

    def _next_coroutine(self, t: float) -> int | None:
        while self.resolved and self.resolved[0][0] <= t:
            ready, d = heapq.heappop(self.resolved)
            self._apply(d, ready)
        if not self.ready:
            self.choice_at = self.resolved[0][0] if self.resolved else math.inf
            return None
        return self.ready[0]

    def _next_blocking(self, t: float) -> int | None:
        decisions = self.decisions
        while (self.next_decision < len(decisions)
               and decisions[self.next_decision].position <= self.next_in_order):
            d = self.next_decision
            if math.isnan(self.reached[d]):
                self.reached[d] = max(self.host, t)
                dec = decisions[d]
                if dec.host_known or dec.flag < 0:
                    self.ready_at[d] = self.reached[d] + self.latency[d]
            if math.isnan(self.ready_at[d]):
                flag = decisions[d].flag
                if flag not in self.flag_end:
                    return None  # op_ended(flag) calls us back
                self.ready_at[d] = max(self.reached[d], self.flag_end[flag]) + self.latency[d]
            if self.ready_at[d] > t:
                self.choice_at = self.ready_at[d]
                return None
            self.host = max(self.host, self.ready_at[d])
            self.next_decision += 1
        return self.next_in_order if self.next_in_order < self.n else None

    def _issue(self, i: int, host: float) -> None:
        device = self.devices[i]
        host = self.launch(i, host, i in self.records)
        self.host = host
        self.sequence.append(i)
        for j in self.after_issue[i]:
            self.blockers[j] -= 1
            if self.blockers[j] == 0:
                heapq.heappush(self.ready, j)
        d = self.run_of[i]
        if d >= 0 and not self.blocking:
            self.left[d] -= 1
            if self.left[d] == 0:
                self._reach(d, host)
        if device == "python":
            self.python_blocked = i
        else:
            self.choice_at = host

    # ------------------------------------------------------------------ device callbacks
    def op_ended(self, i: int, t: float, n_ended: int) -> None:
        """Op ``i`` ended at ``t`` (``n_ended`` ops so far)."""
        if i in self.flags:
            self.flag_end[i] = t
            for d in self.flag_waiters.pop(i, ()):
                self._resolve(d, max(self.reached[d], t) + self.latency[d])
        resume = False
        if self.python_blocked == i:
            self.python_blocked = None
            self.host = max(self.host, t)
            resume = True
        if self.barrier_wait is not None and n_ended >= self.barrier_wait:
            self.host = max(self.host, t) + self.spec.device_sync_us
            self.barrier_wait = None
            self.bar_ptr += 1
            resume = True
        if self.python_blocked is None and (resume or self.choice_at == math.inf):
            self.choice_at = max(self.host, t)

    # ------------------------------------------------------------------ report
    def decision_rows(self, names: Sequence[str], end: Sequence[float]) -> list[dict[str, Any]]:
        """One row per decision: owner, index, kind, iteration, flag op, reached and ready times
        (a decision the host never waited for, after the last op, is completed here)."""
        rows = []
        last = max(end, default=0.0)
        for d, dec in enumerate(self.decisions):
            reached = self.reached[d] if not math.isnan(self.reached[d]) else last
            ready = self.ready_at[d]
            if math.isnan(ready):
                flag_end = end[dec.flag] if dec.flag >= 0 else reached
                ready = max(reached, flag_end) + self.latency[d]
            rows.append({"op": dec.owner, "index": dec.index, "kind": dec.kind,
                         "iteration": dec.iteration,
                         "flag": names[dec.flag] if dec.flag >= 0 else "",
                         "sync": not dec.host_known, "reached_us": reached,
                         "ready_us": ready})
        return rows


__all__ = ["CONTROL_MODES", "ControlHost", "check_control", "decision_latency_us"]
