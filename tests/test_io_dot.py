"""DOT import: round trip with to_dot, hand-written files, errors with line numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench as wb
from workbench.io.dot import graph_from_dot, load_dot, to_dot
from workbench.values.graph import DEFAULT_TENSOR_BYTES


def test_round_trip_inception(tmp_path: Path) -> None:
    g = wb.models.inception_v3(fused=False)
    back = wb.load(wb.save(g, tmp_path / "g.dot"))
    assert back.op_ids == g.op_ids and back.name == g.name
    assert [op.kind for op in back.ops] == [op.kind for op in g.ops]
    assert [op.flops for op in back.ops] == [op.flops for op in g.ops]
    assert back.edges == g.edges


def test_round_trip_control_edges_and_odd_ids(tmp_path: Path) -> None:
    ids = ['a"q', "b\\c", "line\nbreak", "<b>html</b>", "x y", "1.5", "ünï"]
    g = wb.Graph.from_edges([(ids[i], ids[i + 1]) for i in range(len(ids) - 1)])
    g = g.replace(control_edges=[(ids[0], ids[-1])])
    back = load_dot(wb.save(g, tmp_path / "g.gv"))
    assert back.op_ids == g.op_ids
    assert back.edges == g.edges and back.control_edges == ((ids[0], ids[-1]),)
    assert back.is_control_edge(ids[0], ids[-1])


HAND = """\
// a hand-written graph
/* with a block
   comment */
# and a preprocessor-style comment
strict digraph "my net" {
  rankdir = LR
  node [shape=box, kind=relu]
  stem [kind=conv2d, flops=2e9, thread_blocks=80, size=4096]
  stem -> a -> b -> out
  stem -> c; c -> out
  a -> c [style=dashed]
  b -> c [kind="control"]   // control edge by kind
  out [kind=concat, duration_us=12.5, device=gpu]
  subgraph cluster_x { label="x"; d; d -> {e f} }
  "quoted id" -> out
}
"""


def test_hand_written() -> None:
    g = graph_from_dot(HAND)
    assert g.name == "my net"
    assert g.op_ids == ("stem", "a", "b", "out", "c", "d", "e", "f", "quoted id")
    stem, out = g.op("stem"), g.op("out")
    assert stem.kind == "conv2d" and stem.flops == 2e9 and stem.thread_blocks == 80
    assert stem.duration_us is None  # priced by the roofline model from flops
    assert stem.bytes_written == 4096 and g.op("a").bytes_read == 4096
    assert g.op("a").kind == "relu"  # node [kind=relu] default
    assert out.kind == "concat" and out.duration_us == 12.5
    assert g.op("e").duration_us == 10.0  # nothing given: 10 µs as in Graph.from_edges
    assert g.tensor("b:out").size_bytes == DEFAULT_TENSOR_BYTES
    assert set(g.control_edges) == {("a", "c"), ("b", "c")}
    assert set(g.data_edges) == {("stem", "a"), ("a", "b"), ("b", "out"), ("stem", "c"),
                                 ("c", "out"), ("d", "e"), ("d", "f"), ("quoted id", "out")}
    s = wb.schedule(g, "nnc")
    s.validate()
    assert wb.simulate(s).respects(g)


def test_semicolons_optional_and_chains() -> None:
    g = graph_from_dot("digraph{a->b->c a->c}")
    assert g.edges == (("a", "b"), ("b", "c"), ("a", "c"))


ERRORS = {
    "after_id": ("digraph g {\n  a -> b\n\n  a ]\n}\n", 4,
                 "expected '->' or '[' after node id 'a'"),
    "undirected": ("graph g {\n a -- b\n}\n", 1, "undirected 'graph' is not supported"),
    "dash_edge": ("digraph g {\n a -- b\n}\n", 2, "'--' (undirected edge) in a digraph"),
    "bad_number": ("digraph g {\n a\n a [flops=lots]\n}\n", 3, "node 'a': flops must be"),
    "negative": ("digraph g {\n a [size=-5]\n}\n", 2, "size must be a non-negative"),
    "blocks": ("digraph g {\n a [thread_blocks=1.5]\n}\n", 2, "thread_blocks must be a positive"),
    "unterminated": ('digraph g {\n a -> "b\n}\n', 2, "unterminated quoted string"),
    "comment": ("digraph g {\n /* never closed\n}\n", 2, "unterminated /* comment"),
    "missing_brace": ("digraph g {\n a -> b\n", 3, "missing '}'"),
    "trailing": ("digraph g { a }\nb\n", 2, "after the closing '}'"),
    "attr_syntax": ("digraph g {\n a [kind conv]\n}\n", 2, "expected '=' after attribute"),
    "char": ("digraph g {\n a -> @\n}\n", 2, "unexpected character '@'"),
    "not_dot": ("hello world\n", 1, "expected 'digraph'"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_name_file_and_line(tmp_path: Path, case: str) -> None:
    text, line, message = ERRORS[case]
    path = tmp_path / "g.dot"
    path.write_text(text)
    with pytest.raises(wb.FormatError) as info:
        wb.load(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: line {line}: ") and message in msg, msg
    assert "\n" not in msg


def test_graph_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cycle.dot"
    path.write_text("digraph { a -> b -> c -> a }")
    with pytest.raises(wb.GraphError, match=r"cycle\.dot: cycle: "):
        wb.load(path)
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    with pytest.raises(wb.FormatError, match="not a text file"):
        wb.load(path)


def test_to_dot_unchanged() -> None:
    g = wb.Graph.from_edges([("a", "b")])
    assert to_dot(g).startswith('digraph "graph" {')
