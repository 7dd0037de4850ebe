"""The package layout of issue 26: old import paths, the view registry, one device resolution."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import workbench as wb
from workbench import _aliases
from workbench.simulator.cost_model import target
from workbench.values.views import VIEWS, view

ROOT = Path(__file__).resolve().parents[1]


def test_old_paths_are_the_same_modules() -> None:
    for old, new in _aliases.MOVES.items():
        assert importlib.import_module(old) is importlib.import_module(new), old
    # under a moved package, and the spec still names the real module
    kernels = importlib.import_module("workbench.gpu.kernels")
    assert kernels is importlib.import_module("workbench.executors.gpu.kernels")
    assert kernels.__spec__.name == "workbench.executors.gpu.kernels"
    assert callable(wb.compare) and callable(wb.simulate) and callable(wb.schedule)


def test_old_paths_in_a_fresh_interpreter() -> None:
    """``import workbench.compare`` first thing must not shadow ``wb.compare`` (the function),
    and monkeypatching through an old path patches the code that runs."""
    code = ("import workbench.compare, workbench.costs as c, workbench as wb\n"
            "import workbench.simulator.cost_model.costs as n\n"
            "from workbench.gpu import kernels\n"
            "assert callable(wb.compare) and c is n, (wb.compare, c, n)\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


def test_old_module_paths_are_gone_from_the_root() -> None:
    for old in _aliases.MOVES:
        rel = Path(*old.split("."))
        assert not (ROOT / rel).with_suffix(".py").exists() and not (ROOT / rel).is_dir(), old


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


def test_relayout_has_nothing_left_to_do() -> None:
    """``scripts/relayout.py`` is idempotent and the tree uses only the new paths: a dry run
    finds nothing to move or rewrite (an import of an old path written since fails here)."""
    out = subprocess.run([sys.executable, "scripts/relayout.py", "--dry-run"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == \
        "relayout: 0 moves, 0 files rewritten (dry run)", out.stdout[-2000:]
