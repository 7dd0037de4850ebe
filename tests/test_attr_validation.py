"""One validation of op attributes (issue 34, finding 6): every reader and every programmatic
``wb.Graph`` meets :mod:`workbench.values.attr_checks`, and whatever passes it simulates.

Reproducers of the audit: free-form conv ``attrs`` (``stride: [NaN, 1]``, ``[null, 1]``,
``kernel: -1e308``, ``"3x3"``) crashed ``simulate`` with a traceback and ``kernel: [1e8, 1e8]``
simulated to 3.1e14 µs; ONNX models with stride 0, negative pads, a wrong rank or ``group = 0``
imported with at most a "default cost" warning.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.errors import FormatError, GraphError, WorkbenchError
from workbench.values.graph import Graph, Op, Tensor

X, W, Y = (1, 3, 32, 32), (16, 3, 3, 3), (1, 16, 32, 32)


def _conv_graph(attrs: Any, kind: str = "conv2d") -> Graph:
    tensors = [Tensor("x", 4 * math.prod(X), None, "input", X),
               Tensor("w", 4 * math.prod(W), None, "parameter", W),
               Tensor("y", 4 * math.prod(Y), "c", shape=Y)]
    return Graph([Op("c", kind, inputs=("x", "w"), outputs=("y",), attrs=attrs)], tensors)


def _conv_json(tmp_path: Path, attrs_text: str) -> Path:
    data = {"name": "t", "tensors": [
        {"id": "x", "size_bytes": 4 * math.prod(X), "shape": list(X), "role": "input"},
        {"id": "w", "size_bytes": 4 * math.prod(W), "shape": list(W), "role": "parameter"},
        {"id": "y", "size_bytes": 4 * math.prod(Y), "shape": list(Y)}],
        "ops": [{"id": "c", "kind": "conv2d", "inputs": ["x", "w"], "outputs": ["y"],
                 "attrs": {}}]}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data).replace('"attrs": {}', f'"attrs": {attrs_text}'))
    return path


def _one_line(err: BaseException, *words: str) -> None:
    text = str(err)
    assert "\n" not in text, text
    for word in words:
        assert word in text, (word, text)


# The audit's reproducers: (JSON attrs text, the attribute named)
FINDINGS = [('{"kernel": [3, 3], "stride": [NaN, 1]}', "stride"),
            ('{"kernel": [3, 3], "stride": [null, 1]}', "stride"),
            ('{"kernel": -1e308}', "kernel"),
            ('{"kernel": "3x3"}', "kernel"),
            ('{"kernel": [1e8, 1e8]}', "kernel"),
            ('{"kernel": [100000000, 100000000], "padding": 1}', "kernel"),
            ('{"stride": 0}', "stride"),
            ('{"groups": 0}', "groups"),
            ('{"groups": 5}', "groups"), ('{"groups": [1]}', "groups"),
            ('{"padding": [-1, 0]}', "padding"),
            ('{"kernel": [3, 3, 3]}', "kernel"),
            ('{"dilation": [1, 1, 1]}', "dilation")]


@pytest.mark.parametrize(("text", "attr"), FINDINGS)
def test_json_attrs_are_one_line_errors(tmp_path: Path, text: str, attr: str) -> None:
    with pytest.raises((FormatError, GraphError)) as err:
        wb.load(_conv_json(tmp_path, text))
    _one_line(err.value, "'c'", repr(attr), "g.json")


@pytest.mark.parametrize(("text", "attr"), FINDINGS)
def test_programmatic_graphs_fail_at_construction(text: str, attr: str) -> None:
    """Before: ValueError / TypeError / OverflowError tracebacks from ``simulate``, or a
    3.1e14 µs makespan."""
    with pytest.raises(GraphError) as err:
        _conv_graph(json.loads(text))
    _one_line(err.value, "'c'", repr(attr))


def test_valid_attrs_still_simulate() -> None:
    g = _conv_graph({"kernel": [3, 3], "stride": 1, "padding": [1, 1], "groups": 1})
    assert 0 < wb.simulate(wb.schedule(g, "serial")).makespan < 1e3
    depthwise = Graph([Op("d", "conv2d", inputs=("x", "w"), outputs=("y",),
                          attrs={"groups": 3, "kernel": 3, "padding": [1, 1, 1, 1]})],
                      [Tensor("x", 1, None, "input", X),
                       Tensor("w", 1, None, "parameter", (3, 1, 3, 3)),
                       Tensor("y", 1, "d", shape=X)])
    assert math.isfinite(wb.simulate(wb.schedule(depthwise, "serial")).makespan)


def test_cli_refuses_bad_attrs_in_one_line(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main

    path = _conv_json(tmp_path, '{"kernel": [3, 3], "stride": [NaN, 1]}')
    code = main(["compare", str(path), "--policies", "serial", "-o", str(tmp_path / "r.html"),
                 "--no-progress"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code != 0 and "Traceback" not in err, err
    assert len(lines) == 1 and "'stride'" in lines[0] and "'c'" in lines[0], err
    assert not (tmp_path / "r.html").exists()


# ----------------------------------------------------------------------------- ONNX
def _onnx_conv(path: Path, **attrs: Any) -> Path:
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], np.zeros(108, np.float32))
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv0", **attrs)
    graph = helper.make_graph([node], "g", [x], [y], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.mark.parametrize(("attrs", "attr"), [
    ({"strides": [0, 1]}, "stride"), ({"pads": [-1, 0, 0, 0]}, "padding"),
    ({"strides": [1, 1, 1]}, "stride"), ({"dilations": [1]*3}, "dilation"),
    ({"group": 0}, "groups"), ({"group": 2}, "groups"), ({"kernel_shape": [5, 5]}, "kernel"),
    ({"strides": [1.5, 1.0]}, "stride"),
])
def test_onnx_invalid_attrs_are_refused(tmp_path: Path, attrs: dict[str, Any],
                                        attr: str) -> None:
    path = _onnx_conv(tmp_path / "m.onnx", **attrs)
    with pytest.raises(GraphError) as err:
        wb.load(path)
    _one_line(err.value, "m.onnx", "'conv0'", repr(attr))


def test_onnx_valid_conv_still_imports(tmp_path: Path) -> None:
    g = wb.load(_onnx_conv(tmp_path / "ok.onnx", strides=[2, 2], pads=[1, 1, 1, 1]))
    assert dict(g.op("conv0").attrs)["stride"] == [2, 2]


# ----------------------------------------------------------------------------- property
EXTREMES = st.sampled_from([math.nan, math.inf, -math.inf, -1e308, 1e308, 1e8, 10**8, 10**30,
                            -1, 0, 1, 2, 3, 7, None, "", "3x3", True, False, [], [None],
                            [[1, 2]], [1, [2]], [0, 1], [2, 2], [3, 3, 3], [1] * 4, [-1, 1],
                            [math.nan, 1], [10**8, 10**8], {"a": 1}, 2.5])
KINDS = {  # kind: (input shapes, output shape, attributes to vary)
    "conv2d": ([X, W], Y, ["kernel", "stride", "padding", "dilation", "groups", "cin", "bias",
                           "act", "pre_act"]),
    "sepconv": ([X], Y, ["kernel", "stride", "padding", "groups", "cin", "bias", "pre_act"]),
    "maxpool": ([X], (1, 3, 16, 16), ["kernel", "stride", "padding", "dilation", "ceil_mode"]),
    "avgpool": ([X], (1, 3, 16, 16), ["kernel", "stride", "padding", "count_include_pad"]),
    "matmul": ([(4, 8), (8, 5)], (4, 5), ["m", "k", "n", "batch", "bias", "trans_b", "alpha",
                                          "bias_first"]),
    "einsum": ([(2, 4, 8), (2, 8, 5)], (2, 4, 5), ["equation", "m", "k", "n", "batch"]),
    "groupnorm": ([(1, 8, 4, 4)], (1, 8, 4, 4), ["groups", "eps"]),
    "attention": ([(1, 2, 4, 8)] * 3, (1, 2, 4, 8), ["is_causal", "scale", "needs_program"]),
}


@settings(max_examples=250)
@given(st.sampled_from(sorted(KINDS)), st.data())
def test_any_attrs_give_a_one_line_error_or_a_finite_simulation(kind: str,
                                                                 data: st.DataObject) -> None:
    ins, out, names = KINDS[kind]
    attrs = data.draw(st.dictionaries(st.sampled_from(names), EXTREMES, max_size=4))
    tensors = [Tensor(f"i{k}", 4 * math.prod(s), None, "input", s) for k, s in enumerate(ins)]
    tensors.append(Tensor("y", 4 * math.prod(out), "c", shape=out))
    op = Op("c", kind, flops=1e6, bytes_read=4096, bytes_written=4096,
            inputs=tuple(t.id for t in tensors[:-1]), outputs=("y",), attrs=attrs)
    try:
        g = Graph([op], tensors)
        makespan = wb.simulate(wb.schedule(g, "serial")).makespan
    except WorkbenchError as err:
        _one_line(err, "'c'")
        return
    assert math.isfinite(makespan) and makespan >= 0, (attrs, makespan)


@pytest.mark.parametrize(("kind", "ins", "out"), [
    ("sepconv", [(16, 3, 3, 3)], (3, 32, 32)), ("sepconv", [(1, 8, 4, 4)], (4, 8)),
    ("attention", [(8, 5), (5,), (8, 5)], (8, 5)), ("conv2d", [(1, 0, 4, 4), W], (1, 16, 4, 4)),
])
def test_cost_rules_take_mismatched_shapes(kind: str, ins: list[tuple[int, ...]],
                                           out: tuple[int, ...]) -> None:
    """Shapes a rule cannot read fall back to the op's own figures (before: ValueError /
    IndexError tracebacks from simulate)."""
    tensors = [Tensor(f"i{k}", 64, None, "input", s) for k, s in enumerate(ins)]
    g = Graph([Op("c", kind, flops=1e6, bytes_read=64, bytes_written=64,
                  inputs=tuple(t.id for t in tensors), outputs=("y",))],
              [*tensors, Tensor("y", 64, "c", shape=out)])
    assert math.isfinite(wb.simulate(wb.schedule(g, "serial")).makespan)
