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
