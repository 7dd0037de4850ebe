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


#: Every visible element under ``scope`` that is clipped or sticks out, one line each:
#: * wider inside than its box (``scrollWidth > clientWidth``) while not a scroll container:
#:   content spilling out of its box, or cut by ``overflow: hidden`` / ``text-overflow: ellipsis``
#:   (an ellipsised tab label or button, a title wider than its figure's box);
#: * extending beyond the viewport's right edge, unless it lies inside a scroll container (whose
#:   own box is checked: it may scroll, it may not stick out).
#: SVG drawings are checked as a whole (their ``<svg>`` box), not shape by shape; text inputs,
#: which scroll their own text, only for sticking out.
OVERFLOW_JS = """scope => {
    const vw = document.documentElement.clientWidth;
    const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
    const inScroller = e => {
        for (let p = e.parentElement; p && p !== document.body; p = p.parentElement)
            if (scrolls(p)) return true;
        return false;
    };
    const name = e => {
        const cls = String(e.className && e.className.baseVal !== undefined
                           ? e.className.baseVal : e.className || '');
        const text = (e.innerText || e.textContent || '').trim().replace(/\\s+/g, ' ');
        return `${e.tagName.toLowerCase()}.${cls.trim().split(/\\s+/).slice(0, 3).join('.')}`
               + ` "${text.slice(0, 40)}"`;
    };
    const out = [];
    for (const root of document.querySelectorAll(scope))
        for (const e of [root, ...root.querySelectorAll('*')]) {
            if (e.parentElement && e.parentElement.closest('svg')) continue;
            const r = e.getBoundingClientRect();
            if (!r.width || !r.height || getComputedStyle(e).visibility === 'hidden') continue;
            if (!['svg', 'INPUT', 'TEXTAREA'].includes(e.tagName) && !scrolls(e) && e.clientWidth
                    && e.scrollWidth > e.clientWidth + 1)
                out.push(`${name(e)}: content ${e.scrollWidth} px in a ${e.clientWidth} px box`);
            if (r.right > vw + 1 && !inScroller(e))
                out.push(`${name(e)}: right edge at ${Math.round(r.right)} px, `
                         + `beyond the ${vw} px viewport`);
        }
    return out;
}"""


def overflow_problems(page: Any, scope: str = "body") -> list[str]:
    """:data:`OVERFLOW_JS` on ``page``: one line per clipped or protruding element under the
    elements matching ``scope`` (empty when nothing is cut off).  O(elements × depth)."""
    return list(page.evaluate(OVERFLOW_JS, scope))
