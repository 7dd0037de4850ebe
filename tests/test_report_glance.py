"""The report reads at a glance (issue 35): a short "How to read this" (the winner, by how much,
whether the simulator tells the top policies apart), every column defined in its header's
tooltip, measured-executor text only for measured rows, one memory axis, every chart in the
table's order, exact ties broken by a stated rule, the precision in the settings; and the
CLI's table, units and budget line agree with it.

One small comparison serves the report tests: ``raf_three_branches`` in graph mode, where
wavefront (0 syncs), nnc and gpto (4 syncs each) finish within 0.3 ns of each other; nnc's
makespan is the least by that float noise, so the old rule (least makespan, then policy order)
named nnc best and the tie rule names wavefront.
"""

from __future__ import annotations

import re
import warnings
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from workbench.orchestration import report
from workbench.orchestration.comparison import Comparison
from workbench.values.ranking import TIE_RULE, fastest_first
from workbench.viz.embed import unpack

POLICIES = ["nnc", "wavefront", "gpto"]


@pytest.fixture(scope="module")
def cmp() -> Comparison:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return wb.compare(wb.models.build("raf_three_branches"), POLICIES, mode="graph",
                          show_progress=False, budget_s=None, optimum_max_ops=0)


@pytest.fixture(scope="module")
def html(cmp: Comparison) -> str:
    return report.render(cmp, plotlyjs="cdn")


def _section(html: str, anchor: str) -> str:
    start = html.index(f'<section id="{anchor}">')
    return html[start:html.index("</section>", start)]


def _text(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _figure(html: str, div: str) -> dict:
    packed = dict(re.findall(
        r'<script type="application/x-wb-figure" data-div="([^"]+)">([^<]+)<', html))
    return unpack(packed[div])


# ------------------------------------------------------------------------------ order, ties
def test_table_is_fastest_first_and_keeps_the_policy_order(cmp: Comparison) -> None:
    assert list(cmp.table_in_policy_order["policy"]) == ["serial", *POLICIES]
    assert list(cmp.table["policy"]) == ["wavefront", "nnc", "gpto", "serial"]
    assert list(cmp.table.index) == [0, 1, 2, 3]
    spans = cmp.table.set_index("policy")["makespan_us"]
    assert spans["nnc"] < spans["wavefront"] < spans["nnc"] + 1e-3   # a tie only by float noise


def test_exact_ties_go_to_fewest_streams_then_syncs_and_say_so(cmp: Comparison) -> None:
    assert cmp.best == "wavefront" and cmp.exact_ties == ["nnc", "gpto"]
    assert cmp.best_text == (f"wavefront (1.48x over serial; tied with nnc, gpto at 72.5 µs; "
                             f"{TIE_RULE})")
    assert TIE_RULE == "ties go to fewest streams, then fewest syncs, then policy order"
    assert cmp.ties[:3] == ["wavefront", "nnc", "gpto"]     # near ties, in the table's order
    t = pd.DataFrame({"policy": ["serial", "a", "b", "c", "d"],
                      "makespan_us": [9.0, 5.0, 5.01, 5.0, float("nan")],
                      "streams": [1, 3, 2, 2, 1], "syncs": [0, 1, 4, 2, 0]})
    assert list(fastest_first(t)["policy"]) == ["c", "b", "a", "serial", "d"]


def test_cli_table_keeps_the_comparisons_order_with_utilisation_in_percent() -> None:
    from workbench._terminal import ranking_text

    t = pd.DataFrame({"policy": ["wavefront", "nnc", "serial"],
                      "makespan_us": [72.5204, 72.5202, 107.4], "syncs": [0, 4, 0],
                      "utilisation": [0.0581, 0.0581, 0.0392]})
    lines = ranking_text(t, ("policy", "makespan_us", "syncs", "utilisation")).splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["wavefront", "nnc", "serial"]
    assert lines[1].endswith("5.8%") and lines[3].endswith("3.9%")


def test_cli_names_the_memory_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench import cli

    monkeypatch.setenv("WORKBENCH_PROGRESS", "1")   # the line under test is a progress line
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = cli.main(["compare", "--model", "nnc_diamond", "--policies", "nnc",
                         "--columns", "policy,utilisation", "--plotlyjs", "cdn",
                         "-o", str(tmp_path / "r.html")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert re.search(r"per stage, memory budget \d[\d.]* [KMGT]i?B\)", err), err
    assert "of memory" not in err
    rows = [line.split() for line in out.splitlines()[2:4]]
    assert all(re.fullmatch(r"\d+\.\d%", row[-1]) for row in rows), out


def test_every_chart_is_in_the_tables_order(cmp: Comparison, html: str) -> None:
    shown = re.findall(r'<td [^>]*class="data row\d+ col0[^>]*>([^<]*)</td>',
                       _section(html, "results"))
    order = list(cmp.table["policy"])
    assert shown == order == ["wavefront", "nnc", "gpto", "serial"]
    assert _figure(html, "wb-fig-makespan")["data"][0]["y"] == order
    # one row group per distinct timeline, headed "<b>a = b</b>: …", the best marked ▶
    titles = [a["text"] for a in _figure(html, "wb-fig-timelines")["layout"]["annotations"]]
    named = [p for t in titles for p in t.split("<b>")[1].split("</b>")[0].split(" = ")]
    assert named == order and titles[0].startswith("▶ <b>wavefront")
    memory = [d["name"] for d in _figure(html, "wb-fig-memory")["data"]]
    assert [n.removesuffix(" in use") for n in memory if n.endswith(" in use")] == order


def test_memory_chart_has_one_axis(html: str) -> None:
    fig = _figure(html, "wb-fig-memory")
    assert "yaxis2" not in fig["layout"]
    assert all(d.get("yaxis", "y") == "y" for d in fig["data"])
    assert "reserved" in fig["layout"]["yaxis"]["title"]["text"]
    # issue 45: the best policy's curves only, the others a menu away
    shown = [d["name"] for d in fig["data"] if d.get("visible", True) is True]
    assert shown == ["wavefront in use", "wavefront reserved"]
    peaks = _figure(html, "wb-fig-memory-peaks")
    assert peaks["data"][0]["y"] == ["wavefront", "nnc", "gpto", "serial"]


# ------------------------------------------------------------------------------ the words
def test_how_to_read_is_short_and_says_winner_margin_and_ties(cmp: Comparison, html: str
                                                              ) -> None:
    how = _text(_section(html, "how"))
    glance = how.split("Simulator accuracy")[0]
    assert len(glance.split()) < 200, len(glance.split())
    assert "Winner: wavefront at 72.5 µs: 1.48× serial's 107.4 µs." in glance
    assert f"Tied with nnc, gpto at the same makespan; {TIE_RULE}." in glance
    assert "The next, serial, takes 48.1% longer (107.4 µs)." in glance
    assert "Can the simulator tell the top policies apart? No: " in glance
    assert cmp.near_tie_text in glance
    header = _text(html[html.index("<header>"):html.index("</header>")])
    assert f"best: {cmp.best_text}" in header
    # a simulated report says nothing of measured executors (the accuracy note, folded away,
    # cites the measurements the simulator was fitted on)
    for word in ("cupy", "cuDNN", "measured executor", "Measured rows", "quartile"):
        assert word not in glance, word


def test_measured_rows_add_their_rules_only_when_measured() -> None:
    from tests.test_measured_noise import measured_comparison

    gpu = measured_comparison({"serial": (100.0, 98.0, 102.0), "gpto": (80.0, 78.0, 82.0)},
                              where="gpu")
    text = _text(report.how_to_read(gpu))
    assert "Measured rows:" in text and "quartile range" in text and "cupy" in text
    assert "Can the measurement tell the top policies apart? Yes" in text
    assert "Winner: gpto at 80.0 µs: 1.25× serial's 100.0 µs." in text


def test_every_column_header_is_defined_in_a_tooltip(html: str) -> None:
    table = _section(html, "results")
    headers = re.findall(r'<th ([^>]*class="col_heading[^>]*)>([^<]*)</th>', table)
    assert len(headers) > 10
    missing = [label for attrs, label in headers if 'title="' not in attrs]
    assert not missing, missing
    tips = {label: unescape(re.search(r'title="([^"]*)"', attrs).group(1))  # type: ignore[union-attr]
            for attrs, label in headers}
    assert "device capacity" in tips["work at peak (µs)"]
    assert "serial's makespan" in tips["speedup vs serial"]
    assert "cross-stream" in tips["syncs"]


def test_settings_name_the_resolved_precision(html: str) -> None:
    settings = _text(_section(html, "settings"))
    assert "precision tf32 (auto: TF32 convolutions, FP32 other ops)" in settings
    assert "conv_precision" not in settings
