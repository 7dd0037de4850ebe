"""The fast path of :func:`workbench.io.text.dot.graph_from_dot`: DOT read statement by statement.

The tokenizer (:mod:`workbench.io.text.dot_tokens`) and the recursive-descent parser cost about 2 µs
per token in Python; a file :func:`~workbench.io.text.dot_write.to_dot` wrote has some 55 tokens per
op (random 10k: 550,000 tokens, 1.2 s where the JSON reader takes 0.25 s).  :func:`scan` reads
the statements such files (and most hand-written ones) are made of with one regular-expression
match per statement and one ``findall`` per attribute list:

* ``digraph NAME {`` ... ``}`` (``NAME`` optional), blank lines and stray ``;``;
* ``ID [-> ID]* [[key=value, ...]]`` ending in ``;``, a newline or ``}`` (node statements and
  edge chains, ids quoted or bare), ``node [...]`` / ``edge [...]`` / ``graph [...]``, and
  ``key=value`` graph attributes.

It gives exactly what the parser gives (the graph's name, the workbench graph attributes, the
nodes ``id -> (line, attrs)`` with the ``node`` defaults they were declared under, the edges
``(a, b, control, line)``, lines as the tokenizer counts them), or ``None`` as soon as anything
else turns up (a comment, a subgraph or ``{a b}`` group, a port, an HTML string, ``--``, a
non-ASCII bare id, a name or value the parser would refuse, an attribute the checks would name,
more nodes or edges than the limits allow): then the caller parses the whole text the slow way,
which raises the error or reads the rest, so errors are the parser's, word for word.  Tokens are
matched with atomic groups (maximal munch, as the tokenizer: ``a=bc=d`` is refused, not read as
``a=b, c=d``).

Complexity: O(length of the text), a few C-level matches per statement.
"""

from __future__ import annotations

import re
from typing import Any

from workbench._atomic import max_ops
from workbench._progress import Reading
from workbench.io.text import dot_tokens
from workbench.io.text.dot_attrs import (
    EDGE_ATTRS,
    EDGE_TYPES,
    GRAPHVIZ_ATTRS,
    NODE_ATTRS,
    OP_ATTRS,
    graph_fields,
)
from workbench.io.text.dot_tokens import _unescape

Attrs = dict[str, tuple[str, int]]
#: What :func:`scan` returns: name, graph attributes, nodes (id -> (line, attrs)), edges.
Scanned = tuple[str, Attrs, dict[str, tuple[int, Attrs]], list[tuple[str, str, bool, int]]]

_B = r"[ \t\r\f\v]*"  # blanks within a statement (newlines only between statements)
_QUOTED = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_BARE = r"[A-Za-z_][A-Za-z_0-9]*+|-?(?:\.[0-9]++|[0-9]++(?:\.[0-9]*+)?)(?:[eE][-+]?[0-9]++)?"
_ID = rf"(?>{_QUOTED}|{_BARE})"
_KEY = r"(?>[A-Za-z_][A-Za-z_0-9]*+)"
_END = r"(?:;|(?=\n)|(?=\})|\Z)"
# an attribute: key, then a quoted value's body or a bare value (never empty)
_ATTR = re.compile(rf'{_B}({_KEY}){_B}={_B}(?>"([^"\\]*+(?:\\.[^"\\]*+)*+)"|({_BARE})){_B}[,;]?',
                   re.DOTALL)
_ATTRS = rf"((?:{_B}{_KEY}{_B}={_B}{_ID}{_B}[,;]?)*+)"  # an attribute list's body
_STATEMENT = re.compile(
    rf"{_B}({_ID})((?:{_B}->{_B}{_ID})*+){_B}(?:\[{_ATTRS}{_B}\])?{_B}{_END}", re.DOTALL)
_PLAIN = r'"[^"\\\n]*+"'  # a quoted id without escapes or newlines
_PLAIN_EDGES = re.compile(rf"(?:{_B}{_PLAIN}{_B}->{_B}{_PLAIN}{_B};[ \t\r\f\v]*\n)+")
_PAIR = re.compile(rf'"([^"\\\n]*+)"{_B}->{_B}"([^"\\\n]*+)"')
_PLAIN_NODE = re.compile(rf'{_B}"([^"\\\n]*+)"{_B}\[{_ATTRS}{_B}\]{_B};', re.DOTALL)
_ARROW_ID = re.compile(rf"{_B}->{_B}({_ID})", re.DOTALL)
_ASSIGN = re.compile(rf"{_B}({_ID}){_B}={_B}({_ID}){_B}{_END}", re.DOTALL)
_HEAD = re.compile(rf"[ \t\r\f\v\n]*(?i:digraph)(?:[ \t\r\f\v\n]+({_ID}))?[ \t\r\f\v\n]*\{{",
                   re.DOTALL)
_GAP = re.compile(r"[ \t\r\f\v\n;]*")
_TAIL = re.compile(r"[ \t\r\f\v\n]*\Z")

_KEYWORDS = frozenset({"node", "edge", "graph", "subgraph"})
_ALLOWED = {"node": NODE_ATTRS | GRAPHVIZ_ATTRS | OP_ATTRS,
            "edge": EDGE_ATTRS | GRAPHVIZ_ATTRS,
            "graph": frozenset(graph_fields()) | GRAPHVIZ_ATTRS}
_GRAPH_FIELDS = frozenset(graph_fields())
#: Edges per file after expanding ``{a b} -> {c d}`` groups (a 57 kB file asked for 25M); the
#: parser's limit too.
MAX_EDGES = 1_000_000


class _Bail(Exception):
    """Not a statement :func:`scan` reads: the parser takes the whole text."""


def _text(token: str) -> tuple[str, bool]:
    """A token's text as the tokenizer gives it, and whether it was quoted."""
    if token[:1] == '"':
        body = token[1:-1]
        return (_unescape(body) if "\\" in body else body), True
    return token, False


def _attrs(body: str, line: int, context: str) -> Attrs:
    """The attributes of an attribute list's ``body`` starting on ``line``; ``_Bail`` for a key
    the checks would refuse (they name it)."""
    found = _ATTR.findall(body)
    newline = body.find("\n")
    if newline < 0 or newline > body.rfind("="):  # every value starts on ``line``
        out = {key: (bare or (_unescape(quoted) if "\\" in quoted else quoted), line)
               for key, quoted, bare in found}
    else:
        out = {}
        for key, quoted, bare in found:
            out[key] = (bare or (_unescape(quoted) if "\\" in quoted else quoted), line)
            line += quoted.count("\n")
    if not _ALLOWED[context].issuperset(out):
        raise _Bail
    if context == "edge" and "kind" in out and out["kind"][0].casefold() not in EDGE_TYPES:
        raise _Bail
    return out


def scan(text: str, where: str, bar: Reading | None = None) -> Scanned | None:
    """The parse of ``text`` (module docstring), or ``None`` when the parser must read it.
    ``bar``: advanced by the characters read."""
    shown = [0]  # characters the bar was advanced by
    try:
        return _scan(text, bar, shown)
    except _Bail:
        if bar is not None and shown[0]:
            bar.advance(-shown[0])  # the parser advances it again from the start
        return None


def _scan(text: str, bar: Reading | None, shown: list[int]) -> Scanned:
    head = _HEAD.match(text)
    if head is None:
        raise _Bail
    name = _text(head.group(1))[0] if head.group(1) else "graph"
    pos, line = head.end(), 1 + text.count("\n", 0, head.end())
    nodes: dict[str, tuple[int, Attrs]] = {}
    edges: list[tuple[str, str, bool, int]] = []
    top: Attrs = {}
    node_defaults: Attrs = {}
    edge_defaults: Attrs = {}
    limit, every, count = max_ops(), dot_tokens._BAR_TOKENS // 16 or 1, 0
    gap, statement, assign = _GAP.match, _STATEMENT.match, _ASSIGN.match
    plain_edges, pair, plain_node = _PLAIN_EDGES.match, _PAIR.findall, _PLAIN_NODE.match

    def declare(node_id: str, at: int) -> None:
        if node_id not in nodes:
            if len(nodes) >= limit:
                raise _Bail  # the parser names the limit
            nodes[node_id] = (at, dict(node_defaults))

    while True:
        g = gap(text, pos)  # always matches (maybe nothing)
        stop = g.end() if g is not None else pos
        if stop > pos:
            line += text.count("\n", pos, stop)
            pos = stop
        count += 1
        if bar is not None and count % every == 0:
            bar.advance(pos - shown[0])
            shown[0] = pos
        if text.startswith("}", pos):
            if _TAIL.match(text, pos + 1) is None:
                raise _Bail
            if bar is not None:
                bar.advance(len(text) - shown[0])
            return name, top, nodes, edges
        m = plain_edges(text, pos)
        if m is not None:  # lines of "a" -> "b"; (to_dot's data edges): one edge a line
            pairs = pair(text, pos, m.end())
            if len(edges) + len(pairs) > MAX_EDGES:
                raise _Bail
            control = bool(edge_defaults) and _control(edge_defaults)
            for i, (a, b) in enumerate(pairs):
                if a not in nodes:
                    declare(a, line + i)
                if b not in nodes:
                    declare(b, line + i)
            edges.extend([(a, b, control, line + i) for i, (a, b) in enumerate(pairs)])
            line += len(pairs)
            pos = m.end()
            continue
        m = plain_node(text, pos)
        if m is not None:  # "a" [key=value, ...]; (to_dot's nodes)
            node_id = m.group(1)
            declare(node_id, line)
            nodes[node_id][1].update(_attrs(m.group(2), line, "node"))
            line += text.count("\n", pos, m.end())
            pos = m.end()
            continue
        m = statement(text, pos)
        if m is not None:
            _statement(m, text, line, nodes, edges, top, node_defaults, edge_defaults, declare)
            line += text.count("\n", m.start(), m.end())
            pos = m.end()
            continue
        m = assign(text, pos)
        if m is None:
            raise _Bail
        key, quoted = _text(m.group(1))
        if not quoted and key.lower() in _KEYWORDS or key not in _ALLOWED["graph"]:
            raise _Bail
        at = line + text.count("\n", m.start(), m.start(2))
        if key in _GRAPH_FIELDS:
            top[key] = (_text(m.group(2))[0], at)
        line += text.count("\n", m.start(), m.end())
        pos = m.end()


def _control(attrs: Attrs) -> bool:
    """Whether an edge with ``attrs`` (defaults merged) is a control edge, as the parser says."""
    style = attrs.get("style", ("", 0))[0].lower()
    return "dashed" in style or attrs.get("kind", ("", 0))[0].lower() == "control"


def _statement(m: re.Match[str], text: str, line: int, nodes: dict[str, tuple[int, Attrs]],
               edges: list[tuple[str, str, bool, int]], top: Attrs, node_defaults: Attrs,
               edge_defaults: Attrs, declare: Any) -> None:
    """One node, edge-chain or defaults statement matched by ``_STATEMENT`` on ``line``."""
    first, quoted = _text(m.group(1))
    arrows, body = m.group(2), m.group(3)
    if not quoted and first.lower() in _KEYWORDS:
        context = first.lower()
        if arrows or context == "subgraph":
            raise _Bail
        attrs = _attrs(body, line + text.count("\n", m.start(), m.start(3)),
                       context) if body else {}
        if context == "node":
            node_defaults.update(attrs)
        elif context == "edge":
            edge_defaults.update(attrs)
        else:
            for key, value in attrs.items():
                if key in _GRAPH_FIELDS:
                    top[key] = value
        return
    ends = [(first, line)]
    if arrows:
        at = line + m.group(1).count("\n")
        for arrow in _ARROW_ID.finditer(arrows):
            end, quoted = _text(arrow.group(1))
            if not quoted and end.lower() == "subgraph":
                raise _Bail
            ends.append((end, at))
            at += arrow.group(1).count("\n")
    for node_id, at in ends:
        declare(node_id, at)
    context = "edge" if arrows else "node"
    attrs = _attrs(body, line + text.count("\n", m.start(), m.start(3)),
                   context) if body else {}
    if not arrows:
        nodes[first][1].update(attrs)
        return
    if len(edges) + len(ends) - 1 > MAX_EDGES:
        raise _Bail
    control = _control({**edge_defaults, **attrs})
    for (a, _), (b, _) in zip(ends, ends[1:], strict=False):
        edges.append((a, b, control, line))


__all__ = ["MAX_EDGES", "Scanned", "scan"]
