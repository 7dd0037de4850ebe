"""SOMAS-style static memory planning (seed 004 "Memory Management"; notes §1.3 FastHeuristic).

MindSpore's SOMAS builds a conflict ("cannot reuse") relation between tensors, then runs several
solvers, each a block *ordering* combined with a gap *fit*, and keeps the smallest arena. This
module does the same over usage records (conflicts from interval overlap, or the explicit set a
multi-stream schedule provides), with a wider strategy menu than MindSpore's release build.

Lifelong tensors and contiguous lists (``lifelong=``, ``contiguous=``) are handled around the
solver as MindSpore does (:mod:`workbench.memory.somas_classes`).  Simplified on purpose: no
union/ref tensors; only the "Single Object" algorithm (one band with no ceiling, i.e. greedy offset
assignment) is run, not "Shared Objects", so the 100 MiB preference rule does not arise.

Alignment (default 512 bytes, MindSpore's GPU/CPU rule): sizes are rounded up to it for placement,
and the reported lower bound is the peak of *aligned* live bytes, which is what any aligned plan
must reserve. A zero-byte tensor stays zero bytes (MindSpore would give it 512).

>>> paper = [(32, 0, 1), (28, 1, 4), (36, 2, 5), (16, 3, 5), (8, 4, 5), (64, 5, 7), (10, 6, 8),
...          (40, 7, 8)]
>>> plan = plan_somas(paper, alignment=1)
>>> plan.arena_bytes, plan.notes["ordering"], plan.notes["fit"]
(124, 'size', 'best')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from workbench._checks import show
from workbench.errors import MemoryPlanError, OptionError
from workbench.memory.bounds import conflict_clique_bound, peak_live_bytes
from workbench.memory.placement import place_until
from workbench.memory.plan import MemoryPlan, Problem, RecordLike, prepare
from workbench.memory.somas_classes import TensorRef, plan_with_classes
from workbench.memory.static import FITS, breadth_order, make_plan, size_order
from workbench.memory.watch import Budget, PlacementCut, Watch, check_time_budget


def _lifetime_order(p: Problem) -> list[int]:
    size, first, last = p.columns
    return p.order_by(first - last, -size)


def _degree_order(p: Problem) -> list[int]:
    return p.order_by(-p.graph.degrees, -p.columns[0])


def _area_order(p: Problem) -> list[int]:
    size, first, last = p.columns
    length = last - first + 1
    if len(size) and int(size.max()) * int(length.max()) >= 1 << 62:  # past int64: exact ints
        r = p.records
        area = [x.size * (x.last - x.first + 1) for x in r]
        return sorted(range(len(r)), key=lambda i: (-area[i], -r[i].size, i))
    return p.order_by(-(size * length), -size)


def _first_step_order(p: Problem) -> list[int]:
    size, first, _ = p.columns
    return p.order_by(first, -size)


#: Block orderings; every one breaks ties by size descending, then record index.
ORDERINGS: dict[str, Callable[[Problem], list[int]]] = {
    "size": size_order,  # size descending (greedy by size; SOMAS kGreaterSizeSmallerIndex)
    "lifetime": _lifetime_order,  # lifetime length (last - first + 1) descending
    "degree": _degree_order,  # number of conflicting tensors descending
    "area": _area_order,  # size x lifetime length descending
    "first_step": _first_step_order,  # first step ascending (allocation order)
    "breadth": breadth_order,  # widest steps first (TFLite greedy by breadth's visit order)
}

#: Which combinations win, recorded before dropping any (issue 44): the golden set (every
#: built-in model and 300 random graphs, tests/golden_stages.py) and the torch zoo
#: (tests/model_zoo.py, 14 models), each under all 12 policies, 3,948 schedules, unpruned:
#: size/best 2,760, degree/best 422, lifetime/best 282, breadth/best 152, area/best 147,
#: first_step/best 71, size/first 54, lifetime/first 11, first_step/first 11, size/worst 8,
#: breadth/first 7, breadth/worst 6, area/worst 5, lifetime/worst 4, area/first 4, and once
#: each size/highest, degree/worst, area/highest, breadth/highest.  Every ordering and every fit
#: wins somewhere, so all are kept; the five combinations that never won (degree/first,
#: degree/highest, lifetime/highest, first_step/worst, first_step/highest) are not run by
#: default (:data:`DEFAULT_FITS_OF`).  Dropping a combination that never wins cannot change a
#: winner (the winner is the first strict minimum, and it is still run), and each fit is its
#: own placement: on NNC's schedule of a 100k-op random DAG the five cost 4 of SOMAS's 35 CPU s
#: of placement (the conflicting tensors a step finds are shared by its ordering's fits, the
#: rest of a step's work is per fit).
DEFAULT_ORDERINGS: tuple[str, ...] = tuple(ORDERINGS)
#: SOMAS's default time budget (s): past it the orderings not finished are left out
#: (:func:`plan_somas`).  Never reached by the built-in models or by 100k-op random DAGs (36 CPU
#: s on NNC's schedule, the slowest seen); a 1M-op random DAG's NNC schedule reaches it.
DEFAULT_TIME_BUDGET_S = 300.0
#: Fits: "best" (smallest leftover; SOMAS BestFit), "first" (lowest offset; SOMAS SmallestFit,
#: which the notes define as lowest offset first), "worst" (largest gap; debug WorstFit),
#: "highest" (highest offset; debug LargestFit).
DEFAULT_FITS: tuple[str, ...] = tuple(FITS)
#: The fits each ordering runs when ``plan_somas`` is given no ``fits``: every fit but the
#: combinations that never won (the survey above); 19 of the 24.
DEFAULT_FITS_OF: dict[str, tuple[str, ...]] = {
    "size": DEFAULT_FITS, "lifetime": ("best", "first", "worst"), "degree": ("best", "worst"),
    "area": DEFAULT_FITS, "first_step": ("best", "first"), "breadth": DEFAULT_FITS}


def _refs(value: Any, what: str) -> list[Any]:
    """``lifelong`` / ``contiguous`` as a list (a one-line OptionError for a non-iterable or a
    bare string, which would be read letter by letter)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise OptionError(f"{what} must be a list of tensors (indices or names), got "
                          f"{show(value)}")
    return list(value)


def _pick(names: Sequence[str], table: dict[str, object], what: str) -> list[str]:
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise OptionError(f"{what}s must be a name or a list of names (known: "
                          f"{', '.join(table)}), got {show(names)}")
    chosen = list(dict.fromkeys(names))
    if not chosen:
        raise OptionError(f"plan_somas needs at least one {what} (known: {', '.join(table)})")
    for name in chosen:
        if name not in table:
            raise OptionError(f"unknown somas {what} {name!r} (known: {', '.join(table)})")
    return chosen


def plan_somas(
    records: Iterable[RecordLike],
    *,
    alignment: int = 512,
    conflicts: Iterable[Sequence[int]] | None = None,
    orderings: Sequence[str] = DEFAULT_ORDERINGS,
    fits: Sequence[str] | None = None,
    prune: bool = True,
    lifelong: Iterable[TensorRef] = (),
    contiguous: Iterable[Sequence[TensorRef]] = (),
    time_budget_s: float | Budget | None = DEFAULT_TIME_BUDGET_S,
    show_progress: bool = True,
) -> MemoryPlan:
    """Run (ordering, fit) combinations and keep the smallest arena.

    Iteration is ordering-major (in the order given, default ``size, lifetime, degree, area,
    first_step, breadth``), then fit (in the order ``fits`` gives them, for every ordering; without
    ``fits``, each ordering's fits in :data:`DEFAULT_FITS_OF`: of ``best, first, worst, highest``
    all but the five combinations that never won on 3,948 recorded schedules); a later
    combination wins only if strictly smaller, so ties keep the earliest.  ``("size", "best")``
    is exactly greedy by size, hence with the defaults SOMAS is never worse than
    :func:`plan_greedy_by_size` at the same alignment.

    Each ordering is computed once and placed under all fits in one pass
    (:func:`workbench.memory.placement.place_until`), so the conflicting tensors of a step are
    found once for every fit.  With ``prune`` (default), a combination stops as soon as its arena
    reaches the best complete arena of the orderings before it: it can at most tie, and a tie
    keeps the earlier one, so the winner and its offsets are the same as without pruning.  And
    once the best arena is down to the lower bound (the aligned live-bytes peak for interval
    conflicts, the heaviest clique for a schedule's conflict set: no plan is smaller), the
    orderings after it are not run at all (listed as pruned at the bound); on nasnet_a_large's
    eleven schedules that is nine, the size ordering already optimal.

    ``notes`` holds the winning ``ordering`` and ``fit``, ``arenas`` (every combination's arena
    keyed by ``(ordering, fit)``; for a pruned one, the arena it had reached when it stopped, a
    lower bound of its full arena that is already no better than the winner's) and ``pruned`` (the
    combinations stopped early).

    ``lifelong`` (tensor indices or names) are placed in their own band above the solved region,
    in index order; each list of ``contiguous`` is placed back to back in list order (SOMAS's
    communication lists; :func:`workbench.memory.plan_memory` derives them from the graph's
    communication ops).  ``notes`` then also holds ``lifelong``, ``lifelong_bytes``,
    ``solved_top`` and ``contiguous``.

    **Bounded.**  ``time_budget_s`` (default :data:`DEFAULT_TIME_BUDGET_S`; ``None``: no limit)
    is looked at between orderings and every 1,024 placements (:mod:`workbench.memory.watch`).
    Once it has passed, the orderings not finished are not candidates: the plan is the best of
    those that finished, ``notes["budget_hit"]`` says so and ``notes["not_run"]`` lists the
    combinations left out (so the plan then depends on the machine's speed, like IOS's best so
    far).  If even the first ordering did not finish, the call is refused with a one-line
    MemoryPlanError.  From 50,000 tensors ``show_progress`` draws a bar over all the passes.
    Complexity: O(o·n·(d + w) · f) element operations for o orderings, f fits, d conflicting
    and w long-lived placed tensors per step.
    """
    problem = prepare(records, alignment, conflicts)
    order_names = _pick(orderings, ORDERINGS, "ordering")  # type: ignore[arg-type]
    fit_names = None if fits is None else _pick(fits, FITS, "fit")  # type: ignore[arg-type]
    lifelong, contiguous = _refs(lifelong, "lifelong"), _refs(contiguous, "contiguous")
    budget = check_time_budget(time_budget_s, "somas")
    if lifelong or contiguous:
        def solve(blocks: list[Any], pairs: frozenset[tuple[int, int]]) -> MemoryPlan:
            return plan_somas(blocks, alignment=problem.alignment, conflicts=pairs,
                              orderings=order_names, fits=fits, prune=prune,
                              time_budget_s=budget, show_progress=show_progress)

        return plan_with_classes(problem, lifelong, contiguous, solve)
    fits_of = {o: DEFAULT_FITS_OF[o] if fit_names is None else fit_names for o in order_names}
    with Watch(budget, tensors=len(problem.sizes), passes=len(order_names),
               show_progress=show_progress, desc="somas") as watch:
        return _solve(problem, order_names, fits_of, prune, watch)


def _solve(problem: Problem, order_names: list[str], fits_of: Mapping[str, Sequence[str]],
           prune: bool, watch: Watch) -> MemoryPlan:
    """:func:`plan_somas` on a prepared problem without classes: every ordering's pass in turn
    under ``watch``, the smallest arena kept (ties: the earliest)."""
    arenas: dict[tuple[str, str], int] = {}
    pruned: list[tuple[str, str]] = []
    best: tuple[int, str, str, list[int]] | None = None
    sizes = problem.sizes
    floor = _lower_bound(problem) if prune else None
    cut_at = len(order_names)  # the first ordering the budget left unfinished
    for k, oname in enumerate(order_names):
        if floor is not None and best is not None and best[0] <= floor:
            # the winner already reserves no more than every plan must: no later combination
            # can be strictly smaller, so none is run (each is listed as pruned at the bound)
            for later in order_names[k:]:
                for fname in fits_of[later]:
                    arenas[(later, fname)] = floor
                    pruned.append((later, fname))
            break
        if best is not None and watch.expired():  # the budget: the rest is not run
            cut_at = k
            break
        bound = best[0] if prune and best is not None else None
        watch.begin_pass(f"{oname} ({k + 1}/{len(order_names)})")
        try:
            rows, stopped = place_until(problem.graph, sizes, ORDERINGS[oname](problem),
                                        fits_of[oname], stop_at=bound, watch=watch)
        except PlacementCut as cut:
            if best is None:
                raise MemoryPlanError(
                    f"somas: time_budget_s={watch.budget_s:g} s ran out while placing its first "
                    f"ordering ({oname!r}: {cut.placed:,} of {cut.total:,} tensors), so there "
                    f"is no plan to keep; give it more time (time_budget_s=None: no limit)"
                ) from None
            cut_at = k
            break
        watch.reached(len(sizes))
        for fname, offsets, halted in zip(fits_of[oname], rows, stopped, strict=True):
            if halted is not None:
                arenas[(oname, fname)] = halted
                pruned.append((oname, fname))
                continue
            arena = int((offsets + sizes).max()) if len(sizes) else 0
            arenas[(oname, fname)] = arena
            if best is None or arena < best[0]:
                best = (arena, oname, fname, offsets.tolist())
    assert best is not None
    _, oname, fname, offsets = best
    notes: dict[str, Any] = {"ordering": oname, "fit": fname, "arenas": arenas,
                             "pruned": pruned}
    not_run = [(later, f) for later in order_names[cut_at:] for f in fits_of[later]]
    if not_run:
        notes["budget_hit"] = (f"time_budget_s={watch.budget_s:g} s: {len(not_run)} of "
                               f"{len(not_run) + len(arenas)} combinations not run, the best "
                               f"of those that finished kept")
        notes["not_run"] = not_run
    if floor is not None and problem.conflicts is not None:
        notes["conflict_clique_bound"] = floor  # plan_memory's lower bound: not computed twice
    interval_peak = floor if problem.conflicts is None else None  # the floor is that peak
    return make_plan("somas", problem, offsets, notes, peak=interval_peak)


def _lower_bound(problem: Problem) -> int | None:
    """What every plan of ``problem`` must reserve, when it is cheap to know: the aligned peak
    of live bytes for interval conflicts, the heaviest clique for a conflict set built from a
    schedule (its happens-before skeleton makes the max-flow sparse); ``None`` for other pair
    sets (the clique bound would list pairs, O(n²)).  O(n log n) / O(V + syncs + T·S)."""
    if problem.conflicts is None:
        return peak_live_bytes(problem.records, alignment=problem.alignment)
    if getattr(problem.conflicts, "skeleton", None) is not None:
        return conflict_clique_bound(problem.records, problem.conflicts,
                                     alignment=problem.alignment)
    return None
