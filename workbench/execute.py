"""execute(): run a Schedule on a named executor (STYLE.md R11: a table of names to import
paths)."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from workbench._checks import check_choice, check_keys
from workbench.errors import ScheduleError
from workbench.schedule import Schedule
from workbench.trace import Trace

EXECUTORS = {
    "simulator": "workbench.simulate:simulate",
    "cupy": "workbench.gpu.executor:run",
}


def executors() -> list[str]:
    return list(EXECUTORS)


def execute(schedule: Schedule, *, executor: str = "simulator", **options: Any) -> Trace:
    """Run ``schedule`` on ``executor`` (``"simulator"`` anywhere, ``"cupy"`` on a CUDA GPU)."""
    target = EXECUTORS[check_choice(executor, EXECUTORS, "executor")]
    if not isinstance(schedule, Schedule):
        raise ScheduleError(f"execute() needs a Schedule, got {type(schedule).__name__}")
    module, _, name = target.partition(":")
    fn = getattr(importlib.import_module(module), name)
    params = inspect.signature(fn).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        known = [k for k, p in params.items() if p.kind is not p.POSITIONAL_ONLY][1:]
        check_keys(options, known, f"executor {executor!r}", what="option")
    return fn(schedule, **options)
