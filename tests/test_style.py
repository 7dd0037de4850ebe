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
#: An op family module (``workbench/ops/<family>.py``, one that declares ``KINDS``) reads as one
#: table of its kinds and may be longer (issue 46: sizes follow the content, no file is cut
#: only for a line cap); past this it is two families.
MAX_FAMILY_LINES = 1000


def _limit(path: Path) -> int:
    text = path.read_text(encoding="utf-8")
    family = path.parent.name == "ops" and "\nKINDS = (" in text
    return MAX_FAMILY_LINES if family else MAX_MODULE_LINES


def test_every_module_stays_under_500_lines() -> None:
    """Small modules with one job each (DEVELOPERS.md): a module past the limit is split; an op
    family module may reach :data:`MAX_FAMILY_LINES`."""
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "workbench").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > _limit(p)}
    assert not long, f"modules over their limit ({MAX_MODULE_LINES}; op families " \
                     f"{MAX_FAMILY_LINES}): {long}"
