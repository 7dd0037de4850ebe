"""SOMAS's heuristics pinned on hand-built problems (issue 36: its sort orders, its alignment and
the zero-size / ``stop_at`` rules of the shared placement step were not held by any test).

Every problem below is small enough to place by hand; each docstring works the placement out.
Steps are inclusive (``(size, first, last)``); "conflicts" means the live intervals intersect.
Fit ``"first"`` puts a tensor into the lowest gap among its placed conflicting tensors that holds
it, else right above the highest of them; ``"best"`` into the smallest such gap.
"""

from __future__ import annotations

import numpy as np
import pytest

from workbench.memory.check import check_no_overlap
from workbench.memory.conflicts import interval_graph
from workbench.memory.placement import place_until
from workbench.memory.plan import prepare
from workbench.memory.somas import ORDERINGS, plan_somas
from workbench.memory.static import size_order

# Lifetimes (last - first + 1): 2, 2, 2, 4, 2.  Degrees (interval conflicts): t0 3 (t2, t3, t4),
# t1 2 (t3, t4), t2 3 (t0, t3, t4), t3 4, t4 4.  Areas (size x lifetime): 8, 16, 16, 8, 16.
TIES = [(4, 0, 1), (8, 2, 3), (8, 0, 1), (2, 0, 3), (8, 1, 2)]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # longest first: t3 (4 steps); then the 2-step ones by size desc (8: t1, t2, t4), then t0
        ("lifetime", [3, 1, 2, 4, 0]),
        # most conflicts first: degree 4 (t4 size 8 before t3 size 2), degree 3 (t2 size 8 before
        # t0 size 4), degree 2 (t1)
        ("degree", [4, 3, 2, 0, 1]),
        # largest area first: 16 (t1, t2, t4 by index), 8 (t0 size 4 before t3 size 2).  Without
        # the "+ 1" in the lifetime the areas would be 4, 8, 8, 6, 8 and t3 would precede t0.
        ("area", [1, 2, 4, 0, 3]),
        # first step ascending; at step 0: t2 (8), t0 (4), t3 (2); then t4 (step 1), t1 (step 2)
        ("first_step", [2, 0, 3, 4, 1]),
        # size descending, ties by index
        ("size", [1, 2, 4, 0, 3]),
    ],
)
def test_ordering_keys_and_tie_breaks(name: str, expected: list[int]) -> None:
    """Each SOMAS block ordering on a problem with ties in its primary key, in size and in index:
    the primary key's direction, the size-descending tie-break and the index tie-break are all
    visible in the one expected list (reversing any of them, or the area's off-by-one in the
    lifetime, gives a different list)."""
    assert ORDERINGS[name](prepare(TIES)) == expected
    if name == "size":
        assert size_order(prepare(TIES)) == expected


def _one(records: list[tuple[int, int, int]], ordering: str, fit: str = "first"):
    plan = plan_somas(records, alignment=1, orderings=[ordering], fits=[fit])
    check_no_overlap(plan)
    assert (plan.notes["ordering"], plan.notes["fit"]) == (ordering, fit)
    return plan


def test_lifetime_order_places_the_longest_first() -> None:
    """t0 = (3, 3, 3), t1 = (2, 2, 3), t2 = (2, 0, 2): lifetimes 1, 2, 3, order [t2, t1, t0].
    t2 -> 0 [0, 2); t1 conflicts with t2 (step 2) -> above it, 2 [2, 4); t0 conflicts with t1
    (step 3) only: the gap [0, 2) is too narrow for 3 bytes -> above, 4.  Offsets (4, 2, 0), arena
    7.  Shortest first would give [t0, t1, t2]: (0, 3, 0), arena 5."""
    plan = _one([(3, 3, 3), (2, 2, 3), (2, 0, 2)], "lifetime")
    assert plan.offsets == (4, 2, 0)
    assert plan.arena_bytes == 7


def test_degree_order_places_the_most_conflicting_first() -> None:
    """t0 = (2, 2, 3), t1 = (2, 0, 2), t2 = (3, 1, 1), t3 = (2, 3, 3): degrees 2, 2, 1, 1, order
    [t0, t1, t2, t3].  t0 -> 0 [0, 2); t1 conflicts with t0 -> 2 [2, 4); t2 conflicts with t1 only:
    gap [0, 2) too narrow for 3 -> 4 [4, 7); t3 conflicts with t0 only -> above it, 2.  Offsets
    (0, 2, 4, 2), arena 7.  Fewest first ([t2, t3, t0, t1]) would give (2, 4, 0, 0), arena 6."""
    plan = _one([(2, 2, 3), (2, 0, 2), (3, 1, 1), (2, 3, 3)], "degree")
    assert plan.offsets == (0, 2, 4, 2)
    assert plan.arena_bytes == 7


def test_area_order_counts_both_ends_of_the_lifetime() -> None:
    """t0 = (4, 0, 0), t1 = (2, 1, 3), t2 = (2, 0, 1): areas 4 x 1 = 4, 2 x 3 = 6, 2 x 2 = 4,
    order [t1, t0 (size 4), t2].  t1 -> 0 [0, 2); t0 does not conflict with t1 -> 0 [0, 4); t2
    conflicts with both ([0, 4) taken) -> 4.  Offsets (0, 0, 4), arena 6.  An area without the
    "+ 1" (0, 4, 2: order [t1, t2, t0]) would give (4, 0, 2), arena 8."""
    plan = _one([(4, 0, 0), (2, 1, 3), (2, 0, 1)], "area")
    assert plan.offsets == (0, 0, 4)
    assert plan.arena_bytes == 6


def test_first_step_order_puts_the_larger_first_among_equal_starts() -> None:
    """t0 = (3, 1, 3), t1 = (2, 1, 1), t2 = (3, 3, 3): t0 and t1 both start at step 1, t0 larger,
    order [t0, t1, t2].  t0 -> 0 [0, 3); t1 conflicts with t0 -> 3 [3, 5); t2 conflicts with t0
    only -> 3.  Offsets (0, 3, 3), arena 6.  Smaller first ([t1, t0, t2]) would give (2, 0, 5),
    arena 8."""
    plan = _one([(3, 1, 3), (2, 1, 1), (3, 3, 3)], "first_step")
    assert plan.offsets == (0, 3, 3)
    assert plan.arena_bytes == 6


def test_alignment_is_the_problems_not_one_byte() -> None:
    """Alignment 64 with sizes 100, 30, 50 (aligned: 128, 64, 64); t0 = steps 0..1, t1 = 1..2,
    t2 = 2..3.  Size order [t0, t2, t1]: t0 -> 0; t2 does not conflict with t0 -> 0; t1 conflicts
    with both ([0, 128) taken) -> 128.  Offsets (0, 128, 0), arena 128 + 64 = 192 = the aligned
    peak at step 1.  Planned at alignment 1 the offsets would be (0, 100, 0), arena 130."""
    plan = plan_somas([(100, 0, 1), (30, 1, 2), (50, 2, 3)], alignment=64)
    check_no_overlap(plan)
    assert plan.offsets == (0, 128, 0)
    assert (plan.arena_bytes, plan.lower_bound, plan.alignment) == (192, 192, 64)
    assert all(o % 64 == 0 for o in plan.offsets)
    assert (plan.notes["ordering"], plan.notes["fit"]) == ("size", "best")


def test_alignment_with_lifelong_and_contiguous_tensors() -> None:
    """The class path (lifelong band, contiguous list) keeps the problem's alignment.  Sizes 100,
    30, 50, 10 at alignment 64 (aligned 128, 64, 64, 64); t3 is lifelong, [t1, t2] contiguous.
    Blocks: t0 (128, steps 0..1) and [t1, t2] (128, steps 1..3), conflicting -> 0 and 128; t1 at
    128, t2 right after at 192; the solved top is 256 and the lifelong t3 sits at 256.  Arena
    320."""
    plan = plan_somas([(100, 0, 1), (30, 1, 2), (50, 2, 3), (10, 0, 3)], alignment=64,
                      lifelong=[3], contiguous=[[1, 2]])
    check_no_overlap(plan)
    assert plan.offsets == (0, 128, 192, 256)
    assert (plan.arena_bytes, plan.alignment) == (320, 64)
    assert plan.notes["solved_top"] == 256


def test_ties_keep_the_earliest_combination_and_later_ones_are_pruned() -> None:
    """Two 8-byte tensors live at step 0: every (ordering, fit) needs 16 bytes.  A later
    combination wins only if strictly smaller, so ("size", "best") -- the first one -- is kept;
    with pruning every later ordering stops as soon as its arena reaches 16 (after its second
    tensor), so all 15 combinations after the first ordering (of the 19 the defaults run) are
    listed as pruned at 16."""
    recs = [(8, 0, 0), (8, 0, 0)]
    plan = plan_somas(recs, alignment=1)
    assert (plan.notes["ordering"], plan.notes["fit"]) == ("size", "best")
    assert plan.offsets == (0, 8)
    assert len(plan.notes["pruned"]) == 15
    assert all(o != "size" for o, _ in plan.notes["pruned"])
    assert set(plan.notes["arenas"].values()) == {16}
    full = plan_somas(recs, alignment=1, prune=False)
    assert full.notes["pruned"] == [] and full.offsets == plan.offsets


def test_place_until_stops_a_fit_when_its_arena_reaches_the_bound() -> None:
    """Two conflicting 4-byte tensors (steps 0..0) placed in order [0, 1]: the arena is 4 after
    the first and 8 after the second.  ``stop_at=8`` stops at 8 ("reaches", not "exceeds");
    ``stop_at=9`` lets the fit finish with offsets (0, 4); ``stop_at=4`` stops after the first
    tensor, with the second not placed (offset 0)."""
    graph = interval_graph([0, 0], [0, 0])
    sizes = np.array([4, 4])
    rows, stopped = place_until(graph, sizes, [0, 1], ["first"], stop_at=8)
    assert stopped == [8]
    rows, stopped = place_until(graph, sizes, [0, 1], ["first"], stop_at=9)
    assert stopped == [None] and rows.tolist() == [[0, 4]]
    rows, stopped = place_until(graph, sizes, [0, 1], ["first"], stop_at=4)
    assert stopped == [4] and rows.tolist() == [[0, 0]]


def test_place_until_stops_only_the_fits_that_reach_the_bound() -> None:
    """Six tensors in index order: t0 = (2, 0, 0) -> 0; t1 = (2, 0, 2) -> 2; t2 = (3, 0, 0) -> 4;
    t3 = (2, 0, 1) -> 7 (each above the ones before it, arena 9).  t4 = (1, 1, 2) conflicts with
    t1 [2, 4) and t3 [7, 9): gaps [0, 2) (2 bytes) and [4, 7) (3 bytes): "best" and "first" put it
    at 0, "worst" and "highest" at 4.  t5 = (3, 1, 2) conflicts with t1, t3, t4: for best/first
    the gaps are [1, 2) and [4, 7) -> 4 (arena stays 9); for worst/highest they are [0, 2) and
    [5, 7), both too narrow -> above, 9 (arena 12).  ``stop_at=10`` stops only worst and highest
    (at 12); the other two finish with their full offsets, and a stopped fit reports the offsets
    it had placed (here all of them, t5 being the one that reached the bound).  ``stop_at=9``
    stops all four at 9 (reached by t3)."""
    recs = [(2, 0, 0), (2, 0, 2), (3, 0, 0), (2, 0, 1), (1, 1, 2), (3, 1, 2)]
    graph = interval_graph([r[1] for r in recs], [r[2] for r in recs])
    sizes = np.array([r[0] for r in recs])
    fits = ["best", "first", "worst", "highest"]
    rows, stopped = place_until(graph, sizes, range(6), fits)
    assert stopped == [None] * 4
    assert rows.tolist() == [[0, 2, 4, 7, 0, 4]] * 2 + [[0, 2, 4, 7, 4, 9]] * 2
    rows, stopped = place_until(graph, sizes, range(6), fits, stop_at=10)
    assert stopped == [None, None, 12, 12]
    assert rows.tolist() == [[0, 2, 4, 7, 0, 4]] * 2 + [[0, 2, 4, 7, 4, 9]] * 2
    rows, stopped = place_until(graph, sizes, range(6), fits, stop_at=9)
    assert stopped == [9] * 4


def test_zero_byte_tensors_sit_at_zero_and_shape_no_gap() -> None:
    """A zero-byte tensor is placed at offset 0 under every fit and never shapes a gap.  Four
    tensors live at step 0, order [t0, t1, t2, t3]: t0 (4 bytes) -> 0, t1 (4) -> 4, t2 (0 bytes)
    -> 0, t3 (2) -> above t1, 8.  Were t2 placed like the others, its gaps among t0 [0, 4) and
    t1 [4, 8) would be the empty holes at 0 and at 4, and "highest" would put it at 4."""
    graph = interval_graph([0, 0, 0, 0], [0, 0, 0, 0])
    sizes = np.array([4, 4, 0, 2])
    fits = ["best", "first", "worst", "highest"]
    rows, stopped = place_until(graph, sizes, [0, 1, 2, 3], fits)
    assert stopped == [None] * 4
    assert rows.tolist() == [[0, 4, 0, 8]] * 4


def test_a_gap_exactly_as_wide_as_the_tensor_holds_it() -> None:
    """t0 = (2, 0, 1) -> 0, t1 = (2, 0, 0) -> 2, t2 = (2, 0, 1) -> 4; t3 = (2, 1, 1) conflicts with
    t0 and t2 only, and the hole [2, 4) left by t1 is exactly 2 bytes: every fit puts t3 there
    (offset 2, arena 6), not above at 6.  t4 = (1, 2, 2) conflicts with nothing (-> 0); it makes
    step 2 the last one, so t0..t3 are not graph tails and take the placement's general path (the
    same check on tails is in the six-tensor case above)."""
    recs = [(2, 0, 1), (2, 0, 0), (2, 0, 1), (2, 1, 1), (1, 2, 2)]
    graph = interval_graph([r[1] for r in recs], [r[2] for r in recs])
    assert not graph.tails[:4].any()
    rows, _ = place_until(graph, np.array([r[0] for r in recs]), range(5),
                          ["best", "first", "worst", "highest"])
    assert rows.tolist() == [[0, 2, 4, 2, 0]] * 4
