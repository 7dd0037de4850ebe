"""The graph JSON reader's strict-input promise, one check at a time (issue 36: the negative-size
check and the boolean-version check could be removed with no test failing).

Each hostile document breaks exactly one rule and must be refused with the reader's own one-line
message, which names the JSON path; the exact text is asserted, so a check that is dropped and
caught later by the graph's constructor (another error type, no JSON path) or not caught at all
fails the test.  Python's ``True`` is an ``int`` (and ``True == 1``), so booleans are tried
wherever a number is read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.errors import FormatError, GraphError
from workbench.io.text.json_format import graph_from_dict, load_json

TENSOR = "tensors[0] ('t'): size_bytes must be a non-negative number, got "

REJECTED = [
    # header: format and version, in both shapes (True == 1 must not pass for version 1)
    ({"ops": [], "version": True}, "unsupported version True (this reader knows 1)"),
    ({"ops": [], "version": 2}, "unsupported version 2 (this reader knows 1)"),
    ({"ops": [], "version": "1"}, "unsupported version '1' (this reader knows 1)"),
    ({"edges": [], "version": True}, "unsupported version True (this reader knows 1)"),
    ({"ops": [], "format": "onnx"},
     "unknown format 'onnx' (expected 'schedule-workbench-graph')"),
    ({"edges": [], "format": None, "version": 0}, "unsupported version 0 (this reader knows 1)"),
    # shape of the document
    ([], "the top level must be an object, got list"),
    ({"tensors": []}, "missing 'ops' (or 'edges' for the edge-list form)"),
    ({"ops": {}}, "'ops' must be a list, got dict"),
    ({"ops": [], "tensors": {}}, "'tensors' must be a list, got dict"),
    ({"ops": [], "outputs": "t"}, "'outputs' must be a list, got str"),
    ({"ops": [], "tensor": []},
     "graph: unknown key 'tensor'; did you mean 'tensors'? (known: control_edges, format, name, "
     "ops, outputs, tensors, version)"),
    # ops
    ({"ops": ["a"]}, "ops[0] must be an object, got str"),
    ({"ops": [{"kind": "relu"}]}, "ops[0]: missing 'id'"),
    ({"ops": [{"id": 3}]}, "ops[0].id must be a string, got 3"),
    ({"ops": [{"id": "a", "attrs": []}]}, "ops[0].attrs must be an object"),
    ({"ops": [{"id": "a", "inputs": "x"}]}, "ops[0].inputs must be a list of tensor ids, got 'x'"),
    ({"ops": [{"id": "a", "outputs": [1]}]},
     "ops[0].outputs must be a list of tensor ids, got [1]"),
    ({"ops": [{"id": "a", "flop": 1}]},
     "ops[0] ('a'): unknown field 'flop'; did you mean 'flops'? (known: attrs, bytes_read, "
     "bytes_written, device, duration_us, flops, id, inputs, kind, outputs, thread_blocks, "
     "workspace_bytes)"),
    ({"ops": [{"id": "a"}, {"id": "b"}], "control_edges": [["a", "b", "a"]]},
     "control_edges[0] must be a pair of op ids, got ['a', 'b', 'a']"),
    ({"ops": [{"id": "a"}, {"id": "b"}], "control_edges": [["a", 1]]},
     "control_edges[0] must be a pair of op ids, got ['a', 1]"),
    # tensors: size_bytes
    ({"ops": [], "tensors": [{"id": "t", "size_bytes": -3}]}, TENSOR + "-3"),
    ({"ops": [], "tensors": [{"id": "t", "size_bytes": -0.5}]}, TENSOR + "-0.5"),
    ({"ops": [], "tensors": [{"id": "t", "size_bytes": True}]}, TENSOR + "True"),
    ({"ops": [], "tensors": [{"id": "t", "size_bytes": "8"}]}, TENSOR + "'8'"),
    ({"ops": [], "tensors": [{"id": "t", "size_bytes": float("inf")}]}, TENSOR + "inf"),
    ({"ops": [], "tensors": [{"id": "t", "size_bytes": float("nan")}]}, TENSOR + "nan"),
    ({"ops": [], "tensors": [{"id": "t", "size_bytes": 2**63}]}, TENSOR + str(2**63)),
    # tensors: other fields
    ({"ops": [], "tensors": [{"size_bytes": 8}]}, "tensors[0]: missing 'id'"),
    ({"ops": [], "tensors": [{"id": "t", "shape": [2, -1]}]},
     "tensors[0].shape must be a list of non-negative integers, got [2, -1]"),
    ({"ops": [], "tensors": [{"id": "t", "shape": [True, 2]}]},
     "tensors[0].shape must be a list of non-negative integers, got [True, 2]"),
    ({"ops": [], "tensors": [{"id": "t", "shape": [2.0]}]},
     "tensors[0].shape must be a list of non-negative integers, got [2.0]"),
    ({"ops": [], "tensors": [{"id": "t", "shape": 4}]},
     "tensors[0].shape must be a list of non-negative integers, got 4"),
    ({"ops": [], "tensors": [{"id": "t", "producer": 1}]},
     "tensors[0].producer must be an op id or null, got 1"),
    ({"ops": [], "tensors": [{"id": "t", "role": "weights"}]},
     "unknown tensors[0] ('t') role 'weights' (known: activation, input, parameter, output)"),
    ({"ops": [], "tensors": [{"id": "t", "size": 8}]},
     "tensors[0] ('t'): unknown field 'size' (known: dtype, id, producer, role, shape, "
     "size_bytes)"),
    # edge-list form
    ({"edges": {}}, "'edges' must be a list, got dict"),
    ({"edges": [["a"]]}, "edges[0] must be a pair of op ids, got ['a']"),
    ({"edges": [["a", 2]]}, "edges[0] must be a pair of op ids, got ['a', 2]"),
    ({"edges": [["a", "b"]], "ops": {"a": "relu", "c": "relu"}},
     "edges[0] names op 'b', which 'ops' does not declare"),
    ({"edges": [], "ops": 3}, "'ops' must be an object (id -> kind) or a list of ids, got int"),
    ({"edges": [], "ops": {"a": 1}}, "'ops' must map op ids to op types (strings)"),
    ({"edges": [], "ops": [1]}, "'ops' must list op ids (strings)"),
    ({"edges": [], "sizes": []}, "'sizes' must be an object keyed by op id"),
    ({"edges": [], "devices": "gpu"}, "'devices' must be an object keyed by op id"),
    ({"edges": [], "size": {}},
     "edge-list graph: unknown key 'size'; did you mean 'sizes'? (known: devices, durations, "
     "edges, format, name, ops, sizes, thread_blocks, version)"),
]


@pytest.mark.parametrize(("data", "message"), REJECTED, ids=[m[:40] for _, m in REJECTED])
def test_the_reader_refuses_with_its_one_line_message(data: object, message: str) -> None:
    """Every check of the reader, each with the message that names the JSON path."""
    with pytest.raises(FormatError, match=f"^{re.escape(message)}$"):
        graph_from_dict(data)


GRAPH_ERRORS = [
    ({"ops": [{"id": "a"}, {"id": "a"}]}, "duplicate op id 'a' (ops #0 and #1)"),
    ({"ops": [], "tensors": [{"id": "t"}, {"id": "t"}]}, "duplicate tensor id 't'"),
    ({"ops": [{"id": "a", "flops": True}]},
     "op 'a': flops must be a non-negative number, got True"),
    ({"ops": [{"id": "a", "bytes_read": -1}]},
     "op 'a': bytes_read must be a non-negative number, got -1"),
    ({"ops": [{"id": "a", "thread_blocks": True}]},
     "op 'a': thread_blocks must be a positive integer of at most 2**62, got True"),
    ({"ops": [{"id": "a"}], "control_edges": [["a", "z"]]},
     "control edge 'a' -> 'z' names unknown op 'z' (dangling edge)"),
]


@pytest.mark.parametrize(("data", "message"), GRAPH_ERRORS, ids=[m[:40] for _, m in GRAPH_ERRORS])
def test_the_graph_refuses_what_only_the_whole_graph_can_check(data: object, message: str) -> None:
    """Duplicate ids and op figures are the graph constructor's checks (GraphError, one line)."""
    with pytest.raises(GraphError, match=f"^{re.escape(message)}$"):
        graph_from_dict(data)


def test_the_valid_edges_of_each_rule_are_accepted() -> None:
    """The boundary values each rule must let through: version 1 and the format name, size 0 and
    2**62 bytes (the graph's own ceiling), a 0-sized dimension, a null producer, a declared edge
    list."""
    g = graph_from_dict({"format": "schedule-workbench-graph", "version": 1, "ops": [],
                         "tensors": [{"id": "t", "size_bytes": 0, "shape": [0, 3],
                                      "producer": None},
                                     {"id": "u", "size_bytes": 2**62, "role": "input"}]})
    assert (g.tensors["t"].shape, g.tensors["u"].size_bytes) == ((0, 3), 2**62)
    g = graph_from_dict({"edges": [["a", "b"]], "ops": ["a", "b"], "version": 1})
    assert [op.id for op in g.ops] == ["a", "b"]


def test_a_file_error_names_the_file_and_the_op_line(tmp_path: Path) -> None:
    """Through :func:`load_json`: the file name leads, an op's error gives the line where the op
    starts, and a duplicate JSON key (which plain json.loads would silently resolve) is refused."""
    path = tmp_path / "g.json"
    path.write_text('{"version": true,\n "ops": []}\n')
    with pytest.raises(FormatError, match=re.escape(f"{path}: unsupported version True")):
        load_json(path)
    path.write_text('{"ops": [\n {"id": "a"},\n {"id": "b", "attrs": 3}\n]}\n')
    with pytest.raises(FormatError, match=f"^{re.escape(f'{path}: ops[1].attrs must be an object')}"
                       r" \(line 3\)$"):
        load_json(path)
    path.write_text('{"ops": [{"id": "a", "id": "b"}]}')
    with pytest.raises(FormatError, match="duplicate key 'id'"):
        load_json(path)
