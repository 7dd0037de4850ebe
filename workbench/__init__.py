"""Schedule Workbench: schedule DNN computation graphs onto GPU streams, simulate, compare, look.

>>> import workbench as wb
>>> g = wb.Graph.from_edges([("n1", "n2"), ("n1", "n3"), ("n2", "n4"), ("n3", "n4")])
>>> wb.schedule(g, "nnc").streams
{0: ('n1', 'n2', 'n4'), 1: ('n3',)}

The modules live in packages named for their jobs (``values``, ``simulator``, ``executors``,
``orchestration``; see docs/architecture.md).  Their old paths (``costs``, ``gpu`` ... directly
under ``workbench``) still import: :mod:`workbench._aliases` maps each to the same module object
under its new name.
"""

from __future__ import annotations

import sys

from workbench import _aliases, memory, models, passes
from workbench._version import __version__ as __version__
from workbench.errors import (
    DeviceUnavailable,
    FormatError,
    GraphError,
    MemoryPlanError,
    OptionError,
    OutputError,
    ScheduleError,
    WorkbenchError,
)
from workbench.executors.device_calibration import calibrate_device
from workbench.executors.execute import execute
from workbench.io import load, save
from workbench.memory import plan_memory
from workbench.orchestration.compare import Comparison, compare
from workbench.orchestration.sweep import sweep
from workbench.schedulers import policies, schedule
from workbench.simulator.cost_model.costs import DEVICES, DeviceSpec, devices
from workbench.simulator.cost_model.device_profile import (
    DeviceProfile,
    load_profile,
    save_profile,
)
from workbench.simulator.simulate import simulate
from workbench.values.graph import Graph, Op, Tensor
from workbench.values.schedule import Schedule
from workbench.values.trace import Trace

__all__ = [
    "DEVICES", "Comparison", "DeviceProfile", "DeviceSpec", "DeviceUnavailable", "FormatError",
    "Graph", "GraphError", "MemoryPlanError", "Op", "OptionError", "OutputError", "Schedule",
    "ScheduleError", "Tensor", "Trace", "WorkbenchError", "calibrate_device", "compare",
    "devices", "execute", "load", "load_profile", "memory", "models", "passes", "plan_memory",
    "policies", "save", "save_profile", "schedule", "simulate", "sweep",
]

_aliases.install()
_aliases.register_loaded(sys.modules[__name__])
