"""IOS's stage oracle measured on the device: each candidate stage run with PyTorch's kernels.

IOS's own optimizer times every candidate stage on the GPU (Ding et al., MLSys 2021, §4; notes
ios.md §4.1) instead of predicting it.  :class:`TorchStageOracle` does the same through the torch
executor (``workbench.execute``'s ``"torch"`` entry, imported by name on first use so that the
schedulers import no backend): the stage's ops become a small graph of their own
(:meth:`Graph.subgraph`: tensors made outside the stage become its inputs), group ``j`` runs on
stream ``j`` in IOS's issue order, and the stage is timed with ``warmup`` and ``repeats`` runs
(median; on CUDA captured once as a CUDA graph, ``mode="graph"``; without CUDA the executor's
CPU path, timed with ``perf_counter``).  Stages are cached under :class:`StageOracle`'s
structural signature, so the repeated blocks of Inception V3 or NASNet are timed once.  IOS's
budgets hold as they do for the simulator: every stage is timed inside the search, so measuring
counts against ``time_budget_s`` and ``max_states``; ``max_timed`` also caps the stages timed.
``timed`` counts measurements, ``reused`` cache hits, ``timing_s`` the seconds spent measuring.
After the search the IOS schedule, the sequential one and IOS's greedy one are timed as whole
schedules and the fastest is kept (:meth:`TorchStageOracle.keep_fastest`, the measured analogue
of the simulator oracle's fallback to the sequential schedule).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Hashable, Sequence
from typing import Any

from workbench.errors import DeviceUnavailable, OptionError
from workbench.schedulers.ios_oracle import MAX_ENTRIES, StageOracle
from workbench.values.graph import Graph, OpId

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")


def torch_available() -> str:
    """Why the torch executor cannot run here ("" when it can)."""
    try:
        importlib.import_module("torch")
    except Exception as exc:  # ImportError, or a broken install
        return f"PyTorch is not installed ({type(exc).__name__})"
    try:
        execute = importlib.import_module("workbench.executors.execute")
        execute.EXECUTORS.get("torch")
    except Exception as exc:
        return f"the torch executor is not available ({exc})"
    return ""


def _cuda_available() -> bool:
    torch = importlib.import_module("torch")
    return bool(torch.cuda.is_available())


class TorchStageOracle(StageOracle):
    """``oracle(groups) -> µs``: the measured latency of one stage, group ``j`` on stream ``j``.

    ``mode``: ``"graph"`` (CUDA graph replay; the default on CUDA) or ``"eager"`` (the default
    without CUDA); ``precision``: the torch executor's precision; ``warmup``/``repeats``: runs
    before and for the median; ``torch_device``: the executor's ``device`` (``None``: CUDA when
    present, else the CPU); ``max_timed``: most stages to measure (then a one-line
    OptionError, which IOS's search turns into its greedy finish only through its own budgets,
    so set ``time_budget_s`` or ``max_states`` to bound a search); ``floor_us``: subtracted from
    every measurement (clamped at 0), e.g. the ``graph_floor_us`` probe of
    :mod:`workbench.executors.device_probes`: each stage timed alone pays a graph launch that the
    whole
    schedule pays once.  ``executor`` names the ``workbench.execute`` entry that times a stage
    (tests pass a fake).
    """

    def __init__(self, graph: Graph, *, mode: str | None = None, precision: str = "fp32",
                 warmup: int = 2, repeats: int = 5, torch_device: Any = None,
                 max_timed: int | None = None, executor: str = "torch", seed: int = 0,
                 floor_us: float = 0.0, max_entries: int = MAX_ENTRIES) -> None:
        super().__init__(graph, max_entries=max_entries, sync="barrier")
        if executor == "torch":
            why = torch_available()
            if why:
                raise DeviceUnavailable(f"ios oracle 'torch' needs PyTorch: {why}; use "
                                        f"oracle='simulator'")
        if mode is None:
            mode = "graph" if executor == "torch" and _cuda_available() else "eager"
        if mode not in ("eager", "graph"):
            raise OptionError(f"ios torch oracle mode must be 'eager' or 'graph', got {mode!r}")
        if precision not in PRECISIONS:
            raise OptionError(f"ios torch oracle precision must be one of "
                              f"{', '.join(PRECISIONS)}, got {precision!r}")
        for name, value, low in (("warmup", warmup, 0), ("repeats", repeats, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise OptionError(f"ios torch oracle {name} must be an integer >= {low}, "
                                  f"got {value!r}")
        self.mode, self.precision, self.executor = mode, precision, executor
        self.warmup, self.repeats, self.torch_device, self.seed = warmup, repeats, \
            torch_device, seed
        if isinstance(floor_us, bool) or not isinstance(floor_us, (int, float)) \
                or not 0 <= floor_us < float("inf"):
            raise OptionError(f"ios torch oracle floor_us must be a non-negative number of "
                              f"microseconds, got {floor_us!r}")
        self.max_timed, self.floor_us = max_timed, float(floor_us)
        self.timing_s = 0.0

    @property
    def timed(self) -> int:
        """Stages measured on the device (``simulated`` is the name IOS's search counts)."""
        return self.simulated

    def __call__(self, groups: Sequence[Sequence[OpId]]) -> float:
        key: Hashable = self.signature(groups)
        hit = self.cache.get(key)
        if hit is not None:
            self.reused += 1
            return hit
        if self.max_timed is not None and self.simulated >= self.max_timed:
            raise OptionError(f"ios torch oracle: max_timed={self.max_timed} stages measured; "
                              f"raise it or bound the search with time_budget_s/max_states")
        t0 = time.perf_counter()
        value = self.measure(groups)
        self.timing_s += time.perf_counter() - t0
        if len(self.cache) >= self.max_entries:
            self.cache.clear()
        self.cache[key] = value
        self.simulated += 1
        return value

    def measure(self, groups: Sequence[Sequence[OpId]]) -> float:
        """Run the stage alone with the executor; its median makespan in µs."""
        from workbench.executors.execute import execute
        from workbench.simulator.cost_model.calibration import measured_makespan_us

        trace = execute(self.stage_schedule(groups), executor=self.executor, mode=self.mode,
                        precision=self.precision, warmup=self.warmup, repeats=self.repeats,
                        seed=self.seed, device=self.torch_device)
        return max(0.0, float(measured_makespan_us(trace)) - self.floor_us)

    def time_schedule(self, schedule: Any) -> float:
        """A whole schedule's median makespan (µs) with this oracle's executor settings."""
        from workbench.executors.execute import execute
        from workbench.simulator.cost_model.calibration import measured_makespan_us

        t0 = time.perf_counter()
        trace = execute(schedule, executor=self.executor, mode=self.mode,
                        precision=self.precision, warmup=self.warmup, repeats=self.repeats,
                        seed=self.seed, device=self.torch_device)
        self.timing_s += time.perf_counter() - t0
        return float(measured_makespan_us(trace))

    def keep_fastest(self, schedule: Any) -> Any:
        """The measured analogue of the simulator oracle's fallback: the IOS schedule, unless
        the sequential schedule or IOS's greedy one measures faster as a whole schedule (stage
        times add up to the whole run only roughly: a budget can run out, barriers cost what a
        stage alone does not show); ``notes`` keep all three times and say which was kept."""
        from dataclasses import replace

        from workbench.schedulers.ios_greedy import schedule_ios_greedy
        from workbench.schedulers.serial import schedule_serial

        graph = schedule.graph
        rivals = {"sequential": schedule_serial(graph), "ios_greedy": schedule_ios_greedy(graph)}
        times = {"ios": self.time_schedule(schedule)}
        times.update({name: self.time_schedule(s) for name, s in rivals.items()})
        notes: dict[str, Any] = {**schedule.notes, "measured_us": times}
        best = min(times, key=lambda k: (times[k], k != "ios"))
        if best == "ios":
            return replace(schedule, notes=notes)
        kept = rivals[best]
        notes["fallback"] = (f"{best}: it measures {times[best]:.1f} µs, the IOS schedule "
                             f"{times['ios']:.1f} µs")
        notes["stages"] = kept.notes.get("stages", [[[op]] for op in kept.issue_order])
        notes["n_stages"] = len(notes["stages"])
        return replace(kept, policy="ios", options=schedule.options, notes=notes)

    def stage_schedule(self, groups: Sequence[Sequence[OpId]]) -> Any:
        """The stage as a schedule of its own graph: group ``j`` on stream ``j``, issued group
        by group, syncs only where a group reads another's output (never, within a stage)."""
        from workbench.values.schedule import build_schedule

        ops = [op for g in groups for op in g]
        sub = self.graph.subgraph(ops, name=f"{self.graph.name}[stage]")
        stream_of = {op: j for j, g in enumerate(groups) for op in g}
        return build_schedule(sub, "ios_stage", stream_of, ops)


def make_torch_oracle(graph: Graph, options: dict[str, Any]) -> TorchStageOracle:
    """The oracle ``schedule_ios(..., oracle="torch", oracle_options=...)`` uses."""
    known = {"mode", "precision", "warmup", "repeats", "torch_device", "max_timed", "executor",
             "seed", "floor_us"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise OptionError(f"ios oracle_options has unknown key {unknown[0]!r} "
                          f"(known: {', '.join(sorted(known))})")
    return TorchStageOracle(graph, **options)


__all__ = ["TorchStageOracle", "make_torch_oracle", "torch_available"]
