"""Dynamic allocation through MindSpore's BestFit memory pool (seed 004 "Memory Management").

The seed's pool: *slicing* (best-fit idle area, the excess split off as a new idle area), *merge*
(freed neighbours coalesce), *expansion* (a new block from the device when nothing fits) and
*defragmentation* (when no single idle area fits but enough memory is idle). Details follow
``DynamicMemPoolBestFit`` (notes/memory_planners.md §6.1):

* sizes round up to ``alignment`` (512 B) and a 0-byte request takes ``alignment`` bytes;
* blocks are sorted by address (block ``k`` sits after block ``k - 1``); each holds an
  address-ordered run of bufs, idle or used;
* alloc: the smallest idle buf with size >= request; among idle bufs of equal size the one that
  became idle first (the seed's idle multimap keyed by size keeps insertion order, so
  ``lower_bound`` finds the oldest); the tail is split off as a new idle buf when it is at least
  ``alignment`` bytes;
* nothing fits: if ``defragment`` and some block's idle bytes add up to the request, that block
  (lowest address first) is compacted: its used bufs slide down in address order and the idle space
  becomes one buf at its end (counted in ``n_defrags``; bufs cannot span blocks, so the total idle
  space is judged per block). Otherwise a new block of ``chunk_bytes * 2**k >= request`` bytes is
  added (counted in ``n_expansions``; the first block counts too);
* free: the buf turns idle and merges with an idle next, then an idle previous buf of its block.

Simplified: one pool (no persistent/common split, no per-stream idle maps), no device-memory cap.
``offsets`` keeps the address a tensor got when it was allocated (compaction may move it later).

>>> r = simulate_pool([(0.0, "alloc", "a", 1000), (1.0, "alloc", "b", 100), (2.0, "free", "a", 0)],
...                   chunk_bytes=4096)
>>> r.offsets, r.peak_in_use, r.peak_reserved, r.n_expansions
({'a': (0, 0), 'b': (0, 1024)}, 1536, 4096, 1)
"""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workbench.errors import MemoryPlanError, OptionError
from workbench.memory.plan import RecordLike, align_up, parse_records

if TYPE_CHECKING:   # imported where a timeline is built: the CLI's listings start fast
    import pandas as pd

Event = tuple[float, str, str, int]  # (time_us, "alloc" | "free", tensor, size_bytes)
Address = tuple[int, int]  # (block, offset inside the block)
TIMELINE_COLUMNS = [
    "time_us",
    "action",
    "tensor",
    "size",
    "in_use",
    "reserved",
    "largest_free",
    "fragmentation",
]


@dataclass(frozen=True, eq=False)
class PoolResult:
    """What a replay through the pool did: one timeline row per event, plus totals."""

    timeline: pd.DataFrame
    peak_reserved: int
    peak_in_use: int
    n_expansions: int
    n_defrags: int
    offsets: dict[str, Address]


class _Pool:
    """Mutable pool state, private to one :func:`simulate_pool` call."""

    def __init__(self, alignment: int, chunk_bytes: int) -> None:
        self.alignment, self.chunk = alignment, chunk_bytes
        self.blocks: list[int] = []  # block sizes
        self.bufs: list[dict[int, list]] = []  # per block: offset -> [size, tensor or None]
        self.starts: list[list[int]] = []  # per block: sorted buf offsets
        self.idle: list[tuple[int, int, int, int]] = []  # sorted (size, idle since, block, offset)
        self.idle_since: dict[Address, int] = {}  # (block, offset) -> insertion number (FIFO ties)
        self.insertions = 0
        self.used: dict[str, Address] = {}
        self.in_use = self.reserved = self.expansions = self.defrags = 0

    def _add_idle(self, block: int, offset: int, size: int) -> None:
        self.bufs[block][offset] = [size, None]
        bisect.insort(self.starts[block], offset)
        self.insertions += 1
        self.idle_since[block, offset] = self.insertions
        bisect.insort(self.idle, (size, self.insertions, block, offset))

    def _drop_buf(self, block: int, offset: int) -> None:
        size, tensor = self.bufs[block].pop(offset)
        starts = self.starts[block]
        del starts[bisect.bisect_left(starts, offset)]
        if tensor is None:
            key = (size, self.idle_since.pop((block, offset)), block, offset)
            del self.idle[bisect.bisect_left(self.idle, key)]

    def alloc(self, tensor: str, size: int, defragment: bool) -> Address:
        need = max(align_up(size, self.alignment), self.alignment)
        k = bisect.bisect_left(self.idle, (need, -1, -1, -1))
        if k < len(self.idle):
            _, _, block, offset = self.idle[k]
        else:
            block = self._defragment(need) if defragment else -1
            if block < 0:
                block = self._expand(need)
            offset = next(o for o, (s, t) in self.bufs[block].items() if t is None and s >= need)
        return self._carve(block, offset, need, tensor)

    def _carve(self, block: int, offset: int, need: int, tensor: str) -> Address:
        have = self.bufs[block][offset][0]
        self._drop_buf(block, offset)
        used = need if have - need >= self.alignment else have
        self.bufs[block][offset] = [used, tensor]
        bisect.insort(self.starts[block], offset)
        if used < have:
            self._add_idle(block, offset + used, have - used)
        self.in_use += used
        self.used[tensor] = (block, offset)
        return block, offset

    def _defragment(self, need: int) -> int:
        free = [0] * len(self.blocks)
        for size, _, block, _ in self.idle:
            free[block] += size
        block = next((b for b, f in enumerate(free) if f >= need), -1)
        if block < 0:
            return -1
        moved = [(s, t) for _, (s, t) in sorted(self.bufs[block].items()) if t is not None]
        self.idle = [e for e in self.idle if e[2] != block]
        self.idle_since = {a: n for a, n in self.idle_since.items() if a[0] != block}
        self.bufs[block], self.starts[block] = {}, []
        top = 0
        for s, t in moved:
            self.bufs[block][top] = [s, t]
            self.starts[block].append(top)
            self.used[t] = (block, top)
            top += s
        self._add_idle(block, top, self.blocks[block] - top)
        self.defrags += 1
        return block

    def _expand(self, need: int) -> int:
        size = self.chunk
        while size < need:
            size *= 2
        self.blocks.append(size)
        self.bufs.append({})
        self.starts.append([])
        self._add_idle(len(self.blocks) - 1, 0, size)
        self.reserved += size
        self.expansions += 1
        return len(self.blocks) - 1

    def free(self, tensor: str) -> None:
        block, offset = self.used.pop(tensor)
        size = self.bufs[block][offset][0]
        self._drop_buf(block, offset)
        self.in_use -= size
        nxt = offset + size
        if nxt in self.bufs[block] and self.bufs[block][nxt][1] is None:
            size += self.bufs[block][nxt][0]
            self._drop_buf(block, nxt)
        starts = self.starts[block]
        k = bisect.bisect_left(starts, offset)
        if k > 0:
            prev = starts[k - 1]
            psize, ptensor = self.bufs[block][prev]
            if ptensor is None and prev + psize == offset:
                self._drop_buf(block, prev)
                offset, size = prev, size + psize
        self._add_idle(block, offset, size)

    def largest_free(self) -> int:
        return self.idle[-1][0] if self.idle else 0


def _check_event(i: int, event: object, last_time: float) -> Event:
    if type(event) is tuple and len(event) == 4:  # the common, valid case in a few tests
        time_us, action, tensor, size = event
        if (isinstance(time_us, float) and last_time <= time_us < math.inf
                and (action == "alloc" or action == "free") and type(tensor) is str
                and type(size) is int and size >= 0):
            return float(time_us), action, tensor, size
    if not isinstance(event, (tuple, list)) or len(event) != 4:
        raise MemoryPlanError(f"event {i}: expected (time_us, action, tensor, size), got {event!r}")
    time_us, action, tensor, size = event
    where = f"event {i} ({action!r} {tensor!r} at {time_us!r} us)"
    if isinstance(time_us, bool) or not isinstance(time_us, numbers.Real):
        raise MemoryPlanError(f"{where}: time must be a number")
    if not math.isfinite(time_us) or time_us < last_time:
        raise MemoryPlanError(f"{where}: time is not finite or goes back (previous {last_time})")
    if action not in ("alloc", "free"):
        raise MemoryPlanError(f"{where}: action must be 'alloc' or 'free'")
    if not isinstance(tensor, str):
        raise MemoryPlanError(f"{where}: tensor must be a string id")
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
        raise MemoryPlanError(f"{where}: size must be a non-negative integer, got {size!r}")
    return float(time_us), action, tensor, int(size)


def simulate_pool(
    events: Iterable[Sequence[object]],
    *,
    alignment: int = 512,
    chunk_bytes: int = 1 << 30,
    defragment: bool = True,
) -> PoolResult:
    """Replay ``(time_us, "alloc"|"free", tensor, size)`` events through the BestFit pool.

    Events must be in time order (frees before allocs at equal times, as
    :func:`events_from_records` makes them). Freeing an unknown tensor, allocating a live one,
    a negative size or a time going back raise a one-line MemoryPlanError. ``in_use`` counts used
    bufs with their rounding; ``reserved`` is the sum of block sizes. Complexity: O(e·b) for
    e events and b bufs (defragmentation O(b log b)).
    """
    for name, value in (("alignment", alignment), ("chunk_bytes", chunk_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise OptionError(f"{name} must be a positive integer, got {value!r}")
    pool = _Pool(alignment, chunk_bytes)
    rows: list[tuple] = []
    offsets: dict[str, Address] = {}
    last_time = -math.inf
    for i, event in enumerate(events):
        time_us, action, tensor, size = _check_event(i, event, last_time)
        last_time = time_us
        if action == "alloc":
            if tensor in pool.used:
                raise MemoryPlanError(f"event {i}: tensor {tensor!r} is already allocated")
            offsets[tensor] = pool.alloc(tensor, size, defragment)
        else:
            if tensor not in pool.used:
                raise MemoryPlanError(f"event {i}: free of unknown tensor {tensor!r}")
            pool.free(tensor)
        free_total = pool.reserved - pool.in_use
        largest = pool.largest_free()
        frag = 1.0 - largest / free_total if free_total else 0.0
        rows.append((time_us, action, tensor, size, pool.in_use, pool.reserved, largest, frag))
    import pandas as pd

    timeline = pd.DataFrame(rows, columns=TIMELINE_COLUMNS)
    return PoolResult(
        timeline=timeline,
        peak_reserved=pool.reserved,
        peak_in_use=max((r[4] for r in rows), default=0),
        n_expansions=pool.expansions,
        n_defrags=pool.defrags,
        offsets=offsets,
    )


def events_from_records(records: Iterable[RecordLike], *, step_us: float = 1.0) -> list[Event]:
    """Turn usage records into pool events: alloc at ``first``, free after ``last``.

    Tensor ids are the record names (or ``"#i"`` for unnamed records; duplicates are an error).
    Times are ``step * step_us``; at equal times frees come first, then record order.
    Complexity: O(n log n).
    """
    recs = parse_records(records)
    names = [r.name or f"#{i}" for i, r in enumerate(recs)]
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise MemoryPlanError(f"usage record {i}: tensor name {name!r} is used twice")
        seen.add(name)
    keyed = [((r.first, 1, i), "alloc", i) for i, r in enumerate(recs)]
    keyed += [((r.last + 1, 0, i), "free", i) for i, r in enumerate(recs)]
    keyed.sort()
    return [(key[0] * step_us, action, names[i], recs[i].size) for key, action, i in keyed]
