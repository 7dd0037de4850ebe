"""SOMAS's tensor classes around the solver: lifelong tensors and contiguous lists (seed 004
"Memory Management"; notes/memory_planners.md §1.2 post-processing and §1.3 steps 1, 5 and 8).

* **Lifelong** tensors (MindSpore's ``kLifeLongGraphAll``) are taken out of the solve and put in
  their own band right above the solved region, back to back in tensor-index order; the arena is
  the solved top plus their aligned sizes, and the lower bound counts them at every step.
* A **contiguous list** (the inputs of a communication op, and separately its outputs) becomes
  one block: its size is the sum of its members' aligned sizes, and after solving the members get
  consecutive offsets in list order.  Lists whose members all have size 0 are dropped, as
  MindSpore drops them.

Simplified: a contiguous block conflicts with every tensor that conflicts with *any* of its
members over the whole block (SOMAS shifts each member's forbidden interval by its position in
the block, which can let a neighbour sit beside a member it does not conflict with); this is
conservative, so a plan is still overlap-free, at worst a little larger.  Ascend's 512-byte gap in
front of each list (``GetCommunicationReservedSize``) is not reserved (it is a GPU/CPU planner).

Complexity: O(n + P) on top of the solve, for P conflicting pairs (listed once to merge blocks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from workbench._checks import did_you_mean, show
from workbench.errors import OptionError
from workbench.memory.bounds import peak_live_bytes
from workbench.memory.plan import MemoryPlan, Problem, UsageRecord
from workbench.ops import COMMUNICATION_KINDS  # their inputs / outputs: contiguous lists

TensorRef = int | str
Solve = Callable[[list[UsageRecord], frozenset[tuple[int, int]]], MemoryPlan]


def _resolver(records: Sequence[UsageRecord]) -> Callable[[TensorRef, str], int]:
    by_name: dict[str, int] = {}
    for i, r in enumerate(records):
        if r.name:
            by_name.setdefault(r.name, i)

    def resolve(ref: TensorRef, what: str) -> int:
        if isinstance(ref, bool):
            raise OptionError(f"somas {what}: {ref!r} is not a tensor index or name")
        if isinstance(ref, int):
            if not 0 <= ref < len(records):
                raise OptionError(f"somas {what}: tensor index {ref} is out of range "
                                  f"(0..{len(records) - 1})")
            return ref
        if isinstance(ref, str):
            if ref in by_name:
                return by_name[ref]
            raise OptionError(f"somas {what}: no planned tensor named {show(ref)}"
                              f"{did_you_mean(ref, by_name)}")
        raise OptionError(f"somas {what}: {ref!r} is not a tensor index or name")

    return resolve


def _blocks(problem: Problem, lifelong: set[int],
            groups: list[list[int]]) -> tuple[list[list[int]], list[int]]:
    """Blocks in order of their first member's index, and each tensor's block (-1: lifelong)."""
    group_of = {i: g for g, members in enumerate(groups) for i in members}
    block_of = [-1] * len(problem.records)
    blocks: list[list[int]] = []
    for i in range(len(problem.records)):
        if i in lifelong or block_of[i] >= 0:
            continue
        members = groups[group_of[i]] if i in group_of else [i]
        for m in members:
            block_of[m] = len(blocks)
        blocks.append(members)
    return blocks, block_of


def plan_with_classes(problem: Problem, lifelong: Iterable[TensorRef],
                      contiguous: Iterable[Sequence[TensorRef]], solve: Solve) -> MemoryPlan:
    """Solve ``problem`` with lifelong tensors in their own top band and contiguous lists as
    blocks; ``solve(block_records, block_conflicts)`` runs the SOMAS solver on the blocks."""
    records, sizes = problem.records, [int(s) for s in problem.sizes]
    resolve = _resolver(records)
    life = {resolve(ref, "lifelong") for ref in lifelong}
    groups: list[list[int]] = []
    seen: dict[int, int] = {}
    for g, group in enumerate(contiguous):
        if isinstance(group, (str, int)):
            raise OptionError(f"somas contiguous: list {g} must be a list of tensors, "
                              f"got {group!r}")
        members = [resolve(ref, f"contiguous list {g}") for ref in group]
        for i in members:
            if i in life:
                raise OptionError(f"somas contiguous list {g}: tensor {i} {records[i].name!r} "
                                  "is lifelong")
            if i in seen:
                raise OptionError(f"somas contiguous list {g}: tensor {i} {records[i].name!r} "
                                  f"is already in list {seen[i]}")
            seen[i] = g
        if any(sizes[i] for i in members):
            groups.append(members)
    blocks, block_of = _blocks(problem, life, groups)
    block_records = [UsageRecord(sum(sizes[i] for i in m), min(records[i].first for i in m),
                                 max(records[i].last for i in m), records[m[0]].name)
                     for m in blocks]
    pairs = set()
    for i in range(len(records)):
        bi = block_of[i]
        if bi < 0:
            continue
        for j in problem.graph.partners(i):
            bj = block_of[int(j)]
            if bj >= 0 and bj != bi:
                pairs.add((min(bi, bj), max(bi, bj)))
    solved = solve(block_records, frozenset(pairs))
    offsets = [0] * len(records)
    for members, start in zip(blocks, solved.offsets, strict=True):
        for i in members:
            offsets[i] = start
            start += sizes[i]
    top = solved.arena_bytes
    for i in sorted(life):
        offsets[i], top = top, top + sizes[i]
    life_bytes = sum(sizes[i] for i in life)
    bound = peak_live_bytes([r for i, r in enumerate(records) if i not in life],
                            alignment=problem.alignment) + life_bytes
    notes: dict[str, Any] = dict(solved.notes)
    notes.update({"lifelong": [records[i].name or i for i in sorted(life)],
                  "lifelong_bytes": life_bytes, "solved_top": solved.arena_bytes,
                  "contiguous": [[records[i].name or i for i in m] for m in groups]})
    return MemoryPlan("somas", records, tuple(offsets), top, bound, problem.alignment,
                      problem.conflicts, notes)


def communication_lists(ops: Iterable[Any], planned: set[str],
                        roots: dict[str, str]) -> list[list[str]]:
    """The contiguous lists of a graph: per communication op, its planned inputs (aliases
    resolved to the tensor that holds the bytes) and separately its planned outputs, each kept
    when it has two or more tensors; a tensor already in an earlier list is left out of later
    ones (a tensor has one address).  O(V + E)."""
    lists: list[list[str]] = []
    taken: set[str] = set()
    for op in ops:
        if op.kind not in COMMUNICATION_KINDS:
            continue
        for tensors in (op.inputs, op.outputs):
            members = [t for t in dict.fromkeys(roots.get(t, t) for t in tensors)
                       if t in planned and t not in taken]
            if len(members) >= 2:
                lists.append(members)
                taken.update(members)
    return lists
