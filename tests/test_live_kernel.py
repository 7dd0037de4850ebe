"""The compiled live-set sweep (:mod:`workbench.memory.live_kernel`) gives the NumPy sweep's
arrays, in the same order: listed pairs, frontier edges, births and tails, on random multi-stream
schedules (with and without barriers), policy schedules, a wide fan and a 3,000-op random DAG."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from tests.strategies import dags
from workbench.memory import lifetimes
from workbench.memory import live_sets as live_sets_module
from workbench.values.graph import Graph, Op, Tensor
from workbench.values.schedule import Schedule, build_schedule

pytest.importorskip("numba")


def _on_random_streams(draw: st.DrawFn, graph: Graph) -> Schedule:
    """``graph`` in a topological order on 1-6 random streams (syncs where they cross), half the
    time with up to three barriers."""
    order = list(graph.topo_order())
    streams = draw(st.integers(1, 6))
    stream_of = {op: draw(st.integers(0, streams - 1)) for op in order}
    barriers = draw(st.lists(st.integers(0, len(order)), max_size=3, unique=True)) \
        if draw(st.booleans()) else []
    return build_schedule(graph, "random", stream_of, order, barriers=barriers).validate()


@st.composite
def synced_schedules(draw: st.DrawFn, max_ops: int = 24) -> Schedule:
    """A valid schedule of a random DAG on 1-6 random streams (syncs), half of them with up to
    three barriers."""
    return _on_random_streams(draw, draw(dags(max_ops=max_ops)))


@st.composite
def many_output_schedules(draw: st.DrawFn, max_ops: int = 30) -> Schedule:
    """Ops with 1-3 outputs reading up to 4 earlier tensors, a few declared graph outputs (so
    some tensors are read by nobody and die at their producer), on random streams."""
    ops, tensors, made = [], [], []
    for j in range(draw(st.integers(1, max_ops))):
        outs = tuple(f"t{j}_{q}" for q in range(draw(st.integers(1, 3))))
        reads = tuple(draw(st.lists(st.sampled_from(made), max_size=4, unique=True))) \
            if made else ()
        ops.append(Op(f"n{j}", draw(st.sampled_from(["conv2d", "relu", "add", "matmul"])),
                      inputs=reads, outputs=outs, duration_us=draw(st.floats(1.0, 50.0))))
        tensors += [Tensor(t, draw(st.sampled_from([0, 512, 4096, 70_000])), f"n{j}")
                    for t in outs]
        made += outs
    graph = Graph(ops, tensors, outputs=draw(st.lists(st.sampled_from(made), max_size=3,
                                                      unique=True)))
    return _on_random_streams(draw, graph)


def _sweep_call(schedule: Schedule, monkeypatch: pytest.MonkeyPatch
                ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The arguments ``lifetimes(schedule)`` passes the sweep (None: one stream, no sweep)."""
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    real = live_sets_module.live_set_relation

    def record(*args: Any, **kwargs: Any) -> Any:
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(live_sets_module, "live_set_relation", record)
        lifetimes(schedule)
    return calls[0] if calls else None


def _both_engines(schedule: Schedule, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The sweep's answer for ``schedule`` by each engine."""
    call = _sweep_call(schedule, monkeypatch)
    if call is None:
        return {}
    args, kwargs = call
    return {engine: live_sets_module.live_set_relation(*args, **{**kwargs, "engine": engine})
            for engine in ("numpy", "kernel")}


def _assert_same(out: dict[str, Any]) -> None:
    if not out:
        return
    numpy_out, kernel_out = out["numpy"], out["kernel"]
    for a, b in zip(numpy_out[:4], kernel_out[:4], strict=True):
        assert a.dtype == b.dtype and a.tolist() == b.tolist()
    (nf_rows, nf_cols), (kf_rows, kf_cols) = numpy_out[4], kernel_out[4]
    assert [x.tolist() for x in nf_rows] == [x.tolist() for x in kf_rows]
    assert [x.tolist() for x in nf_cols] == [x.tolist() for x in kf_cols]


@settings(max_examples=200, deadline=None)
@given(schedule=synced_schedules())
def test_kernel_sweep_equals_the_numpy_sweep(schedule: Schedule) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _assert_same(_both_engines(schedule, monkeypatch))


@settings(max_examples=150, deadline=None)
@given(schedule=many_output_schedules())
def test_kernel_sweep_with_unread_tensors_and_many_outputs(schedule: Schedule) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _assert_same(_both_engines(schedule, monkeypatch))


@pytest.mark.parametrize("policy", ["nnc", "asap", "min_streams", "critical_path", "gpto",
                                    "wavefront", "ios_greedy"])
@pytest.mark.parametrize("seed", [0, 1])
def test_kernel_sweep_on_policy_schedules(policy: str, seed: int,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    graph = wb.models.random_dag(400, edges_per_op=1 + 2 * seed, window=8 + 56 * seed, seed=seed)
    out = _both_engines(wb.schedule(graph, policy), monkeypatch)
    assert out and len(out["numpy"][2]) > 0
    _assert_same(out)


def test_kernel_sweep_with_tensors_too_wide_for_a_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fan 1 -> 100 -> 1 under NNC: the source has 100 users on 100 streams (past the 62-bit
    masks: the dictionary sweep), the fan's tensors go through the kernel."""
    mids = [f"m{i}" for i in range(100)]
    graph = wb.Graph.from_edges([("src", m) for m in mids] + [(m, "sink") for m in mids],
                                ops=["src", *mids, "sink"],
                                sizes={m: 512 * (1 + i % 5) for i, m in enumerate(mids)})
    out = _both_engines(wb.schedule(graph, "nnc"), monkeypatch)
    assert out and len(out["numpy"][2]) > 0
    _assert_same(out)


def test_auto_compiles_a_large_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    """From SWEEP_KERNEL_MIN_OPS ops a schedule is swept compiled (barriers too), and its plan is
    the NumPy sweep's."""
    from workbench.memory import compiled

    calls: list[int] = []
    real = compiled.sweep_compiled

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(compiled, "sweep_compiled", counted)
    graph = wb.models.random_dag(3_000, seed=4)
    for policy in ("nnc", "wavefront"):
        schedule = wb.schedule(graph, policy)
        assert len(schedule.issue_order) >= live_sets_module.SWEEP_KERNEL_MIN_OPS
        assert bool(schedule.barriers) == (policy == "wavefront")
        calls.clear()
        auto = wb.plan_memory(schedule, "greedy_by_size")
        assert calls == [1]
        with monkeypatch.context() as patch:
            patch.setattr(live_sets_module, "SWEEP_KERNEL_MIN_OPS", 10**9)
            assert wb.plan_memory(schedule, "greedy_by_size").offsets == auto.offsets
        assert calls == [1]


def test_unknown_sweep_engine_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown sweep engine 'fast'"):
        live_sets_module.live_set_relation(wb.schedule(wb.models.random_dag(6, seed=0), "nnc"),
                                           [], [], np.zeros(0, dtype=bool), skeleton=False,
                                           engine="fast")
