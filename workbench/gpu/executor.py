"""CuPy multi-stream executor (issue: real GPU execution).  CuPy is imported inside functions."""

from __future__ import annotations

from typing import Any

from workbench.errors import DeviceUnavailable
from workbench.gpu import is_available, unavailable_reason
from workbench.schedule import Schedule
from workbench.trace import Trace


def run(schedule: Schedule, **options: Any) -> Trace:
    """Execute ``schedule`` on the GPU.  Without CuPy and a CUDA device: a one-line error."""
    if not is_available():
        raise DeviceUnavailable(f"executor 'cupy' needs CuPy and a CUDA GPU: {unavailable_reason()}; "
                                f"use executor='simulator'")
    raise DeviceUnavailable("executor 'cupy' is not built yet in this version; "
                            "use executor='simulator'")
