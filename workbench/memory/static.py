"""Classic offset planners from TFLite's GPU delegate (Pisarchyk & Lee 2020; notes §2-3).

Every planner is ``plan_<name>(records, *, alignment=1, conflicts=None) -> MemoryPlan``. They all
share one placement step (:func:`place_in_order`): take tensors in some order, and put each one into
a free gap among the already-placed tensors it conflicts with, or above the last of them. Sizes are
rounded up to ``alignment`` for placement, so every offset is aligned; ``arena_bytes`` is
``max(offset + aligned size)`` (TFLite reports ``max(offset + size)`` instead, e.g. 160 rather than
256 on its ``OffsetAssignmentWithAlignment`` test; the offsets are the same).

>>> paper = [(32, 0, 1), (28, 1, 4), (36, 2, 5), (16, 3, 5), (8, 4, 5), (64, 5, 7), (10, 6, 8),
...          (40, 7, 8)]
>>> plan = plan_greedy_by_size(paper)
>>> plan.arena_bytes, plan.offsets
(124, (0, 32, 64, 100, 116, 0, 104, 64))
>>> plan_naive(paper).arena_bytes
234
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from workbench.memory.bounds import peak_live_bytes
from workbench.memory.plan import MemoryPlan, Problem, RecordLike, prepare

Gap = tuple[int, int]  # (start offset, width in bytes)
FitRule = Callable[[list[Gap], int], "int | None"]


def _best_fit(gaps: list[Gap], size: int) -> int | None:
    """Smallest gap that fits (smallest leftover), ties lowest offset (TFLite, SOMAS BestFit)."""
    fitting = [(width, start) for start, width in gaps if width >= size]
    return min(fitting)[1] if fitting else None


def _first_fit(gaps: list[Gap], size: int) -> int | None:
    """Lowest-offset gap that fits (SOMAS SmallestFit: lowest offset first, notes §1.3)."""
    return next((start for start, width in gaps if width >= size), None)


def _worst_fit(gaps: list[Gap], size: int) -> int | None:
    """Largest gap that fits (largest leftover), ties lowest offset (SOMAS debug WorstFit)."""
    fitting = [(-width, start) for start, width in gaps if width >= size]
    return min(fitting)[1] if fitting else None


def _highest_fit(gaps: list[Gap], size: int) -> int | None:
    """Highest-offset gap that fits (SOMAS debug LargestFit)."""
    fitting = [start for start, width in gaps if width >= size]
    return max(fitting) if fitting else None


FITS: dict[str, FitRule] = {
    "best": _best_fit,
    "first": _first_fit,
    "worst": _worst_fit,
    "highest": _highest_fit,
}


def place_in_order(problem: Problem, order: Sequence[int], fit: FitRule) -> list[int]:
    """Offsets from placing tensors in ``order``, each into a gap chosen by ``fit``.

    For tensor ``t``: its already-placed conflicting tensors are scanned by offset (ties in
    placement order, as TFLite inserts after equal offsets); the holes between them are the gaps
    (the exact loop of TFLite's "greedy by size for offset calculation", notes §2). ``fit`` picks
    among the gaps at least as wide as ``t``'s aligned size; if none does, ``t`` goes right after
    the highest conflicting tensor. Complexity: O(n·d log d) for conflict degree d.
    """
    sizes, neighbors = problem.sizes, problem.neighbors
    offsets = [-1] * len(sizes)
    placed_at = [0] * len(sizes)
    for seq, t in enumerate(order):
        placed = sorted((offsets[p], placed_at[p], p) for p in neighbors[t] if offsets[p] >= 0)
        prev_end, gaps = 0, []
        for off, _, p in placed:
            if off >= prev_end:
                gaps.append((prev_end, off - prev_end))
            prev_end = max(prev_end, off + sizes[p])
        chosen = fit(gaps, sizes[t])
        offsets[t] = prev_end if chosen is None else chosen
        placed_at[t] = seq
    return offsets


def make_plan(
    planner: str, problem: Problem, offsets: Sequence[int], notes: dict[str, Any] | None = None
) -> MemoryPlan:
    """Wrap offsets into a MemoryPlan: arena = max(offset + aligned size), bound = aligned peak."""
    arena = max((o + s for o, s in zip(offsets, problem.sizes, strict=True)), default=0)
    bound = peak_live_bytes(problem.records, alignment=problem.alignment)
    return MemoryPlan(
        planner,
        problem.records,
        tuple(int(o) for o in offsets),
        arena,
        bound,
        problem.alignment,
        problem.conflicts,
        dict(notes or {}),
    )


def size_order(problem: Problem) -> list[int]:
    """Tensors by raw size descending, ties by index (TFLite's stable sort)."""
    recs = problem.records
    return sorted(range(len(recs)), key=lambda i: (-recs[i].size, i))


def plan_naive(
    records: Iterable[RecordLike],
    *,
    alignment: int = 1,
    conflicts: Iterable[Sequence[int]] | None = None,
) -> MemoryPlan:
    """No reuse: offsets are prefix sums of the aligned sizes in record order (TFLite NAIVE).

    The baseline every other planner is compared with; arena = sum of sizes. Complexity: O(n).
    """
    problem = prepare(records, alignment, conflicts)
    offsets, top = [], 0
    for size in problem.sizes:
        offsets.append(top)
        top += size
    return make_plan("naive", problem, offsets)


def plan_greedy_by_size(
    records: Iterable[RecordLike],
    *,
    alignment: int = 1,
    conflicts: Iterable[Sequence[int]] | None = None,
) -> MemoryPlan:
    """TFLite's "greedy by size for offset calculation" (Pisarchyk & Lee, Algorithm 3; notes §2).

    Tensors by size descending (stable by index); each goes into the smallest gap between
    already-placed conflicting tensors that fits (ties: lowest offset), else right after the
    highest of them. With ``conflicts`` the given pairs replace interval overlap.
    Complexity: O(n² log n) worst case.
    """
    problem = prepare(records, alignment, conflicts)
    return make_plan(
        "greedy_by_size", problem, place_in_order(problem, size_order(problem), _best_fit)
    )


def breadth_order(problem: Problem) -> list[int]:
    """Visit order of greedy by breadth: steps by breadth descending (ties lower step first),
    inside a step its not-yet-visited tensors by size descending (ties by index).

    Only the first steps of records are visited: any other step's live set is a subset of the live
    set at the latest first step before it, which has at least its breadth and comes earlier in the
    tie order, so skipping it changes nothing. Complexity: O(n²).
    """
    recs = problem.records
    steps = sorted({r.first for r in recs})
    live = {t: [i for i, r in enumerate(recs) if r.first <= t <= r.last] for t in steps}
    breadth = {t: sum(recs[i].size for i in live[t]) for t in steps}
    seen: set[int] = set()
    order: list[int] = []
    for t in sorted(steps, key=lambda s: (-breadth[s], s)):
        for i in sorted(live[t], key=lambda k: (-recs[k].size, k)):
            if i not in seen:
                seen.add(i)
                order.append(i)
    return order


def plan_greedy_by_breadth(
    records: Iterable[RecordLike],
    *,
    alignment: int = 1,
    conflicts: Iterable[Sequence[int]] | None = None,
) -> MemoryPlan:
    """Greedy by breadth, adapted to offsets (notes §2 GREEDY_BY_BREADTH).

    TFLite's GREEDY_BY_BREADTH assigns *shared objects*; this is its offset adaptation: the same
    visiting order (steps by breadth descending, ties lower step first; inside a step, unplaced
    tensors by size descending) with greedy by size's gap rule (smallest fitting gap among
    conflicting placed tensors, else above them) instead of object reuse. Breadth uses raw sizes.
    Complexity: O(n² log n).
    """
    problem = prepare(records, alignment, conflicts)
    offsets = place_in_order(problem, breadth_order(problem), _best_fit)
    return make_plan("greedy_by_breadth", problem, offsets)
