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

import importlib
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from workbench.memory.conflicts import ConflictGraph, _csr, interval_graph
from workbench.memory.watch import Watch, run_watched

#: compiled module name -> the module, or None where Numba does not import (looked for once)
_FOUND: dict[str, Any] = {}


def _compiled(name: str) -> Any:
    """``workbench.memory.<name>``, imported on first use, or ``None`` without Numba."""
    if name not in _FOUND:
        try:
            _FOUND[name] = importlib.import_module(f"workbench.memory.{name}")
        except ImportError:  # no Numba on this platform: the NumPy forms do the work
            _FOUND[name] = None
    return _FOUND[name]


def kernel() -> Any:
    """The compiled placement module, or ``None`` where Numba does not import (then NumPy)."""
    return _compiled("placement_kernel")


def sweep_kernel() -> Any:
    """The compiled live-set sweep module, or ``None`` where Numba does not import."""
    return _compiled("live_kernel")


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
                   heads: np.ndarray, produced: Sequence[Sequence[int]], *, skeleton: bool,
                   max_pairs: int | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`workbench.memory.live_arrays.sweep_arrays` by the compiled sweep (its arrays
    prepared here, O(V + E + n log n)), with the same cap on the listed pairs."""
    from workbench.memory.live_arrays import TooManyPairs, _Ranks

    compiled = sweep_kernel()
    if compiled is None:
        raise ValueError("the compiled live-set sweep needs Numba (pip install numba)")
    n = order.n
    ranks = _Ranks(n, births, kept, heads)
    w_ptr, w_idx = _flattened(order.waits, np.int64)
    p_ptr, p_idx = _flattened(produced, np.int32)
    refs = np.array([int(h) + w for h, w in zip(order.has_next, order.waiters, strict=True)],
                    dtype=np.int64)
    *arrays, stopped_at = compiled.sweep_kernel(
        n, np.asarray(order.prev, dtype=np.int64), w_ptr, w_idx, refs,
        np.asarray(ranks.start, dtype=np.int64), ranks.full,
        np.asarray(ranks.user_start, dtype=np.int64), ranks.user_rank, ranks.user_bit,
        p_ptr, p_idx, ranks.tensor.astype(np.int32), np.asarray(order.barriers, dtype=np.int64),
        ranks.last_user, *ranks.flat, bool(skeleton), -1 if max_pairs is None else max_pairs)
    if stopped_at >= 0:
        raise TooManyPairs(max_pairs or 0, int(stopped_at), n)
    return tuple(arrays)  # type: ignore[return-value]


def _flattened(lists: Sequence[Sequence[int]], dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """``lists`` as a CSR: ``(ptr, values)``, ``values[ptr[i]:ptr[i + 1]]`` being list ``i``.
    O(total)."""
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    values = np.fromiter((v for x in lists for v in x), dtype=dtype, count=int(ptr[-1]))
    return ptr, values


def place_compiled(graph: ConflictGraph, size: np.ndarray, order: Sequence[int],
                   fits: Sequence[str], stop_at: int | None, watch: Watch | None = None
                   ) -> tuple[np.ndarray, list[int | None]]:
    """:func:`workbench.memory.placement.place_until` by the compiled kernel (its arrays
    prepared here, O(n log n)), watched by ``watch`` (:func:`~workbench.memory.watch.
    run_watched`)."""
    compiled = kernel()
    if compiled is None:
        raise ValueError("the compiled placement engine needs Numba (pip install numba)")
    births = np.ascontiguousarray(graph.births, dtype=np.int64)
    rank = np.unique(births, return_inverse=True)[1].astype(np.int64).ravel()
    out = np.zeros((len(fits), graph.n), dtype=np.int64)
    stopped = np.full(len(fits), -1, dtype=np.int64)
    args = (np.ascontiguousarray(order, dtype=np.int64),
            np.ascontiguousarray(size, dtype=np.int64), births, rank,
            np.ascontiguousarray(graph.tails, dtype=np.bool_),
            np.ascontiguousarray(graph.tail_key, dtype=np.int64), bool(graph.tail_key_complete),
            np.ascontiguousarray(graph.ptr, dtype=np.int64),
            np.ascontiguousarray(graph.idx, dtype=np.int32),
            np.array([compiled.FIT_CODES[f] for f in fits], dtype=np.int64),
            -1 if stop_at is None else int(stop_at), out, stopped)
    run_watched(lambda control: compiled.place_kernel(*args, control), watch, len(order))
    return out, [None if int(t) < 0 else int(t) for t in stopped]
