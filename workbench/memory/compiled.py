"""Which engine places offsets: the compiled kernel (:mod:`workbench.memory.placement_kernel`)
where Numba imports, found on first use so that importing the planners loads no compiler.

:func:`place_compiled` prepares the kernel's arrays from a :class:`ConflictGraph` (O(n log n));
:func:`warm_kernel` compiles it once (``scripts/setup.sh``), or loads Numba's cached machine code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.memory.conflicts import ConflictGraph, interval_graph

_KERNEL: Any = False  # not looked for yet


def kernel() -> Any:
    """The compiled placement module, or ``None`` where Numba does not import (then NumPy)."""
    global _KERNEL
    if _KERNEL is False:
        try:
            from workbench.memory import placement_kernel
        except ImportError:  # no Numba on this platform: the NumPy loop places everything
            _KERNEL = None
        else:
            _KERNEL = placement_kernel
    return _KERNEL


def warm_kernel() -> bool:
    """Compile (or load from Numba's cache) the placement kernel for the argument types that
    :func:`workbench.memory.placement.place_until` passes it, on a two-tensor problem;
    ``False`` where Numba does not import.  ``scripts/setup.sh`` calls it so that the first
    large plan finds it compiled."""
    if kernel() is None:
        return False
    place_compiled(interval_graph([0, 0], [0, 1]), np.array([4, 4], dtype=np.int64), [0, 1],
                   ["best"], None)
    return True


def place_compiled(graph: ConflictGraph, size: np.ndarray, order: Sequence[int],
                   fits: Sequence[str], stop_at: int | None
                   ) -> tuple[np.ndarray, list[int | None]]:
    """:func:`workbench.memory.placement.place_until` by the compiled kernel (its arrays
    prepared here, O(n log n))."""
    compiled = kernel()
    if compiled is None:
        raise ValueError("the compiled placement engine needs Numba (pip install numba)")
    births = np.ascontiguousarray(graph.births, dtype=np.int64)
    rank = np.unique(births, return_inverse=True)[1].astype(np.int64).ravel()
    out = np.zeros((len(fits), graph.n), dtype=np.int64)
    stopped = np.full(len(fits), -1, dtype=np.int64)
    compiled.place_kernel(np.ascontiguousarray(order, dtype=np.int64),
                          np.ascontiguousarray(size, dtype=np.int64), births, rank,
                          np.ascontiguousarray(graph.tails, dtype=np.bool_),
                          np.ascontiguousarray(graph.tail_key, dtype=np.int64),
                          bool(graph.tail_key_complete),
                          np.ascontiguousarray(graph.ptr, dtype=np.int64),
                          np.ascontiguousarray(graph.idx, dtype=np.int32),
                          np.array([compiled.FIT_CODES[f] for f in fits], dtype=np.int64),
                          -1 if stop_at is None else int(stop_at), out, stopped)
    return out, [None if int(t) < 0 else int(t) for t in stopped]
