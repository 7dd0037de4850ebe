"""DOT import: round trip with to_dot, hand-written files, the full form that keeps every JSON
field (issue 34), errors with line numbers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench.io.text.dot import graph_from_dot, load_dot, to_dot
from workbench.io.text.json_format import graph_to_dict
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


# ----------------------------------------------------------------- full form (issue 34)
def test_full_form_keeps_every_json_field(tmp_path: Path) -> None:
    g = wb.models.inception_v3()
    text = to_dot(g)
    assert 'graph [format="schedule-workbench-graph", version=1' in text
    back = graph_from_dot(text)
    assert back == g and graph_to_dict(back) == graph_to_dict(g)
    conv = next(op for op in back.ops if op.kind == "conv2d")
    assert conv.attrs.keys() == g.op(conv.id).attrs.keys() and conv.thread_blocks is not None


def test_control_flow_sub_graphs_travel_in_attrs(tmp_path: Path) -> None:
    for g in (wb.models.nnc_while_loop(), wb.models.rnn_loop(), wb.models.nnc_case_of()):
        back = wb.load(wb.save(g, tmp_path / "g.dot"))
        assert back == g and graph_to_dict(back) == graph_to_dict(g)


def test_hand_edited_full_form_vocabulary_attribute_merges(tmp_path: Path) -> None:
    g = wb.Graph([wb.Op("c", kind="conv2d", outputs=("y",), attrs={"kernel": [3, 3]})])
    text = to_dot(g).replace("label=", 'strides="2,2", label=')
    assert graph_from_dot(text).op("c").attrs == {"kernel": [3, 3], "stride": [2, 2]}
    clash = to_dot(g).replace("label=", 'kernel_shape="5,5", label=')
    with pytest.raises(wb.FormatError, match=r"line 5: node 'c': attribute 'kernel' and "
                                             r"attrs\['kernel'\] say different things"):
        graph_from_dot(clash)


def _full(extra_node: str = "", extra_graph: str = "", edges: str = "a -> b;") -> str:
    return (f'digraph g {{\n graph [format="schedule-workbench-graph", version=1, '
            f'tensors="[{{\\"id\\":\\"t\\",\\"size_bytes\\":8,\\"producer\\":\\"a\\"}}]"'
            f'{extra_graph}];\n a [outputs="[\\"t\\"]"{extra_node}];\n'
            f' b [inputs="[\\"t\\"]"];\n {edges}\n}}\n')


def test_full_form_by_hand() -> None:
    g = graph_from_dot(_full(", duration_us=3, bytes_written=1e3"))
    assert g.tensor("t").size_bytes == 8 and g.op("a").duration_us == 3
    assert g.op("a").bytes_written == 1000 and isinstance(g.op("a").bytes_written, int)
    assert g.data_edges == (("a", "b"),) and g.op("b").duration_us is None


FULL_ERRORS = {
    "fractional size": ("digraph g {\n a [size=1.5]\n}\n", r"line 2: node 'a': size must be a "
                        r"non-negative integer \(a whole number of bytes\)"),
    "fractional bytes alias": ("digraph g {\n a [bytes_read=0.5]\n}\n",
                               r"line 2: node 'a': bytes_read must be a non-negative integer"),
    "fractional op bytes": (_full(", bytes_read=1.5"),
                            r"line 3: node 'a': bytes_read must be a whole number of bytes, "
                            r"got 1\.5"),
    "fractional tensor size": (_full().replace('size_bytes\\":8', 'size_bytes\\":8.5'),
                               r"line 2: tensors\[0\] \('t'\): size_bytes must be a whole "
                               r"number of bytes"),
    "bad attrs json": (_full(', attrs="{\\"k\\": [1,}"'), r"line 3: node 'a': attrs: line 1, "
                       r"column \d+: invalid JSON"),
    "attrs not object": (_full(', attrs="[1]"'), r"attrs must be a JSON object, got list"),
    "huge integer": (_full(f', attrs="{{\\"k\\": {"9" * 5000}}}"'), r"line 3: node 'a': attrs"),
    "deep json": (_full(', attrs="' + "[" * 100_000 + "]" * 100_000 + '"'),
                  r"line 3: node 'a': attrs: JSON nested too deeply"),
    "edge without data": (_full(edges="a -> b; b -> a2;"), r"line 5: edge 'b' -> 'a2': 'a2' "
                          r"reads no output of 'b'"),
    "data without edge": (_full(edges=""), r"line 4: node 'b' reads an output of 'a', but the "
                          r"file has no edge 'a' -> 'b'"),
    "size in full form": (_full(", size=4"), r"line 3: node 'a': size is for files without "
                          r"graph \[format=\.\.\.\]"),
    "inputs in short form": ('digraph g { a [inputs="[]"] }', r"line 1: node 'a': inputs is for "
                             r"files with graph \[format="),
    "tensors without format": ('digraph g { graph [tensors="[]"]; a }',
                               r"graph attribute 'tensors' needs the full form"),
    "graph field in subgraph": ('digraph g { subgraph s { graph [format="x"] } }',
                                r"graph attribute 'format' belongs to the top-level graph"),
    "wrong format": (_full().replace('format="schedule', 'format="other'),
                     r"unknown format 'other-workbench-graph'"),
    "wrong version": (_full().replace("version=1", "version=2"), r"unsupported version 2"),
    "bad op field": (_full(", thread_blocks=0"), r"thread_blocks must be a positive integer"),
    "unknown op field json": (_full(', outputs="[1]"'), r"line 3: ops\[0\]\.outputs must be a "
                              r"list of tensor ids"),
}


@pytest.mark.parametrize("case", sorted(FULL_ERRORS))
def test_full_form_errors_are_one_line(tmp_path: Path, case: str) -> None:
    text, match = FULL_ERRORS[case]
    path = tmp_path / "g.dot"
    path.write_text(text)
    with pytest.raises((wb.FormatError, wb.GraphError)) as info:
        wb.load(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: ") and "\n" not in msg, msg
    assert re.search(match, msg), msg


def test_quoted_strings_unescape_from_the_left() -> None:
    g = graph_from_dot('digraph g { "a\\\\" -> "b\\"c"; "d\\n\\\\\\"e" }')
    assert g.op_ids == ("a\\", 'b"c', 'd\\n\\"e')
    g = graph_from_dot('digraph g { "long \\\nline" }')
    assert g.op_ids == ("long line",)


def test_control_flow_at_the_depth_limit_from_a_deep_stack(tmp_path: Path) -> None:
    """A graph nested MAX_CONTROL_DEPTH deep saves and loads as DOT from a caller already deep
    in the stack, as JSON does (the DOT reader and writer take the JSON format's headroom)."""
    import inspect
    import sys

    from tests.fuzz.actions_io import nested_text
    from workbench.values.graph_items import MAX_CONTROL_DEPTH

    (tmp_path / "n.json").write_text(nested_text(MAX_CONTROL_DEPTH, ("while", "case_of")))
    g = wb.load(tmp_path / "n.json")

    def deep(n: int, fn: Any) -> Any:
        return fn() if n <= 0 else deep(n - 1, fn)

    room = sys.getrecursionlimit() - len(inspect.stack()) - 60
    deep(room, lambda: wb.save(g, tmp_path / "n.dot"))
    assert deep(room, lambda: wb.load(tmp_path / "n.dot")) == g
