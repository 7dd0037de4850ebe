"""The DOT tokenizer of :mod:`workbench.io.text.dot`: tokens made as the parser asks for them.

One regular-expression match per token (the blanks before it included; a quoted string is one
match too), a small ``NamedTuple`` per token, and none kept: the parser holds two tokens at a
time, not the file's, so memory follows the graph, not the text (a 13 MB DOT file on one line
took 950 MB as a token list).  Every error is a one-line :class:`FormatError` with the line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from workbench._progress import Reading
from workbench.errors import FormatError

_TOKEN = re.compile(r"""
    [ \t\r\f\v]*
    (?:
      (?P<id>[A-Za-z_\x80-\U0010ffff][A-Za-z_0-9\x80-\U0010ffff]*)
    | (?P<punct>[{}\[\];,=:])
    | (?P<arrow>->|--)
    | "(?P<quoted>[^"\\]*(?:\\.[^"\\]*)*)"
    | (?P<num>-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)  # + exponents (repr)
    | (?P<newline>\n+)
    | (?P<comment>//[^\n]*|\#[^\n]*)
    | (?P<block>/\*)
    | (?P<html><)
    | (?P<open>")
    | (?P<end>\Z)
    )
""", re.VERBOSE | re.DOTALL)
_BLANKS = re.compile(r"[ \t\r\f\v]*")

#: Tokens between two steps of the reading bar.
_BAR_TOKENS = 1 << 16


class Token(NamedTuple):
    """One token: its kind, its text (a string's body unescaped), its line, whether quoted."""

    kind: str  # "id" (any identifier, numeral or string), "punct", "arrow", "end"
    text: str
    line: int
    quoted: bool = False


def tokens(text: str, where: str, bar: Reading | None = None) -> Iterator[Token]:
    """The tokens of ``text``, made as they are asked for, the last one ``end``: O(length),
    one regular-expression match per token (the blanks before a token are part of its match).
    ``bar``: advanced by the characters read."""
    pos, line, count, shown = 0, 1, 0, 0
    match, make = _TOKEN.match, tuple.__new__  # make(Token, (...)): no Python-level __new__
    while True:
        m = match(text, pos)
        if m is None:
            blanks = _BLANKS.match(text, pos)
            bad = blanks.end() if blanks else pos
            raise FormatError(f"{where}: line {line}: unexpected character {text[bad]!r}")
        kind = m.lastgroup
        if kind == "id" or kind == "num":
            yield make(Token, ("id", m.group(kind), line, False))
        elif kind == "punct" or kind == "arrow":
            yield make(Token, (kind, m.group(kind), line, False))
        elif kind == "quoted":
            body = m.group(kind)
            yield Token("id", _unescape(body) if "\\" in body else body, line, quoted=True)
            line += body.count("\n")
        elif kind == "newline":
            line += m.end() - m.start(kind)
        elif kind == "end":
            yield Token("end", "end of file", line)
            return
        elif kind == "block":
            stop = text.find("*/", m.end())
            if stop < 0:
                raise FormatError(f"{where}: line {line}: unterminated /* comment")
            line += text.count("\n", m.end(), stop)
            pos = stop + 2
            continue
        elif kind == "html":
            value, end = _html(text, m.start(kind), line, where)
            yield Token("id", value, line, quoted=True)
            line += text.count("\n", m.start(kind), end)
            pos = end
            continue
        elif kind == "open":
            raise FormatError(f"{where}: line {line}: unterminated quoted string")
        pos = m.end()
        count += 1
        if bar is not None and count % _BAR_TOKENS == 0:
            bar.advance(pos - shown)
            shown = pos


def _unescape(body: str) -> str:
    """A quoted string's body: ``\\"`` and ``\\\\`` unescape, backslash-newline continues the
    line, other backslashes stay (``\\n`` in a label is DOT's own escape); splitting at ``\\\\``
    pairs the escapes from the left.  O(length)."""
    if "\\\\" not in body and "\\\n" not in body:
        return body.replace('\\"', '"')  # the usual case: only quotes escaped
    return "\\".join(part.replace('\\"', '"').replace("\\\n", "")
                      for part in body.split("\\\\"))


def _html(text: str, start: int, line: int, where: str) -> tuple[str, int]:
    depth, i, n = 0, start, len(text)
    while i < n:
        if text[i] == "<":
            depth += 1
        elif text[i] == ">":
            depth -= 1
            if depth == 0:
                return text[start + 1:i], i + 1
        i += 1
    raise FormatError(f"{where}: line {line}: unterminated <...> string")


__all__ = ["Token", "tokens"]
