"""Arena layout of a launch plan: where every tensor lives (see
:mod:`workbench.executors.gpu.launch_plan`).

Activations go in ONE ``arena`` at the offsets of a memory plan (given, or computed with a named
planner), the graph inputs and parameters after them; ``memory="pool"`` gives every activation its
own allocation.  Outputs that share an input's storage (no-task ops, marked views, in-place
writes) sit at its address (:func:`_alias_roots`); a concat input whose
producer can write straight into its slice of the output shares the concat's buffer
(:func:`_in_place_slices`); per-stream ``scratch`` regions hold temporaries.  With in-place slices
a buffer has several writers, so the buffer-level lifetimes are computed here
(:meth:`_Layout._buffer_records`) and the SOMAS conflicts by the core's ancestor rule for
multi-writer buffers (:func:`workbench.memory.streams.buffer_conflicts`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from workbench.errors import MemoryPlanError, OptionError
from workbench.executors.gpu.calls import STATE_KINDS, Call, ScratchPtr
from workbench.executors.gpu.lowering import concat_geometry
from workbench.executors.gpu.plan import Buffer, Placement
from workbench.memory.conflicts import ConflictSet
from workbench.memory.plan import MemoryPlan, UsageRecord
from workbench.memory.streams import buffer_conflicts
from workbench.ops import OPS
from workbench.values.graph import Graph, Op, OpId, TensorId
from workbench.values.schedule import Schedule
from workbench.values.storage import storage_roots

#: A tensor's shape (its flat element count when the graph gives none).
ShapeOf = Callable[[TensorId], tuple[int, ...]]


def _shapes_known(graph: Graph) -> Any:
    tensors = graph.tensors

    def check(op: Op) -> bool:
        if any(not tensors[t].shape for t in op.outputs):
            return False
        return all(tensors[t].shape or tensors[t].role == "parameter" for t in op.inputs)

    return check


def _alias_roots(graph: Graph, how: Mapping[OpId, str]) -> dict[TensorId, TensorId]:
    """Outputs placed at another tensor's address: the core's one storage rule
    (:func:`workbench.values.storage.storage_roots`, which the memory planners follow too).  An
    aliasing op the kernels compute must read and write each element at one index (an in-place
    elementwise call); a strided view the kernels would write out (an imported ``transpose``
    view) is refused in one line."""
    roots = storage_roots(graph)
    for op in graph.ops:
        if op.outputs and op.outputs[0] in roots and how[op.id] == "kernel":
            info = OPS.get(op.kind)
            if info is None or info.category != "elementwise":
                raise OptionError(f"op {op.id!r} ({op.kind}) is a view of "
                                  f"{roots[op.outputs[0]]!r} in the graph (it shares its "
                                  f"storage), which the CuPy kernels would overwrite: run it "
                                  f"with executor='torch'")
    return roots


def _in_place_slices(graph: Graph, how: Mapping[OpId, str], shape_of: ShapeOf
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

    def __init__(self, schedule: Schedule, shape_of: ShapeOf, roots: Mapping[TensorId, TensorId],
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

    def _buffer_records(self) -> tuple[list[UsageRecord], ConflictSet | None]:
        """Usage records of the activation buffers over issue steps, and (several streams) the
        SOMAS ancestor-rule conflicts at buffer level (:func:`workbench.memory.streams.
        buffer_conflicts`: A and B may share bytes only if every op touching A happens before
        every op writing B, or the reverse)."""
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
        dead = np.array([t in outputs for t in self.activations], dtype=bool)
        relation = buffer_conflicts(schedule, [sorted(u, key=step.__getitem__) for u in users],
                                    [sorted(w, key=step.__getitem__) for w in writers], dead)
        return records, ConflictSet(relation, source="happens-before (buffers)")

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
