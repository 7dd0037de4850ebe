"""Reports log nothing in the browser console (issue 25: a 2,000-op random DAG's report logged
11,486 "Invalid color specifier" warnings from numeric bar colours), and the memory chart gives
every policy its own colour.  Headless Chromium, as the other browser tests."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests import _browser  # noqa: F401 - the import skips without Chromium/Playwright


@pytest.fixture(scope="module")
def browser(chromium: Any) -> Any:
    return chromium  # one Chromium for the session (conftest)


def _report(graph: wb.Graph, policies: list[str] | None, path: Path) -> Path:
    cmp = wb.compare(graph, policies, show_progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no Graphviz 'dot': the built-in drawing
        return cmp.to_html(path)


def _console(browser: Any, path: Path) -> list[str]:
    """Every console message and page error while the report loads and is scrolled through."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    seen: list[str] = []
    page.on("console", lambda m: seen.append(f"{m.type}: {m.text[:160]}"))
    page.on("pageerror", lambda e: seen.append(f"pageerror: {e}"))
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
               else route.abort())
    page.goto(path.resolve().as_uri())
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length"
                           " >= 3", timeout=60_000)
    for _ in range(6):   # views drawn as they scroll into sight
        page.mouse.wheel(0, 3000)
        page.wait_for_timeout(400)
    page.wait_for_timeout(1000)
    page.close()
    return seen


@pytest.mark.parametrize("name", ["inception_v3", "random_dag"])
def test_report_logs_no_console_warning_or_error(browser: Any, tmp_path: Path, name: str) -> None:
    if name == "random_dag":   # the aggregated (binned utilisation) timelines: > 1,500 bars
        graph, policies = wb.models.build(name, n_ops=2000), ["nnc", "gpto", "critical_path"]
    else:
        graph, policies = wb.models.build(name), None
    seen = _console(browser, _report(graph, policies, tmp_path / "r.html"))
    assert seen == [], seen[:5]
