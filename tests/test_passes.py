"""Graph passes: side-effect ordering, no-task elimination, O1 fusion, the PASSES table.

Exact expected results on hand-made graphs, plus the NumPy reference executor as an independent
oracle (STYLE.md R5): a pass must not change what a graph computes.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import workbench as wb
from workbench.executors.reference import run_reference
from workbench.passes import (
    PASSES,
    add_side_effect_edges,
    drop_no_task_ops,
    fuse_elementwise,
    fusion_groups,
    run_passes,
)
from workbench.values.graph import Graph, Op, Tensor

XYZ = {k: np.array([v], dtype=np.float32) for k, v in (("x", 1.0), ("y", 0.2), ("z", 0.3))}


def _bytes(g: Graph) -> int:
    return sum(op.bytes_read + op.bytes_written for op in g.ops)


def _t(tid: str, producer: str | None = None, *, role: str = "activation",
       shape: tuple[int, ...] = (4, 8)) -> Tensor:
    return Tensor(tid, 4 * int(np.prod(shape)), producer, role=role, shape=shape)


# ------------------------------------------------------------------------------ side effects
def test_textbook_side_effect_edges_exact() -> None:
    g = wb.models.textbook_side_effects()
    g2 = add_side_effect_edges(g)
    assert g2.control_edges == (("Assign_1", "Assign_2"), ("Assign_2", "Sub_1"))
    assert g.control_edges == ()  # the input is untouched
    assert g2.is_control_edge("Assign_1", "Assign_2") and g2.is_control_edge("Assign_2", "Sub_1")


def test_side_effect_edges_are_drawn_dashed() -> None:
    pytest.importorskip("graphviz")
    from workbench.viz import dag

    g = add_side_effect_edges(wb.models.textbook_side_effects())
    source = dag(g).source
    name = {op.id: f"n{i}" for i, op in enumerate(g.ops)}
    for a, b in g.control_edges:
        lines = [ln for ln in source.splitlines() if f"{name[a]} -> {name[b]}" in ln]
        assert lines and "dashed" in lines[0], (a, b, lines)
    assert dag(wb.models.textbook_side_effects()).source.count("dashed") == 0


@pytest.mark.parametrize("policy", wb.policies())
def test_side_effects_give_z_minus_y_under_every_policy(policy: str) -> None:
    g = add_side_effect_edges(wb.models.textbook_side_effects())
    s = wb.schedule(g, policy).validate()
    out = run_reference(s, XYZ)
    assert np.allclose(out["r"], XYZ["z"] - XYZ["y"]), (policy, s.issue_order, out["r"])
    assert np.allclose(out["x"], XYZ["z"])  # the parameter ends with the last assigned value


def test_validate_refuses_the_order_that_computes_the_wrong_value_with_or_without_the_pass(
        ) -> None:
    """The textbook's Sub-first order gives ``r = x0 - y``: no edge of the raw graph forbids it,
    but the ops declare their state (two assigns of ``x``, a read of it), and ``validate()``
    refuses it whether the pass made that order into edges or not (issue 43 #1)."""
    g = wb.models.textbook_side_effects()
    order = ("Sub_1", "Assign_1", "Assign_2")
    bad = wb.Schedule(g, "hand", {0: order}, (), order)
    r = run_reference(bad, XYZ)["r"]  # what it would compute
    assert np.allclose(r, XYZ["x"] - XYZ["y"]) and not np.allclose(r, XYZ["z"] - XYZ["y"])
    with pytest.raises(wb.ScheduleError, match=r"'Assign_2' and 'Sub_1' both touch state 'x' "
                                                r"and the program runs 'Assign_2' first, but "
                                                r"stream 0 launches 'Sub_1' first"):
        bad.validate()
    fixed = add_side_effect_edges(g)
    with pytest.raises(wb.ScheduleError, match="Assign_2"):
        wb.Schedule(fixed, "hand", {0: order}, (), order).validate()
    # the program's order across two streams without syncs is a race: refused, with the pass or not
    for graph in (g, fixed):
        with pytest.raises(wb.ScheduleError, match="Assign"):
            wb.Schedule(graph, "hand", {0: ("Assign_1", "Sub_1"), 1: ("Assign_2",)}, (),
                        ("Assign_1", "Assign_2", "Sub_1")).validate()


@pytest.mark.parametrize("policy", wb.policies())
def test_every_policy_keeps_declared_side_effects_in_program_order_without_the_pass(
        policy: str) -> None:
    g = wb.models.textbook_side_effects()
    s = wb.schedule(g, policy).validate()
    assert s.graph is g
    out = run_reference(s, XYZ)
    assert np.allclose(out["r"], XYZ["z"] - XYZ["y"]), (policy, s.issue_order)


def test_reads_stay_concurrent_writes_wait_for_reads() -> None:
    # r1, r2 read parameter p; a writes p; r3 reads p afterwards; two prints share the "io" state.
    tensors = [_t("p", role="parameter"), _t("v", role="input"), _t("w", role="input")]
    ops = [
        Op("r1", kind="relu", inputs=("p",), outputs=("r1:out",)),
        Op("r2", kind="neg", inputs=("p",), outputs=("r2:out",)),
        Op("print1", kind="print", inputs=("r1:out",), outputs=("print1:out",)),
        Op("a", kind="assign", inputs=("p", "v"), outputs=("a:out",)),
        Op("r3", kind="mul", inputs=("p", "w"), outputs=("r3:out",)),
        Op("print2", kind="print", inputs=("r3:out",), outputs=("print2:out",)),
    ]
    tensors += [_t(f"{op.id}:out", op.id) for op in ops]
    g = add_side_effect_edges(Graph(ops, tensors, name="rw"))
    assert g.control_edges == (("r1", "a"), ("r2", "a"), ("a", "r3"), ("print1", "print2"))
    # every schedule computes what program order computes
    expect = run_reference(Graph(ops, tensors), seed=3)
    for policy in wb.policies():
        out = run_reference(wb.schedule(g, policy), seed=3)
        for t in ("r1:out", "r2:out", "r3:out"):
            assert np.allclose(out[t], expect[t]), (policy, t)


def test_graph_without_side_effects_is_returned_unchanged() -> None:
    g = wb.models.nnc_diamond()
    assert add_side_effect_edges(g) is g


def test_a_comparison_bounds_the_graph_as_it_runs() -> None:
    # the two writes and the read of x run one after another under every policy, so the critical
    # path the table reports is that chain (it was the longest single op: 1.39 µs, every
    # policy 14x "the lower bound")
    from workbench.simulator.cost_model.costs import critical_path_us, graph_costs

    g = wb.models.textbook_side_effects()
    c = wb.compare(g, show_progress=False, memory_budget_bytes=None)
    chain = sum(cost.alone_us for cost in graph_costs(g, "h100"))
    assert critical_path_us(g, "h100") == pytest.approx(chain)
    assert c.table["critical_path_us"].iloc[0] == pytest.approx(chain)
    assert (c.table["ratio_to_lb"] >= 1.0).all()


# ------------------------------------------------------------------------------ no-task ops
def _view_graph() -> Graph:
    tensors = [_t("x", role="input"), _t("a:out", "a"), _t("r:out", "r", shape=(32,)),
               _t("f:out", "f", shape=(1, 32)), _t("b:out", "b", shape=(1, 32)),
               _t("c:out", "c", shape=(1, 32))]
    ops = [
        Op("a", kind="relu", inputs=("x",), outputs=("a:out",), bytes_read=128, bytes_written=128),
        Op("r", kind="reshape", inputs=("a:out",), outputs=("r:out",), thread_blocks=1),
        Op("f", kind="expand_dims", inputs=("r:out",), outputs=("f:out",), thread_blocks=1),
        Op("b", kind="relu", inputs=("f:out",), outputs=("b:out",)),
        Op("c", kind="sigmoid", inputs=("f:out",), outputs=("c:out",)),
    ]
    return Graph(ops, tensors, [("r", "c")], name="views")


def test_no_task_ops_become_aliases_exact() -> None:
    g = _view_graph()
    g2 = drop_no_task_ops(g)
    assert g2.op_ids == ("a", "b", "c")
    assert g2.op("b").inputs == ("a:out",) and g2.op("c").inputs == ("a:out",)
    assert g2.op("b").attrs["aliases"] == {"f:out": "a:out"}
    assert g2.op("b").attrs["view_shapes"] == {0: (1, 32)}
    assert "r:out" not in g2.tensors and "f:out" not in g2.tensors
    assert g2.control_edges == (("a", "c"),)  # r -> c re-linked to r's predecessor
    assert g.op_ids == ("a", "r", "f", "b", "c")  # input untouched
    before, after = run_reference(g, seed=1), run_reference(g2, seed=1)
    for t in ("b:out", "c:out"):
        assert np.array_equal(before[t], after[t].reshape(before[t].shape))


def test_no_task_graph_output_is_replaced_by_its_alias() -> None:
    g = Graph.from_edges([("a", "r")], ops={"a": "relu", "r": "flatten"})
    g2 = drop_no_task_ops(g)
    assert g2.op_ids == ("a",) and g2.outputs == ("a:out",)


def test_no_task_removes_flatten_from_inception_classifier() -> None:
    g = wb.models.inception_v3(classifier=True, fused=False)
    g2 = drop_no_task_ops(g)
    assert "flatten" in g and "flatten" not in g2
    assert len(g2) == len(g) - 1
    assert g2.op("fc").inputs[0] == "avgpool:out"
    assert g2.op("fc").attrs["aliases"] == {"flatten:out": "avgpool:out"}
    t = wb.models.transformer_block()
    assert {op.kind for op in drop_no_task_ops(t).ops}.isdisjoint({"reshape", "flatten"})
    assert len(drop_no_task_ops(t)) == len(t) - 4  # q/k/v head splits and the merge


# ------------------------------------------------------------------------------ fusion
def _fusion_graph() -> Graph:
    """mm -> bias -> relu -> ln -> mm2, relu also read by mm3 (its output must stay)."""
    tensors = [_t("x", role="input", shape=(4, 8)), _t("W", role="parameter", shape=(8, 8)),
               _t("b", role="parameter", shape=(8,)), _t("lnp", role="parameter", shape=(2, 8))]
    ops = [
        Op("mm", kind="matmul", inputs=("x", "W"), outputs=("mm:out",), flops=512,
           thread_blocks=1),
        Op("bias", kind="bias_add", inputs=("mm:out", "b"), outputs=("bias:out",), flops=32,
           thread_blocks=2),
        Op("relu", kind="relu", inputs=("bias:out",), outputs=("relu:out",), flops=32,
           thread_blocks=3),
        Op("ln", kind="layernorm", inputs=("relu:out", "lnp"), outputs=("ln:out",), flops=256,
           thread_blocks=1),
        Op("mm2", kind="matmul", inputs=("ln:out", "W"), outputs=("mm2:out",), flops=512),
        Op("mm3", kind="matmul", inputs=("relu:out", "W"), outputs=("mm3:out",), flops=512),
    ]
    tensors += [_t(f"{op.id}:out", op.id) for op in ops]
    return Graph(ops, tensors, name="fusable")


def test_fusion_exact_group_and_costs() -> None:
    g = _fusion_graph()
    assert fusion_groups(g) == [["bias", "relu", "ln"]]
    g2 = fuse_elementwise(g)
    f = g2.op("bias+relu+ln")
    assert g2.op_ids == ("mm", "bias+relu+ln", "mm2", "mm3")
    assert f.kind == "fused" and f.attrs["members"] == ("bias", "relu", "ln")
    assert f.attrs["pattern"] == "reduce"
    assert [e["kind"] for e in f.attrs["expr"]] == ["bias_add", "relu", "layernorm"]
    assert f.inputs == ("mm:out", "b", "lnp")
    assert f.outputs == ("relu:out", "ln:out")  # relu:out is read by mm3 outside the group
    assert f.flops == 32 + 32 + 256 and f.thread_blocks == 3
    assert f.bytes_read == 128 + 32 + 64 and f.bytes_written == 128 + 128
    assert "bias:out" not in g2.tensors and g2.tensor("relu:out").producer == f.id
    assert fuse_elementwise(g2) == g2  # fused ops are opaque: nothing more to do


def test_fusion_keeps_the_graph_acyclic() -> None:
    # a -> b and a -> m (matmul) -> b: fusing a with b would need m both before and after.
    g = Graph.from_edges([("a", "m"), ("a", "b"), ("m", "b")],
                         ops={"a": "relu", "m": "matmul", "b": "add"})
    assert fusion_groups(g) == []
    assert fuse_elementwise(g) is g


def test_fusion_rules_for_reduces() -> None:
    # nothing after a reduce; two reduces never together
    after = Graph.from_edges([("ln", "r")], ops={"ln": "layernorm", "r": "relu"})
    assert fusion_groups(after) == []
    two = Graph.from_edges([("sm", "ln")], ops={"sm": "softmax", "ln": "layernorm"})
    assert fusion_groups(two) == []
    # an elementwise group joins a reduce only if all of it feeds the reduce
    side = Graph.from_edges([("a", "b"), ("a", "sm")], ops={"a": "relu", "b": "relu",
                                                            "sm": "softmax"})
    assert fusion_groups(side) == [["a", "b"]]
    feeds = Graph.from_edges([("a", "b"), ("b", "sm")], ops={"a": "relu", "b": "mul",
                                                             "sm": "softmax"})
    assert fusion_groups(feeds) == [["a", "b", "sm"]]
    # other devices and pinned durations
    cpu = Graph.from_edges([("a", "b")], ops={"a": "relu", "b": "relu"},
                           devices={"a": "cpu", "b": "cpu"})
    assert fusion_groups(cpu) == []
    pinned = fuse_elementwise(Graph.from_edges([("a", "b")], ops={"a": "relu", "b": "relu"},
                                               durations={"a": 3.0, "b": 4.0}))
    assert pinned.op("a+b").duration_us == 7.0


@pytest.mark.parametrize("graph", [
    wb.models.inception_v3(fused=False), wb.models.transformer_block(),
    wb.models.transformer_block(layers=2)],
    ids=["inception_v3", "transformer_block", "transformer_2"])
def test_fusion_on_networks_is_acyclic_and_moves_fewer_bytes(graph: Graph) -> None:
    fused = fuse_elementwise(graph)
    assert nx.is_directed_acyclic_graph(fused.to_networkx())
    assert _bytes(fused) < _bytes(graph)
    assert len(fused) < len(graph)
    saved = sum(op.attrs["saved_bytes"] for op in fused.ops if op.kind == "fused")
    assert _bytes(graph) - _bytes(fused) == saved
    assert sum(op.flops for op in fused.ops) == pytest.approx(sum(op.flops for op in graph.ops))
    wb.schedule(fused, "nnc").validate()


def test_inception_fuses_every_batchnorm_with_its_relu() -> None:
    groups = fusion_groups(wb.models.inception_v3(fused=False))
    assert len(groups) == 94
    assert all(len(m) == 2 and m[0].endswith("/bn") and m[1].endswith("/relu") for m in groups)
    assert fusion_groups(wb.models.transformer_block()) == [["block0/residual1", "block0/ln2"]]


def test_passes_preserve_values_on_a_small_transformer() -> None:
    g = wb.models.transformer_block(seq_len=8, d_model=16, heads=2, d_ff=32, layers=2)
    expect = run_reference(g, seed=5)
    for names in (["no_task"], ["fusion"], ["side_effects", "no_task", "fusion"]):
        g2 = run_passes(g, names)
        for policy in ("serial", "nnc", "dfs"):
            out = run_reference(wb.schedule(g2, policy), seed=5)
            for t in g.outputs:
                assert np.allclose(out[t], expect[t], atol=1e-5), (names, policy)


# ------------------------------------------------------------------------------ registry
def test_pass_registry() -> None:
    assert PASSES.names() == ["side_effects", "no_task", "fusion", "insert_copies"]
    g = wb.models.textbook_side_effects()
    assert run_passes(g, []) is g
    with pytest.raises(wb.OptionError, match=r"unknown pass 'fuse'; did you mean 'fusion'\? "
                                             r"\(known: fusion, "):
        run_passes(g, ["side_effects", "fuse"])
    with pytest.raises(wb.OptionError, match=r"^unknown pass 'nope' \(known: ") as info:
        run_passes(g, ["nope"])
    assert "\n" not in str(info.value)


def test_reference_rejects_unknown_kinds_and_bad_orders() -> None:
    # bias_add: a known kind without a NumPy reference (gather has one since the op vocabulary)
    g = Graph.from_edges([("a", "b")], ops={"a": "op", "b": "bias_add"})
    with pytest.raises(wb.OptionError, match="kind 'bias_add'"):
        run_reference(g)
    with pytest.raises(wb.OptionError, match=r"op 'a' \(relu\) of graph '.*' reads no tensor"):
        run_reference(Graph.from_edges([("a", "b")], ops={"a": "relu", "b": "relu"}))
    chain = Graph.from_edges([("a", "b")], ops={"a": "op", "b": "relu"})
    bad = wb.Schedule(chain, "hand", {0: ("b",), 1: ("a",)}, (), ("b", "a"))
    with pytest.raises(wb.ScheduleError, match="before its input"):
        run_reference(bad)
