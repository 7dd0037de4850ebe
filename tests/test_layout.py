"""The package layout of issue 26: one import path per module, the view registry, one device
resolution."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

import workbench as wb
from workbench.simulator.cost_model import target
from workbench.values.views import VIEWS, view

ROOT = Path(__file__).resolve().parents[1]


#: The flat paths the modules had before issue 26 moved them into packages; none imports now
#: (``workbench.ops``, once the flat op table, is the op-table package of issue 46).
OLD_PATHS = (
    "calibration", "cli_profiles", "clocks", "compare_measured", "control_checks", "costs",
    "device_calibration", "device_probes", "device_profile", "devices", "fidelity", "gpu",
    "graph", "graph_items", "graph_nx", "kernel_model", "launches", "op_reference", "op_torch",
    "optimum", "pipelines", "reference", "report", "shape_costs", "sim_engine",
    "sim_host", "sweep", "torch_exec")


def test_old_paths_do_not_import() -> None:
    """One import path per module: no alias finder keeps the pre-package paths alive, and no
    file or folder sits at one of them."""
    hook = "workbench.orchestration.backend_hook"  # registers the torch.compile backend, once
    assert not any(type(f).__module__.startswith("workbench") and type(f).__module__ != hook
                   for f in sys.meta_path)
    for name in OLD_PATHS:
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"workbench.{name}")
        assert not (ROOT / "workbench" / f"{name}.py").exists(), name
        assert not (ROOT / "workbench" / name).is_dir(), name
    assert callable(wb.compare) and callable(wb.simulate) and callable(wb.schedule)


def test_packages_say_what_they_are_for() -> None:
    for init in sorted((ROOT / "workbench").glob("*/__init__.py")):
        doc = importlib.import_module(f"workbench.{init.parent.name}").__doc__ or ""
        assert len(doc.split()) >= 8, f"{init}: the package's docstring says too little"
        assert "may import" in doc or "imports nothing" in doc, \
            f"{init}: the docstring must say what the package may import"


def test_views_come_from_the_registry() -> None:
    g = wb.Graph.from_edges([("a", "b")])
    html = g._repr_html_()
    assert "<svg" in html or "<div" in html
    assert view("graph_html") is VIEWS.get("graph_html")
    assert view("report") is importlib.import_module("workbench.orchestration.report").write


def test_compare_resolves_the_device_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    real = target._resolve

    def counting(device: object, precision: str, model: object) -> target.DeviceTarget:
        calls.append(device)
        return real(device, precision, model)  # type: ignore[arg-type]

    monkeypatch.setattr(target, "_resolve", counting)
    g = wb.Graph.from_edges([("n1", "n2"), ("n1", "n3"), ("n2", "n4"), ("n3", "n4")])
    c = wb.compare(g, device="h100", policies=["nnc", "gpto", "critical_path", "ios"],
                   show_progress=False)
    assert c.device == "h100" and len(c.table) >= 4
    assert calls == ["h100"], f"the device was resolved {len(calls)} times: {calls}"


def test_a_target_is_not_resolved_again(monkeypatch: pytest.MonkeyPatch) -> None:
    t = target.resolve_device("h100")
    monkeypatch.setattr(target, "_resolve", lambda *a: pytest.fail("resolved again"))
    assert target.resolve_device(t) is t
    assert wb.simulate(wb.schedule(wb.Graph.from_edges([("a", "b")]), "serial"),
                       device=t).makespan > 0
    with pytest.raises(wb.OptionError, match="precision"):
        target.resolve_device(t, precision="fp8x")


def test_every_view_the_core_asks_for_is_registered() -> None:
    import re

    asked = {m for f in (ROOT / "workbench").rglob("*.py")
             for m in re.findall(r'\bview\("(\w+)"\)', f.read_text(encoding="utf-8"))}
    assert {"graph_html", "trace_html", "comparison_html", "report"} <= asked
    for name in sorted(asked):
        assert callable(view(name)), name
