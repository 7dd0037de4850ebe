"""DOT (Graphviz) import and export of a graph.

Export (:func:`to_dot`, :func:`save_dot`, in :mod:`workbench.io.text.dot_write`) writes the *full
form*: every field the JSON format keeps, as DOT attributes (graph fields in a ``graph [...]``
statement, op fields on the nodes, data edges solid, control edges dashed), so a saved DOT
reads back into an equal graph, control-flow sub-graphs included (inside their op's ``attrs``).

Import (:func:`load_dot`) reads the subset of DOT that :func:`to_dot` writes and that people write
by hand, with a small tokenizer (no pydot); plain statements (all that :func:`to_dot` writes)
are read a statement at a time by :mod:`workbench.io.text.dot_statements`, which hands anything else
to the tokenizer and parser, so both read alike and errors are the parser's:

* ``digraph NAME { ... }`` (``strict`` allowed; an undirected ``graph`` is an error);
* node statements ``a [kind=conv2d, flops=1e9, duration_us=12, thread_blocks=80, size=4096,
  device=gpu]``; op attributes the kind reads, in the op vocabulary or a synonym
  (``kernel="3,3"``, ``strides=2``, ``group=4``: ``Op.attrs`` as ``kernel``, ``stride``,
  ``groups``), or all of them as one JSON object (``attrs="{\"kernel\": [3, 3]}"``);
  Graphviz's own attributes (``label``, ``shape``, ...) are ignored, any other name is an error
  naming the nearest workbench attribute (:mod:`workbench.io.text.dot_attrs`);
* edge chains ``a -> b -> c [style=dashed]``; ``style=dashed`` or ``kind="control"`` makes control
  edges, anything else data edges; ``{a b} -> c`` and ``subgraph x { ... }`` are flattened;
* ``node [...]`` / ``edge [...]`` defaults, ``key=value`` graph attributes (Graphviz's, ignored,
  but for the full form's ``format``, ``version``, ``tensors``, ``outputs``), quoted and
  unquoted ids, ports (``a:p``, ignored), comments (``//``, ``/* */``, ``#``), optional ``;``.

A file with the graph attribute ``format`` is in the full form: ops, tensors and outputs are as
the JSON format gives them (:func:`~workbench.io.text.dot_attrs.full_graph`).  Otherwise (the short
form, written by hand) each op produces one tensor ``"<id>:out"`` of ``size`` bytes (default
1 MiB, as :meth:`Graph.from_edges`) and reads its data predecessors' tensors.  An op with
``duration_us`` keeps it; one with neither ``duration_us`` nor ``flops``/``bytes`` gets 10 µs
(as ``from_edges``); otherwise the roofline model prices it.  Byte counts are whole numbers
(``size=1.5`` is an error).  Errors are one line with the file and line number.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench._atomic import check_op_count, max_ops, read_input
from workbench._checks import show
from workbench._gc import without_gc
from workbench._progress import Reading, reading
from workbench.errors import FormatError, GraphError
from workbench.io.text.dot_attrs import (
    BYTE_FIGURES,
    NUMBER_ATTRS,
    check_attr,
    full_graph,
    graph_fields,
    op_attrs,
    op_fields,
)
from workbench.io.text.dot_statements import MAX_EDGES, scan
from workbench.io.text.dot_tokens import Token, tokens
from workbench.io.text.dot_write import save_dot, to_dot
from workbench.values.graph import DEFAULT_TENSOR_BYTES, Graph, Op, Tensor

MAX_NUMBER = float(2**62)  # numeric attributes beyond this are rejected (sums must stay finite)
MAX_NESTING = 100  # subgraph depth (guards the recursive parser against hostile input)
_GRAPH_FIELDS = frozenset(graph_fields())  # graph attributes of the full form (format, tensors)
_FULL_FORM_ONLY = frozenset(op_fields()) - {"kind", "device", "attrs", *NUMBER_ATTRS}


# ==================================================================================== parser
@dataclass
class _Node:
    line: int
    attrs: dict[str, tuple[str, int]] = field(default_factory=dict)  # key -> (value, line)


class _Parser:
    """A recursive-descent parser over a stream of tokens: the current one (``cur``) and, when
    asked, the one after it."""

    def __init__(self, toks: Iterable[Token], where: str) -> None:
        self.stream, self.where = iter(toks), where
        self.cur = next(self.stream)
        self.after: Token | None = None  # the token after ``cur``, once looked at
        self.last = Token("end", "start of file", 1)  # the token taken last
        self.max_nodes = max_ops()
        self.nodes: dict[str, _Node] = {}
        self.edges: list[tuple[str, str, bool, int]] = []  # (a, b, control, line)
        self.name = "graph"
        self.top: dict[str, tuple[str, int]] = {}  # workbench graph attributes (full form)

    # ------------------------------------------------------------------ helpers
    def peek(self, k: int = 0) -> Token:
        """The current token (``k=0``) or the one after it (``k=1``); past the end, the end."""
        if k == 0 or self.cur.kind == "end":
            return self.cur
        if self.after is None:
            self.after = next(self.stream)
        return self.after

    def take(self) -> Token:
        tok = self.last = self.cur
        if tok.kind != "end":
            if self.after is not None:
                self.cur, self.after = self.after, None
            else:
                self.cur = next(self.stream)
        return tok

    def fail(self, message: str, tok: Token | None = None) -> FormatError:
        tok = tok or self.peek()
        return FormatError(f"{self.where}: line {tok.line}: {message}")

    def is_punct(self, text: str, k: int = 0) -> bool:
        tok = self.cur if k == 0 else self.peek(k)
        return tok.kind == "punct" and tok.text == text

    def expect(self, text: str, context: str) -> Token:
        tok = self.peek()
        if not (tok.kind == "punct" and tok.text == text):
            raise self.fail(f"expected '{text}' {context}, got {_show(tok)}")
        return self.take()

    def keyword(self, tok: Token, word: str) -> bool:
        return tok.kind == "id" and not tok.quoted and tok.text.lower() == word

    # ------------------------------------------------------------------ grammar
    def parse(self) -> None:
        tok = self.take()
        if self.keyword(tok, "strict"):
            tok = self.take()
        if self.keyword(tok, "graph"):
            raise self.fail("undirected 'graph' is not supported (use 'digraph' with '->')", tok)
        if not self.keyword(tok, "digraph"):
            raise self.fail(f"expected 'digraph', got {_show(tok)} (is it a DOT file?)", tok)
        if self.peek().kind == "id":
            self.name = self.take().text
        self.expect("{", "to open the graph body")
        self.statements({"node": {}, "edge": {}}, depth=1)
        self.expect("}", "to close the graph")
        if self.peek().kind != "end":
            raise self.fail(f"unexpected {_show(self.peek())} after the closing '}}'")

    def statements(self, defaults: dict[str, dict[str, tuple[str, int]]], depth: int) -> list[str]:
        """Statements up to (not including) the matching ``}``; returns the node ids seen."""
        seen: list[str] = []
        while True:
            tok = self.peek()
            if tok.kind == "end":
                raise self.fail("missing '}' at the end of the graph")
            if tok.kind == "punct" and tok.text == "}":
                return seen
            if tok.kind == "punct" and tok.text == ";":
                self.take()
                continue
            seen.extend(self.statement(defaults, depth))

    def statement(self, defaults: dict[str, dict[str, tuple[str, int]]], depth: int) -> list[str]:
        tok = self.peek()
        if tok.kind == "id" and not tok.quoted and tok.text.lower() in ("node", "edge", "graph"):
            self.take()
            context = tok.text.lower()
            attrs = self.checked(context, self.attr_lists() if self.is_punct("[") else {})
            if context != "graph":
                defaults[context] = {**defaults[context], **attrs}
            else:
                self.graph_attrs(attrs, depth)
            return []
        if tok.kind == "id" and self.is_punct("=", 1):
            self.take()
            self.take()
            value = self.take()
            if value.kind != "id":
                raise self.fail(f"expected a value after '{tok.text} ='", tok)
            self.graph_attrs(self.checked("graph", {tok.text: (value.text, value.line)}), depth)
            return []
        if tok.kind == "arrow" or (tok.kind == "punct" and tok.text != "{"):
            raise self.fail(f"expected a node id or a statement, got {_show(tok)}")
        return self.node_or_edge(defaults, depth)

    def graph_attrs(self, attrs: dict[str, tuple[str, int]], depth: int) -> None:
        """Keep the workbench's graph attributes (``format``, ``tensors``, ...) of the top-level
        graph; in a subgraph they are an error (Graphviz's are ignored everywhere)."""
        for key, (value, line) in attrs.items():
            if key in _GRAPH_FIELDS:
                if depth > 1:
                    raise FormatError(f"{self.where}: line {line}: graph attribute {key!r} "
                                      f"belongs to the top-level graph, not a subgraph")
                self.top[key] = (value, line)

    def endpoint(self, defaults: dict[str, dict[str, tuple[str, int]]],
                 depth: int) -> tuple[list[str], Token | None]:
        """A node id (with an optional port) or a subgraph; returns its node ids and the id's
        token (None for a subgraph)."""
        tok = self.peek()
        if self.keyword(tok, "subgraph") or (tok.kind == "punct" and tok.text == "{"):
            if depth >= MAX_NESTING:
                raise self.fail(f"subgraphs nested more than {MAX_NESTING} deep")
            if self.keyword(tok, "subgraph"):
                self.take()
                if self.peek().kind == "id":
                    self.take()
            self.expect("{", "to open the subgraph")
            inner = {k: dict(v) for k, v in defaults.items()}
            ids = self.statements(inner, depth + 1)
            self.expect("}", "to close the subgraph")
            return ids, None
        if tok.kind != "id":
            raise self.fail(f"expected a node id, got {_show(tok)}")
        self.take()
        for _ in range(2):  # ports: a:port or a:port:compass
            if self.is_punct(":"):
                self.take()
                if self.take().kind != "id":
                    raise self.fail(f"expected a port name after '{tok.text}:'", tok)
        self.declare(tok.text, tok.line, defaults["node"])
        return [tok.text], tok

    def declare(self, node_id: str, line: int, attrs: dict[str, tuple[str, int]]) -> None:
        if node_id not in self.nodes:  # `node [...]` defaults apply when a node is created
            if len(self.nodes) >= self.max_nodes:
                check_op_count(len(self.nodes) + 1, f"{self.where}: line {line}: the file "
                                                    f"names at least")
            self.nodes[node_id] = _Node(line, dict(attrs))

    def node_or_edge(self, defaults: dict[str, dict[str, tuple[str, int]]],
                     depth: int) -> list[str]:
        ends, first = self.endpoint(defaults, depth)
        line = self.last.line
        chain = [ends]
        seen = list(ends)
        while self.peek().kind == "arrow":
            arrow = self.take()
            if arrow.text == "--":
                raise self.fail("'--' (undirected edge) in a digraph; use '->'", arrow)
            ends, _ = self.endpoint(defaults, depth)
            chain.append(ends)
            seen.extend(ends)
        attrs = self.checked("node" if len(chain) == 1 else "edge",
                             self.attr_lists() if self.is_punct("[") else {})
        nxt = self.peek()
        if nxt.kind == "punct" and nxt.text not in (";", "}", "{") or nxt.kind == "arrow":
            what = f"node id {first.text!r}" if first is not None else "subgraph"
            raise self.fail(f"expected '->' or '[' after {what}, got {_show(nxt)}")
        if len(chain) == 1:
            if first is not None:
                self.nodes[first.text].attrs.update(attrs)
            return seen
        merged = {**defaults["edge"], **attrs}
        style = merged.get("style", ("", 0))[0].lower()
        control = "dashed" in style or merged.get("kind", ("", 0))[0].lower() == "control"
        for left, right in zip(chain, chain[1:], strict=False):
            if len(self.edges) + len(left) * len(right) > MAX_EDGES:
                raise FormatError(f"{self.where}: line {line}: the edge statement expands to "
                                  f"{len(left) * len(right):,} edges, over the limit of "
                                  f"{MAX_EDGES:,} edges per file (groups {{...}} -> {{...}} "
                                  f"join every pair)")
            for a in left:
                for b in right:
                    self.edges.append((a, b, control, line))
        return seen

    def checked(self, context: str, attrs: dict[str, tuple[str, int]]
                ) -> dict[str, tuple[str, int]]:
        """``attrs`` after :func:`~workbench.io.text.dot_attrs.check_attr` accepted every key."""
        for key, (value, line) in attrs.items():
            check_attr(context, key, value, f"{self.where}: line {line}")
        return attrs

    def attr_lists(self) -> dict[str, tuple[str, int]]:
        attrs: dict[str, tuple[str, int]] = {}
        while self.is_punct("["):
            self.take()
            while not self.is_punct("]"):
                key = self.take()
                if key.kind != "id":
                    raise self.fail(f"expected an attribute name or ']', got {_show(key)}", key)
                self.expect("=", f"after attribute name {key.text!r}")
                value = self.take()
                if value.kind != "id":
                    raise self.fail(f"expected a value for attribute {key.text!r}, got "
                                    f"{_show(value)}", value)
                attrs[key.text] = (value.text, value.line)
                if self.is_punct(",") or self.is_punct(";"):
                    self.take()
            self.take()
        return attrs


def _show(tok: Token) -> str:
    if tok.kind == "end":
        return "end of file"
    return repr(tok.text) if len(tok.text) <= 40 else repr(tok.text[:40] + "...")


# ==================================================================================== to a Graph
def _number(where: str, node_id: str, key: str, value: tuple[str, int], *,
            positive: bool = False, whole: bool = False) -> float:
    """The figure ``key`` of a node: a non-negative number of at most :data:`MAX_NUMBER`; with
    ``positive`` an integer >= 1 (thread blocks), with ``whole`` an integer (a byte count:
    ``size=1.5`` is an error naming the node and the attribute).  An integer numeral is read
    exactly (no float rounding).  O(len(text))."""
    text, line = value
    x: float
    try:
        x = int(text)
    except ValueError:
        try:
            x = float(text)
        except ValueError:
            x = math.nan
    integer = positive or whole
    if math.isnan(x) or not 0 <= x <= MAX_NUMBER or (integer and x != int(x)) or \
            (positive and x < 1):
        need = ("a positive integer" if positive else
                "a non-negative integer (a whole number of bytes)" if whole else
                "a non-negative number")
        raise FormatError(f"{where}: line {line}: node {node_id!r}: {key} must be {need} of at "
                          f"most {MAX_NUMBER:.3g}, got {text!r}")
    return int(x) if integer else x


def _ops(nodes: dict[str, tuple[int, dict[str, tuple[str, int]]]],
         edges: list[tuple[str, str, bool, int]],
         where: str) -> tuple[list[Op], list[Tensor], list[tuple[str, str]]]:
    # ordered sets (dicts): one pass over the edges, O(V + E)
    data_in: dict[str, dict[str, None]] = {n: {} for n in nodes}
    control: dict[tuple[str, str], None] = {}
    for a, b, is_control, _ in edges:
        if is_control:
            control[a, b] = None
        else:
            data_in[b][a] = None
    control_list = [(a, b) for a, b in control if a not in data_in[b]]
    values: dict[str, dict[str, Any]] = {}
    for node_id, (_, attrs) in nodes.items():
        v: dict[str, Any] = {}
        spelled: dict[str, str] = {}
        for key, raw in attrs.items():
            if key in _FULL_FORM_ONLY:
                raise FormatError(f"{where}: line {raw[1]}: node {show(node_id)}: {key} is for "
                                  f"files with graph [format=\"schedule-workbench-graph\"] "
                                  f"(and their tensors); here each op has one output tensor "
                                  f"and reads those of its data predecessors")
            name = NUMBER_ATTRS.get(key)
            if name is not None:
                value = _number(where, node_id, key, raw, positive=name == "thread_blocks",
                                whole=name in BYTE_FIGURES)
                if name in v and spelled[name] != key and value != v[name]:
                    raise FormatError(f"{where}: line {raw[1]}: node {show(node_id)}: {key}="
                                      f"{raw[0]} and {spelled[name]}={v[name]:g} say different "
                                      f"things (aliases of one figure); keep one")
                v[name], spelled[name] = value, key
        values[node_id] = v
    sizes = {n: int(v.get("size", DEFAULT_TENSOR_BYTES)) for n, v in values.items()}
    ops, tensors = [], []
    for node_id, (_, attrs) in nodes.items():
        v = values[node_id]
        preds = data_in[node_id]
        duration = v.get("duration_us")
        if duration is None and not any(k in v for k in ("flops", "bytes_read", "bytes_written",
                                                         "size")):
            duration = 10.0
        tensors.append(Tensor(f"{node_id}:out", sizes[node_id], producer=node_id))
        ops.append(Op(
            node_id, kind=attrs.get("kind", ("op", 0))[0],
            device=attrs.get("device", ("gpu", 0))[0], flops=float(v.get("flops", 0.0)),
            bytes_read=int(v.get("bytes_read", sum(sizes[p] for p in preds))),
            bytes_written=int(v.get("bytes_written", sizes[node_id])),
            inputs=tuple(f"{p}:out" for p in preds), outputs=(f"{node_id}:out",),
            thread_blocks=int(v["thread_blocks"]) if "thread_blocks" in v else None,
            duration_us=duration, workspace_bytes=int(v.get("workspace_bytes", 0)),
            attrs=op_attrs(node_id, attrs.get("kind", ("op", 0))[0], attrs, where),
        ))
    return ops, tensors, control_list


def graph_from_dot(text: str, *, where: str = "<dot>", _bar: Reading | None = None) -> Graph:
    """Parse DOT text (see the module docstring) into a :class:`Graph`; O(length of the text).
    More than :func:`~workbench._atomic.max_ops` nodes (``WORKBENCH_MAX_OPS``) are refused at
    the node that crosses the limit.  ``_bar``: a reading bar (:func:`load_dot`).

    >>> g = graph_from_dot('digraph g { a [kind=conv2d]; a -> b -> c; a -> c [style=dashed] }')
    >>> g.op_ids, g.op("a").kind, g.control_edges
    (('a', 'b', 'c'), 'conv2d', (('a', 'c'),))
    """
    scanned = scan(text, where, _bar)  # plain statements at C speed, else None
    if scanned is None:
        parser = _Parser(tokens(text, where, _bar), where)
        parser.parse()
        scanned = (parser.name, parser.top,
                   {n: (node.line, node.attrs) for n, node in parser.nodes.items()}, parser.edges)
    name, top, nodes, edges = scanned
    if _bar is not None:
        _bar.phase("building the graph")
    if top:
        if "format" not in top:
            key, (_, line) = next(iter(top.items()))
            raise FormatError(f"{where}: line {line}: graph attribute {key!r} needs the full form "
                              f"(graph [format=\"schedule-workbench-graph\", ...], as "
                              f"wb.save writes)")
        return full_graph(name, top, nodes, edges, where)
    ops, tensors, control = _ops(nodes, edges, where)
    try:
        return Graph(ops, tensors, control, name=name)
    except GraphError as exc:
        raise GraphError(f"{where}: {exc}".replace("\n", "\\n")) from None


@without_gc  # as load_json: the collector would walk the file's containers, none garbage
def load_dot(path: str | Path) -> Graph:
    """Read a ``.dot``/``.gv`` file written by :func:`to_dot` or by hand (module docstring).
    The cyclic garbage collector is paused while it reads (random 10k: 59 -> 43 us an op)."""
    path = Path(path)
    data = read_input(path, what="graph file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not a text file (is it really DOT?)") from None
    del data
    if text.startswith("\ufeff"):
        text = text[1:]
    with reading(path.name, len(text)) as bar:
        bar.phase(f"parsing {show(path.name, 40)}", total=len(text), unit="char")
        return graph_from_dot(text, where=str(path).replace("\n", "\\n"), _bar=bar)


__all__ = ["graph_from_dot", "load_dot", "save_dot", "to_dot"]
