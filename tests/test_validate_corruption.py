"""``Schedule.validate()`` against an independent replay, on corrupted schedules (issue 36).

Valid schedules of random DAGs (several policies) get one random corruption each -- two ops
swapped on a stream (alone, or with their issue slots), a sync dropped, a barrier moved, an op
duplicated, an edge's sync reversed, an op dropped, an op moved to another stream, a random sync
added -- and ``validate()`` must reject the result exactly when :func:`replay_problems` finds it
unsafe, with a message of the kind of problem found, and accept it otherwise.

:func:`replay_problems` shares no code with the validator: it checks that the schedule names every
op of the graph once, then replays the device as FIFO stream queues (an op starts once it is at the
head of its stream's queue, its listed stream predecessor finished, every sync source it waits on
finished and every barrier issued before it joined) and derives happens-before as the set of ops
each op provably waited for (Python-int bitsets), with no vector clocks and no column sharing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from tests.strategies import dags
from workbench.values.schedule import Schedule

#: Policies of :mod:`workbench.schedulers` that are fast on 12 ops: syncs (nnc, asap,
#: min_streams, critical_path), barriers (wavefront, ios_greedy), one stream (serial, dfs).
POLICIES = ("nnc", "asap", "min_streams", "critical_path", "wavefront", "ios_greedy", "serial",
            "dfs")

#: Each kind of problem the replay finds, and a fragment of the validator's message for it.
MESSAGES = {
    "foreign": "which is not an op of graph",
    "duplicate": "launched twice",
    "missing": "never launched",
    "issue_order": "not a permutation",
    "stream_vs_issue": "(deadlock)",
    "sync_unlaunched": "which is not launched",
    "sync_backwards": "waits on an event recorded later",
    "barrier": "outside the issue order",
    "race": "is not ordered",
}


def replay_problems(graph: wb.Graph, streams: Mapping[int, Sequence[str]],
                    syncs: Sequence[tuple[str, str]], issue_order: Sequence[str],
                    barriers: Sequence[int]) -> set[str]:
    """The kinds of problem (keys of :data:`MESSAGES`) that make the schedule unsafe; empty if
    it is safe.

    Well-formedness first (every op of the graph on exactly one stream, the issue order a
    permutation of them, syncs naming launched ops and recorded before they are waited on --
    in CUDA a wait on an event not recorded yet is a no-op -- barriers inside the issue order);
    then the replay: the host enqueues ops in ``issue_order``, so each stream's device queue is
    the issue order restricted to it; an op at the head of its queue starts once its *listed*
    stream predecessor, its sync sources and everything issued before its barriers finished.  An
    op that never starts is a deadlock (a stream list the host did not follow); a dependency
    ``p -> k`` whose ``p`` is not among what ``k`` waited for (transitively) is a race."""
    problems: set[str] = set()
    launched = [op for ops in streams.values() for op in ops]
    if any(op not in graph for op in launched):
        problems.add("foreign")
    if len(set(launched)) != len(launched):
        problems.add("duplicate")
    if set(graph.op_ids) - set(launched):
        problems.add("missing")
    if sorted(issue_order) != sorted(set(launched)):
        problems.add("issue_order")
    if any(not 0 <= b <= len(issue_order) for b in barriers):
        problems.add("barrier")
    if problems:
        return problems
    issue = {op: i for i, op in enumerate(issue_order)}
    for a, b in syncs:
        if a not in issue or b not in issue:
            problems.add("sync_unlaunched")
        elif issue[a] >= issue[b]:
            problems.add("sync_backwards")
    if problems:
        return problems

    stream_of = {op: s for s, ops in streams.items() for op in ops}
    listed_pred = {y: x for ops in streams.values() for x, y in zip(ops, ops[1:])}
    queues: dict[int, list[str]] = {s: [] for s in streams}
    for op in issue_order:
        queues[stream_of[op]].append(op)
    waits: dict[str, list[str]] = {}
    for a, b in syncs:
        waits.setdefault(b, []).append(a)
    bit = {op: 1 << i for i, op in enumerate(issue_order)}
    issued_before = [0]  # bitset of the ops issued before index i
    for op in issue_order:
        issued_before.append(issued_before[-1] | bit[op])
    joined_at = [0] * (len(issue_order) + 1)  # what a barrier at or before index i joins
    for at in sorted(set(barriers)):
        joined_at[at] = issued_before[at]
    for i in range(1, len(joined_at)):
        joined_at[i] |= joined_at[i - 1]

    finished: set[str] = set()
    waited: dict[str, int] = {}  # op -> bitset of the ops it provably waited for
    heads = {s: 0 for s in queues}
    progress = True
    while progress:
        progress = False
        for s, queue in queues.items():
            while heads[s] < len(queue):
                op = queue[heads[s]]
                needs = [a for a in (listed_pred.get(op), *waits.get(op, ())) if a is not None]
                before = joined_at[issue[op]]
                if heads[s]:
                    needs.append(queue[heads[s] - 1])
                if any(a not in finished for a in needs) or any(
                        bit[a] & before and a not in finished for a in issue_order):
                    break
                for a in needs:
                    before |= waited[a] | bit[a]
                for a in issue_order:
                    if bit[a] & joined_at[issue[op]]:
                        before |= waited[a]
                waited[op] = before
                finished.add(op)
                heads[s] += 1
                progress = True
    if len(finished) < len(issue_order):
        return {"stream_vs_issue"}
    for p, k in graph.edges:
        if not waited[k] & bit[p]:
            problems.add("race")
    return problems


# ------------------------------------------------------------------------------- corruptions
def _corrupt(kind: str, s: Schedule, data: st.DataObject) -> dict | None:
    """One corruption of ``s`` as Schedule fields, or None where ``kind`` does not apply."""
    streams = {k: list(v) for k, v in s.streams.items()}
    syncs = list(s.syncs)
    order = list(s.issue_order)
    barriers = list(s.barriers)
    ops = list(order)
    draw = data.draw
    if kind in ("swap_on_stream", "swap_with_issue"):
        long = [k for k, v in streams.items() if len(v) >= 2]
        if not long:
            return None
        k = draw(st.sampled_from(long), label="stream")
        i, j = sorted(draw(st.lists(st.integers(0, len(streams[k]) - 1), min_size=2, max_size=2,
                                    unique=True), label="positions"))
        x, y = streams[k][i], streams[k][j]
        streams[k][i], streams[k][j] = y, x
        if kind == "swap_with_issue":
            ix, iy = order.index(x), order.index(y)
            order[ix], order[iy] = y, x
    elif kind == "drop_sync":
        if not syncs:
            return None
        syncs.pop(draw(st.integers(0, len(syncs) - 1), label="sync"))
    elif kind == "move_barrier":
        where = draw(st.integers(-2, len(order) + 2), label="to")
        if barriers:
            barriers[draw(st.integers(0, len(barriers) - 1), label="barrier")] = where
        else:
            barriers.append(where)
    elif kind == "duplicate_op":
        op = draw(st.sampled_from(ops), label="op")
        k = draw(st.sampled_from(sorted(streams)), label="onto")
        streams[k].insert(draw(st.integers(0, len(streams[k])), label="at"), op)
        if draw(st.booleans(), label="also issued twice"):
            order.insert(draw(st.integers(0, len(order)), label="issued at"), op)
    elif kind == "reverse_sync":
        if syncs:
            i = draw(st.integers(0, len(syncs) - 1), label="sync")
            syncs[i] = syncs[i][::-1]
        else:
            if not s.graph.edges:
                return None
            a, b = draw(st.sampled_from(s.graph.edges), label="edge")
            syncs.append((b, a))
    elif kind == "drop_op":
        op = draw(st.sampled_from(ops), label="op")
        for v in streams.values():
            if op in v:
                v.remove(op)
        if draw(st.booleans(), label="from the issue order too"):
            order.remove(op)
        if draw(st.booleans(), label="and its syncs"):
            syncs = [x for x in syncs if op not in x]
    elif kind == "move_op_stream":
        op = draw(st.sampled_from(ops), label="op")
        target = draw(st.integers(0, len(streams)), label="to stream")
        for v in streams.values():
            if op in v:
                v.remove(op)
        streams.setdefault(target, [])
        streams[target] = [x for x in order if x in set(streams[target]) | {op}]
    elif kind == "add_sync":
        a = draw(st.sampled_from(ops), label="from")
        b = draw(st.sampled_from(ops), label="to")
        syncs.append((a, b))
    return {"streams": {k: tuple(v) for k, v in streams.items()}, "syncs": tuple(syncs),
            "issue_order": tuple(order), "barriers": tuple(barriers)}


KINDS = ("swap_on_stream", "swap_with_issue", "drop_sync", "move_barrier", "duplicate_op",
         "reverse_sync", "drop_op", "move_op_stream", "add_sync")
EXAMPLES = 400  # x 9 kinds, less the kinds that do not apply: about 3,100 corrupted schedules


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(graph=dags(max_ops=12), policy=st.sampled_from(POLICIES),
       cap=st.sampled_from([None, None, 2]), data=st.data())
def test_validate_rejects_exactly_the_unsafe_corruptions(graph: wb.Graph, policy: str,
                                                         cap: int | None,
                                                         data: st.DataObject) -> None:
    """For every corruption kind, ``validate()`` raises a :class:`wb.ScheduleError` whose message
    is that of one of the problems the independent replay finds, and accepts the schedule when
    the replay finds none (a harmless corruption: a sync dropped that another path implies, an
    op moved to a stream where nothing races).  A third of the schedules are folded onto two
    streams (``max_streams=2``).  Pins every rule of the validator from outside:
    a rule weakened lets some corrupted schedule through, one made stricter rejects a safe
    one."""
    s = wb.schedule(graph, policy, max_streams=cap)
    assert not replay_problems(graph, s.streams, s.syncs, s.issue_order, s.barriers)
    for kind in KINDS:
        fields = _corrupt(kind, s, data)
        if fields is None:
            continue
        bad = Schedule(graph, s.policy, barrier_kind=s.barrier_kind, **fields)
        problems = replay_problems(graph, **fields)
        if not problems:
            assert bad.validate() is bad, kind
            continue
        with pytest.raises(wb.ScheduleError) as err:
            bad.validate()
        message = str(err.value)
        assert any(MESSAGES[p] in message for p in problems), (kind, problems, message)
