"""execute(): run a Schedule on a named executor (STYLE.md R11: a table of names to import paths).

``EXECUTORS`` maps a name to the ``"module:function"`` that runs a schedule and returns a
:class:`~workbench.values.trace.Trace`; ``OUTPUT_RUNNERS`` maps a name to the function that computes
the
graph's output *values* for a schedule (the NumPy reference, the CPU emulator of launch plans,
CuPy), which the common executor test compares.  Both are :class:`~workbench.registry.Registry`
tables: one options check against the function's signature, and each entry's availability
(``EXECUTORS.available("cupy")``) for the app and the tests.  Functions are imported on first use,
so naming a GPU executor imports nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from workbench._checks import check_choice
from workbench.errors import OptionError, ScheduleError
from workbench.registry import Probe, Registry
from workbench.values.schedule import Schedule
from workbench.values.trace import Trace


def _gpu_probe() -> str:
    """Why CuPy cannot run here ("" when it can); ``workbench.executors.gpu`` is imported by name
    here so
    that the engine layer holds no import of the backends layer (it probes CuPy once, cached)."""
    gpu = importlib.import_module("workbench.executors.gpu")
    return "" if gpu.is_available() else str(gpu.unavailable_reason())


_GPU: Probe = _gpu_probe


def _torch_probe() -> str:
    """Why the torch executor cannot run here ("" when torch imports: a CPU build runs on the
    CPU); imported by name, like the GPU probe, to keep the backends out of the engine layer."""
    return str(importlib.import_module("workbench.executors.torch_exec").probe())

EXECUTORS = Registry[str]("executor", error=OptionError, params="after_first")
EXECUTORS.register("simulator", "workbench.simulator.simulate:simulate")
EXECUTORS.register("cupy", "workbench.executors.gpu.executor:run", probe=_GPU)
EXECUTORS.register("torch", "workbench.executors.torch_exec:run", probe=_torch_probe)

OUTPUT_RUNNERS = Registry[str]("output runner", error=OptionError, params="after_first")
OUTPUT_RUNNERS.register("reference", "workbench.executors.execute:reference_outputs")
OUTPUT_RUNNERS.register("emulator", "workbench.executors.gpu.emulator:emulate_schedule")
OUTPUT_RUNNERS.register("cupy", "workbench.executors.gpu.executor:run_outputs", probe=_GPU)
OUTPUT_RUNNERS.register("torch", "workbench.executors.torch_exec:run_outputs", probe=_torch_probe)


def executors() -> list[str]:
    return EXECUTORS.names()


def execute(schedule: Schedule, *, executor: str = "simulator", **options: Any) -> Trace:
    """Run ``schedule`` on ``executor`` (``"simulator"`` anywhere, ``"cupy"`` on a CUDA GPU,
    ``"torch"`` with PyTorch: on a CUDA GPU, or on the CPU in issue order)."""
    name = check_choice(executor, EXECUTORS, "executor")
    if not isinstance(schedule, Schedule):
        raise ScheduleError(f"execute() needs a Schedule, got {type(schedule).__name__}")
    EXECUTORS.check_options(name, options)
    return EXECUTORS.function(name)(schedule, **options)  # type: ignore[no-any-return]


def reference_outputs(schedule: Schedule, *, seed: int = 0,
                      inputs: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
    """The graph outputs of ``schedule`` computed by the NumPy reference, in its issue order.
    Inputs are drawn as every other output runner draws them (:func:`draw_inputs`, He-scaled
    weights), so one ``seed`` means the same inputs for ``reference``, ``emulator`` and
    ``cupy``."""
    from workbench.executors.reference import draw_inputs, outputs_of, run_reference

    given = draw_inputs(schedule.graph, seed, inputs)
    return outputs_of(schedule.graph, run_reference(schedule, given, seed=seed))


def run_outputs(schedule: Schedule, *, runner: str = "reference",
                **options: Any) -> dict[str, np.ndarray]:
    """The graph outputs of ``schedule`` computed by the named output runner."""
    name = check_choice(runner, OUTPUT_RUNNERS, "output runner")
    OUTPUT_RUNNERS.check_options(name, options)
    return OUTPUT_RUNNERS.function(name)(schedule, **options)  # type: ignore[no-any-return]
