"""The cyclic garbage collector paused around a hot loop that makes no reference cycles.

A loop that allocates millions of small tuples and lists (the simulator's event loop and its cost
model) triggers a young-generation collection every 700 allocations, and every few of those a
full one that walks every live object of the process: in a long fit (the H200 refit simulates
about 2,000 schedules) the collector took 18% of the time with nothing to collect.  Reference
counting still frees everything as usual; only cycles wait until the block ends (the collector
is the process's: other threads' cycles wait too).  Paused in the fit, the text and trace
loaders, and around each policy in :func:`workbench.schedule`.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic collector for the block and restore its state after (nested blocks
    and a collector the caller already disabled are left as they are).  O(1)."""
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def without_gc(function: F) -> F:
    """Decorator: ``function`` runs inside :func:`paused_gc`."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with paused_gc():
            return function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


__all__ = ["paused_gc", "without_gc"]
