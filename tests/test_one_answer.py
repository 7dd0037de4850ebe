"""One answer wherever a newcomer starts (issue 45): the README's Python snippet, the app's default
Run, notebook 00 and README command 1 name the same winner with the same speedup on the same
graph (fused Inception V3 at batch 1 on the h100, the default graph mode)."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench.orchestration.comparison import Comparison

ROOT = Path(__file__).resolve().parents[1]


@cache
def _snippet() -> Comparison:
    """The README's snippet, as written there."""
    g = wb.models.inception_v3(batch=1)
    return wb.compare(g, device="h100", show_progress=False)


def _verdict(c: Comparison) -> tuple[str, str]:
    speed = float(c.table.set_index("policy").loc[c.best, "speedup"])
    return str(c.best), f"{speed:.2f}x"


def test_the_readme_names_the_graph_and_call_this_test_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert ".venv/bin/workbench compare --model inception_v3 --device h100 -o report.html" in readme
    assert "g = wb.models.inception_v3(batch=1)" in readme
    assert 'cmp = wb.compare(g, device="h100")' in readme


def test_readme_command_1_names_the_snippets_winner(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "workbench.cli", "compare", "--model",
                          "inception_v3", "--device", "h100", "-o", str(tmp_path / "r.html"),
                          "--no-progress"], capture_output=True, text=True, timeout=600,
                         check=True).stdout
    best, speed = _verdict(_snippet())
    assert f"best: {best} ({speed} over serial" in out, out[-800:]
    assert "119 ops" in out and "(graph mode)" in out


def test_the_apps_default_run_names_the_snippets_winner() -> None:
    pytest.importorskip("ipywidgets")
    from workbench.ui import Workbench

    app = Workbench()
    assert app.model.value == "inception_v3"          # the default graph, default options
    app.run(wait=True)
    c = app.comparison
    assert c is not None, app.error.value
    assert len(c.graph) == len(_snippet().graph) and c.mode == "graph"
    assert _verdict(c) == _verdict(_snippet())
    assert list(c.table["policy"]) == list(_snippet().table["policy"])


def test_notebook_00_names_the_snippets_winner(executed_notebook: Callable[[Path], Any]) -> None:
    nb = executed_notebook(ROOT / "notebooks" / "00_quickstart.ipynb")
    shown = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            shown.append(html.unescape(str(data.get("text/html", ""))))
            shown.append(str(output.get("text", "")))
    text = "\n".join(shown)
    c = _snippet()
    best, speed = _verdict(c)
    assert html.unescape(c.best_text) in text
    assert re.search(rf"\b{best}\b.*{speed[:-1]}×", text, re.S)
    assert f"- What bounds {best}" in text          # the notebook's cmp.why cell
