"""Order side-effecting ops with control edges (seed 003 §7.5.2, Fig. 7.5.4 → 7.5.5; notes B.3).

The textbook's ``x = y; x = z; r = x - y`` becomes three ops with no data path between them: a
scheduler may run the Sub first and compute ``r = x₀ - y``.  MindSpore fixes this with *auto-monad*:
a ``U`` token threads through every side-effecting op in program order (``Assign(x, v, u)``,
``UpdateState``, ``Load(x, u)``), so the ordering becomes data dependency.  This pass adds the same
ordering as control edges (drawn dashed by :func:`workbench.viz.dag`).

Rules (:mod:`workbench.values.state`, the one rule the policies and both validators apply too),
per piece of state (a parameter, or a named resource such as ``"io"`` for prints), walking the ops
in program order (:meth:`Graph.topo_order`, which *is* program order whenever that order is
topological):

* a **write** orders after the last earlier write and after every read since that write (hence,
  transitively, after every earlier read or write of that state);
* a **read** orders after the last earlier write.

Who writes what (:func:`state_effects`): ops of a kind in :data:`WRITE_KINDS` (``assign``,
``assign_add``, ``scatter_update``, ...) write ``attrs["writes"]`` or else their first input;
``print``-like kinds (:data:`IO_KINDS`) write the virtual state ``"io"``; any op may name written
state in ``attrs["writes"]`` (a string or a list).  Reads: ``attrs["reads"]``, plus every input
that is a ``parameter`` tensor some op writes.

Simplified compared with auto-monad: auto-monad makes ONE total order of all side-effect ops (reads
included, all states on one chain).  Here only conflicting pairs are ordered — read-after-write,
write-after-read, write-after-write on the same state — so two reads of a parameter, or writes to
different parameters, stay free to run concurrently.  Every execution the pass allows gives the
same values as program order.  Edges already implied by a data edge are not added.  Complexity:
O(V + E + added edges).

Examples
--------
>>> from workbench.models import textbook_side_effects
>>> add_side_effect_edges(textbook_side_effects()).control_edges
(('Assign_1', 'Assign_2'), ('Assign_2', 'Sub_1'))
"""

from __future__ import annotations

from workbench.ops import IO_KINDS as IO_KINDS  # re-exported
from workbench.ops import WRITE_KINDS as WRITE_KINDS  # re-exported
from workbench.values.graph import Graph
from workbench.values.state import IO_STATE as IO_STATE  # re-exported
from workbench.values.state import state_effects as state_effects  # re-exported
from workbench.values.state import state_order


def add_side_effect_edges(graph: Graph) -> Graph:
    """Return a copy of ``graph`` with control edges that keep program order among all ops touching
    the same state (:func:`workbench.values.state.state_order`; see the module docstring).

    A graph without side effects comes back unchanged (the same graph, found before the edge set
    is collected: 1.7 s at a million ops).  Complexity: O(V + E + k) for k added edges.
    """
    pairs = state_order(graph)
    if not pairs:
        return graph
    existing = set(graph.edges)
    added = [(a, b) for a, b, _ in pairs if (a, b) not in existing]
    if not added:
        return graph
    return graph.replace(control_edges=[*graph.control_edges, *added])
