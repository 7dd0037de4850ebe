"""Usage records and memory plans: the plain values every memory planner reads and returns.

Record model from TFLite's GPU delegate and Pisarchyk & Lee (notes/memory_planners.md §2-3),
used for the static SOMAS planning of seed 004 ("Memory Management"): a tensor of ``size`` bytes
is live in every step ``first <= t <= last`` (inclusive on both ends). Two records *conflict*
(must not share bytes) when their intervals intersect, unless an explicit conflict set is given:
then exactly the listed index pairs conflict (multi-stream schedules, SOMAS's ancestor rule,
notes §1.2).

Examples
--------
>>> recs = parse_records([(32, 0, 1), (28, 1, 4, "b")])
>>> recs[1]
UsageRecord(size=28, first=1, last=4, name='b')
>>> plan = MemoryPlan("demo", recs, offsets=(0, 32), arena_bytes=60, lower_bound=60)
>>> list(plan.conflicting_pairs()), plan.range_of(1), plan.ratio
([(0, 1)], range(32, 60), 1.0)
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.errors import MemoryPlanError, OptionError
from workbench.memory.conflicts import ConflictGraph, ConflictSet, interval_graph, pairs_graph
from workbench.ops.readers import INT64_MAX

if TYPE_CHECKING:
    import pandas as pd

Pair = tuple[int, int]
#: A conflict set: a frozenset of index pairs, or a compact :class:`ConflictSet`.
Conflicts = AbstractSet[Pair]


@dataclass(frozen=True)
class UsageRecord:
    """One tensor: ``size`` bytes live in steps ``first..last`` inclusive."""

    size: int
    first: int
    last: int
    name: str = ""


RecordLike = UsageRecord | tuple[int, int, int] | tuple[int, int, int, str]


def describe(index: int, record: UsageRecord) -> str:
    """``"tensor 3 'conv1'"`` (or ``"tensor 3"`` without a name), for one-line messages."""
    return f"tensor {index} {record.name!r}" if record.name else f"tensor {index}"


def align_up(value: int, alignment: int) -> int:
    """Round ``value`` up to a multiple of ``alignment`` (``align_up(0, a) == 0``)."""
    return -(-value // alignment) * alignment


def overlaps(a: UsageRecord, b: UsageRecord) -> bool:
    """True when the inclusive live intervals of ``a`` and ``b`` intersect."""
    return not (a.last < b.first or b.last < a.first)


@dataclass(frozen=True)
class MemoryPlan:
    """Offsets of every tensor inside one arena, and how good the arena is.

    ``arena_bytes`` is ``max(offset + aligned size)``; ``lower_bound`` is the peak of live bytes
    (aligned sizes when ``alignment > 1``), which no valid plan can beat. ``conflicts`` is ``None``
    when interval overlap decides which tensors must not share bytes, else a set of index pairs
    (a frozenset, or a compact :class:`~workbench.memory.conflicts.ConflictSet` from a schedule).
    """

    planner: str
    records: tuple[UsageRecord, ...]
    offsets: tuple[int, ...]
    arena_bytes: int
    lower_bound: int
    alignment: int = 1
    conflicts: Conflicts | None = None
    notes: dict[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if len(self.offsets) != len(self.records):
            raise MemoryPlanError(
                f"plan {self.planner!r} has {len(self.offsets)} offsets for "
                f"{len(self.records)} records"
            )

    @property
    def ratio(self) -> float:
        """``arena_bytes / lower_bound`` (1.0 = optimal; 1.0 when the bound is 0)."""
        return self.arena_bytes / self.lower_bound if self.lower_bound else 1.0

    def range_of(self, i: int) -> range:
        """The bytes ``[offset, offset + size)`` of record ``i``."""
        return range(self.offsets[i], self.offsets[i] + self.records[i].size)

    def conflicting_pairs(self) -> Iterator[Pair]:
        """Index pairs ``(i, j)``, ``i < j``, that must not share bytes, in sorted order."""
        if self.conflicts is not None:
            yield from sorted(self.conflicts)
        else:
            yield from interval_pairs(self.records)

    def __repr__(self) -> str:
        return (f"MemoryPlan({self.planner!r}: {len(self.records)} tensors, arena "
                f"{self.arena_bytes} B, lower bound {self.lower_bound} B, ratio {self.ratio:.3f})")

    def _repr_html_(self) -> str:
        """Static HTML: headline numbers and the lifetime chart (plotly.js once per session)."""
        from workbench.values.views import view

        return view("memory_plan_html")(self, include_plotlyjs=None)

    def _ipython_display_(self) -> None:
        """Notebook display: the headline numbers, then the lifetime chart as a plotly mime bundle
        (see ``workbench.viz.display``)."""
        from workbench.values.views import view

        view("display_memory_plan")(self)

    def to_frame(self) -> pd.DataFrame:
        """One row per tensor: name, size, first, last, offset, end (= offset + size)."""
        import pandas as pd

        rows = [
            (r.name or str(i), r.size, r.first, r.last, off, off + r.size)
            for i, (r, off) in enumerate(zip(self.records, self.offsets, strict=True))
        ]
        columns = ["name", "size", "first", "last", "offset", "end"]
        return pd.DataFrame(rows, columns=columns)


def _as_int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    return int(value)


def _parse_one(i: int, item: object) -> UsageRecord:
    if type(item) is UsageRecord and type(item.size) is int and type(item.first) is int:
        if type(item.last) is int and 0 <= item.first <= item.last <= INT64_MAX \
                and 0 <= item.size <= INT64_MAX:
            if type(item.name) is str:
                return item  # already a valid record (the common case, e.g. from lifetimes)
    if isinstance(item, UsageRecord):
        size, first, last, name = item.size, item.first, item.last, item.name
    elif isinstance(item, (tuple, list)) and len(item) in (3, 4):
        size, first, last = item[0], item[1], item[2]
        name = item[3] if len(item) == 4 else ""
    else:
        raise MemoryPlanError(
            f"usage record {i}: expected (size, first, last[, name]) or UsageRecord, got {item!r}"
        )
    where = f"usage record {i} {name!r}" if name else f"usage record {i}"
    if not isinstance(name, str):
        raise MemoryPlanError(f"{where}: name must be a string, got {name!r}")
    values = {"size": _as_int(size), "first": _as_int(first), "last": _as_int(last)}
    for key, raw in (("size", size), ("first", first), ("last", last)):
        value = values[key]
        if value is None or value < 0:
            raise MemoryPlanError(f"{where}: {key} must be a non-negative integer, got {raw!r}")
        if value > INT64_MAX:  # the planners hold sizes and steps in int64 arrays
            raise MemoryPlanError(f"{where}: {key} {value:,} is past {INT64_MAX:,} (int64), "
                                  f"the largest the planners hold")
    if values["last"] < values["first"]:  # type: ignore[operator]
        raise MemoryPlanError(f"{where}: last step {last} is before first step {first}")
    return UsageRecord(values["size"], values["first"], values["last"], name)  # type: ignore[arg-type]


def parse_records(items: Iterable[RecordLike]) -> tuple[UsageRecord, ...]:
    """Validate usage records given as ``(size, first, last[, name])`` tuples or UsageRecord.

    Sizes and steps must be integers in ``0 .. 2**63 - 1`` (the planners hold them in int64) and
    ``last >= first``; otherwise a one-line MemoryPlanError names the record's index and name.
    Complexity: O(n).

    >>> parse_records([(8, 2, 1, "x")])
    Traceback (most recent call last):
    ...
    workbench.errors.MemoryPlanError: usage record 0 'x': last step 1 is before first step 2
    """
    if type(items) is _Parsed:
        return items  # parsed already (a planner's own records, passed on): nothing to check
    if isinstance(items, (str, bytes)):
        raise MemoryPlanError(f"usage records must be a sequence of records, got {items!r}")
    return _Parsed(_parse_one(i, item) for i, item in enumerate(items))


class _Parsed(tuple[UsageRecord, ...]):
    """A tuple of records :func:`parse_records` validated: parsing it again returns it as is (a
    plan through :func:`workbench.memory.plan_memory` was parsed three times).  Equal to, and
    printed as, a plain tuple."""

    __slots__ = ()


def interval_pairs(records: Sequence[UsageRecord]) -> list[Pair]:
    """All pairs ``(i, j)``, ``i < j``, whose live intervals intersect, sorted.

    Sweep over records sorted by first step. Complexity: O(n log n + pairs).
    """
    order = sorted(range(len(records)), key=lambda k: (records[k].first, k))
    active: list[int] = []
    pairs: list[Pair] = []
    for k in order:
        start = records[k].first
        active = [a for a in active if records[a].last >= start]
        pairs.extend((min(a, k), max(a, k)) for a in active)
        active.append(k)
    pairs.sort()
    return pairs


def check_conflicts(
    conflicts: Iterable[Sequence[int]], n: int, records: Sequence[UsageRecord] | None = None
) -> Conflicts:
    """Validate an explicit conflict set over ``n`` records and return it normalised (i < j).

    Each pair must name two different known indices ("unknown tensor index 7 in conflict (3, 7)").
    When ``records`` is given, the set must also contain every pair of non-empty tensors whose
    intervals overlap, so that the interval peak stays a valid lower bound.  A
    :class:`ConflictSet` (built from a schedule, and a superset of interval overlap by
    construction) is only checked for its size.  Complexity: O(c + n log n + interval pairs).
    """
    if isinstance(conflicts, ConflictSet):
        if conflicts.graph.n != n:
            raise MemoryPlanError(f"conflict set is over {conflicts.graph.n} tensors, not {n}")
        return conflicts
    out: set[Pair] = set()
    for pair in conflicts:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise MemoryPlanError(f"conflict {pair!r} is not a pair of tensor indices")
        shown = tuple(pair)
        ends = [_as_int(pair[0]), _as_int(pair[1])]
        checked: list[int] = []
        for k, raw in zip(ends, pair, strict=True):
            if k is None:
                raise MemoryPlanError(f"conflict {shown} must name integer tensor indices")
            if not 0 <= k < n:
                raise MemoryPlanError(f"unknown tensor index {raw} in conflict {shown}")
            checked.append(k)
        i, j = min(checked), max(checked)
        if i == j:
            raise MemoryPlanError(f"conflict {shown} pairs a tensor with itself")
        out.add((i, j))
    if records is not None:
        for i, j in interval_pairs(records):
            a, b = records[i], records[j]
            if (i, j) not in out and a.size and b.size:
                raise MemoryPlanError(
                    f"conflict set misses ({i}, {j}): {describe(i, a)} (steps {a.first}..{a.last}) "
                    f"and {describe(j, b)} (steps {b.first}..{b.last}) are live together"
                )
    return frozenset(out)


@dataclass(frozen=True)
class Problem:
    """A validated planning problem: records, aligned sizes and the conflict graph (built on
    first use: the naive planner never reads it)."""

    records: tuple[UsageRecord, ...]
    sizes: np.ndarray  # aligned sizes, int64
    alignment: int
    conflicts: Conflicts | None

    @cached_property
    def graph(self) -> ConflictGraph:
        """Interval overlap without ``conflicts`` (:func:`interval_graph`), the graph a
        :class:`ConflictSet` brings, else the listed pairs.  O(n log n + P)."""
        frozen = self.conflicts
        if frozen is None:
            _, first, last = self.columns
            return interval_graph(first, last)
        if isinstance(frozen, ConflictSet):
            return frozen.graph
        return pairs_graph(len(self.records), frozen)

    @cached_property
    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The records' raw sizes, first and last steps as int64 arrays (for vectorised orders;
        every size fits: its aligned size does).  O(n)."""
        n = len(self.records)
        size = np.fromiter((r.size for r in self.records), dtype=np.int64, count=n)
        first = np.fromiter((r.first for r in self.records), dtype=np.int64, count=n)
        last = np.fromiter((r.last for r in self.records), dtype=np.int64, count=n)
        return size, first, last

    def order_by(self, *keys: np.ndarray) -> list[int]:
        """Record indices sorted by ``keys`` (the first one primary), ties by index.  O(n log n)
        in NumPy: a million records sort in well under a second, where ``sorted`` with a key
        function took seconds per ordering."""
        index = np.arange(len(self.records), dtype=np.int64)
        return np.lexsort((index, *reversed(keys))).tolist() if len(index) else []

    @cached_property
    def neighbors(self) -> tuple[tuple[int, ...], ...]:
        """Every tensor's conflicting tensors (for small problems: O(n²) for many tails)."""
        return tuple(tuple(int(j) for j in self.graph.partners(i)) for i in range(self.graph.n))


def check_alignment(alignment: object) -> int:
    """Return ``alignment`` if it is a positive integer, else raise OptionError."""
    value = _as_int(alignment)
    if value is None or value < 1 or value > 1 << 40:
        from workbench._checks import show

        raise OptionError(f"alignment must be a positive integer of at most 2**40 bytes, got "
                          f"{show(alignment)}")
    return value


def prepare(
    items: Iterable[RecordLike],
    alignment: int = 1,
    conflicts: Iterable[Sequence[int]] | None = None,
) -> Problem:
    """Parse records and check the options (shared by all planners); the conflict graph is
    built when a planner first reads :attr:`Problem.graph`.

    Without ``conflicts`` the graph is interval overlap (:func:`interval_graph`); a
    :class:`ConflictSet` brings its own graph; other pair sets are validated here and listed.
    Complexity: O(n) here, O(n log n + P) for the graph with P listed pairs.
    """
    records = parse_records(items)
    align = check_alignment(alignment)
    n = len(records)
    frozen = None if conflicts is None else check_conflicts(conflicts, n, records)
    aligned = [align_up(r.size, align) for r in records]
    _check_total(aligned, records)
    return Problem(records, np.array(aligned, dtype=np.int64), align, frozen)


#: The most bytes a problem's aligned sizes may add up to.  No greedy placement reaches past the
#: sum (a tensor goes at worst on top of all the others), and the placements compute offsets, ends
#: and gaps (``start - top - size``, down to minus twice the sum) in int64: at 2^62 none of them
#: can overflow.
MAX_TOTAL_BYTES = 1 << 62


def _check_total(aligned: Sequence[int], records: Sequence[UsageRecord]) -> None:
    """A one-line MemoryPlanError when the aligned sizes add up to more than
    :data:`MAX_TOTAL_BYTES` (4 EiB): int64 offsets would wrap and a plan would be silently
    wrong (refused even when the tensors never overlap: the check is on the sum).  O(n)."""
    total = sum(aligned)
    if total > MAX_TOTAL_BYTES:
        k = max(range(len(aligned)), key=aligned.__getitem__)
        name = f" {records[k].name!r}" if records[k].name else ""
        raise MemoryPlanError(
            f"the tensors' sizes add up to {total:,} bytes after alignment, more than the "
            f"{MAX_TOTAL_BYTES:,} (4 EiB) a plan's 64-bit offsets hold without overflow "
            f"(the largest is record {k}{name}: {aligned[k]:,} bytes)")
