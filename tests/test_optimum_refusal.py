"""exact_optimum refuses what it cannot finish before it searches (issue 44), and finds the same
optimum as before where it finishes: the seeded incumbent and the up-front count of the search."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import pytest

import workbench as wb
from workbench.models import random_dags as r
from workbench.orchestration import optimum
from workbench.orchestration.optimum import exact_optimum
from workbench.simulator.cost_model.costs import with_overrides

TOY = with_overrides("h100", launch_overhead_us=4.0, kernel_latency_us=2.0, interference=0.0,
                     model_overrides=())


def _never(*args: object, **kwargs: object) -> Iterator[object]:
    raise AssertionError("the search enumerated stream orders before refusing")
    yield


@pytest.mark.parametrize(("seed", "edges"), [(0, 1), (0, 3), (1, 2), (2, 1), (3, 3), (5, 2)])
def test_twelve_random_ops_are_refused_before_searching(
        seed: int, edges: int, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = r.random_dag(12, edges_per_op=edges, seed=seed)
    simulated = []
    real = optimum._Candidates.__call__

    def counted(self: optimum._Candidates, streams: tuple[tuple[str, ...], ...]) -> float:
        simulated.append(streams)
        return real(self, streams)

    monkeypatch.setattr(optimum, "_stream_orders", _never)
    monkeypatch.setattr(optimum._Candidates, "__call__", counted)
    t0 = time.process_time()
    with pytest.raises(wb.OptionError) as err:
        exact_optimum(graph)
    spent = time.process_time() - t0
    message = str(err.value)
    assert "\n" not in message and repr(graph.name) in message
    assert "max_enumerated=1000000" in message or "max_candidates=50000" in message
    assert "too wide for exhaustive search" in message
    # counted work: only the policies' schedules were simulated (at most one per policy)
    assert len(simulated) <= len(wb.policies())
    assert spent < 10.0   # about 0.05 s; generous for a loaded machine (the search took ~20 s)


def test_wide_layers_are_refused_with_the_estimate_and_the_limit() -> None:
    wide = wb.models.layered_dag(3, 3, seed=1)
    with pytest.raises(wb.OptionError, match=r"would simulate about [\d,]+ schedules .*"
                                             r"more than max_candidates=50000"):
        exact_optimum(wide)


def test_a_time_budget_turns_a_refusal_into_an_incomplete_answer() -> None:
    wide = wb.models.layered_dag(3, 3, seed=1)
    best = exact_optimum(wide, time_budget_s=1000)
    assert not best.complete and best.note is not None and "max_candidates" in best.note
    best.schedule.validate()
    assert best.candidates <= len(wb.policies())


# Makespans the search found before the seeded incumbent and the count (graph mode, h100).
RECORDED = {
    "nnc_diamond": 48.47712672727272,
    "mindspore_six_kernels": 75.0062,
    "random4_0": 57.2559671999974,
    "random6_0": 84.32027074608887,
    "random4_1": 61.81062854251611,
    "random6_1": 273.7588476190701,
    "random4_2": 117.60503381967108,
    "random6_2": 130.73218219314413,
    "random6_3": 102.07308139470956,
}


def _recorded_graph(name: str) -> wb.Graph:
    if not name.startswith("random"):
        return getattr(wb.models, name)()
    n, k = (int(x) for x in name.removeprefix("random").split("_"))
    return r.random_dag(n, edges_per_op=1 + k % 3, window=4, seed=k)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_optimum_is_the_one_found_before(name: str) -> None:
    best = exact_optimum(_recorded_graph(name))
    assert best.complete
    best.schedule.validate()
    assert best.makespan_us == pytest.approx(RECORDED[name], rel=1e-9)


def test_hand_worked_diamond_and_competitors() -> None:
    # N1, then N2 and N3 side by side, then N4: graph launch 8 µs + three 10 µs kernels
    assert exact_optimum(wb.models.nnc_diamond(), TOY).makespan_us == pytest.approx(38.0)
    # c first with a and b queued behind it, d beside b (tests/test_optimum.py): 146 µs
    g = wb.Graph.from_edges([("c", "d")], ops=["a", "b", "c", "d"],
                            durations={"a": 40, "b": 40, "c": 40, "d": 60},
                            thread_blocks={"d": 2})
    assert exact_optimum(g, TOY).makespan_us == pytest.approx(146.0)


# ------------------------------------------------------------------ the count, by brute force
def _set_partitions(items: list[str]) -> Iterator[list[list[str]]]:
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _set_partitions(rest):
        yield [[first], *part]
        for k in range(len(part)):
            yield [*part[:k], [first, *part[k]], *part[k + 1:]]


def _extensions(block: list[str], before: dict[str, set[str]]) -> int:
    return sum(all(not (before[x] & set(perm[i + 1:])) for i, x in enumerate(perm))
               for perm in itertools.permutations(block))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cap_share", [0.3, 0.6, 1.5])
def test_the_count_is_the_number_of_stream_orders_kept(seed: int, cap_share: float) -> None:
    graph = r.random_dag(6, edges_per_op=1 + seed % 3, window=4, seed=seed)
    order = list(graph.topo_order())
    before = optimum._ancestors(graph)
    alone = {op: float(1 + (7 * i) % 5) for i, op in enumerate(order)}
    offset = 8.0
    cap = offset + cap_share * sum(alone.values())
    want = sum(
        _product(_extensions(b, before) for b in part)
        for part in _set_partitions(order)
        if all(offset + sum(alone[op] for op in b) < cap - 1e-9 for b in part))
    count = optimum._Count(order, before, alone, offset, cap, 10**9)
    assert count.total((1 << len(order)) - 1) == want
    if want:  # every draw is one of the counted families
        import random

        rng = random.Random(1)
        for _ in range(20):
            streams = count.draw(rng)
            assert sorted(op for s in streams for op in s) == sorted(order)
            assert all(offset + sum(alone[op] for op in s) < cap - 1e-9 for s in streams)
            assert all(not (before[x] & set(s[i + 1:])) for s in streams
                       for i, x in enumerate(s))


def _product(values: Iterator[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def test_the_seed_runs_only_the_workbench_s_own_policies(monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy a user registered may never end (compare bounds it in a worker; the seed runs in
    the caller): the seeded incumbent never calls it.  It once ran the test suite's endless
    policy, 150 s per compare of a 4-op graph."""
    from workbench.schedulers import POLICIES, PolicyInfo

    def never(graph: wb.Graph, **options: object) -> wb.Schedule:
        raise AssertionError("the seed called a user's policy")

    monkeypatch.setitem(POLICIES._entries, "users_own", PolicyInfo(never, "test", "never"))
    graph = wb.models.nnc_diamond()
    assert exact_optimum(graph).makespan_us > 0
