"""Stage timings near the Python floor (issue 44): each stage's CPU seconds on chain / fan / random
DAGs at 1k, 10k, 100k and 1M ops, the exponent fitted over the sizes and the one between the two
largest, and the ratio to a plain heap list scheduler timed in the same process on the same graph.

    .venv/bin/python benchmarks/stages.py [--sizes 1000,10000,100000] [--families fan,random]
                                          [--stages 'plan:*,plan_nnc:somas'] [--budget-s 60]
                                          [--mib]
    .venv/bin/python benchmarks/stages.py --relation [--sizes ...] [--families ...]

CPU time (``time.process_time``, garbage collector off, best of 3 up to 10k ops) because the
machine is shared: wall time was 7-30x CPU time under load.  A row stops growing once the previous
size, scaled linearly, would exceed ``--budget-s``.  ``--mib`` adds, per row and size, the peak
memory the stage allocates (``tracemalloc``, in a separate untimed run).

**The rows.**  :data:`STAGES` maps a stage name to a *preparer*: called with the graph (untimed)
it returns the thunk that is timed.

* the baselines, the floor a Python scheduler can reach: ``kahn`` (Kahn's sort, FIFO, over the
  graph's integer successor lists), ``list_scheduler`` (a heap of ready ops keyed by
  (-longest path after the op, index): the shape of every policy here) and ``networkx``
  (``networkx.topological_sort`` on a ``DiGraph`` built untimed);
* every registered policy: ``wb.schedule(graph, policy)``;
* ``lifetimes`` / ``lifetimes_nnc``: :func:`workbench.memory.lifetimes` of the serial (one
  stream) and the NNC (multi-stream, happens-before conflicts) schedule;
* ``plan:<planner>`` / ``plan_nnc:<planner>``: ``wb.plan_memory`` of those schedules with every
  registered planner but the slow ones (schedules built untimed);
* ``load_json`` / ``load_dot``: ``wb.load`` of the graph as ``wb.save`` writes it (the file
  written untimed).
"""

from __future__ import annotations

import argparse
import fnmatch
import gc
import heapq
import math
import sys
import tempfile
import time
import tracemalloc
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # this checkout's workbench, not an installed one

import workbench as wb  # noqa: E402
from workbench.values.graph import Graph  # noqa: E402

SIZES = (1_000, 10_000, 100_000, 1_000_000)
Thunk = Callable[[], Any]
Preparer = Callable[[Graph], Thunk]


# ------------------------------------------------------------------ families and the baseline
def chain_graph(n: int) -> Graph:
    """``n`` ops in a line, sizes 1-13 KiB."""
    ids = [f"c{i}" for i in range(n)]
    return Graph.from_edges([(ids[i], ids[i + 1]) for i in range(n - 1)], ops=ids,
                            sizes={op: 1024 * (1 + i * 7 % 13) for i, op in enumerate(ids)},
                            name=f"chain_{n}")


def fan_graph(n: int) -> Graph:
    """One source read by ``n - 2`` ops that one sink reads (fan 1 -> n -> 1)."""
    mids = [f"m{i}" for i in range(max(n - 2, 0))]
    edges = [("src", m) for m in mids] + [(m, "sink") for m in mids]
    return Graph.from_edges(edges, ops=["src", *mids, "sink"],
                            sizes={m: 1024 * (1 + i * 7 % 13) for i, m in enumerate(mids)},
                            name=f"fan_{n}")


def random_graph(n: int) -> Graph:
    """``random_dag`` with 3 edges per op (window 64), seed 1."""
    return wb.models.random_dag(n, edges_per_op=3, seed=1)


FAMILIES: dict[str, Callable[[int], Graph]] = {
    "chain": chain_graph, "fan": fan_graph, "random": random_graph}


def kahn(graph: Graph) -> list[int]:
    """Kahn's algorithm, FIFO, over integer successor lists.  O(V + E)."""
    succ, pred = graph.succ_index, graph.pred_index
    indeg = [len(p) for p in pred]
    queue = deque(i for i in range(len(succ)) if not indeg[i])
    order = []
    while queue:
        i = queue.popleft()
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if not indeg[j]:
                queue.append(j)
    return order


def list_scheduler(graph: Graph) -> list[int]:
    """A plain list scheduler: longest path after each op (over Kahn's order), then a heap of
    ready ops, the longest path first, ties by index.  O((V + E) log V)."""
    succ, pred = graph.succ_index, graph.pred_index
    rank = [0] * len(succ)
    for i in reversed(kahn(graph)):
        rank[i] = 1 + max((rank[j] for j in succ[i]), default=-1)
    indeg = [len(p) for p in pred]
    heap = [(-rank[i], i) for i in range(len(succ)) if not indeg[i]]
    heapq.heapify(heap)
    order = []
    while heap:
        _, i = heapq.heappop(heap)
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if not indeg[j]:
                heapq.heappush(heap, (-rank[j], j))
    return order


def _networkx_sort(graph: Graph) -> Thunk:
    import networkx as nx

    digraph = nx.DiGraph()
    digraph.add_nodes_from(range(len(graph)))
    digraph.add_edges_from((i, j) for i, js in enumerate(graph.succ_index) for j in js)
    return lambda: list(nx.topological_sort(digraph))


BASELINE = "list_scheduler"


# ------------------------------------------------------------------ the memory rows
def _memory_stage(policy: str, planner: str | None) -> Preparer:
    def prepare(graph: Graph) -> Thunk:
        schedule = wb.schedule(graph, policy)
        if planner is None:
            return lambda: wb.memory.lifetimes(schedule)
        return lambda: wb.plan_memory(schedule, planner)

    return prepare


def memory_stages() -> dict[str, Preparer]:
    """``lifetimes``, ``lifetimes_nnc``, ``plan:<planner>`` and ``plan_nnc:<planner>``."""
    planners = [p for p in wb.memory.planners() if not wb.memory.PLANNERS.get(p).slow]
    stages: dict[str, Preparer] = {"lifetimes": _memory_stage("serial", None),
                                   "lifetimes_nnc": _memory_stage("nnc", None)}
    for tag, policy in (("plan", "serial"), ("plan_nnc", "nnc")):
        for planner in planners:
            stages[f"{tag}:{planner}"] = _memory_stage(policy, planner)
    return stages


def _direct(fn: Callable[[Graph], Any]) -> Preparer:
    return lambda graph: (lambda: fn(graph))


def _policy(name: str) -> Preparer:
    return lambda graph: (lambda: wb.schedule(graph, name))


def _load(suffix: str) -> Preparer:
    """``wb.load`` of the graph saved (untimed) as ``suffix`` in a temporary folder that lasts
    as long as the process."""
    def prepare(graph: Graph) -> Thunk:
        path = Path(_FOLDER.name) / f"{graph.name}{suffix}"
        wb.save(graph, path)
        return lambda: wb.load(path)

    return prepare


_FOLDER = tempfile.TemporaryDirectory(prefix="stages-")

#: stage name -> preparer (graph -> timed thunk); see the module docstring.
STAGES: dict[str, Preparer] = {
    "kahn": _direct(kahn), BASELINE: _direct(list_scheduler), "networkx": _networkx_sort,
    **{name: _policy(name) for name in wb.policies()}, **memory_stages(),
    "load_json": _load(".json"), "load_dot": _load(".dot")}


# ------------------------------------------------------------------ timing
def cpu_seconds(thunk: Thunk, *, rounds: int = 1) -> float:
    """Best CPU time of ``thunk()`` over ``rounds`` runs, the garbage collector off (what the
    previous thunks left is collected first: :func:`measure` has frozen the heap from before,
    so that costs what they left, not what the process holds)."""
    best = math.inf
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            start = time.process_time()
            thunk()
            best = min(best, time.process_time() - start)
    finally:
        gc.enable()
    return best


def peak_mib(thunk: Thunk) -> float:
    """Peak memory allocated while ``thunk()`` runs, in MiB (``tracemalloc``; NumPy reports its
    buffers to it)."""
    gc.collect()
    tracemalloc.start()
    try:
        thunk()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def fitted_exponent(times: dict[int, float]) -> float:
    """Least-squares slope of log time against log size (nan with fewer than two sizes)."""
    points = [(math.log(n), math.log(max(t, 1e-6))) for n, t in times.items() if t == t]
    if len(points) < 2:
        return math.nan
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    return (sum((x - mx) * (y - my) for x, y in points)
            / sum((x - mx) ** 2 for x, _ in points))


def last_exponent(times: dict[int, float]) -> float:
    """The slope between the two largest sizes timed (nan with fewer than two): where a stage
    turns superlinear, which a fit through a small size whose time is mostly a constant hides
    (SOMAS on NNC's schedules of random DAGs: 0.99 fitted over 1k-100k, 1.5 from 10k to 100k)."""
    done = sorted((n, t) for n, t in times.items() if t == t)
    return fitted_exponent(dict(done[-2:]))  # a fit through two points is their slope


def select(patterns: str) -> list[str]:
    """Stage names matching comma-separated names or shell patterns (``plan:*``), in table
    order; an unknown name exits with the known ones."""
    chosen: list[str] = []
    for pattern in [p for p in patterns.split(",") if p]:
        hits = [s for s in STAGES if fnmatch.fnmatchcase(s, pattern)]
        if not hits:
            raise SystemExit(f"unknown stage {pattern!r} (known: {', '.join(STAGES)})")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def measure(families: list[str], sizes: list[int], stages: list[str], *,
            budget_s: float = 60.0, rounds: int = 3, mib: bool = False
            ) -> list[dict[str, Any]]:
    """One row per (stage, family): CPU s per size, the fitted exponent, the ratio to the list
    scheduler at the largest size timed (and with ``mib`` the peak MiB per size)."""
    rows = []
    gc.collect()
    gc.freeze()  # the caller's heap is never scanned again (a test session's took seconds a pass)
    try:
        for family in families:
            rows.extend(_measure_family(family, sizes, stages, budget_s, rounds, mib))
    finally:
        gc.unfreeze()
    return rows


def _measure_family(family: str, sizes: list[int], stages: list[str], budget_s: float,
                    rounds: int, mib: bool) -> list[dict[str, Any]]:
    """:func:`measure`'s rows of one family."""
    rows = []
    times: dict[str, dict[int, float]] = {s: {} for s in stages}
    peaks: dict[str, dict[int, float]] = {s: {} for s in stages}
    base: dict[int, float] = {}
    for n in sorted(sizes):
        graph = FAMILIES[family](n)
        graph.succ_index, graph.pred_index  # noqa: B018 (built untimed)
        k = rounds if n <= 10_000 else 1
        base[n] = cpu_seconds(STAGES[BASELINE](graph), rounds=k)
        for stage in stages:
            done = times[stage]
            if done and max(done.values()) * n / max(done) > budget_s:
                continue  # the last size, scaled linearly, is already over budget
            thunk = STAGES[stage](graph)
            done[n] = base[n] if stage == BASELINE else cpu_seconds(thunk, rounds=k)
            if mib:
                peaks[stage][n] = peak_mib(thunk)
            del thunk
        del graph
    for stage in stages:
        done = times[stage]
        top = max(done, default=None)
        row: dict[str, Any] = {"stage": stage, "family": family}
        row.update({f"{n:,}": done.get(n, math.nan) for n in sorted(sizes)})
        row["exponent"] = fitted_exponent(done)
        row["exp_last"] = last_exponent(done)
        row["x_list"] = done[top] / base[top] if top else math.nan
        if mib:
            row.update({f"MiB {n:,}": peaks[stage].get(n, math.nan) for n in sorted(sizes)})
        rows.append(row)
    return rows


# ------------------------------------------------------------------ what the planners face
def relation_rows(families: list[str], sizes: list[int]) -> list[dict[str, Any]]:
    """Per family, schedule (``serial``, ``nnc``) and size: the size of the conflict relation the
    planners place against, which sets their floor.  ``streams``; ``walls %``: tensors that
    conflict with every later-born one (tails: graph outputs, and on several streams tensors
    never dead); ``listed/tensor``: CSR entries a tensor (the pairs listed, both ways);
    ``pairs/tensor``: conflicting pairs a tensor, implicit ones included; ``walls/step`` and
    ``partners/step``: what one greedy-by-size step reads, the placed walls born no later than
    the tensor and its placed listed partners (counted, not timed; a Fenwick tree over births,
    O(n log n))."""
    from workbench.memory.lifetimes import lifetimes
    from workbench.memory.placement import _earlier_partners
    from workbench.memory.plan import prepare
    from workbench.memory.static import size_order

    rows = []
    for family in families:
        for policy in ("serial", "nnc"):
            for n in sorted(sizes):
                schedule = wb.schedule(FAMILIES[family](n), policy)
                lived = lifetimes(schedule)
                problem = prepare(lived.records, 512, lived.conflicts)
                graph, order = problem.graph, size_order(problem)
                size = np.asarray(problem.sizes, dtype=np.int64)
                _, partners = _earlier_partners(graph, size, order)
                walls = _walls_read(graph.births.tolist(), graph.tails.tolist(), order,
                                    size.tolist())
                m = max(graph.n, 1)
                rows.append({"family": family, "schedule": policy, "ops": n,
                             "streams": schedule.n_streams, "tensors": graph.n,
                             "walls %": 100 * float(graph.tails.mean()) if graph.n else 0.0,
                             "listed/tensor": len(graph.idx) / m,
                             "pairs/tensor": graph.n_pairs / m,
                             "walls/step": walls, "partners/step": len(partners) / m})
    return rows


def _walls_read(births: list[int], tails: list[bool], order: list[int], sizes: list[int]) -> float:
    """Mean, over the non-tail tensors with bytes, of the walls placed before them in ``order``
    and born no later than them (what :func:`workbench.memory.placement.place_until` scans)."""
    ranks = {b: k + 1 for k, b in enumerate(sorted(set(births)))}
    tree = [0] * (len(ranks) + 1)
    total = steps = 0
    for q in order:
        if not sizes[q]:
            continue
        k = ranks[births[q]]
        if tails[q]:
            while k < len(tree):
                tree[k] += 1
                k += k & -k
            continue
        steps += 1
        while k:
            total += tree[k]
            k -= k & -k
    return total / max(steps, 1)


def _sizes(text: str) -> list[int]:
    """``--sizes``: positive integers, comma-separated (argparse turns the error into one line)."""
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes must be integers, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive op counts, got {text!r}")
    return sizes


def _families(text: str) -> list[str]:
    """``--families``: names of :data:`FAMILIES`, comma-separated."""
    names = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in names if f not in FAMILIES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown family {unknown[0] if unknown else text!r} (known: {', '.join(FAMILIES)})")
    return names


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=_sizes, default=list(SIZES),
                        help="positive op counts, comma-separated")
    parser.add_argument("--families", type=_families, default=list(FAMILIES),
                        help=f"comma-separated, of: {', '.join(FAMILIES)}")
    parser.add_argument("--stages", default="*", help="names or patterns, comma-separated")
    parser.add_argument("--budget-s", type=float, default=60.0,
                        help="skip a size whose linear extrapolation exceeds this (CPU s)")
    parser.add_argument("--mib", action="store_true", help="also the peak MiB (tracemalloc)")
    parser.add_argument("--relation", action="store_true",
                        help="print the conflict relations' sizes instead of timings")
    args = parser.parse_args(argv)
    import pandas as pd

    pd.set_option("display.width", 250)
    if args.relation:
        print(pd.DataFrame(relation_rows(
            args.families, args.sizes)).to_string(
                index=False, float_format=lambda v: f"{v:.4g}"))
        return

    stages = select(args.stages)
    rows = measure(args.families, args.sizes, stages,
                   budget_s=args.budget_s, mib=args.mib)
    print("CPU seconds (NaN: skipped, over budget); exponent fitted over the sizes, exp_last "
          "between the two largest; x_list: ratio to the "
          f"{BASELINE} baseline at the largest size timed")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
