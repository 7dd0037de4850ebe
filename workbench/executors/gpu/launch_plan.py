"""Schedule (+ memory plan) → LaunchPlan: everything the GPU executor does, as a pure-Python value.

A :class:`LaunchPlan` lists the streams to create, the events to create and the host's issue
sequence of steps — :class:`Record` an event on a stream, :class:`Wait` for one, :class:`Launch` a
kernel (name, grid, block, arguments as memory-space offsets and scalars), and the
:class:`OpBegin` / :class:`OpEnd` markers where the executor takes per-op timestamps — plus where
every tensor lives.  The executor only turns it into CuPy calls (STYLE.md R11); this module and
its validator run on any machine.

How a Schedule becomes steps (CUDA semantics as in :mod:`workbench.values.schedule`):

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

from collections.abc import Mapping
from typing import Any

from workbench.errors import OptionError, ScheduleError
from workbench.executors.gpu.calls import (
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
)
from workbench.executors.gpu.layout import (
    _alias_roots,
    _align,
    _in_place_slices,
    _Layout,
    _shapes_known,
)
from workbench.executors.gpu.lowering import lower, lowering_of
from workbench.executors.gpu.plan import (
    ALIGNMENT,
    NULL_PTR,
    ORIGIN,
    Buffer,
    EventInfo,
    Launch,
    LaunchPlan,
    OpBegin,
    OpEnd,
    Placement,
    Ptr,
    Record,
    Step,
    Wait,
    step_frame,
)
from workbench.executors.gpu.validate import check_args, validate_plan
from workbench.executors.reference import shape_or_flat
from workbench.memory.plan import MemoryPlan
from workbench.simulator.cost_model.costs import DeviceSpec, get_device, op_cost
from workbench.values.graph import Op, OpId, TensorId
from workbench.values.schedule import Schedule


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


__all__ = [
    "ALIGNMENT", "NULL_PTR", "ORIGIN", "Buffer", "EventInfo", "Launch", "LaunchPlan", "OpBegin",
    "OpEnd", "Placement", "Ptr", "Record", "Step", "Wait", "build_launch_plan", "check_args",
    "step_frame", "validate_plan",
]
