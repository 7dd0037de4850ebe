"""The order of a comparison's rows: fastest first, exact ties broken by a stated rule.

One rule for every place that ranks policies (``Comparison.table`` and its ``best``, the report's
table and charts, the CLI, the notebook view and the app): the smallest ``makespan_us`` first
(rows without one last); policies whose makespans are equal as the tables show them (within
:data:`TIE_US` of the fastest of their group: the simulator's float sums differ by nanoseconds
between schedules that run the same critical path) go to the fewest ``streams``, then the fewest
``syncs``, then the order the policies were given in (:data:`TIE_RULE` says so in words).  Pure
pandas, no plotting.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Makespans within this many µs of the fastest of their group are a tie: less than half the
#: 0.1 µs every table shows, so tied rows show the same makespan.
TIE_US = 0.05
#: The tie rule in words, as the report and the CLI say it.
TIE_RULE = "ties go to fewest streams, then fewest syncs, then policy order"


def _key(table: pd.DataFrame, column: str) -> np.ndarray:
    """``column`` as floats (NaN and missing: +inf, so that they sort last)."""
    if column not in table.columns:
        return np.zeros(len(table))
    values = pd.to_numeric(table[column], errors="coerce").astype(float).to_numpy()
    return np.where(np.isnan(values), np.inf, values)


def tie_groups(makespans: np.ndarray, tol: float = TIE_US) -> np.ndarray:
    """For each makespan, the least makespan of its tie group: walking them in increasing
    order, a makespan within ``tol`` of the current group's first joins it, else starts the
    next group (so a group never spans more than ``tol``).  +inf stays +inf.  O(n log n).

    >>> tie_groups(np.array([802.591, 802.577, 809.2, 802.584, np.inf])).tolist()
    [802.577, 802.577, 809.2, 802.577, inf]
    """
    out = np.array(makespans, dtype=float)
    leader = None
    for i in np.argsort(out, kind="stable"):
        m = out[i]
        if not np.isfinite(m):
            continue
        if leader is None or m - leader > tol:
            leader = m
        out[i] = leader
    return out


def fastest_first(table: pd.DataFrame) -> pd.DataFrame:
    """``table``'s rows fastest first: by ``makespan_us`` (rows without one last), ties
    (:func:`tie_groups`: within :data:`TIE_US`) by fewest ``streams``, then fewest ``syncs``,
    then the rows' order in ``table`` (stable).  The index labels are kept; a table without
    ``makespan_us`` is returned as it is.  O(n log n).

    >>> t = pd.DataFrame({"policy": ["serial", "gpto", "nnc", "bfs"],
    ...                   "makespan_us": [10.0, 8.0, 8.01, 8.0], "streams": [1, 4, 2, 2],
    ...                   "syncs": [0, 9, 5, 3]})
    >>> fastest_first(t)["policy"].tolist()
    ['bfs', 'nnc', 'gpto', 'serial']
    """
    if "makespan_us" not in table.columns or len(table) < 2:
        return table
    order = np.lexsort((np.arange(len(table)), _key(table, "syncs"), _key(table, "streams"),
                        tie_groups(_key(table, "makespan_us"))))
    return table.iloc[order]


def exact_ties(table: pd.DataFrame, policy: str) -> list[str]:
    """The other policies of ``table`` in ``policy``'s tie group (:func:`tie_groups`: the same
    makespan as the tables show it), in ``table``'s order; empty when none is or ``policy`` has
    no makespan.  O(n log n).

    >>> t = pd.DataFrame({"policy": ["a", "b", "c"], "makespan_us": [8.0, 8.04, 9.0]})
    >>> exact_ties(t, "a")
    ['b']
    """
    if "makespan_us" not in table.columns:
        return []
    groups = tie_groups(_key(table, "makespan_us"))
    names = [str(p) for p in table["policy"]]
    if policy not in names:
        return []
    own = groups[names.index(policy)]
    if not np.isfinite(own):
        return []
    return [p for p, g in zip(names, groups, strict=True) if p != policy and g == own]


__all__ = ["TIE_RULE", "TIE_US", "exact_ties", "fastest_first", "tie_groups"]
