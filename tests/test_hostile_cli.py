"""Issue 27, defect 5: no tracebacks from the CLI and the public entry points."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench as wb
from workbench.cli import main


def test_lone_surrogate_in_a_name(tmp_path: Path) -> None:
    g = wb.Graph.from_edges([("a\ud800", "b")])
    with pytest.raises(wb.FormatError, match="lone surrogate .* save as .json"):
        wb.save(g, tmp_path / "g.dot")
    assert not (tmp_path / "g.dot").exists()
    wb.save(g, tmp_path / "g.json")
    assert wb.load(tmp_path / "g.json").op_ids[0] == "a\ud800"
    from workbench.viz.dag import _dot_text, dag

    assert "\ud800" not in _dot_text("a\ud800")
    dag(g).source.encode("utf-8")  # what Graphviz is fed


@pytest.mark.parametrize("budget", [1e20, float("inf"), 1e308])
def test_huge_budgets_mean_no_limit(budget: float) -> None:
    g = wb.Graph.from_edges([("a", "b")])
    assert wb.compare(g, ["serial"], budget_s=budget, show_progress=False).best == "serial"


def test_nothing_executed_is_said_not_ranked(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Every policy stopped before executing: the CLI said `best: dfs (nanx over serial)` and
    exited 0; with none scheduled, Comparison.best raised IndexError and no report came."""
    from workbench.models import random_dags

    graph = tmp_path / "g.json"
    wb.save(random_dags.random_dag(1500, seed=1), graph)
    out = tmp_path / "r.html"
    code = main(["compare", str(graph), "--policies", "gpto", "--budget", "0.0001",
                 "--no-progress", "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 1 and "best: none (no policy was executed)" in text and "nan" not in text
    assert out.is_file()
