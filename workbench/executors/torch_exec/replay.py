"""A recorded run of a traced program, for the runs after it: each call a closure, each free a
table entry.

:class:`~workbench.executors.torch_exec.calls.CallEvaluator` records its first complete run on
the CPU: for each op in the order it ran, the fx nodes computed (host values and parameters the
op needed first, then its own call, or a fused op's member calls) and the values freed after
each.  :meth:`Plan.of` compiles that record once (:func:`~workbench.executors.torch_exec.thunks.
compile_call` per node); :func:`run_steps` replays it: per step one closure call, one store and
the recorded deletes: no reader counts, no lookup function, no walk over the arguments.  The
same values are computed by the same calls and freed at the same points as in the recorded run,
as long as the ops come in the recorded order (the evaluator checks that op by op).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.executors.torch_exec.thunks import Thunk

#: one call of a recorded run: the fx node, its compiled call, the values freed after it
Step = tuple[str, Thunk, tuple[str, ...]]
#: a recording: per op in the order run, ``(op id, [(fx node computed, [values freed after])])``
Recording = list[tuple[str, list[tuple[str, list[str]]]]]


@dataclass(frozen=True)
class Plan:
    """A recorded run compiled: ``ops`` in the order they ran, ``steps[i]`` what op ``i``
    computes, ``flat`` every step in order (a whole run in one loop)."""

    ops: tuple[str, ...]
    steps: tuple[tuple[Step, ...], ...]
    flat: tuple[Step, ...]

    @staticmethod
    def of(recording: Recording, compile_node: Callable[[str], Thunk]) -> Plan:
        """The plan of ``recording``, ``compile_node(name)`` called once per fx node.
        O(steps)."""
        thunks = {name: compile_node(name) for _, calls in recording for name, _ in calls}
        steps = tuple(tuple((name, thunks[name], tuple(frees)) for name, frees in calls)
                      for _, calls in recording)
        return Plan(tuple(op for op, _ in recording), steps,
                    tuple(step for op_steps in steps for step in op_steps))

    def reader_counts(self, readers: Mapping[str, int], args: Mapping[str, list[str]],
                      ops_done: int) -> dict[str, int]:
        """How many reads of each value are still to come after the first ``ops_done`` ops of
        the plan ran (``readers``: reads in a whole run; ``args``: what each node reads)."""
        left = dict(readers)
        for op_steps in self.steps[:ops_done]:
            for name, _, _ in op_steps:
                for a in args[name]:
                    left[a] -= 1
        return left


def run_steps(steps: tuple[Step, ...], env: dict[str, Any],
              release: Callable[[str, Any], None] | None) -> None:
    """Compute ``steps`` in order into ``env``, deleting what each frees after it
    (``release(name, value)`` told of each delete when given)."""
    for name, thunk, frees in steps:
        env[name] = thunk(env)
        for f in frees:
            dropped = env.pop(f)
            if release is not None:
                release(f, dropped)


__all__ = ["Plan", "Recording", "Step", "run_steps"]
