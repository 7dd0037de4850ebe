"""The old import paths of the modules that moved into packages (issue 26), kept working.

``MOVES`` maps each old dotted path to its new one (``scripts/relayout.py`` moves the files and
rewrites the imports from the same table).  :func:`install` puts a meta-path finder first on
``sys.meta_path`` that answers an old name (``workbench.costs``, ``workbench.gpu.kernels``) with
the module already imported under the new name: the *same* module object, so
``monkeypatch.setattr("workbench.costs.X", ...)`` patches the code that runs.  Modules that the
top package has already imported are registered at once by :func:`register_loaded`.  Looking a
name up is a dict lookup per dotted prefix, O(depth).  Base layer: imports only the standard
library.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

MOVES: dict[str, str] = {
    # the graph values
    **{f"workbench.{m}": f"workbench.values.{m}" for m in (
        "graph", "graph_items", "graph_nx", "ops", "op_reference", "op_torch", "shape_costs",
        "control_checks", "schedule", "clocks", "trace")},
    # the simulator: its cost model, the host and engine, the fidelity tooling
    **{f"workbench.{m}": f"workbench.simulator.cost_model.{m}" for m in (
        "costs", "kernel_model", "launches", "devices", "calibration", "device_profile")},
    "workbench.simulate": "workbench.simulator.simulate",
    "workbench.sim_engine": "workbench.simulator.engine",
    "workbench.sim_host": "workbench.simulator.host",
    "workbench.fidelity": "workbench.simulator.fidelity",
    # the executors
    "workbench.execute": "workbench.executors.execute",
    "workbench.reference": "workbench.executors.reference",
    "workbench.gpu": "workbench.executors.gpu",
    "workbench.torch_exec": "workbench.executors.torch_exec",
    "workbench.device_calibration": "workbench.executors.device_calibration",
    "workbench.device_probes": "workbench.executors.device_probes",
    # orchestration
    **{f"workbench.{m}": f"workbench.orchestration.{m}" for m in (
        "compare", "compare_measured", "sweep", "optimum", "pipelines", "report")},
    # the command line
    "workbench.cli_profiles": "workbench.cli.profiles",
}


def new_name(old: str) -> str | None:
    """The new dotted name of an old one (a moved module or anything under a moved package),
    or None when ``old`` did not move."""
    head, tail = old, ""
    while head:
        if head in MOVES:
            return MOVES[head] + tail
        head, _, last = head.rpartition(".")
        tail = f".{last}{tail}"
    return None


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target
        self.real: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self.real = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.real  # the import machinery stamped the alias spec on it


class AliasFinder(importlib.abc.MetaPathFinder):
    """Finds an old workbench module name and hands back the module under its new name."""

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("workbench."):
            return None
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(new))


def install() -> None:
    """Put the alias finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder())


def register_loaded(package: ModuleType) -> None:
    """Register the old names of the moved modules that are imported already, as attributes of
    the top package too unless that name is taken (``wb.compare`` stays the function)."""
    for old, new in MOVES.items():
        module = sys.modules.get(new)
        if module is None or old in sys.modules:
            continue
        sys.modules[old] = module
        leaf = old.rpartition(".")[2]
        if "." not in old.removeprefix("workbench.") and not hasattr(package, leaf):
            setattr(package, leaf, module)
