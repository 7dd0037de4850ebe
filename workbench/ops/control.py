"""Control flow and barriers: ``while`` and ``case_of`` hold sub-graphs (NNC's control flow, see
:mod:`workbench.control`); ``join`` and ``device_sync`` are the barriers a schedule may realise
its barriers with (:data:`~workbench.ops.registry.BARRIER_KINDS`).

None computes anything itself: the control package expands or runs the sub-graphs, and the
schedulers insert the barriers.
"""

from __future__ import annotations

from workbench.ops.kind import kind

# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind("while", "control", subgraphs=True),
    kind("case_of", "control", subgraphs=True),
    kind("join", "control"),
    kind("device_sync", "control"),
)
