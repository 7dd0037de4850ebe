"""Seed rules checked against the upstream systems' own code (issue "NNC's while and case..of, and
the seed rules that are still off"), each on a small graph worked by hand from the rule."""

from __future__ import annotations

import workbench as wb

OPS = {k: "op" for k in "abcde"}


def test_raf_asap_pops_the_later_post_dfs_node_first() -> None:
    # Two chains a -> c and b -> d, all depths 2 / 1.  Post-DFS order from the sinks c, d:
    # a, c, b, d.  RAF's ready stack starts as [a, b] (post-DFS order), sorted by depth (equal)
    # and popped from the back: b first; its heavy consumer d goes on top and is popped next;
    # then a and c.  (The old heap popped the earliest node: a, c, b, d.)
    g = wb.Graph.from_edges([("a", "c"), ("b", "d")], ops={k: "op" for k in "abcd"})
    s = wb.schedule(g, "asap")
    assert s.issue_order == ("b", "d", "a", "c")
    assert s.notes["heavy_chains"] == [["b", "d"], ["a", "c"]]


def test_raf_asap_pushed_nodes_of_equal_depth_pop_newest_first() -> None:
    # x feeds p and q (both depth 2, light edges from x except the heavy one), p -> y, q -> z.
    # x's heavy parent is its first consumer in argument order at the deepest level ... worked:
    # depth: x 3, p 2, q 2, y 1, z 1.  Heavy edges: p claims x (p is visited before q in
    # post-DFS order among equal depths), so x -> p is heavy and x -> q light.  After x: q is
    # pushed (light), then p goes on top: p, then y (p's heavy consumer on top), then q, z.
    g = wb.Graph.from_edges([("x", "p"), ("x", "q"), ("p", "y"), ("q", "z")],
                            ops={k: "op" for k in ("x", "p", "q", "y", "z")})
    s = wb.schedule(g, "asap")
    assert s.issue_order == ("x", "p", "y", "q", "z")


def test_nnc_boundary_waits_count_streams_of_sources_and_sinks_off_stream_0() -> None:
    # NNC's schedule: stream 0 = a, c; stream 1 = b, d; stream 2 = e (e -> d).  Begin: the
    # sources' distinct non-default streams {1, 2} wait on `begin` (2); end: the sinks on a
    # non-default stream (d on stream 1) signal stream 0 (1).  Total 3 (the old count took every
    # non-default stream again for the end: 4).
    g = wb.Graph.from_edges([("a", "c"), ("b", "c"), ("b", "d"), ("e", "d")], ops=OPS)
    s = wb.schedule(g, "nnc")
    assert dict(s.streams) == {0: ("a", "c"), 1: ("b", "d"), 2: ("e",)}
    assert s.notes["boundary_waits"] == 3


def test_nnc_signals_follow_the_visit_order_not_the_edge_order() -> None:
    # x waits on b and c (streams 1 and 2); NNC visits a, b, c, x and allocates signals in that
    # order, so the waits are (b, x) then (c, x) however the edges were written.
    orders = ([("a", "x"), ("b", "x"), ("c", "x")], [("c", "x"), ("a", "x"), ("b", "x")],
              [("b", "x"), ("c", "x"), ("a", "x")])
    schedules = [wb.schedule(wb.Graph.from_edges(e, ops={k: "op" for k in "abcx"}), "nnc")
                 for e in orders]
    for s in schedules:
        assert s.syncs == (("b", "x"), ("c", "x"))
        assert dict(s.streams) == dict(schedules[0].streams)
        assert s.issue_order == schedules[0].issue_order


def test_bestfit_pool_reuses_the_buffer_freed_first_among_equal_sizes() -> None:
    """Seed 004 / MindSpore's idle multimap keyed by size: equal sizes come out FIFO.

    Worked by hand with 512-byte alignment in one 8 KiB block: a@0 (1024 B), x@1024 (512 B),
    b@1536 (1024 B), y@2560 (512 B), the rest idle. Freeing b and then a leaves two idle
    1024-byte buffers; the next 1000-byte request takes b's (freed first) at 1536, not the lowest
    address 0.
    """
    from workbench.memory.pool import simulate_pool

    events = [
        (0.0, "alloc", "a", 1000),
        (0.0, "alloc", "x", 1),
        (0.0, "alloc", "b", 1000),
        (0.0, "alloc", "y", 1),
        (1.0, "free", "b", 0),
        (2.0, "free", "a", 0),
        (3.0, "alloc", "c", 1000),
    ]
    result = simulate_pool(events, chunk_bytes=8192)
    assert result.offsets["b"] == (0, 1536)
    assert result.offsets["c"] == (0, 1536)
    swapped = events[:4] + [(1.0, "free", "a", 0), (2.0, "free", "b", 0), events[6]]
    assert simulate_pool(swapped, chunk_bytes=8192).offsets["c"] == (0, 0)


def test_no_task_kinds_match_the_way_mindspore_and_onnx_spell_them() -> None:
    """a -> Reshape -> ExpandDims -> Squeeze -> Flatten -> FlattenGrad -> Reformat -> z.

    Worked by hand: the six no-task ops (MindSpore's spelling) launch nothing and alias ``a``'s
    output, so the only planned tensors are ``a:out`` and ``z:out``; ``a:out`` is read by ``z``
    alone (the alias chain does not touch memory), and the no-task pass drops all six.
    """
    from workbench.memory.lifetimes import graph_usage
    from workbench.passes.no_task import drop_no_task_ops, no_task_ops

    kinds = ["Reshape", "ExpandDims", "Squeeze", "Flatten", "FlattenGrad", "Reformat"]
    ids = ["a", *(f"n{i}" for i in range(len(kinds))), "z"]
    ops = {"a": "Relu", "z": "RELU", **{f"n{i}": k for i, k in enumerate(kinds)}}
    g = wb.Graph.from_edges(list(zip(ids, ids[1:])), ops=ops)
    assert [g.op(i).kind for i in ids] == ["relu", "reshape", "expand_dims", "squeeze",
                                          "flatten", "flatten_grad", "reformat", "relu"]
    planned, consumers, roots, _ = graph_usage(g)
    assert sorted(planned) == ["a:out", "z:out"]
    assert consumers["a:out"] == ["z"]
    assert set(roots.values()) == {"a:out"}
    assert no_task_ops(g) == ids[1:-1]
    assert [op.id for op in drop_no_task_ops(g).ops] == ["a", "z"]
    assert g.op("a") == wb.Graph.from_edges([("a", "z")], ops={"a": "relu", "z": "relu"}).op("a")


def test_every_kind_table_uses_known_canonical_kinds() -> None:
    """A kind table keyed by a spelling :mod:`workbench.ops` does not know would miss every
    op whose kind was canonicalised: each table's keys must be known kinds."""
    import importlib
    import pkgutil

    from workbench.ops import KNOWN_KINDS

    tables = ("_RULES", "KERNELS", "LOWERINGS", "REFERENCES", "UNARY", "BINARY",
              "UNARY_CODES", "BINARY_CODES", "ACTIVATION_FLOPS", "UNIT_HEADS", "UNIT_TAILS",
              "AFFINE_TAILS")
    unknown = {}
    for info in pkgutil.walk_packages(wb.__path__, "workbench."):
        if info.name.startswith("workbench.ui"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (name.endswith("KINDS") or name in tables) and isinstance(
                    value, (frozenset, set, dict, tuple)):
                bad = {k for k in value if isinstance(k, str) and k not in KNOWN_KINDS}
                if bad:
                    unknown[f"{info.name}.{name}"] = sorted(bad)
    assert not unknown
    assert len(KNOWN_KINDS) > 90


def test_somas_lifelong_tensors_get_their_own_band_above_the_solved_region() -> None:
    """a (100 B, steps 0-1), b (40 B, 2-3), L (60 B, step 3), alignment 1.

    Worked by hand: without classes, size order a, L, b: a@0, L@0 (no overlap with a), b@60 (it
    meets L at step 3): arena 100.  With L lifelong, a and b are solved alone (both @0, top 100)
    and L goes right above: L@100, arena 160; the bound is peak(a, b) 100 + L's 60 = 160.
    """
    from workbench.memory.somas import plan_somas

    records = [(100, 0, 1, "a"), (40, 2, 3, "b"), (60, 3, 3, "L")]
    plain = plan_somas(records, alignment=1)
    assert plain.offsets == (0, 60, 0) and plain.arena_bytes == 100
    plan = plan_somas(records, alignment=1, lifelong=["L"])
    assert plan.offsets == (0, 0, 100)
    assert (plan.arena_bytes, plan.lower_bound) == (160, 160)
    assert plan.notes["lifelong"] == ["L"] and plan.notes["solved_top"] == 100


def test_somas_contiguous_lists_are_placed_back_to_back_in_list_order() -> None:
    """x (30 B), y (20 B), z (50 B), all live at steps 0-2, alignment 1, list [y, x].

    Worked by hand: the list is one 50-byte block; blocks in order of their first tensor (x is
    index 0), size ties keep that order: block@0, z@50; inside the block y@0, x@20.  Without the
    list, size order z@0, x@50, y@80.
    """
    from workbench.memory.somas import plan_somas

    records = [(30, 0, 2, "x"), (20, 0, 2, "y"), (50, 0, 2, "z")]
    assert plan_somas(records, alignment=1).offsets == (50, 80, 0)
    plan = plan_somas(records, alignment=1, contiguous=[["y", "x"]])
    assert plan.offsets == (20, 0, 50) and plan.arena_bytes == 100
    assert plan.notes["contiguous"] == [["y", "x"]]


def test_somas_lays_the_inputs_of_a_communication_op_out_contiguously() -> None:
    """Three producers feed one allreduce: its inputs p0:out, p1:out, p2:out become one
    contiguous list in argument order (each 4 KiB, so offsets o, o+4096, o+8192)."""
    g = wb.Graph.from_edges([("p0", "ar"), ("p1", "ar"), ("p2", "ar")],
                            ops={"p0": "relu", "p1": "relu", "p2": "relu", "ar": "AllReduce"},
                            sizes={"p0": 4096, "p1": 4096, "p2": 4096})
    plan = wb.plan_memory(wb.schedule(g, "serial"), "somas")
    inputs = list(g.op("ar").inputs)
    assert plan.notes["contiguous"] == [inputs]
    names = [r.name for r in plan.records]
    starts = [plan.offsets[names.index(t)] for t in inputs]
    assert starts == [starts[0], starts[0] + 4096, starts[0] + 8192]
    wb.memory.check_no_overlap(plan)


def test_somas_class_options_are_checked() -> None:
    import pytest

    from workbench.errors import OptionError
    from workbench.memory.somas import plan_somas

    records = [(30, 0, 2, "x"), (20, 0, 2, "y")]
    with pytest.raises(OptionError, match="did you mean 'x'"):
        plan_somas(records, lifelong=["xx"])
    with pytest.raises(OptionError, match="already in list 0"):
        plan_somas(records, contiguous=[["x", "y"], ["y"]])
    with pytest.raises(OptionError, match="is lifelong"):
        plan_somas(records, lifelong=["x"], contiguous=[["x", "y"]])
