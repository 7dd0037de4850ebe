"""Where figures are quoted: the prose of README.md and of the notebooks' markdown cells, and the
rule that finds every figure in it (issue 25: every number quoted must be checked by a test).

The rule, applied to a text whose runs of whitespace are one space and whose fenced code blocks
are removed (numbers inside inline code spans are skipped, they are code, not figures):

* a *number* is digits with optional thousands separators and decimals (``3,922``, ``0.51``),
  optionally a range (``25–34``, ``1.2-1.3``, ``0.28–1.0``);
* a number that is part of a name is not one: preceded by a letter, digit, ``_``, ``.`` or ``§``
  (``N1``, ``h100``, ``Kernel_3``, ``V3``, ``O1``, ``b16``, ``fp32``, ``§7.5.1``), followed by
  ``.digit`` (``7.5.2``, a section or figure number), or followed directly by a letter that is
  not a unit (``2nd``, ``3x3``, ``cuda12x``);
* a number preceded by ``Fig.``, ``Table``, ``Seed``/``seed``, ``Exercise`` or ``chapter`` is a
  reference;
* a number is a *figure* when a unit or multiplier follows it (optionally after a space or
  ``**``, and after at most one lower-case word: "48 thread blocks", "88 small kernels";
  ``UNITS`` lists them: time, percent, ``x``/``×``, bytes, ``G``/``M``/``k``, and counted
  things: ``ops``, ``kernels``, ``blocks``, ``SMs``, ``slots``, ``rows``, ``policies``,
  ``streams`` ...), or when it has decimals or thousands separators.  Bare small integers
  (``batch 1``, ``48 of 80``, ``exit 141``, list and section numbering) and numbers written as
  words (``two waves``) are not figures.

A figure is *covered* when it lies inside the ``{}`` of a checked entry (the test recomputes that
digit string) or inside the text of a GIVEN or MEASURED_ELSEWHERE entry (quoted with a reason).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
README = "README.md"

UNITS = ("µs", "us", "ms", "s", "%", "x", "×", "MiB", "GiB", "KiB", "kB", "MB", "GB", "G", "M",
         "k", "ops", "op", "kernels", "kernel", "blocks", "SMs", "slots", "rows", "policies",
         "streams", "states", "runs", "networks", "iterations", "waves", "tensors", "bytes",
         "signals", "syncs", "subgraphs", "chains", "channels", "minutes", "min")
_NUM = r"\d+(?:,\d{3})*(?:\.\d+)?"
_UNIT = "|".join(sorted((re.escape(u) for u in UNITS), key=len, reverse=True))
FIGURE = re.compile(
    rf"(?<![\w.§,])(?<!\d,)(?P<num>{_NUM}(?:\s?[–-]\s?{_NUM})?)(?![.,]\d)"
    rf"(?:(?P<unit>\s?(?:\*\*)?(?:(?<=\s)[a-z]+\s)?(?:{_UNIT}))(?![\w])|(?![\w]))")
_REFERENCE = re.compile(r"(?:Fig\.|Table|[Ss]eed|Exercise|chapter|§)\s?$")
_CODE_SPAN = re.compile(r"`[^`]*`")
_FENCE = re.compile(r"^```.*?^```[^\n]*$", re.M | re.S)


@dataclass(frozen=True)
class Figure:
    """One figure found in a text: where (file, cell), the digit string and its context."""

    where: str
    cell: int
    start: int
    end: int
    token: str
    context: str

    def __str__(self) -> str:
        cell = f", markdown cell {self.cell}" if self.cell >= 0 else ""
        return f"{self.where}{cell}: {self.token!r} in ...{self.context}..."


def normalise(text: str) -> str:
    """``text`` without fenced code blocks and with every run of whitespace one space."""
    return " ".join(_FENCE.sub(" ", text).split())


@cache
def texts(where: str) -> tuple[tuple[int, str], ...]:
    """The prose of ``where`` (``README.md`` or a notebook's file name): (cell index, text)
    pairs, one per markdown cell (README: one pair, index -1)."""
    if where == README:
        return ((-1, normalise((ROOT / README).read_text(encoding="utf-8"))),)
    cells = json.loads((NOTEBOOKS / where).read_text(encoding="utf-8"))["cells"]
    return tuple((i, normalise("".join(c["source"]))) for i, c in enumerate(cells)
                 if c["cell_type"] == "markdown")


def prose(where: str) -> str:
    """All of ``where``'s prose as one string (cells joined by a space)."""
    return " ".join(text for _, text in texts(where))


def find_figures(text: str) -> list[tuple[int, int, str]]:
    """(start, end, figure with its unit) of every figure of ``text`` (normalised) by the rule
    above, in order; O(length of the text)."""
    code = [m.span() for m in _CODE_SPAN.finditer(text)]
    found = []
    for m in FIGURE.finditer(text):
        start, end = m.span("num")
        if any(a <= start < b for a, b in code) or _REFERENCE.search(text[:start]):
            continue
        if m.group("unit") is None and not re.search(r"[.,]", m.group("num")):
            continue
        found.append((start, end, m.group(0).strip()))
    return found


def figures(where: str) -> list[Figure]:
    """Every figure of ``where``'s prose, with its cell and context."""
    return [Figure(where, cell, start, end, token, text[max(0, start - 40):end + 30])
            for cell, text in texts(where) for start, end, token in find_figures(text)]


def _pattern(template: str) -> re.Pattern[str]:
    """``template`` as a regular expression whose groups are its ``{}`` (no spaces inside)."""
    parts = [re.escape(re.sub(r"\s+", " ", p)) for p in template.split("{}")]
    return re.compile(r"(\S*?)".join(parts))


def checked_spans(where: str, template: str) -> list[tuple[int, int, int]]:
    """(cell, start, end) of every ``{}`` of ``template`` wherever it occurs in the prose."""
    spans = []
    for cell, text in texts(where):
        for m in _pattern(template).finditer(text):
            spans += [(cell, *m.span(g)) for g in range(1, (m.re.groups or 0) + 1)]
    return spans


def given_spans(where: str, text: str) -> list[tuple[int, int, int]]:
    """(cell, start, end) of every occurrence of ``text`` quoted as it stands."""
    text = " ".join(text.split())
    return [(cell, m.start(), m.end()) for cell, prose_ in texts(where)
            for m in re.finditer(re.escape(text), prose_)]


def uncovered(where: str, spans: list[tuple[int, int, int]]) -> list[Figure]:
    """The figures of ``where`` that no span covers (a span covers a figure it overlaps)."""
    return [f for f in figures(where)
            if not any(c == f.cell and a < f.end and f.start < b for c, a, b in spans)]


def render(template: str, fmt: str, value: object) -> str:
    """``template`` with its ``{}`` replaced by ``value`` in ``fmt`` (a tuple fills several
    ``{}``).  A frozenset is a figure several results must agree on (e.g. every multi-stream
    policy's speedup rounds to the same 1.2x): if their formatted values differ, they are shown
    side by side, which no quote can match."""
    def one(v: object) -> str:
        if isinstance(v, frozenset):
            shown = sorted({fmt.format(x) for x in v})
            return shown[0] if len(shown) == 1 else "{" + " | ".join(shown) + "}"
        return fmt.format(v)

    return template.format(*(one(v) for v in (value if isinstance(value, tuple) else (value,))))


def quoted_ids(entries: list[tuple[str, str, str, object]]) -> list[str]:
    """Test ids of (notebook, template, format, compute) entries: the notebook's number and the
    template."""
    return [f"{nb[:2]}:{text}" for nb, text, _, _ in entries]


def assert_quoted(notebook: str, text: str, fmt: str, compute: object) -> None:
    """The notebook's prose says ``text`` with the value ``compute()`` gives, in ``fmt``."""
    quoted = render(text, fmt, compute())  # type: ignore[operator]
    assert quoted in prose(notebook), f"{notebook}: the prose should say {quoted!r}"
