"""RAF's wavefront tie-breaks, pinned on hand-built graphs (issue 36: mutants that survived).

Seed 001 / ``shared/notes/raf_nimble.md`` §2: the first ready set is the input-free nodes in RAF's
*post-DFS order* (from the sinks in program order, inputs in argument order, inputs before
consumers), and chain ``j`` of a wave runs on stream ``j`` -- with ``max_streams``, on stream
``j % max_streams`` (the chains wrap round the streams, they do not pile onto the last one).
Each expected assignment below is derived by hand in the test's docstring.
"""

from __future__ import annotations

import pytest

from workbench.schedulers.wavefront import schedule_wavefront
from workbench.values.graph import Graph


def test_first_ready_set_follows_post_dfs_order_not_program_order() -> None:
    """Ops in program order ``a, b, x, y``; edges ``a -> y``, ``b -> x``.

    Post-DFS from the sinks in program order: sink ``x`` first (its input ``b``, then ``x``),
    then sink ``y`` (``a``, then ``y``): ``b, x, a, y``.  So the ready set is ``[b, a]``, not the
    program order ``[a, b]``: chain ``b -> x`` is chain 0 (stream 0), ``a -> y`` chain 1.
    A ready list left in program order swaps the two streams."""
    g = Graph.from_edges([("a", "y"), ("b", "x")], ["a", "b", "x", "y"])
    s = schedule_wavefront(g)
    assert s.notes["waves"] == [[["b", "x"], ["a", "y"]]]
    assert s.streams == {0: ("b", "x"), 1: ("a", "y")}
    assert s.issue_order == ("b", "x", "a", "y")


def test_post_dfs_visits_inputs_in_argument_order() -> None:
    """Ops ``a, b, c``; ``c`` reads ``b``'s output first, then ``a``'s (edges written
    ``b -> c``, ``a -> c``).  Post-DFS from ``c`` visits its inputs in argument order: ``b, a,
    c``, so the first wave is ``[[b], [a]]`` (``b`` on stream 0), then a barrier, then ``c``
    (chain 0 of the second wave, stream 0)."""
    g = Graph.from_edges([("b", "c"), ("a", "c")], ["a", "b", "c"])
    s = schedule_wavefront(g)
    assert s.notes["waves"] == [[["b"], ["a"]], [["c"]]]
    assert s.streams == {0: ("b", "c"), 1: ("a",)}
    assert s.barriers == (2,)


@pytest.mark.parametrize(("cap", "want"), [
    (2, [0, 1, 0, 1, 0]),
    (3, [0, 1, 2, 0, 1]),
])
def test_chains_over_the_cap_wrap_round_the_streams(cap: int, want: list[int]) -> None:
    """Fan-out ``x -> a0..a4 -> c``: the second wave has five one-op chains ``a0..a4`` (chain
    ``j`` = ``a{j}``, since ``x`` has five consumers no chain grows).  Chain ``j`` goes to
    stream ``j % cap``: with cap 2 that is 0, 1, 0, 1, 0; with cap 3, 0, 1, 2, 0, 1.  Clamping
    to the last stream would give 0, 1, 1, 1, 1 and 0, 1, 2, 2, 2.  ``x`` and ``c`` (chain 0 of
    their waves) run on stream 0, which is also the first stream used, so the ids are not
    renumbered."""
    mids = [f"a{j}" for j in range(5)]
    g = Graph.from_edges([("x", m) for m in mids] + [(m, "c") for m in mids],
                         ["x", *mids, "c"])
    s = schedule_wavefront(g, max_streams=cap)
    assert s.notes["waves"] == [[["x"]], [[m] for m in mids], [["c"]]]
    assert [s.stream_of(m) for m in mids] == want
    assert s.stream_of("x") == s.stream_of("c") == 0
    assert s.n_streams == cap
    assert s.barriers == (1, 6)
