"""critical_path (HEFT-like): upward-rank priority, earliest start with gap insertion."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import workbench as wb
from tests.strategies import dags
from workbench.schedulers.critical_path import schedule_critical_path
from workbench.simulator.cost_model.costs import critical_path_us


# The shared invariants (validate, every op once, dependencies, stream cap) are checked for every
# registered policy in tests/test_common_policies.py; only what is special to this policy is here.
@settings(max_examples=40)
@given(graph=dags(max_ops=24))
def test_list_schedule_estimate_is_at_least_the_critical_path(graph: wb.Graph) -> None:
    s = schedule_critical_path(graph)
    assert s.notes["estimated_makespan_us"] >= critical_path_us(graph, "h100") - 1e-6


def test_hand_worked_example() -> None:
    # a (10) -> b (30) -> e (10); a -> c (20); d (15) alone; c -> e.  Two streams.
    # Upward ranks: e 10, b 40, c 30, a 50, d 15.  Order: a, b, c, d, e.
    #   a: stream 0 [0, 10]
    #   b: ready at 10; stream 0 at 10, stream 1 at 10 -> tie, lowest id: stream 0 [10, 40]
    #   c: ready at 10; stream 0 at 40, stream 1 at 10 -> stream 1 [10, 30]
    #   d: ready at 0; stream 0 is busy from 0, stream 1 has the idle gap [0, 10) but d needs 15:
    #      no fit, so after c: stream 1 at 30 -> [30, 45]
    #   e: ready at max(40, 30) = 40; stream 0 at 40 -> [40, 50]
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "e"), ("c", "e")],
                            ops=["a", "b", "c", "d", "e"],
                            durations={"a": 10, "b": 30, "c": 20, "d": 15, "e": 10})
    s = schedule_critical_path(g, max_streams=2).validate()
    assert s.notes["rank_us"] == {"a": 50.0, "b": 40.0, "c": 30.0, "d": 15.0, "e": 10.0}
    assert s.notes["start_us"] == {"a": 0.0, "b": 10.0, "c": 10.0, "d": 30.0, "e": 40.0}
    assert s.notes["estimated_makespan_us"] == 50.0
    assert dict(s.streams) == {0: ("a", "b", "e"), 1: ("c", "d")}
    assert s.syncs == (("a", "c"), ("c", "e"))


def test_short_op_slides_into_a_gap() -> None:
    # Same graph with d = 5 µs: d now fits the idle gap [0, 10) on stream 1 and starts at 0,
    # before c, although it was placed after c.
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "e"), ("c", "e")],
                            ops=["a", "b", "c", "d", "e"],
                            durations={"a": 10, "b": 30, "c": 20, "d": 5, "e": 10})
    s = schedule_critical_path(g, max_streams=2).validate()
    assert s.notes["start_us"]["d"] == 0.0
    # issue order = planned (start, end): d (0, 5), a (0, 10), c (10, 30), b (10, 40), e;
    # streams are numbered by their first issued op
    assert s.issue_order == ("d", "a", "c", "b", "e")
    assert dict(s.streams) == {0: ("d", "c"), 1: ("a", "b", "e")}


def test_unbounded_streams_open_only_when_sooner() -> None:
    g = wb.Graph.from_edges([], ops=["p", "q", "r"], durations={"p": 10, "q": 10, "r": 10})
    s = schedule_critical_path(g, max_streams=None).validate()
    assert s.n_streams == 3 and s.n_syncs == 0
    chain = wb.Graph.from_edges([("p", "q"), ("q", "r")])
    assert schedule_critical_path(chain, max_streams=None).n_streams == 1


@pytest.mark.parametrize("options, match", [
    ({"max_streams": 0}, "max_streams"),
    ({"max_streams": 1.5}, "max_streams"),
    ({"device": "tpu"}, "device"),
])
def test_bad_options(options: dict, match: str) -> None:
    with pytest.raises(wb.OptionError, match=match):
        schedule_critical_path(wb.Graph.from_edges([("a", "b")]), **options)
