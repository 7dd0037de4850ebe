"""The HTML report in a real browser: headless Chromium (Debian's ``/usr/bin/chromium``) driven by
Playwright, with every non-``file:`` request aborted so that any dependence on the network shows up
(ecosystem notes §5).  Skipped, with the reason, when Chromium or Playwright is missing.

Never run ``playwright install``: these tests use the system Chromium through ``executable_path``.
"""

from __future__ import annotations

import html
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests import _browser  # noqa: F401 - the import skips without Chromium/Playwright
from workbench.values.graph import Graph

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
PAYLOAD = "<script>window.__pwned=1</script>"
IMG_PAYLOAD = '<img src=x onerror="window.__pwned=2">'
RENDER_TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def browser(chromium: Any) -> Any:
    return chromium  # one Chromium for the session (conftest)


class Page:
    """A page of ``browser`` opened on a local file, offline, recording JS errors."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.page_errors: list[str] = []
        self.console_errors: list[str] = []
        self.blocked: list[str] = []
        self.page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        self.page.on("console", self._console)
        self.page.route("**/*", self._route)
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_selector(".plotly-graph-div .main-svg", timeout=RENDER_TIMEOUT_MS)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.console_errors.append(message.text)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith("file:"):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def plot_divs(self) -> list[dict[str, Any]]:
        return self.page.eval_on_selector_all(".plotly-graph-div", """els => els.map(e => {
            const svg = e.querySelector('.main-svg');
            const r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
            return {id: e.id, svg: !!svg, width: r.width, height: r.height};
        })""")

    def mark_bar(self, div_id: str, op: str | None = None) -> str:
        """Tag one bar ``path`` of the figure ``div_id`` (the widest one, or the bar of ``op``)
        with ``data-wb-test`` and return the raw hover text plotly holds for it."""
        return self.page.evaluate("""([divId, op]) => {
            const gd = document.getElementById(divId);
            let best = null;
            gd.querySelectorAll('.barlayer g.trace').forEach(tg => {
                const trace = tg.__data__[0].trace;
                tg.querySelectorAll('g.point').forEach(pt => {
                    const text = trace.hovertext[pt.__data__.i];
                    const w = pt.getBoundingClientRect().width;
                    const hit = op === null || text.startsWith('<b>' + op + '</b>');
                    if (hit && (!best || w > best.w)) best = {w: w, pt: pt, text: text};
                });
            });
            if (!best) return null;
            best.pt.querySelector('path').setAttribute('data-wb-test', 'bar');
            return best.text;
        }""", [div_id, op])

    def hover_label(self, div_id: str) -> str:
        self.page.hover(f"#{div_id} path[data-wb-test='bar']", force=True)
        label = self.page.wait_for_selector(f"#{div_id} g.hoverlayer g.hovertext",
                                            timeout=5_000)
        return label.text_content() or ""


def _write_report(graph: Graph, path: Path, policies: list[str]) -> Path:
    comparison = wb.compare(graph, policies, show_progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no Graphviz 'dot': the built-in DAG drawing is used
        return comparison.to_html(path)


def _first_bold(hover: str) -> str:
    match = re.match(r"<b>(.*?)</b>", hover)
    assert match, hover
    return html.unescape(match.group(1))


def test_report_renders_offline_with_working_hover(browser: Any, tmp_path: Path) -> None:
    graph = wb.models.inception_v3(fused=False)
    path = _write_report(graph, tmp_path / "report.html", ["serial", "nnc", "wavefront"])
    view = Page(browser, path)
    page = view.page

    divs = view.plot_divs()
    assert [d["id"] for d in divs] == [
        "wb-fig-makespan", "wb-fig-timelines", "wb-fig-memory-peaks", "wb-fig-memory",
        "wb-fig-lifetimes"]
    for d in divs:
        assert d["svg"] and d["width"] > 0 and d["height"] > 0, d

    hover = view.mark_bar("wb-fig-timelines")
    op = _first_bold(hover)
    assert op in graph.op_ids
    label = view.hover_label("wb-fig-timelines")
    assert op in label and "kind:" in label and "µs" in label

    hover = view.mark_bar("wb-fig-lifetimes")
    tensor = _first_bold(hover)
    label = view.hover_label("wb-fig-lifetimes")
    assert tensor in label and "producer:" in label and "MiB" in label

    dag = page.locator(".dag svg").first
    assert dag.is_visible()
    box = dag.bounding_box()
    assert box is not None and box["width"] > 0 and box["height"] > 0

    assert page.locator("#memory h2").text_content() == "Memory"
    assert not view.page_errors, view.page_errors
    assert not view.console_errors, view.console_errors
    assert not view.blocked, view.blocked  # the report asked for nothing outside the file

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000
    page.close()


def test_hostile_op_ids_stay_text_in_the_browser(browser: Any, tmp_path: Path) -> None:
    a, b, c = PAYLOAD, "q\"uo'te & amp;", IMG_PAYLOAD
    graph = Graph.from_edges([(a, b), (a, c), (b, "d&<e>"), (c, "d&<e>")],
                             ops={a: "conv2d", b: "relu", c: "add", "d&<e>": "x>y"},
                             name=f"evil {PAYLOAD}")
    path = _write_report(graph, tmp_path / "hostile.html", ["serial", "nnc", "wavefront"])
    view = Page(browser, path)
    page = view.page
    assert page.evaluate("typeof window.__pwned") == "undefined"
    text = page.inner_text("body")
    for name in (PAYLOAD, b, IMG_PAYLOAD, "d&<e>"):
        assert name in text, name
    assert page.title() == f"Schedule Workbench report: evil {PAYLOAD}"
    assert page.locator("img").count() == 0  # the <img onerror> payload never became an element
    assert not page.evaluate(
        "p => [...document.scripts].some(s => s.textContent.includes(p))", PAYLOAD)

    for d in view.plot_divs():
        assert d["svg"] and d["width"] > 0, d
    view.mark_bar("wb-fig-timelines", html.escape(PAYLOAD, quote=True))
    assert PAYLOAD in view.hover_label("wb-fig-timelines")  # shown as text in the hover label

    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert not view.page_errors, view.page_errors
    assert not view.console_errors, view.console_errors
    page.close()

