"""Memory budgets: how much address space a stage, a worker or a third-party reader may add.

A budget is a number of bytes a process may grow by, enforced with ``RLIMIT_AS`` (Linux): past
it an allocation fails (``MemoryError`` in Python and in the C extensions that report it)
instead of the machine's out-of-memory killer ending a process.  :func:`memory_budget` parses
what a user gives (``"2G"``, ``"auto"``, ``"none"``, bytes); :func:`cap_memory` caps the calling
process (a worker of :mod:`workbench._bounded`); :func:`address_space_headroom` caps it for a
block and restores the limit after.  Everything is a no-op where limits cannot be set.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any


def address_space_bytes() -> int | None:
    """This process's virtual memory size (``/proc/self/statm``), or None where there is none."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def cap_memory(memory_bytes: int) -> bool:
    """Limit this process's address space to its size now plus ``memory_bytes`` (never above the
    hard limit).  False where that cannot be done (no ``resource`` module, no ``/proc``)."""
    try:
        import resource
    except ImportError:  # not Unix
        return False
    now = address_space_bytes()
    if now is None:
        return False
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = now + memory_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return True


@contextlib.contextmanager
def address_space_headroom(memory_bytes: int | None = None) -> Iterator[None]:
    """Within the block, this process may grow by at most ``memory_bytes`` (default:
    :func:`default_memory_budget`) of address space: an allocation past it fails
    (``MemoryError``, or ``std::bad_alloc`` in C++ code) instead of the process being killed by
    the kernel's out-of-memory killer.  For third-party code that sizes its allocations from a
    file (ONNX's shape inference propagating a ``Range`` to 2**40).  The previous limit is
    restored after; a no-op where limits cannot be set.  Process-wide while it lasts."""
    try:
        import resource
    except ImportError:  # not Unix
        yield
        return
    budget = default_memory_budget() if memory_bytes is None else memory_bytes
    now = address_space_bytes()
    before = resource.getrlimit(resource.RLIMIT_AS)
    soft, hard = before
    cap = None if budget is None or now is None else now + budget
    if cap is not None and hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if cap is None or (soft != resource.RLIM_INFINITY and soft <= cap):
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, before)


def format_bytes(n: float) -> str:
    """``2 GiB``, ``500 MiB``, ``64 KiB`` or ``12 B``: a memory budget for a message."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:g} B"


def memory_cap() -> str:
    """This process's address-space cap for a message: ``"address-space cap 2 GiB
    (RLIMIT_AS)"``, or ``"no address-space cap set"`` (``ulimit -v`` unlimited)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return "no address-space cap known"
    if soft == resource.RLIM_INFINITY:
        return "no address-space cap set"
    return f"address-space cap {format_bytes(soft)} (RLIMIT_AS)"


#: The smallest memory budget (bytes a worker may add to what it inherits): 64 MiB.  Measured
#: (issue 34) with ``compare`` of a 4-op graph, every policy, the lazily loaded libraries
#: preloaded (:data:`workbench._bounded.CAPPED_PRELOAD`): 16 MiB runs every stage, 4 MiB
#: fails to schedule.  The cap is added to what the worker inherits, which it does not count:
#: after compare's imports the CLI holds 297 MiB of address space, 75 MiB resident.  64 MiB
#: leaves four times the measured need for a library a policy loads on first use.  Below it
#: every row would stop.
MIN_MEMORY_BUDGET = 64 << 20
#: The share of the machine's physical memory a budgeted stage may add by default.
DEFAULT_MEMORY_SHARE = 0.5
_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 10**3, "KIB": 2**10, "M": 2**20, "MB": 10**6,
          "MIB": 2**20, "G": 2**30, "GB": 10**9, "GIB": 2**30, "T": 2**40, "TB": 10**12,
          "TIB": 2**40}


def default_memory_budget() -> int | None:
    """:data:`DEFAULT_MEMORY_SHARE` of the machine's physical memory (``sysconf``), or None where
    the platform does not say."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return int(total * DEFAULT_MEMORY_SHARE) if total > 0 else None


def memory_budget(value: Any, *, what: str = "memory_budget_bytes") -> int | None:
    """A memory budget in bytes from ``value``: ``"auto"`` (:func:`default_memory_budget`),
    None / ``"none"`` (no limit), a number of bytes, or a size such as ``"2G"``, ``"500M"``,
    ``"1.5GiB"`` (K, M, G, T are powers of 1024; KB, MB, GB, TB powers of 1000), of at least
    :data:`MIN_MEMORY_BUDGET`.  Anything else (``0``, ``1K``, ``"lots"``) raises
    :class:`~workbench.errors.OptionError` naming ``what``."""
    from workbench.errors import OptionError

    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().upper()
        if text == "AUTO":
            return default_memory_budget()
        if text == "NONE":
            return None
        number = text.rstrip("BKMGTI")
        unit = text[len(number):]
        try:
            amount = float(number)
        except ValueError:
            amount = float("nan")
        if unit not in _UNITS or not 0 <= amount < 2**70 / _UNITS[unit]:
            raise OptionError(f"{what} must be a size such as 2G or 500M, 'auto' or 'none', "
                              f"got {value!r:.80}")
        size = int(amount * _UNITS[unit])
    elif isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**70:
        raise OptionError(f"{what} must be a positive number of bytes, a size such as '2G', "
                          f"'auto' or None, got {value!r:.80}")
    else:
        size = value
    if size < MIN_MEMORY_BUDGET:
        raise OptionError(f"{what} {value!r:.40} is below the {format_bytes(MIN_MEMORY_BUDGET)} "
                          f"a policy's worker needs to run at all (use 'none' for no limit)")
    return size
