"""The app's Run costs what ``wb.compare`` costs, and says what the CLI and the report say.

Work is counted, not timed (CI machines are loaded): a Run on a small graph makes one ``compare``
call, searches the exact optimum once and runs each policy's stages once (``serial`` included),
exactly as a direct ``compare`` call of the same policies does.  Run used to call ``compare``
once per policy, which searched the optimum and re-ran ``serial`` for every policy (~12 s more
on the 8-op ``raf_three_branches``).  The table then shows the near-tie note the CLI prints
under its ``best:`` line.  No browser needed.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("ipywidgets")

import workbench as wb  # noqa: E402
import workbench.orchestration.compare as compare_module  # noqa: E402
from workbench._bounded import StageWorker  # noqa: E402
from workbench.ui import Workbench  # noqa: E402

MODEL = "nnc_diamond"   # 4 ops: small enough for the exact optimum; nnc and min_streams tie
POLICIES = ("serial", "nnc", "wavefront", "min_streams")


def _counting(monkeypatch: pytest.MonkeyPatch, calls: Counter[str]) -> None:
    """Count ``wb.compare`` calls, optimum searches and policy runs (the jobs a comparison's
    worker is asked to run: :meth:`workbench._bounded.StageWorker.run`, called in this
    process)."""
    real_compare = wb.compare
    real_run = StageWorker.run

    def compare(*args: Any, **kwargs: Any) -> Any:
        calls["compare"] += 1
        return real_compare(*args, **kwargs)

    def run(self: StageWorker, key: Any) -> Any:
        calls["optimum" if key == compare_module.OPTIMUM else f"run {key}"] += 1
        return real_run(self, key)

    monkeypatch.setattr(wb, "compare", compare)
    monkeypatch.setattr(StageWorker, "run", run)


@pytest.fixture(scope="module")
def counted() -> Iterator[tuple[Workbench, Counter[str], wb.Comparison, Counter[str]]]:
    """The app run once on MODEL and a direct compare of the same policies, each with its
    counts."""
    app = Workbench()
    app.model.value = MODEL
    app.policies.value = POLICIES
    by_app: Counter[str] = Counter()
    by_compare: Counter[str] = Counter()
    with pytest.MonkeyPatch.context() as mp:
        _counting(mp, by_app)
        app.run(wait=True)
    with pytest.MonkeyPatch.context() as mp:
        _counting(mp, by_compare)
        direct = wb.compare(wb.models.build(MODEL), list(POLICIES), show_progress=False)
    assert app.comparison is not None, app.error.value
    yield app, by_app, direct, by_compare


def test_run_does_the_work_of_one_compare_call(counted: Any) -> None:
    app, by_app, direct, by_compare = counted
    assert by_app["compare"] == 1, by_app
    assert by_app["optimum"] == 1, by_app      # was once per policy
    assert by_app["run serial"] == 1, by_app   # was once per policy
    assert by_app == by_compare                # no search, no stage compare does not do
    assert app.progress.value == app.progress.max == len(POLICIES)
    assert app.progress.bar_style == "success"
    c = app.comparison
    assert list(c.table["policy"]) == list(direct.table["policy"])
    assert list(c.table["makespan_us"]) == list(direct.table["makespan_us"])
    assert list(c.table["optimum_us"]) == list(direct.table["optimum_us"])


def test_run_shows_the_near_tie_note(counted: Any) -> None:
    app, _, direct, _ = counted
    c = app.comparison
    note = c.near_tie_text
    assert note and note == direct.near_tie_text          # nnc and min_streams tie here
    assert {"nnc", "min_streams"} <= {p.strip() for p in note.split(" simulate")[0].split(",")}
    shown = app.table_html.value
    assert html.escape(note) in shown and "wb-tie-note" in shown
    assert html.escape(c.best_text) in shown               # the CLI's best: text, not a name
    status = html.unescape(app.status.value)
    assert status.startswith("done") and f"best {c.best}, not told apart from" in status


def test_no_tie_note_when_the_best_stands_alone() -> None:
    from workbench.ui import results

    c = wb.compare(wb.models.build(MODEL), ["wavefront"], show_progress=False, budget_s=None,
                   optimum_max_ops=0, planner=None)
    assert c.near_tie_text == "" and results.tie_note_html(c) == ""
    assert "wb-tie-note" not in results.table_html(c)
