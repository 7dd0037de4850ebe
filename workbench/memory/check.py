"""The independent oracle for memory plans (STYLE.md R5).

Written apart from the planners on purpose: it imports no planner code (only the plan's data types
and the error class) and uses different algorithms from them.  The planners search for gaps among
conflicting tensors; the oracle sweeps:

* **over time** when interval overlap decides (``plan.conflicts is None``): tensors are born and
  die in step order, and the byte ranges of the live ones are kept in a list sorted by offset.
  Live tensors must be pairwise disjoint, so a newborn only has to be compared with its two
  neighbours in that list;
* **over bytes** when the plan carries an explicit conflict set: tensors sorted by offset, each
  compared with the earlier ones whose ranges reach it, and every pair that shares a byte is looked
  up in the conflict set.

The peak of live bytes is recomputed by its own sweep.  Every planner test runs its plans through
:func:`check_no_overlap`.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort

from workbench.errors import MemoryPlanError
from workbench.memory.plan import MemoryPlan, UsageRecord


def _who(i: int, r: UsageRecord, offset: int) -> str:
    label = f"tensor {i} {r.name!r}" if r.name else f"tensor {i}"
    return f"{label} bytes [{offset}, {offset + r.size}) steps {r.first}..{r.last}"


def _sweep_peak(records: tuple[UsageRecord, ...]) -> int:
    """Peak of live bytes: births before deaths at the same step."""
    events = sorted([(r.first, 0, r.size) for r in records]
                    + [(r.last, 1, -r.size) for r in records])
    live = peak = 0
    for _, _, delta in events:
        live += delta
        peak = max(peak, live)
    return peak


def _time_sweep(plan: MemoryPlan) -> tuple[int, int] | None:
    """A pair of tensors live at one step whose byte ranges intersect, or None."""
    recs, offsets = plan.records, plan.offsets
    order = sorted((r.first, i) for i, r in enumerate(recs) if r.size)
    live: list[tuple[int, int]] = []  # (offset, index), sorted; pairwise disjoint byte ranges
    dying: list[tuple[int, int, int]] = []  # heap of (last step, offset, index)
    for first, i in order:
        while dying and dying[0][0] < first:
            _, off, j = heapq.heappop(dying)
            del live[bisect_left(live, (off, j))]
        start, end = offsets[i], offsets[i] + recs[i].size
        k = bisect_left(live, (start, i))
        for j_off, j in live[max(0, k - 1):k + 1]:
            if j_off < end and start < j_off + recs[j].size:
                return (min(i, j), max(i, j))
        insort(live, (start, i))
        heapq.heappush(dying, (recs[i].last, start, i))
    return None


def _byte_sweep(plan: MemoryPlan) -> tuple[int, int] | None:
    """A conflicting pair (per ``plan.conflicts``) whose byte ranges intersect, or None."""
    recs, offsets, conflicts = plan.records, plan.offsets, plan.conflicts
    assert conflicts is not None
    order = sorted((offsets[i], i) for i, r in enumerate(recs) if r.size)
    reaching: list[tuple[int, int]] = []  # heap of (end offset, index) of earlier tensors
    for start, i in order:
        while reaching and reaching[0][0] <= start:
            heapq.heappop(reaching)
        for _, j in reaching:
            pair = (min(i, j), max(i, j))
            if pair in conflicts:
                return pair
        heapq.heappush(reaching, (start + recs[i].size, i))
    return None


def _check_conflict_indices(plan: MemoryPlan) -> None:
    if plan.conflicts is None or not isinstance(plan.conflicts, frozenset):
        return
    n = len(plan.records)
    for pair in sorted(plan.conflicts):
        i, j = pair
        if not (0 <= i < n and 0 <= j < n) or i == j:
            raise MemoryPlanError(f"plan {plan.planner!r}: conflict {pair} names unknown tensors")


def check_no_overlap(plan: MemoryPlan) -> None:
    """Raise MemoryPlanError unless ``plan`` is a valid arena layout.

    Checks: offsets are non-negative integers aligned to ``plan.alignment``; ``arena_bytes`` covers
    every ``offset + size`` and is at least both ``plan.lower_bound`` and the recomputed peak of
    live bytes; no two conflicting tensors (interval overlap, or the explicit conflict set when the
    plan has one) share a byte. Zero-byte tensors occupy no bytes. The message is one line naming
    both tensors, their byte ranges and live steps. Complexity: O(n log n + L) for a time sweep
    (L live tensors at a time, list insertions), O(n log n + B) for a byte sweep (B pairs of
    tensors that share bytes, each looked up in the conflict set).

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
    peak = _sweep_peak(recs)
    if plan.arena_bytes < peak:
        raise MemoryPlanError(
            f"plan {name!r}: arena {plan.arena_bytes} is below the peak of live bytes {peak}"
        )
    _check_conflict_indices(plan)
    clash = _time_sweep(plan) if plan.conflicts is None else _byte_sweep(plan)
    if clash is not None:
        i, j = clash
        a, b = recs[i], recs[j]
        why = "while both live" if plan.conflicts is None else "but are marked as conflicting"
        raise MemoryPlanError(
            f"plan {name!r}: {_who(i, a, offsets[i])} overlaps {_who(j, b, offsets[j])} {why}"
        )
