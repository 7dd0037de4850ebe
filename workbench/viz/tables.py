"""Ranking tables: the policy comparison as a formatted pandas Styler (or plain HTML).

The ranking is fastest first (rows without a makespan last, exact ties by fewest streams, then
syncs: :mod:`workbench.values.ranking`), shows the essential columns first
(:data:`ESSENTIAL_COLUMNS`) with human-readable headers (:data:`COLUMN_LABELS`) whose tooltips
define them (:data:`COLUMN_HELP`, dotted underline), and hides the
others until the reader asks for them: an empty ``<details>`` element just before the table
("all columns") toggles them through the CSS of :data:`TABLE_CSS`, with no JavaScript, so the same
HTML works in the report, in the app's HTML widget and in notebook output.

Formats: times in µs with 1 decimal, speedups and MiB with 2, ratios with 3, utilisation as a
percentage; the best rows are highlighted (a comparison's ``best_policies``: several when measured
rows tie within measurement noise; else the row with the smallest makespan).  A measured table's
quartiles (``makespan_q1_us``, ``makespan_q3_us``) stand beside its median makespan.  Pandas'
Styler needs ``jinja2``; without it the functions fall back to ``DataFrame.to_html()`` (which
escapes cell text as well, and shows every column).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from workbench.values.ranking import fastest_first
from workbench.viz.style import escape

BEST_ROW_CSS = "background-color: #e3f4e1; font-weight: 600"

#: column → format string, applied to the columns present in the table.
FORMATS: dict[str, str] = {
    "makespan_us": "{:,.1f}",
    "lower_bound_us": "{:,.1f}",
    "speedup": "{:.2f}×",
    "ratio_to_lb": "{:.3f}",
    "ratio_to_optimum": "{:.3f}",
    "avg_concurrency": "{:.2f}",
    "utilisation": "{:.1%}",
    "schedule_ms": "{:.2f}",
    "peak_live_mib": "{:,.2f}",
    "arena_mib": "{:,.2f}",
    "arena_ratio": "{:.3f}",
    "pool_reserved_mib": "{:,.2f}",
    "makespan_q1_us": "{:,.1f}",
    "makespan_q3_us": "{:,.1f}",
}

#: The columns shown first, always; the others (present in the table) follow behind the toggle.
ESSENTIAL_COLUMNS: tuple[str, ...] = (
    "policy", "status", "makespan_us", "makespan_q1_us", "makespan_q3_us", "speedup", "streams",
    "syncs", "peak_live_mib")

#: Essential columns shown first only when they tell the rows apart (issue 25: a peak memory
#: that the graph's stem fixes for every policy took an essential place).
VARYING_ONLY: tuple[str, ...] = ("streams", "syncs", "peak_live_mib")


def essential_columns(table: pd.DataFrame) -> tuple[str, ...]:
    """The essential columns of ``table`` shown up front: :data:`ESSENTIAL_COLUMNS` present in
    it, less those of :data:`VARYING_ONLY` that hold one value in every row (of two or more);
    they go behind the toggle with the others.  O(rows × columns).

    >>> essential_columns(pd.DataFrame({"policy": ["a", "b"], "syncs": [0, 3],
    ...                                 "peak_live_mib": [1.5, 1.5]}))
    ('policy', 'syncs')
    """
    same = {c for c in VARYING_ONLY if c in table.columns and len(table) > 1
            and table[c].nunique(dropna=False) <= 1}
    return tuple(c for c in ESSENTIAL_COLUMNS if c in table.columns and c not in same)


#: Column → header shown to people (columns not listed keep their name, ``_`` as spaces).
COLUMN_LABELS: dict[str, str] = {
    "policy": "policy",
    "status": "status",
    "makespan_us": "makespan (µs)",
    "speedup": "speedup vs serial",
    "streams": "streams",
    "syncs": "syncs",
    "peak_live_mib": "peak memory (MiB)",
    "barriers": "barriers",
    "avg_concurrency": "avg. concurrency",
    "utilisation": "utilisation",
    "critical_path_us": "critical path (µs)",
    "work_us": "work at peak (µs)",
    "lower_bound_us": "lower bound (µs)",
    "ratio_to_lb": "ratio to lower bound",
    "optimum_us": "exact optimum (µs)",
    "ratio_to_optimum": "ratio to optimum",
    "arena_mib": "planned arena (MiB)",
    "arena_ratio": "arena / peak",
    "pool_reserved_mib": "pool reserved (MiB)",
    "schedule_ms": "scheduling time (ms)",
    "makespan_q1_us": "q1 (µs)",
    "makespan_q3_us": "q3 (µs)",
    "gpu": "ran on",
}

#: Column → what it means, shown as the header's tooltip (``title``) wherever the table is drawn
#: (report, notebook view, app).  Columns not listed get no tooltip.
COLUMN_HELP: dict[str, str] = {
    "policy": "the scheduling policy that assigned the ops to streams and ordered them",
    "status": "ok, or which stage (schedule, execute, plan memory) did not finish in its budget",
    "makespan_us": "time from the first op's start to the last op's end, in µs (smaller is "
                   "better); measured rows: the median of the timed runs",
    "makespan_q1_us": "first quartile of the timed runs' makespans (µs)",
    "makespan_q3_us": "third quartile of the timed runs' makespans (µs)",
    "speedup": "serial's makespan divided by this policy's (above 1: faster than serial)",
    "streams": "streams the schedule issues its ops on (the ops of one stream run in order; "
               "loop bodies and branches included)",
    "syncs": "cross-stream syncs: an event recorded after one op and waited for before another "
             "(each sync of a loop body or branch counted once)",
    "barriers": "points where every stream joins before any goes on",
    "peak_live_mib": "most activation memory live at once (MiB; graph inputs and parameters "
                     "not counted)",
    "avg_concurrency": "average number of ops running at once: total op time over the makespan",
    "utilisation": "share of the device's peak compute doing useful arithmetic over the "
                   "makespan (100% = the device's peak compute all the time)",
    "critical_path_us": "longest chain of dependent ops, each at its time alone (µs): no "
                        "schedule can be faster",
    "work_us": "total work over device capacity: all ops' FLOPs at the device's peak rate, or "
               "all their bytes at its peak bandwidth, whichever takes longer (µs); a bound no "
               "schedule can beat, far below real makespans when kernels do not reach peak",
    "lower_bound_us": "the larger of critical path and work at peak (µs): no schedule can beat "
                      "it",
    "ratio_to_lb": "makespan over the lower bound (1.000 would be optimal)",
    "optimum_us": "exact optimum by search over the schedules without barriers (small graphs "
                  "without control flow only), µs: a barrier policy can come in under it",
    "ratio_to_optimum": "makespan over the exact optimum (1.000 = the best schedule without "
                        "barriers; below 1 only for a barrier policy)",
    "arena_mib": "size of the static memory plan's one arena (MiB)",
    "arena_ratio": "planned arena over peak live memory (1.000 = no fragmentation)",
    "pool_reserved_mib": "most bytes a caching (BestFit) memory pool reserved from the device "
                         "replaying this run (MiB)",
    "schedule_ms": "wall time the policy took to make its schedule (ms, this machine)",
    "simulated_us": "the simulator's prediction for the same schedule (µs)",
    "sim_error": "simulated over measured makespan, minus one",
    "gpu": "the device the row was measured on",
    "executor": "what ran the schedule (simulator, torch, cupy)",
}

#: The CSS that hides the extra columns while the ``<details class="wb-cols">`` before the
#: table is closed (the Styler gives every cell of column ``j`` the class ``col{j}``).
TABLE_CSS = """
details.wb-cols { margin: 4px 0; font-size: 0.92em; color: #4e79a7; cursor: pointer; }
details.wb-cols:not([open]) + .wb-scroll table.wb-table .wb-extra { display: none; }
.wb-scroll { overflow-x: auto; max-width: 100%; }
table.wb-table { border-collapse: collapse; }
table.wb-table th, table.wb-table td { padding: 4px 10px; border-bottom: 1px solid #e4e7eb;
                                       text-align: right; white-space: nowrap; }
table.wb-table th { vertical-align: bottom; }
table.wb-table th[title] { text-decoration: underline dotted #8a96a3; cursor: help; }
table.wb-table th:first-child, table.wb-table td:first-child,
table.wb-table .wb-text { text-align: left; }
details.wb-cols[open] + .wb-scroll table.wb-table { font-size: 0.86em; }
details.wb-cols[open] + .wb-scroll table.wb-table th { white-space: normal; min-width: 4.5em;
                                                        max-width: 7.5em; }
details.wb-cols[open] + .wb-scroll table.wb-table th,
details.wb-cols[open] + .wb-scroll table.wb-table td { padding: 3px 6px; }
table.wb-table th:first-child, table.wb-table td:first-child { position: sticky; left: 0;
                                                               background: #fff; }
"""


def column_label(column: str) -> str:
    """The header of ``column``: :data:`COLUMN_LABELS`, else the name with spaces.

    >>> column_label("makespan_us"), column_label("my_metric")
    ('makespan (µs)', 'my metric')
    """
    return COLUMN_LABELS.get(column, str(column).replace("_", " "))


def ranking(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` fastest first (:func:`~workbench.values.ranking.fastest_first`: rows without a
    makespan last, exact ties by fewest streams, then syncs, then table order), with the
    :func:`essential_columns` first and the other columns in their order.  The index is kept.

    >>> t = pd.DataFrame({"speedup": [1.0, 2.0], "policy": ["serial", "nnc"],
    ...                   "makespan_us": [4.0, 2.0]})
    >>> ranking(t)[["policy", "makespan_us"]].values.tolist()
    [['nnc', 2.0], ['serial', 4.0]]
    >>> list(ranking(t).columns)
    ['policy', 'makespan_us', 'speedup']
    """
    first = essential_columns(table)
    cols = [*first, *(c for c in table.columns if c not in first)]
    return fastest_first(table[cols])


def _formats_for(table: pd.DataFrame) -> dict[str, str]:
    out = {c: f for c, f in FORMATS.items() if c in table.columns}
    for c in table.columns:
        if c not in out and str(c).endswith("_us") and pd.api.types.is_numeric_dtype(table[c]):
            out[c] = "{:,.1f}"
    return out


def _has_jinja2() -> bool:
    try:
        import jinja2  # noqa: F401
    except ImportError:
        return False
    return True


def best_row(table: pd.DataFrame) -> Any:
    """Index label of the row with the smallest ``makespan_us`` (``None`` if there is none)."""
    if "makespan_us" not in table.columns or not len(table):
        return None
    col = pd.to_numeric(table["makespan_us"], errors="coerce")
    return None if col.isna().all() else col.idxmin()


def best_rows(table: pd.DataFrame, best: Iterable[str] | None = None) -> set[Any]:
    """Index labels of the rows to highlight: those whose ``policy`` is in ``best`` (the
    comparison's ``best_policies``: several when they tie within measurement noise), else the
    row of :func:`best_row`.

    >>> t = pd.DataFrame({"policy": ["a", "b", "c"], "makespan_us": [2.0, 1.0, 1.1]})
    >>> sorted(best_rows(t)), sorted(best_rows(t, ["b", "c"]))
    ([1], [1, 2])
    """
    if best is not None and "policy" in table.columns:
        names = {str(p) for p in best}
        return {i for i, p in zip(table.index, table["policy"], strict=True) if str(p) in names}
    row = best_row(table)
    return set() if row is None else {row}


def comparison_styler(table: pd.DataFrame, *, best: Iterable[str] | None = None) -> Any:
    """A ``pandas.io.formats.style.Styler`` of the ranking (:func:`ranking`: sorted by makespan,
    essential columns first), formatted, with readable headers (:func:`column_label`), the best
    rows highlighted (:func:`best_rows`: the policies of ``best``, else the least makespan), the
    index hidden and text cells HTML-escaped; the cells of every column after the essential ones
    have the class ``wb-extra``, those of text columns ``wb-text`` (their headers get the same
    classes in :func:`table_html`).  Returns ``table.to_html()`` (a str, every column) when
    ``jinja2`` is missing."""
    table = ranking(table)
    if not _has_jinja2():
        return table.rename(columns=column_label).to_html(index=False, escape=True)
    highlighted = best_rows(table, best)

    def highlight(row: pd.Series) -> list[str]:
        return [BEST_ROW_CSS if row.name in highlighted else ""] * len(row)

    styler = table.style.format(_formats_for(table), na_rep="–", escape="html")
    styler = styler.format_index(column_label, axis=1, escape="html")
    classes = pd.DataFrame("", index=table.index, columns=table.columns)
    for c in table.columns:
        classes[c] = " ".join(_column_classes(table, c))
    styler = styler.set_td_classes(classes)
    return (styler.apply(highlight, axis=1)
            .hide(axis="index")
            .set_table_attributes('class="wb-table"'))


def n_extra_columns(table: pd.DataFrame) -> int:
    """How many columns of ``table`` are not essential (hidden behind the toggle)."""
    first = essential_columns(table)
    return sum(1 for c in table.columns if c not in first)


def _column_classes(table: pd.DataFrame, column: str) -> list[str]:
    """CSS classes of a column's cells: ``wb-extra`` (hidden behind the toggle), ``wb-text``
    (left-aligned: not a number)."""
    out = [] if column in essential_columns(table) else ["wb-extra"]
    if not pd.api.types.is_numeric_dtype(table[column]):
        out.append("wb-text")
    return out


def _class_headers(html: str, table: pd.DataFrame) -> str:
    """Give the header cells of a ranked table's HTML the classes of their column (the Styler
    cannot class header cells; the header of column ``j`` has ``col_heading level0 colj``) and
    the column's definition (:data:`COLUMN_HELP`) as its tooltip."""
    ranked = ranking(table)
    for j, column in enumerate(ranked.columns):
        extra = " ".join(_column_classes(ranked, column))
        tip = COLUMN_HELP.get(str(column))
        title = f' title="{escape(tip)}"' if tip else ""
        if extra or title:
            html = html.replace(f'class="col_heading level0 col{j}"',
                                f'class="col_heading level0 col{j}{" " + extra if extra else ""}"'
                                f"{title}")
    return html


def table_html(table: pd.DataFrame, *, styler: Any = None, css: bool = True,
               best: Iterable[str] | None = None) -> str:
    """The ranking table as an HTML fragment: the "all columns" toggle, then the table in a box
    that scrolls sideways when it is wider than the page.  ``styler`` replaces
    :func:`comparison_styler` of the same table (e.g. with more highlighting); ``best``: the
    policies to highlight (:func:`best_rows`); ``css=True`` adds :data:`TABLE_CSS` in a
    ``<style>`` element (leave it out when the page already has it)."""
    styled = comparison_styler(table, best=best) if styler is None else styler
    if isinstance(styled, str):  # no jinja2: every column, no toggle
        body, toggle = styled, ""
    else:
        body = _class_headers(styled.to_html(), table)
        extra = n_extra_columns(table)
        toggle = (f'<details class="wb-cols"><summary>all columns ({extra} more)</summary>'
                  "</details>" if extra else "")
    style = f"<style>{TABLE_CSS}</style>" if css else ""
    return f'{style}{toggle}<div class="wb-scroll">{body}</div>'
