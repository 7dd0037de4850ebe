"""Op attribute type swaps and extremes (issue 34 #6): the ``attrs`` of convolutions, pools and
GEMMs in JSON graphs, DOT graphs and ONNX models built with ``onnx.helper``.

A valid graph (SqueezeNet's convolutions and pools, a transformer block's GEMMs, one ONNX
Conv / MaxPool / AveragePool / Gemm) gets one attribute replaced by a value no reader may accept:
NaN, infinity, -1e308, a kernel of 1e8 (larger than its input plus padding), null, ``"3x3"``,
booleans, nested lists, the wrong rank, a stride or dilation of 0, negative pads, ``group`` 0
or one that does not divide the channels.  Every mutation is ``refuse=True``: accepted with a
"default cost" warning, or simulated to an absurd time, is a silent acceptance.  The unmutated
graph (``valid``) must run through.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from tests.fuzz.runner import Case

NAN, INF = float("nan"), float("inf")
#: (label, value) replacing one spatial attribute (kernel, stride, padding, dilation).
SPATIAL = [("NaN", [NAN, 1]), ("inf", [INF, 1]), ("-1e308", -1e308), ("1e8 kernel", [1e8, 1e8]),
           ("null item", [None, 1]), ("null", None), ("'3x3'", "3x3"), ("bool", True),
           ("bool items", [True, True]), ("nested", [[1, 1], [1]]), ("empty", []),
           ("rank 3", [1, 1, 1]), ("zero", [0, 0]), ("negative", [-1, 1]), ("fraction", [1.5, 1]),
           ("huge", [2**70, 1]), ("object", {"h": 3})]
#: (label, value) replacing ``groups``.
GROUPS = [("0", 0), ("-1", -1), ("NaN", NAN), ("'2'", "2"), ("true", True), ("1.5", 1.5),
          ("[1]", [1]), ("7 (does not divide)", 7), ("1e8", 100_000_000)]
#: (label, value) replacing a GEMM size (m, k, n, batch).
GEMM = [("NaN", NAN), ("inf", INF), ("-1", -1), ("0", 0), ("1e8", 1e8), ("null", None),
        ("'3x3'", "3x3"), ("true", True), ("[2]", [2]), ("1.5", 1.5), ("-1e308", -1e308)]


def _json_graph(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], str, Any, str]:
    """A graph dict, its op to mutate, the attribute, the value and the value's label."""
    import workbench as wb
    from workbench.io import graph_to_dict

    if rng.random() < 0.7:
        d = graph_to_dict(wb.models.build("squeezenet"))
        ops = [o for o in d["ops"] if o["kind"] in ("conv2d", "maxpool", "avgpool")]
        op = rng.choice(ops)
        if op["kind"] == "conv2d" and rng.random() < 0.25:
            label, value = rng.choice(GROUPS)
            return d, op, "groups", value, label
        attr = rng.choice(["kernel", "stride", "padding", "dilation"])
        label, value = rng.choice(SPATIAL)
        if attr == "padding" and label in ("zero",):
            label, value = "negative", [-2, -2]
        return d, op, attr, value, label
    d = graph_to_dict(wb.models.build("transformer_block"))
    op = rng.choice([o for o in d["ops"] if o["kind"] == "matmul"])
    label, value = rng.choice(GEMM)
    return d, op, rng.choice(["m", "k", "n", "batch"]), value, f"GEMM {label}"


def _dot_text(d: dict[str, Any], op: dict[str, Any], attrs: dict[str, Any]) -> str:
    """``d`` as DOT with ``op``'s attributes replaced by ``attrs`` (written as the DOT writer
    writes them: a JSON string)."""
    from workbench.io import graph_from_dict, to_dot

    text = to_dot(graph_from_dict(d))
    value = json.dumps(json.dumps(attrs, separators=(",", ":")))
    head = json.dumps(op["id"]) + " ["
    at = text.find(head)
    if at >= 0:
        end = text.find("];", at)
        stmt = text[at:end]
        new, k = re.subn(r'attrs="(?:[^"\\]|\\.)*"', lambda _m: "attrs=" + value, stmt, count=1)
        if k:
            return text[:at] + new + text[end:]
    return text.rstrip().rstrip("}") + f"  {json.dumps(op['id'])} [attrs={value}];\n}}\n"


def _onnx(rng: random.Random) -> tuple[bytes, str, bool]:
    """An ONNX model of one Conv / MaxPool / AveragePool / Gemm and a mutated attribute."""
    from onnx import TensorProto, helper

    kind = rng.choice(["Conv", "Conv", "MaxPool", "AveragePool", "Gemm"])
    attrs: dict[str, Any]
    if kind == "Gemm":
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])
        inits = [helper.make_tensor("w", TensorProto.FLOAT, [16, 8], [0.5] * 128)]
        attrs = {"transA": 0, "transB": 0, "alpha": 1.0}
        bad = [("transA", 5), ("transB", -1), ("alpha", NAN), ("alpha", INF)]
        inputs = ["x", "w"]
    else:
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 16, 16])
        attrs = {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]}
        bad = [("strides", [0, 1]), ("strides", [1]), ("strides", [-1, 1]),
               ("pads", [-1, 0, 0, 0]), ("pads", [1, 1]), ("kernel_shape", [0, 3]),
               ("kernel_shape", [3]), ("kernel_shape", [100_000_000, 1]),
               ("kernel_shape", [3, 3, 3]), ("kernel_shape", [-3, 3])]
        inputs = ["x"]
        inits = []
        if kind == "Conv":
            inits = [helper.make_tensor("w", TensorProto.FLOAT, [8, 4, 3, 3], [0.1] * 288)]
            inputs = ["x", "w"]
            attrs["group"] = 1
            bad += [("group", 0), ("group", -1), ("group", 3), ("dilations", [0, 1]),
                    ("dilations", [-1, 1])]
    name, value = ("valid", None) if rng.random() < 0.12 else rng.choice(bad)
    if name != "valid":
        attrs[name] = value
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node(kind, inputs, ["y"], **attrs)
    model = helper.make_model(helper.make_graph([node], "g", [x], [y], inits))
    # alpha NaN/inf is a numeric scale that does not change the cost: any clean outcome will do
    refuse = name not in ("valid", "alpha")
    return model.SerializeToString(), f"{kind} {name}={value}", refuse


def attrs(rng: random.Random, scale: int) -> Case:
    """One op attribute swapped for a bad value (module docstring)."""
    del scale
    where = rng.choice(["json", "json", "dot", "onnx", "onnx"])
    policies = [rng.choice(["serial", "nnc", "asap"])]
    if where == "onnx":
        data, label, refuse = _onnx(rng)
        return Case("attrs", f"onnx: {label}", "load_graph", (".onnx", data), refuse,
                    {"policies": policies})
    d, op, attr, value, label = _json_graph(rng)
    valid = rng.random() < 0.08
    new = dict(op["attrs"])
    if not valid:
        new[attr] = value
    if where == "json":
        op["attrs"] = new
        text = json.dumps(d)
    else:
        text = _dot_text(d, op, new)
    name = "valid" if valid else f"{op['kind']}.{attr} = {label.removeprefix('GEMM ')}"
    # null or [] may mean "the default" (a pool's stride is its kernel), a GEMM may be empty
    # (0), large (1e8) or its sizes unknown (null): any one-line outcome
    refuse = not valid and label not in ("null", "empty", "GEMM 0", "GEMM 1e8", "GEMM null")
    return Case("attrs", f"{where}: {name}", "load_graph", (f".{where}", text), refuse,
                {"policies": policies})
