"""Schedule Workbench: schedule DNN computation graphs onto GPU streams, simulate, compare, look."""

from __future__ import annotations

from workbench.errors import (
    DeviceUnavailable,
    FormatError,
    GraphError,
    MemoryPlanError,
    OptionError,
    ScheduleError,
    WorkbenchError,
)
from workbench.graph import Graph, Op, Tensor
from workbench.schedule import Schedule
from workbench.schedulers import policies, schedule

__version__ = "0.1.0"

__all__ = [
    "DeviceUnavailable", "FormatError", "Graph", "GraphError", "MemoryPlanError", "Op",
    "OptionError", "Schedule", "ScheduleError", "Tensor", "WorkbenchError", "policies", "schedule",
]
