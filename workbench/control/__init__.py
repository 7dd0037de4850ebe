"""Control flow: NNC's ``while`` and ``case..of`` (seed 000, "while and case..of").

* :mod:`workbench.control.ops`: the data model (ops whose ``attrs`` hold sub-graphs), builders
  :func:`while_op` / :func:`case_of_op` and the checks the Graph runs on them;
* :mod:`workbench.control.expand`: a Schedule with control flow → the flat schedule of one run
  (every executed op instance, iteration-indexed) and the host's decision points;
* :mod:`workbench.control.host`: the simulator's host for such runs (``control="coroutine"`` or
  ``"blocking"``).

Only the data model is imported here, so ``workbench.values.graph`` can reach it lazily.

Its op data model (``control.ops``) is values layer and may import only base and the graph
values; ``expand``, ``host`` and ``trace`` are engine layer.
"""

from __future__ import annotations

from workbench.control.ops import (
    CONTROL_KINDS,
    branch_index,
    case_of_op,
    check_control_op,
    subgraphs,
    while_op,
)

__all__ = ["CONTROL_KINDS", "branch_index", "case_of_op", "check_control_op", "subgraphs",
           "while_op"]
