"""SOMAS's ancestor rule on a multi-stream schedule, by per-stream sweeps over vector clocks.

Tensors ``A`` and ``B`` may share memory only if every user of ``A`` (its consumers, or its
producer when it has none) happens before ``B``'s producer, or vice versa, in every execution the
schedule allows (happens-before = stream order + syncs + barriers; seed 004, notes §1.2).  In a
valid schedule a tensor's users happen after its producer, so for ``A`` issued before ``B`` only
the first half can hold: the pair conflicts unless ``B``'s producer lies in ``A``'s *dead region*,
the ops after all of ``A``'s users.  That region meets every stream ``s`` in a suffix, from
position ``end[A, s]``: the first op of ``s`` whose clock has seen every user of ``A``.  Clocks
along a stream only grow, so each ``end[A, s]`` is a binary search in the clock column of the
user's stream, and ``A`` conflicts exactly with the tensors produced on ``s`` after ``A``'s
producer and before ``end[A, s]`` ("lifetimes as [first, last] per stream").  Graph outputs never
die, nor does a tensor read by a sink op (its dead region is empty on every stream): they are the
tails of the :class:`~workbench.memory.conflicts.ConflictGraph` (they conflict with every later
tensor) and are not listed; on a random DAG that keeps the listed pairs near-linear.

Buffers that several ops write (a launch plan's in-place concat) use the same sweeps with every
writer listed on its stream (:func:`buffer_conflicts`).

The same frontier gives the order of the clique bound (:class:`Skeleton`): ``A`` comes before
``B`` iff ``B``'s producer is reachable from the first dead op of ``A`` on some stream.

Complexity: O(V · S) clocks, O(T · S · log V) searches and O(P) for the P listed pairs (T tensors,
S streams).  Assumes a valid schedule (``Schedule.validate``).  Tensor planning
(:func:`happens_before_relation`) sweeps live sets instead (:mod:`workbench.memory.live_sets`:
nothing per stream pair); the clocks remain for :func:`buffer_conflicts`, bounded by design: a
schedule whose V · S exceeds :data:`MAX_CLOCK_ENTRIES` (about 15 bytes each at the peak) is a
one-line :class:`~workbench.errors.MemoryPlanError` before any clock is built (a 20,000-source
fan-in under NNC, 20,000 streams, took 4.8 GB; issue 27).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.errors import MemoryPlanError
from workbench.memory.conflicts import ConflictGraph, ListedPairs, expand_ranges
from workbench.values.schedule import Schedule

#: Largest ops x streams product the ancestor rule builds clocks for (~1.5 GB at the peak);
#: raise it here for bigger multi-stream schedules.
MAX_CLOCK_ENTRIES = 100_000_000


class ClockBudgetError(MemoryPlanError, MemoryError):
    """The ancestor rule would need more than :data:`MAX_CLOCK_ENTRIES` clock entries.  Also a
    :class:`MemoryError`, so that ``compare`` ends the stage as a row that says so instead of
    stopping the whole comparison."""


@dataclass(frozen=True, eq=False)
class Skeleton:
    """The happens-before order of a schedule's tensors as a sparse DAG (for the clique bound).

    Nodes ``0..T-1`` are tensors (entry: after all their users), ``T..T+V-1`` ops, then one node
    per barrier.  Edges: ``frontier`` (tensor -> first op of its dead region on a stream; only
    where that op is not already reached through one of its syncs), ``hb`` (op/barrier -> op/
    barrier: stream order, syncs, barriers) and ``born`` (op -> node of each tensor it produces,
    as ``(op node, tensor)``).  Tensor ``A`` is before ``B`` iff ``B``'s producer is reachable from
    ``A``'s entry.
    """

    n_tensors: int
    n_nodes: int
    frontier: np.ndarray  # (k, 2) tensor -> op node
    hb: np.ndarray  # (k, 2) node -> node
    born: np.ndarray  # (k, 2) op node -> tensor


def _dead_frontier(schedule: Schedule, users: Sequence[Sequence[str]], alive: np.ndarray,
                   issue: Mapping[str, int]
                   ) -> tuple[list[np.ndarray], list[int], list[np.ndarray]]:
    """Per stream: ``end[t]`` for the tensors ``alive`` (first position of the stream after all
    users of ``t``), the stream's length and its ops' issue indices (``issue``: op -> index)."""
    from workbench.values.clocks import clock_matrix

    n_streams = sum(1 for ops in schedule.streams.values() if ops)
    entries = len(schedule.issue_order) * n_streams
    if entries > MAX_CLOCK_ENTRIES:
        raise ClockBudgetError(
            f"the ancestor rule needs {entries:,} clock entries for this schedule "
            f"({len(schedule.issue_order):,} ops on {n_streams:,} streams), over the limit of "
            f"{MAX_CLOCK_ENTRIES:,} (~{MAX_CLOCK_ENTRIES * 15 / 1e9:.1f} GB); schedule with "
            f"max_streams= or raise workbench.memory.streams.MAX_CLOCK_ENTRIES")
    clocks, column = clock_matrix(schedule)
    position = schedule._position
    stream_of = schedule._stream_of
    owner = np.repeat(np.arange(len(users)), [len(u) for u in users])
    flat = [op for u in users for op in u]
    ucol = np.array([column[stream_of[op]] for op in flat], dtype=np.int64)
    upos = np.array([position[op] for op in flat], dtype=np.int64)
    take = np.flatnonzero(alive[owner]) if len(owner) else np.zeros(0, dtype=np.int64)
    owner, ucol, upos = owner[take], ucol[take], upos[take]
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if len(owner) else owner
    ends, lengths, issues = [], [], []
    width = clocks.shape[1]
    big = max((len(ops) for ops in schedule.streams.values()), default=0) + 2
    for ops in schedule.streams.values():
        if not ops:
            continue
        rows = np.array([issue[op] for op in ops], dtype=np.int64)
        length = len(ops)
        block = clocks[rows].T.astype(np.int64) + np.arange(width, dtype=np.int64)[:, None] * big
        first = np.searchsorted(block.ravel(), upos + ucol * big) - ucol * length
        end = np.zeros(len(users), dtype=np.int32)
        if len(first):
            end[owner[starts]] = np.maximum.reduceat(first, starts)
        ends.append(end)
        lengths.append(length)
        issues.append(rows)
    return ends, lengths, issues


def happens_before_relation(schedule: Schedule, planned: Sequence[str],
                            consumers: Mapping[str, Sequence[str]], producers: Sequence[str],
                            outputs: set[str]) -> tuple[ConflictGraph, Skeleton]:
    """The conflict graph of the planned tensors under the ancestor rule, and its order skeleton.

    A tensor is born at its producer's issue index.  Computed by the live-set sweep of
    :mod:`workbench.memory.live_sets` (no clocks: O(V + E + P) for P listed pairs, whatever the
    number of streams); :func:`buffer_conflicts` keeps the clock sweeps of the module docstring,
    which give the same relation.
    """
    from workbench.memory.live_sets import live_set_relation

    users = [list(dict.fromkeys(consumers[t])) or [producers[i]] for i, t in enumerate(planned)]
    outputs_mask = np.array([t in outputs for t in planned], dtype=bool)
    births, tails, rows, cols, frontier = live_set_relation(schedule, users, producers,
                                                            outputs_mask, skeleton=True)
    graph = ConflictGraph(births, tails, ListedPairs(len(planned), rows, cols), births)
    by_op: dict[str, list[int]] = {}
    for i, op in enumerate(producers):
        by_op.setdefault(op, []).append(i)
    op_node = {op: k for k, op in enumerate(schedule.issue_order)}
    return graph, _skeleton(schedule, len(planned), by_op, op_node, *frontier)


def buffer_conflicts(schedule: Schedule, users: Sequence[Sequence[str]],
                     writers: Sequence[Sequence[str]], outputs: np.ndarray) -> ConflictGraph:
    """The ancestor rule for buffers that several ops may write (a concat's inputs written in
    place into its output): buffers ``A`` and ``B`` may share bytes only if every op using ``A``
    (its readers and writers) happens before every writer of ``B``, or the reverse.  A buffer is
    born at its first writer; ``outputs`` flags the buffers that never die.  The same sweeps as
    for tensors (module docstring): ``B`` conflicts with an earlier-born ``A`` iff one of ``B``'s
    writers lies before ``A``'s dead region on its stream.  O(V · S + P log P)."""
    graph, *_ = _ancestor_rule(schedule, users, writers, np.asarray(outputs, dtype=bool),
                               skeleton=False)
    return graph


#: The skeleton's frontier edges, per stream: (tensor rows, op node columns).
_Frontier = tuple[list[np.ndarray], list[np.ndarray]]


def _ancestor_rule(schedule: Schedule, users: Sequence[Sequence[str]],
                   writers: Sequence[Sequence[str]], outputs: np.ndarray, *, skeleton: bool
                   ) -> tuple[ConflictGraph, dict[str, list[int]], dict[str, int], _Frontier]:
    """The conflict graph (and, with ``skeleton``, the skeleton's frontier edges) of tensors
    with the given users and writers, each born at its first writer's issue index; see the
    module docstring and :func:`buffer_conflicts`."""
    n = len(users)
    op_node = {op: k for k, op in enumerate(schedule.issue_order)}
    births = np.array([min(op_node[op] for op in w) for w in writers], dtype=np.int64)
    tails = outputs.copy()
    ends, lengths, issues = _dead_frontier(schedule, users, ~tails, op_node)
    all_ends = np.stack(ends) if ends else np.zeros((0, n), dtype=np.int32)
    # a tensor whose dead region is empty on every stream (one of its users has no descendant:
    # a sink reads it) conflicts with every later tensor too: a tail, not a listed row
    never_dead = (all_ends >= np.asarray(lengths, dtype=np.int64)[:, None]).all(axis=0)
    tails |= never_dead & (len(lengths) > 0)
    heads = np.flatnonzero(~tails)
    rows_out, cols_out = [], []
    # tensors written on each stream, in stream order: produced[s][ptr[pos]:ptr[pos + 1]]
    by_op: dict[str, list[int]] = {}
    for i, ops_writing in enumerate(writers):
        for op in ops_writing:
            by_op.setdefault(op, []).append(i)
    frontier_rows: list[np.ndarray] = []
    frontier_cols: list[np.ndarray] = []
    waits: dict[str, list[str]] = {}
    for a, b in schedule.syncs:
        waits.setdefault(b, []).append(a)
    position = schedule._position
    stream_ids = [s for s, ops in schedule.streams.items() if ops]
    stream_index = {s: k for k, s in enumerate(stream_ids)}
    stream_of = schedule._stream_of
    for k, s in enumerate(stream_ids):
        ops = schedule.streams[s]
        counts = [len(by_op.get(op, ())) for op in ops]
        tptr = np.zeros(len(ops) + 1, dtype=np.int64)
        np.cumsum(counts, out=tptr[1:])
        produced = np.array([t for op in ops for t in by_op.get(op, ())], dtype=np.int64)
        end = all_ends[k][heads].astype(np.int64)
        lo = np.searchsorted(issues[k], births[heads], side="right")
        owner, at = expand_ranges(tptr[lo], tptr[np.maximum(end, lo)])
        rows_out.append(heads[owner].astype(np.int32))
        cols_out.append(produced[at].astype(np.int32))
        # frontier edges of the order skeleton: dead-region starts not reached through a sync
        live = np.flatnonzero(end < lengths[k])
        if not skeleton or not len(live):
            continue
        first_dead = end[live]
        sources = [[(stream_index[stream_of[a]], position[a]) for a in waits.get(op, ())]
                   for op in ops]
        wptr = np.zeros(len(ops) + 1, dtype=np.int64)
        np.cumsum([len(w) for w in sources], out=wptr[1:])
        flat = np.array([x for w in sources for x in w], dtype=np.int64).reshape(-1, 2)
        so, at = expand_ranges(wptr[first_dead], wptr[first_dead + 1])
        reached = flat[at, 1] >= all_ends[flat[at, 0], heads[live][so]]
        keep = np.ones(len(live), dtype=bool)
        keep[so[reached]] = False
        nodes = np.array([op_node[op] for op in ops], dtype=np.int64)
        frontier_rows.append(heads[live][keep])
        frontier_cols.append(nodes[first_dead[keep]])
    # tensors written by one op conflict; those born there too are siblings (the graph's rule,
    # so the outputs of a 100,000-output op list no pair), only later-born buffers that a
    # multi-writer op also writes are listed
    several = any(len(w) > 1 for w in writers)
    same_rows, same_cols = [], []
    for group in by_op.values() if several else ():
        for x in range(len(group)):
            for y in range(x + 1, len(group)):
                gx, gy = group[x], group[y]
                if births[gx] != births[gy] and not (tails[gx] or tails[gy]):
                    same_rows.append(gx)
                    same_cols.append(gy)
    rows = np.concatenate(rows_out + [np.array(same_rows, dtype=np.int32)])
    cols = np.concatenate(cols_out + [np.array(same_cols, dtype=np.int32)])
    del rows_out, cols_out
    if several:
        # several writers: a pair may be listed from both sides, by a shared writer, or while a
        # tail already implies it; a row may list its own buffer.  Keep each other pair once.
        first, second = rows.astype(np.int64), cols.astype(np.int64)
        implied = ((tails[first] & (births[second] >= births[first]))
                   | (tails[second] & (births[first] >= births[second]))
                   | (births[first] == births[second]))
        keep = (first != second) & ~implied
        key = np.unique(np.minimum(first, second)[keep] * n + np.maximum(first, second)[keep])
        rows, cols = (key // n).astype(np.int32), (key % n).astype(np.int32)
    graph = ConflictGraph(births, tails, ListedPairs(n, rows, cols), births)
    return graph, by_op, op_node, (frontier_rows, frontier_cols)


def _skeleton(schedule: Schedule, n: int, by_op: Mapping[str, list[int]],
              op_node: Mapping[str, int],
              frontier_rows: list[np.ndarray], frontier_cols: list[np.ndarray]) -> Skeleton:
    order = schedule.issue_order
    n_ops = len(order)
    hb: list[tuple[int, int]] = []
    for ops in schedule.streams.values():
        hb.extend((n + op_node[a], n + op_node[b]) for a, b in zip(ops, ops[1:]))
    hb.extend((n + op_node[a], n + op_node[b]) for a, b in schedule.syncs)
    next_node = n + n_ops
    last_on: dict[Any, int] = {}
    barrier_at = set(schedule.barriers)
    pending: list[int] = []  # barrier nodes not yet followed by an op of a stream
    first_after: dict[Any, bool] = {}
    stream_of = schedule._stream_of
    for i, op in enumerate(order):
        if i in barrier_at:
            node = next_node
            next_node += 1
            hb.extend((n + last, node) for last in last_on.values())
            pending.append(node)
            first_after = {}
        s = stream_of[op]
        if pending and not first_after.get(s):
            hb.append((pending[-1], n + op_node[op]))
            first_after[s] = True
        last_on[s] = op_node[op]
    born = [(n + op_node[op], t) for op, group in by_op.items() for t in group]
    frontier = np.stack([np.concatenate(frontier_rows + [np.zeros(0, dtype=np.int64)]),
                         np.concatenate(frontier_cols + [np.zeros(0, dtype=np.int64)]) + n], 1)
    return Skeleton(n, next_node, frontier, np.array(hb, dtype=np.int64).reshape(-1, 2),
                    np.array(born, dtype=np.int64).reshape(-1, 2))
