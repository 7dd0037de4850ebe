"""The core imports no plotting, widget or GPU library (STYLE.md R9)."""

from __future__ import annotations

import subprocess
import sys


def test_core_import_is_light() -> None:
    code = ("import sys, workbench as wb; g = wb.models.inception_v3(fused=False); "
            "t = wb.simulate(wb.schedule(g, 'nnc')); "
            "print(sorted({'plotly', 'ipywidgets', 'graphviz', 'cupy', 'matplotlib', 'torch'}"
            " & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
