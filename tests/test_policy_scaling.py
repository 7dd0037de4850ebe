"""GPTO, the critical-path list scheduler and the DOT reader at scale (issue 44): counted work
where it can be counted (schedules built, tokens made), otherwise fitted exponents or ratios of
runs timed interleaved (:mod:`tests._complexity`), never an absolute wall-clock limit."""

from __future__ import annotations

import random
import time
from bisect import bisect_left, bisect_right
from pathlib import Path

import pytest

import workbench as wb
from tests._complexity import assert_near_linear
from workbench.schedulers import gpto


def test_gpto_builds_syncs_only_for_the_candidates_its_choice_plans(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """It built a schedule (streams, issue order, syncs) for each of its 10 priorities; the
    makespans choose, so only the candidates whose arena is planned (and the winner, one of
    them) need one."""
    built = []
    real = gpto.placement_schedule

    def counted(*args: object, **kwargs: object) -> wb.Schedule:
        built.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gpto, "placement_schedule", counted)
    g = wb.models.random_dag(gpto.ARENA_ALL_MAX_OPS + 500, edges_per_op=3, seed=2)
    limited = wb.schedule(g, "gpto", memory_limit_bytes=2**62)  # every arena fits
    planned = [r for r in limited.notes["portfolio"] if r["arena_bytes"] is not None]
    assert len(limited.notes["portfolio"]) == len(gpto.PRIORITIES)
    assert 1 <= len(built) == len(planned) < len(gpto.PRIORITIES)
    assert limited.notes["arena_bytes"] is not None
    assert limited.notes["winner"] in gpto.PRIORITIES
    # no limit and no tie at the shortest makespan: no arena decides, none is planned, and the
    # winner is the same candidate
    built.clear()
    free = wb.schedule(g, "gpto")
    spans = sorted(round(r["makespan_us"], 6) for r in free.notes["portfolio"])
    assert spans[0] < spans[1]
    assert len(built) == 1 and free.notes["arena_bytes"] is None
    assert all(r["arena_bytes"] is None for r in free.notes["portfolio"])
    assert free.notes["winner"] == limited.notes["winner"]
    assert free.issue_order == limited.issue_order and free.syncs == limited.syncs
    small = wb.models.random_dag(40, seed=2)  # small graphs plan every one, building each
    built.clear()                              # distinct placement once
    rows = wb.schedule(small, "gpto").notes["portfolio"]
    assert all(r["arena_bytes"] is not None for r in rows)
    assert 1 <= len(built) <= len(rows)
    # a fan's ten priorities tie on a few placements: one build (and one arena) each
    fan = wb.Graph.from_edges([("src", f"b{i}") for i in range(30)]
                              + [(f"b{i}", "sink") for i in range(30)])
    built.clear()
    rows = wb.schedule(fan, "gpto").notes["portfolio"]
    assert all(r["arena_bytes"] is not None for r in rows) and len(built) < len(rows)


def test_critical_path_is_near_linear() -> None:
    """Upward ranks, a heap of ranks and first-fit gaps: near-linear on random DAGs."""
    graphs: dict[int, wb.Graph] = {}

    def run(n: int) -> object:
        if n not in graphs:
            graphs[n] = wb.models.random_dag(n, edges_per_op=3, seed=1)
        return wb.schedule(graphs[n], "critical_path")
    assert_near_linear(run, 2000, "critical_path on random DAGs")


def test_a_stream_timeline_sorts_its_intervals_as_sorted_insertion_did() -> None:
    """The intervals are sorted when read (an insertion into a sorted list moved O(n) entries,
    quadratic on a long stream): the order is the one inserting each into a sorted list gave
    (an empty interval before the others of its start, any other after them)."""
    from workbench.schedulers.critical_path import _Timeline

    rng = random.Random(7)
    for _ in range(300):
        line, starts, ends = _Timeline(), [], []
        for _ in range(30):
            s = float(rng.randint(0, 10))
            e = s + rng.choice([0.0, 0.0, 1.0, 2.5])
            k = bisect_left(starts, s) if e <= s else bisect_right(starts, s)
            starts.insert(k, s)
            ends.insert(k, e)
            line.insert(s, e)
            if rng.random() < 0.3:
                assert (line.starts, line.ends) == (starts, ends)
        assert (line.starts, line.ends) == (starts, ends)


def test_dot_that_to_dot_writes_reads_without_the_tokenizer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every statement of a saved graph is read by the statement scanner (the tokenizer and
    parser cost ~2 µs a token, ~55 tokens an op); a hand-written subgraph still reaches them."""
    from workbench.io.text import dot

    g = wb.models.random_dag(500, seed=4).replace(control_edges=[("n0", "n499")])
    path = wb.save(g, tmp_path / "g.dot")
    real = dot.tokens
    made = []

    def counted(*args: object, **kwargs: object) -> object:
        made.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(dot, "tokens", counted)
    assert wb.load(path) == g and not made
    assert dot.graph_from_dot("digraph g { a -> {b c} }").op_ids == ("a", "b", "c") and made


def test_dot_loads_within_a_small_factor_of_json(tmp_path: Path) -> None:
    """The same graph as DOT and as JSON, loaded interleaved, best of five: DOT was 5-7x the
    JSON reader (issue 44 asks for at most 2x; the bound leaves room for a loaded machine)."""
    g = wb.models.random_dag(3000, edges_per_op=3, seed=1)
    paths = {fmt: wb.save(g, tmp_path / f"g.{fmt}") for fmt in ("json", "dot")}
    best = {fmt: float("inf") for fmt in paths}
    for _ in range(5):
        for fmt, path in paths.items():
            start = time.process_time()
            wb.load(path)
            best[fmt] = min(best[fmt], time.process_time() - start)
    assert best["dot"] < 3.5 * best["json"], best
