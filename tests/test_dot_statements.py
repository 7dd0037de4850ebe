"""The DOT reader's statement scanner (io/text/dot_statements.py, issue 44) against the tokenizer
and parser it stands in for: whatever it reads, it reads exactly as the parser does (names, graph
attributes, nodes with their lines and defaults, edges with their lines); whatever the parser
refuses, it leaves to the parser (so the errors stay the parser's)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import workbench as wb
from workbench.errors import WorkbenchError
from workbench.io.text.dot import _Parser, graph_from_dot, to_dot
from workbench.io.text.dot_statements import scan
from workbench.io.text.dot_tokens import tokens


def parsed(text: str) -> Any:
    """What the tokenizer and parser make of ``text`` (the scanner's reference)."""
    p = _Parser(tokens(text, "t"), "t")
    p.parse()
    return p.name, p.top, {n: (node.line, node.attrs) for n, node in p.nodes.items()}, p.edges


def _graphs() -> list[wb.Graph]:
    ids = ['a"q', "b\\c", "line\nbreak", "x y", "1.5", "ünï", "node", "back\\\\\"slash"]
    odd = wb.Graph.from_edges([(ids[i], ids[i + 1]) for i in range(len(ids) - 1)])
    odd = odd.replace(control_edges=[(ids[0], ids[-1])])
    return [odd, wb.models.inception_v3(fused=False), wb.models.random_dag(300, seed=3),
            wb.Graph.from_edges([("a", "b"), ("a", "c")], durations={"a": 1.5})]


@pytest.mark.parametrize("index", range(len(_graphs())))
def test_what_to_dot_writes_is_scanned_as_the_parser_reads_it(index: int) -> None:
    graph = _graphs()[index]
    text = to_dot(graph)
    got = scan(text, "t")
    assert got is not None  # the writer's form is the scanner's
    assert got == parsed(text)
    assert graph_from_dot(text) == graph


_WORDS = ["a", "b", "n1", "node", "edge", "graph", "subgraph", "Node", "1.5", "-2", ".5", "1e3",
          "x_y", "ünï", "kind", "label", "shape", "flops", "style", "dashed", "control", "data",
          "relu", "conv2d", "size", "kernel", "rankdir", "TB", "format", "bogus", "1e", "3x"]
_PUNCT = [" ", " ", "  ", "\t", "\n", "\n\n", ";", ",", "=", "[", "]", "{", "}", "->", "--",
          ":", "//c\n", "/*c*/", "#c\n", "<h>", "\r\n"]


def _quoted(rng: random.Random) -> str:
    body = rng.choice(["a", "x y", "l\nm", 'q\\"r', "s\\\\", "t\\\nu", "", "[1, 2]", "3,3",
                       "n1", "dashed", "control", '{"kernel": [3, 3]}', "ü"])
    return f'"{body}"'


def _token(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        return rng.choice(_WORDS)
    if r < 0.6:
        return _quoted(rng)
    return rng.choice(_PUNCT)


def _statement(rng: random.Random) -> str:
    """A statement that is usually well formed, sometimes with a random token spliced in."""
    ident = (lambda: _quoted(rng) if rng.random() < 0.4 else rng.choice(_WORDS[:4] + ["c"]))
    value = (lambda: _quoted(rng) if rng.random() < 0.5 else rng.choice(_WORDS))
    parts = [ident()]
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        parts += [rng.choice([" -> ", "->", " ->\t"]), ident()]
    if rng.random() < 0.6:
        keys = rng.sample(["kind", "label", "flops", "style", "shape", "size", "kernel",
                           "duration_us", "bogus", "rankdir", "thread_blocks"], rng.randint(0, 3))
        attrs = [f"{k}{rng.choice(['=', ' = '])}{value()}" for k in keys]
        parts.append(" [" + rng.choice([", ", ",", " ", ";"]).join(attrs) + "]")
    if rng.random() < 0.1:
        parts.insert(rng.randrange(len(parts) + 1), _token(rng))
    return "".join(parts) + rng.choice([";", ";", "\n", " ", ";\n", ""])


def _snippet(rng: random.Random) -> str:
    head = rng.choice(["digraph g {"] * 4 + ["digraph {", 'digraph "n m" {\n', "digraph\ng\n{",
                                             "strict digraph g {", "Digraph g {", "graph g {"])
    body = []
    for _ in range(rng.randint(0, 6)):
        r = rng.random()
        if r < 0.1:
            body.append(f"{rng.choice(['node', 'edge', 'graph'])} [{rng.choice(_WORDS)}="
                        f"{_quoted(rng)}];")
        elif r < 0.15:
            body.append(f"{rng.choice(_WORDS)}={rng.choice(_WORDS)};")
        else:
            body.append(_statement(rng))
        body.append(rng.choice(["\n", " ", "\n  ", ""]))
    return head + "".join(body) + rng.choice(["}", "}\n", "\n}", "}", "} \n", "", "} x"])


def test_random_snippets_read_as_the_parser_reads_them() -> None:
    rng = random.Random(44)
    read = refused = 0
    for _ in range(4000):
        text = _snippet(rng)
        got = scan(text, "t")
        try:
            want = parsed(text)
        except WorkbenchError:
            assert got is None, text  # the parser's error, not the scanner's reading
            refused += 1
            continue
        if got is not None:
            assert got == want, text
            read += 1
    assert read > 400 and refused > 400  # both sides of the line are exercised


def test_a_bar_advanced_by_a_scan_that_gives_up_is_rewound() -> None:
    class Bar:
        def __init__(self) -> None:
            self.n = 0

        def advance(self, steps: int) -> None:
            self.n += steps

    bar = Bar()
    text = "digraph g {\n" + 'a -> b;\n' * 5000 + "a -> {b c}\n}"
    assert scan(text, "t", bar) is None  # type: ignore[arg-type]
    assert bar.n == 0
    assert scan(text.replace("{b c}", "c"), "t", bar) is not None  # type: ignore[arg-type]
    assert bar.n == len(text.replace("{b c}", "c"))


def test_runs_of_node_statements_read_as_the_parser_reads_them() -> None:
    """The scanner reads consecutive ``"id" [...];`` statements in one run (issue 44): new nodes,
    nodes an edge declared first, nodes under ``node [...]`` defaults, a node declared twice,
    multi-line values, blank lines and stray ``;`` between them, lines counted as the parser."""
    rng = random.Random(7)
    pieces = ['"a" [kind="relu"];', '"b" [label="two\nlines", kind="add"];', '"a" [flops=3];',
              'node [device="cpu"];', '"c" -> "d";\n', '"d" [kind="mul"];', '"e" [shape=box];',
              '"f" [label="q\\"r"];', "\n", "\n\n", ";", "  ", "\t;\n"]
    for _ in range(600):
        body = "".join(rng.choice(pieces) + rng.choice(["\n", "", " ", ";\n"])
                       for _ in range(rng.randint(1, 12)))
        text = f"digraph g {{\n{body}}}\n"
        want = parsed(text)
        got = scan(text, "t")
        assert got == want, text


@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=6), max_size=4),
       st.sampled_from(["inputs", "outputs", "flops", "bytes_read", "thread_blocks"]))
def test_quick_values_are_field_values(items: list[str], name: str) -> None:
    """dot_attrs._quick_value's fast paths (a plain list of strings split at ``","``, a plain
    count through int()) give what field_value gives, or leave it to field_value."""
    from workbench.io.text.dot_attrs import _SLOW, _quick_value, field_value

    for text in (json.dumps(items), json.dumps(items, ensure_ascii=False),
                 json.dumps(items, separators=(",", ":"), ensure_ascii=False),
                 "".join(items), str(len("".join(items))) * 3):
        try:
            want: Any = field_value(name, text, "t")
        except WorkbenchError:
            want = _SLOW
        got = _quick_value(name, text)
        assert got is _SLOW or got == want and type(got) is type(want), (name, text)
