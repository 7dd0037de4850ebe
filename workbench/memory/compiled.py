"""The compiled kernels where Numba imports: the placement
(:mod:`workbench.memory.placement_kernel`), the live-set sweep
(:mod:`workbench.memory.live_kernel`) and the conflict CSR (:mod:`workbench.memory.csr_kernel`),
found on first use so that importing the planners loads no compiler.

:func:`place_compiled` prepares the placement kernel's arrays from a :class:`ConflictGraph`
(O(n log n)); :func:`sweep_compiled` the sweep's from the sweep's inputs (O(V + E));
:func:`warm_kernel` compiles all three once (``scripts/setup.sh``), or loads Numba's cached
machine code.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from workbench.memory.conflicts import ConflictGraph, _csr, interval_graph

_KERNEL: Any = False  # not looked for yet
_SWEEP: Any = False


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


def sweep_kernel() -> Any:
    """The compiled live-set sweep module, or ``None`` where Numba does not import."""
    global _SWEEP
    if _SWEEP is False:
        try:
            from workbench.memory import live_kernel
        except ImportError:  # no Numba: the NumPy sweep
            _SWEEP = None
        else:
            _SWEEP = live_kernel
    return _SWEEP


def warm_kernel() -> bool:
    """Compile (or load from Numba's cache) the placement kernel, the live-set sweep and the CSR
    passes for the argument types their callers pass, on a two-tensor problem, a two-op schedule
    and one pair; ``False`` where Numba does not import.  ``scripts/setup.sh`` calls it so that
    the first large plan finds them compiled."""
    if kernel() is None or sweep_kernel() is None:
        return False
    place_compiled(interval_graph([0, 0], [0, 1]), np.array([4, 4], dtype=np.int64), [0, 1],
                   ["best"], None)
    # two ops on one stream: op 0 makes tensor 0, op 1 reads it (live_sets._Order's fields)
    order = SimpleNamespace(n=2, prev=[-1, 0], waits=[[], []], has_next=[True, False],
                            waiters=[0, 0], barriers=[])
    sweep_compiled(order, np.array([0], dtype=np.int64), [[1]], np.array([0]), [[0], []],
                   skeleton=True)
    _csr(2, np.array([0], dtype=np.int32), np.array([1], dtype=np.int32), engine="kernel")
    return True


def sweep_compiled(order: Any, births: np.ndarray, kept: Sequence[Sequence[int]],
                   heads: np.ndarray, produced: Sequence[Sequence[int]], *, skeleton: bool
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`workbench.memory.live_arrays.sweep_arrays` by the compiled sweep (its arrays
    prepared here, O(V + E + n log n))."""
    from workbench.memory.live_arrays import _Ranks

    compiled = sweep_kernel()
    if compiled is None:
        raise ValueError("the compiled live-set sweep needs Numba (pip install numba)")
    n = order.n
    ranks = _Ranks(n, births, kept, heads)
    waits = order.waits
    w_ptr = np.zeros(n + 1, dtype=np.int64)
    w_ptr[1:] = np.cumsum([len(w) for w in waits])
    w_idx = np.fromiter((a for w in waits for a in w), dtype=np.int64, count=int(w_ptr[-1]))
    p_ptr = np.zeros(n + 1, dtype=np.int64)
    p_ptr[1:] = np.cumsum([len(p) for p in produced])
    p_idx = np.fromiter((t for p in produced for t in p), dtype=np.int32, count=int(p_ptr[-1]))
    refs = np.array([int(h) + w for h, w in zip(order.has_next, order.waiters, strict=True)],
                    dtype=np.int64)
    return compiled.sweep_kernel(
        n, np.asarray(order.prev, dtype=np.int64), w_ptr, w_idx, refs,
        np.asarray(ranks.start, dtype=np.int64), ranks.full,
        np.asarray(ranks.user_start, dtype=np.int64), ranks.user_rank, ranks.user_bit,
        p_ptr, p_idx, ranks.tensor.astype(np.int32), np.asarray(order.barriers, dtype=np.int64),
        ranks.last_user, *ranks.flat, bool(skeleton))


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
