"""Pipelines that chain passes, a scheduler and the simulator: MindSpore's compilation levels
(:func:`run_level`) and the textbook's split vs merge execution of heterogeneous graphs
(:func:`split_schedule`, :func:`merge_schedule`).

They sit above the passes (``workbench.passes``: Graph → Graph only) and the schedulers, beside
:func:`workbench.orchestration.compare.compare`.  The levels themselves
(:data:`~workbench.passes.LEVELS`,
:func:`~workbench.passes.apply_level`) and the partition and copy ops
(:func:`~workbench.passes.partition`, :func:`~workbench.passes.insert_copies`) are passes.

**Split vs merge** (seed 003 §7.5.3, Fig. 7.5.9–7.5.13).  :func:`split_schedule` runs subgraph
after subgraph (the textbook's 子图拆分): for each subgraph, first the copies that bring its inputs
over, then its ops scheduled by ``policy`` on the subgraph alone, with a barrier between
consecutive stages (the switching cost between subgraphs).  :func:`merge_schedule` (子图合并)
schedules the whole graph with its copy ops as ordinary ops, so devices and copy engines run
concurrently, ordered only by syncs.  In both, streams never mix devices: a policy's stream is
split into one stream per device class (copies: one per direction), which keeps every stream an
in-order queue of one device.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from workbench.errors import OptionError
from workbench.passes import LEVELS, apply_level
from workbench.passes.partition import device_class, insert_copies, partition
from workbench.schedulers import schedule
from workbench.simulator.cost_model.costs import DeviceSpec
from workbench.simulator.simulate import simulate
from workbench.values.graph import Graph, Op, OpId, Tensor, TensorId
from workbench.values.schedule import Schedule, build_schedule
from workbench.values.trace import Trace

__all__ = ["merge_schedule", "run_level", "split_schedule"]


def run_level(graph: Graph, level: str, policy: str = "serial",
              device: str | DeviceSpec = "h100", **options: Any) -> Trace:
    """Apply ``level``, schedule with ``policy`` and simulate on ``device``.

    ``options`` go to the simulator (``calibration=``, or ``host_pipeline=`` to override the
    level's).  The trace's ``meta["level"]`` names the level.

    >>> import workbench as wb
    >>> t0 = run_level(wb.models.transformer_block(), "O0")
    >>> t2 = run_level(wb.models.transformer_block(), "O2")
    >>> round(t0.meta["host_end_us"], 1), t2.meta["host_end_us"]  # 18 launches; one graph launch
    (97.1, 8.0)
    """
    info = LEVELS.get(level)
    for key in options:
        if key not in ("calibration", "host_pipeline"):
            raise OptionError(f"run_level has no option {key!r} "
                              f"(options: calibration, host_pipeline)")
    g, mode = apply_level(graph, level)
    options.setdefault("host_pipeline", info.host_pipeline)
    trace = simulate(schedule(g, policy), device, mode=mode, **options)
    trace.meta["level"] = level
    return trace


def _stream_key(op: Op) -> str:
    """Which device's streams an op's stream belongs to (copies: one engine per direction)."""
    if op.device == "copy":
        return f"copy:{op.kind}"
    return device_class(op)


def _induced(graph: Graph, ops: Iterable[OpId], name: str) -> Graph:
    """The subgraph on ``ops``: tensors produced outside become its inputs."""
    keep = [graph.op(o) for o in ops]
    inside = {op.id for op in keep}
    tensors: dict[TensorId, Tensor] = {}
    for op in keep:
        for t in (*op.inputs, *op.outputs):
            tt = graph.tensor(t)
            if tt.producer is not None and tt.producer not in inside:
                tt = Tensor(tt.id, tt.size_bytes, None, role="input", shape=tt.shape,
                            dtype=tt.dtype)
            tensors[t] = tt
    control = [(a, b) for a, b in graph.control_edges if a in inside and b in inside]
    return Graph(keep, tensors.values(), control, name=name)


def split_schedule(graph: Graph, policy: str = "serial") -> Schedule:
    """Subgraph after subgraph (the textbook's split execution): copies into a subgraph, then the
    subgraph's ops scheduled by ``policy``, with a barrier between consecutive stages.

    >>> from workbench.models import textbook_heterogeneous
    >>> s = split_schedule(textbook_heterogeneous())
    >>> s.policy, s.n_barriers
    ('split/serial', 8)
    """
    parts = partition(graph)
    g = insert_copies(graph)
    part_of = {op: k for k, part in enumerate(parts) for op in part.ops}
    copies_into: dict[int, list[OpId]] = {}
    for op in g.ops:
        if op.device == "copy":
            k = min(part_of[c] for c in g.consumers(op.outputs[0]))
            copies_into.setdefault(k, []).append(op.id)
    keys: dict[tuple[str, int], int] = {}
    stream_of: dict[OpId, int] = {}
    order: list[OpId] = []
    barriers: list[int] = []
    stages: list[tuple[str, list[OpId]]] = []
    for k, part in enumerate(parts):
        if k in copies_into:
            stages.append((f"copies into {part.name}", copies_into[k]))
        stages.append((part.name, list(part.ops)))
    for name, ops in stages:
        if order:
            barriers.append(len(order))
        if name.startswith("copies into"):
            for op_id in ops:
                key = (_stream_key(g.op(op_id)), 0)
                stream_of[op_id] = keys.setdefault(key, len(keys))
                order.append(op_id)
            continue
        sub = schedule(_induced(g, ops, name), policy)
        for op_id in sub.issue_order:
            key = (_stream_key(g.op(op_id)), sub.stream_of(op_id))
            stream_of[op_id] = keys.setdefault(key, len(keys))
            order.append(op_id)
    notes = {"subgraphs": [p.name for p in parts], "stages": [name for name, _ in stages]}
    return build_schedule(g, f"split/{policy}", stream_of, order, barriers=barriers,
                          options={"policy": policy}, notes=notes).validate()


def merge_schedule(graph: Graph, policy: str = "nnc") -> Schedule:
    """One whole graph with copy ops as ordinary ops (the textbook's merged execution), scheduled
    by ``policy``; each of the policy's streams is split per device class so devices run
    concurrently, and syncs are re-derived.

    >>> from workbench.models import textbook_heterogeneous
    >>> merge_schedule(textbook_heterogeneous()).policy
    'merge/nnc'
    """
    g = insert_copies(graph)
    base = schedule(g, policy)
    keys: dict[tuple[str, int], int] = {}
    stream_of = {op_id: keys.setdefault((_stream_key(g.op(op_id)), base.stream_of(op_id)),
                                        len(keys))
                 for op_id in base.issue_order}
    notes = {"subgraphs": [p.name for p in partition(graph)], "base_streams": base.n_streams}
    return build_schedule(g, f"merge/{policy}", stream_of, base.issue_order,
                          barriers=base.barriers, options={"policy": policy},
                          notes=notes).validate()
