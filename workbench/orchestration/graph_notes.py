"""One-line notes about the graph a comparison ranks: what its figures rest on.

:func:`default_cost_note` names the ops an importer could not cost from their shapes (``attrs
["cost"] == "default"``: FLOPs = output elements), with counts per kind, so a reader of the
ranking knows which ops are guesses.  O(ops).

>>> import workbench as wb
>>> g = wb.Graph.from_edges([("a", "b")])
>>> default_cost_note(g) is None
True
"""

from __future__ import annotations

from collections import Counter

from workbench.values.graph import Graph


def default_cost_note(graph: Graph, *, listed: int = 6) -> str | None:
    """A note naming the default-cost ops of ``graph`` (kinds with counts, the ``listed`` most
    common), or ``None`` when every op was costed from its shapes."""
    kinds = Counter(op.kind for op in graph.ops if op.attrs.get("cost") == "default")
    if not kinds:
        return None
    total = sum(kinds.values())
    shown = ", ".join(f"{k} ×{n}" for k, n in kinds.most_common(listed))
    more = "" if len(kinds) <= listed else f" and {len(kinds) - listed} more kinds"
    return (f"{total} of {len(graph)} ops have a default cost (FLOPs = output elements; their "
            f"shapes or kinds were unknown to the importer): {shown}{more}")


def measured_times_note(graph: Graph, device: str) -> str | None:
    """A note when ops carry their own times (``duration_us``: an imported profile's measured
    times, or times set by hand): the simulator keeps those as they are on ``device`` (only the
    streams, syncs and launches are the device's), and ops recorded on the host CPU are named;
    ``None`` when every op is costed by the device model.  O(ops)."""
    timed = [op for op in graph.ops if op.duration_us is not None]
    if not timed:
        return None
    on_cpu = sum(op.device == "cpu" for op in timed)
    where = (f"; {on_cpu} of them ran on the host CPU where they were recorded" if on_cpu
             else "")
    return (f"{len(timed)} of {len(graph)} ops carry their own times (duration_us: given by "
            f"hand or measured in an imported profile{where}): the simulator keeps those times "
            f"as they are, and only the streams, syncs and launches around them are {device}'s")


__all__ = ["default_cost_note", "measured_times_note"]
