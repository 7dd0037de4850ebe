"""The launch plan as plain values: streams, events, the host's issue sequence of steps and where
every tensor lives (see :mod:`workbench.executors.gpu.launch_plan` for how a Schedule becomes one).

:class:`Record` an event on a stream, :class:`Wait` for one, :class:`Launch` a kernel (name, grid,
block, arguments as memory-space offsets and scalars), and the :class:`OpBegin` / :class:`OpEnd`
markers where the executor takes per-op timestamps; :class:`Placement` and :class:`Buffer` say
where tensors live.  :func:`step_frame` lists the steps as a table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.executors.gpu.calls import Call, DeviceLimits
from workbench.memory.plan import MemoryPlan
from workbench.values.graph import OpId, TensorId
from workbench.values.schedule import Schedule

ORIGIN = -1  # the extra stream that forks and joins the schedule's streams


ALIGNMENT = 256


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


__all__ = [
    "ALIGNMENT", "NULL_PTR", "ORIGIN", "Buffer", "EventInfo", "Launch", "LaunchPlan",
    "OpBegin", "OpEnd", "Placement", "Ptr", "Record", "Step", "Wait", "step_frame",
]
