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


__all__ = ["default_cost_note"]
