"""The launch-plan validator: an independent check of a plan, run on any machine.

:func:`validate_plan` replays the steps' events as vector clocks and fails on a launch that may
run before the launch producing its input, two launches that may touch overlapping bytes of a
buffer with no order between them, a parameter written while it is read, and (:func:`check_args`)
arguments that do not match the kernel's signature.  Errors are one line and name the tensors,
ops and byte ranges.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.errors import MemoryPlanError, OptionError, ScheduleError
from workbench.executors.gpu.plan import (
    ORIGIN,
    Buffer,
    Launch,
    LaunchPlan,
    OpBegin,
    OpEnd,
    Ptr,
    Record,
    Wait,
)
from workbench.executors.gpu.sources import signature
from workbench.values.graph import OpId, TensorId

I32_RANGE = (-(2**31), 2**31 - 1)


def check_args(launch: Launch) -> None:
    """Raise OptionError unless ``launch.args`` match the kernel's parameters in number and type
    (pointers are :class:`Ptr`, integers fit their width, floats are finite)."""
    params = signature(launch.call.module, launch.call.kernel, launch.call.source)
    where = f"launch of {launch.call.kernel!r} for op {launch.op!r}"
    if len(params) != len(launch.args):
        raise OptionError(f"{where}: {len(launch.args)} arguments for {len(params)} parameters")
    for p, value in zip(params, launch.args, strict=True):
        if p.type == "ptr":
            ok = isinstance(value, Ptr)
        elif p.type in ("i32", "i64", "u64"):
            ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            if ok and p.type == "i32":
                ok = I32_RANGE[0] <= int(value) <= I32_RANGE[1]
            if ok and p.type == "u64":
                ok = int(value) >= 0
        else:
            ok = isinstance(value, (float, int, np.floating)) and math.isfinite(float(value))
        if not ok:
            raise OptionError(f"{where}: parameter {p.name!r} ({p.type}) gets {value!r}")
    for dims, what in ((launch.grid, "grid"), (launch.block, "block")):
        if any(d < 1 for d in dims) or dims[1] > 65535 or dims[2] > 65535:
            raise OptionError(f"{where}: {what} {dims} is not launchable")
    if launch.call.threads > 1024:
        raise OptionError(f"{where}: {launch.call.threads} threads per block (max 1024)")


def validate_plan(plan: LaunchPlan) -> LaunchPlan:
    """Check a launch plan from its steps alone; return it or raise a one-line error.

    :class:`~workbench.errors.ScheduleError` for ordering (a wait before its record, an event
    recorded twice, a kernel reading a tensor whose writer is not ordered before it, two ops that
    touch one declared state out of program order, a race on a parameter written in place, a
    missing or misplaced op marker); MemoryPlanError for two buffers
    sharing bytes while both may be live; OptionError for arguments that do not match the kernel.
    """
    clocks = _StepClocks(plan)
    for launch in clocks.launches:
        check_args(launch)
    _check_dependencies(plan, clocks)
    _check_overlaps(plan, clocks)
    _check_state_order(plan, clocks)
    _check_parameter_races(plan, clocks)
    return plan


def _check_state_order(plan: LaunchPlan, clocks: _StepClocks) -> None:
    """Every pair of ops that touch one declared state (:func:`workbench.values.state.
    state_order`, the rule :meth:`~workbench.values.schedule.Schedule.validate` applies too)
    runs in program order: the earlier op's last launch happens before the later op's first."""
    from workbench.values.state import state_order

    launches: dict[OpId, list[int]] = {}
    for k, launch in enumerate(clocks.launches):
        launches.setdefault(launch.op, []).append(k)
    for a, b, what in state_order(plan.schedule.graph):
        if a in launches and b in launches:
            u, w = launches[a][-1], launches[b][0]
            if not clocks.happens_before(u, w):
                raise ScheduleError(f"ops {a!r} and {b!r} both touch state {what!r} ({a!r} "
                                    f"first in program order), but no event orders {b!r} after "
                                    f"{a!r} (a race)")


class _StepClocks:
    """Vector clocks over the plan's steps: for each launch, its stream column, its position on
    that stream and the clock before it (``u`` happens before ``w`` iff ``before[w][col[u]] >=
    pos[u]``)."""

    def __init__(self, plan: LaunchPlan) -> None:
        streams = (ORIGIN, *plan.streams)
        self.column = {s: c for c, s in enumerate(streams)}
        width = len(streams)
        current = np.full((width, width), -1, dtype=np.int64)
        pos = [-1] * width
        recorded: dict[int, np.ndarray] = {}
        self.launches: list[Launch] = []
        before, col, position = [], [], []
        begun: dict[OpId, int] = {}
        ended: set[OpId] = set()
        for k, step in enumerate(plan.steps):
            if step.stream not in self.column:
                raise ScheduleError(f"step {k} uses stream {step.stream}, which the plan does "
                                    f"not create")
            c = self.column[step.stream]
            if isinstance(step, Record):
                if step.event in recorded:
                    raise ScheduleError(f"event {step.event} ({_label(plan, step.event)}) is "
                                        f"recorded twice")
                recorded[step.event] = current[c].copy()
            elif isinstance(step, Wait):
                if step.event not in recorded:
                    raise ScheduleError(f"stream {step.stream} waits on event {step.event} "
                                        f"({_label(plan, step.event)}) before it is recorded")
                np.maximum(current[c], recorded[step.event], out=current[c])
            elif isinstance(step, OpBegin):
                if step.op in begun:
                    raise ScheduleError(f"op {step.op!r} begins twice")
                begun[step.op] = step.stream
            elif isinstance(step, OpEnd):
                if begun.get(step.op) != step.stream or step.op in ended:
                    raise ScheduleError(f"op {step.op!r} ends without beginning on stream "
                                        f"{step.stream}")
                ended.add(step.op)
            elif isinstance(step, Launch):
                if begun.get(step.op) != step.stream or step.op in ended:
                    raise ScheduleError(f"launch of {step.kernel!r} for op {step.op!r} is not "
                                        f"between the op's markers on stream {step.stream}")
                pos[c] += 1
                before.append(current[c].copy())
                col.append(c)
                position.append(pos[c])
                current[c, c] = pos[c]
                self.launches.append(step)
            else:
                raise ScheduleError(f"step {k} is a {type(step).__name__}, not a plan step")
        missing = [op for op in plan.schedule.issue_order if op not in ended]
        if missing:
            raise ScheduleError(f"op {missing[0]!r} is never issued ({len(missing)} ops missing)")
        self.before = np.array(before, dtype=np.int64).reshape(len(before), width)
        self.col = np.array(col, dtype=np.int64)
        self.pos = np.array(position, dtype=np.int64)

    def happens_before(self, u: int, w: int) -> bool:
        return u != w and bool(self.before[w, self.col[u]] >= self.pos[u])


def _label(plan: LaunchPlan, event: int) -> str:
    if 0 <= event < len(plan.events):
        info = plan.events[event]
        return f"{info.kind} {info.label}"
    return "unknown"


def _sources(plan: LaunchPlan) -> dict[TensorId, list[str]]:
    """For each tensor, the names whose writes a read of it must follow."""
    slices_of: dict[TensorId, list[TensorId]] = {}
    for t, (root, *_rest) in plan.notes.get("in_place", {}).items():
        slices_of.setdefault(root, []).append(t)
    aliases = plan.notes.get("aliases", {})
    out = {}
    for t in plan.placements:
        root = aliases.get(t, t)
        out[t] = [root, *slices_of.get(root, [])]
    return out


def _check_dependencies(plan: LaunchPlan, clocks: _StepClocks) -> None:
    writers: dict[str, list[int]] = {}
    for k, launch in enumerate(clocks.launches):
        for t in launch.writes:
            writers.setdefault(t, []).append(k)
    sources = _sources(plan)
    persistent = {name for name, b in plan.buffers.items() if b.kind == "persistent"}
    for k, launch in enumerate(clocks.launches):
        for t in launch.reads:
            if t.startswith("scratch:") or plan.placements[t].buffer in persistent:
                continue
            ws = [w for name in sources[t] for w in writers.get(name, ())]
            if not ws:
                raise ScheduleError(f"op {launch.op!r} reads tensor {t!r}, which no launch "
                                    f"writes")
            for w in ws:
                if w != k and not clocks.happens_before(w, k):
                    other = clocks.launches[w]
                    raise ScheduleError(
                        f"op {launch.op!r} (stream {launch.stream}) reads tensor {t!r}, but its "
                        f"write by op {other.op!r} (stream {other.stream}) is not ordered before "
                        f"the read: a missing sync or barrier")


def _buffer_accesses(plan: LaunchPlan, clocks: _StepClocks
                     ) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    access: dict[str, list[int]] = {}
    writes: dict[str, list[int]] = {}

    def buffer(name: str) -> str:
        return name if name.startswith("scratch:") else plan.placements[name].buffer

    for k, launch in enumerate(clocks.launches):
        for name in launch.reads:
            access.setdefault(buffer(name), []).append(k)
        for name in launch.writes:
            access.setdefault(buffer(name), []).append(k)
            writes.setdefault(buffer(name), []).append(k)
    return access, writes


def _check_overlaps(plan: LaunchPlan, clocks: _StepClocks) -> None:
    access, writes = _buffer_accesses(plan, clocks)
    width = clocks.before.shape[1] if clocks.before.size else len(plan.streams) + 1
    big = np.iinfo(np.int64).max
    by_space: dict[str, list[Buffer]] = {}
    for b in plan.buffers.values():
        if b.nbytes > 0:
            by_space.setdefault(b.space, []).append(b)
    last_cache: dict[str, np.ndarray] = {}
    minw_cache: dict[str, np.ndarray] = {}

    def last_pos(name: str) -> np.ndarray:
        if name not in last_cache:
            v = np.full(width, -1, dtype=np.int64)
            for k in access.get(name, ()):
                v[clocks.col[k]] = max(v[clocks.col[k]], clocks.pos[k])
            last_cache[name] = v
        return last_cache[name]

    def min_write(name: str) -> np.ndarray:
        if name not in minw_cache:
            ws = writes.get(name, [])
            minw_cache[name] = (clocks.before[ws].min(axis=0) if ws
                                else np.full(width, big, dtype=np.int64))
        return minw_cache[name]

    for space, items in by_space.items():
        items.sort(key=lambda b: (b.offset, b.name))
        active: list[Buffer] = []
        for b in items:
            active = [a for a in active if a.offset + a.nbytes > b.offset]
            for a in active:
                if a.kind == "persistent" or b.kind == "persistent":
                    ordered = False
                else:
                    ordered = bool((min_write(b.name) >= last_pos(a.name)).all()
                                   or (min_write(a.name) >= last_pos(b.name)).all())
                if not ordered:
                    raise MemoryPlanError(
                        f"tensors {a.name!r} {space}[{a.offset}, {a.offset + a.nbytes}) and "
                        f"{b.name!r} {space}[{b.offset}, {b.offset + b.nbytes}) share bytes while "
                        f"both may be live (no event orders one's last use before the other's "
                        f"first write)")
            active.append(b)


def _check_parameter_races(plan: LaunchPlan, clocks: _StepClocks) -> None:
    access, writes = _buffer_accesses(plan, clocks)
    for name, ws in writes.items():
        if plan.buffers[name].kind != "persistent":
            continue
        for w in ws:
            for a in access.get(name, ()):
                if a != w and not (clocks.happens_before(w, a) or clocks.happens_before(a, w)):
                    la, lw = clocks.launches[a], clocks.launches[w]
                    raise ScheduleError(f"parameter {name!r} is written by op {lw.op!r} and used "
                                        f"by op {la.op!r} with no order between them (a race)")


__all__ = [
    "I32_RANGE", "check_args", "validate_plan",
]
