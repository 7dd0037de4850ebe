"""IOS's eager bounds (issue 44): the host-time bound of a stage, and the proof that a schedule
with a barrier is slower than the sequential one, which stops the search early.  Both change
how much is searched, never the schedule chosen."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from tests.strategies import dags
from workbench.models import random_dags as r
from workbench.schedulers import ios_bounds
from workbench.schedulers.ios import emit_stages
from workbench.schedulers.ios_oracle import StageOracle
from workbench.simulator.cost_model.costs import get_device
from workbench.values.schedule import build_schedule


def _sha(s: wb.Schedule) -> str:
    return hashlib.sha1(json.dumps([sorted((str(k), list(v)) for k, v in s.streams.items()),
                                    list(s.issue_order), sorted(map(list, s.syncs)),
                                    sorted(s.barriers)]).encode()).hexdigest()


def _both(graph: wb.Graph, monkeypatch: pytest.MonkeyPatch, **options: Any
          ) -> tuple[wb.Schedule, wb.Schedule]:
    """The schedule with the bounds, and without them (the search before issue 44)."""
    with_bounds = wb.schedule(graph, "ios", show_progress=False, **options)
    with monkeypatch.context() as m:
        m.setattr(ios_bounds, "serial_trace", lambda *a, **k: None)
        without = wb.schedule(graph, "ios", show_progress=False, **options)
    return with_bounds, without


BUILT_INS = ["nnc_diamond", "raf_three_branches", "mindspore_six_kernels", "squeezenet",
             "inception_v3"]


@pytest.mark.parametrize("name", BUILT_INS)
@pytest.mark.parametrize("sync", ["device_sync", "barrier"])
def test_built_ins_keep_their_schedule(name: str, sync: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    graph = getattr(wb.models, name)()
    pruned, plain = _both(graph, monkeypatch, sync=sync)
    assert _sha(pruned) == _sha(plain)
    assert pruned.notes["states"] <= plain.notes["states"]
    assert pruned.notes["simulations"] <= plain.notes["simulations"]


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_keep_their_schedule(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = (r.random_dag(16 + seed, edges_per_op=1 + seed % 3, window=6, seed=seed)
             if seed % 2 else r.layered_dag(4, 4, edge_prob=0.3, seed=seed))
    for options in ({"max_part_size": 10}, {"r": 2, "s": 3, "max_part_size": 8},
                    {"max_states": 300}, {"max_part_size": 6, "early_stop": True}):
        pruned, plain = _both(graph, monkeypatch, **options)
        assert _sha(pruned) == _sha(plain), options


def test_unfused_nasnet_stops_after_the_first_part_with_a_barrier(
        monkeypatch: pytest.MonkeyPatch) -> None:
    graph = wb.models.nasnet_a_large(fused=False)
    pruned, plain = _both(graph, monkeypatch, max_states=2000)
    assert _sha(pruned) == _sha(plain) == _sha(wb.schedule(graph, "serial"))
    assert pruned.notes["parts_searched"] < pruned.notes["parts"]
    assert "not searched" in pruned.notes["fallback"]
    assert pruned.notes["lower_bound_us"] > pruned.notes["sequential_us"]
    assert pruned.notes["states"] < plain.notes["states"]


def test_early_stop_true_stops_a_complete_search_with_the_same_schedule(
        monkeypatch: pytest.MonkeyPatch) -> None:
    graph = wb.models.inception_v3(batch=1, fused=False)
    full = wb.schedule(graph, "ios", show_progress=False)      # complete: no budget cut it
    assert "parts_searched" not in full.notes and full.notes["states"] == 1206
    early = wb.schedule(graph, "ios", show_progress=False, early_stop=True)
    never = wb.schedule(graph, "ios", show_progress=False, early_stop=False)
    assert _sha(early) == _sha(full) == _sha(never) == _sha(wb.schedule(graph, "serial"))
    assert early.notes["parts_searched"] < early.notes["parts"]
    assert early.notes["states"] < full.notes["states"]
    with pytest.raises(wb.OptionError, match="early_stop"):
        wb.schedule(graph, "ios", show_progress=False, early_stop="yes")


# ----------------------------------------------------------------- the bounds are lower bounds
@st.composite
def _stages(draw: st.DrawFn) -> tuple[wb.Graph, list[list[list[str]]]]:
    """A graph and a division of its topological order into stages of groups (consecutive
    slices; a stage's groups need not be independent for the host bound)."""
    graph = draw(dags(max_ops=14))
    order = list(graph.topo_order())
    stages: list[list[list[str]]] = []
    k = 0
    while k < len(order):
        n_groups = draw(st.integers(1, 3))
        stage = []
        for _ in range(n_groups):
            if k < len(order):
                take = draw(st.integers(1, 3))
                stage.append(order[k:k + take])
                k += take
        stages.append(stage)
    return graph, stages


@settings(max_examples=60)
@given(case=_stages(), sync=st.sampled_from(["device_sync", "barrier"]))
def test_a_stage_takes_at_least_its_host_time(case: tuple[wb.Graph, list[list[list[str]]]],
                                              sync: str) -> None:
    graph, stages = case
    trace = ios_bounds.serial_trace(graph, "h100", "eager")
    if trace is None:
        return
    oracle = StageOracle(graph, device="h100", mode="eager", sync=sync)
    host = dict(zip((op for ops in [[o] for o in graph.topo_order()] for op in ops),
                    ios_bounds.unit_host_us(trace, "h100", [[o] for o in graph.topo_order()]),
                    strict=True))
    for stage in stages:
        low = sum(host[op] for g in stage for op in g) + (oracle.sync_us if len(stage) > 1
                                                           else 0.0)
        assert oracle(stage) >= low * (1 - 1e-9)


@settings(max_examples=60)
@given(case=_stages(), sync=st.sampled_from(["device_sync", "barrier"]))
def test_a_schedule_with_a_barrier_takes_at_least_host_time_and_one_barrier(
        case: tuple[wb.Graph, list[list[list[str]]]], sync: str) -> None:
    graph, stages = case
    trace = ios_bounds.serial_trace(graph, "h100", "eager")
    if trace is None:
        return
    order, stream_of, barriers = emit_stages(stages)
    if not barriers:
        return
    sched = build_schedule(graph, "stages", stream_of, order, barriers=barriers, syncs=(),
                           barrier_kind="device_sync" if sync == "device_sync" else "join")
    spec = get_device("h100")
    barrier = spec.device_sync_us if sync == "device_sync" else 4 * spec.event_overhead_us
    made = wb.simulate(sched, "h100", mode="eager").makespan
    assert made >= (float(trace.meta["host_end_us"]) + barrier) * (1 - 1e-9)
