"""The memory-plan oracle's rejection paths, one rule at a time (issue 36: the checker every planner
test relies on had its own boundaries unpinned).

Each case builds a :class:`MemoryPlan` by hand that breaks exactly one rule (or sits exactly on a
rule's boundary and must pass), and expects :func:`check_no_overlap`'s one-line message in full.
Steps are inclusive: a tensor with ``last == 1`` and one with ``first == 1`` are live together.
"""

from __future__ import annotations

import re

import pytest

from workbench.errors import MemoryPlanError
from workbench.memory.check import check_no_overlap
from workbench.memory.plan import MemoryPlan, parse_records


def _plan(records, offsets, arena, *, lower_bound=0, alignment=1, conflicts=None):
    return MemoryPlan("p", parse_records(records), tuple(offsets), arena, lower_bound, alignment,
                      conflicts)


def _rejects(plan: MemoryPlan, message: str) -> None:
    with pytest.raises(MemoryPlanError, match=f"^{re.escape(message)}$"):
        check_no_overlap(plan)


# Four tensors in step order, each alone in its step range except for one overlapping pair.
CHAIN = [(8, 0, 1, "a"), (8, 1, 2, "b"), (8, 3, 4, "c"), (8, 4, 5, "d"), (8, 6, 7, "e")]


def test_overlap_of_the_first_pair_in_step_order() -> None:
    """a (steps 0..1) and b (1..2) share step 1; b at offset 4 overlaps a's bytes [0, 8)."""
    _rejects(_plan(CHAIN, (0, 4, 0, 8, 0), 16),
             "plan 'p': tensor 0 'a' bytes [0, 8) steps 0..1 overlaps tensor 1 'b' bytes [4, 12) "
             "steps 1..2 while both live")


def test_overlap_of_a_middle_pair_with_the_newborn_below() -> None:
    """c (3..4) at 8 and d (4..5) at 4: the newborn d lies below c and reaches into it (its right
    neighbour in the offset-sorted live list); a and b before are disjoint (0 and 8)."""
    _rejects(_plan(CHAIN, (0, 8, 8, 4, 0), 16),
             "plan 'p': tensor 2 'c' bytes [8, 16) steps 3..4 overlaps tensor 3 'd' bytes [4, 12) "
             "steps 4..5 while both live")


def test_overlap_of_the_last_pair_with_the_newborn_above() -> None:
    """e (6..7) is born last; f (7..7) at 4 starts inside e's bytes [0, 8) (its left neighbour)."""
    records = [*CHAIN, (8, 7, 7, "f")]
    _rejects(_plan(records, (0, 8, 0, 8, 0, 4), 16),
             "plan 'p': tensor 4 'e' bytes [0, 8) steps 6..7 overlaps tensor 5 'f' bytes [4, 12) "
             "steps 7..7 while both live")


def test_a_tensor_that_died_frees_its_bytes_for_the_next_step_only() -> None:
    """a (0..1) and c (2..2) at the same offset: a is dead at step 2, so the plan is valid; with c
    starting at step 1 instead (off by one) the two share step 1 and are rejected."""
    check_no_overlap(_plan([(8, 0, 1, "a"), (8, 2, 2, "c")], (0, 0), 8))
    _rejects(_plan([(8, 0, 1, "a"), (8, 1, 2, "c")], (0, 0), 16),
             "plan 'p': tensor 0 'a' bytes [0, 8) steps 0..1 overlaps tensor 1 'c' bytes [0, 8) "
             "steps 1..2 while both live")


def test_adjacent_byte_ranges_do_not_overlap() -> None:
    """[0, 8) and [8, 16) live together share no byte, in either birth order; a zero-byte tensor
    occupies nothing wherever it is."""
    check_no_overlap(_plan([(8, 0, 1), (8, 1, 2)], (0, 8), 16))
    check_no_overlap(_plan([(8, 0, 1), (8, 1, 2)], (8, 0), 16))
    check_no_overlap(_plan([(8, 0, 1), (0, 0, 1)], (0, 4), 8))


def test_explicit_conflicts_are_checked_over_bytes() -> None:
    """With a conflict set, only listed pairs must not share bytes (tensors 0 and 2 overlap in
    bytes and are not listed: fine); adjacent listed tensors are fine; a listed pair sharing
    bytes is rejected."""
    recs = [(8, 0, 1), (8, 1, 2), (8, 3, 3)]
    ok = frozenset({(0, 1)})
    check_no_overlap(_plan(recs, (0, 8, 4), 16, conflicts=ok))
    check_no_overlap(_plan(recs, (8, 0, 0), 16, conflicts=ok))
    _rejects(_plan(recs, (0, 4, 0), 16, conflicts=frozenset({(0, 1), (0, 2)})),
             "plan 'p': tensor 0 bytes [0, 8) steps 0..1 overlaps tensor 2 bytes [0, 8) "
             "steps 3..3 but are marked as conflicting")


def test_conflict_pairs_must_name_two_known_tensors() -> None:
    """Indices 0..n-1 only, and never a tensor with itself."""
    recs = [(8, 0, 0), (8, 1, 1)]
    check_no_overlap(_plan(recs, (0, 8), 16, conflicts=frozenset({(0, 1)})))
    _rejects(_plan(recs, (0, 8), 16, conflicts=frozenset({(0, 2)})),
             "plan 'p': conflict (0, 2) names unknown tensors")
    _rejects(_plan(recs, (0, 8), 16, conflicts=frozenset({(-1, 1)})),
             "plan 'p': conflict (-1, 1) names unknown tensors")
    _rejects(_plan(recs, (0, 8), 16, conflicts=frozenset({(1, 1)})),
             "plan 'p': conflict (1, 1) names unknown tensors")


def test_offsets_must_be_aligned_non_negative_integers() -> None:
    """Alignment 8: offset 8 passes, 4 is misaligned; -8 (aligned, negative) and True (an int in
    Python) are bad offsets; alignment 0 itself is rejected."""
    check_no_overlap(_plan([(8, 0, 0), (8, 0, 0)], (0, 8), 16, alignment=8))
    _rejects(_plan([(8, 0, 0), (8, 0, 0)], (0, 4), 16, alignment=8),
             "plan 'p': tensor 1 bytes [4, 12) steps 0..0 is not 8-byte aligned")
    _rejects(_plan([(8, 0, 0), (8, 0, 0)], (0, -8), 16, alignment=8),
             "plan 'p': tensor 1 bytes [0, 8) steps 0..0 has bad offset -8")
    _rejects(_plan([(8, 0, 0), (8, 1, 1)], (0, True), 16),
             "plan 'p': tensor 1 bytes [0, 8) steps 1..1 has bad offset True")
    _rejects(_plan([(8, 0, 0)], (0,), 8, alignment=0),
             "plan 'p': alignment 0 is not a positive integer")


def test_the_arena_must_hold_every_tensor() -> None:
    """A tensor ending exactly at the arena fits; one byte less is rejected."""
    check_no_overlap(_plan([(8, 0, 0), (8, 0, 0)], (0, 8), 16))
    _rejects(_plan([(8, 0, 0), (8, 0, 0)], (0, 8), 15),
             "plan 'p': tensor 1 bytes [8, 16) steps 0..0 ends past the arena of 15 bytes")


def test_the_arena_must_reach_the_lower_bound_and_the_peak() -> None:
    """An arena equal to the plan's lower bound passes, one byte less is rejected.  Births count
    before deaths at a step: (8, 0, 1) and (8, 1, 2) are 16 bytes live at step 1, so an 8-byte
    arena (both at offset 0) is below the peak -- reported as such, before the overlap."""
    check_no_overlap(_plan([(8, 0, 0)], (0,), 8, lower_bound=8))
    _rejects(_plan([(8, 0, 0)], (0,), 8, lower_bound=9),
             "plan 'p': arena 8 is below the lower bound 9")
    _rejects(_plan([(8, 0, 1), (8, 1, 2)], (0, 0), 8),
             "plan 'p': arena 8 is below the peak of live bytes 16")


def test_one_offset_per_record() -> None:
    """A plan whose offsets were swapped after construction (bypassing its own check)."""
    plan = _plan([(8, 0, 0), (8, 1, 1)], (0, 0), 8)
    object.__setattr__(plan, "offsets", (0,))
    _rejects(plan, "plan 'p': 1 offsets for 2 records")
