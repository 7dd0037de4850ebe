"""The self-contained HTML report: plotly.js once, inline SVG, every name escaped."""

from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path

import pytest

import workbench as wb
from workbench.models import inception_v3, nnc_diamond
from workbench.orchestration import report
from workbench.values.graph import Graph
from workbench.viz.embed import unpack

PLOTLY_JS_MARKER = "* plotly.js v"  # the licence header line of the bundled plotly.min.js
HOSTILE = '<script>alert("x")&</script>'
POLICIES = ("serial", "bfs", "nnc", "wavefront", "asap")


def make_comparison(graph: Graph, policies: tuple[str, ...] = POLICIES) -> wb.Comparison:
    """A real :class:`workbench.orchestration.compare.Comparison` (in-process, no memory planning:
    the report's
    memory section is not under test here), with a hostile setting to check escaping."""
    comparison = wb.compare(graph, list(policies), show_progress=False, budget_s=None,
                            planner=None)
    comparison.settings["note"] = "<i>user & co</i>"
    return comparison


def hostile_graph() -> Graph:
    a, b, c = HOSTILE, "b'&\"q\"", "<img src=x onerror=alert(1)>"
    return Graph.from_edges([(a, b), (a, c), (b, "d"), (c, "d")],
                            ops={a: "<b>conv</b>", b: "relu", c: "add&", "d": "x>y"},
                            name='<script>alert("name")</script>')


@pytest.fixture(scope="module")
def diamond_html() -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return report.render(make_comparison(nnc_diamond()))


def test_plotly_js_is_embedded_exactly_once(diamond_html: str) -> None:
    assert diamond_html.count(PLOTLY_JS_MARKER) == 1
    assert diamond_html.count("window.PlotlyConfig") == 1


def test_one_plotly_div_per_figure(diamond_html: str) -> None:
    ids = re.findall(r'<div id="([^"]+)" class="plotly-graph-div"', diamond_html)
    assert ids == ["wb-fig-makespan", "wb-fig-timelines"]
    # each figure's JSON is packed beside its div and drawn by one loader (workbench.viz.embed)
    packed = re.findall(r'<script type="application/x-wb-figure" data-div="([^"]+)">([^<]+)<',
                        diamond_html)
    assert [div for div, _ in packed] == ids
    assert all(unpack(data)["data"] for _, data in packed)
    assert diamond_html.count("Plotly.newPlot(") == 1


def test_report_is_self_contained(diamond_html: str) -> None:
    assert diamond_html.startswith("<!DOCTYPE html>")
    assert "<svg" in diamond_html
    assert not re.search(r"<script[^>]*\bsrc=", diamond_html)
    assert not re.search(r"<link[^>]*\bhref=", diamond_html)
    for section in ("How to read this", "Results", "Timelines", "Graph summary", "Settings",
                    "Versions", "networkx", "pandas"):
        assert section in diamond_html
    assert "&lt;i&gt;user &amp; co&lt;/i&gt;" in diamond_html  # settings are escaped too


def test_report_escapes_hostile_names() -> None:
    comparison = make_comparison(hostile_graph())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        html = report.render(comparison)
    assert "<script>alert(" not in html
    assert "<img src=x" not in html and "<b>conv</b>" not in html
    assert "&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt;" in html  # the graph name
    assert "&lt;script&gt;alert(&quot;x&quot;)&amp;&lt;/script&gt;" in html  # an op id


def test_report_without_dot_still_has_an_svg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    with pytest.warns(RuntimeWarning, match="Graphviz 'dot' not found"):
        html = report.render(make_comparison(nnc_diamond(), ("serial", "nnc")))
    assert "<svg" in html and html.count(PLOTLY_JS_MARKER) == 1


def test_write_inception_report(tmp_path: Path) -> None:
    comparison = make_comparison(inception_v3(batch=1, fused=False), POLICIES + ("dfs",))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = report.write(comparison, tmp_path / "report.html")
    assert path == tmp_path / "report.html" and path.exists()
    html = path.read_text(encoding="utf-8")
    assert html.count(PLOTLY_JS_MARKER) == 1
    assert html.count('class="plotly-graph-div"') == 2
    assert "Conv2d_1a_3x3/conv" in html
    assert 3e6 < path.stat().st_size < 20e6


def test_write_checks_the_folder_first_and_replaces_atomically(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    comparison = make_comparison(nnc_diamond(), ("serial", "nnc"))
    with pytest.raises(wb.OutputError, match="does not exist"):  # not created silently
        report.write(comparison, tmp_path / "missing" / "r.html")
    assert not (tmp_path / "missing").exists()
    with pytest.raises(wb.OutputError, match="is a directory"):
        report.write(comparison, tmp_path)
    path = tmp_path / "r.html"
    path.write_text("old report")

    def broken_render(_: object, **__: object) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report, "render", broken_render)
    with pytest.raises(OSError):
        report.write(comparison, path)
    assert path.read_text() == "old report" and sorted(tmp_path.iterdir()) == [path]
