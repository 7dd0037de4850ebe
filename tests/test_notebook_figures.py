"""Figures returned by the viz functions render in nbconvert HTML without the user choosing a
plotly renderer: a notebook that never touches ``plotly.io`` is executed with nbclient and
exported with nbconvert, and every figure's div and its ``Plotly.newPlot`` call are in the page,
with plotly.js inlined once (the export works offline).

Skipped without nbformat, nbclient, nbconvert or a ``python3`` kernel.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLOTLY_MIME = "application/vnd.plotly.v1+json"
CELLS = [
    "import workbench as wb\n"
    "g = wb.models.build('nnc_diamond')\n"
    "c = wb.compare(g, ['nnc'], show_progress=False)\n"
    "c.timelines()",
    "from workbench import viz\nviz.timeline(c.traces['nnc'])",
    "viz.memory_curve(c.traces)",
    "import plotly.io as pio\npio.renderers.default",
]


def test_importing_viz_leaves_plotlys_renderer_alone() -> None:
    """A fresh interpreter that looks like a kernel (plotly's kernel default set before the
    import): importing ``workbench.viz`` and building a figure changes no renderer setting."""
    code = ("import plotly.io as pio; pio.renderers.default = 'plotly_mimetype'; "
            "import workbench as wb, workbench.viz as v; "
            "v.timeline(wb.simulate(wb.schedule(wb.models.build('nnc_diamond'), 'nnc'))); "
            "print(pio.renderers.default)")
    env = {k: val for k, val in os.environ.items() if k != "PLOTLY_RENDERER"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True, timeout=120).stdout
    assert out.strip().splitlines()[-1] == "plotly_mimetype"


def test_figures_build_their_own_bundle_unless_a_renderer_was_chosen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pio = pytest.importorskip("plotly.io")
    import workbench as wb
    from workbench import viz

    monkeypatch.delenv("PLOTLY_RENDERER", raising=False)
    fig = viz.timeline(wb.simulate(wb.schedule(wb.models.build("nnc_diamond"), "nnc")))
    assert isinstance(fig, viz.NotebookFigure)
    before = pio.renderers.default
    try:
        pio.renderers.default = "plotly_mimetype"   # what plotly picks inside a Jupyter kernel
        bundle = fig._repr_mimebundle_()
        assert PLOTLY_MIME in bundle and "plotly-graph-div" in bundle["text/html"]
        pio.renderers.default = "json"              # the user's (or plotly's) choice is kept
        assert set(fig._repr_mimebundle_()) == {"application/json"}
        assert pio.renderers.default == "json"
        pio.renderers.default = "plotly_mimetype"
        monkeypatch.setenv("PLOTLY_RENDERER", "plotly_mimetype")  # chosen on purpose
        assert "text/html" not in fig._repr_mimebundle_()
    finally:
        pio.renderers.default = before


def test_returned_figures_survive_nbconvert_html(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nbconvert = pytest.importorskip("nbconvert")
    pytest.importorskip("ipykernel")
    # the kernel imports this checkout's workbench; no renderer is chosen by anyone
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    monkeypatch.delenv("PLOTLY_RENDERER", raising=False)
    monkeypatch.setenv("WORKBENCH_PROGRESS", "0")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()

    outputs = [o for c in nb.cells for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    figures = [o for o in outputs if PLOTLY_MIME in o.get("data", {})]
    assert len(figures) == 3  # JupyterLab, Notebook 7, Voilà and VS Code draw this JSON
    assert all("text/html" in o.data for o in figures)  # static exports draw this
    assert nb.cells[-1].outputs[0].data["text/plain"] == "'plotly_mimetype'"  # left alone

    html, _ = nbconvert.HTMLExporter(template_name="lab").from_notebook_node(nb)
    (tmp_path / "figures.html").write_text(html, encoding="utf-8")
    divs = [re.search(r'id="([^"]+)"', tag).group(1)  # type: ignore[union-attr]
            for tag in re.findall(r"<div [^>]*plotly-graph-div[^>]*>", html)]
    assert len(divs) == 3
    for div in divs:
        assert re.search(r'Plotly\.newPlot\(\s*"' + re.escape(div) + '"', html), div
    assert len(re.findall(r"\* plotly\.js v\d+\.\d+\.\d+", html)) == 1  # inline, once
    assert not re.search(r"<script[^>]*\bsrc=[^>]*plot\.ly", html)  # no CDN needed
