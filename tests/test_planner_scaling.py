"""The memory planners issue 44 made linear on wide graphs stay linear: fitted exponents over
sizes timed interleaved, best of a few rounds (:mod:`tests._complexity`: a loaded machine slows
every size alike), so a quadratic regression (exponent near 2) fails and load does not.

Before the change each of these grew faster than linearly: a tail's walls were copied once per
placed tail (a serial fan 1 -> n -> 1: every tensor a tail, 10^10 entries copied at 100k), and
on a multi-stream schedule every tail read every placed tail as a separate range (the fan under
NNC: greedy by size 1.7 s at 10k ops, quadratic)."""

from __future__ import annotations

import workbench as wb
from tests._complexity import assert_near_linear
from workbench.memory.check import check_no_overlap
from workbench.values.graph import Graph


def _fan(n: int) -> Graph:
    """One source read by ``n`` ops that one sink reads (fan 1 -> n -> 1), sizes varied."""
    mids = [f"m{i}" for i in range(n)]
    return Graph.from_edges([("src", m) for m in mids] + [(m, "sink") for m in mids],
                            ops=["src", *mids, "sink"],
                            sizes={m: 1024 * (1 + i * 7 % 13) for i, m in enumerate(mids)})


def _planning(policy: str, planner: str):
    """``plan(n)``: the planner on the lifetimes of ``policy``'s schedule of a fan of ``n``
    (graph, schedule and lifetimes built once per size, outside the timed call)."""
    cache: dict[int, wb.memory.Lifetimes] = {}

    def plan(n: int) -> object:
        if n not in cache:
            cache[n] = wb.memory.lifetimes(wb.schedule(_fan(n), policy))
        lt = cache[n]
        options = {"conflicts": lt.conflicts} if lt.conflicts is not None else {}
        return wb.memory.plan_usage(lt.records, planner, **options)
    return plan


def test_naive_plan_of_a_fan_is_near_linear() -> None:
    fan = {}

    def plan(n: int) -> object:
        if n not in fan:
            fan[n] = wb.schedule(_fan(n), "serial")
        return wb.plan_memory(fan[n], "naive")
    assert_near_linear(plan, 4000, "the naive plan of a serial fan")


def test_greedy_by_size_on_a_serial_fan_is_near_linear() -> None:
    """Every tensor of the fan reaches the last step: all tails (walls)."""
    assert_near_linear(_planning("serial", "greedy_by_size"), 4000,
                       "greedy_by_size on a serial fan")


def test_greedy_by_size_on_a_multi_stream_fan_is_near_linear() -> None:
    """Under NNC each middle op has its stream and the sink reads them all: tails of a
    happens-before relation, whose key does not cover their conflicts with older tails."""
    assert_near_linear(_planning("nnc", "greedy_by_size"), 2000,
                       "greedy_by_size on a fan under nnc")


def test_somas_on_a_multi_stream_fan_is_near_linear() -> None:
    assert_near_linear(_planning("nnc", "somas"), 500, "somas on a fan under nnc", rounds=2)


def test_a_multi_stream_fan_is_stacked_without_overlap() -> None:
    """Under NNC the middle tensors conflict pairwise and with the source's and the sink's
    tensors (which do not conflict with each other): the plan stacks them, optimally."""
    sched = wb.schedule(_fan(300), "nnc")
    for planner in ("greedy_by_size", "somas"):
        plan = wb.plan_memory(sched, planner, alignment=1)
        check_no_overlap(plan)
        mids = sum(r.size for r in plan.records if r.name.startswith("m"))
        ends = max(r.size for r in plan.records if not r.name.startswith("m"))
        assert plan.arena_bytes == plan.lower_bound == mids + ends
