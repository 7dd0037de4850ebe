"""Memory planners: common invariants for every registered planner, hand-worked cases, the oracle,
bad input, and the BestFit pool replay (seed 004 "Memory Management"; notes/memory_planners.md)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import MemoryPlanError, OptionError
from workbench.memory.bounds import live_bytes_curve, peak_live_bytes
from workbench.memory.check import check_no_overlap
from workbench.memory.exact import plan_exact
from workbench.memory.plan import (
    MemoryPlan,
    UsageRecord,
    check_conflicts,
    interval_pairs,
    parse_records,
)
from workbench.memory.planners import PLANNERS, TEST_OPTIONS, plan_usage, planners
from workbench.memory.pool import events_from_records, simulate_pool
from workbench.memory.somas import DEFAULT_FITS_OF, ORDERINGS, plan_somas
from workbench.memory.static import (
    FITS,
    plan_greedy_by_breadth,
    plan_greedy_by_size,
    plan_naive,
)

# Pisarchyk & Lee 2020, Fig. 1 (notes §3): naive 234, lower bound 124, greedy by size 124.
PAPER = [
    (32, 0, 1),
    (28, 1, 4),
    (36, 2, 5),
    (16, 3, 5),
    (8, 4, 5),
    (64, 5, 7),
    (10, 6, 8),
    (40, 7, 8),
]
# TFLite memory_management_test.cc "ComplexRecords": naive 192, greedy by size offsets total 96.
COMPLEX = [
    (32, 0, 1),
    (32, 1, 4),
    (8, 2, 5),
    (16, 3, 5),
    (8, 4, 5),
    (64, 5, 7),
    (8, 6, 8),
    (8, 7, 8),
    (16, 8, 9),
]


# ------------------------------------------------------------------ strategies


@st.composite
def usage_items(draw: st.DrawFn, max_records: int = 25) -> list[tuple[int, int, int]]:
    n = draw(st.integers(0, max_records))
    items = []
    for _ in range(n):
        first = draw(st.integers(0, 30))
        last = draw(st.integers(first, 30))
        items.append((draw(st.integers(0, 4096)), first, last))
    return items


@st.composite
def items_with_conflicts(
    draw: st.DrawFn, max_records: int = 25
) -> tuple[list[tuple[int, int, int]], set[tuple[int, int]]]:
    """Records plus an explicit conflict set: every interval-overlapping pair, plus random extras
    (as a multi-stream schedule adds pairs that may run at the same time)."""
    items = draw(usage_items(max_records))
    recs = parse_records(items)
    conflicts = set(interval_pairs(recs))
    n = len(items)
    if n >= 2:
        extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=20))
        conflicts |= {(min(i, j), max(i, j)) for i, j in extra if i != j}
    return items, conflicts


def _small_enough(planner: str, n: int) -> bool:
    return not PLANNERS.get(planner).slow or n <= 8


def _plan(planner: str, items: list, **options: object) -> MemoryPlan:
    return plan_usage(items, planner, **TEST_OPTIONS.get(planner, {}), **options)


# ------------------------------------------------------------------ common invariants (R4)


@pytest.mark.parametrize("planner", planners())
@settings(max_examples=100, deadline=None)
@given(data=st.data(), alignment=st.sampled_from([1, 1, 8, 512]))
def test_planner_invariants(planner: str, data: st.DataObject, alignment: int) -> None:
    max_records = 8 if PLANNERS.get(planner).slow else 25
    items = data.draw(usage_items(max_records))
    plan = _plan(planner, items, alignment=alignment)
    check_no_overlap(plan)
    assert plan.planner == planner
    assert plan.arena_bytes >= plan.lower_bound == peak_live_bytes(items, alignment=alignment)
    assert plan.arena_bytes <= sum(-(-s // alignment) * alignment for s, _, _ in items)  # <= naive
    assert _plan(planner, items, alignment=alignment) == plan  # deterministic


@pytest.mark.parametrize("planner", planners())
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_planner_invariants_with_explicit_conflicts(planner: str, data: st.DataObject) -> None:
    max_records = 8 if PLANNERS.get(planner).slow else 25
    items, conflicts = data.draw(items_with_conflicts(max_records))
    plan = _plan(planner, items, conflicts=conflicts)
    assert plan.conflicts == frozenset(conflicts)
    check_no_overlap(plan)
    assert plan.arena_bytes >= plan.lower_bound
    assert _plan(planner, items, conflicts=conflicts) == plan


@settings(max_examples=150, deadline=None)
@given(items=usage_items(), alignment=st.sampled_from([1, 512]))
def test_somas_never_worse_than_greedy_by_size(items: list, alignment: int) -> None:
    somas = plan_somas(items, alignment=alignment)
    greedy = plan_greedy_by_size(items, alignment=alignment)
    assert somas.arena_bytes <= greedy.arena_bytes
    assert somas.notes["arenas"][("size", "best")] == greedy.arena_bytes
    assert somas.arena_bytes == min(somas.notes["arenas"].values())
    assert len(somas.notes["arenas"]) == 19  # 6 orderings x 4 fits, less 5 that never won
    assert set(plan_somas(items, alignment=alignment, fits=list(FITS)).notes["arenas"]) == {
        (o, f) for o in ORDERINGS for f in FITS}


@settings(max_examples=150, deadline=None)
@given(items=usage_items(), alignment=st.sampled_from([1, 512]))
def test_somas_defaults_run_the_combinations_that_won(items: list, alignment: int) -> None:
    """Without ``fits`` each ordering runs its DEFAULT_FITS_OF: those combinations give the
    arenas the full search gives them, and the plan is the first strict minimum among them (a
    left-out combination may still be smaller on such random records: the full search is then
    better, never worse)."""
    default = plan_somas(items, alignment=alignment, prune=False)
    full = plan_somas(items, alignment=alignment, fits=list(FITS), prune=False)
    run = [(o, f) for o in ORDERINGS for f in DEFAULT_FITS_OF[o]]
    assert list(default.notes["arenas"]) == run and len(run) == 19
    assert all(full.notes["arenas"][c] == a for c, a in default.notes["arenas"].items())
    low = min(default.notes["arenas"].values())
    winner = next(c for c in run if default.notes["arenas"][c] == low)
    assert default.arena_bytes == low >= full.arena_bytes
    assert (default.notes["ordering"], default.notes["fit"]) == winner


@settings(max_examples=60, deadline=None)
@given(items=usage_items(max_records=7))
def test_exact_is_at_most_every_heuristic(items: list) -> None:
    exact = plan_exact(items, time_limit_s=5.0)
    assert exact.notes["optimal"] is True
    for fn in (plan_greedy_by_size, plan_greedy_by_breadth, plan_somas):
        assert exact.arena_bytes <= fn(items, alignment=1).arena_bytes


# ------------------------------------------------------------------ hand-worked cases


def test_paper_example_totals() -> None:
    assert plan_naive(PAPER).arena_bytes == 234
    greedy = plan_greedy_by_size(PAPER)
    assert greedy.arena_bytes == 124 == greedy.lower_bound
    assert greedy.offsets == (0, 32, 64, 100, 116, 0, 104, 64)
    assert plan_somas(PAPER, alignment=1).arena_bytes == 124
    assert plan_greedy_by_breadth(PAPER).arena_bytes == 124
    exact = plan_exact(PAPER)
    assert exact.arena_bytes == 124 and exact.notes["optimal"]
    for planner in planners():
        check_no_overlap(plan_usage(PAPER, planner, alignment=1))


def test_tflite_complex_records() -> None:
    plan = plan_greedy_by_size(COMPLEX)
    assert plan.offsets == (0, 32, 80, 64, 88, 0, 64, 72, 0)
    assert plan.arena_bytes == 96 == plan.lower_bound
    assert plan_naive(COMPLEX).arena_bytes == 192


def test_tflite_offsets_with_alignment() -> None:
    # TFLite "OffsetAssignmentWithAlignment": offsets (0, 128, 0, 128, 0). TFLite reports a total
    # of 160 (= 128 + 32, unrounded); our arena counts the aligned size: 128 + 128 = 256.
    items = [(16, 0, 1), (8, 1, 2), (64, 2, 3), (32, 3, 4), (8, 4, 5)]
    plan = plan_greedy_by_size(items, alignment=128)
    assert plan.offsets == (0, 128, 0, 128, 0)
    assert plan.arena_bytes == 256 == plan.lower_bound
    check_no_overlap(plan)


@pytest.mark.parametrize("planner", ["greedy_by_size", "greedy_by_breadth", "somas", "exact"])
def test_chain_optimum_is_largest_adjacent_pair(planner: str) -> None:
    # A chain: each tensor overlaps only its neighbours. Breadths 10+20=30, 20+5=25, 5+30=35,
    # 30+8=38: lower bound 38. Alternating two "stacks" (even tensors low, odd tensors high, or as
    # greedy does it) reaches it, so the optimum is 38.
    items = [(10, 0, 1), (20, 1, 2), (5, 2, 3), (30, 3, 4), (8, 4, 5)]
    plan = plan_usage(items, planner, alignment=1)
    check_no_overlap(plan)
    assert plan.arena_bytes == 38 == plan.lower_bound


@pytest.mark.parametrize(
    ("items", "optimum"),
    [
        # All three live together: nothing can share, optimum = 5 + 7 + 3 = 15.
        ([(5, 0, 2), (7, 0, 2), (3, 0, 2)], 15),
        # Staircase: D (steps 0..3) under everything; A (0..1), B (1..2), C (2..3) of 4 bytes.
        # Step 1 and 2 hold three tensors = 12 (lower bound). D at 0, A at 4, B at 8, C at 4 -> 12.
        ([(4, 0, 1), (4, 1, 2), (4, 2, 3), (4, 0, 3)], 12),
        # Greedy by size is not optimal here. A=(4,0..0) B=(4,3..3) C=(4,0..1) D=(3,1..3).
        # Breadth: step 0 A+C=8, 1 C+D=7, 2 D=3, 3 B+D=7 -> bound 8. Greedy places A@0, B@0 (no
        # placed conflict), C@4 (above A), then D conflicts with B[0,4) and C[4,8) -> D@8: 11.
        # Optimum 8: C@0, A@4, D@4, B@0 (C|A, C|D and D|B are all disjoint).
        ([(4, 0, 0), (4, 3, 3), (4, 0, 1), (3, 1, 3)], 8),
        # Two disjoint phases: phase 1 (0..1) 6+2, phase 2 (2..3) 3+3+3; everything of phase 2
        # may reuse phase 1's bytes, so optimum = max(8, 9) = 9.
        ([(6, 0, 1), (2, 0, 1), (3, 2, 3), (3, 2, 3), (3, 2, 3)], 9),
    ],
)
def test_hand_worked_optimum(items: list, optimum: int) -> None:
    exact = plan_exact(items)
    check_no_overlap(exact)
    assert exact.arena_bytes == optimum and exact.notes["optimal"]
    for planner in planners():
        plan = plan_usage(items, planner, alignment=1)
        check_no_overlap(plan)
        assert plan.arena_bytes >= optimum


def test_greedy_by_size_is_suboptimal_on_the_hand_case() -> None:
    items = [(4, 0, 0), (4, 3, 3), (4, 0, 1), (3, 1, 3)]
    greedy = plan_greedy_by_size(items)
    assert greedy.offsets == (0, 0, 4, 8) and greedy.arena_bytes == 11
    assert plan_somas(items, alignment=1).arena_bytes == 8  # another ordering/fit finds it


def test_multi_stream_explicit_conflicts_keep_tensors_apart() -> None:
    # Two branches on two streams: "left" runs at step 0..1 and "right" at 2..3 in the recorded
    # order, but with no event between them they may run at the same time, so they conflict.
    items = [(100, 0, 1, "left"), (100, 2, 3, "right"), (50, 0, 3, "input")]
    interval_only = plan_greedy_by_size(items)
    assert interval_only.offsets[0] == interval_only.offsets[1]  # would share bytes
    conflicts = {(0, 1), (0, 2), (1, 2)}
    for planner in planners():
        plan = plan_usage(items, planner, alignment=1, conflicts=conflicts)
        check_no_overlap(plan)
        left, right = plan.range_of(0), plan.range_of(1)
        assert left.stop <= right.start or right.stop <= left.start
        assert plan.arena_bytes >= 250
    # The same plan judged as a plain interval plan is fine too (a superset of conflicts).
    with pytest.raises(MemoryPlanError, match="marked as conflicting"):
        check_no_overlap(
            MemoryPlan(
                "x",
                interval_only.records,
                interval_only.offsets,
                interval_only.arena_bytes,
                interval_only.lower_bound,
                conflicts=frozenset(conflicts),
            )
        )


def test_somas_notes_and_alignment() -> None:
    plan = plan_somas(PAPER)  # default alignment 512: every tensor takes 512 bytes
    check_no_overlap(plan)
    assert plan.alignment == 512 and all(o % 512 == 0 for o in plan.offsets)
    assert plan.lower_bound == 4 * 512  # step 5: tensors 2, 3, 4 and 5 are live
    assert plan.arena_bytes == 4 * 512
    # Rounded to 512, greedy by size (ordering "size", fit "best") needs 5 slots: 2560 bytes;
    # the lifetime ordering is the first combination that reaches the bound.
    assert plan.notes["arenas"][("size", "best")] == 2560
    assert plan_greedy_by_size(PAPER, alignment=512).arena_bytes == 2560
    assert (plan.notes["ordering"], plan.notes["fit"]) == ("lifetime", "best")
    only = plan_somas(PAPER, alignment=1, orderings=["first_step"], fits=["first"])
    assert list(only.notes["arenas"]) == [("first_step", "first")]
    with pytest.raises(OptionError, match="unknown somas ordering 'bogus'"):
        plan_somas(PAPER, orderings=["bogus"])
    with pytest.raises(OptionError, match="at least one fit"):
        plan_somas(PAPER, fits=[])


def test_empty_and_zero_size_records() -> None:
    for planner in planners():
        empty = plan_usage([], planner)
        assert empty.arena_bytes == 0 == empty.lower_bound and empty.ratio == 1.0
        zeros = plan_usage([(0, 0, 3), (0, 1, 2), (5, 0, 3)], planner, alignment=1)
        check_no_overlap(zeros)
        assert zeros.arena_bytes == 5


def test_plan_helpers_and_bounds() -> None:
    plan = plan_greedy_by_size(parse_records([(32, 0, 1, "a"), (28, 1, 4, "b"), (8, 3, 3)]))
    frame = plan.to_frame()
    assert list(frame.columns) == ["name", "size", "first", "last", "offset", "end"]
    assert list(frame["name"]) == ["a", "b", "2"]
    assert list(frame["end"]) == [o + s for o, s in zip(plan.offsets, (32, 28, 8), strict=True)]
    assert list(plan.conflicting_pairs()) == [(0, 1), (1, 2)]
    assert plan.range_of(1) == range(plan.offsets[1], plan.offsets[1] + 28)
    assert live_bytes_curve(plan.records) == [32, 60, 28, 36, 28]
    assert plan.lower_bound == 60 and plan.ratio == plan.arena_bytes / 60


# ------------------------------------------------------------------ the oracle


def test_oracle_catches_overlapping_plan() -> None:
    recs = parse_records([(32, 0, 1, "a"), (28, 1, 4, "b")])
    bad = MemoryPlan("wrong", recs, offsets=(0, 16), arena_bytes=64, lower_bound=60)
    with pytest.raises(MemoryPlanError) as err:
        check_no_overlap(bad)
    msg = str(err.value)
    assert "\n" not in msg
    assert "'a' bytes [0, 32) steps 0..1" in msg and "'b' bytes [16, 44) steps 1..4" in msg


@pytest.mark.parametrize(
    ("offsets", "arena", "bound", "alignment", "match"),
    [
        ((0, 32), 50, 60, 1, "ends past the arena"),
        ((0, 32), 60, 61, 1, "below the lower bound"),
        ((0, 33), 64, 60, 2, "not 2-byte aligned"),
        ((-4, 32), 64, 60, 1, "bad offset"),
    ],
)
def test_oracle_catches_other_defects(
    offsets: tuple, arena: int, bound: int, alignment: int, match: str
) -> None:
    recs = parse_records([(32, 0, 1, "a"), (28, 1, 4, "b")])
    with pytest.raises(MemoryPlanError, match=match):
        check_no_overlap(MemoryPlan("wrong", recs, offsets, arena, bound, alignment))


def test_oracle_recomputes_the_peak() -> None:
    # An explicit conflict set that wrongly omits the overlapping pair, and a made-up bound of 0:
    # the oracle's own brute-force peak (60) still exposes the 32-byte arena.
    recs = parse_records([(32, 0, 1, "a"), (28, 1, 4, "b")])
    bad = MemoryPlan("wrong", recs, (0, 0), 32, 0, conflicts=frozenset())
    with pytest.raises(MemoryPlanError, match="below the peak of live bytes 60"):
        check_no_overlap(bad)


def test_oracle_accepts_overlap_of_non_conflicting_tensors() -> None:
    recs = parse_records([(32, 0, 1), (28, 2, 4)])
    check_no_overlap(MemoryPlan("ok", recs, (0, 0), 32, 32))


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("items", "conflicts", "match"),
    [
        ([(8, 0, 1), (-5, 1, 2, "neg")], None, "usage record 1 'neg': size must be a non-negative"),
        ([(8, 3, 1, "x")], None, "usage record 0 'x': last step 1 is before first step 3"),
        ([(8, -1, 1)], None, "usage record 0: first must be a non-negative integer"),
        ([(8.5, 0, 1)], None, "size must be a non-negative integer, got 8.5"),
        ([(8, 0)], None, "usage record 0: expected"),
        ([(8, 0, 1)] * 4, [(3, 7)], r"unknown tensor index 7 in conflict \(3, 7\)"),
        ([(8, 0, 1)] * 2, [(1, 1)], "pairs a tensor with itself"),
        ([(8, 0, 1, "p"), (8, 1, 2, "q")], [], r"conflict set misses \(0, 1\)"),
    ],
)
def test_bad_input_is_one_line_error(items: list, conflicts: list | None, match: str) -> None:
    for planner in planners():
        with pytest.raises(MemoryPlanError, match=match) as err:
            plan_usage(items, planner, conflicts=conflicts)
        assert "\n" not in str(err.value)


def test_check_conflicts_normalises() -> None:
    assert check_conflicts([(2, 0), [1, 2]], 3) == frozenset({(0, 2), (1, 2)})


def test_registry_errors() -> None:
    with pytest.raises(MemoryPlanError, match=r"unknown memory planner 'nope' \(known: exact"):
        plan_usage(PAPER, "nope")
    with pytest.raises(OptionError, match="has no option 'colour'"):
        plan_usage(PAPER, "naive", colour="red")
    with pytest.raises(OptionError, match="alignment must be a positive integer"):
        plan_usage(PAPER, "greedy_by_size", alignment=0)
    with pytest.raises(OptionError, match="at most 40 tensors"):
        plan_exact([(1, 0, 0)] * 41)
    assert planners() == ["naive", "greedy_by_size", "greedy_by_breadth", "somas", "exact"]
    assert isinstance(parse_records([UsageRecord(1, 0, 0)])[0], UsageRecord)


def test_exact_under_tiny_time_limit_is_valid() -> None:
    # 14 tensors whose greedy plan is above the bound; whether or not the 10 ms limit stops the
    # solver, the result is a valid plan no worse than greedy by size.
    items = [(4, 0, 0), (4, 3, 3), (4, 0, 1), (3, 1, 3)] * 3 + [(5, 0, 3), (7, 2, 3)]
    plan = plan_exact(items, time_limit_s=0.01)
    check_no_overlap(plan)
    assert isinstance(plan.notes["optimal"], bool)
    greedy = plan_greedy_by_size(items).arena_bytes
    assert plan.arena_bytes <= greedy
    if plan.notes["optimal"]:  # a proven optimum is the optimum (the solver without a limit)
        assert plan.arena_bytes == plan_exact(items).arena_bytes
    else:  # stopped by the limit: it says so, and what it returns is still a valid plan
        assert plan.arena_bytes >= plan.lower_bound


def test_exact_falls_back_to_greedy_when_the_solver_finds_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import workbench.memory.exact as exact_module

    monkeypatch.setattr(exact_module, "_solve", lambda *args: ([], False))  # time limit, no x
    items = [(4, 0, 0), (4, 3, 3), (4, 0, 1), (3, 1, 3)]
    plan = exact_module.plan_exact(items)
    assert plan.notes == {"optimal": False, "solver": "greedy_by_size"}
    assert plan.offsets == plan_greedy_by_size(items).offsets
    check_no_overlap(plan)


# ------------------------------------------------------------------ BestFit pool


def test_pool_hand_worked_replay() -> None:
    # Alignment 512, blocks of 4096 bytes.
    events = [
        (0.0, "alloc", "a", 1000),  # 1024; empty pool -> expansion #1 (block 0, 4096): a@0
        (1.0, "alloc", "b", 2048),  # idle [1024,4096) split: b@1024, idle [3072,4096)
        (2.0, "alloc", "c", 100),  # 512 from [3072,4096): c@3072, idle [3584,4096)
        (3.0, "free", "a", 0),  # idle [0,1024) (next is b: no merge); idle total 1536
        (4.0, "alloc", "d", 1500),  # 1536: no single idle buf fits, total does -> defrag #1:
        #                             b->0, c->2048, idle [2560,4096): d@2560, nothing left
        (5.0, "alloc", "e", 5000),  # 5120: nothing idle -> expansion #2, 4096*2 = 8192: e@(1,0)
        (6.0, "free", "b", 0),  # idle [0,2048)
        (6.0, "free", "c", 0),  # idle [2048,2560) merges with [0,2048) -> [0,2560)
        (7.0, "alloc", "f", 2560),  # exactly [0,2560): no split
    ]
    r = simulate_pool(events, chunk_bytes=4096)
    assert r.n_expansions == 2 and r.n_defrags == 1
    assert r.offsets == {
        "a": (0, 0),
        "b": (0, 1024),
        "c": (0, 3072),
        "d": (0, 2560),
        "e": (1, 0),
        "f": (0, 0),
    }
    t = r.timeline
    assert list(t["in_use"]) == [1024, 3072, 3584, 2560, 4096, 9216, 7168, 6656, 9216]
    assert list(t["reserved"]) == [4096] * 5 + [12288] * 4
    assert list(t["largest_free"]) == [3072, 1024, 512, 1024, 0, 3072, 3072, 3072, 3072]
    assert t["fragmentation"][3] == pytest.approx(1 - 1024 / 1536)
    assert t["fragmentation"][7] == pytest.approx(1 - 3072 / (2560 + 3072))
    assert r.peak_in_use == 9216 and r.peak_reserved == 12288

    no_defrag = simulate_pool(events, chunk_bytes=4096, defragment=False)
    assert no_defrag.n_defrags == 0 and no_defrag.n_expansions == 3  # d gets its own block
    assert no_defrag.offsets["d"] == (1, 0)


@settings(max_examples=80, deadline=None)
@given(
    items=usage_items(),
    alignment=st.sampled_from([1, 512]),
    chunk=st.sampled_from([512, 4096, 1 << 20]),
    defragment=st.booleans(),
)
def test_pool_replay_of_records(items: list, alignment: int, chunk: int, defragment: bool) -> None:
    events = events_from_records(items)
    r = simulate_pool(events, alignment=alignment, chunk_bytes=chunk, defragment=defragment)
    # Independent expectation: the peak of live bytes with the pool's rounding (0 -> alignment).
    rounded = [(max(-(-s // alignment) * alignment, alignment), f, la) for s, f, la in items]
    if chunk % alignment == 0:
        assert r.peak_in_use == peak_live_bytes(rounded)
    t = r.timeline
    assert len(t) == 2 * len(items)
    assert (t["reserved"] >= t["in_use"]).all()
    assert ((t["fragmentation"] >= 0) & (t["fragmentation"] < 1)).all()
    assert r.peak_reserved >= r.peak_in_use
    if len(t):
        assert t["in_use"].iloc[-1] == 0


@pytest.mark.parametrize(
    ("events", "match"),
    [
        ([(0.0, "free", "x", 0)], "free of unknown tensor 'x'"),
        ([(0.0, "alloc", "x", 8), (1.0, "alloc", "x", 8)], "tensor 'x' is already allocated"),
        ([(0.0, "alloc", "x", -8)], "size must be a non-negative integer"),
        ([(1.0, "alloc", "x", 8), (0.0, "free", "x", 8)], "goes back"),
        ([(0.0, "grow", "x", 8)], "action must be"),
    ],
)
def test_pool_bad_events(events: list, match: str) -> None:
    with pytest.raises(MemoryPlanError, match=match) as err:
        simulate_pool(events)
    assert "\n" not in str(err.value)
