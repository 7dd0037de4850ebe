"""Graph construction checks, views and conversions."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.values.graph import Op, Tensor


def test_from_edges_program_order_and_successors() -> None:
    g = wb.Graph.from_edges([("n1", "n2"), ("n1", "n3"), ("n2", "n4"), ("n3", "n4")],
                            ops={"n1": "conv2d", "n2": "relu", "n3": "relu", "n4": "add"})
    assert g.op_ids == ("n1", "n2", "n3", "n4")
    assert g.op("n4").kind == "add" and g.predecessors("n4") == ("n2", "n3")
    assert g.sources() == ("n1",) and g.sinks() == ("n4",)


def test_program_order_need_not_be_topological() -> None:
    g = wb.Graph.from_edges([("a", "b")], ops=["b", "a"])
    assert g.op_ids == ("b", "a") and g.topo_order() == ("a", "b")


def test_cycle_is_printed() -> None:
    with pytest.raises(wb.GraphError, match=r"cycle: (a -> b -> c -> a|b -> c -> a -> b|"
                                            r"c -> a -> b -> c)"):
        wb.Graph.from_edges([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])


def test_self_loop_and_control_cycle() -> None:
    with pytest.raises(wb.GraphError, match="cycle"):
        wb.Graph.from_edges([("a", "a")])
    g = wb.Graph.from_edges([("a", "b")])
    with pytest.raises(wb.GraphError, match="cycle: "):
        g.replace(control_edges=[("b", "a")])


def test_duplicate_ids_dangling_edges_and_bad_sizes() -> None:
    with pytest.raises(wb.GraphError, match="duplicate op id 'a'"):
        wb.Graph([Op("a"), Op("a")])
    with pytest.raises(wb.GraphError, match="reads tensor 'ghost'.*dangling"):
        wb.Graph([Op("a", inputs=("ghost",))])
    with pytest.raises(wb.GraphError, match="control edge 'a' -> 'zz' names unknown op 'zz'"):
        wb.Graph([Op("a")], control_edges=[("a", "zz")])
    with pytest.raises(wb.GraphError, match="op 'a': flops must be a non-negative number, got -5"):
        wb.Graph([Op("a", flops=-5)])
    with pytest.raises(wb.GraphError, match="flops must be a non-negative number, got 'lots'"):
        wb.Graph([Op("a", flops="lots")])  # type: ignore[arg-type]
    with pytest.raises(wb.GraphError, match="tensor 't': size_bytes"):
        wb.Graph([Op("a", outputs=("t",))], [Tensor("t", -1, producer="a")])
    with pytest.raises(wb.GraphError, match="produced by both"):
        wb.Graph([Op("a", outputs=("t",)), Op("b", outputs=("t",))])
    with pytest.raises(wb.GraphError, match="sizes names 'zz'"):
        wb.Graph.from_edges([("a", "b")], sizes={"zz": 1})


def test_error_messages_are_one_line() -> None:
    for bad in ([("a", "b"), ("b", "a")], [("a", "a")]):
        with pytest.raises(wb.GraphError) as info:
            wb.Graph.from_edges(bad)
        assert "\n" not in str(info.value)


def test_networkx_round_trip_and_control_edges() -> None:
    g = wb.models.inception_v3(batch=1, fused=False)
    back = wb.Graph.from_networkx(g.to_networkx())
    assert back.op_ids == g.op_ids and set(back.edges) == set(g.edges)
    c = wb.Graph.from_edges([("a", "b"), ("a", "c")]).replace(control_edges=[("b", "c")])
    nxg = c.to_networkx()
    assert nxg.edges["b", "c"]["kind"] == "control" and c.is_control_edge("b", "c")
    assert wb.Graph.from_networkx(nxg).control_edges == (("b", "c"),)


def test_graph_is_a_value() -> None:
    g = wb.models.nnc_diamond()
    g2 = g.with_op("N2", flops=1e9)
    assert g.op("N2").flops == 0 and g2.op("N2").flops == 1e9 and g != g2
    assert g == wb.models.nnc_diamond()
    assert g.summary()["ops"] == 4 and "4 ops" in repr(g)


def test_priority_topological_order() -> None:
    from workbench.values.graph import priority_topological_order

    preds = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}
    priority = {"a": 0, "b": 2, "c": 1, "d": 3}
    assert priority_topological_order(preds, priority) == ["a", "c", "b", "d"]
    cyclic = {"a": ["b"], "b": ["a"], "c": []}
    assert priority_topological_order(cyclic, {"a": 0, "b": 1, "c": 2}) == ["c"]  # cycle left out
