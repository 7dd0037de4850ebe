"""Lower bounds for memory plans: the memory-over-time curve and its peak.

The peak of live bytes ("max breadth", notes/memory_planners.md §2 and SOMAS ``CalcLowerBound``
§1.4) is a lower bound on the arena of every valid offset plan, because all tensors live at one step
need disjoint bytes. Seed 004, "Memory Management" (SOMAS aims for reuse close to this limit).

>>> live_bytes_curve([(32, 0, 1), (28, 1, 4), (8, 3, 3)])
[32, 60, 28, 36, 28]
>>> peak_live_bytes([(32, 0, 1), (28, 1, 4)], alignment=64)
128
"""

from __future__ import annotations

from collections.abc import Iterable

from workbench.memory.plan import RecordLike, align_up, check_alignment, parse_records


def live_bytes_curve(records: Iterable[RecordLike], *, alignment: int = 1) -> list[int]:
    """Bytes live at each step ``0..max(last)``: ``sum(size for first <= t <= last)``.

    Sizes are rounded up to ``alignment`` first. A difference array gives O(n + steps).
    """
    recs = parse_records(records)
    align = check_alignment(alignment)
    if not recs:
        return []
    steps = max(r.last for r in recs) + 1
    diff = [0] * (steps + 1)
    for r in recs:
        size = align_up(r.size, align)
        diff[r.first] += size
        diff[r.last + 1] -= size
    curve, live = [], 0
    for t in range(steps):
        live += diff[t]
        curve.append(live)
    return curve


def peak_live_bytes(records: Iterable[RecordLike], *, alignment: int = 1) -> int:
    """The offset lower bound: the maximum of :func:`live_bytes_curve` (0 without records).

    Complexity: O(n + steps).
    """
    return max(live_bytes_curve(records, alignment=alignment), default=0)
