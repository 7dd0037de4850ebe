"""Every rule of ``Schedule.validate()`` and of the happens-before clocks, broken one at a time
(issue 36).

Each test hand-builds a schedule that breaks exactly one rule -- at the first, a middle and the
last position of a stream where the rule has positions -- and expects the validator's one-line
:class:`wb.ScheduleError` (a fragment of its message: a different rule firing instead, or a
``KeyError`` from deeper down, fails the test).  The acceptance tests pin the boundaries (a
barrier at 0 and at ``len(issue_order)``, a sync from the producer itself, a path through stream
order).  :func:`insert_syncs`, :func:`fold_streams`, :func:`clock_matrix` and the compact clocks'
column sharing are pinned by exact results on small examples where a plausible change differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pytest

import workbench as wb
from workbench.values.clocks import SPARSE_WIDTH, clock_matrix, clocks_before
from workbench.values.schedule import Schedule, fold_streams, insert_syncs

A = [f"a{i}" for i in range(4)]
B = [f"b{i}" for i in range(4)]
#: Two chains a0..a3 and b0..b3 with rungs a_i -> b_i; program order a0..a3, b0..b3.
LADDER = wb.Graph.from_edges(list(zip(A, A[1:])) + list(zip(B, B[1:])) + list(zip(A, B)),
                             ops=A + B, name="ladder")
#: The ladder's issue order: a0 b0 a1 b1 a2 b2 a3 b3 (b_i right after its producer a_i).
INTERLEAVED = [x for pair in zip(A, B) for x in pair]
RUNGS = [(a, b) for a, b in zip(A, B)]
C = [f"c{i}" for i in range(4)]
CHAIN = wb.Graph.from_edges(list(zip(C, C[1:])), ops=C, name="chain")

#: (name, position) of the first, a middle and the last op of a 4-op stream.
POSITIONS = [pytest.param(0, id="first"), pytest.param(2, id="middle"),
             pytest.param(3, id="last")]
#: Adjacent pairs (i, i + 1) at the start, in the middle and at the end of a 4-op stream.
PAIRS = [pytest.param(0, id="first"), pytest.param(1, id="middle"), pytest.param(2, id="last")]


def ladder(streams: dict[int, Sequence[str]] | None = None, syncs: Iterable = RUNGS,
           order: Sequence[str] = INTERLEAVED, barriers: Iterable[int] = (),
           graph: wb.Graph = LADDER) -> Schedule:
    """A hand-built schedule (defaults: the valid ladder, a's on stream 0, b's on stream 1,
    one sync per rung)."""
    streams = {0: A, 1: B} if streams is None else streams
    return Schedule(graph, "hand", {k: tuple(v) for k, v in streams.items()}, tuple(syncs),
                    tuple(order), tuple(barriers))


def replaced(seq: Sequence[str], old: str, new: str) -> list[str]:
    return [new if x == old else x for x in seq]


def without(seq: Sequence[str], op: str) -> list[str]:
    return [x for x in seq if x != op]


def rejects(schedule: Schedule, fragment: str) -> None:
    with pytest.raises(wb.ScheduleError) as err:
        schedule.validate()
    assert fragment in str(err.value), str(err.value)


# ------------------------------------------------------------------------------ the valid base
def test_the_base_schedules_are_valid() -> None:
    """The schedules every test below breaks are valid as built: the ladder with one sync per
    rung (each sync records at the producer itself, so the consumer's clock entry *equals* the
    producer's issue index: a ``<`` turned ``<=`` in the cross-stream check rejects it), the
    ladder ordered by one barrier before every consumer, and the chain on one stream."""
    assert ladder().validate().n_syncs == 4
    ladder(syncs=(), barriers=(1, 3, 5, 7)).validate()
    ladder({0: C}, (), C, graph=CHAIN).validate()
    assert insert_syncs(LADDER, {**dict.fromkeys(A, 0), **dict.fromkeys(B, 1)},
                        INTERLEAVED) == RUNGS


# ------------------------------------------------------------------ launched ops (every op once)
@pytest.mark.parametrize("pos", POSITIONS)
def test_an_op_that_is_not_in_the_graph(pos: int) -> None:
    """A stream that launches an op the graph does not have names it (not "never launched",
    which the op it replaced also is)."""
    rejects(ladder({0: replaced(A, A[pos], "zz"), 1: B}, order=replaced(INTERLEAVED, A[pos], "zz")),
            "stream 0 launches 'zz', which is not an op of graph 'ladder'")


@pytest.mark.parametrize("pos", POSITIONS)
def test_an_op_launched_twice_on_one_stream(pos: int) -> None:
    """A stream that launches an op twice in a row (issue order unchanged, so no deadlock check
    catches the repeat): rejected as launched twice on that one stream."""
    stream = A[:pos + 1] + A[pos:]
    rejects(ladder({0: stream, 1: B}), f"op '{A[pos]}' is launched twice (streams 0 and 0)")


@pytest.mark.parametrize("pos", POSITIONS)
def test_an_op_launched_on_two_streams(pos: int) -> None:
    """An op launched on its stream and, at the same position, on another one."""
    rejects(ladder({0: A, 1: B[:pos] + [A[pos]] + B[pos:]}),
            f"op '{A[pos]}' is launched twice (streams 0 and 1)")


@pytest.mark.parametrize("pos", POSITIONS)
def test_an_op_never_launched(pos: int) -> None:
    """An op dropped from its stream, the issue order and the syncs: "never launched", naming
    it.  At the first position it is the graph's first op (a check that skips ``op_ids[0]``
    lets the schedule reach the clocks, which fail with a KeyError)."""
    op = A[pos]
    rejects(ladder({0: without(A, op), 1: B}, [x for x in RUNGS if op not in x],
                   without(INTERLEAVED, op)),
            f"op '{op}' is never launched (1 ops missing)")


def test_the_first_missing_op_in_program_order_is_named_with_the_count() -> None:
    """Two ops missing: the graph's first op is named, with the count."""
    rejects(ladder({0: A[1:], 1: B[:3]}, RUNGS[1:3], without(without(INTERLEAVED, "a0"), "b3")),
            "op 'a0' is never launched (2 ops missing)")


# ---------------------------------------------------------------------------------- issue order
@pytest.mark.parametrize("pos", POSITIONS)
def test_an_op_issued_twice(pos: int) -> None:
    """The issue order with an op repeated next to itself (same set of ops, one more entry):
    not a permutation.  Without the length check the repeat is accepted."""
    i = INTERLEAVED.index(A[pos])
    rejects(ladder(order=INTERLEAVED[:i + 1] + INTERLEAVED[i:]),
            "issue_order is not a permutation of the scheduled ops")


@pytest.mark.parametrize("pos", POSITIONS)
def test_an_issue_order_that_misses_or_replaces_an_op(pos: int) -> None:
    """The issue order without an op, with it replaced by another launched op (same length),
    or with it replaced by an op no stream launches."""
    fragment = "issue_order is not a permutation of the scheduled ops"
    op = A[pos]
    rejects(ladder(order=without(INTERLEAVED, op)), fragment)
    rejects(ladder(order=replaced(INTERLEAVED, op, B[(pos + 1) % 4])), fragment)
    rejects(ladder(order=replaced(INTERLEAVED, op, "zz")), fragment)


@pytest.mark.parametrize("i", PAIRS)
def test_a_stream_order_against_the_issue_order_is_a_deadlock(i: int) -> None:
    """Two adjacent ops swapped on their stream but not in the issue order: the stream waits for
    an op the host issues later (deadlock), at the stream's first, a middle and its last pair."""
    stream = list(A)
    stream[i], stream[i + 1] = stream[i + 1], stream[i]
    rejects(ladder({0: stream, 1: B}),
            f"stream 0 launches '{A[i + 1]}' before '{A[i]}', but the host issues '{A[i]}' "
            f"first (deadlock)")


# ---------------------------------------------------------------------------------------- syncs
@pytest.mark.parametrize("pos", POSITIONS)
def test_a_sync_naming_an_op_that_is_not_launched(pos: int) -> None:
    """A sync whose source, or whose waiter, no stream launches."""
    rejects(ladder(syncs=[*RUNGS, ("zz", A[pos])]),
            f"sync 'zz' -> '{A[pos]}' names 'zz', which is not launched")
    rejects(ladder(syncs=[*RUNGS, (B[pos], "zz")]),
            f"sync '{B[pos]}' -> 'zz' names 'zz', which is not launched")


@pytest.mark.parametrize("pos", POSITIONS)
def test_a_sync_from_an_op_to_itself(pos: int) -> None:
    """A sync from an op to itself waits on its own event, which is recorded after it (not
    "issued at the same index, so fine": without the ``>=`` the clocks fail with a KeyError)."""
    op = A[pos]
    rejects(ladder(syncs=[*RUNGS, (op, op)]),
            f"sync '{op}' -> '{op}': '{op}' waits on an event recorded later by '{op}'")


@pytest.mark.parametrize("pos", POSITIONS)
def test_a_sync_waiting_on_an_event_recorded_later(pos: int) -> None:
    """A rung's sync reversed (the producer waits on its consumer, issued after it), and a sync
    backwards within one stream (the last op's event waited on by an earlier op)."""
    rejects(ladder(syncs=[*RUNGS[:pos], (B[pos], A[pos]), *RUNGS[pos + 1:]]),
            f"sync '{B[pos]}' -> '{A[pos]}': '{A[pos]}' waits on an event recorded later")
    src, dst = (A[3], A[pos]) if pos < 3 else (A[3], A[0])
    rejects(ladder(syncs=[*RUNGS, (src, dst)]),
            f"sync '{src}' -> '{dst}': '{dst}' waits on an event recorded later")


# ------------------------------------------------------------------------------------- barriers
@pytest.mark.parametrize("position", [-1, -8, 9, 100])
def test_a_barrier_outside_the_issue_order(position: int) -> None:
    """Barrier positions below 0 or past ``len(issue_order)`` (8) are rejected, negative ones
    included (which no clock would ever reach, so nothing else notices them), whether the bad
    one is the only, the first or the last barrier listed."""
    fragment = f"barrier position {position} is outside the issue order"
    for barriers in ((position,), (position, 3), (3, 5, position)):
        rejects(ladder(barriers=barriers), fragment)


def test_barriers_at_both_ends_of_the_issue_order_are_accepted() -> None:
    """Position 0 (before the first op) and ``len(issue_order)`` (after the last) are inside."""
    ladder(barriers=(0, 8)).validate()
    ladder(barriers=(0, 1, 3, 5, 7, 8), syncs=()).validate()


@pytest.mark.parametrize("pos", POSITIONS)
def test_a_missing_or_misplaced_barrier_leaves_a_rung_unordered(pos: int) -> None:
    """The ladder ordered by barriers only (one just before each consumer ``b_i``, at issue index
    ``2i + 1``): dropping the one before ``b_pos``, moving it one later (after ``b_pos``) or one
    earlier (before ``a_pos``) leaves ``a_pos -> b_pos`` unordered."""
    bars = [1, 3, 5, 7]
    fragment = (f"dependency '{A[pos]}' -> '{B[pos]}' is not ordered: '{A[pos]}' on stream 0, "
                f"'{B[pos]}' on stream 1, and no sync or barrier orders them")
    for moved in (None, bars[pos] + 1, bars[pos] - 1):
        barriers = [b for b in bars if b != bars[pos]] + ([] if moved is None else [moved])
        rejects(ladder(syncs=(), barriers=barriers), fragment)


def test_a_barrier_orders_ops_of_streams_that_already_ended_or_start_later() -> None:
    """A barrier joins streams whose last op is already done (x alone on stream 1) into every
    later op, on streams opened after it too (y, z); without the barrier the edges race.  Pins the
    clocks' ``closed``/``start`` bookkeeping at a barrier."""
    g = wb.Graph.from_edges([("x", "y"), ("w", "z"), ("x", "z")], ops=["w", "x", "y", "z"])
    ok = Schedule(g, "hand", {0: ("w",), 1: ("x",), 2: ("y",), 3: ("z",)}, (),
                  ("w", "x", "y", "z"), (2,))
    ok.validate()
    rejects(Schedule(g, "hand", ok.streams, (), ok.issue_order, ()), "'x' -> 'y' is not ordered")
    rejects(Schedule(g, "hand", ok.streams, (), ok.issue_order, (3,)),
            "'x' -> 'y' is not ordered")


def test_two_barriers_keep_what_the_first_one_joined() -> None:
    """After two barriers an op still knows a stream that ended before the first one."""
    g = wb.Graph.from_edges([("x", "z")], ops=["x", "w", "v", "z"])
    Schedule(g, "hand", {0: ("x",), 1: ("w",), 2: ("v",), 3: ("z",)}, (), ("x", "w", "v", "z"),
             (1, 3)).validate()


# --------------------------------------------------------------------------------- dependencies
@pytest.mark.parametrize("i", PAIRS)
def test_a_consumer_launched_right_before_its_producer_on_one_stream(i: int) -> None:
    """A chain on one stream with two adjacent ops swapped in the stream *and* the issue order (no
    deadlock): the consumer is launched one position before its producer.  Pins the same-stream
    comparison exactly (``position[p] > position[k] + 1`` lets it through)."""
    order = list(C)
    order[i], order[i + 1] = order[i + 1], order[i]
    rejects(ladder({0: order}, (), order, graph=CHAIN),
            f"dependency '{C[i]}' -> '{C[i + 1]}' is not ordered: both on stream 0 but "
            f"'{C[i + 1]}' is launched first")


def test_a_consumer_launched_three_positions_before_its_producer() -> None:
    """The chain's last op launched first: ``c2 -> c3`` reversed by three positions."""
    order = [C[3], *C[:3]]
    rejects(ladder({0: order}, (), order, graph=CHAIN),
            "dependency 'c2' -> 'c3' is not ordered: both on stream 0 but 'c3' is launched first")


@pytest.mark.parametrize("pos", POSITIONS)
def test_a_rung_without_its_sync(pos: int) -> None:
    """The ladder with one rung's sync dropped: that rung is named."""
    rejects(ladder(syncs=[x for x in RUNGS if x != RUNGS[pos]]),
            f"dependency '{A[pos]}' -> '{B[pos]}' is not ordered: '{A[pos]}' on stream 0, "
            f"'{B[pos]}' on stream 1, and no sync or barrier orders them")


@pytest.mark.parametrize("pos", [1, 2, 3])
def test_a_sync_recorded_one_op_too_early(pos: int) -> None:
    """A rung's sync recorded after the op just *before* the producer on its stream: the clock
    entry is one issue slot short of the producer (the cross-stream check's ``<``)."""
    syncs = [*RUNGS[:pos], (A[pos - 1], B[pos]), *RUNGS[pos + 1:]]
    rejects(ladder(syncs=syncs), f"dependency '{A[pos]}' -> '{B[pos]}' is not ordered")


@pytest.mark.parametrize("j", POSITIONS)
def test_one_sync_orders_every_earlier_rung_through_stream_order(j: int) -> None:
    """All a's issued before all b's with a single sync ``a3 -> b_j``: the event after ``a3``
    covers ``a0..a3`` (stream order), and ``b_j`` passes it on to ``b_j..b3``, so the rungs
    ``i >= j`` are ordered and the first rung before ``b_j`` is not; from ``a2`` the sync leaves
    ``a3 -> b3`` (the last rung) unordered."""
    order = A + B
    if j == 0:
        ladder(syncs=[(A[3], B[0])], order=order).validate()
    else:
        rejects(ladder(syncs=[(A[3], B[j])], order=order),
                "dependency 'a0' -> 'b0' is not ordered")
    rejects(ladder(syncs=[(A[2], B[j])], order=order), "dependency 'a3' -> 'b3' is not ordered"
            if j == 0 else "dependency 'a0' -> 'b0' is not ordered")


# ------------------------------------------------------------------------------- insert_syncs
def test_insert_syncs_checks_the_latest_issued_predecessor_first() -> None:
    """k (stream 2) reads p1 (stream 0) and p2 (stream 1), and p2 already waited on p1: the sync
    from p2, checked first, implies p1, so the transitive reduction is two syncs.  Earliest-first
    adds ``p1 -> k`` too."""
    g = wb.Graph.from_edges([("p1", "p2"), ("p1", "k"), ("p2", "k")])
    assert insert_syncs(g, {"p1": 0, "p2": 1, "k": 2}, ["p1", "p2", "k"]) == [
        ("p1", "p2"), ("p2", "k")]


def test_insert_syncs_counts_an_event_already_known_at_its_exact_index() -> None:
    """y (stream 1) follows x, which waited on a: y's clock holds a's issue index exactly, so
    ``a -> y`` needs no sync (a strict ``knows`` adds a redundant one)."""
    g = wb.Graph.from_edges([("a", "x"), ("a", "y")])
    assert insert_syncs(g, {"a": 0, "x": 1, "y": 1}, ["a", "x", "y"]) == [("a", "x")]


def test_insert_syncs_keeps_given_syncs_and_adds_only_what_they_leave() -> None:
    """Given syncs come first; a same-stream one is dropped; what they imply is not added again;
    a given sync against the issue order is refused."""
    g = wb.Graph.from_edges([("p1", "p2"), ("p1", "k"), ("p2", "k")])
    stream_of = {"p1": 0, "p2": 1, "k": 2}
    order = ["p1", "p2", "k"]
    assert insert_syncs(g, stream_of, order, given=[("p1", "k")]) == [
        ("p1", "k"), ("p1", "p2"), ("p2", "k")]
    assert insert_syncs(g, stream_of, order, given=[("p2", "k"), ("p1", "p1")]) == [
        ("p2", "k"), ("p1", "p2")]
    with pytest.raises(wb.ScheduleError, match="'p2' -> 'p1': 'p1' is issued before 'p2'"):
        insert_syncs(g, stream_of, order, given=[("p2", "p1")])


def test_insert_syncs_uses_barriers_and_refuses_an_issue_order_against_the_graph() -> None:
    """A barrier before the consumer makes its sync unnecessary; a consumer issued before its
    cross-stream producer is refused."""
    assert insert_syncs(LADDER, {**dict.fromkeys(A, 0), **dict.fromkeys(B, 1)}, INTERLEAVED,
                        barriers=[5]) == [RUNGS[0], RUNGS[1], RUNGS[3]]
    with pytest.raises(wb.ScheduleError, match="launches 'b0' before its predecessor"):
        insert_syncs(LADDER, {**dict.fromkeys(A, 0), **dict.fromkeys(B, 1)}, ["b0", *A, *B[1:]])


# ------------------------------------------------------------------------------- fold_streams
def test_fold_streams_takes_the_physical_stream_idle_longest() -> None:
    """Five one-op logical streams on two physical ones: each new logical stream goes to the
    physical stream whose last op is oldest, alternating 0, 1, 0, 1, 0 (most-recent-first would
    put every stream after the second on physical stream 1)."""
    stream_of = {f"n{i}": i for i in range(5)}
    folded, mapping = fold_streams(stream_of, list(stream_of), 2)
    assert mapping == {0: 0, 1: 1, 2: 0, 3: 1, 4: 0}
    assert folded == {"n0": 0, "n1": 1, "n2": 0, "n3": 1, "n4": 0}


def test_fold_streams_measures_idleness_by_a_stream_s_last_op_not_its_first() -> None:
    """Logical stream 0 runs u0 and u3, logical 1 only u1: logical 2 (first op u2) joins physical
    1, idle since u1, not physical 0, which runs u3 later; logical 3 then joins physical 0 (last op
    u3 at index 3 is older than u4 at index 4).  At the cap or under it nothing folds."""
    stream_of = {"u0": 0, "u1": 1, "u2": 2, "u3": 0, "u4": 2, "u5": 3}
    order = ["u0", "u1", "u2", "u3", "u4", "u5"]
    folded, mapping = fold_streams(stream_of, order, 2)
    assert mapping == {0: 0, 1: 1, 2: 1, 3: 0}
    assert folded == {"u0": 0, "u1": 1, "u2": 1, "u3": 0, "u4": 1, "u5": 0}
    assert fold_streams(stream_of, order, 4) == (stream_of, {0: 0, 1: 1, 2: 2, 3: 3})
    assert fold_streams(stream_of, order, None)[1] == {0: 0, 1: 1, 2: 2, 3: 3}
    assert fold_streams(stream_of, order, 3)[1] == {0: 0, 1: 1, 2: 2, 3: 1}


# ----------------------------------------------------------------------------------- the clocks
def test_clock_matrix_joins_every_stream_at_a_barrier() -> None:
    """The full clocks of the ladder with the sync ``a1 -> b1`` and a barrier before b2 (issue
    index 5), one row per op in issue order, entries positions on the column's stream: after the
    barrier both streams know a2 (position 2) and b1 (position 1).  Without the barrier's join b2
    would read ``[1, 1]`` and a3 ``[2, -1]``."""
    s = ladder(syncs=[RUNGS[1]], barriers=[5])
    matrix, column = clock_matrix(s)
    assert column == {0: 0, 1: 1}
    assert matrix.dtype == np.int32
    assert matrix.tolist() == [[-1, -1], [-1, -1], [0, -1], [1, 0], [1, -1], [2, 1], [2, 1],
                               [2, 2]]
    before, col, position = clocks_before(s)
    assert before["b2"].tolist() == [2, 1] and col["b3"] == 1 and position["a3"] == 3


def test_clock_matrix_follows_syncs_transitively() -> None:
    """Every rung synced, no barrier: b_i knows a_i (through its sync) and b_{i-1} (stream
    order); the a's know nothing of stream 1."""
    matrix, _ = clock_matrix(ladder())
    assert matrix.tolist() == [[-1, -1], [0, -1], [0, -1], [1, 0], [1, -1], [2, 1], [2, -1],
                               [3, 2]]


def test_a_clock_column_is_not_reused_while_a_later_op_may_ask_about_it() -> None:
    """p ends its stream at issue 0, but k (issue 2) still asks about it; q opens a stream at
    issue 1.  Were p's column handed to q when p's stream ended, k's wait on q (q's issue index 1
    in that column) would claim p finished, and the race p -> k would pass."""
    g = wb.Graph.from_edges([("p", "k"), ("q", "k")], ops=["p", "q", "k"])
    streams = {0: ("p",), 1: ("q",), 2: ("k",)}
    rejects(Schedule(g, "hand", streams, (("q", "k"),), ("p", "q", "k")),
            "dependency 'p' -> 'k' is not ordered")
    Schedule(g, "hand", streams, (("q", "k"), ("p", "k")), ("p", "q", "k")).validate()


def test_a_clock_column_stays_until_the_last_op_that_asks_about_it() -> None:
    """p (stream 0) has two consumers: k1 (issue 1, synced) and k2 (issue 3, waiting only on q,
    which opens a stream at issue 2).  p's column must stay p's until k2 asked; freed after its
    first consumer, q would take it and k2's wait on q would claim p finished."""
    g = wb.Graph.from_edges([("p", "k1"), ("p", "k2"), ("q", "k2")], ops=["p", "k1", "q", "k2"])
    streams = {0: ("p",), 1: ("k1",), 2: ("q",), 3: ("k2",)}
    order = ("p", "k1", "q", "k2")
    rejects(Schedule(g, "hand", streams, (("p", "k1"), ("q", "k2")), order),
            "dependency 'p' -> 'k2' is not ordered")
    Schedule(g, "hand", streams, (("p", "k1"), ("q", "k2"), ("p", "k2")), order).validate()


def test_a_clock_column_is_reused_once_nothing_asks_about_it() -> None:
    """Short-lived streams one after another share columns (width 1) and the answers stay
    exact: a chain on four streams, each link synced, is valid (at most two columns: a stream's
    column is free once its successor asked); one sync dropped is caught."""
    from workbench.values.clocks import _columns, _last_queries

    g = wb.Graph.from_edges(list(zip(C, C[1:])), ops=C)
    s = Schedule(g, "hand", {i: (c,) for i, c in enumerate(C)}, tuple(zip(C, C[1:])), tuple(C))
    issue = {op: i for i, op in enumerate(C)}
    assert _columns(s.streams, issue, _last_queries(s))[1] <= 2
    s.validate()
    rejects(Schedule(g, "hand", s.streams, s.syncs[:2], tuple(C)), "'c2' -> 'c3' is not ordered")


@pytest.mark.parametrize("missing", [0, 150, SPARSE_WIDTH + 9])
def test_sparse_clocks_of_a_wide_fan_in(missing: int) -> None:
    """A fan-in of ``SPARSE_WIDTH + 10`` one-op streams into a sink on its own stream keeps every
    column alive at once, past :data:`SPARSE_WIDTH`, so the validator's clocks are sparse: with
    every sync the schedule is valid, without the first, a middle or the last source's sync it
    names that source (a sparse column it never heard of reads -1, not 0)."""
    n = SPARSE_WIDTH + 10
    srcs = [f"s{i}" for i in range(n)]
    g = wb.Graph.from_edges([(x, "sink") for x in srcs], ops=[*srcs, "sink"])
    streams = {i: (x,) for i, x in enumerate(srcs)} | {n: ("sink",)}
    order = (*srcs, "sink")
    syncs = tuple((x, "sink") for x in srcs)
    Schedule(g, "hand", streams, syncs, order).validate()
    rejects(Schedule(g, "hand", streams, syncs[:missing] + syncs[missing + 1:], order),
            f"dependency 's{missing}' -> 'sink' is not ordered")
