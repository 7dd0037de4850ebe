"""Schedule Workbench: schedule DNN computation graphs onto GPU streams, simulate, compare, look.

>>> import workbench as wb
>>> g = wb.Graph.from_edges([("n1", "n2"), ("n1", "n3"), ("n2", "n4"), ("n3", "n4")])
>>> wb.schedule(g, "nnc").streams
{0: ('n1', 'n2', 'n4'), 1: ('n3',)}

The public names are imported on first use (PEP 562 ``__getattr__``), so ``import workbench``
and the ``workbench`` command start without loading pandas, numpy or the schedulers: ``workbench
--help`` and the listings start in well under half a second.

The modules live in packages named for their jobs (``values``, ``simulator``, ``executors``,
``orchestration``; see docs/architecture.md); each has one import path, the real one.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import TYPE_CHECKING, Any

from workbench._version import __version__ as __version__

#: Public name -> the module that defines it (a submodule itself when the name is one).
_ORCH, _COST = "workbench.orchestration", "workbench.simulator.cost_model"
_LAZY = {
    "memory": "workbench.memory", "models": "workbench.models", "passes": "workbench.passes",
    "Comparison": f"{_ORCH}.compare", "compare": f"{_ORCH}.compare",
    "sweep": f"{_ORCH}.sweep",
    "DEVICES": f"{_COST}.costs", "DeviceSpec": f"{_COST}.costs", "devices": f"{_COST}.costs",
    "DeviceProfile": f"{_COST}.device_profile", "load_profile": f"{_COST}.device_profile",
    "save_profile": f"{_COST}.device_profile",
    "calibrate_device": "workbench.executors.device_calibration",
    "accelerate": f"{_ORCH}.accelerate",
    "execute": "workbench.executors.execute",
    **{name: "workbench.errors" for name in (
        "DeviceUnavailable", "FormatError", "GraphError", "MemoryPlanError", "OptionError",
        "OutputError", "ScheduleError", "WorkbenchError")},
    **{name: "workbench.values.graph" for name in ("Graph", "Op", "Tensor")},
    "Schedule": "workbench.values.schedule", "Trace": "workbench.values.trace",
    "load": "workbench.io", "save": "workbench.io",
    "plan_memory": "workbench.memory",
    "policies": "workbench.schedulers", "schedule": "workbench.schedulers",
    "simulate": "workbench.simulator.simulate",
    "follow_symlinks": "workbench._atomic",
}

#: Public names that are modules deeper down (``wb.costs.get_device("h100")``).
_SUBMODULES = {"costs": f"{_COST}.costs"}

__all__ = [
    "DEVICES", "Comparison", "DeviceProfile", "DeviceSpec", "DeviceUnavailable", "FormatError",
    "Graph", "GraphError", "MemoryPlanError", "Op", "OptionError", "OutputError", "Schedule",
    "ScheduleError", "Tensor", "Trace", "WorkbenchError", "accelerate", "calibrate_device",
    "compare",
    "devices", "execute", "follow_symlinks", "load", "load_profile", "memory", "models",
    "passes", "plan_memory",
    "policies", "save", "save_profile", "schedule", "simulate", "sweep",
]


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it in the package namespace (PEP 562)."""
    if name in _SUBMODULES:
        globals()[name] = importlib.import_module(_SUBMODULES[name])
        return globals()[name]
    where = _LAZY.get(name)
    if where is None:   # a submodule (``wb.io``, ``wb.viz`` ...), as the eager imports gave
        if name.startswith("_") or importlib.util.find_spec(f"workbench.{name}") is None:
            raise AttributeError(f"module 'workbench' has no attribute {name!r}")
        where = f"workbench.{name}"
    module = importlib.import_module(where)
    value = module if where == f"workbench.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _shadowing(name: str) -> property:
    """``workbench.<name>`` as the public function although a submodule has the same name: the
    import system sets the package attribute to the submodule when it is first imported; this
    property keeps the function (as the eager imports did) and ignores that assignment (any
    other assignment, e.g. a monkeypatch, is kept)."""

    key = f"_set_{name}"

    def get(module: types.ModuleType) -> Any:
        if key in module.__dict__:   # assigned by a user (e.g. a test's monkeypatch)
            return module.__dict__[key]
        return getattr(importlib.import_module(_LAZY[name]), name)

    def assign(module: types.ModuleType, value: Any) -> None:
        if not isinstance(value, types.ModuleType):   # the import system sets the submodule
            module.__dict__[key] = value

    return property(get, assign)


class _Package(types.ModuleType):
    """The package's module type: public functions named like a submodule stay functions."""

    accelerate = _shadowing("accelerate")
    compare = _shadowing("compare")
    devices = _shadowing("devices")
    execute = _shadowing("execute")
    schedule = _shadowing("schedule")
    simulate = _shadowing("simulate")
    sweep = _shadowing("sweep")

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Pickled by name, as plain modules are (cloudpickle: lambdas that use ``wb``)."""
        return importlib.import_module, (self.__name__,)


sys.modules[__name__].__class__ = _Package

# torch.compile(model, backend="workbench") in either import order, installed or not: registered
# now if dynamo's registry is loaded, else right after it is (standard library only, no torch)
importlib.import_module("workbench.orchestration.backend_hook").install()


if TYPE_CHECKING:  # the names as mypy and editors see them
    from workbench import memory, models, passes
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
    from workbench.orchestration.accelerate import accelerate
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
