"""The independent oracle for memory plans (STYLE.md R5).

Written apart from the planners on purpose: it recomputes which tensors are live together by brute
force, straight from the records, and imports no planner code (only the plan's data types and the
error class). Every planner test runs its plans through :func:`check_no_overlap`.
"""

from __future__ import annotations

from workbench.errors import MemoryPlanError
from workbench.memory.plan import MemoryPlan, UsageRecord


def _who(i: int, r: UsageRecord, offset: int) -> str:
    label = f"tensor {i} {r.name!r}" if r.name else f"tensor {i}"
    return f"{label} bytes [{offset}, {offset + r.size}) steps {r.first}..{r.last}"


def _must_not_share(plan: MemoryPlan) -> list[tuple[int, int]]:
    recs = plan.records
    n = len(recs)
    if plan.conflicts is None:
        return [
            (i, j)
            for i in range(n)
            for j in range(i + 1, n)
            if recs[i].first <= recs[j].last and recs[j].first <= recs[i].last
        ]
    pairs = []
    for pair in sorted(plan.conflicts):
        i, j = pair
        if not (0 <= i < n and 0 <= j < n) or i == j:
            raise MemoryPlanError(f"plan {plan.planner!r}: conflict {pair} names unknown tensors")
        pairs.append(pair)
    return pairs


def _brute_force_peak(records: tuple[UsageRecord, ...]) -> int:
    # The live set only grows at a first step, so the peak is reached at one of them.
    starts = {r.first for r in records}
    return max((sum(r.size for r in records if r.first <= t <= r.last) for t in starts), default=0)


def check_no_overlap(plan: MemoryPlan) -> None:
    """Raise MemoryPlanError unless ``plan`` is a valid arena layout.

    Checks: offsets are non-negative integers aligned to ``plan.alignment``; ``arena_bytes`` covers
    every ``offset + size`` and is at least both ``plan.lower_bound`` and the brute-force peak of
    live bytes; no two conflicting tensors (interval overlap, or the explicit conflict set when the
    plan has one) share a byte. Zero-byte tensors occupy no bytes. The message is one line naming
    both tensors, their byte ranges and live steps. Complexity: O(n² + n·steps).

    >>> from workbench.memory.plan import parse_records
    >>> bad = MemoryPlan("bad", parse_records([(8, 0, 1, "a"), (8, 1, 2, "b")]), (0, 4), 12, 16)
    >>> check_no_overlap(bad)
    Traceback (most recent call last):
    ...
    workbench.errors.MemoryPlanError: plan 'bad': arena 12 is below the lower bound 16
    """
    recs, offsets, align = plan.records, plan.offsets, plan.alignment
    name = plan.planner
    if len(offsets) != len(recs):
        raise MemoryPlanError(f"plan {name!r}: {len(offsets)} offsets for {len(recs)} records")
    if not isinstance(align, int) or align < 1:
        raise MemoryPlanError(f"plan {name!r}: alignment {align!r} is not a positive integer")
    for i, (r, off) in enumerate(zip(recs, offsets, strict=True)):
        if isinstance(off, bool) or not isinstance(off, int) or off < 0:
            raise MemoryPlanError(f"plan {name!r}: {_who(i, r, 0)} has bad offset {off!r}")
        if off % align:
            raise MemoryPlanError(f"plan {name!r}: {_who(i, r, off)} is not {align}-byte aligned")
        if off + r.size > plan.arena_bytes:
            raise MemoryPlanError(
                f"plan {name!r}: {_who(i, r, off)} ends past the arena of {plan.arena_bytes} bytes"
            )
    if plan.arena_bytes < plan.lower_bound:
        raise MemoryPlanError(
            f"plan {name!r}: arena {plan.arena_bytes} is below the lower bound {plan.lower_bound}"
        )
    peak = _brute_force_peak(recs)
    if plan.arena_bytes < peak:
        raise MemoryPlanError(
            f"plan {name!r}: arena {plan.arena_bytes} is below the peak of live bytes {peak}"
        )
    why = "while both live" if plan.conflicts is None else "but are marked as conflicting"
    for i, j in _must_not_share(plan):
        a, b = recs[i], recs[j]
        if a.size == 0 or b.size == 0:
            continue
        if offsets[i] < offsets[j] + b.size and offsets[j] < offsets[i] + a.size:
            raise MemoryPlanError(
                f"plan {name!r}: {_who(i, a, offsets[i])} overlaps {_who(j, b, offsets[j])} {why}"
            )
