"""The symmetric conflict CSR of :func:`workbench.memory.conflicts._csr`, compiled (Numba), for
large relations.

Two counting passes, an LSD radix sort: every pair placed, for both of its directions, in the
bucket of its column, then the buckets walked in column order into their rows, so every row
receives its columns ascending.  No data array is carried: 8 bytes allocated per entry.  On
NNC's schedule of a 100k-op random DAG (29.3 M pairs) 0.63 CPU s, against 2.4 for SciPy's COO
-> CSR conversion and its per-row sort, which also allocates about 18 bytes an entry (the
growth of the process cost that much again as system time on a first call).  Imported on
first use (``conflicts._csr``); O(P + n).
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
