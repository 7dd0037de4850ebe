"""``Schedule.validate()`` sees declared side effects (issue 43 #1): ops that write or read one
state (``assign`` family writes of a parameter, reads of it, I/O through ``"io"``) are ordered as
the program orders them, by the same rule (:func:`workbench.values.state.state_order`) the
policies keep and the launch-plan validator checks.

The property: on random graphs with side effects, every policy's schedule validates and computes
the program-order result in random stream interleavings (NumPy emulation of its launch plan); and
random hand-made schedules whose syncs order only the data edges either validate and compute
that result too, or are refused by both validators alike."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.errors import ScheduleError
from workbench.executors.gpu.emulator import emulate
from workbench.executors.gpu.launch_plan import build_launch_plan
from workbench.executors.gpu.reference import run_graph_reference
from workbench.schedulers import TEST_OPTIONS
from workbench.values.graph import Graph, Op, Tensor
from workbench.values.schedule import build_schedule
from workbench.values.state import state_order

SHAPE = (4,)
NBYTES = 16


@st.composite
def side_effect_graphs(draw: st.DrawFn) -> Graph:
    """An input ``x``, 1-3 parameters and 3-12 ops in program order, each one of: an elementwise
    op over earlier values (parameters among them: reads of state), an ``assign`` or
    ``assign_add`` of a parameter from an earlier value (a write), a ``print`` (I/O)."""
    params = [f"p{i}" for i in range(draw(st.integers(1, 3)))]
    tensors = [Tensor("x", NBYTES, role="input", shape=SHAPE)]
    tensors += [Tensor(p, NBYTES, role="parameter", shape=SHAPE) for p in params]
    values = ["x", *params]
    ops: list[Op] = []
    for i in range(draw(st.integers(3, 12))):
        what = draw(st.sampled_from(["add", "mul", "neg", "relu", "assign", "assign_add",
                                     "print"]))
        name, out = f"o{i}", f"o{i}:out"
        if what in ("assign", "assign_add"):
            inputs: tuple[str, ...] = (draw(st.sampled_from(params)),
                                       draw(st.sampled_from(values)))
        elif what in ("add", "mul"):
            inputs = (draw(st.sampled_from(values)), draw(st.sampled_from(values)))
        else:
            inputs = (draw(st.sampled_from(values)),)
        ops.append(Op(name, kind=what, inputs=inputs, outputs=(out,), duration_us=1.0 + i % 3))
        tensors.append(Tensor(out, NBYTES, producer=name, shape=SHAPE))
        values.append(out)
    sinks = [op.outputs[0] for op in ops]
    return Graph(ops, tensors, outputs=sinks, name="side_effects")


def _serial_result(graph: Graph) -> dict[str, np.ndarray]:
    """Every output and parameter after the program runs in its own order."""
    return run_graph_reference(graph)


def _agrees(plan_or_sched: object, graph: Graph, want: dict[str, np.ndarray], seeds: int) -> None:
    names = [*graph.outputs, *(t.id for t in graph.tensors.values() if t.role == "parameter")]
    for seed in range(seeds):
        got = emulate(plan_or_sched, order="random", interleave_seed=seed, tensors=names)
        for t in names:
            np.testing.assert_allclose(got[t], want[t], rtol=1e-6, err_msg=t)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(graph=side_effect_graphs(), policy=st.sampled_from(wb.policies()))
def test_every_policy_validates_and_computes_program_order_in_any_stream_timing(
        graph: Graph, policy: str) -> None:
    sched = wb.schedule(graph, policy, **TEST_OPTIONS.get(policy, {})).validate()
    want = _serial_result(graph)
    _agrees(build_launch_plan(sched), graph, want, seeds=3)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(graph=side_effect_graphs(), seed=st.integers(0, 10_000))
def test_a_hand_schedule_is_refused_by_both_validators_or_computes_program_order(
        graph: Graph, seed: int) -> None:
    """Streams and a topological issue order of the *data* edges drawn at random, syncs only for
    those edges: the state may be touched out of order or unordered across streams."""
    rng = random.Random(seed)
    preds = {op.id: set(graph.predecessors(op.id)) for op in graph.ops}
    order, done = [], set()
    while len(order) < len(graph):
        ready = [o for o in graph.op_ids if o not in done and preds[o] <= done]
        pick = rng.choice(ready)
        order.append(pick)
        done.add(pick)
    streams = {op: rng.randrange(3) for op in order}
    sched = build_schedule(graph, "hand", streams, order)
    try:
        sched.validate()
    except ScheduleError as exc:
        assert "\n" not in str(exc)
        with pytest.raises(ScheduleError):  # the launch-plan validator refuses it too
            build_launch_plan(sched)
        return
    _agrees(build_launch_plan(sched), graph, _serial_result(graph), seeds=4)


def test_state_order_pairs_of_a_small_program() -> None:
    """p written twice, read between and after; prints share the "io" state."""
    t = [Tensor("x", NBYTES, role="input", shape=SHAPE),
         Tensor("p", NBYTES, role="parameter", shape=SHAPE)]
    ops = [Op("w1", kind="assign", inputs=("p", "x"), outputs=("w1:out",)),
           Op("r1", kind="relu", inputs=("p",), outputs=("r1:out",)),
           Op("r2", kind="neg", inputs=("p",), outputs=("r2:out",)),
           Op("w2", kind="assign_add", inputs=("p", "x"), outputs=("w2:out",)),
           Op("pr1", kind="print", inputs=("r1:out",), outputs=("pr1:out",)),
           Op("pr2", kind="print", inputs=("r2:out",), outputs=("pr2:out",))]
    t += [Tensor(o.outputs[0], NBYTES, producer=o.id, shape=SHAPE) for o in ops]
    g = Graph(ops, t, outputs=["pr1:out", "pr2:out", "w2:out"])
    assert state_order(g) == [("w1", "r1", "p"), ("w1", "r2", "p"), ("w1", "w2", "p"),
                              ("r1", "w2", "p"), ("r2", "w2", "p"), ("pr1", "pr2", "io")]
    # the two reads stay free to run side by side
    sched = build_schedule(g, "hand", {"w1": 0, "r1": 0, "r2": 1, "w2": 0, "pr1": 0, "pr2": 1},
                           ["w1", "r1", "r2", "w2", "pr1", "pr2"],
                           syncs=[("w1", "r2"), ("r2", "w2"), ("pr1", "pr2")])
    sched.validate()
    unsynced = build_schedule(g, "hand", {"w1": 0, "r1": 0, "r2": 1, "w2": 0, "pr1": 0,
                                          "pr2": 1}, ["w1", "r1", "r2", "w2", "pr1", "pr2"],
                              syncs=[("w1", "r2"), ("r2", "w2")])
    with pytest.raises(ScheduleError, match=r"'pr1' and 'pr2' both touch state 'io'.*a race"):
        unsynced.validate()
