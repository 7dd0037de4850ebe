"""Hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS) and cross-stream event waits in the
simulator, against hand-worked expectations."""

from __future__ import annotations

import pytest

from workbench.simulator.cost_model.devices import with_overrides
from workbench.simulator.cost_model.kernel_model import model_for
from workbench.simulator.engine import hardware_queues
from workbench.simulator.simulate import simulate, simulate_makespan
from workbench.values.graph import Graph, Op
from workbench.values.schedule import Schedule

# the h200 figures with the shared library defaults (no op gap, no event delay, 8 queues)
SPEC = with_overrides("h200", interference=0.0, graph_launch_us=8.0, model_overrides=())


def _spread(n_streams: int) -> Schedule:
    """``n_streams`` independent 10-µs one-block kernels, one per stream."""
    ops = [Op(f"k{i}", duration_us=10.0, thread_blocks=1) for i in range(n_streams)]
    g = Graph(ops)
    return Schedule(g, "spread", {i: (f"k{i}",) for i in range(n_streams)}, (),
                    tuple(f"k{i}" for i in range(n_streams)))


@pytest.mark.parametrize("streams,queues,expected", [
    (8, 8, 8.0 + 10.0),    # one stream per queue: all run at once
    (12, 8, 8.0 + 20.0),   # queues 0-3 hold two streams each: two kernels in a row
    (16, 8, 8.0 + 20.0),   # every queue holds two streams
    (17, 8, 8.0 + 30.0),   # queue 0 holds streams 0, 8 and 16
    (16, 4, 8.0 + 40.0),   # four queues of four
    (16, 0, 8.0 + 10.0),   # no limit (queues <= 0): one queue per stream
])
def test_streams_beyond_the_queues_serialise(streams: int, queues: int,
                                             expected: float) -> None:
    # 1-block kernels leave the device nearly empty, so only the queues can serialise them;
    # graph mode: everything issued at graph_launch_us = 8
    model = model_for(SPEC).with_values(hardware_queues=queues)
    assert simulate_makespan(_spread(streams), SPEC, mode="graph", model=model) == \
        pytest.approx(expected)


def test_more_streams_never_beat_the_queues() -> None:
    # the makespan with 8k streams cannot improve on 8 streams by more than the work allows
    model = model_for(SPEC)
    assert model.hardware_queues == 8
    at8 = simulate_makespan(_spread(8), SPEC, mode="graph")
    for n in (9, 16, 32, 64):
        assert simulate_makespan(_spread(n), SPEC, mode="graph") >= at8 * (n // 8) - 8.0 * (
            n // 8 - 1) - 1e-9


def test_queue_order_is_issue_order_and_the_trace_shows_it() -> None:
    t = simulate(_spread(12), SPEC, mode="graph")
    starts = dict(zip(t.df["op"], t.df["start_us"], strict=True))
    assert starts["k8"] == pytest.approx(starts["k0"] + 10.0)  # k8 shares queue 0 with k0
    assert starts["k4"] == pytest.approx(starts["k0"])         # k4 has queue 4 to itself


def test_hardware_queue_assignment() -> None:
    assert hardware_queues([3, 1, 2, 3], 2) == [0, 0, 1, 0]   # sorted ids 1, 2, 3 -> 0, 1, 0
    assert hardware_queues(["b", "a"], 8) == [1, 0]
    assert hardware_queues([5, 7], 0) == [0, 1]


def test_a_cross_stream_wait_costs_event_wait_us() -> None:
    ops = [Op("a", duration_us=10.0, thread_blocks=1), Op("b", duration_us=10.0, thread_blocks=1,
                                                          inputs=("x",)),
           Op("c", duration_us=10.0, thread_blocks=1)]
    ops[0] = Op("a", duration_us=10.0, thread_blocks=1, outputs=("x",))
    g = Graph(ops)
    s = Schedule(g, "two", {0: ("a", "c"), 1: ("b",)}, (("a", "b"),), ("a", "b", "c"))
    model = model_for(SPEC).with_values(event_wait_us=3.0)
    t = simulate(s, SPEC, mode="graph", model=model)
    start = dict(zip(t.df["op"], t.df["start_us"], strict=True))
    end = dict(zip(t.df["op"], t.df["end_us"], strict=True))
    assert start["b"] == pytest.approx(end["a"] + 3.0)  # across streams: the event's delay
    assert start["c"] == pytest.approx(end["a"])        # same stream: no event


def test_a_co_runner_never_speeds_an_op_up() -> None:
    # regression: a stale completion event of an op's earlier kernel (versions restarted at 0
    # with each kernel's entry) ended a later kernel early: this sepconv's pointwise kernel
    # (7.1 µs alone) finished in 1.2 µs beside another sepconv
    import workbench as wb

    g = wb.models.randwire()
    a, b = "conv4/node25/sepconv", "conv3/node6/sepconv"
    alone = simulate(Schedule(g, "a", {0: (a,)}, (), (a,)), "h100", mode="graph")
    pair = simulate(Schedule(g, "ab", {0: (a,), 1: (b,)}, (), (a, b)), "h100", mode="graph")
    end = dict(zip(pair.df["op"], pair.df["end_us"], strict=True))
    assert end[a] >= alone.makespan - 1e-9
