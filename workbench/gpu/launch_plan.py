"""Schedule (+ memory plan) → LaunchPlan: everything the GPU executor does, as a pure-Python value.

A :class:`LaunchPlan` lists the streams to create, the events to create and the host's issue
sequence of steps — :class:`Record` an event on a stream, :class:`Wait` for one, :class:`Launch` a
kernel (name, grid, block, arguments as memory-space offsets and scalars), and the
:class:`OpBegin` / :class:`OpEnd` markers where the executor takes per-op timestamps — plus where
every tensor lives.  The executor only turns it into CuPy calls (STYLE.md R11); this module and
its validator run on any machine.

How a Schedule becomes steps (CUDA semantics as in :mod:`workbench.schedule`):

* An extra *origin* stream (:data:`ORIGIN`) forks every schedule stream at the start (one event
  recorded on the origin, waited on by each stream) and joins them all at the end (one event per
  stream, all waited on by the origin).  Eager runs time the whole graph between two events on the
  origin; graph mode captures exactly this fork/join shape into one CUDA graph.
* For each op in issue order: a barrier before it (``schedule.barriers``) is expanded into a record
  on *every* stream followed by, on every stream, a wait on every other stream's event (the
  streams are non-blocking, so nothing else would join them); then the waits of its syncs; then
  ``OpBegin``, its kernel launches, ``OpEnd`` on its stream; then, if it is a sync source, the
  record of its event (one event per source op).
* Memory: activations in ONE ``arena`` at the offsets of a memory plan — the given
  :class:`~workbench.memory.MemoryPlan` (offsets by ``records[i].name``), or one computed with the
  named planner (:func:`workbench.memory.plan_memory`; SOMAS by default) — and the graph inputs
  and parameters one after another after it, in the same allocation (uploaded before the run;
  ``notes["persistent_bytes"]`` of the memory plan).  With ``memory="pool"`` every activation gets
  its own allocation (no reuse) and the inputs and parameters a ``persistent`` one.  Ops that
  need a temporary (sepconv's depthwise output) use a per-stream ``scratch`` region (ops on one
  stream run in order).
* **Concat without copies.**  When a concat input is produced by a kernel op, read by nothing but
  the concat and is not a graph output, its producer writes straight into its slice of the concat
  output (the row mapping of ``kernels/common.cuh``), and the concat launches nothing for it.  The
  concat output's memory then lives from its first producer on, which the graph-level lifetimes do
  not know, so with in-place slices the arena is planned here from buffer lifetimes (same planner,
  same SOMAS ancestor rule).  A given MemoryPlan turns this off (its offsets are used verbatim).

:func:`validate_plan` is an independent oracle over the steps alone (vector clocks over streams):
every wait follows its record and every event is recorded once, every kernel's inputs are written
by launches that happen before it, no two buffers overlap in memory unless every access of one
happens before every write of the other, parameters written in place are never raced, and every
launch's arguments match the kernel's signature.  Its errors are one line and name the tensors,
ops and byte ranges.

Complexity: O(V · S) steps for S streams; planning O(T² · S) for T buffers; validation
O(L · S + P · S) for L launches and P overlapping buffer pairs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.costs import DeviceSpec, get_device, op_cost
from workbench.errors import MemoryPlanError, OptionError, ScheduleError
from workbench.gpu.kernels import (
    STATE_KINDS,
    Call,
    DeviceLimits,
    In,
    LowerContext,
    Out,
    OutSlice,
    PtrTable,
    RowLen,
    RowStride,
    ScratchPtr,
    concat_geometry,
    lower,
    lowering_of,
    signature,
)
from workbench.gpu.reference import shape_or_flat
from workbench.graph import Graph, Op, OpId, TensorId
from workbench.memory.plan import MemoryPlan, UsageRecord
from workbench.schedule import Schedule

ORIGIN = -1  # the extra stream that forks and joins the schedule's streams
ALIGNMENT = 256
I32_RANGE = (-(2**31), 2**31 - 1)


# ----------------------------------------------------------------------------------- values
@dataclass(frozen=True)
class Ptr:
    """A device address: ``offset`` bytes into memory ``space``."""

    space: str
    offset: int = 0


NULL_PTR = Ptr("null", 0)


@dataclass(frozen=True)
class Placement:
    """Where a tensor lives: element ``e`` is at ``space + offset + 4 * ((e // row_len) *
    row_stride + e % row_len)``; ``buffer`` is the allocation it belongs to."""

    tensor: TensorId
    buffer: str
    space: str
    offset: int
    nbytes: int
    row_len: int
    row_stride: int

    @property
    def contiguous(self) -> bool:
        return self.row_len == self.row_stride


@dataclass(frozen=True)
class Buffer:
    """A byte range that one tensor (with its in-place slices and views) or one op's scratch
    use owns for its lifetime; ``kind``: activation, persistent or scratch."""

    name: str
    space: str
    offset: int
    nbytes: int
    kind: str


@dataclass(frozen=True)
class Record:
    event: int
    stream: int


@dataclass(frozen=True)
class Wait:
    event: int
    stream: int


@dataclass(frozen=True)
class OpBegin:
    op: OpId
    stream: int


@dataclass(frozen=True)
class OpEnd:
    op: OpId
    stream: int


@dataclass(frozen=True)
class Launch:
    """One kernel launch: ``call`` (kernel, grid, block) with ``args`` resolved to :class:`Ptr`
    values and scalars; ``reads``/``writes`` name the tensors (or ``scratch:<op>``) it touches."""

    op: OpId
    stream: int
    call: Call
    args: tuple[Any, ...]
    reads: tuple[str, ...]
    writes: tuple[str, ...]

    @property
    def kernel(self) -> str:
        return self.call.kernel

    @property
    def grid(self) -> tuple[int, int, int]:
        return self.call.grid

    @property
    def block(self) -> tuple[int, int, int]:
        return self.call.block


Step = Record | Wait | OpBegin | OpEnd | Launch


@dataclass(frozen=True)
class EventInfo:
    """What an event is for: ``fork``, ``sync`` (label: the source op), ``barrier`` (label:
    ``"<position>@<stream>"``) or ``join`` (label: the stream)."""

    kind: str
    label: str


@dataclass(frozen=True, eq=False)
class LaunchPlan:
    """Everything the executor issues, as a value (see the module docstring)."""

    schedule: Schedule
    streams: tuple[int, ...]
    events: tuple[EventInfo, ...]
    steps: tuple[Step, ...]
    placements: Mapping[TensorId, Placement]
    buffers: Mapping[str, Buffer]
    spaces: Mapping[str, int]
    tables: tuple[Ptr, ...]
    inputs: tuple[TensorId, ...]
    outputs: tuple[TensorId, ...]
    lowering: Mapping[OpId, str]
    limits: DeviceLimits
    memory_plan: MemoryPlan | None = None
    notes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def launches(self) -> list[Launch]:
        return [s for s in self.steps if isinstance(s, Launch)]

    @property
    def n_launches(self) -> int:
        return sum(1 for s in self.steps if isinstance(s, Launch))

    @property
    def arena_bytes(self) -> int:
        """Bytes of the planned activation arena (the inputs and parameters follow it)."""
        return int(self.notes.get("activation_bytes", 0))

    @property
    def device_bytes(self) -> int:
        """Bytes of every memory space (arena, persistent, scratch, pointer tables)."""
        return int(sum(self.spaces.values())) + 8 * len(self.tables)

    def launches_of(self, op: OpId) -> list[Launch]:
        return [s for s in self.steps if isinstance(s, Launch) and s.op == op]

    def modules(self) -> dict[str, str | None]:
        """Kernel modules used (name → generated source, or None for a ``kernels/*.cu`` file)."""
        out: dict[str, str | None] = {}
        for launch in self.launches:
            out.setdefault(launch.call.module, launch.call.source)
        return out

    def summary(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for step in self.steps:
            counts[type(step).__name__] = counts.get(type(step).__name__, 0) + 1
        return {"policy": self.schedule.policy, "streams": len(self.streams),
                "events": len(self.events), "launches": counts.get("Launch", 0),
                "records": counts.get("Record", 0), "waits": counts.get("Wait", 0),
                "arena_bytes": self.arena_bytes, "device_bytes": self.device_bytes,
                "in_place_concat_inputs": len(self.notes.get("in_place", ())),
                "memory": self.notes.get("memory")}

    def __repr__(self) -> str:
        s = self.summary()
        return (f"LaunchPlan({s['policy']!r} on {self.schedule.graph.name!r}: {s['launches']} "
                f"launches on {s['streams']} streams, {s['events']} events, arena "
                f"{s['arena_bytes'] / 2**20:.1f} MiB)")


# ----------------------------------------------------------------------------------- building
def build_launch_plan(schedule: Schedule, *, memory: str | MemoryPlan = "somas",
                      device: str | DeviceSpec = "h100", limits: DeviceLimits | None = None,
                      concat_in_place: bool | None = None, alignment: int = ALIGNMENT,
                      validate: bool = True) -> LaunchPlan:
    """The launch plan of ``schedule`` (see the module docstring).

    ``memory``: a planner name (``"somas"``, ``"greedy_by_size"``, ...), a MemoryPlan of this
    schedule, or ``"pool"`` (one allocation per tensor, no reuse).  ``device`` costs the spin ops
    that pin no ``duration_us``; ``limits`` describe the GPU (default: from ``device``).
    ``concat_in_place`` defaults to True, except with a given MemoryPlan.  ``validate`` runs
    :func:`validate_plan` on the result.

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> plan = build_launch_plan(wb.schedule(g, "nnc"))
    >>> [type(s).__name__ for s in plan.steps][:4]
    ['Record', 'Wait', 'Wait', 'OpBegin']
    """
    spec = get_device(device)
    limits = limits or DeviceLimits.from_spec(spec)
    graph = schedule.graph
    if graph.has_control_flow:
        raise ScheduleError(f"graph {graph.name!r} has while/case_of ops: a launch plan has no "
                            f"host decisions; launch one run's flat schedule instead "
                            f"(workbench.control.expand.expand(schedule).schedule)")
    given_plan = memory if isinstance(memory, MemoryPlan) else None
    if concat_in_place is None:
        concat_in_place = given_plan is None
    elif concat_in_place and given_plan is not None:
        raise OptionError("concat_in_place needs the arena planned here; with a given MemoryPlan "
                          "pass concat_in_place=False")
    shape_of = shape_or_flat(graph)
    has_shapes = _shapes_known(graph)
    how = {op.id: lowering_of(op, has_shapes) for op in graph.ops}
    roots = _alias_roots(graph, how)
    slices = _in_place_slices(graph, how, shape_of) if concat_in_place else {}

    def duration_us(op: Op) -> float:
        if op.duration_us is not None:
            return float(op.duration_us)
        return op_cost(op, spec).alone_us

    ctx = LowerContext(shape_of=shape_of, limits=limits, in_place=frozenset(slices),
                       duration_us=duration_us)
    calls = {op.id: lower(op, ctx, how[op.id]) for op in graph.ops}
    layout = _Layout(schedule, shape_of, roots, slices, alignment)
    mem_plan = layout.place_activations(memory)
    layout.place_scratch(calls)
    steps, events, tables = _assemble(schedule, calls, layout)
    plan = LaunchPlan(
        schedule=schedule, streams=tuple(_streams(schedule)), events=tuple(events),
        steps=tuple(steps), placements=layout.placements, buffers=layout.buffers,
        spaces=layout.spaces, tables=tuple(tables), inputs=tuple(layout.persistent),
        outputs=tuple(graph.outputs), lowering=how, limits=limits, memory_plan=mem_plan,
        notes={"memory": memory if isinstance(memory, str) else f"plan:{memory.planner}",
               "activation_bytes": layout.activation_bytes,
               "in_place": dict(slices), "aliases": dict(roots), "alignment": alignment,
               "device": spec.name})
    if validate:
        validate_plan(plan)
    return plan


def _streams(schedule: Schedule) -> list[int]:
    return [s for s, ops in schedule.streams.items() if ops]


def _shapes_known(graph: Graph) -> Any:
    tensors = graph.tensors

    def check(op: Op) -> bool:
        if any(not tensors[t].shape for t in op.outputs):
            return False
        return all(tensors[t].shape or tensors[t].role == "parameter" for t in op.inputs)

    return check


def _alias_roots(graph: Graph, how: Mapping[OpId, str]) -> dict[TensorId, TensorId]:
    roots: dict[TensorId, TensorId] = {}
    for op in graph.ops:
        if how[op.id] == "alias":
            src = op.inputs[0]
            roots[op.outputs[0]] = roots.get(src, src)
    return roots


def _in_place_slices(graph: Graph, how: Mapping[OpId, str], shape_of: Any
                     ) -> dict[TensorId, tuple[TensorId, int, int, int]]:
    """Concat inputs whose producers write straight into the concat output:
    tensor → (concat output, element offset, row_len, row_stride)."""
    tensors = graph.tensors
    outputs = set(graph.outputs)
    out: dict[TensorId, tuple[TensorId, int, int, int]] = {}
    for op in graph.ops:
        if op.kind != "concat" or how[op.id] != "kernel" or len(op.outputs) != 1:
            continue
        y = op.outputs[0]
        shapes = [shape_of(t) for t in op.inputs]
        if tensors[y].size_bytes != 4 * math.prod(shape_of(y)):
            continue
        axis = op.attrs.get("axis", 1) if len(shapes[0]) > 1 else 0
        for t, geo in zip(op.inputs, concat_geometry(shapes, axis), strict=True):
            tensor = tensors[t]
            producer = tensor.producer
            if (producer is None or how[producer] not in ("kernel", "spin")
                    or graph.op(producer).kind in ("concat", *STATE_KINDS) or t in outputs
                    or tensor.role != "activation" or op.inputs.count(t) != 1
                    or graph.consumers(t) != (op.id,)
                    or tensor.size_bytes != 4 * math.prod(shape_of(t))):
                continue
            out[t] = (y, *geo)
    return out


class _Layout:
    """Placements of every tensor, the buffers and the memory spaces."""

    def __init__(self, schedule: Schedule, shape_of: Any, roots: Mapping[TensorId, TensorId],
                 slices: Mapping[TensorId, tuple[TensorId, int, int, int]],
                 alignment: int) -> None:
        self.schedule, self.graph = schedule, schedule.graph
        self.shape_of, self.roots, self.slices, self.alignment = shape_of, roots, slices, alignment
        self.placements: dict[TensorId, Placement] = {}
        self.buffers: dict[str, Buffer] = {}
        self.spaces: dict[str, int] = {}
        self.scratch_base: dict[int, int] = {}
        self.activation_bytes = 0
        tensors = self.graph.tensors
        self.persistent = [t.id for t in tensors.values() if t.producer is None]
        self.activations = [t.id for t in tensors.values() if t.producer is not None
                            and t.id not in roots and t.id not in slices]

    def _place_persistent(self, space: str, start: int) -> None:
        """Inputs and parameters one after another from ``start`` (aligned) in ``space``."""
        tensors = self.graph.tensors
        offset = _align(start, self.alignment)
        for tid in self.persistent:
            size = tensors[tid].size_bytes
            self._place(tid, tid, space, offset, size)
            self.buffers[tid] = Buffer(tid, space, offset, size, "persistent")
            offset = _align(offset + size, self.alignment)
        if self.persistent:
            self.spaces[space] = max(self.spaces.get(space, 0), offset)

    def _place(self, tid: TensorId, buffer: str, space: str, offset: int, nbytes: int,
               row_len: int | None = None, row_stride: int | None = None) -> None:
        n = nbytes // 4
        self.placements[tid] = Placement(tid, buffer, space, offset, nbytes,
                                         row_len if row_len is not None else max(1, n),
                                         row_stride if row_stride is not None else max(1, n))

    def place_activations(self, memory: str | MemoryPlan) -> MemoryPlan | None:
        tensors = self.graph.tensors
        offsets: dict[TensorId, tuple[str, int]] = {}
        plan: MemoryPlan | None = None
        if isinstance(memory, MemoryPlan):
            plan = memory
            by_name = {r.name: (r, off) for r, off in zip(plan.records, plan.offsets, strict=True)}
            for t in self.activations:
                if t not in by_name:
                    raise MemoryPlanError(f"memory plan {plan.planner!r} has no offset for tensor "
                                          f"{t!r}")
                record, off = by_name[t]
                if record.size < tensors[t].size_bytes:
                    raise MemoryPlanError(f"memory plan gives tensor {t!r} {record.size} bytes; "
                                          f"it needs {tensors[t].size_bytes}")
                offsets[t] = ("arena", int(off))
        elif memory == "pool":
            for t in self.activations:
                offsets[t] = (f"pool:{t}", 0)
        elif isinstance(memory, str):
            plan = self._plan(memory)
            for r, off in zip(plan.records, plan.offsets, strict=True):
                offsets[r.name] = ("arena", int(off))
        else:
            raise OptionError(f"memory must be a planner name, 'pool' or a MemoryPlan, got "
                              f"{type(memory).__name__}")
        for t in self.activations:
            space, off = offsets[t]
            size = tensors[t].size_bytes
            self._place(t, t, space, off, size)
            self.buffers[t] = Buffer(t, space, off, size, "activation")
            self.spaces[space] = max(self.spaces.get(space, 0), _align(off + size, self.alignment))
        if plan is not None:
            self.spaces["arena"] = max(self.spaces.get("arena", 0),
                                       _align(plan.arena_bytes, self.alignment))
        # the planned activations first, then the inputs and parameters (one allocation)
        self.activation_bytes = self.spaces.get("arena", 0)
        self._place_persistent("persistent" if memory == "pool" else "arena",
                               self.activation_bytes)
        for t, (root, elem_offset, row_len, row_stride) in self.slices.items():
            base = self.placements[root]
            self._place(t, root, base.space, base.offset + 4 * elem_offset,
                        tensors[t].size_bytes, row_len, row_stride)
        for t, root in self.roots.items():
            base = self.placements[root]
            self.placements[t] = Placement(t, base.buffer, base.space, base.offset,
                                           tensors[t].size_bytes, base.row_len, base.row_stride)
        return plan

    def _plan(self, planner: str) -> MemoryPlan:
        from workbench.memory import plan_memory, plan_usage

        if not self.slices:
            plan = plan_memory(self.schedule, planner, alignment=self.alignment)
            names = {r.name for r in plan.records}
            if names != set(self.activations):
                missing = sorted(set(self.activations) - names)[:3]
                raise MemoryPlanError(f"memory plan misses tensors {missing}")
            return plan
        records, conflicts = self._buffer_records()
        plan = plan_usage(records, planner, alignment=self.alignment, conflicts=conflicts)
        tensors = self.graph.tensors
        plan.notes.update({"persistent_bytes": sum(tensors[t].size_bytes for t in self.persistent),
                           "lifetimes_from": "launch plan buffers (in-place concat)"})
        return plan

    def _buffer_records(self) -> tuple[list[UsageRecord], list[tuple[int, int]] | None]:
        """Usage records of the activation buffers over issue steps, and (several streams) the
        SOMAS ancestor-rule conflicts at buffer level: A and B may share bytes only if every op
        touching A happens before every op writing B (or the reverse)."""
        graph, schedule = self.graph, self.schedule
        step = {op: i for i, op in enumerate(schedule.issue_order)}
        last_step = len(schedule.issue_order) - 1
        index = {t: k for k, t in enumerate(self.activations)}
        writers: list[set[OpId]] = [set() for _ in self.activations]
        users: list[set[OpId]] = [set() for _ in self.activations]
        outputs = {self.roots.get(t, t) for t in graph.outputs}

        def buffer_of(t: TensorId) -> int | None:
            t = self.roots.get(t, t)
            t = self.slices[t][0] if t in self.slices else t
            return index.get(t)

        for op in graph.ops:
            for t in op.outputs:
                k = buffer_of(t)
                if k is not None and t not in self.roots:
                    writers[k].add(op.id)
                    users[k].add(op.id)
            for t in op.inputs:
                k = buffer_of(t)
                if k is not None:
                    users[k].add(op.id)
        records = []
        for k, t in enumerate(self.activations):
            first = min(step[o] for o in writers[k])
            last = max(step[o] for o in users[k])
            if t in outputs:
                last = last_step
            records.append(UsageRecord(graph.tensor(t).size_bytes, first, last, t))
        if schedule.n_streams <= 1:
            return records, None
        before, column, position = op_clocks(schedule)
        width = max(1, len(schedule.streams))
        n = len(self.activations)
        last_pos = np.full((n, width), -1, dtype=np.int64)
        min_w = np.full((n, width), np.iinfo(np.int64).max, dtype=np.int64)
        for k in range(n):
            for o in users[k]:
                c = column[o]
                last_pos[k, c] = max(last_pos[k, c], position[o])
            for o in writers[k]:
                np.minimum(min_w[k], before[o], out=min_w[k])
        dead = np.array([t not in outputs for t in self.activations])
        pairs: list[tuple[int, int]] = []
        for i in range(n):
            # dead_before[j]: every user of i happens before every writer of j
            dead_before = (min_w >= last_pos[i]).all(axis=1) & dead[i]
            dead_after = (min_w[i] >= last_pos).all(axis=1) & dead
            clash = ~(dead_before | dead_after)
            clash[: i + 1] = False
            pairs.extend((i, int(j)) for j in np.nonzero(clash)[0])
        return records, pairs

    def place_scratch(self, calls: Mapping[OpId, list[Call]]) -> None:
        need: dict[int, int] = {}
        for op, op_calls in calls.items():
            for call in op_calls:
                for arg in call.args:
                    if isinstance(arg, ScratchPtr):
                        s = self.schedule.stream_of(op)
                        need[s] = max(need.get(s, 0), _align(arg.nbytes, self.alignment))
        offset = 0
        for s in sorted(need):
            self.scratch_base[s] = offset
            offset += need[s]
        if offset:
            self.spaces["scratch"] = offset


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def op_clocks(schedule: Schedule) -> tuple[dict[OpId, np.ndarray], dict[OpId, int],
                                           dict[OpId, int]]:
    """Vector clock *before* each op (stream order + syncs + barriers), its stream column and
    its position on its stream: ``u`` happens before ``w`` iff ``before[w][column[u]] >=
    position[u]``.  O(V · S)."""
    streams = schedule.streams
    col = {s: c for c, s in enumerate(streams)}
    column = {op: col[s] for s, ops in streams.items() for op in ops}
    position = {op: i for ops in streams.values() for i, op in enumerate(ops)}
    width = max(1, len(col))
    current = np.full((width, width), -1, dtype=np.int64)
    after: dict[OpId, np.ndarray] = {}
    before: dict[OpId, np.ndarray] = {}
    waits: dict[OpId, list[OpId]] = {}
    for a, b in schedule.syncs:
        waits.setdefault(b, []).append(a)
    barriers = set(schedule.barriers)
    for i, op in enumerate(schedule.issue_order):
        if i in barriers:
            current[:] = current.max(axis=0)
        c = column[op]
        clock = current[c].copy()
        for a in waits.get(op, ()):
            if a in after:
                np.maximum(clock, after[a], out=clock)
        before[op] = clock.copy()
        clock[c] = max(clock[c], position[op])
        after[op] = clock
        current[c] = clock
    return before, column, position


def _assemble(schedule: Schedule, calls: Mapping[OpId, list[Call]], layout: _Layout
              ) -> tuple[list[Step], list[EventInfo], list[Ptr]]:
    streams = _streams(schedule)
    events: list[EventInfo] = []
    steps: list[Step] = []
    tables: list[Ptr] = []

    def new_event(kind: str, label: str) -> int:
        events.append(EventInfo(kind, label))
        return len(events) - 1

    fork = new_event("fork", "start")
    steps.append(Record(fork, ORIGIN))
    steps.extend(Wait(fork, s) for s in streams)
    sources = {a for a, _ in schedule.syncs}
    sync_event: dict[OpId, int] = {}
    waits: dict[OpId, list[OpId]] = {}
    for a, b in schedule.syncs:
        waits.setdefault(b, []).append(a)
    barriers = set(schedule.barriers)
    order = schedule.issue_order
    for i in range(len(order) + 1):
        if i in barriers:
            marks = {s: new_event("barrier", f"{i}@{s}") for s in streams}
            steps.extend(Record(marks[s], s) for s in streams)
            steps.extend(Wait(marks[s], t) for t in streams for s in streams if s != t)
        if i == len(order):
            break
        op = order[i]
        stream = schedule.stream_of(op)
        for a in waits.get(op, ()):
            if a in sync_event:
                steps.append(Wait(sync_event[a], stream))
        steps.append(OpBegin(op, stream))
        for call in calls[op]:
            steps.append(_resolve(op, stream, call, layout, tables))
        steps.append(OpEnd(op, stream))
        if op in sources:
            sync_event[op] = new_event("sync", op)
            steps.append(Record(sync_event[op], stream))
    for s in streams:
        joined = new_event("join", str(s))
        steps.append(Record(joined, s))
        steps.append(Wait(joined, ORIGIN))
    return steps, events, tables


def _resolve(op: OpId, stream: int, call: Call, layout: _Layout, tables: list[Ptr]) -> Launch:
    placements = layout.placements
    reads: list[str] = []
    writes: list[str] = []
    args: list[Any] = []

    def place(t: TensorId) -> Placement:
        try:
            return placements[t]
        except KeyError:
            raise OptionError(f"op {op!r}: kernel {call.kernel!r} names tensor {t!r}, which has "
                              f"no placement") from None

    for arg in call.args:
        if arg is None:
            args.append(NULL_PTR)
        elif isinstance(arg, In):
            p = place(arg.tensor)
            if not p.contiguous:
                raise OptionError(f"op {op!r} reads {arg.tensor!r}, which is written in place "
                                  f"into a concat slice (not contiguous)")
            args.append(Ptr(p.space, p.offset))
            reads.append(arg.tensor)
        elif isinstance(arg, Out):
            p = place(arg.tensor)
            args.append(Ptr(p.space, p.offset))
            writes.append(arg.tensor)
        elif isinstance(arg, OutSlice):
            p = place(arg.tensor)
            args.append(Ptr(p.space, p.offset + 4 * arg.elem_offset))
            writes.append(arg.tensor)
        elif isinstance(arg, RowLen):
            args.append(place(arg.tensor).row_len)
        elif isinstance(arg, RowStride):
            args.append(place(arg.tensor).row_stride)
        elif isinstance(arg, ScratchPtr):
            args.append(Ptr("scratch", layout.scratch_base[stream]))
            name = f"scratch:{op}"
            if name not in layout.buffers:
                layout.buffers[name] = Buffer(name, "scratch", layout.scratch_base[stream],
                                              _align(arg.nbytes, layout.alignment), "scratch")
            reads.append(name)
            writes.append(name)
        elif isinstance(arg, PtrTable):
            start = len(tables)
            for t in arg.tensors:
                p = place(t)
                tables.append(Ptr(p.space, p.offset))
                reads.append(t)
            args.append(Ptr("tables", 8 * start))
        else:
            args.append(arg)
    return Launch(op, stream, call, tuple(args), tuple(dict.fromkeys(reads)),
                  tuple(dict.fromkeys(writes)))


# ----------------------------------------------------------------------------------- validation
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
    recorded twice, a kernel reading a tensor whose writer is not ordered before it, a race on a
    parameter written in place, a missing or misplaced op marker); MemoryPlanError for two buffers
    sharing bytes while both may be live; OptionError for arguments that do not match the kernel.
    """
    clocks = _StepClocks(plan)
    for launch in clocks.launches:
        check_args(launch)
    _check_dependencies(plan, clocks)
    _check_overlaps(plan, clocks)
    _check_parameter_races(plan, clocks)
    return plan


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


# ----------------------------------------------------------------------------------- helpers
def step_frame(plan: LaunchPlan) -> Any:
    """One row per step: index, type, stream, op, kernel, event, grid, block (a DataFrame)."""
    import pandas as pd

    rows = []
    for k, s in enumerate(plan.steps):
        rows.append({"step": k, "type": type(s).__name__, "stream": s.stream,
                     "op": getattr(s, "op", None),
                     "kernel": s.kernel if isinstance(s, Launch) else None,
                     "event": getattr(s, "event", None),
                     "grid": s.grid if isinstance(s, Launch) else None,
                     "block": s.block if isinstance(s, Launch) else None})
    return pd.DataFrame(rows)


def drop_sync(schedule: Schedule, sync: tuple[OpId, OpId]) -> Schedule:
    """A copy of ``schedule`` without one sync (no validation): for tests of the validators."""
    from dataclasses import replace

    if sync not in schedule.syncs:
        raise ScheduleError(f"sync {sync!r} is not in the schedule")
    return replace(schedule, syncs=tuple(s for s in schedule.syncs if s != sync))


__all__ = [
    "ALIGNMENT", "NULL_PTR", "ORIGIN", "Buffer", "EventInfo", "Launch", "LaunchPlan", "OpBegin",
    "OpEnd", "Placement", "Ptr", "Record", "Step", "Wait", "build_launch_plan", "check_args",
    "drop_sync", "op_clocks", "step_frame", "validate_plan",
]
