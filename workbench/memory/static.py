"""Classic offset planners from TFLite's GPU delegate (Pisarchyk & Lee 2020; notes §2-3).

Every planner is ``plan_<name>(records, *, alignment=1, conflicts=None) -> MemoryPlan``. They all
share one placement step (:func:`place_in_order`, :mod:`workbench.memory.placement`): take tensors
in some order, and put each one into a free gap among the already-placed tensors it conflicts with,
or above the last of them. Sizes are rounded up to ``alignment`` for placement, so every offset is
aligned; ``arena_bytes`` is ``max(offset + aligned size)`` (TFLite reports ``max(offset + size)``
instead, e.g. 160 rather than 256 on its ``OffsetAssignmentWithAlignment`` test; the offsets are
the same).  A zero-byte tensor is placed at offset 0 and occupies nothing.

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

import numpy as np

from workbench.errors import MemoryPlanError
from workbench.memory.bounds import peak_live_bytes
from workbench.memory.placement import place_until
from workbench.memory.plan import MemoryPlan, Problem, RecordLike, prepare
from workbench.memory.watch import Budget, PlacementCut, Watch

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


#: The fits by name; each function states the rule on an explicit gap list (the placement engine
#: applies the same rule to all gaps at once).
FITS: dict[str, FitRule] = {
    "best": _best_fit,
    "first": _first_fit,
    "worst": _worst_fit,
    "highest": _highest_fit,
}


def place_in_order(problem: Problem, order: Sequence[int], fit: str | FitRule,
                   watch: Watch | None = None) -> list[int]:
    """Offsets from placing tensors in ``order``, each into a gap chosen by ``fit``.

    For tensor ``t``: the holes in the byte ranges of its already-placed conflicting tensors, below
    their top, are the gaps (the loop of TFLite's "greedy by size for offset calculation", notes
    §2). ``fit`` (a name of :data:`FITS`, or one of its functions) picks among the gaps at least as
    wide as ``t``'s aligned size; if none does, ``t`` goes right above the highest conflicting
    tensor. Complexity: O(n · (d + w)) for d conflicting and w long-lived placed tensors
    (:func:`workbench.memory.placement.place`).  ``watch``: its time budget and bar
    (:mod:`workbench.memory.watch`).
    """
    name = fit if isinstance(fit, str) else next(k for k, f in FITS.items() if f is fit)
    offsets = place_until(problem.graph, problem.sizes, order, [name], watch=watch)[0][0]
    return [int(o) for o in offsets]


def place_one_pass(planner: str, problem: Problem, order: Callable[[Problem], Sequence[int]],
                   time_budget_s: float | Budget | None, show_progress: bool) -> list[int]:
    """The offsets of a one-pass planner (``order``, best fit) under its ``time_budget_s``: the
    pass stops once that has passed (looked at every 1,024 placements) with a one-line
    MemoryPlanError; from 50,000 tensors it shows a bar (:mod:`workbench.memory.watch`)."""
    with Watch(time_budget_s, tensors=len(problem.sizes), passes=1,
               show_progress=show_progress, desc=planner) as watch:  # (it checks the budget)
        try:
            return place_in_order(problem, order(problem), "best", watch)
        except PlacementCut as cut:
            raise MemoryPlanError(f"{planner}: time_budget_s={watch.budget_s:g} s ran out after "
                                  f"placing {cut.placed:,} of {cut.total:,} tensors; give it "
                                  f"more time (time_budget_s=None: no limit)") from None


def make_plan(
    planner: str, problem: Problem, offsets: Sequence[int], notes: dict[str, Any] | None = None,
    *, peak: int | None = None
) -> MemoryPlan:
    """Wrap offsets into a MemoryPlan: arena = max(offset + aligned size), bound = aligned peak
    (``peak``, when the caller already computed it, else computed here)."""
    arena = int(max((int(o) + int(s) for o, s in zip(offsets, problem.sizes, strict=True)),
                    default=0))
    bound = peak_live_bytes(problem.records, alignment=problem.alignment) if peak is None \
        else peak
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
    """Tensors by raw size descending, ties by index (TFLite's stable sort).  O(n log n)."""
    return problem.order_by(-problem.columns[0])


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
    time_budget_s: float | Budget | None = None,
    show_progress: bool = True,
) -> MemoryPlan:
    """TFLite's "greedy by size for offset calculation" (Pisarchyk & Lee, Algorithm 3; notes §2).

    Tensors by size descending (stable by index); each goes into the smallest gap between
    already-placed conflicting tensors that fits (ties: lowest offset), else right after the
    highest of them. With ``conflicts`` the given pairs replace interval overlap.
    ``time_budget_s`` / ``show_progress``: :func:`place_one_pass` (no limit by default).
    Complexity: O(n · (d + w)) (:func:`place_in_order`); O(n²) in the worst case.
    """
    problem = prepare(records, alignment, conflicts)
    return make_plan("greedy_by_size", problem,
                     place_one_pass("greedy_by_size", problem, size_order, time_budget_s,
                                    show_progress))


def breadth_order(problem: Problem) -> list[int]:
    """Visit order of greedy by breadth: steps by breadth descending (ties lower step first),
    inside a step its not-yet-visited tensors by size descending (ties by index).

    Only the first steps of records are visited: any other step's live set is a subset of the live
    set at the latest first step before it, which has at least its breadth and comes earlier in the
    tie order, so skipping it changes nothing.  A tensor is therefore visited at the best-ranked
    first step inside its lifetime: a range-minimum query over the step ranks (sparse table).
    Complexity: O(n log n).
    """
    recs = problem.records
    if not recs:
        return []
    first = np.array([r.first for r in recs], dtype=np.int64)
    last = np.array([r.last for r in recs], dtype=np.int64)
    size = [r.size for r in recs]
    steps = np.unique(first)
    # breadth(t) = sizes born at or before t minus sizes dead before t (Python ints: no overflow)
    by_first, by_last = np.argsort(first, kind="stable"), np.argsort(last, kind="stable")
    born = np.searchsorted(first[by_first], steps, side="right")
    dead = np.searchsorted(last[by_last], steps, side="left")
    born_sum = [0]
    for i in by_first.tolist():
        born_sum.append(born_sum[-1] + size[i])
    dead_sum = [0]
    for i in by_last.tolist():
        dead_sum.append(dead_sum[-1] + size[i])
    breadth = [born_sum[b] - dead_sum[d] for b, d in zip(born.tolist(), dead.tolist())]
    visit = sorted(range(len(steps)), key=lambda k: (-breadth[k], k))
    rank = np.empty(len(steps), dtype=np.int64)
    rank[visit] = np.arange(len(steps))
    lo = np.searchsorted(steps, first)
    hi = np.searchsorted(steps, last, side="right")  # steps[lo:hi] lie in the lifetime
    best = np.asarray(_range_min(rank, lo, hi), dtype=np.int64)
    return problem.order_by(best, -problem.columns[0])


def _range_min(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[int]:
    """``min(values[lo[k]:hi[k]])`` for every k (non-empty ranges), by a sparse table.
    O(m log m + k)."""
    table = [values]
    width = 1
    while 2 * width <= len(values):
        prev = table[-1]
        table.append(np.minimum(prev[:-width], prev[width:]))
        width *= 2
    length = hi - lo
    level = np.floor(np.log2(np.maximum(length, 1))).astype(np.int64)
    out = np.empty(len(lo), dtype=np.int64)
    for k in np.unique(level).tolist():
        sel = np.flatnonzero(level == k)
        row = table[k]
        out[sel] = np.minimum(row[lo[sel]], row[hi[sel] - (1 << k)])
    return out.tolist()


def plan_greedy_by_breadth(
    records: Iterable[RecordLike],
    *,
    alignment: int = 1,
    conflicts: Iterable[Sequence[int]] | None = None,
    time_budget_s: float | Budget | None = None,
    show_progress: bool = True,
) -> MemoryPlan:
    """Greedy by breadth, adapted to offsets (notes §2 GREEDY_BY_BREADTH).

    TFLite's GREEDY_BY_BREADTH assigns *shared objects*; this is its offset adaptation: the same
    visiting order (steps by breadth descending, ties lower step first; inside a step, unplaced
    tensors by size descending) with greedy by size's gap rule (smallest fitting gap among
    conflicting placed tensors, else above them) instead of object reuse. Breadth uses raw sizes.
    ``time_budget_s`` / ``show_progress``: :func:`place_one_pass` (no limit by default).
    Complexity: O(n log n) for the order plus :func:`place_in_order`.
    """
    problem = prepare(records, alignment, conflicts)
    offsets = place_one_pass("greedy_by_breadth", problem, breadth_order, time_budget_s,
                             show_progress)
    return make_plan("greedy_by_breadth", problem, offsets)
