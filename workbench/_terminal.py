"""Text for a terminal: names made harmless, and the CLI's compact ranking table.

:func:`clean` strips ANSI escape sequences and shows other control characters as escapes, so a
graph or op name cannot move the cursor, recolour or retitle the user's terminal.
:func:`ranking_text` prints a comparison table (fastest first) with the essential columns only
(about 90 characters wide); any other columns of
:data:`workbench.orchestration.compare.TABLE_COLUMNS` on
request.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


#: The columns the CLI prints unless ``--columns`` says otherwise.
ESSENTIAL_COLUMNS = ("policy", "status", "makespan_us", "speedup", "streams", "syncs",
                     "peak_live_mib")
MAX_CELL = 30  # characters; longer cells (a status with an error message) are cut with "…"

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_FORMATS = {"makespan_us": "{:,.1f}", "speedup": "{:.2f}x", "critical_path_us": "{:,.1f}",
            "work_us": "{:,.1f}", "lower_bound_us": "{:,.1f}", "optimum_us": "{:,.1f}",
            "schedule_ms": "{:,.1f}", "peak_live_mib": "{:,.1f}", "arena_mib": "{:,.1f}",
            "pool_reserved_mib": "{:,.1f}", "utilisation": "{:.1%}"}


#: Unicode categories shown as escapes: controls, format characters (bidi overrides and
#: isolates, zero-width joiners), line and paragraph separators, surrogates, private use.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def visible(text: object, keep: str = "\n\t") -> str:
    r"""``text`` with every character that does not show as itself (controls such as ESC,
    bidi controls U+202E / U+2066 that make ``invoice\u202efdp.exe`` display reversed,
    zero-width characters) written as its code point (``\x1b``, ``\u202e``); the characters in
    ``keep`` stay.  The one rule for names shown in terminals, HTML and tables.  O(len(text)).

    >>> visible("invoice\u202efdp.exe")
    'invoice\\u202efdp.exe'
    >>> visible("gräph µs\n")
    'gräph µs\n'
    """
    import unicodedata

    text = str(text)
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch in keep or ch.isprintable() or unicodedata.category(ch) not in _HIDDEN:
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def clean(text: object) -> str:
    r"""``text`` safe to print on one terminal line: ANSI escape sequences removed, other
    non-printable characters (newlines, ``\r``, bidi overrides) shown as ``\x..``/``\u....``
    (:func:`visible` with nothing kept).

    >>> clean("a\x1b[31mred\x1b[0m\nb")
    'ared\\nb'
    """
    return visible(_ANSI.sub("", str(text)), keep="")


def _cell(value: Any, column: str) -> str:
    if value is None or isinstance(value, float) and math.isnan(value):
        return "-"
    if isinstance(value, float):
        if value.is_integer() and column in ("streams", "syncs", "barriers"):
            return str(int(value))
        default = "{:,.1f}" if column.endswith("_us") else "{:.3f}"   # times: µs, 1 decimal
        return _FORMATS.get(column, default).format(value)
    text = clean(value)
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


def ranking_text(table: pd.DataFrame, columns: Sequence[str] = ESSENTIAL_COLUMNS) -> str:
    """``table`` as aligned text, rows in the table's order (a ``Comparison.table`` is fastest
    first, exact ties by fewest streams, then syncs: ``workbench.values.ranking``), ``columns``
    in the given order (a column the table lacks shows ``-``); utilisation as a percentage, as
    the report shows it.  O(rows x columns)."""
    cells = [[_cell(row.get(c), c) for c in columns] for _, row in table.iterrows()]
    widths = [max([len(c), *(len(r[k]) for r in cells)]) for k, c in enumerate(columns)]
    import pandas as pd  # here, not at the top: the CLI's --help and listings start fast

    numeric = [c in table.columns and pd.api.types.is_numeric_dtype(table[c]) for c in columns]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w)
                 for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    return "\n".join([line(list(columns)), *(line(r) for r in cells)])


__all__ = ["ESSENTIAL_COLUMNS", "clean", "ranking_text"]
