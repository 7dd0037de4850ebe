"""Discrete-event simulator: run a Schedule on a modelled GPU and return a Trace.

What it models (deterministically):

* **Kernels.**  Each op runs the kernels of its
:class:`~workbench.simulator.cost_model.costs.OpCost` back to back on
  its stream: per kernel a latency (``kernel_latency_us``: no device resources) and then its work
  phases (full waves, tail wave; :mod:`workbench.simulator.cost_model.kernel_model`).  A later
  kernel of an op cannot
  start before the host has issued it.
* **Host issue.**  ``mode="eager"``: one host thread issues ops in the schedule's issue order,
  paying ``launch_overhead_us`` per kernel and ``event_overhead_us`` per event record/wait; a
  kernel cannot start before it is issued, so host-bound graphs look host-bound.
  ``mode="graph"`` (sink execution, a CUDA graph): everything is issued at once after one
  ``graph_launch_us``; no per-op host cost at all (MindSpore O2).
* **Barriers** (:attr:`~workbench.values.schedule.Schedule.barrier_kind`).  ``"join"``: every op
issued
  after the barrier waits for every op issued before it; the host pays an event record and wait
  per stream and goes on issuing.  ``"device_sync"`` (IOS's runtime): the host stops at the barrier
  until the device is idle, then pays ``device_sync_us`` before it issues the next op, so the
  device idles for the host's round trip at every stage boundary.  In graph mode both are joins.
* **Host pipeline** (seed 004, MindSpore's multi-level pipeline; eager mode only).
  ``host_pipeline="serial"`` pays ``infer + resize + launch`` per op on one thread;
  ``"pipelined"`` runs the three stages on three threads (a 3-stage flow shop: op ``i`` leaves
  stage ``k`` at ``C[i][k] = max(C[i-1][k], C[i][k-1]) + stage_k(i)``); event records/waits and
  barrier joins are paid on the Launch thread.
* **Control flow** (seed 000, NNC's ``while`` and ``case..of``; :mod:`workbench.control`).  A
  schedule whose graph has control-flow ops runs one flat schedule of every executed op instance
  (:func:`workbench.control.expand.expand`; ``iterations=`` and ``branch=`` are inputs of the run:
  numbers, names, rules of the iteration index, or mappings per op).  Before each iteration and
  branch the host reads a value from the device (the flag's op ends, a ``d2h`` copy, then
  ``device_sync_us``); ``control="coroutine"`` (NNC) keeps issuing independent ops meanwhile,
  ``"blocking"`` stops the host (:mod:`workbench.control.host`).  The trace has one row per op
  instance (``loop/body/matmul#3``) with columns ``iteration`` (-1 outside loops), ``parent`` (the
  control-flow op instance) and ``region`` (``cond``, ``body``, a branch); ``trace.graph`` and
  ``trace.schedule`` are the flat ones and ``trace.meta["control"]`` holds the source schedule,
  the trip counts, the branches and one row per host decision.  In graph mode the decisions are
  device-side conditional nodes (CUDA 12.4): no host round trip.
* **Non-GPU devices.**  Ops run in the resource pool
:func:`~workbench.simulator.cost_model.costs.pool_of` names; CPU
  ops cost the host ``host.dispatch_us``; a ``python`` op runs on the host thread: in eager mode
  the host waits for it to finish before issuing the next op.  Exclusive pools (each copy engine,
  the interpreter) run one op at a time, first come first served.
* **Hardware queues, event waits, op gaps**
(:class:`~workbench.simulator.cost_model.kernel_model.GpuModel`).  Streams
  go round-robin, in sorted order of their ids, onto ``hardware_queues`` work queues
  (``CUDA_DEVICE_MAX_CONNECTIONS``, 8): ops of streams sharing a queue run one after another in
  issue order.  An op waiting on another stream's event starts ``event_wait_us`` after that op
  ends; an op's first kernel waits ``op_gap_us`` more than ``kernel_latency_us``.
* **Streams, syncs.**  A stream runs its ops in order; an op waits for the ops its syncs name.
  Data dependencies are *not* enforced by the simulator: only what the schedule says is, so an
  invalid schedule shows up as a dependency violation in the trace.
* **Sharing a device.**  At most ``max_concurrent_kernels`` kernels are resident per pool (the
  hardware limit); the rest wait.  Block slots go to kernels first come first served (the block
  scheduler dispatches an earlier kernel's blocks first): a kernel gets ``min(its slot share,
  what is left)`` and runs at that fraction of its stand-alone speed at most.  Within that, peak
  FLOP/s and DRAM bandwidth are shared max-min fairly.  A co-runner slows the others
  (``interference``: a kernel's speed is divided by ``1 + interference · slots held by the
  others``), so concurrency gains come from filling slots that small grids and tail waves leave
  idle, and a full-device kernel neither waits for nor is slowed by kernels queued behind it.

Times are floats in µs; completion is an explicit event (no tolerance against absolute times), so
runs of 1e9 µs advance exactly.  ``Trace.meta`` records ``host_pipeline``, ``host_end_us`` and
``host_bound_fraction`` (share of ops that started the moment they were issued).

Complexity: O(K log K) heap events for K kernel phases, times O(R) work per event for the R
kernels sharing slots at that moment (R ≤ ``max_concurrent_kernels``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from workbench._checks import did_you_mean
from workbench.errors import OptionError, ScheduleError
from workbench.simulator.cost_model.costs import (
    DeviceSpec,
    OpCost,
    graph_costs,
    pool_of,
    unpickled_as_none,
)
from workbench.simulator.cost_model.kernel_model import GpuModel, model_for
from workbench.simulator.cost_model.target import resolve_device
from workbench.simulator.engine import Engine, Prepared, op_segments
from workbench.values.graph import Graph, Op
from workbench.values.schedule import Schedule
from workbench.values.trace import Trace

MODES = ("eager", "graph")
HOST_PIPELINES = ("serial", "pipelined")
EXPLAIN_LIMIT = 50_000  # ops: above this the trace has no per-op "why" column (page weight)


def simulate(schedule: Schedule, device: str | DeviceSpec = "h100", *, mode: str = "eager",
             calibration: Mapping[str, float] | None = None, host_pipeline: str = "serial",
             precision: str = "auto", model: GpuModel | None = None,
             control: str = "coroutine", iterations: Any = None, branch: Any = None,
             max_iterations: int | None = None) -> Trace:
    """Simulate ``schedule`` on ``device`` and return the :class:`~workbench.values.trace.Trace`.

    ``precision``: ``auto`` (default), ``fp32``, ``tf32``, ``fp16`` or ``bf16`` (see
    :mod:`workbench.simulator.cost_model.costs`);
    ``model``: a :class:`~workbench.simulator.cost_model.kernel_model.GpuModel` replacing the fitted
    parameters;
    ``control``, ``iterations``, ``branch``: how control-flow ops run (module docstring; ignored
    by graphs without them); ``max_iterations``: cap on the loop iterations of the run, summed
    over every loop (default :data:`workbench.control.expand.MAX_TOTAL_ITERATIONS`).

    >>> import workbench as wb
    >>> g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> t = simulate(wb.schedule(g, "serial"), "h100")
    >>> t.makespan > 0 and t.respects()
    True
    """
    run = _simulate(schedule, device, mode, calibration, host_pipeline, precision, model,
                    (control, iterations, branch, max_iterations))
    graph = run.graph
    ops, costs = run.ops, run.costs
    n = len(run.order)
    df = pd.DataFrame({
        "op": run.order,
        "kind": [op.kind for op in ops],
        "stream": run.stream_of,
        "device": [op.device for op in ops],
        "start_us": run.start,
        "end_us": run.end,
        "duration_us": [e - s for s, e in zip(run.start, run.end, strict=True)],
        "issue_us": run.issue,
        "alone_us": [c.alone_us for c in costs],
        "compute_us": [c.compute_us for c in costs],
        "memory_us": [c.memory_us for c in costs],
        "flops": [op.flops for op in ops],
        "bytes": [op.bytes_read + op.bytes_written for op in ops],
        "phase": run.phase,
        "kernels": [c.n_kernels for c in costs],
        "bound": [_bound(c) for c in costs],
    })
    if n <= EXPLAIN_LIMIT:
        df["why"] = [c.explain() for c in costs]
    meta: dict[str, Any] = {}
    if run.expansion is not None:
        from workbench.control.trace import control_columns

        meta["control"] = control_columns(df, run, control)
    gated = 0 if mode == "graph" else sum(
        1 for s, i in zip(run.start, run.issue, strict=True) if s <= i + 1e-6 * max(1.0, i))
    meta = {**meta, "executor": "simulator", "host_pipeline": host_pipeline,
            "events": run.events, "sharing_work": run.sharing_work,
            "host_end_us": max(run.issue, default=0.0),
            "host_bound_fraction": gated / n if n else 0.0, "precision": precision,
            "barrier_kind": run.schedule.barrier_kind}
    return Trace(df, graph=graph, policy=schedule.policy, device=run.spec.name, mode=mode,
                 schedule=run.schedule, meta=meta)


def simulate_makespan(schedule: Schedule, device: str | DeviceSpec = "h100", *,
                      mode: str = "eager", calibration: Mapping[str, float] | None = None,
                      host_pipeline: str = "serial", precision: str = "auto",
                      model: GpuModel | None = None, control: str = "coroutine",
                      iterations: Any = None, branch: Any = None) -> float:
    """Only the makespan of :func:`simulate` (no Trace, no DataFrame): what search loops such as
    IOS's stage oracle need.  The schedule need not cover the whole graph."""
    run = _simulate(schedule, device, mode, calibration, host_pipeline, precision, model,
                    (control, iterations, branch))
    return max(run.end, default=0.0)


def _bound(cost: OpCost) -> str:
    if not cost.kernels:
        return "none"
    longest = max(cost.kernels, key=lambda k: k.alone_us)
    return longest.bound


@dataclass
class _Run:
    order: list[str]
    ops: list[Op]
    costs: list[OpCost]
    stream_of: list[int]
    start: list[float]
    end: list[float]
    issue: list[float]
    phase: list[int]
    spec: DeviceSpec
    graph: Graph            # what ran: the schedule's graph, or the flat one (control flow)
    schedule: Schedule      # likewise
    events: int = 0         # heap events processed
    sharing_work: int = 0   # kernels visited by the sharing passes (the O(R) per event)
    expansion: Any = None             # control flow: the workbench.control.expand.Expansion
    host: Any = None                  # control flow: the ControlHost (its decisions)


def _prepared(ops: list[Op], costs: list[OpCost], positions: list[float], model: GpuModel
              ) -> Prepared:
    """What the engine needs of ``ops`` beside the schedule: their segments, pools and program
    ``positions`` (:data:`~workbench.simulator.engine.Prepared`).  O(len(ops))."""
    return op_segments(costs, model.op_gap_us), [pool_of(op) for op in ops], positions


def _engine_table(graph: Graph, costs: list[OpCost], model: GpuModel) -> Prepared:
    """:func:`_prepared` of every op of ``graph``, kept on the graph beside ``costs``, its cached
    cost table, so that IOS's thousands of stage runs build it once.  O(V) when built."""
    key = ("engine_table", id(costs), model.op_gap_us)
    memo: dict[Any, Any] = graph._cache  # noqa: SLF001 (the graph's memo table)
    hit = memo.get(key)
    if hit is not None and hit.costs is costs:
        return hit.table
    table = _prepared(list(graph.ops), costs, [float(k) for k in range(len(graph))], model)
    memo[key] = _KeptTable(costs, table)
    return table


class _KeptTable:
    """An engine table kept on its graph, with the cost table it came from (which it keeps
    alive, so that the ``id`` in its key stays that table's).  Not pickled with the graph: it
    unpickles as ``None`` (an ``id`` means nothing in another process, and the table is O(V) to
    rebuild), so a pickled graph is no larger for having been simulated."""

    __slots__ = ("costs", "table")

    def __init__(self, costs: list[OpCost], table: Prepared) -> None:
        self.costs, self.table = costs, table

    def __reduce__(self) -> tuple[Any, ...]:
        return (unpickled_as_none, ())


def _simulate(schedule: Schedule, device: str | DeviceSpec, mode: str,
              calibration: Mapping[str, float] | None, host_pipeline: str, precision: str,
              model: GpuModel | None, control: tuple[Any, ...] = ("coroutine", None, None)
              ) -> _Run:
    if not isinstance(schedule, Schedule):
        hint = (" (schedule it first: wb.simulate(wb.schedule(graph, 'serial')))"
                if isinstance(schedule, Graph) else "")
        raise ScheduleError(f"simulate() needs a Schedule, got {type(schedule).__name__}{hint}")
    if mode not in MODES:
        raise OptionError(f"unknown simulation mode {mode!r}{did_you_mean(mode, MODES)} "
                          f"(known: {', '.join(MODES)})")
    if host_pipeline not in HOST_PIPELINES:
        raise OptionError(f"unknown host pipeline {host_pipeline!r} "
                          f"(known: {', '.join(HOST_PIPELINES)})")
    spec = resolve_device(device, precision=precision, model=model)
    model = model_for(spec)  # the target's own model: no lookup
    if calibration is not None:
        from workbench.simulator.cost_model.calibration import check_calibration

        calibration = check_calibration(calibration, schedule.graph.op_ids)
    expansion = None
    if control[0] != "coroutine" or schedule.graph.has_control_flow:
        from workbench.control.expand import expand
        from workbench.control.host import check_control

        check_control(control[0])
        if schedule.graph.has_control_flow:
            expansion = expand(schedule, iterations=control[1], branch=control[2],
                               max_iterations=control[3] if len(control) > 3 else None)
            schedule = expansion.schedule
    graph = schedule.graph
    order = list(schedule.issue_order)
    if calibration is None:  # a device profile's measured op times (device_profile)
        from workbench.simulator.cost_model.device_profile import calibration_for

        calibration = calibration_for(spec, graph.name)
    all_costs = graph_costs(graph, spec, calibration, precision=precision, model=model)
    whole = len(order) == len(graph) and tuple(order) == graph.op_ids
    # a partial schedule (IOS's stage oracle): O(len(order)), not O(graph)
    where = list(range(len(graph))) if whole else [graph.index(o) for o in order]
    ops = list(graph.ops) if whole else [graph.ops[k] for k in where]
    costs = list(all_costs) if whole else [all_costs[k] for k in where]
    if calibration is not None:  # the engine table of the ops run: a calibrated cost table is
        # kept on the graph only while recently used, and a kept engine table would outlive it
        prepared = _prepared(ops, costs, [float(k) for k in where], model)
    else:
        table = _engine_table(graph, all_costs, model)
        prepared = table if whole else ([table[0][k] for k in where],
                                        [table[1][k] for k in where], [table[2][k] for k in where])
    stream_table = schedule._stream_of  # noqa: SLF001 (one dict lookup per op)
    stream_of = [stream_table[op] for op in order]
    index = {op: i for i, op in enumerate(order)}
    waits: list[list[int]] = [[] for _ in order]
    for a, b in schedule.syncs:
        waits[index[b]].append(index[a])
    phase_map = schedule.phase
    phase = [phase_map[op] for op in order]
    host = None
    if expansion is not None and mode != "graph":
        from workbench.control.host import ControlHost

        host = ControlHost(schedule, ops, costs, waits, spec, host_pipeline, expansion,
                           control[0])
    engine = Engine(schedule, ops, costs, stream_of, waits, phase, spec, mode, host_pipeline,
                     model, host, prepared)
    engine.run()
    return _Run(order, ops, costs, stream_of, engine.start, engine.end, engine.host.issue, phase,
                spec, graph, schedule, engine.seq, engine.sharing_work, expansion, host)


__all__: list[Any] = ["HOST_PIPELINES", "MODES", "simulate", "simulate_makespan"]
