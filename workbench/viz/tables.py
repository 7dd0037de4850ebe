"""Ranking tables: the policy comparison as a formatted pandas Styler (or plain HTML).

Formats: times in µs with 1 decimal, speedups and MiB with 2, ratios with 3, utilisation as a
percentage; the row with the smallest makespan is highlighted.  Pandas' Styler needs ``jinja2``;
without it the functions fall back to ``DataFrame.to_html()`` (which escapes cell text as well).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

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
}


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


def comparison_styler(table: pd.DataFrame) -> Any:
    """A ``pandas.io.formats.style.Styler`` of the comparison table (formatted, best row
    highlighted, index hidden, text cells HTML-escaped).  Returns ``table.to_html()`` (a str) when
    ``jinja2`` is missing."""
    if not _has_jinja2():
        return table.to_html(index=False, escape=True)
    best = best_row(table)

    def highlight(row: pd.Series) -> list[str]:
        return [BEST_ROW_CSS if row.name == best else ""] * len(row)

    styler = table.style.format(_formats_for(table), na_rep="–", escape="html")
    styler = styler.format_index(escape="html", axis=1)
    return (styler.apply(highlight, axis=1)
            .hide(axis="index")
            .set_table_attributes('class="wb-table"'))


def table_html(table: pd.DataFrame) -> str:
    """The comparison table as an HTML fragment (Styler HTML, or plain ``to_html`` without
    jinja2)."""
    styled = comparison_styler(table)
    return styled if isinstance(styled, str) else styled.to_html()
