"""Where Numba does not import (the GPU image, a platform without wheels), large plans fall back
to the NumPy loop with the same offsets, and only an explicit ``engine="kernel"`` is refused, in
one line.  Runs with or without Numba installed: its import is made to fail here."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from workbench import memory
from workbench.memory import compiled, placement
from workbench.memory.conflicts import interval_graph
from workbench.memory.placement import place_until


@pytest.fixture
def no_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba -> ImportError
    for name in ("placement_kernel", "live_kernel", "csr_kernel"):
        monkeypatch.delitem(sys.modules, f"workbench.memory.{name}", raising=False)
        # (and off the package: ``from workbench.memory import ...`` reads it there)
        monkeypatch.delattr(memory, name, raising=False)
    monkeypatch.setattr(compiled, "_FOUND", {})  # not looked for yet


def test_without_numba_auto_places_with_numpy(no_numba: None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(placement, "KERNEL_MIN_TENSORS", 0)
    graph = interval_graph([0, 0, 1], [1, 2, 2])
    rows, stopped = place_until(graph, np.array([4, 4, 4]), [0, 1, 2], ["best", "first"])
    assert rows.tolist() == [[0, 4, 8]] * 2 and stopped == [None, None]  # all three meet at 1
    assert compiled.kernel() is None and not compiled.warm_kernel()


def test_without_numba_a_large_multi_stream_plan_uses_the_numpy_forms(
        no_numba: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past every kernel's threshold (2,000 ops and tensors) the sweep, the CSR and the placement
    fall back to NumPy and SciPy without Numba, and the plan is the compiled one's."""
    import workbench as wb

    schedule = wb.schedule(wb.models.random_dag(2_500, seed=5), "nnc")
    plan = wb.plan_memory(schedule, "greedy_by_size")
    assert compiled.sweep_kernel() is None and compiled.kernel() is None
    assert "workbench.memory.csr_kernel" not in sys.modules
    monkeypatch.undo()  # Numba back
    assert wb.plan_memory(schedule, "greedy_by_size").offsets == plan.offsets
    assert compiled.sweep_kernel() is not None


def test_without_numba_the_kernel_engine_is_refused_in_one_line(no_numba: None) -> None:
    graph = interval_graph([0], [0])
    with pytest.raises(ValueError, match=r"needs Numba \(pip install numba\)"):
        place_until(graph, np.array([4]), [0], ["best"], engine="kernel")
