"""execute(): run a Schedule on a named executor (STYLE.md R11: a table of names to import
paths)."""

from __future__ import annotations

import importlib
from typing import Any

from workbench.errors import OptionError
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
    try:
        target = EXECUTORS[executor]
    except (KeyError, TypeError):
        known = ", ".join(EXECUTORS)
        raise OptionError(f"unknown executor {executor!r} (known: {known})") from None
    module, _, name = target.partition(":")
    fn = getattr(importlib.import_module(module), name)
    return fn(schedule, **options)
