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
    monkeypatch.delitem(sys.modules, "workbench.memory.placement_kernel", raising=False)
    # (and off the package: ``from workbench.memory import placement_kernel`` reads it there)
    monkeypatch.delattr(memory, "placement_kernel", raising=False)
    monkeypatch.setattr(compiled, "_KERNEL", False)  # not looked for yet


def test_without_numba_auto_places_with_numpy(no_numba: None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(placement, "KERNEL_MIN_TENSORS", 0)
    graph = interval_graph([0, 0, 1], [1, 2, 2])
    rows, stopped = place_until(graph, np.array([4, 4, 4]), [0, 1, 2], ["best", "first"])
    assert rows.tolist() == [[0, 4, 8]] * 2 and stopped == [None, None]  # all three meet at 1
    assert compiled.kernel() is None and not compiled.warm_kernel()


def test_without_numba_the_kernel_engine_is_refused_in_one_line(no_numba: None) -> None:
    graph = interval_graph([0], [0])
    with pytest.raises(ValueError, match=r"needs Numba \(pip install numba\)"):
        place_until(graph, np.array([4]), [0], ["best"], engine="kernel")
