"""Execute notebooks, export them to HTML with nbconvert, and check the EXPORTED page.

Inside a kernel plotly's default renderer emits only ``application/vnd.plotly.v1+json``, which
nbconvert's HTML drops (notes/ecosystem.md §3.1, §3.4).  The notebooks set
``pio.renderers.default = "plotly_mimetype+notebook"`` in their first code cell; these tests prove
that every figure really reaches the HTML, with plotly.js inlined so the page works offline.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
# The quickstart and one seed notebook (kept to two: each costs a kernel start and an execution).
EXPORTED = ("00_quickstart", "01_nnc_static_schedule")
PLOTLY_MIME = "application/vnd.plotly.v1+json"
PLOTLY_DIV = 'class="plotly-graph-div"'


@pytest.mark.parametrize("stem", EXPORTED)
def test_exported_html_keeps_every_plotly_figure(
        stem: str, tmp_path: Path, executed_notebook: Callable[[Path], Any]) -> None:
    pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    nbconvert = pytest.importorskip("nbconvert")
    path = NOTEBOOK_DIR / f"{stem}.ipynb"
    if not path.exists():
        pytest.skip(f"{path.name} is not in notebooks/")
    nb = executed_notebook(path)  # widget state stored; shared with tests/test_notebooks.py

    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    outputs = [o for c in code_cells for o in c.get("outputs", [])]
    errors = [f"{o.get('ename')}: {o.get('evalue')}" for o in outputs
              if o.get("output_type") == "error"]
    assert not errors, f"{path.name} raised: {errors}"

    figures = [o for o in outputs if PLOTLY_MIME in o.get("data", {})]
    figure_cells = sum(1 for c in code_cells
                       if any(PLOTLY_MIME in o.get("data", {}) for o in c.get("outputs", [])))
    assert figure_cells >= 1, f"{path.name} shows no plotly figure"
    # every figure carries an HTML fallback (the "+notebook" renderer), else nbconvert drops it
    assert all("text/html" in o["data"] for o in figures), \
        f"{path.name}: a figure has no text/html (is the renderer set in the first cell?)"

    html, _ = nbconvert.HTMLExporter(template_name="lab").from_notebook_node(nb)
    out = tmp_path / f"{stem}.html"
    out.write_text(html, encoding="utf-8")

    n_divs = html.count(PLOTLY_DIV)
    assert n_divs >= len(figures) >= figure_cells, (
        f"{out.name}: {n_divs} plotly divs for {len(figures)} figures in {figure_cells} cells")
    assert html.count("Plotly.newPlot") >= len(figures)
    # plotly.js is inlined (works offline), not only referenced from a CDN
    assert re.search(r"plotly\.js v\d+\.\d+\.\d+", html), f"{out.name} does not inline plotly.js"
    assert "Traceback (most recent call last)" not in html
