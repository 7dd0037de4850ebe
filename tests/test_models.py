"""Tests for the built-in graph builders: workbench/models/{_layers,cnn,transformer,random_dags}.py.

The CNN builders are checked against the IOS structural facts in
``tests/data/benchmark_networks.json`` (its ``_about`` says where they come from); the layer costs
against hand-computed numbers; the random families for determinism and their stated structure.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from workbench.errors import GraphError, OptionError, WorkbenchError
from workbench.models import cnn
from workbench.models._layers import OP_KINDS, GraphBuilder
from workbench.models.cnn import (
    inception_v3,
    nasnet_a_large,
    randwire,
    randwire_edges,
    squeezenet,
)
from workbench.models.random_dags import gnp_dag, layered_dag, random_dag, series_parallel_dag
from workbench.models.transformer import transformer_block
from workbench.values.graph import Graph

JSON_PATH = Path(__file__).resolve().parent / "data" / "benchmark_networks.json"


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return json.loads(JSON_PATH.read_text())


def conv_macs(g: Graph) -> int:
    """Conv multiply-adds, computed from attrs and output shapes (not from op.flops)."""
    total = 0
    for op in g.ops:
        if op.kind not in ("conv2d", "sepconv"):
            continue
        a = op.attrs
        n, cout, h, w = g.tensor(op.outputs[0]).shape
        kh, kw = a["kernel"]
        if op.kind == "conv2d":
            total += n * cout * h * w * (a["cin"] // a["groups"]) * kh * kw
        else:  # depthwise kxk + pointwise 1x1
            total += n * a["cin"] * h * w * kh * kw + n * cout * h * w * a["cin"]
    return total


def out_shape(g: Graph, op_id: str) -> tuple[int, ...]:
    return g.tensor(g.op(op_id).outputs[0]).shape


def producers(g: Graph, op_id: str) -> list[str]:
    """Producer ops of an op's activation inputs, in input order."""
    out = []
    for t in g.op(op_id).inputs:
        p = g.tensor(t).producer
        if p is not None:
            out.append(p)
    return out


ALL_BUILDERS: dict[str, Callable[..., Graph]] = {
    "inception": lambda batch=1: inception_v3(batch, fused=False),
    "inception_fused": lambda batch=1: inception_v3(batch, fused=True),
    "inception_classifier": lambda batch=1: inception_v3(batch, classifier=True, fused=False),
    "squeezenet": lambda batch=1: squeezenet(batch),
    "squeezenet_unfused": lambda batch=1: squeezenet(batch, fused=False),
    "randwire": lambda batch=1: randwire(batch),
    "randwire_unfused": lambda batch=1: randwire(batch, fused=False),
    "nasnet": lambda batch=1: nasnet_a_large(batch),
    "transformer": lambda batch=1: transformer_block(batch, seq_len=32, layers=2),
    "layered": lambda batch=1: layered_dag(5, 4, seed=batch),
    "series_parallel": lambda batch=1: series_parallel_dag(40, seed=batch),
    "gnp": lambda batch=1: gnp_dag(30, 0.2, seed=batch),
    "random": lambda batch=1: random_dag(300, seed=batch),
}


# ------------------------------------------------------------------------------ shared invariants
@pytest.mark.parametrize("name", sorted(ALL_BUILDERS))
def test_graph_is_acyclic_with_positive_sizes(name: str) -> None:
    g = ALL_BUILDERS[name]()
    assert len(g) > 0
    assert nx.is_directed_acyclic_graph(g.to_networkx())
    index = {op_id: i for i, op_id in enumerate(g.op_ids)}
    for a, b in g.edges:  # program order is topological
        assert index[a] < index[b]
    for t in g.tensors.values():
        assert t.size_bytes > 0, t.id
        if t.shape:
            assert math.prod(t.shape) * 4 == t.size_bytes, t.id
    for op in g.ops:
        assert op.thread_blocks is not None and op.thread_blocks >= 1, op.id
        assert op.flops >= 0 and op.bytes_read >= 0 and op.bytes_written >= 0
        assert len(op.outputs) == 1


@pytest.mark.parametrize("name", ["inception", "inception_fused", "squeezenet", "randwire",
                                  "randwire_unfused", "nasnet", "transformer"])
def test_flops_scale_linearly_with_batch(name: str) -> None:
    g1, g4 = ALL_BUILDERS[name](1), ALL_BUILDERS[name](4)
    assert g1.op_ids == g4.op_ids
    for a, b in zip(g1.ops, g4.ops, strict=True):
        assert b.flops == pytest.approx(4 * a.flops), a.id
    assert sum(op.flops for op in g4.ops) == pytest.approx(4 * sum(op.flops for op in g1.ops))


@pytest.mark.parametrize("name", ["inception", "inception_classifier", "squeezenet", "randwire",
                                  "nasnet", "transformer"])
def test_layer_graphs_use_known_kinds_and_readable_ids(name: str) -> None:
    g = ALL_BUILDERS[name]()
    assert {op.kind for op in g.ops} <= set(OP_KINDS)
    assert all(re.fullmatch(r"[A-Za-z0-9_/]+", op_id) for op_id in g.op_ids)
    inputs = [t for t in g.tensors.values() if t.role == "input"]
    assert [t.id for t in inputs] == ["input"]
    assert all(t.producer is None for t in g.tensors.values() if t.role == "parameter")
    assert g.outputs and all(g.tensor(t).role == "output" for t in g.outputs)


def test_builders_do_not_read_the_json_at_run_time() -> None:
    models = Path(cnn.__file__).parent
    for path in models.glob("*.py"):
        assert "benchmark_networks" not in path.read_text(), path.name


# ------------------------------------------------------------------------------ Inception V3
def _ios_name_to_op_id(tv: str, kind: str) -> str:
    base = re.sub(r"\(.*\)$", "", tv).replace(".", "/")
    return f"{base}/conv" if kind == "conv" else base


def test_inception_fused_matches_ios_spec(spec: dict[str, Any]) -> None:
    s = spec["inception_v3"]
    g = inception_v3(1, fused=True)
    assert len(g) == s["n_sched_ops"] == 119
    assert conv_macs(g) == s["conv_macs"]
    ios_to_ours: dict[str, str | None] = {"0": None}
    kinds = {"conv": "conv2d", "maxpool": "maxpool", "avgpool": "avgpool", "concat": "concat",
             "global_avgpool": "global_avgpool"}
    for block in s["blocks"]:
        for o in block["ops"]:
            op_id = _ios_name_to_op_id(o["torchvision"], o["op"])
            ios_to_ours[o["id"]] = op_id
            op = g.op(op_id)
            assert op.kind == kinds[o["op"]], op_id
            assert out_shape(g, op_id) == (1, *o["out"]), op_id
            assert producers(g, op_id) == [p for p in (ios_to_ours[i] for i in o["in"]) if p]
            if o["op"] == "conv":
                a = op.attrs
                assert (list(a["kernel"]), list(a["stride"]), list(a["padding"])) == (
                    o["k"], o["s"], o["p"]), op_id
                assert (a["cin"], a["cout"], a["act"], a["groups"]) == (
                    o["cin"], o["cout"], o["act"], 1), op_id
            elif o["op"] in ("maxpool", "avgpool"):
                a = op.attrs
                assert (list(a["kernel"]), list(a["stride"]), list(a["padding"])) == (
                    o["k"], o["s"], o["p"]), op_id
        last = ios_to_ours[block["ops"][-1]["id"]]
        assert last is not None
        assert out_shape(g, last) == (1, *block["out_shape"]), block["name"]
    assert [t for t in ios_to_ours.values() if t] == list(g.op_ids)  # same program order


def test_inception_unfused_is_conv_bn_relu() -> None:
    g = inception_v3(1, fused=False)
    kinds = g.summary()["op_kinds"]
    # 94 BasicConv2d x 3 ops + 13 pools + 11 concats + 1 global pool
    assert len(g) == 307
    assert (kinds["conv2d"], kinds["batchnorm"], kinds["relu"]) == (94, 94, 94)
    assert 300 <= len(g) <= 310
    conv_flops = sum(op.flops for op in g.ops if op.kind == "conv2d")
    assert conv_flops == 2 * conv_macs(g) == 2 * 5_711_168_096
    assert g.successors("Mixed_5b/branch5x5_1/conv") == ("Mixed_5b/branch5x5_1/bn",)
    assert g.successors("Mixed_5b/branch5x5_1/bn") == ("Mixed_5b/branch5x5_1/relu",)
    conv = g.op("Conv2d_1a_3x3/conv")
    assert conv.attrs["bias"] is False and conv.attrs["act"] is None
    assert out_shape(g, "avgpool") == (1, 2048, 1, 1)


def test_inception_fused_and_unfused_have_the_same_conv_work() -> None:
    fused, plain = inception_v3(2, fused=True), inception_v3(2, fused=False)
    assert conv_macs(fused) == conv_macs(plain) == 2 * 5_711_168_096
    assert out_shape(fused, "Mixed_7c/concat") == out_shape(plain, "Mixed_7c/concat")


def test_inception_classifier_appends_flatten_and_fc() -> None:
    g = inception_v3(2, classifier=True, fused=False)
    assert g.op_ids[-2:] == ("flatten", "fc")
    assert out_shape(g, "flatten") == (2, 2048)
    fc = g.op("fc")
    assert fc.kind == "matmul" and out_shape(g, "fc") == (2, 1000)
    assert fc.flops == 2 * 2 * 2048 * 1000
    assert g.tensor("fc:weight").shape == (2048, 1000)


@pytest.mark.parametrize(("resolution", "s35", "s17", "s8"), [
    (299, 35, 17, 8), (224, 25, 12, 5), (75, 7, 3, 1), (512, 61, 30, 14)])
def test_inception_resolution(resolution: int, s35: int, s17: int, s8: int) -> None:
    g = inception_v3(1, resolution=resolution, fused=True)
    assert out_shape(g, "maxpool2") == (1, 192, s35, s35)
    assert out_shape(g, "Mixed_6e/concat") == (1, 768, s17, s17)
    assert out_shape(g, "Mixed_7c/concat") == (1, 2048, s8, s8)
    assert out_shape(g, "avgpool") == (1, 2048, 1, 1)


def test_inception_rejects_too_small_resolution() -> None:
    with pytest.raises(GraphError, match="too small") as info:
        inception_v3(resolution=74)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------------------ SqueezeNet
def test_squeezenet_matches_ios_spec(spec: dict[str, Any]) -> None:
    s = spec["squeezenet"]
    g = squeezenet(1)
    assert len(g) == s["n_sched_ops"] == 50
    assert conv_macs(g) == s["conv_macs"]
    ios_ops = [o for block in s["blocks"] for o in block["ops"]]
    assert len(ios_ops) == len(g)
    ios_to_ours: dict[str, str | None] = {"0": None}
    kinds = {"conv": "conv2d", "maxpool": "maxpool", "concat": "concat", "add": "add",
             "global_avgpool": "global_avgpool"}
    for o, op in zip(ios_ops, g.ops, strict=True):  # same program order as IOS
        ios_to_ours[o["id"]] = op.id
        assert op.kind == kinds[o["op"]], op.id
        assert out_shape(g, op.id) == (1, *o["out"]), op.id
        ins = [i for e in o["in"] for i in (e["sum"] if isinstance(e, dict) else [e])]
        assert producers(g, op.id) == [p for p in (ios_to_ours[i] for i in ins) if p], op.id
        if o["op"] == "conv":
            a = op.attrs
            assert (a["kernel"][0], a["stride"][0], a["padding"][0]) == (
                o["k"][0], o["s"][0], o["p"][0])
            assert (a["cin"], a["cout"], a["act"]) == (o["cin"], o["cout"], o["act"])
    for block in s["blocks"]:
        last = ios_to_ours[block["ops"][-1]["id"]]
        assert last is not None
        assert out_shape(g, last) == (1, *block["out_shape"])


def test_squeezenet_unfused_and_small_resolution() -> None:
    g = squeezenet(1, fused=False)
    assert len(g) == 80
    assert conv_macs(g) == conv_macs(squeezenet(1))
    assert out_shape(squeezenet(1, resolution=29), "avgpool") == (1, 1000, 1, 1)
    with pytest.raises(GraphError, match="too small"):
        squeezenet(resolution=28)


# ------------------------------------------------------------------------------ RandWire
def test_randwire_matches_ios_spec(spec: dict[str, Any]) -> None:
    s = spec["randwire"]
    g = randwire(1)
    assert conv_macs(g) == s["conv_macs"]
    assert sum(op.kind == "sepconv" for op in g.ops) == sum(st["n_nodes"] for st in s["stages"])
    sums = [op for op in g.ops if op.id.endswith("/sum")]
    single_sink_stages = sum(len(st["sinks_outdeg0"]) == 1 for st in s["stages"])
    assert len(g) - len(sums) + single_sink_stages == s["n_sched_ops"] == 120
    assert len(randwire(1, fused=False)) == s["n_kernels_ios_count"] == 406
    assert out_shape(g, "conv1") == (1, *s["front_and_tail_ops"][0]["out"])
    for st in s["stages"]:
        name = st["name"]
        assert randwire_edges(name) == [tuple(e) for e in st["edges"]]
        nodes = [f"{name}/node{v}/sepconv" for v in range(st["n_nodes"])]
        for v in st["sources_indeg0"]:
            assert g.op(nodes[v]).attrs["stride"] == (2, 2)
        out_op = f"{name}/out" if len(st["sinks_outdeg0"]) > 1 else nodes[st["sinks_outdeg0"][0]]
        assert out_shape(g, out_op) == (1, *st["out_shape"])
        if len(st["sinks_outdeg0"]) > 1:
            assert producers(g, out_op) == [nodes[v] for v in st["sinks_outdeg0"]]
    assert out_shape(g, "avgpool") == (1, 1280, 1, 1)


def test_randwire_node_wiring() -> None:
    g = randwire(1)
    edges = randwire_edges("conv2")
    preds_of_6 = sorted(u for u, v in edges if v == 6)
    assert producers(g, "conv2/node6/sum") == [f"conv2/node{u}/sepconv" for u in preds_of_6]
    assert producers(g, "conv2/node6/sepconv") == ["conv2/node6/sum"]
    assert producers(g, "conv2/node0/sepconv") == ["conv1"]
    plain = randwire(1, fused=False)
    dw = plain.op("conv2/node0/dwconv")
    assert dw.attrs["groups"] == dw.attrs["cin"] == 77
    assert sum(op.flops for op in plain.ops if op.kind == "conv2d") == 2 * conv_macs(plain)
    with pytest.raises(OptionError, match="unknown RandWire stage"):
        randwire_edges("conv9")


# ------------------------------------------------------------------------------ NASNet-A large
def _folded_sum(op_id: str) -> bool:
    """The adds IOS folds into a cell's final concat (all five in normal/first cells; comb2-4 in
    stem and reduction cells, whose comb0/comb1 are IOS ops of their own)."""
    part, _, rest = op_id.partition("/")
    if not re.fullmatch(r"comb\d", rest):
        return False
    return part.startswith("cell") or rest in ("comb2", "comb3", "comb4")


def test_nasnet_matches_ios_spec(spec: dict[str, Any]) -> None:
    s = spec["nasnet_a_large"]
    g = nasnet_a_large(1)
    assert conv_macs(g) == s["conv_macs"]
    units = [op_id for op_id in g.op_ids if not _folded_sum(op_id)]
    assert len(units) == s["n_sched_ops"] == 374
    assert len(g) == 476
    last_op = {op_id.partition("/")[0]: op_id for op_id in g.op_ids}
    for part in s["cell_outputs"]:
        prefix = {"global_avgpool": "avgpool"}.get(part["name"], part["name"].split("(")[0])
        assert sum(u.partition("/")[0] == prefix for u in units) == part["sched_ops"], prefix
        assert out_shape(g, last_op[prefix]) == (1, *part["out_shape"]), prefix


@pytest.mark.parametrize("cell", ["cell1 (normal, 168 @42)", "reduction0 (336, 42->21)"])
def test_nasnet_cells_match_ios_operator_lists(spec: dict[str, Any], cell: str) -> None:
    ios_ops = spec["nasnet_a_large"]["example_cell_ops"][cell]
    g = nasnet_a_large(1)
    prefix = cell.split()[0] + "/"
    ours = [op for op in g.ops if op.id.startswith(prefix) and not _folded_sum(op.id)]
    assert len(ours) == len(ios_ops)
    explicit_sums = {tuple(o["in"][0]["sum"]): o["id"] for o in ios_ops if o["op"] == "add"}
    ios_to_ours: dict[str, str] = {}
    for o, op in zip(ios_ops, ours, strict=True):
        ios_to_ours[o["id"]] = op.id
        assert out_shape(g, op.id) == (1, *o["out"]), op.id
        if o["op"] == "ReluConv":
            conv = o["seq"][1]
            assert op.kind == "conv2d" and op.attrs["pre_act"] == "relu"
            assert (op.attrs["cin"], op.attrs["cout"]) == (conv["cin"], conv["cout"])
            ios_to_ours.setdefault(o["in"][0], producers(g, op.id)[0])  # cell inputs
        elif o["op"] == "ReluSepConv":
            dw, pw = o["seq"][1], o["seq"][2]
            assert op.kind == "sepconv"
            assert list(op.attrs["kernel"]) == dw["k"] and list(op.attrs["stride"]) == dw["s"]
            assert (op.attrs["cin"], op.attrs["cout"]) == (dw["cin"], pw["cout"])
        elif o["op"] in ("avgpool", "maxpool"):
            assert op.kind == o["op"]
            assert (list(op.attrs["kernel"]), list(op.attrs["stride"]), list(op.attrs["padding"])
                    ) == (o["k"], o["s"], o["p"])
        else:
            assert op.kind == {"add": "add", "concat_of_sums": "concat"}[o["op"]]
        expected = []
        for term in o["in"]:
            if isinstance(term, dict):
                key = tuple(term["sum"])
                if key in explicit_sums and explicit_sums[key] != o["id"]:
                    expected.append([ios_to_ours[explicit_sums[key]]])
                else:
                    expected.append([ios_to_ours[i] for i in key])
            else:
                expected.append([ios_to_ours[term]])
        got = [producers(g, p) if _folded_sum(p) else [p] for p in producers(g, op.id)]
        if op.kind == "add":
            got = [producers(g, op.id)]
        assert got == expected, op.id


def test_nasnet_wiring_and_unfused() -> None:
    g = nasnet_a_large(1)
    assert producers(g, "cell0/path_1") == ["stem0/concat"]
    assert producers(g, "cell0/conv_1x1") == ["stem1/concat"]
    assert producers(g, "cell6/path_1") == ["cell4/concat"]  # skips cell5, as in IOS/reference
    assert producers(g, "cell12/path_1") == ["cell10/concat"]
    assert producers(g, "cell7/conv_prev_1x1") == ["reduction0/concat"]
    assert producers(g, "stem1/path_sum") == ["stem1/path_1", "stem1/path_2"]
    assert out_shape(g, "stem1/path_sum") == (1, 42, 83, 83)
    assert producers(g, "stem0/comb3") == ["stem0/comb3_right", "stem0/comb0"]
    plain = nasnet_a_large(1, fused=False)
    assert conv_macs(plain) == conv_macs(g)
    assert {op.kind for op in plain.ops} <= {"conv2d", "relu", "add", "concat", "avgpool",
                                             "maxpool", "global_avgpool"}
    assert len(plain) == 476 + 2 * 220 + 47  # sepconv -> 3 ops, ReluConv -> 2 ops


# ------------------------------------------------------------------------------ layer costs
def test_conv_costs_by_hand() -> None:
    b = GraphBuilder("t")
    x = b.input("x", (2, 3, 8, 8))
    y = b.conv(x, 4, 3, padding=1, act="relu", name="c")
    g = b.build()
    op = g.op("c")
    assert b.shape(y) == (2, 4, 8, 8)
    assert op.kind == "conv2d"
    assert op.flops == 2 * (2 * 4 * 8 * 8) * (3 * 3 * 3) == 27648
    assert op.bytes_read == 4 * (2 * 3 * 8 * 8 + 4 * 3 * 3 * 3 + 4) == 1984
    assert op.bytes_written == 4 * 2 * 4 * 8 * 8 == 2048
    assert op.thread_blocks == math.ceil(2 * 8 * 8 / 64) * math.ceil(4 / 64) == 2
    assert op.inputs == ("x", "c:weight", "c:bias")
    assert g.tensor("c:weight").role == "parameter" and g.tensor("c:weight").producer is None
    assert g.tensor("c:weight").shape == (4, 3, 3, 3)
    assert op.attrs == {"kernel": (3, 3), "stride": (1, 1), "padding": (1, 1), "cin": 3,
                        "cout": 4, "groups": 1, "bias": True, "act": "relu", "pre_act": None}
    b2 = GraphBuilder("t")
    b2.conv(b2.input("x", (2, 3, 8, 8)), 4, 3, padding=1, pre_act="relu", name="c")
    rc = b2.build().op("c")
    assert rc.flops == op.flops + 2 * 3 * 8 * 8
    assert rc.bytes_read == op.bytes_read + 4 * 2 * 3 * 8 * 8
    assert rc.bytes_written == op.bytes_written + 4 * 2 * 3 * 8 * 8


def test_conv_rectangular_strided_grouped() -> None:
    b = GraphBuilder("t")
    x = b.input("x", (1, 8, 17, 17))
    assert b.shape(b.conv(x, 8, (1, 7), padding=(0, 3), name="r")) == (1, 8, 17, 17)
    assert b.shape(b.conv(x, 8, (7, 1), padding=(3, 0), name="c")) == (1, 8, 17, 17)
    assert b.shape(b.conv(x, 16, 3, stride=2, name="s")) == (1, 16, 8, 8)
    dw = b.conv(x, 8, 3, padding=1, groups=8, bias=False, name="dw")
    g = b.build()
    assert g.op("dw").flops == 2 * 8 * 17 * 17 * 1 * 9
    assert g.tensor("dw:weight").shape == (8, 1, 3, 3) and "dw:bias" not in g.tensors
    assert b.shape(dw) == (1, 8, 17, 17)
    big = GraphBuilder("t")
    assert big.shape(big.conv(big.input("x", (1, 3, 299, 299)), 32, 3, stride=2,
                              name="c")) == (1, 32, 149, 149)
    wide = GraphBuilder("t")
    z = wide.conv(wide.input("x", (1, 64, 35, 35)), 256, 1, name="c")
    assert wide.build().op("c").thread_blocks == math.ceil(35 * 35 / 64) * 4 == 80
    assert wide.shape(z) == (1, 256, 35, 35)


def test_pool_costs_by_hand() -> None:
    b = GraphBuilder("t")
    x = b.input("x", (1, 5, 9, 9))
    b.maxpool(x, 3, stride=2, name="mp")
    b.avgpool(x, 3, stride=1, padding=1, name="ap")
    b.global_avgpool(x, name="gap")
    g = b.build()
    mp = g.op("mp")
    assert out_shape(g, "mp") == (1, 5, 4, 4)
    assert mp.flops == 5 * 4 * 4 * 9 == 720
    assert (mp.bytes_read, mp.bytes_written, mp.thread_blocks) == (4 * 5 * 81, 4 * 5 * 16, 1)
    assert mp.attrs["pool"] == "max" and mp.attrs["kernel"] == (3, 3)
    assert out_shape(g, "ap") == (1, 5, 9, 9) and g.op("ap").kind == "avgpool"
    assert out_shape(g, "gap") == (1, 5, 1, 1) and g.op("gap").flops == 5 * 81


def test_matmul_costs_by_hand() -> None:
    b = GraphBuilder("t")
    a = b.input("a", (2, 3, 4, 5))
    c = b.input("c", (2, 3, 5, 130))
    b.matmul(a, c, name="mm")
    x = b.input("x", (7, 2048))
    b.linear(x, 1000, name="fc")
    g = b.build()
    mm = g.op("mm")
    assert out_shape(g, "mm") == (2, 3, 4, 130)
    assert mm.flops == 2 * 6 * 4 * 5 * 130
    assert mm.bytes_read == 4 * (2 * 3 * 4 * 5 + 2 * 3 * 5 * 130)
    assert mm.bytes_written == 4 * 2 * 3 * 4 * 130
    assert mm.thread_blocks == 6 * 1 * 3
    fc = g.op("fc")
    assert fc.kind == "matmul" and fc.flops == 2 * 7 * 2048 * 1000
    assert fc.bytes_read == 4 * (7 * 2048 + 2048 * 1000 + 1000)
    assert fc.thread_blocks == 1 * math.ceil(1000 / 64)


def test_elementwise_structural_and_norm_costs() -> None:
    b = GraphBuilder("t")
    x = b.input("x", (1, 3, 1000))
    y = b.input("y", (1, 5, 1000))
    r = b.relu(x, name="relu")
    s = b.add(x, r, name="add")
    b.add(x, r, s, name="add3")
    cat = b.concat([x, y], axis=1, name="cat")
    f = b.flatten(cat, name="flat")
    t = b.transpose(cat, (0, 2, 1), name="tr")
    b.reshape(t, (8, 1000), name="rs")
    b.softmax(x, name="sm")
    b.layernorm(x, name="ln")
    b.batchnorm(x, name="bn")
    b.gelu(x, name="gelu")
    b.mul(x, r, name="mul")
    g = b.build()
    assert g.op("relu").flops == 3000 and g.op("relu").thread_blocks == 3
    assert g.op("add").flops == 3000 and g.op("add3").flops == 6000
    assert g.op("add").bytes_read == 2 * 12000
    assert out_shape(g, "cat") == (1, 8, 1000) and g.op("cat").flops == 0
    assert g.op("cat").bytes_read == g.op("cat").bytes_written == 32000
    assert b.shape(f) == (1, 8000)
    for view in ("flat", "rs"):
        op = g.op(view)
        assert (op.flops, op.bytes_read, op.bytes_written) == (0, 0, 0) and op.attrs["view"]
    assert out_shape(g, "tr") == (1, 1000, 8) and g.op("tr").bytes_written == 32000
    assert g.op("sm").flops == 5 * 3000 and g.op("ln").flops == 8 * 3000
    assert g.op("ln").bytes_read == 12000 + 4 * 2 * 1000
    assert g.op("bn").bytes_read == 12000 + 4 * 4 * 3 and g.op("bn").flops == 2 * 3000
    assert g.op("gelu").flops == 8 * 3000 and g.op("mul").kind == "mul"


@pytest.mark.parametrize("make", [
    lambda b, x: b.conv(x, 4, 9, name="c"),
    lambda b, x: b.conv(x, 4, 3, groups=2, name="c"),
    lambda b, x: b.conv(x, 4, 3, act="swish", name="c"),
    lambda b, x: b.maxpool(x, 5, stride=0, name="p"),
    lambda b, x: b.concat([x, b.input("z", (1, 3, 4, 5))], name="cat"),
    lambda b, x: b.add(x, b.input("z", (1, 3, 4, 5)), name="a"),
    lambda b, x: b.matmul(x, b.input("z", (1, 3, 5, 4)), name="m"),
    lambda b, x: b.reshape(x, (7,), name="r"),
    lambda b, x: b.transpose(x, (0, 0, 1, 2), name="t"),
    lambda b, x: b.relu("missing", name="r"),
    lambda b, x: (b.relu(x, name="r"), b.relu(x, name="r")),
])
def test_builder_errors_are_one_line(make: Callable[[GraphBuilder, str], object]) -> None:
    b = GraphBuilder("t")
    x = b.input("x", (1, 3, 4, 4))
    with pytest.raises(GraphError) as info:
        make(b, x)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------------------ transformer
def test_transformer_structure_and_flops() -> None:
    n, s, d, h, ff = 2, 16, 64, 4, 256
    g = transformer_block(n, seq_len=s, d_model=d, heads=h, d_ff=ff, layers=3)
    assert len(g) == 22 * 3
    matmul_flops = sum(op.flops for op in g.ops if op.kind == "matmul")
    per_block = 4 * 2 * n * s * d * d + 2 * 2 * n * s * d * ff + 2 * 2 * n * h * s * s * (d // h)
    assert matmul_flops == 3 * per_block
    assert out_shape(g, "block0/scores") == (n, h, s, s)
    assert g.op("block0/softmax").attrs["scale"] == pytest.approx(1 / math.sqrt(d // h))
    assert producers(g, "block0/scores") == ["block0/q_heads", "block0/k_heads"]
    nxg = g.to_networkx()
    for a, b in (("q", "k"), ("k", "v"), ("q", "v")):  # independent branches
        assert not nx.has_path(nxg, f"block0/{a}", f"block0/{b}_heads")
        assert not nx.has_path(nxg, f"block0/{b}", f"block0/{a}_heads")
    assert set(g.successors("block0/ln1")) == {"block0/q", "block0/k", "block0/v"}
    assert producers(g, "block1/ln1") == ["block0/residual2"]
    assert producers(g, "block2/residual2") == ["block2/residual1", "block2/ff2"]
    assert g.outputs == ("block2/residual2:out",)


@pytest.mark.parametrize("kwargs", [{"heads": 5}, {"layers": 0}, {"seq_len": -1},
                                    {"d_model": 1.5}])
def test_transformer_bad_options(kwargs: dict[str, Any]) -> None:
    with pytest.raises(OptionError) as info:
        transformer_block(**kwargs)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------------------ random families
RANDOM_FAMILIES: dict[str, Callable[..., Graph]] = {
    "layered": lambda seed: layered_dag(6, 5, edge_prob=0.3, seed=seed),
    "series_parallel": lambda seed: series_parallel_dag(60, seed=seed),
    "gnp": lambda seed: gnp_dag(40, 0.15, seed=seed),
    "random": lambda seed: random_dag(500, edges_per_op=3, window=20, seed=seed),
}


@pytest.mark.parametrize("family", sorted(RANDOM_FAMILIES))
def test_random_families_deterministic_per_seed(family: str) -> None:
    make = RANDOM_FAMILIES[family]
    state = random.getstate()
    g1, g2, g3 = make(7), make(7), make(8)
    assert random.getstate() == state  # global random state untouched
    assert g1 == g2
    assert g1 != g3
    assert make(random.Random(7)) == g1
    costs = [(op.flops, op.bytes_written, op.thread_blocks or 0) for op in g1.ops]
    assert len(set(costs)) > 1
    assert all(1 <= tb <= 256 for _, _, tb in costs)
    for op in g1.ops:
        assert op.bytes_read == sum(g1.tensor(t).size_bytes for t in op.inputs)


def test_layered_dag_structure() -> None:
    g = layered_dag(5, 4, edge_prob=0.0, seed=1)
    assert len(g) == 20
    for i in range(1, 5):
        for j in range(4):
            preds = g.predecessors(f"L{i}_{j}")
            assert len(preds) == 1 and preds[0].startswith(f"L{i - 1}_")
    dense = layered_dag(3, 3, edge_prob=1.0, seed=1)
    assert len(dense.predecessors("L2_0")) == 6
    assert layered_dag(0, 3, seed=1).ops == ()


def test_series_parallel_dag_structure() -> None:
    for seed in range(5):
        g = series_parallel_dag(50, seed=seed)
        assert len(g) == 50
        assert g.sources() == ("n0",) and g.sinks() == ("n49",)
        assert _is_series_parallel(g)
    assert len(series_parallel_dag(1, seed=0)) == 1
    assert series_parallel_dag(2, seed=0).edges == (("n0", "n1"),)


def _is_series_parallel(g: Graph) -> bool:
    """Independent check: reduce the edge multigraph by series and parallel reductions."""
    edges: dict[tuple[str, str], int] = {}
    for e in g.edges:
        edges[e] = 1
    src, snk = g.sources()[0], g.sinks()[0]
    changed = True
    while changed and len(edges) > 1:
        changed = False
        nodes = {u for e in edges for u in e} - {src, snk}
        for w in nodes:
            ins = [e for e in edges if e[1] == w]
            outs = [e for e in edges if e[0] == w]
            if len(ins) == 1 and len(outs) == 1:
                (u, _), (_, v) = ins[0], outs[0]
                del edges[ins[0]], edges[outs[0]]
                edges[(u, v)] = 1  # a parallel duplicate merges into the same key
                changed = True
                break
    return list(edges) == [(src, snk)]


def test_gnp_dag_extremes() -> None:
    assert gnp_dag(10, 0.0, seed=1).edges == ()
    full = gnp_dag(10, 1.0, seed=1)
    assert len(full.edges) == 45
    assert sorted(full.op_ids) == sorted(f"n{i}" for i in range(10))
    assert full.op_ids != tuple(f"n{i}" for i in range(10))  # ids are a random permutation
    mid = gnp_dag(200, 0.1, seed=3)
    assert 0.07 < len(mid.edges) / (200 * 199 / 2) < 0.13


def test_random_dag_structure() -> None:
    g = random_dag(400, edges_per_op=3, window=10, seed=2)
    ids = {op_id: i for i, op_id in enumerate(g.op_ids)}
    for op_id, i in ids.items():
        preds = [ids[p] for p in g.predecessors(op_id)]
        assert len(preds) == min(i, 3) == len(set(preds))
        assert all(max(0, i - 10) <= p < i for p in preds)
    narrow = random_dag(30, edges_per_op=5, window=2, seed=0)
    assert max(len(narrow.predecessors(o)) for o in narrow.op_ids) == 2
    assert random_dag(0, seed=0).ops == ()


@pytest.mark.parametrize("call", [
    lambda: layered_dag(-1, 3),
    lambda: layered_dag(3, -2),
    lambda: layered_dag(3, 3, edge_prob=1.5),
    lambda: series_parallel_dag(0),
    lambda: gnp_dag(-5, 0.1),
    lambda: gnp_dag(5, -0.1),
    lambda: gnp_dag(5, 2),
    lambda: random_dag(-1),
    lambda: random_dag(10, edges_per_op=-1),
    lambda: random_dag(10, window=0),
    lambda: random_dag(10, seed="x"),  # type: ignore[arg-type]
    lambda: inception_v3(0),
    lambda: squeezenet(-1),
    lambda: randwire(batch=1.5),  # type: ignore[arg-type]
    lambda: inception_v3(resolution=10),
    lambda: randwire(resolution=0),
])
def test_bad_options_raise_one_line_errors(call: Callable[[], object]) -> None:
    with pytest.raises(WorkbenchError) as info:
        call()
    assert isinstance(info.value, (GraphError, OptionError))
    assert "\n" not in str(info.value)


@pytest.mark.slow
def test_random_dag_100k_builds() -> None:
    # its build time is benchmarks/scale.py's "build" stage (no wall-clock assert here)
    g = random_dag(100_000, seed=0)
    assert len(g) == 100_000
    assert len(g.edges) == 3 * 100_000 - 6
