"""Schedule validation, sync insertion and stream folding."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.schedule import Schedule, build_schedule, fold_streams, insert_syncs

DIAMOND = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])


def _sched(streams, syncs, order, barriers=()):
    return Schedule(DIAMOND, "hand", {k: tuple(v) for k, v in streams.items()}, tuple(syncs),
                    tuple(order), tuple(barriers))


def test_valid_hand_schedule() -> None:
    _sched({0: "abd", 1: "c"}, [("a", "c"), ("c", "d")], "abcd").validate()


def test_missing_sync_names_the_pair() -> None:
    with pytest.raises(wb.ScheduleError, match="'c' -> 'd' is not ordered"):
        _sched({0: "abd", 1: "c"}, [("a", "c")], "abcd").validate()


def test_wait_on_a_later_event_is_rejected() -> None:
    with pytest.raises(wb.ScheduleError, match="recorded later"):
        _sched({0: "abd", 1: "c"}, [("a", "c"), ("c", "d")], "abdc").validate()


def test_stream_order_against_issue_order_is_a_deadlock() -> None:
    with pytest.raises(wb.ScheduleError, match="deadlock"):
        _sched({0: "adb", 1: "c"}, [("a", "c"), ("c", "d")], "abcd").validate()


def test_missing_and_duplicate_ops() -> None:
    with pytest.raises(wb.ScheduleError, match="never launched"):
        _sched({0: "abd"}, [], "abd").validate()
    with pytest.raises(wb.ScheduleError, match="launched twice"):
        _sched({0: "abd", 1: "cd"}, [], "abcd").validate()


def test_barrier_orders_everything_before_it() -> None:
    _sched({0: "abd", 1: "c"}, [], "acbd", barriers=[1, 3]).validate()
    with pytest.raises(wb.ScheduleError, match="not ordered"):
        _sched({0: "abd", 1: "c"}, [], "acbd", barriers=[1]).validate()


def test_insert_syncs_skips_implied_dependencies() -> None:
    # a(s0) -> b(s1) -> c(s0), and a -> c: the sync b->c implies nothing about a, but a is earlier
    # on c's own stream, so only two syncs are needed; x(s1) -> y(s0) after b->c is implied by c.
    g = wb.Graph.from_edges([("a", "b"), ("b", "c"), ("a", "c"), ("b", "x"), ("x", "y"),
                             ("c", "y")])
    stream_of = {"a": 0, "b": 1, "c": 0, "x": 1, "y": 0}
    syncs = insert_syncs(g, stream_of, ["a", "b", "c", "x", "y"])
    assert syncs == [("a", "b"), ("b", "c"), ("x", "y")]
    # transitive: y's wait on x covers b (x follows b on stream 1)
    s = build_schedule(g, "hand", stream_of, ["a", "b", "c", "x", "y"])
    assert s.notes["syncs_inserted"] == 3
    s.validate()


def test_fold_streams_respects_the_cap_and_stays_valid() -> None:
    g = wb.models.inception_v3()
    s = wb.schedule(g, "nnc", max_streams=2).validate()
    assert s.n_streams <= 2
    stream_of = {f"n{i}": i for i in range(5)}
    folded, mapping = fold_streams(stream_of, list(stream_of), 2)
    assert set(folded.values()) == {0, 1} and len(mapping) == 5


def test_schedule_frame_and_summary() -> None:
    s = wb.schedule(DIAMOND, "wavefront")
    df = s.to_frame()
    assert list(df["op"]) == list(s.issue_order)
    assert s.summary()["barriers"] == 2 and "wavefront" in repr(s)
