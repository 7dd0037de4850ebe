"""The symmetric conflict CSR of :func:`workbench.memory.conflicts._csr`, compiled (Numba), for
large relations.

The same two counting passes as SciPy's routines there (an LSD radix sort: entries bucketed by
column, then the buckets walked in column order into their rows, so every row receives its
columns ascending), but reading each listed pair once for both of its directions and carrying no
data array: the passes allocate 8 bytes per entry where SciPy's path allocates 18 (both
directions concatenated, two int8 data arrays, a by-column copy).  On NNC's schedule of a
100k-op random DAG (29.3 M pairs) that growth of the process was most of the CSR's cost, as
system time.  Imported on first use (``conflicts._csr``); O(P + n).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def symmetric_csr(n: int, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, idx)`` of the symmetric relation of the pairs ``(rows[k], cols[k])`` (each
    unordered pair once, no self pairs): ``idx[ptr[i]:ptr[i + 1]]`` the partners of ``i``,
    ascending.  ``ptr`` int64, ``idx`` int32."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    for k in range(len(rows)):
        ptr[rows[k] + 1] += 1
        ptr[cols[k] + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    at = ptr[:n].copy()
    by_col = np.empty(ptr[n], dtype=np.int32)  # per column, its rows in input order
    for k in range(len(rows)):
        r, c = rows[k], cols[k]
        by_col[at[c]] = r
        at[c] += 1
        by_col[at[r]] = c
        at[r] += 1
    at[:] = ptr[:n]
    idx = np.empty(ptr[n], dtype=np.int32)
    for c in range(n):  # columns ascending: each row receives them in order
        for s in range(ptr[c], ptr[c + 1]):
            r = by_col[s]
            idx[at[r]] = c
            at[r] += 1
    return ptr, idx
