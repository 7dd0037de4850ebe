"""Shared by the browser tests: the system Chromium, its flags, and a module-scoped launch.

Import it at the top of a browser test module: the import skips the module (with the reason) when
Chromium or Playwright is missing.  Never run ``playwright install``: the system Chromium is used
through ``executable_path``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} "
                "(apt-get install chromium fonts-liberation)", allow_module_level=True)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="browser tests need the 'playwright' package")

LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--disable-background-networking"]


def launch() -> Iterator[Any]:
    """Yield a headless Chromium (for a module-scoped fixture); skip if it cannot start."""
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
        except Exception as exc:  # a broken system Chromium is an environment problem
            pytest.skip(f"cannot launch {CHROMIUM}: {str(exc).splitlines()[0]}")
        yield b
        b.close()


#: For every drawn plotly figure under ``scope``: its id, the boxes of its legends and of its
#: titles (the figure title ``.g-gtitle`` and the annotations, which hold subplot titles).
FIGURE_BOXES_JS = """scope => [...document.querySelectorAll(scope + ' .js-plotly-plot')]
    .filter(gd => gd.offsetParent !== null && gd.querySelector('.main-svg'))
    .map(gd => {
        const box = e => { const r = e.getBoundingClientRect();
                           return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; };
        const shown = e => { const r = e.getBoundingClientRect(); return r.width && r.height; };
        return {id: gd.id || gd.className,
                legends: [...gd.querySelectorAll('g.legend')].filter(shown).map(box),
                titles: [...gd.querySelectorAll('.g-gtitle, .infolayer g.annotation')]
                    .filter(shown).map(box)};
    })"""


def intersects(a: dict[str, float], b: dict[str, float]) -> bool:
    """True when two boxes ``{x0, y0, x1, y1}`` overlap (touching edges do not count)."""
    return a["x0"] < b["x1"] and b["x0"] < a["x1"] and a["y0"] < b["y1"] and b["y0"] < a["y1"]


def legend_title_overlaps(page: Any, scope: str = "body") -> tuple[list[dict[str, Any]], list[str]]:
    """The figures drawn under ``scope`` and, for each legend box that intersects a title box,
    a line saying which (empty when no legend covers a title)."""
    figures = page.evaluate(FIGURE_BOXES_JS, scope)
    bad = [f"{f['id']}: legend {leg} intersects title {title}"
           for f in figures for leg in f["legends"] for title in f["titles"]
           if intersects(leg, title)]
    return figures, bad
