"""Control flow and barriers: ``while`` and ``case_of`` hold sub-graphs (NNC's control flow, see
:mod:`workbench.control`); ``join`` and ``device_sync`` are the barriers a schedule may realise
its barriers with (:data:`~workbench.ops.registry.BARRIER_KINDS`).

None computes anything itself: the control package expands or runs the sub-graphs, and the
schedulers insert the barriers.
"""

from __future__ import annotations

from workbench.ops.kind import kind

#: The kinds other stages create or single out, by name: the control package builds ``while`` and
#: ``case_of`` ops, the schedulers realise barriers as ``join`` or ``device_sync``.
WHILE, CASE_OF, JOIN, DEVICE_SYNC = "while", "case_of", "join", "device_sync"

# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind(WHILE, "control", subgraphs=True),
    kind(CASE_OF, "control", subgraphs=True),
    kind(JOIN, "control"),
    kind(DEVICE_SYNC, "control"),
)
