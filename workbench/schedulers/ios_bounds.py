"""When IOS cannot beat the sequential schedule it falls back to: a bound that stops the search.

IOS with the simulator oracle keeps the sequential schedule whenever its own simulates slower
(``notes["fallback"]``, :func:`workbench.schedulers.ios.schedule_ios`).  In eager mode at batch 1
the built-in nets are launch bound: the host issues every op one after another, and the device
mostly waits for it.  Then any IOS schedule with a barrier is provably slower than the sequential
one, and once one part's stages hold a stage of two or more groups (so the schedule will have a
barrier) the remaining parts need not be searched: the answer is the sequential schedule.

**The bound** (simulator, ``mode="eager"``, serial host; :mod:`workbench.simulator.host`).  The
host issues op ``i`` by paying ``first_i`` (``host_op_us`` of its device), then ``gap_i`` for
each further kernel; waits, event records and barriers only add to the host clock.  A
``device_sync`` barrier holds the host until the device is idle and then adds
``device_sync_us``; a ``join`` barrier adds an event record and wait per stream, at least
``4 · event_overhead_us`` with two streams or more.  A kernel starts no earlier than its launch
and takes a positive time.  So when every op launches at least one kernel, the makespan of any
schedule of the graph with ``B`` barriers is at least ``H + B·δ``, where ``H = Σ_i first_i +
gap_i · (kernels_i - 1)`` is the host time of issuing every op and ``δ`` the barrier's host cost
above.  The sequential schedule (one stream, no syncs, no barriers, no ``python`` op to block
the host) issues the last op's first kernel at ``h = H - gap_last · (kernels_last - 1) <= H``,
its trace's ``host_end_us``.  Hence an IOS schedule with a barrier simulates to at least
``h + δ``; if that exceeds the sequential makespan ``T`` the schedule falls back.

IOS emits a barrier next to every stage of two or more groups unless that stage is the whole
schedule (:func:`~workbench.schedulers.ios.emit_stages`), and the stages a part contributes do
not depend on the parts after it (serial engine), so as soon as a searched part returns such a
stage and ``h + δ > T`` the final schedule is the sequential one: the same schedule the full
search would return, found without searching the rest.  By default (``early_stop=None``) IOS
stops so only once a budget has cut the search: a complete search keeps its notes (states,
estimated cost), as the paper's DP reports them; ``early_stop=True`` stops at once.
NASNet-A large unfused at batch 1 on h100: ``h = 8960.7``, ``δ = 4.86``, ``T = 8965.2`` µs.

Not used (no proof) for graph mode, the ``events`` sync, ``merge=True`` (the merged graph has
other ops), a user or measured oracle (no fallback), the pipelined host, graphs with control
flow, ``python`` ops or ops without kernels, or a sequential schedule with syncs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from workbench.values.graph import Graph, OpId
from workbench.values.schedule import Schedule
from workbench.values.trace import Trace

#: Relative margin the bound must clear (float sums in another order than the simulator's).
MARGIN = 1e-9


@dataclass(frozen=True)
class SerialProof:
    """``lower_us`` (= ``host_us + barrier_us``) bounds every IOS schedule of the graph with a
    barrier from below, and exceeds ``sequential_us``, the sequential makespan."""

    host_us: float
    barrier_us: float
    sequential_us: float

    @property
    def lower_us(self) -> float:
        return self.host_us + self.barrier_us

    def note(self, part: int, parts: int) -> str:
        return (f"sequential: part {part}/{parts} holds a stage of several groups, so the IOS "
                f"schedule has a barrier and simulates to at least {self.lower_us:.1f} µs (host "
                f"issue {self.host_us:.1f} µs + one barrier {self.barrier_us:.2f} µs), more "
                f"than the sequential {self.sequential_us:.1f} µs; parts {part + 1}-{parts} "
                f"not searched")


def serial_trace(graph: Graph, device: str, mode: str) -> Trace | None:
    """The eager trace of the sequential schedule when the bounds here hold for the graph
    (module docstring: eager, no control flow, no ``python`` op, every op launches a kernel,
    the sequential schedule has no syncs or barriers), else ``None``."""
    if mode != "eager" or graph.has_control_flow:
        return None
    if any(op.device == "python" for op in graph.ops):
        return None
    from workbench.schedulers.serial import schedule_serial
    from workbench.simulator.simulate import simulate

    seq = schedule_serial(graph)
    if seq.syncs or seq.barriers:
        return None
    trace = simulate(seq, device, mode="eager")
    if len(trace.df) != len(graph) or not (trace.df["kernels"] >= 1).all():
        return None
    return trace


def serial_proof(trace: Trace, device: str, sync: str) -> SerialProof | None:
    """The bound of the module docstring from the sequential ``trace`` (:func:`serial_trace`)
    when it proves a barrier schedule slower than the sequential one, else ``None``."""
    if sync not in ("device_sync", "barrier"):
        return None
    from workbench.simulator.cost_model.costs import get_device

    spec = get_device(device)
    barrier = spec.device_sync_us if sync == "device_sync" else 4 * spec.event_overhead_us
    proof = SerialProof(float(trace.meta["host_end_us"]), barrier, float(trace.makespan))
    if proof.lower_us * (1 - MARGIN) > proof.sequential_us:
        return proof
    return None


def unit_host_us(trace: Trace, device: str, unit_ops: list[list[OpId]]) -> tuple[float, ...]:
    """Per unit, the host time of issuing its ops in eager mode (``host_op_us`` of each op's
    device per kernel; :mod:`workbench.simulator.host`, every op launching a kernel).  A stage
    run alone by the simulator oracle ends no earlier than its last kernel's launch, so its
    latency is at least the sum over its units (:mod:`workbench.schedulers.ios_search`)."""
    from workbench.simulator.cost_model.costs import get_device

    spec = get_device(device)
    df = trace.df
    per_op = {op: spec.host_op_us(dev) * int(k)
              for op, dev, k in zip(df["op"], df["device"], df["kernels"])}
    return tuple(sum(per_op[op] for op in ops) for ops in unit_ops)


def has_barrier_stage(stages: list[list[list[int]]], merged: list[bool], total_units: int
                      ) -> bool:
    """Does a stage of several groups (not a merge) sit among these stages, short of holding
    every unit of the schedule (then it would be the only stage, with no barrier)?"""
    return any(len(groups) > 1 and not m and sum(map(len, groups)) < total_units
               for groups, m in zip(stages, merged))


class EarlyStop:
    """``stop(part_result)`` for :func:`workbench.schedulers.ios_parts.search_parts`: True at the
    first part holding a stage of several groups, once a budget has cut the search (``always``:
    at once); ``fired`` says it did."""

    def __init__(self, total_units: int, *, always: bool) -> None:
        self.total_units, self.always = total_units, always
        self.budget_hit = self.fired = False

    def __call__(self, res: Any) -> bool:
        self.budget_hit |= res.budget_hit is not None
        if (self.always or self.budget_hit) and has_barrier_stage(res.stages, res.merged,
                                                                   self.total_units):
            self.fired = True
        return self.fired


def proved_sequential(graph: Graph, proof: SerialProof, results: list[Any],
                      parts: list[list[int]], unit_ops: list[list[OpId]], t0: float,
                      options: dict[str, Any], engine: str, time_budget_s: float | None,
                      max_states: int | None) -> Schedule:
    """The sequential schedule, as IOS's fallback gives it, once the bound proved every outcome
    of the search slower (the search stopped after the last part in ``results``)."""
    from workbench.schedulers.ios_parts import describe_hit, search_counts
    from workbench.schedulers.serial import schedule_serial

    seq = schedule_serial(graph)
    hit = next((res for res in results if res.budget_hit), None)
    notes = {
        "stages": [[[op]] for op in seq.issue_order], "n_stages": len(seq.issue_order),
        **search_counts(results, parts, unit_ops, t0),
        "estimated_us": None, "merges": [], "engine": engine,
        "budget_hit": None if hit is None else describe_hit(hit, results, parts, time_budget_s,
                                                            max_states),
        "parts_searched": len(results), "simulated_us": None,
        "sequential_us": proof.sequential_us, "lower_bound_us": proof.lower_us,
        "fallback": proof.note(len(results), len(parts)),
    }
    return replace(seq, policy="ios", options=options, notes=notes)
