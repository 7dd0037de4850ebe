"""Stream tails: "has stream ``s`` deterministically finished before node ``v``?" for streams whose
ops are totally ordered by ancestry (NNC builds such streams), at any scale.

Stream ``s`` has finished before ``v`` when its last op (its *tail*) is an ancestor of ``v``.
Each time a stream gets a tail, the pair is a new *tail instance*, numbered in creation order;
it stays *valid* until the stream gets its next tail (a tail is set before it is visited, so no
visited node has a stream's newest tail among its ancestors yet).  Per visited node an *ancestor
set* holds the instances among its ancestors, itself included, merged from its predecessors:

* usually a bitset, a Python int ``bits`` over the instances from ``base`` on (so a node whose
  only instance is a recent one holds one bit, not the whole history), merged with ``|``;
* a ``frozenset`` when a bitset would be sparse over a long span (a fan whose branches all hold
  one old instance and their own: a bitset per branch would cost O(n) words, O(n²) in all).

A query keeps the valid instances of the set: one AND with a bitmap of the *gone* instances
(superseded by a newer tail, or retired), so it walks only the valid bits (at random 100k a query's
set held 23 instances, 1.8 of them valid).  Sets are kept only while the node has unvisited
successors (a sink keeps none; NNC over its stream cap also keeps the tails' sets,
``keep_tail_clocks``, to order a tail before a node).

*Compaction* (whenever as many instances were created since the last one as there were kept
sets then, at least 64) *retires* every valid instance that all kept sets hold, and clears it
and every instance that is no longer valid from the kept sets.  A retired instance is exact by a
cut argument: a node visited later that has an ancestor visited before the compaction reaches it
through a node kept at the compaction, so it has the instance among its ancestors; a node whose
ancestors were all visited later (its *lineage* starts after the compaction: a late source's
descendants) does not.  Each set carries its lineage (the earliest visit among its ancestors);
retired streams wait in lazy heaps (by creation order, and per label) with the visit count at
their retirement, and a query from a later lineage scans the heap instead of reading its top.

Complexity: a merge costs the words of the sets merged (the instances not yet retired: a few
times the graph's width, over 64), a query the members of its set plus heap work, a compaction
the kept sets' sizes, amortised over the instances created since the last one.  A wide fan-in
(20,000 sources, each its own stream and tail) holds one bit per source and merges them in a
balanced tree, O(k log k) for k predecessors.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable
from typing import cast

#: An ancestor set: ``(base, bits)`` or a frozenset of instances.
Members = tuple[int, int] | frozenset[int]
#: The ancestor set of a node about to be visited and its lineage (see :meth:`clock_of`).
Clock = tuple[Members, int]

_EMPTY: tuple[int, int] = (0, 0)
_SPARSE_SPAN = 4096   # a bitset longer than this with under 1 bit in 64 set becomes a frozenset


class StreamTails:
    """Streams as chains, their tails and the ancestor sets (module docstring).

    ``stream_of`` (a node's stream, -1 until placed), ``tail_node``, ``n_streams`` are read by
    NNC; :meth:`pick_first` answers "which finished stream to recycle" for the node of
    a :meth:`clock_of`; :meth:`finished_streams` lists them all (small graphs, tests).
    ``compactions`` and ``retired`` count the compactions and the instances they retired.
    """

    def __init__(self, pred: list[list[int]], succ: list[list[int]], *,
                 keep_tail_clocks: bool = False,
                 labels: Callable[[int], Iterable[str]] | None = None) -> None:
        self.pred = pred
        self.keep_tail_clocks = keep_tail_clocks
        self.labels = labels                 # a stream's labels (NNC: the op types it ran)
        self.pending = [len(s) for s in succ]
        self.sets: dict[int, Members] = {}   # kept node -> its ancestor set
        self.lineage: dict[int, int] = {}    # kept node -> earliest visit among its ancestors
        self.visits = 0
        self.tail_node: list[int] = []
        self.length: list[int] = []
        self.stream_of: list[int] = [-1] * len(pred)
        self._tails: set[int] = set()
        self._instance: list[int] = []       # stream -> its valid instance, -1 before a tail
        self._instance_stream: list[int] = []  # instance -> stream
        #: bit k set: instance k is gone from every ancestor set's meaning (its stream has a newer
        #: tail, or a compaction retired it); one bit an instance, set in O(1)
        self._gone = bytearray()
        self._retired_at: dict[int, int] = {}  # stream -> visit count when its instance retired
        self._retired_instance: dict[int, int] = {}  # stream -> the instance retired
        self._first_heap: list[int] = []     # retired streams, by id
        self._first_by_label: dict[str, list[int]] = {}  # the same, per label
        self._next_compaction = 64
        self.compactions = 0
        self.retired = 0

    # ------------------------------------------------------------------ streams
    @property
    def n_streams(self) -> int:
        return len(self.length)

    def new_stream(self) -> int:
        s = len(self.length)
        self.length.append(0)
        self.tail_node.append(-1)
        self._instance.append(-1)
        return s

    def place(self, node: int, stream: int) -> None:
        """Append ``node`` to ``stream`` (its stream position is fixed now)."""
        self.stream_of[node] = stream
        self.length[stream] += 1

    def set_tail(self, stream: int, node: int) -> None:
        """``node`` (placed on ``stream``, not visited yet) is the stream's last op now."""
        old = self.tail_node[stream]
        if old == node:
            return
        self.tail_node[stream] = node
        self._tails.discard(old)
        self._tails.add(node)
        k = len(self._instance_stream)
        if self._instance[stream] >= 0:
            self._mark_gone(self._instance[stream])
        self._instance[stream] = k
        self._instance_stream.append(stream)
        if not k & 7:
            self._gone.append(0)
        if self.keep_tail_clocks and old >= 0 and self.pending[old] <= 0:
            self._drop(old)

    # ------------------------------------------------------------------ ancestor sets
    def clock_of(self, node: int, extra: Iterable[int] = ()) -> Clock:
        """The ancestor set of ``node`` merged from its (visited) predecessors and ``extra``
        ones; the queries that follow answer for ``node``."""
        parents = (*self.pred[node], *extra) if extra else self.pred[node]
        lineage = self.visits
        sets, lineages = self.sets, self.lineage
        found = []
        for p in parents:
            seen = lineages[p]
            if seen < lineage:
                lineage = seen
            kept = sets[p]
            if kept[1] if type(kept) is tuple else kept:
                found.append(kept)
        if not found:
            return (_EMPTY, lineage)
        if len(found) == 1:
            return (found[0], lineage)
        return (_union(found), lineage)

    def visit(self, node: int, clock: Clock) -> None:
        """Record the visited ``node`` (already placed); free sets nobody needs any more."""
        members, lineage = clock
        s = self.stream_of[node]
        if self.tail_node[s] == node:  # its own instance: its descendants have it
            members = _with(members, self._instance[s])
        self.visits += 1
        keep = self.keep_tail_clocks
        if self.pending[node] > 0 or (keep and node in self._tails):
            self.sets[node] = members
            self.lineage[node] = lineage
        pending = self.pending
        for p in self.pred[node]:
            pending[p] -= 1
            if pending[p] <= 0 and not (keep and p in self._tails):
                self._drop(p)
        if len(self._instance_stream) >= self._next_compaction:
            self._compact()

    def _drop(self, node: int) -> None:
        self.sets.pop(node, None)
        self.lineage.pop(node, None)

    # ------------------------------------------------------------------ queries
    def finished_streams(self, clock: Clock) -> list[int]:
        """Every stream whose tail is an ancestor of the node with ``clock``, in creation
        order.  O(S): for small graphs and tests; the schedulers use :meth:`pick_first`."""
        found = set(self._held(clock[0]))
        found.update(s for s in self._retired_at if self._reads_retired(s, clock[1]))
        return sorted(found)

    def pick_first(self, clock: Clock, label: str | None = None) -> int | None:
        """NNC's recycling choice: the first finished stream in creation order that carries
        ``label`` (see ``labels``), else the first finished one."""
        held = self._held(clock[0])
        lineage = clock[1]
        if label is not None and self.labels is not None:
            labels = self.labels
            options = [s for s in held if label in labels(s)]
            closed = self._first_retired(self._first_by_label.get(label, []), lineage)
            if closed is not None:
                options.append(closed)
            if options:
                return min(options)
        closed = self._first_retired(self._first_heap, lineage)
        if closed is not None:
            held.append(closed)
        return min(held) if held else None

    # ------------------------------------------------------------------ internals
    def _mark_gone(self, k: int) -> None:
        self._gone[k >> 3] |= 1 << (k & 7)

    def _is_gone(self, k: int) -> bool:
        return bool((self._gone[k >> 3] >> (k & 7)) & 1)

    def _gone_bits(self, base: int, span: int) -> int:
        """The gone instances ``base .. base + span - 1`` as a bitset over ``base``; O(span)."""
        raw = self._gone[base >> 3:((base + span) >> 3) + 1]
        return int.from_bytes(raw, "little") >> (base & 7)

    def _live(self, members: Members) -> Members:
        """``members`` less its gone instances (a bitset: one mask, no walk over its bits)."""
        if isinstance(members, frozenset):
            return frozenset(k for k in members if not self._is_gone(k))
        base, bits = members
        return (base, bits & ~self._gone_bits(base, bits.bit_length())) if bits else members

    def _held(self, members: Members) -> list[int]:
        """The streams of the valid instances in ``members``."""
        stream_of = self._instance_stream
        return [stream_of[k] for k in _elements(self._live(members))]

    def _reads_retired(self, stream: int, lineage: int) -> bool:
        """Is ``stream``'s retired instance still valid and an ancestor of a node of
        ``lineage`` (module docstring)?"""
        return (self._retired_instance.get(stream, -1) == self._instance[stream]
                and lineage < self._retired_at[stream])

    def _first_retired(self, heap: list[int], lineage: int) -> int | None:
        """The first (by id) retired stream of ``heap`` finished for the queried node; entries
        of reused streams are dropped, a later lineage scans the heap."""
        while heap and self._retired_instance[heap[0]] != self._instance[heap[0]]:
            heapq.heappop(heap)
        if not heap:
            return None
        if lineage < self._retired_at[heap[0]]:
            return heap[0]
        return min((s for s in heap if self._reads_retired(s, lineage)), default=None)

    def _compact(self) -> None:
        """Retire the valid instances every kept set holds; clear them and the instances no
        longer valid from the kept sets (module docstring)."""
        self.compactions += 1
        kept = self.sets
        newest = len(self._instance_stream)
        self._next_compaction = newest + max(64, len(kept))
        if not kept:
            return
        common = _common(list(kept.values()))
        dead = [k for k in common if not self._is_gone(k)]
        for k in dead:
            self._retire(self._instance_stream[k], k)
            self._mark_gone(k)
        for node, members in list(kept.items()):
            live = self._live(members)
            if live != members:
                kept[node] = _normal(live)

    def _retire(self, stream: int, k: int) -> None:
        self.retired += 1
        self._retired_at[stream] = self.visits
        self._retired_instance[stream] = k
        heapq.heappush(self._first_heap, stream)
        for label in self.labels(stream) if self.labels is not None else ():
            heapq.heappush(self._first_by_label.setdefault(label, []), stream)


# ---------------------------------------------------------------------------------- set algebra
def _elements(members: Members) -> list[int] | frozenset[int]:
    """The instances of ``members`` (a bitset's lowest first)."""
    if isinstance(members, frozenset):
        return members
    return set_bits(*members)


def set_bits(base: int, bits: int) -> list[int]:
    """``base + k`` for every set bit ``k`` of ``bits``, lowest first; O(popcount) big-int steps
    for a few bits, else one pass over the binary text."""
    if not bits:
        return []
    out = []
    if bits.bit_count() <= 8:
        while bits:
            low = bits & -bits
            out.append(base + low.bit_length() - 1)
            bits ^= low
        return out
    text = format(bits, "b")[::-1]
    k = text.find("1")
    while k >= 0:
        out.append(base + k)
        k = text.find("1", k + 1)
    return out


def _bitset(elements: Iterable[int]) -> Members:
    """``elements`` as a bitset, or as a frozenset when a bitset would be sparse."""
    items = sorted(set(elements))
    if not items:
        return _EMPTY
    low, span = items[0], items[-1] - items[0] + 1
    if span > _SPARSE_SPAN and span > 64 * len(items):
        return frozenset(items)
    return (low, pack_bits(items, low))


def pack_bits(positions: Collection[int], base: int = 0) -> int:
    """The bitset with bit ``p - base`` set for every position ``p >= base``, through one byte
    array: O(span / 8 + count), where setting the bits one by one in an int copies it per bit."""
    if not positions:
        return 0
    raw = bytearray((max(positions) - base) // 8 + 1)
    for p in positions:
        k = p - base
        raw[k >> 3] |= 1 << (k & 7)
    return int.from_bytes(raw, "little")


def _with(members: Members, k: int) -> Members:
    """``members`` and instance ``k`` (a node's own, the newest so far)."""
    if isinstance(members, frozenset):
        return members | {k}
    base, bits = members
    if not bits:
        return (k, 1)
    if k >= base:
        if k - base >= _SPARSE_SPAN and k - base >= 64 * bits.bit_count():
            return frozenset((*_elements(members), k))
        return (base, bits | (1 << (k - base)))
    return _bitset((*_elements(members), k))


def _normal(members: Members) -> Members:
    """A bitset with its base moved to its lowest instance, a frozenset as a bitset when that
    is dense enough."""
    if isinstance(members, frozenset):
        return _bitset(members)
    base, bits = members
    if not bits:
        return _EMPTY
    low = (bits & -bits).bit_length() - 1
    return (base + low, bits >> low)


def _union(found: list[Members]) -> Members:
    """The union of non-empty sets: bitsets shifted onto the lowest base (many of them, a
    wide fan-in, merged in a balanced tree so each level costs the sets' words), a frozenset
    when one of them is or the bitset would be sparse.  The common case, two or three bitsets
    over a short span, is one loop over them."""
    low, high, count = -1, 0, 0
    for m in found:
        if type(m) is not tuple:
            break
        b, x = m
        if low < 0 or b < low:
            low = b
        top = b + x.bit_length()
        if top > high:
            high = top
        count += x.bit_count()
    else:
        bitsets = cast(list[tuple[int, int]], found)
        if high - low <= _SPARSE_SPAN or high - low <= 64 * count:
            if len(bitsets) <= 8:
                acc = 0
                for b, x in bitsets:
                    acc |= x << (b - low)
                return (low, acc)
            level = sorted(bitsets, key=lambda m: m[0])
            while len(level) > 1:
                paired = [(b1, x1 | (x2 << (b2 - b1)))
                          for (b1, x1), (b2, x2) in zip(level[::2], level[1::2], strict=False)]
                if len(level) % 2:
                    paired.append(level[-1])
                level = paired
            return level[0]
    out: set[int] = set()
    for m in found:
        out.update(_elements(m))
    return _bitset(out)


def _common(found: list[Members]) -> list[int] | frozenset[int]:
    """The instances every one of ``found`` holds (empty as soon as one set is)."""
    if all(type(m) is tuple for m in found):
        bitsets = cast(list[tuple[int, int]], found)
        low = min(b for b, _ in bitsets)
        acc = -1
        for b, x in found:
            acc &= x << (b - low)
            if not acc:
                return []
        return _elements((low, acc))
    common: set[int] | None = None
    for m in sorted(found, key=lambda m: m[1].bit_count() if type(m) is tuple else len(m)):
        items = _elements(m)
        common = set(items) if common is None else common.intersection(items)
        if not common:
            return []
    return frozenset(common or ())
