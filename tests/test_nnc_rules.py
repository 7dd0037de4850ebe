"""NNC's stream-cap rules, pinned on hand-built graphs (issue 36: mutants that survived).

The rules (seed 000/002, ``shared/notes/nnc_mindspore.md`` §A.2 step 4 and §A.5):

* a) *recycle* the first stream, in creation order, whose tail is an ancestor of the node,
  preferring one that already ran the node's op type;
* b) only when that fails **and** the number of streams has reached ``max_streams``
  (``#streams >= M``): join a stream whose tail is not a descendant (here: already visited),
  again preferring a matching op type, else the *first* such stream, and add the artificial
  ordering "tail before node" -- which later ancestry questions see (a node after it knows
  everything the tail knew);
* c) otherwise open a new stream (folded onto ``M`` physical streams at the end);
* d) follow the chain -- skipped only when ``M == 1`` -- taking the highest-ranked unassigned
  reduced successor, ties to one whose op type the stream already ran, then the first listed.

How each expectation is derived: NNC's visit order is Kahn waves with the single-child shortcut
(sources in program order; a node with exactly one successor that becomes ready is visited at
once).  Each docstring walks the visit order node by node through a) to d).
"""

from __future__ import annotations

from workbench.schedulers.nnc import schedule_nnc
from workbench.values.graph import Graph


def test_over_the_cap_without_a_matching_op_type_joins_the_first_stream() -> None:
    """Ops ``n0..n3`` of types B, B, B, A; one edge ``n0 -> n1``; ``max_streams=2``.

    Visit order: sources ``n0, n2, n3``, ``n0``'s single child ``n1`` at once: n0, n1, n2, n3.
    n0 opens stream 0 {B} and its chain takes n1 (tail n1).  n2 has no ancestor: nothing to
    recycle, 1 stream < 2, so it opens stream 1 {B}.  n3 (type A): nothing to recycle and
    2 streams >= 2, so b): both tails (n1, n2) are visited, neither stream ran A, so the *first*
    candidate, stream 0, with the ordering n1 before n3.  (The last candidate would be
    stream 1.)"""
    g = Graph.from_edges([("n0", "n1")], {"n0": "B", "n1": "B", "n2": "B", "n3": "A"})
    s = schedule_nnc(g, max_streams=2)
    assert s.notes["visit_order"] == ["n0", "n1", "n2", "n3"]
    assert s.streams == {0: ("n0", "n1", "n3"), 1: ("n2",)}
    assert s.notes["artificial_orderings"] == [("n1", "n3")]


def test_over_the_cap_prefers_the_stream_that_ran_the_op_type() -> None:
    """The previous graph with n2 and n3 of type A: at n3 the candidates are stream 0 {B} and
    stream 1 {A}; stream 1 already ran A, so n3 joins it (ordering n2 before n3)."""
    g = Graph.from_edges([("n0", "n1")], {"n0": "B", "n1": "B", "n2": "A", "n3": "A"})
    s = schedule_nnc(g, max_streams=2)
    assert s.streams == {0: ("n0", "n1"), 1: ("n2", "n3")}
    assert s.notes["artificial_orderings"] == [("n2", "n3")]


def test_the_cap_rule_applies_as_soon_as_the_stream_count_reaches_the_cap() -> None:
    """Ops ``n0..n3`` of types B, A, A, B; one edge ``n2 -> n3``; ``max_streams=2``.

    Visit order: n0, n1, n2, then n2's single child n3.  n0 opens stream 0 {B}; n1 has no
    ancestor and 1 < 2 streams, so it opens stream 1 {A}.  n2 (type A): nothing to recycle, and
    the count *is* the cap (2 >= 2), so b) applies: stream 1 ran A, n2 joins it (ordering n1
    before n2) and its chain takes n3.  Were the cap reached one stream late, n2 would open a
    third logical stream, and folding puts that stream on the physical stream whose last op is
    oldest -- stream 0 -- giving ``{0: (n0, n2, n3), 1: (n1,)}`` and no artificial ordering."""
    g = Graph.from_edges([("n2", "n3")], {"n0": "B", "n1": "A", "n2": "A", "n3": "B"})
    s = schedule_nnc(g, max_streams=2)
    assert s.notes["visit_order"] == ["n0", "n1", "n2", "n3"]
    assert s.streams == {0: ("n0",), 1: ("n1", "n2", "n3")}
    assert s.notes["artificial_orderings"] == [("n1", "n2")]
    assert "folded_streams" not in s.notes


def test_chains_are_followed_under_any_cap_but_one() -> None:
    """Ops n0 (A), n1 (B), n2 (A); edges ``n0 -> n1``, ``n0 -> n2``.

    Visit order: n0, then the wave n1, n2.  Ranks: n0 1, n1 and n2 0.  n0 opens stream 0 {A};
    d) its chain looks at n1 and n2 (equal rank), prefers n2, whose type A the stream already
    ran: stream 0 = n0, n2 (tail n2).  n1: stream 0's tail n2 is not its ancestor, 1 < 2
    streams, so it opens stream 1 and waits on n0.  The same with no cap, so a cap of 2 must not
    switch chain following off.  Without chains n0's tail would be n0 itself, n1 would recycle
    stream 0 and n2 go to stream 1.  With cap 1 chains are off (§A.5.5): every op on stream 0,
    n2 after n1 by an artificial ordering."""
    g = Graph.from_edges([("n0", "n1"), ("n0", "n2")], {"n0": "A", "n1": "B", "n2": "A"})
    for cap in (2, None):
        s = schedule_nnc(g, max_streams=cap)
        assert s.notes["chains"] == [["n0", "n2"], ["n1"]], cap
        assert s.streams == {0: ("n0", "n2"), 1: ("n1",)}, cap
        assert s.syncs == (("n0", "n1"),), cap
    one = schedule_nnc(g, max_streams=1)
    assert one.notes["chains"] == [["n0"], ["n1"], ["n2"]]
    assert one.streams == {0: ("n0", "n1", "n2")}
    assert one.notes["artificial_orderings"] == [("n1", "n2")]


def test_an_artificial_ordering_carries_the_tails_ancestry() -> None:
    """Ops n0..n5, all one type; edges ``n0 -> n5``, ``n1 -> n5``, ``n2 -> n3``, ``n2 -> n4``;
    ``max_streams=2``.

    Visit order: sources n0, n1, n2; n1's single child n5 becomes ready at n1 and is visited at
    once; n2's two children form the next wave: n0, n1, n5, n2, n3, n4.
    n0 opens stream 0 and its chain takes n5 (tail n5).  n1 opens stream 1 (tail n1).  n2: no
    ancestor, 2 streams: b), both tails visited and both streams ran the type, so the first,
    stream 0, ordering n5 before n2; n2's chain takes n3 (first of two equal sinks).  n4: stream
    0's tail n3 is not its ancestor, but stream 1's tail n1 is, *through the artificial
    ordering* (n1 -> n5 -> n2 -> n4), so a) recycles stream 1: ``{0: n0 n5 n2 n3, 1: n1 n4}``
    with a wait n2 -> n4.  A clock for n2 built without the tail n5 forgets n1, and n4 would be
    forced onto stream 0 (ordering n3 before n4)."""
    g = Graph.from_edges([("n0", "n5"), ("n1", "n5"), ("n2", "n3"), ("n2", "n4")],
                         [f"n{i}" for i in range(6)])
    s = schedule_nnc(g, max_streams=2)
    assert s.notes["visit_order"] == ["n0", "n1", "n5", "n2", "n3", "n4"]
    assert s.streams == {0: ("n0", "n5", "n2", "n3"), 1: ("n1", "n4")}
    assert s.syncs == (("n1", "n5"), ("n2", "n4"))
    assert s.notes["artificial_orderings"] == [("n5", "n2")]


def test_a_chain_takes_the_highest_ranked_successor_before_the_op_type() -> None:
    """Ops n0, n1 (A), n2, n3 (B); edges ``n0 -> n1``, ``n0 -> n2``, ``n2 -> n3``.

    Ranks: n0 2, n2 1, n1 and n3 0.  n0 opens stream 0 {A}; its chain compares n1 (rank 0, type
    A which the stream ran) and n2 (rank 1): rank comes first, so n2, then n3: stream 0 =
    n0, n2, n3.  n1 then opens stream 1 and waits on n0.  Preferring the op type (or the
    first listed) would chain n1 instead."""
    g = Graph.from_edges([("n0", "n1"), ("n0", "n2"), ("n2", "n3")],
                         {"n0": "A", "n1": "A", "n2": "B", "n3": "B"})
    s = schedule_nnc(g, max_streams=2)
    assert s.notes["rank"] == {"n0": 2, "n1": 0, "n2": 1, "n3": 0}
    assert s.streams == {0: ("n0", "n2", "n3"), 1: ("n1",)}
    assert s.syncs == (("n0", "n1"),)


def test_the_op_types_of_a_whole_chain_count_for_the_stream() -> None:
    """Ops n0 (B), n1, n2, n3 (A); one edge ``n0 -> n3``; ``max_streams=2``.

    Visit order: n0, its single child n3 at once, then n1, n2.  n0 opens stream 0 and its
    chain takes n3, so stream 0 has run B *and* A.  n1 opens stream 1 {A}.  n2 (A): over the
    cap, both tails (n3, n1) visited, both streams ran A: the first, stream 0.  Were only the
    chain's first op type recorded, stream 0 would be {B} and n2 would go to stream 1."""
    g = Graph.from_edges([("n0", "n3")], {"n0": "B", "n1": "A", "n2": "A", "n3": "A"})
    s = schedule_nnc(g, max_streams=2)
    assert s.notes["visit_order"] == ["n0", "n3", "n1", "n2"]
    assert s.streams == {0: ("n0", "n3", "n2"), 1: ("n1",)}
    assert s.notes["artificial_orderings"] == [("n3", "n2")]


def test_one_signal_is_waited_on_by_every_other_stream_that_needs_it() -> None:
    """``n0 -> n1, n2, n3`` (one type): n0's chain takes n1 (stream 0); n2 and n3 have n0 as
    ancestor but stream 0's tail n1 is not, so each opens a stream (1, 2).  n0 records one
    signal; *both* other streams wait on it -- the duplicate elimination is per waiting stream
    (§A.2 step 5), and skipping n3's wait would let n3 read n0's output early."""
    g = Graph.from_edges([("n0", "n1"), ("n0", "n2"), ("n0", "n3")])
    for cap in (3, None):
        s = schedule_nnc(g, max_streams=cap)
        assert s.streams == {0: ("n0", "n1"), 1: ("n2",), 2: ("n3",)}
        assert s.syncs == (("n0", "n2"), ("n0", "n3"))
        assert s.n_events == 1
        s.validate()
