"""Schedule validation, sync insertion and stream folding."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from tests.strategies import dags
from workbench.values.schedule import Schedule, build_schedule, fold_streams, insert_syncs

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
    g = wb.models.inception_v3(fused=False)
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


# ------------------------------------------------------------------ happens-before at scale


def _reachable_hb(s: Schedule) -> set[tuple[str, str]]:
    """Reference happens-before: reachability over stream order, syncs and barrier nodes."""
    import networkx as nx

    dag = nx.DiGraph()
    dag.add_nodes_from(s.issue_order)
    for ops in s.streams.values():
        dag.add_edges_from(zip(ops, ops[1:]))
    dag.add_edges_from((a, b) for a, b in s.syncs)
    for position in s.barriers:
        dag.add_edges_from((a, ("barrier", position)) for a in s.issue_order[:position])
        dag.add_edges_from((("barrier", position), b) for b in s.issue_order[position:])
    closure = nx.transitive_closure_dag(dag)
    return {(a, b) for a, b in closure.edges if isinstance(a, str) and isinstance(b, str)}


@settings(max_examples=150, deadline=None)
@given(graph=dags(max_ops=14, costs=False), data=st.data())
def test_validate_agrees_with_reachability(graph: wb.Graph, data: st.DataObject) -> None:
    # Random stream assignment, issue order, barriers and a random subset of the needed syncs:
    # validate() passes iff every dependency is ordered in the reference reachability relation.
    ops = list(graph.topo_order())
    stream_of = {op: data.draw(st.integers(0, 3)) for op in ops}
    barriers = data.draw(st.lists(st.integers(0, len(ops)), max_size=2, unique=True))
    full = build_schedule(graph, "r", stream_of, ops, barriers=barriers)
    syncs = [x for x in full.syncs if data.draw(st.booleans())]
    s = Schedule(graph, "r", full.streams, tuple(syncs), full.issue_order, full.barriers)
    hb = _reachable_hb(s)
    unordered = [(a, b) for a, b in graph.edges
                 if s.stream_of(a) != s.stream_of(b) and (a, b) not in hb]
    if not unordered:
        s.validate()
        return
    with pytest.raises(wb.ScheduleError, match="is not ordered") as err:
        s.validate()
    named = str(err.value).split(" is not ordered")[0].removeprefix("dependency ")
    assert tuple(x.strip("'") for x in named.split(" -> ")) in unordered


def test_clock_width_is_the_streams_alive_at_once_not_the_streams() -> None:
    # Operation count, not time: nnc opens hundreds of short-lived streams on a random DAG; the
    # validator's clocks have one column per stream alive at once, so their width stays small.
    from workbench.values.clocks import _columns, _last_queries

    widths = {}
    for n in (1000, 4000):
        s = wb.schedule(wb.models.random_dag(n, seed=0), "nnc")
        issue = {op: i for i, op in enumerate(s.issue_order)}
        widths[n] = (s.n_streams, _columns(s.streams, issue, _last_queries(s))[1])
        s.validate()
    (streams_1k, width_1k), (streams_4k, width_4k) = widths[1000], widths[4000]
    assert streams_4k > 2 * streams_1k  # streams grow with the graph ...
    assert width_4k <= width_1k + 8 <= 64  # ... the clock width does not
