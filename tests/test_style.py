"""The house style's strict tools (STYLE.md R12): ruff and mypy run with the tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    path = Path(sys.executable).with_name(name)
    found = str(path) if path.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


def test_ruff_is_clean() -> None:
    run = subprocess.run([_tool("ruff"), "check", "workbench", "tests", "benchmarks"], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:]


def test_mypy_is_clean() -> None:
    run = subprocess.run([_tool("mypy"), "workbench"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:]


MAX_MODULE_LINES = 500


def test_every_module_stays_under_500_lines() -> None:
    """Small modules with one job each (DEVELOPERS.md): a module past the limit is split."""
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "workbench").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"
