"""The compiled placement (``engine="kernel"``) against the NumPy loop it replaces above
``KERNEL_MIN_TENSORS`` tensors: equal offsets and equal stopping arenas on every relation kind
(interval overlap with tails, listed pairs, a multi-stream schedule's happens-before relation),
every fit, random orders, zero-byte tensors, huge sizes and ``stop_at``; and ``plan_memory``
planning the same bytes whichever engine ``"auto"`` picks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.memory import placement
from workbench.memory.compiled import place_compiled
from workbench.memory.conflicts import interval_graph, pairs_graph
from workbench.memory.lifetimes import lifetimes
from workbench.memory.placement import FIT_NAMES, place_until
from workbench.memory.plan import prepare
from workbench.values.graph import Graph

pytest.importorskip("numba")

FITS = st.lists(st.sampled_from(FIT_NAMES), min_size=1, max_size=5)


def _same(graph, sizes, order, fits, stop_at=None) -> tuple[np.ndarray, list[int | None]]:
    want = place_until(graph, sizes, order, fits, stop_at, engine="numpy")
    got = place_until(graph, sizes, order, fits, stop_at, engine="kernel")
    assert got[1] == want[1]
    np.testing.assert_array_equal(got[0], want[0])
    return want


@st.composite
def interval_problems(draw):
    """Records with few steps (siblings and tails abound), some zero-byte, some huge."""
    n = draw(st.integers(1, 60))
    big = draw(st.booleans())
    top = (1 << 56) if big else 64
    sizes = draw(st.lists(st.one_of(st.just(0), st.integers(1, top)), min_size=n, max_size=n))
    steps = draw(st.integers(1, 12))
    firsts = draw(st.lists(st.integers(0, steps - 1), min_size=n, max_size=n))
    spans = draw(st.lists(st.integers(0, steps), min_size=n, max_size=n))
    lasts = [min(f + s, steps - 1) for f, s in zip(firsts, spans, strict=True)]
    order = draw(st.permutations(range(n)))
    return interval_graph(firsts, lasts), np.array(sizes, dtype=np.int64), order


@settings(max_examples=150, deadline=None)
@given(interval_problems(), FITS, st.integers(0, 4))
def test_kernel_equals_numpy_on_interval_relations(problem, fits, stop_eighths) -> None:
    graph, sizes, order = problem
    full, _ = _same(graph, sizes, order, fits)
    if stop_eighths:  # stop at a fraction of the first fit's arena: some fits stop, some not
        arena = int((full[0] + sizes).max()) if len(sizes) else 0
        _same(graph, sizes, order, fits, stop_at=arena * stop_eighths // 4)


@st.composite
def tied_problems(draw):
    """Interval records of a few small sizes over many steps: gaps that fit a tensor exactly,
    gaps of equal spare (a partner's and a wall's among them), partners that overlap walls
    and walls born just before or after the tensor, which random sizes make rare."""
    n = draw(st.integers(20, 120))
    sizes = draw(st.lists(st.sampled_from([1, 2, 3, 4, 8]), min_size=n, max_size=n))
    steps = draw(st.integers(4, 40))
    firsts = draw(st.lists(st.integers(0, steps - 1), min_size=n, max_size=n))
    spans = draw(st.lists(st.integers(0, steps // 2), min_size=n, max_size=n))
    lasts = [min(f + s, steps - 1) for f, s in zip(firsts, spans, strict=True)]
    order = draw(st.permutations(range(n)))
    return interval_graph(firsts, lasts), np.array(sizes, dtype=np.int64), order


@settings(max_examples=300, deadline=None)
@given(tied_problems())
def test_kernel_equals_numpy_where_gaps_tie_and_fit_exactly(problem) -> None:
    graph, sizes, order = problem
    _same(graph, sizes, order, FIT_NAMES)


@settings(max_examples=80, deadline=None)
@given(st.data(), FITS)
def test_kernel_equals_numpy_on_listed_pairs(data, fits) -> None:
    n = data.draw(st.integers(2, 40))
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                               .filter(lambda p: p[0] != p[1]), max_size=4 * n))
    sizes = np.array(data.draw(st.lists(st.integers(0, 1 << 20), min_size=n, max_size=n)))
    order = data.draw(st.permutations(range(n)))
    _same(pairs_graph(n, {tuple(sorted(p)) for p in pairs}), sizes, order, fits)


def _fan(n: int) -> Graph:
    mids = [f"m{i}" for i in range(n)]
    return Graph.from_edges([("src", m) for m in mids] + [(m, "sink") for m in mids],
                            ops=["src", *mids, "sink"],
                            sizes={m: 512 * (1 + i % 5) for i, m in enumerate(mids)})


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("policy", ["nnc", "serial"])
@pytest.mark.parametrize("family", ["random", "fan"])
def test_kernel_equals_numpy_on_a_schedules_relation(seed: int, policy: str, family: str) -> None:
    """A random DAG's and a fan's schedule: on nnc the happens-before relation (tails whose key
    is not complete: a tail reads the union of the walls, which a fan's stacked tails keep at a
    few blocks), on serial interval overlap; the size order and a shuffled one, all four fits."""
    graph = wb.models.random_dag(300, seed=seed) if family == "random" else _fan(150 + seed)
    schedule = wb.schedule(graph, policy)
    lt = lifetimes(schedule)
    problem = prepare(lt.records, 512, lt.conflicts)
    assert problem.graph.tails.any()
    order = np.lexsort((np.arange(problem.graph.n), -problem.sizes)).tolist()
    _same(problem.graph, problem.sizes, order, FIT_NAMES)
    shuffled = np.random.default_rng(seed).permutation(problem.graph.n).tolist()
    _same(problem.graph, problem.sizes, shuffled, FIT_NAMES)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("policy", ["nnc", "wavefront"])
def test_kernel_equals_numpy_on_a_schedules_relation_with_tied_sizes(seed: int, policy: str
                                                                     ) -> None:
    """A multi-stream relation (walls, tails reading the walls' union, pending walls) with every
    tensor 1 to 4 bytes (odd seeds: blocks of 512), so that gaps tie, fit exactly and start a
    byte apart; three orders, all fits, and a stop at half the first fit's arena."""
    graph = wb.models.random_dag(400, seed=seed)
    lt = lifetimes(wb.schedule(graph, policy))
    relation = prepare(lt.records, 512, lt.conflicts).graph
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, relation.n).astype(np.int64) * (512 if seed % 2 else 1)
    for order in (np.lexsort((np.arange(relation.n), -sizes)).tolist(),
                  rng.permutation(relation.n).tolist(),
                  np.argsort(relation.births, kind="stable").tolist()):
        full, _ = _same(relation, sizes, order, FIT_NAMES)
        _same(relation, sizes, order, FIT_NAMES, stop_at=int((full[0] + sizes).max()) // 2)


@pytest.mark.parametrize("spread", [20, 100, 1000])
def test_many_partners_at_one_offset_sort_like_spread_ones(spread: int) -> None:
    """``spread`` tensors that conflict with nothing but the last one all sit at offset 0; the
    last one's partners then share one start (the kernel's bucket sort falls back to a full
    sort past 32 in a bucket).  Every fit puts it above the widest of them."""
    n = spread + 1
    graph = pairs_graph(n, {(i, spread) for i in range(spread)})
    sizes = np.array([1 + i % 7 for i in range(spread)] + [5], dtype=np.int64)
    rows, _ = _same(graph, sizes, range(n), FIT_NAMES)
    assert rows[:, spread].tolist() == [7] * len(FIT_NAMES)


def test_auto_plans_the_same_bytes_as_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """``plan_memory`` on a graph above the threshold (the kernel) and the same call with the
    threshold out of reach (NumPy): identical offsets for greedy_by_size and SOMAS."""
    schedule = wb.schedule(wb.models.random_dag(2500, seed=3), "nnc")
    assert len(lifetimes(schedule).records) >= placement.KERNEL_MIN_TENSORS
    calls: list[int] = []

    def counted(graph, *args):
        calls.append(graph.n)
        return place_compiled(graph, *args)

    monkeypatch.setattr(placement, "place_compiled", counted)
    plans = []
    for limit in (placement.KERNEL_MIN_TENSORS, 1 << 40):
        monkeypatch.setattr(placement, "KERNEL_MIN_TENSORS", limit)
        plans.append([wb.plan_memory(schedule, name).offsets
                      for name in ("greedy_by_size", "somas")])
        if len(plans) == 1:
            assert len(calls) >= 2  # greedy's pass and at least SOMAS's first
            calls.clear()
    assert not calls  # above every graph's size: the NumPy loop
    assert plans[0] == plans[1]


def test_an_unknown_engine_is_refused() -> None:
    graph = interval_graph([0], [0])
    with pytest.raises(ValueError, match="unknown placement engine 'numba'"):
        place_until(graph, np.array([4]), [0], ["best"], engine="numba")


def test_warm_kernel_compiles_for_the_types_place_until_passes() -> None:
    """``warm_kernel`` (what ``scripts/setup.sh`` runs) leaves the kernel with exactly one
    compiled signature, the one a real plan then uses: a second signature would mean that
    setup compiled for types no plan passes, and the first large plan compiles again."""
    from workbench.memory.compiled import kernel, warm_kernel

    assert warm_kernel()
    place_until(interval_graph([0, 1, 1], [2, 2, 2]), np.array([8, 4, 4]), [2, 0, 1],
                ["worst", "highest"], stop_at=100, engine="kernel")
    assert len(kernel().place_kernel.signatures) == 1


def test_more_siblings_than_the_partner_buffer_holds_plan_in_a_fresh_process() -> None:
    """200 tensors that share a first step (siblings) and have no listed partner, in a problem
    big enough for "auto" to place with the kernel: the siblings overflowed the kernel's
    partner buffer, whose growth dropped the ids gathered so far, and the process died
    (SIGSEGV, c827c4a).  Run in a subprocess so that a crash fails this test, not the run."""
    import subprocess
    import sys

    code = ("import workbench as wb\n"
            "from workbench.memory import placement\n"
            "recs = [(512, 0, 0)] * 200 + [(512, k, k) for k in range(1, 2001)]\n"
            "for engine in ('kernel', 'numpy'):\n"
            "    placement.KERNEL_MIN_TENSORS = 0 if engine == 'kernel' else 10 ** 9\n"
            "    print(wb.memory.plan_usage(recs, 'greedy_by_size').arena_bytes)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(200 * 512)] * 2
