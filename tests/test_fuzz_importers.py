"""Fuzzing the file importers: random bytes and mutated valid files (truncations, byte flips,
insertions, deletions) must end in a one-line WorkbenchError or a Graph, never in another
exception or a hang.  About 3,300 inputs in all (see the max_examples below)."""

from __future__ import annotations

import json
import signal
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.errors import WorkbenchError
from workbench.io import load_pytorch_trace
from workbench.io.text.dot import load_dot, to_dot
from workbench.io.text.json_format import graph_to_dict, load_json

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from workbench.io.onnx.load import RULES, load_onnx  # noqa: E402

SECONDS_PER_INPUT = 10  # a loader still busy after this long counts as a hang
FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="wb-fuzz-") as d:
        yield Path(d)


def _timeout(signum: int, frame: Any) -> None:
    raise TimeoutError(f"importer still running after {SECONDS_PER_INPUT} s (a hang?)")


def check(loader: Callable[[Path], Any], path: Path, data: bytes) -> None:
    """Run ``loader`` on ``data``: a result or a one-line WorkbenchError, nothing else."""
    path.write_bytes(data)
    old = signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(SECONDS_PER_INPUT)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loader(path)
        event("loaded")
    except WorkbenchError as exc:
        event(type(exc).__name__)
        message = str(exc)
        assert message and "\n" not in message and "\r" not in message, repr(message)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed file with 1-4 edits: truncate, overwrite a byte, insert, delete or repeat a run."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3, 4]))):
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        edit = draw(st.sampled_from(["truncate", "flip", "flip", "insert", "delete", "repeat"]))
        if edit == "truncate":
            del data[i:]
        elif edit == "flip":
            data[i] = draw(st.integers(0, 255))
        elif edit == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif edit == "delete":
            del data[i:i + draw(st.integers(1, 32))]
        else:
            j = draw(st.integers(0, len(data) - 1))
            data[i:i] = data[j:j + draw(st.integers(1, 64))]
    return bytes(data)


# ------------------------------------------------------------------------------- seed files
def _small_graph() -> wb.Graph:
    return wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
                               ops={"a": "conv2d", "b": "relu", "c": "relu", "d": "concat"})


JSON_SEEDS = [
    json.dumps(graph_to_dict(_small_graph()), indent=1).encode(),
    json.dumps({"edges": [["a", "b"], ["b", "c"]], "ops": {"a": "conv2d", "b": "op", "c": "op"},
                "sizes": {"a": 10},
                "durations": {"b": 3}}).encode(),
]


DOT_SEEDS = [
    to_dot(_small_graph()).encode(),
    b'// hand\nstrict digraph "g" {\n node [kind=relu]\n a [flops=1e9, size=4096, '
    b'thread_blocks=8]\n a -> b -> c; a -> c [style=dashed]\n /* x */ subgraph s { d -> {e f} }\n'
    b' # comment\n "q\\"x" -> c [kind="control"]\n}\n',
]


def _onnx_seeds() -> list[bytes]:
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    small = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="c", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["y"], ["z"]),
         helper.make_node("MaxPool", ["z"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Flatten", ["p"], ["f"]),
         helper.make_node("Gemm", ["f", "g"], ["o"], transB=1)],
        "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 2, 4, 4))],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("w", TensorProto.FLOAT, (3, 2, 3, 3), [0.0] * 54),
                     helper.make_tensor("g", TensorProto.FLOAT, (5, 12), [0.0] * 60)])
    model = helper.make_model(small, opset_imports=[helper.make_opsetid("", 17)])
    return [model.SerializeToString(), (light / "light_squeezenet.onnx").read_bytes()]


ONNX_SEEDS = _onnx_seeds()
DOT_SOUP = st.text(alphabet='ab1 ->[]{};=",:/*#\n\\.ekindstyledashedflops', max_size=200)


# ------------------------------------------------------------------------------- JSON
@settings(FUZZ, max_examples=250)
@given(data=st.binary(max_size=600))
def test_json_random_bytes(workdir: Path, data: bytes) -> None:
    check(load_json, workdir / "r.json", data)


@settings(FUZZ, max_examples=400)
@given(data=mutated(JSON_SEEDS))
def test_json_mutated(workdir: Path, data: bytes) -> None:
    check(load_json, workdir / "m.json", data)


# ------------------------------------------------------------------------------- DOT
@settings(FUZZ, max_examples=250)
@given(data=st.binary(max_size=600))
def test_dot_random_bytes(workdir: Path, data: bytes) -> None:
    check(load_dot, workdir / "r.dot", data)


@settings(FUZZ, max_examples=500)
@given(data=mutated(DOT_SEEDS))
def test_dot_mutated(workdir: Path, data: bytes) -> None:
    check(load_dot, workdir / "m.dot", data)


@settings(FUZZ, max_examples=400)
@given(text=DOT_SOUP)
def test_dot_token_soup(workdir: Path, text: str) -> None:
    check(load_dot, workdir / "s.dot", ("digraph {" + text + "\n}").encode())


# ------------------------------------------------------------------------------- ONNX
@settings(FUZZ, max_examples=250)
@given(data=st.binary(max_size=600))
def test_onnx_random_bytes(workdir: Path, data: bytes) -> None:
    check(load_onnx, workdir / "r.onnx", data)


@settings(FUZZ, max_examples=500)
@given(data=mutated(ONNX_SEEDS))
def test_onnx_mutated(workdir: Path, data: bytes) -> None:
    check(load_onnx, workdir / "m.onnx", data)


_INTS = st.lists(st.integers(-3, 6), min_size=1, max_size=5)


@st.composite
def onnx_models(draw: st.DrawFn) -> bytes:
    """Well-formed protobuf, nonsense content: random op types, shapes and attributes."""
    op_types = sorted(RULES) + ["NoSuchOp", ""]
    nodes, names = [], ["x"]
    for k in range(draw(st.integers(1, 5))):
        op_type = draw(st.sampled_from(op_types))
        ins = draw(st.lists(st.sampled_from([*names, "w", ""]), min_size=0, max_size=3))
        attrs: dict[str, Any] = {a: draw(_INTS) for a in draw(st.sets(st.sampled_from(
            ["kernel_shape", "strides", "pads", "dilations", "perm"]), max_size=3))}
        for a in draw(st.sets(st.sampled_from(["group", "axis", "transA", "transB", "size"]),
                              max_size=2)):
            attrs[a] = draw(st.integers(-2, 4))
        out = f"t{k}"
        nodes.append(helper.make_node(op_type, ins, [out], name=draw(st.sampled_from(
            ["", f"n{k}", "n0", "a\nb"])), **attrs))
        names.append(out)
    shape = draw(st.lists(st.integers(0, 5), max_size=4))
    w_shape = draw(st.lists(st.integers(1, 4), max_size=4))
    graph = helper.make_graph(
        nodes, "fuzz", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(draw(st.sampled_from(names)), TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("w", TensorProto.FLOAT, w_shape,
                                        [0.0] * max(1, _prod(w_shape)))])
    opset = draw(st.sampled_from([9, 13, 17]))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]
                             ).SerializeToString()


def _prod(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@settings(FUZZ, max_examples=400)
@given(data=onnx_models())
def test_onnx_structured_nonsense(workdir: Path, data: bytes) -> None:
    check(load_onnx, workdir / "n.onnx", data)


# ------------------------------------------------------------------------------- PyTorch traces
KINETO_SEED = json.dumps({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10.5, "dur": 3,
     "args": {"stream": 7, "grid": [2, 1, 1]}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy", "pid": 0, "tid": "stream 9", "ts": 9,
     "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]
}).encode()


@settings(FUZZ, max_examples=400)
@given(data=st.one_of(st.binary(max_size=300), mutated([KINETO_SEED])))
def test_pytorch_trace_fuzz(workdir: Path, data: bytes) -> None:
    check(load_pytorch_trace, workdir / "t.json", data)


# ------------------------------------------------------------------------------- found by fuzzing
# Inputs that once escaped the JSON reader (workbench/io/text/json_format.py,
# workbench/values/graph.py) as OverflowError / RecursionError or a two-line message; now
# one-line WorkbenchErrors.
JSON_ESCAPES = {
    "huge_int": '{"ops": [{"id": "a", "flops": ' + "9" * 400 + "}]}",  # OverflowError
    "inf_size": '{"ops": [], "tensors": [{"id": "t", "size_bytes": 1e400}]}',  # OverflowError
    "deep_nesting": "[" * 100_000 + "]" * 100_000,  # RecursionError
    "newline_in_cycle": json.dumps({"edges": [["a\nb", "c"], ["c", "a\nb"]]}),  # 2-line message
}


@pytest.mark.parametrize("case", sorted(JSON_ESCAPES))
def test_json_known_escapes(workdir: Path, case: str) -> None:
    path = workdir / f"{case}.json"
    path.write_text(JSON_ESCAPES[case])
    with pytest.raises(WorkbenchError) as info:
        load_json(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


# ------------------------------------------------------------------------------- execution traces
ET_SEED = json.dumps({"schema": "1.1.1-chakra.0.0.4", "nodes": [
    {"id": 1, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1},
    {"id": 2, "name": "aten::relu", "ctrl_deps": 1,
     "inputs": {"values": [[4, 5, 0, 8, 4, "cpu"]], "shapes": [[2, 4]], "types": ["Tensor"]},
     "outputs": {"values": [[6, 7, 0, 8, 4, "cpu"]], "shapes": [[2, 4]], "types": ["Tensor"]},
     "attrs": [{"name": "rf_id", "type": "uint64", "value": 1}]},
    {"id": 3, "name": "aten::cat", "ctrl_deps": 1,
     "inputs": {"values": [[[6, 7, 0, 8, 4, "cpu"], [4, 5, 0, 8, 4, "cpu"]], 0],
                "shapes": [[[2, 4], [2, 4]], []], "types": ["GenericList", "Int"]},
     "outputs": {"values": [[8, 9, 0, 16, 4, "cpu"]], "shapes": [[4, 4]], "types": ["Tensor"]},
     "attrs": [{"name": "rf_id", "type": "uint64", "value": 2}]}]}).encode()
ET_KINETO = json.dumps({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
     "args": {"Record function id": 1, "External id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 1, "tid": 1, "ts": 4, "dur": 2,
     "args": {"Record function id": 2, "External id": 2}},
    {"ph": "X", "cat": "kernel", "name": "cat_kernel", "pid": 0, "tid": 7, "ts": 9, "dur": 1,
     "args": {"stream": 7, "External id": 2, "correlation": 5}}]}).encode()


@settings(FUZZ, max_examples=300)
@given(et=st.one_of(st.binary(max_size=200), mutated([ET_SEED])),
       kineto=st.one_of(st.just(ET_KINETO), mutated([ET_KINETO])))
def test_execution_trace_fuzz(workdir: Path, et: bytes, kineto: bytes) -> None:
    from workbench.io import load_execution_trace

    (workdir / "k.json").write_bytes(kineto)
    check(lambda p: load_execution_trace(p, workdir / "k.json"), workdir / "et.json", et)
