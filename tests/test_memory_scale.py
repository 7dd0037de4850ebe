"""Near-linear memory planning: the compact relations and sweeps against the quadratic originals.

The quadratic implementations the package used before (pairwise ancestor test, per-tensor gap
loop, breadth order by live sets, pairwise overlap check) live here as oracles.  The scaling tests
count structure sizes, never time.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from tests.strategies import dags
from workbench.errors import MemoryPlanError
from workbench.memory import check_no_overlap, lifetimes, plan_memory
from workbench.memory import placement as placement_module
from workbench.memory.bounds import conflict_clique_bound
from workbench.memory.conflicts import (
    ConflictSet,
    _csr,
    _csr_by_sorting,
    interval_graph,
    pairs_graph,
)
from workbench.memory.lifetimes import _usage
from workbench.memory.placement import FIT_NAMES, place
from workbench.memory.plan import MemoryPlan, interval_pairs, parse_records, prepare
from workbench.memory.planners import PLANNERS, planners
from workbench.memory.static import breadth_order
from workbench.memory.streams import buffer_conflicts
from workbench.values.schedule import Schedule, build_schedule, clocks_before

FAST = [p for p in planners() if not PLANNERS.get(p).slow]

# ------------------------------------------------------------------ oracles (the old code)


def happens_before_test(schedule: Schedule) -> Callable[[str, str], bool]:
    """``happens_before(x, y)`` for ops of ``schedule``, from its vector clocks: O(1) a query."""
    before, column, position = clocks_before(schedule)

    def happens_before(x: str, y: str) -> bool:
        if x == y:
            return False
        if column[x] == column[y]:
            return position[x] < position[y]
        return bool(before[y][column[x]] >= position[x])

    return happens_before


def old_ancestor_conflicts(schedule: Schedule) -> set[tuple[int, int]]:
    """SOMAS's ancestor rule tested pair by pair, as lifetimes.py did before: O(T² · users)."""
    graph = schedule.graph
    planned, consumers, roots, _ = _usage(graph)
    outputs = {roots.get(t, t) for t in graph.outputs}
    producers = [graph.tensor(t).producer for t in planned]
    happens_before = happens_before_test(schedule)
    users = [consumers[t] or [producers[i]] for i, t in enumerate(planned)]
    pairs = set()
    for i in range(len(planned)):
        for j in range(i + 1, len(planned)):
            if producers[i] == producers[j]:
                pairs.add((i, j))
                continue
            dead_i = planned[i] not in outputs and all(
                happens_before(c, producers[j]) for c in users[i])
            dead_j = planned[j] not in outputs and all(
                happens_before(c, producers[i]) for c in users[j])
            if not (dead_i or dead_j):
                pairs.add((i, j))
    return pairs


def old_place(sizes: list[int], neighbors: list[list[int]], order: list[int],
              fit: str) -> list[int]:
    """The per-tensor gap loop of TFLite's greedy by size, with zero-byte tensors at offset 0."""
    offsets = [-1] * len(sizes)
    placed_at = [0] * len(sizes)
    for seq, t in enumerate(order):
        if sizes[t] == 0:
            offsets[t] = 0
            continue
        placed = sorted((offsets[p], placed_at[p], p) for p in neighbors[t]
                        if offsets[p] >= 0 and sizes[p] > 0)
        prev_end, gaps = 0, []
        for off, _, p in placed:
            if off >= prev_end:
                gaps.append((prev_end, off - prev_end))
            prev_end = max(prev_end, off + sizes[p])
        fitting = [(w, s) for s, w in gaps if w >= sizes[t]]
        chosen = None
        if fitting and fit == "best":
            chosen = min(fitting)[1]
        elif fitting and fit == "first":
            chosen = fitting[0][1]
        elif fitting and fit == "worst":
            chosen = min((-w, s) for w, s in fitting)[1]
        elif fitting:
            chosen = max(s for _, s in fitting)
        offsets[t] = prev_end if chosen is None else chosen
        placed_at[t] = seq
    return offsets


def old_breadth_order(records: list) -> list[int]:
    steps = sorted({r.first for r in records})
    live = {t: [i for i, r in enumerate(records) if r.first <= t <= r.last] for t in steps}
    breadth = {t: sum(records[i].size for i in live[t]) for t in steps}
    seen: set[int] = set()
    order: list[int] = []
    for t in sorted(steps, key=lambda s: (-breadth[s], s)):
        for i in sorted(live[t], key=lambda k: (-records[k].size, k)):
            if i not in seen:
                seen.add(i)
                order.append(i)
    return order


def pairwise_clash(plan: MemoryPlan) -> bool:
    recs, off = plan.records, plan.offsets
    pairs = interval_pairs(recs) if plan.conflicts is None else plan.conflicts
    return any(recs[i].size and recs[j].size and off[i] < off[j] + recs[j].size
               and off[j] < off[i] + recs[i].size for i, j in pairs)


# ------------------------------------------------------------------ strategies


@st.composite
def multi_stream_schedules(draw: st.DrawFn, max_ops: int = 16) -> Schedule:
    """A valid schedule of a random DAG on 2-5 random streams, sometimes with barriers."""
    graph = draw(dags(max_ops=max_ops))
    ops = list(graph.topo_order())
    streams = draw(st.integers(2, 5))
    stream_of = {op: draw(st.integers(0, streams - 1)) for op in ops}
    barriers = draw(st.lists(st.integers(0, len(ops)), max_size=2, unique=True))
    return build_schedule(graph, "random", stream_of, ops, barriers=barriers).validate()


@st.composite
def records(draw: st.DrawFn, max_records: int = 30) -> list[tuple[int, int, int]]:
    n = draw(st.integers(0, max_records))
    out = []
    for _ in range(n):
        first = draw(st.integers(0, 20))
        last = draw(st.sampled_from([first, 20, draw(st.integers(first, 20))]))
        out.append((draw(st.sampled_from([0, 1, 100, 512, 4096, 70000])), first, last))
    return out


# ------------------------------------------------------------------ relations


@settings(max_examples=120, deadline=None)
@given(schedule=multi_stream_schedules())
def test_ancestor_relation_equals_the_pairwise_one(schedule: Schedule) -> None:
    conflicts = lifetimes(schedule).conflicts
    if schedule.n_streams < 2:
        assert conflicts is None
        return
    old = old_ancestor_conflicts(schedule)
    assert isinstance(conflicts, ConflictSet)
    assert set(conflicts) == old and len(conflicts) == len(old)
    n = len(lifetimes(schedule).records)
    assert all(((i, j) in conflicts) == ((i, j) in old) for i in range(n) for j in range(i + 1, n))


@pytest.mark.parametrize("policy", ["nnc", "wavefront", "asap"])
def test_ancestor_relation_on_a_policy_schedule(policy: str) -> None:
    s = wb.schedule(wb.models.random_dag(300, seed=3), policy)
    assert set(lifetimes(s).conflicts or ()) == old_ancestor_conflicts(s)


@settings(max_examples=120, deadline=None)
@given(schedule=multi_stream_schedules(), data=st.data())
def test_buffer_conflicts_with_several_writers_match_the_pairwise_rule(schedule: Schedule,
                                                                      data: st.DataObject) -> None:
    """Buffers written by several ops (in-place concat slices,
    :mod:`workbench.executors.gpu.layout`): the
    sweeps against the pairwise rule the launch-plan layout used to apply."""
    ops = list(schedule.issue_order)
    n = data.draw(st.integers(1, 12))
    writers = [data.draw(st.lists(st.sampled_from(ops), min_size=1, max_size=3, unique=True))
               for _ in range(n)]
    readers = [data.draw(st.lists(st.sampled_from(ops), max_size=3, unique=True))
               for _ in range(n)]
    users = [sorted({*w, *r}, key=ops.index) for w, r in zip(writers, readers, strict=True)]
    outputs = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    happens_before = happens_before_test(schedule)

    def dead_before(i: int, j: int) -> bool:
        return not outputs[i] and all(happens_before(u, w) for u in users[i] for w in writers[j])

    expected = {(i, j) for i in range(n) for j in range(i + 1, n)
                if not (dead_before(i, j) or dead_before(j, i))}
    relation = buffer_conflicts(schedule, users, writers, outputs)
    got = ConflictSet(relation)
    assert set(got) == expected and len(got) == len(expected)
    assert all(relation.conflict(i, j) == ((min(i, j), max(i, j)) in expected)
               for i in range(n) for j in range(n) if i != j)


@settings(max_examples=150, deadline=None)
@given(items=records())
def test_interval_graph_lists_every_overlap(items: list) -> None:
    recs = parse_records(items)
    graph = interval_graph([r.first for r in recs], [r.last for r in recs])
    pairs = interval_pairs(recs)
    assert sorted(ConflictSet(graph)) == pairs and len(ConflictSet(graph)) == len(pairs)
    n = graph.n  # sorted, and the implicit rules as conflict() states them
    assert list(ConflictSet(graph)) == [(i, j) for i in range(n) for j in range(i + 1, n)
                                        if graph.conflict(i, j)]
    assert all(graph.partners(i).tolist()
               == [j for j in range(n) if j != i and graph.conflict(i, j)] for i in range(n))
    degree = [0] * len(recs)
    for i, j in pairs:
        degree[i] += 1
        degree[j] += 1
    assert graph.degrees.tolist() == degree


@settings(max_examples=60, deadline=None)
@given(schedule=multi_stream_schedules(max_ops=12), alignment=st.sampled_from([1, 512]))
def test_clique_bound_over_the_skeleton_equals_the_pairwise_network(schedule: Schedule,
                                                                    alignment: int) -> None:
    lt = lifetimes(schedule)
    if lt.conflicts is None:
        return
    fast = conflict_clique_bound(lt.records, lt.conflicts, alignment=alignment)
    assert fast == conflict_clique_bound(lt.records, frozenset(lt.conflicts), alignment=alignment)


# ------------------------------------------------------------------ placement and planners


@settings(max_examples=150, deadline=None)
@given(items=records(), data=st.data(), fold=st.sampled_from([1, 3, 256]))
def test_placement_equals_the_per_tensor_gap_loop(items: list, data: st.DataObject,
                                                  fold: int) -> None:
    recs = parse_records(items)
    n = len(recs)
    extra = data.draw(st.lists(st.tuples(st.integers(0, max(n - 1, 0)),
                                         st.integers(0, max(n - 1, 0))), max_size=8))
    pairs = set(interval_pairs(recs)) | {(min(a, b), max(a, b)) for a, b in extra if a != b}
    explicit = data.draw(st.booleans()) and n > 0
    graph = (pairs_graph(n, pairs) if explicit
             else interval_graph([r.first for r in recs], [r.last for r in recs]))
    relation = pairs if explicit else set(interval_pairs(recs))
    neighbors: list[list[int]] = [[] for _ in range(n)]
    for i, j in relation:
        neighbors[i].append(j)
        neighbors[j].append(i)
    order = data.draw(st.permutations(range(n)))
    sizes = [r.size for r in recs]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(placement_module, "FOLD_BATCH", fold)  # fold the tails' step functions often
        rows = place(graph, sizes, order, list(FIT_NAMES))
    for fit, row in zip(FIT_NAMES, rows, strict=True):
        assert row.tolist() == old_place(sizes, neighbors, list(order), fit), fit


@settings(max_examples=100, deadline=None)
@given(items=records())
def test_breadth_order_equals_the_live_set_version(items: list) -> None:
    recs = parse_records(items)
    assert breadth_order(prepare(recs)) == old_breadth_order(list(recs))


@settings(max_examples=40, deadline=None)
@given(schedule=multi_stream_schedules(max_ops=14))
def test_plans_of_random_multi_stream_schedules_are_overlap_free(schedule: Schedule) -> None:
    for planner in FAST:
        plan = plan_memory(schedule, planner)
        check_no_overlap(plan)
        assert not pairwise_clash(plan)
        assert plan.arena_bytes >= plan.lower_bound


# ------------------------------------------------------------------ the oracle's sweeps


@settings(max_examples=200, deadline=None)
@given(items=records(max_records=12), data=st.data(), explicit=st.booleans())
def test_sweeping_checker_agrees_with_the_pairwise_check(items: list, data: st.DataObject,
                                                         explicit: bool) -> None:
    recs = parse_records(items)
    offsets = tuple(data.draw(st.integers(0, 8)) * 64 for _ in recs)
    conflicts = frozenset(interval_pairs(recs)) if explicit else None
    arena = max([o + r.size for o, r in zip(offsets, recs, strict=True)] + [1 << 20])
    plan = MemoryPlan("random", recs, offsets, arena, 0, conflicts=conflicts)
    if pairwise_clash(plan):
        with pytest.raises(MemoryPlanError, match="overlaps"):
            check_no_overlap(plan)
    else:
        check_no_overlap(plan)


# ------------------------------------------------------------------ scaling (counts, not time)


def test_interval_relation_stays_linear_where_the_pair_list_is_quadratic() -> None:
    # Graph outputs of a random DAG live to the last step: listing their pairs is quadratic, the
    # compact graph keeps them as tails and lists only the short-lived overlaps.
    sizes = {}
    for n in (1000, 4000):
        lt = lifetimes(wb.schedule(wb.models.random_dag(n, seed=0), "serial"))
        recs = lt.records
        graph = interval_graph([r.first for r in recs], [r.last for r in recs])
        sizes[n] = (len(graph.idx), len(interval_pairs(recs)), graph.n_pairs)
    (listed_1k, all_1k, count_1k), (listed_4k, all_4k, count_4k) = sizes[1000], sizes[4000]
    assert count_1k == all_1k and count_4k == all_4k
    assert listed_4k < 5 * listed_1k  # about 4x: linear
    assert all_4k > 6 * all_1k  # the full pair list grows about 8x, and faster beyond


def test_multi_stream_planning_lists_no_output_pairs() -> None:
    s = wb.schedule(wb.models.random_dag(600, seed=1), "nnc")
    conflicts = lifetimes(s).conflicts
    assert isinstance(conflicts, ConflictSet)
    graph = conflicts.graph
    assert graph.tails.sum() > 10
    births = graph.births
    for i in map(int, graph.tails.nonzero()[0]):  # a tail lists only tensors born before it
        assert (births[graph.row(i)] < births[i]).all()
    assert len(conflicts) > len(graph.idx) // 2  # the tail rule covers the rest


def test_the_listed_pairs_are_sorted_only_when_a_planner_reads_them() -> None:
    """The naive plan and the clique bound (it reads the skeleton) leave the listed pairs as
    they came from the sweep; the first read builds the CSR, which is the relation's."""
    s = wb.schedule(wb.models.random_dag(400, seed=2), "nnc")
    lt = lifetimes(s)
    graph = lt.conflicts.graph
    naive = wb.memory.plan_usage(lt.records, "naive", conflicts=lt.conflicts)
    bound = conflict_clique_bound(lt.records, lt.conflicts, alignment=naive.alignment)
    assert not graph.listed.built
    assert plan_memory(s, "naive").lower_bound == bound
    assert set(lt.conflicts) == old_ancestor_conflicts(s)
    assert graph.listed.built
    check_no_overlap(wb.memory.plan_usage(lt.records, "greedy_by_size", conflicts=lt.conflicts))


def test_tensors_read_by_a_sink_are_tails_and_the_listed_pairs_stay_near_linear() -> None:
    """A tensor that a sink op reads is never dead on any stream, so it conflicts with every later
    tensor: a tail.  Listing those pairs made a 40k-op nnc schedule's relation 164M pairs."""
    s = wb.schedule(wb.models.random_dag(4000, seed=1), "nnc")
    lt = lifetimes(s)
    graph = lt.conflicts.graph
    sinks = {op.id for op in s.graph.ops if not s.graph.successors(op.id)}
    read_by_sink = [k for k, r in enumerate(lt.records)
                    if any(c in sinks for c in s.graph.consumers(r.name))]
    assert read_by_sink and graph.tails[read_by_sink].all()
    assert len(graph.idx) // 2 < 150 * len(lt.records)  # ~500 per tensor before


def test_somas_on_a_random_dag_is_deterministic_and_valid() -> None:
    rng = random.Random(0)
    g = wb.models.random_dag(800, seed=rng.randrange(1000))
    for policy in ("serial", "nnc"):
        s = wb.schedule(g, policy)
        a, b = plan_memory(s, "somas"), plan_memory(s, "somas")
        assert a.offsets == b.offsets and a.arena_bytes == b.arena_bytes
        check_no_overlap(a)
        assert a.arena_bytes <= plan_memory(s, "greedy_by_size", alignment=512).arena_bytes


def _check_pruned_arenas(fast: MemoryPlan, full: MemoryPlan) -> None:
    """Every combination the pruned search ran has the unpruned arena; each one it stopped (or
    skipped) is listed at a value between the winner's arena and its own full arena."""
    for combo, arena in fast.notes["arenas"].items():
        if combo in fast.notes["pruned"]:
            assert full.arena_bytes <= arena <= full.notes["arenas"][combo]
        else:
            assert arena == full.notes["arenas"][combo]


@settings(max_examples=60, deadline=None)
@given(graph=dags(max_ops=24), policy=st.sampled_from(["serial", "nnc", "asap", "wavefront"]),
       alignment=st.sampled_from([1, 512]))
def test_somas_stopping_at_the_lower_bound_keeps_the_plan(graph: wb.Graph, policy: str,
                                                          alignment: int) -> None:
    """Once the best arena equals the lower bound (the live-bytes peak of a single stream, the
    heaviest clique of a multi-stream schedule's conflict set) the later orderings are not run:
    the winner, its offsets and every run combination's arena are those of the unpruned search,
    and each skipped combination is listed as pruned at a value no full run of it undercuts."""
    from workbench.memory.somas import plan_somas

    lt = lifetimes(wb.schedule(graph, policy))
    full = plan_somas(lt.records, alignment=alignment, conflicts=lt.conflicts, prune=False)
    fast = plan_somas(lt.records, alignment=alignment, conflicts=lt.conflicts)
    assert fast.offsets == full.offsets and fast.arena_bytes == full.arena_bytes
    assert (fast.notes["ordering"], fast.notes["fit"]) == (full.notes["ordering"],
                                                          full.notes["fit"])
    assert set(fast.notes["arenas"]) == set(full.notes["arenas"])
    bound = conflict_clique_bound(lt.records, lt.conflicts, alignment=alignment)
    assert full.arena_bytes >= bound
    _check_pruned_arenas(fast, full)


def test_somas_skips_the_orderings_after_one_that_meets_the_bound() -> None:
    """nnc's schedule of nasnet_a_large (unfused): size/best already reserves the heaviest
    clique, so the five later orderings (15 combinations) are listed as pruned at it, and
    plan_memory reports that bound without computing it again."""
    s = wb.schedule(wb.models.nasnet_a_large(fused=False), "nnc")
    plan = plan_memory(s, "somas")
    assert (plan.notes["ordering"], plan.notes["fit"]) == ("size", "best")
    assert plan.arena_bytes == plan.lower_bound
    later = [combo for combo in plan.notes["pruned"] if combo[0] != "size"]
    assert len(later) == 15 and all(plan.notes["arenas"][c] == plan.lower_bound for c in later)
    assert "conflict_clique_bound" not in plan.notes
    lt = lifetimes(s)
    assert plan.lower_bound == conflict_clique_bound(lt.records, lt.conflicts,
                                                     alignment=plan.alignment)


@settings(max_examples=120, deadline=None)
@given(items=records(max_records=25), alignment=st.sampled_from([1, 512]))
def test_pruned_somas_picks_the_same_plan(items: list, alignment: int) -> None:
    from workbench.memory.somas import plan_somas

    full = plan_somas(items, alignment=alignment, prune=False)
    fast = plan_somas(items, alignment=alignment)
    assert fast.offsets == full.offsets and fast.arena_bytes == full.arena_bytes
    assert (fast.notes["ordering"], fast.notes["fit"]) == (full.notes["ordering"],
                                                          full.notes["fit"])
    assert full.notes["pruned"] == []
    _check_pruned_arenas(fast, full)


def test_conflict_graph_indices_past_int32_products() -> None:
    # row * n + column overflows 32 bits once n > 46,340: keys must be computed in 64 bits
    n = 100_000
    pairs = {(0, n - 1), (n - 2, n - 1), (50_000, 70_000)}
    graph = pairs_graph(n, pairs)
    assert sorted(ConflictSet(graph)) == sorted(pairs) and len(ConflictSet(graph)) == 3
    assert graph.row(n - 1).tolist() == [0, n - 2]


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 60).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=200))))
def test_counting_csr_equals_the_sorted_conversion_and_the_pairs(case: tuple) -> None:
    """The compiled counting passes (_csr's kernel) give SciPy's sorted conversion's arrays,
    and each row is exactly its partners, ascending, however the pairs come ordered."""
    n, raw = case
    pairs = list(dict.fromkeys((min(i, j), max(i, j)) for i, j in raw if i != j))
    random.Random(n).shuffle(pairs)
    directed = [(j, i) if k % 2 else (i, j) for k, (i, j) in enumerate(pairs)]
    rows = np.array([p[0] for p in directed], dtype=np.int32)
    cols = np.array([p[1] for p in directed], dtype=np.int32)
    ref_ptr, ref_idx = _csr_by_sorting(n, rows, cols)
    for engine in ("scipy", "kernel"):
        ptr, idx = _csr(n, rows, cols, engine=engine)
        assert ptr.dtype == np.int64 and idx.dtype == np.int32
        assert ptr.tolist() == ref_ptr.tolist() and idx.tolist() == ref_idx.tolist()
    for i in range(n):
        want = sorted({j for a, b in pairs for j in (a, b) if i in (a, b) and j != i})
        assert idx[ptr[i]:ptr[i + 1]].tolist() == want


def test_csr_engines_and_their_choice() -> None:
    """auto compiles from CSR_KERNEL_MIN_TENSORS tensors; a typo in the engine is refused."""
    from workbench.memory import conflicts

    rng = np.random.default_rng(3)
    n = conflicts.CSR_KERNEL_MIN_TENSORS
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, n, size=(5_000, 2)) if a < b}
    rows = np.array([a for a, _ in sorted(pairs)], dtype=np.int32)
    cols = np.array([b for _, b in sorted(pairs)], dtype=np.int32)
    got = [conflicts._csr(n, rows, cols, engine=e) for e in ("auto", "kernel", "scipy")]
    assert all(np.array_equal(g[0], got[2][0]) and np.array_equal(g[1], got[2][1]) for g in got)
    with pytest.raises(ValueError, match="unknown CSR engine 'numba'"):
        conflicts._csr(n, rows, cols, engine="numba")
