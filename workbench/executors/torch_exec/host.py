"""The CPU run of an issue program: ops one at a time in issue order, timed on the host.

Without CUDA there are no streams: the CPU computes each op in ``issue_order`` (one legal
serialisation of the schedule; every dependency points forward in it), timed with
``time.perf_counter_ns`` around each op.  Syncs and barriers order nothing more on one CPU, so
they cost nothing here; the streams of the trace are the schedule's, for the views.  Warm-up runs
first, then ``repeats`` timed runs; the per-op rows come from the run whose makespan is the lower
median (so ``trace.makespan`` is a real run's), the spread from all of them; a ``deadline``
stops the timed runs early.  O(repeats · V).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from workbench.executors.torch_exec.program import Program
from workbench.executors.torch_exec.values import EvaluatorLike as Evaluator


@dataclass
class Timing:
    """What a timed run measured: one makespan per repeat, and the per-op timeline (µs from the
    run's start) of one run, with the host's issue times; ``timeline`` names how it was timed."""

    spans_us: list[float]
    start_us: list[float]
    end_us: list[float]
    issue_us: list[float]
    timeline: str
    host_us: list[float] = field(default_factory=list)
    notes: dict[str, object] = field(default_factory=dict)


def run_once(program: Program, evaluator: Evaluator) -> None:
    """One untimed run from fresh initial values."""
    evaluator.start()
    evaluator.run_ops(program.ops)


def run_host(program: Program, evaluator: Evaluator, *, warmup: int, repeats: int,
             deadline: float | None = None) -> Timing:
    """Warm up, then time ``repeats`` runs op by op with ``perf_counter_ns`` (no further run
    starts once ``deadline``, a ``time.perf_counter()`` value, has passed; at least one runs)."""
    for _ in range(warmup):
        run_once(program, evaluator)
    runs: list[tuple[list[float], list[float], float]] = []
    clock = time.perf_counter_ns
    for k in range(repeats):
        if k and deadline is not None and time.perf_counter() > deadline:
            break
        evaluator.start()
        starts, ends = [], []
        run_op = evaluator.run_op
        t0 = clock()
        for step in program.steps:
            starts.append(clock())
            run_op(step.op)
            ends.append(clock())
        end_us = [(e - t0) / 1e3 for e in ends]
        runs.append(([(s - t0) / 1e3 for s in starts], end_us, max(end_us, default=0.0)))
    spans = [r[2] for r in runs]
    pick = sorted(range(len(runs)), key=lambda k: (runs[k][2], k))
    start, end, _ = runs[pick[(len(pick) - 1) // 2]]
    notes: dict[str, object] = ({"stopped_at_deadline": True, "repeats_timed": len(runs)}
                                if len(runs) < repeats else {})
    return Timing(spans, start, end, list(start), "perf_counter", host_us=spans, notes=notes)


__all__ = ["Timing", "run_host", "run_once"]
