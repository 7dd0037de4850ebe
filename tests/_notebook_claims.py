"""Claim tables: every sentence of the notebooks' prose that states a direction or a comparison
("faster", "shrinks", "grows", "costs time", "all of the speedup", "wins", "more", "tighter"), with
the quantity it is about and the relation the cells must show (issue 35: prose that contradicts
its own outputs).

A :class:`Claim` is the sentence (a substring of exactly one markdown cell of the notebook, its
whitespace runs as one space), the quantity in words, and two computations related by
``relation``.  The computations mirror the notebook's cells with the same workbench calls and
arguments, memoised, so the whole table costs a few seconds and no notebook is executed a second
time (``tests/test_notebooks.py`` executes them once; ``tests/test_notebook_claims.py`` checks
these tables).  An exercise asking "does it grow or shrink?" states no direction and has no
claim; one that asks *why* something happens claims that it happens."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import workbench as wb
from tests.test_quoted_notebooks import _growth, _makespan, _sweep_speedups
from workbench.control.trace import decisions_frame

NB00, NB01, NB02, NB03, NB04, NB05, NB06 = (
    "00_quickstart.ipynb", "01_nnc_static_schedule.ipynb", "02_raf_wavefront_asap_ios.ipynb",
    "03_textbook_scheduling.ipynb", "04_mindspore_levels_memory.ipynb", "05_gpu_execution.ipynb",
    "06_workbench_app.ipynb")
MIB, GIB = 2**20, 2**30
Value = Callable[[], float]  # a quantity


@dataclass(frozen=True)
class Claim:
    """``left() relation right()``: what ``sentence`` says, about ``about``.  ``relation`` is one
    of ``<``, ``<=``, ``>``, ``>=``, ``==`` (within 1e-6 relative), ``in`` (``right`` returns a
    (low, high) pair: ``low <= left <= high``)."""

    sentence: str
    about: str
    left: Value
    relation: str
    right: Callable[[], Any]


def holds(claim: Claim) -> tuple[bool, float, Any]:
    """Whether ``claim`` holds, with the two values compared."""
    a, b = claim.left(), claim.right()
    ok = {"<": lambda: a < b, "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b,
          "==": lambda: abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b)),
          "in": lambda: b[0] <= a <= b[1]}[claim.relation]()
    return ok, a, b


def const(x: Any) -> Callable[[], Any]:
    return lambda: x  # a fixed bound


# --- graphs, schedules and runs, as the cells make them (memoised) -----------------------------

@cache
def model(name: str, **kw: Any) -> wb.Graph:
    """``wb.models.<name>(**kw)``; ``inception`` is the notebooks' batch-``batch`` unfused one."""
    if name == "tiny":
        return wb.models.transformer_block(seq_len=8, d_model=64, heads=2, d_ff=256, layers=4)
    if name == "inception":
        return wb.models.inception_v3(batch=kw.get("batch", 1), fused=False)
    return getattr(wb.models, name)(**kw)  # type: ignore[no-any-return]


_MEMO: dict[tuple[Any, ...], tuple[Any, Any]] = {}


def _memo(obj: Any, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    """``make()``, memoised on ``obj``'s identity and ``key`` (graphs and schedules are not
    hashable; ``obj`` is kept alive beside the value so that its id is not reused)."""
    k = (id(obj), *key)
    if k not in _MEMO:
        _MEMO[k] = (obj, make())
    return _MEMO[k][1]


def sched(graph: wb.Graph, policy: str, **kw: Any) -> wb.Schedule:
    """``wb.schedule(graph, policy, **kw)``, memoised."""
    return _memo(graph, (policy, *sorted(kw.items())),  # type: ignore[no-any-return]
                 lambda: wb.schedule(graph, policy, **kw))


def run(schedule: wb.Schedule, device: Any = "h100", **kw: Any) -> wb.Trace:
    """``wb.simulate(schedule, device, **kw)``, memoised."""
    return _memo(schedule, (device, *sorted(kw.items())),  # type: ignore[no-any-return]
                 lambda: wb.simulate(schedule, device, **kw))


def span(graph: wb.Graph, policy: str, mode: str = "eager", device: Any = "h100",
         **kw: Any) -> float:
    """Makespan (µs) of ``policy`` on ``graph`` simulated in ``mode``."""
    return run(sched(graph, policy, **kw), device, mode=mode).makespan


def speedup(graph: wb.Graph, policy: str = "nnc", mode: str = "eager", device: Any = "h100",
            **kw: Any) -> float:
    """Serial makespan over ``policy``'s."""
    return span(graph, "serial", mode, device) / span(graph, policy, mode, device, **kw)


def inc(batch: int = 1) -> wb.Graph:
    return model("inception", batch=batch)


def host_work(graph: wb.Graph) -> tuple[float, float]:
    """Eager serial run: (host's launch time of all kernels, the kernels' stand-alone time)."""
    t = run(sched(graph, "serial"))
    return (float(t.df["kernels"].sum()) * wb.costs.get_device("h100").launch_overhead_us,
            float(t.df["alone_us"].sum()))


def meta(graph: wb.Graph, policy: str, key: str, mode: str = "eager", **kw: Any) -> float:
    return float(run(sched(graph, policy), mode=mode, **kw).meta[key])


def _increasing(xs: list[float]) -> float:
    """The smallest step of ``xs`` (positive: strictly increasing)."""
    return min(b - a for a, b in zip(xs, xs[1:], strict=False))


# --- notebook 00 -------------------------------------------------------------------------------

ONE_STREAM = ("bfs", "dfs", "memory_greedy")
CLAIMS: dict[str, tuple[Claim, ...]] = {}
CLAIMS[NB00] = (
    Claim("finish far ahead of `serial` (the `speedup` column)",
          "graph mode, batch 1: nnc's speedup over serial", lambda: speedup(inc(), mode="graph"),
          ">", const(1.5)),
    Claim("while the one-stream orders (`bfs`, `dfs`, `memory_greedy`) tie with it",
          "graph mode: largest |makespan / serial - 1| of the one-stream orders",
          lambda: max(abs(span(inc(), p, "graph") / span(inc(), "serial", "graph") - 1)
                      for p in ONE_STREAM), "<", const(1e-3)),
    Claim("In eager mode the host needs longer to launch the kernels than the kernels need to run",
          "eager serial: launches x launch overhead vs the kernels' stand-alone time",
          lambda: host_work(inc())[0], ">", lambda: 2 * host_work(inc())[1]),
    Claim("the host issues its last one just before the run ends",
          "eager serial: host_end_us / makespan",
          lambda: meta(inc(), "serial", "host_end_us") / span(inc(), "serial"), ">", const(0.99)),
    Claim("so `nnc` ends a little after `serial`", "eager: nnc's speedup",
          lambda: speedup(inc()), "in", const((0.95, 1.0 - 1e-9))),
    Claim("Graph mode replaces the launches by one graph launch (`host_end_us` of a few µs)",
          "graph mode: nnc's host_end_us", lambda: meta(inc(), "nnc", "host_end_us", "graph"),
          "<", const(10.0)),
    Claim("In graph mode the multi-stream speedup shrinks",
          "graph mode: nnc's speedup at batch 64 vs batch 1",
          lambda: speedup(inc(64), mode="graph"), "<", lambda: speedup(inc(1), mode="graph")),
    Claim("in eager mode it grows, and the streams now win there too",
          "eager: nnc's speedup at batch 64 vs batch 1 (and above 1)",
          lambda: speedup(inc(64)), ">", lambda: max(1.0, speedup(inc(1)))),
)


# --- notebook 01 -------------------------------------------------------------------------------

@cache
def nb01_graphs() -> dict[str, Any]:
    """The hand-written graphs and schedules of notebook 01 §1 and §3."""
    from workbench.values.schedule import build_schedule

    g = wb.models.nnc_diamond()
    g2 = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("c", "d"), ("d", "e"), ("b", "f"),
                              ("e", "f")], name="short_then_long")
    return {"diamond": g, "alt": build_schedule(g, "alternating",
                                                {"N1": 0, "N2": 0, "N3": 1, "N4": 1},
                                                ["N1", "N2", "N3", "N4"]),
            "g2": g2, "as_coded": wb.schedule(g2, "nnc", variant="as_coded")}


def _diamond(which: str) -> float:
    d = nb01_graphs()
    s = d["alt"] if which == "alt" else sched(d["diamond"], which)
    return run(s).makespan


def _while(n: int, control: str = "coroutine", **kw: Any) -> float:
    return run(sched(model("nnc_while_loop", iterations=n, **kw), "nnc"),
               control=control).makespan


def _loop_idle_share() -> float:
    """Notebook 01 §7: (body start - condition end) over the period of one iteration, for the
    last iterations (the loop alone)."""
    t = run(sched(model("nnc_while_loop", iterations=5), "nnc"))
    idle = t.start_of("loop/body/gemm#4") - t.end_of("loop/cond/less#4")
    return idle / (t.end_of("loop/cond/less#5") - t.end_of("loop/cond/less#4"))


def _case_arenas() -> tuple[float, float]:
    """Notebook 01 §7 case..of: (static arena, the larger of the two runs' arenas)."""
    s = sched(model("nnc_case_of"), "nnc")
    runs = [wb.simulate(s, "h100", branch=b) for b in ("heavy", "light")]
    return (wb.plan_memory(s, "greedy_by_size").arena_bytes,
            max(wb.plan_memory(t, "greedy_by_size").arena_bytes for t in runs))


CLAIMS[NB01] = (
    Claim("Both two-stream schedules beat the serial run",
          "the diamond: the slower two-stream makespan vs serial",
          lambda: max(_diamond("nnc"), _diamond("alt")), "<", lambda: _diamond("serial")),
    Claim("they finish within a fraction of a microsecond of each other, NNC's choice first",
          "the diamond: alternating makespan - NNC's (µs)",
          lambda: _diamond("alt") - _diamond("nnc"), "in", const((1e-9, 1.0))),
    Claim("Both take the same time here, but the as-coded version moves more work off the main",
          "short_then_long: as-coded makespan vs documented",
          lambda: run(nb01_graphs()["as_coded"]).makespan, "==",
          lambda: span(nb01_graphs()["g2"], "nnc")),
    Claim("but the as-coded version moves more work off the main stream",
          "short_then_long: ops off stream 0, as coded vs documented",
          lambda: len(nb01_graphs()["g2"]) - len(nb01_graphs()["as_coded"].streams[0]), ">",
          lambda: len(nb01_graphs()["g2"]) - len(sched(nb01_graphs()["g2"], "nnc").streams[0])),
    Claim("NNC's streams gain nothing there, and the events they add cost host time",
          "Inception, eager: NNC's speedup", lambda: speedup(inc()), "<", const(1.0)),
    Claim("the device sets the pace, and NNC's parallel branches make the run much shorter",
          "Inception, graph mode: NNC's speedup", lambda: speedup(inc(), mode="graph"), ">",
          const(1.5)),
    Claim("How many streams does it take to get (almost) all of the speedup?",
          "Inception, graph mode: max_streams=4's speedup over the uncapped one's",
          lambda: speedup(inc(), mode="graph", max_streams=4) / speedup(inc(), mode="graph"),
          ">=", const(0.98)),
    Claim("the device idles for almost a third of a small loop's time",
          "nnc_while_loop: device idle between condition and body / iteration period",
          _loop_idle_share, "in", const((0.25, 1 / 3))),
    Claim("so that work hides in the loop's idle time", "5 iterations: coroutine vs blocking",
          lambda: _while(5), "<", lambda: _while(5, "blocking")),
    Claim("The blocking host pays the side chain on top of the loop; the coroutine host hides it",
          "iterations 2..8: smallest (blocking - coroutine) makespan",
          lambda: min(_while(n, "blocking") - _while(n) for n in (2, 4, 6, 8)), ">", const(0.0)),
    Claim("From which `k` on does the coroutine model stop hiding the side chain completely",
          "coroutine makespan, side_ops 8 vs 0 (at some k it stops hiding)",
          lambda: _while(5, side_ops=8), ">", lambda: _while(5, side_ops=0)),
    Claim("the plan holds whichever branch runs", "case..of: static arena vs each run's arena",
          lambda: _case_arenas()[0], ">=", lambda: _case_arenas()[1]),
    Claim("why does no decision need a sync?", "rnn_loop: syncs of its decisions",
          lambda: float(decisions_frame(run(sched(model("rnn_loop", steps=8), "nnc")))["sync"]
                        .sum()), "==", const(0.0)),
)


# --- notebook 02 -------------------------------------------------------------------------------

def _sweep(batch: int, pick: Callable[[Any], float] = min) -> float:
    """Notebook 02 §2: the smallest (``pick``) multi-stream speedup of the V100 sweep at
    ``batch`` (the sweep of ``tests/test_quoted_notebooks.py``, memoised there)."""
    return pick(_sweep_speedups(batch))


RS = ((1, 1), (1, 4), (2, 2), (2, 3), (3, 8))


@cache
def _ios_rs() -> tuple[tuple[int, float], ...]:
    """Notebook 02 §5's r/s table on Inception (V100): (transitions, makespan) per (r, s)."""
    out = []
    for r, s in RS:
        sc = wb.schedule(inc(), "ios", r=r, s=s, device="v100")
        out.append((int(sc.notes["transitions"]), run(sc, "v100").makespan))
    return tuple(out)


def _not_always() -> float:
    """The largest makespan growth (µs) from one r/s row to the next larger search space."""
    rows = _ios_rs()
    return max(b[1] - a[1] for a, b in zip(rows, rows[1:], strict=False) if b[0] > a[0])


CLAIMS[NB02] = (
    Claim("So the gain printed below is far from 2x", "the two convolutions: two streams' gain",
          lambda: speedup(model("raf_occupancy_conv"), device="rtx3070_laptop"), "in",
          const((1.0, 1.5))),
    Claim("its modelled batch-1 speedup (about 1.8x) is above both",
          "V100 sweep, batch 1: smallest speedup vs the IOS paper's 1.62x", lambda: _sweep(1),
          ">", const(1.62)),
    Claim("At a large batch every kernel already fills the GPU, so concurrent kernels only slow",
          "V100 sweep: the largest speedup at batch 64 vs the smallest at batch 1",
          lambda: _sweep(64, max), "<", lambda: _sweep(1)),
    Claim("Because there are no barriers, a branch can start as soon as its own inputs are ready.",
          "three branches: ASAP's makespan vs wavefront's",
          lambda: span(model("raf_three_branches"), "asap"), "<=",
          lambda: span(model("raf_three_branches"), "wavefront")),
    Claim("A larger `r` and `s` mean a larger search space, so the search takes longer",
          "r/s table: the smallest growth of the transitions searched from row to row",
          lambda: _increasing([float(t) for t, _ in _ios_rs()]), ">", const(0.0)),
    Claim("A larger space usually gives a shorter makespan",
          "r/s table: makespan at r=3 s=8 vs r=1 s=1", lambda: _ios_rs()[-1][1], "<",
          lambda: _ios_rs()[0][1]),
    Claim("but not always: the oracle times each stage on its own",
          "r/s table: the largest makespan growth towards a larger space (µs)", _not_always,
          ">", const(0.0)),
    Claim("and it adds the fewest syncs for that",
          "Inception: min_streams' syncs vs the fewest of nnc, asap, wavefront with as many "
          "streams", lambda: sched(inc(), "min_streams").n_syncs, "<=",
          lambda: min([sched(inc(), p).n_syncs for p in ("nnc", "asap", "wavefront")
                       if sched(inc(), p).n_streams >= sched(inc(), "min_streams").n_streams]
                      or [float("inf")])),
    Claim("It uses as many streams as the graph's width",
          "Inception: min_streams' streams vs every other policy's",
          lambda: sched(inc(), "min_streams").n_streams, ">=",
          lambda: max(sched(inc(), p).n_streams for p in ("nnc", "asap", "wavefront"))),
)


# --- notebook 03 -------------------------------------------------------------------------------

@cache
def _hetero() -> dict[str, float]:
    """Notebook 03 §3 and §5: split and merge of the heterogeneous graph, eager and sunk."""
    from workbench.orchestration.pipelines import merge_schedule, split_schedule

    h = wb.models.textbook_heterogeneous()
    merged = merge_schedule(h)
    t = run(merged)
    copies = t.df[t.df["op"].isin([op.id for op in merged.graph.ops if op.device == "copy"])]
    kernels = t.df[t.df["op"].str.startswith("Kernel_")]
    return {"split": run(split_schedule(h)).makespan, "merge": t.makespan,
            "merge_graph": run(merged, mode="graph").makespan,
            "shortest_copy": float(copies["duration_us"].min()),
            "longest_kernel": float(kernels["duration_us"].max())}


def _gpu_only(policy: str) -> float:
    edges = [("Kernel_1", "Kernel_3"), ("Kernel_2", "Kernel_4"), ("Kernel_3", "Kernel_5"),
             ("Kernel_4", "Kernel_5")]
    names = [f"Kernel_{i}" for i in range(1, 6)]
    g = wb.Graph.from_edges(edges, ops=names, durations=dict.fromkeys(names, 20.0),
                            thread_blocks=dict.fromkeys(names, 64), name="gpu_only")
    return span(g, policy)


MUL = "textbook_mul_sub_add"
CLAIMS[NB03] = (
    Claim("Each op is a tiny scalar kernel, so host launch cost dominates",
          "mul/sub/add, eager serial: host_bound_fraction",
          lambda: meta(model(MUL), "serial", "host_bound_fraction"), ">", const(0.5)),
    Claim("In eager mode the parallel graph is no faster", "mul/sub/add, eager: nnc vs serial",
          lambda: span(model(MUL), "nnc"), ">=", lambda: span(model(MUL), "serial")),
    Claim("do overlap and the parallel schedule wins", "mul/sub/add, graph mode: nnc vs serial",
          lambda: span(model(MUL), "nnc", "graph"), "<",
          lambda: span(model(MUL), "serial", "graph")),
    Claim("**Parallel** execution lets independent kernels run at the same time",
          "the GPU-only graph: parallel (nnc) vs serial", lambda: _gpu_only("nnc"), "<",
          lambda: _gpu_only("serial")),
    Claim("Merge wins because the two CPU→GPU→CPU branches overlap", "merge vs split makespan",
          lambda: _hetero()["merge"], "<", lambda: _hetero()["split"]),
    Claim("4 MiB over PCIe takes longer than any 20 µs kernel",
          "merge: shortest copy vs longest kernel", lambda: _hetero()["shortest_copy"], ">",
          lambda: _hetero()["longest_kernel"]),
    Claim("It helps when the host is the bottleneck", "tiny transformer: sunk vs eager",
          lambda: span(model("tiny"), "serial", "graph"), "<",
          lambda: span(model("tiny"), "serial")),
    Claim("It even comes out a little slower", "heterogeneous merge: sunk / eager makespan",
          lambda: _hetero()["merge_graph"] / _hetero()["merge"], "in", const((1.0 + 1e-9, 1.1))),
)


# --- notebook 04 -------------------------------------------------------------------------------

@cache
def _level(graph: str, level: str) -> wb.Trace:
    from workbench.orchestration.pipelines import run_level
    from workbench.simulator.cost_model.costs import with_overrides

    if graph == "big":
        return run_level(model("transformer_block"), level, device="h100")
    return run_level(model("tiny"), level,
                     device=with_overrides("h100", launch_overhead_us=12.0))


@cache
def _budget(limit_mib: int | None) -> wb.Schedule:
    """Notebook 04 §6: NNC on RandWire under ``limit_mib``."""
    return wb.schedule(model("randwire"), "nnc",
                       memory_limit_bytes=limit_mib and limit_mib * MIB)


LIMITS = (None, 32, 26, 22)


def _budget_spans(mode: str) -> list[float]:
    return [run(_budget(m), mode=mode).makespan for m in LIMITS]


def _plan(graph: wb.Graph, policy: str, planner: str = "somas") -> wb.MemoryPlan:
    return wb.plan_memory(sched(graph, policy), planner)


SIX = "mindspore_six_kernels"
CLAIMS[NB04] = (
    Claim("so the three levels come out close", "BERT-base block: slowest / fastest level",
          lambda: max(_level("big", lv).makespan for lv in ("O0", "O1", "O2"))
          / min(_level("big", lv).makespan for lv in ("O0", "O1", "O2")), "<", const(1.1)),
    Claim("the device waits for the host more than half the time",
          "tiny transformer, slow host: smaller host_bound_fraction of O0 and O1",
          lambda: min(_level("tiny", lv).meta["host_bound_fraction"] for lv in ("O0", "O1")),
          ">", const(0.5)),
    Claim("There, sinking the graph (O2) ends the host's work", "tiny, slow host: O2 vs O1",
          lambda: _level("tiny", "O2").makespan, "<", lambda: _level("tiny", "O1").makespan),
    Claim("so in steady state it issues one op per slowest stage",
          "tiny transformer: pipelined host vs serial host",
          lambda: run(sched(model("tiny"), "serial"), host_pipeline="pipelined").makespan, "<",
          lambda: run(sched(model("tiny"), "serial"), host_pipeline="serial").makespan),
    Claim("Here it finds the DFS order, so the two curves below lie on top",
          "six kernels: memory_greedy's peak vs dfs's",
          lambda: _plan(model(SIX), "memory_greedy").lower_bound, "==",
          lambda: _plan(model(SIX), "dfs").lower_bound),
    Claim("so it can hold more memory than is ever in use at once",
          "DFS order: the pool's peak reserved vs its peak in use",
          lambda: wb.memory.replay_pool(run(sched(model(SIX), "dfs")),
                                        chunk_bytes=GIB).peak_reserved, ">",
          lambda: wb.memory.replay_pool(run(sched(model(SIX), "dfs")),
                                        chunk_bytes=GIB).peak_in_use),
    Claim("the naive planner, which never reuses memory, needs more than ten times as much",
          "Inception serial: naive arena / lower bound",
          lambda: _plan(inc(), "serial", "naive").ratio, ">", const(10.0)),
    Claim("On Inception V3 the classic greedy planners reach it",
          "Inception serial: the larger ratio of greedy_by_size and greedy_by_breadth",
          lambda: max(_plan(inc(), "serial", p).ratio
                      for p in ("greedy_by_size", "greedy_by_breadth")), "==", const(1.0)),
    Claim("so it sits a hair above the bound the other planners see",
          "Inception serial: SOMAS arena / greedy_by_size's lower bound (unaligned sizes)",
          lambda: _plan(inc(), "serial").arena_bytes
          / _plan(inc(), "serial", "greedy_by_size").lower_bound, "in",
          const((1.0 + 1e-9, 1.001))),
    Claim("(its own lower bound counts the aligned sizes, hence its ratio of 1)",
          "Inception serial: SOMAS's ratio", lambda: _plan(inc(), "serial").ratio, "==",
          const(1.0)),
    Claim("NNC's two streams need 6G where DFS needs 4G", "six kernels: nnc's vs dfs's bound",
          lambda: _plan(model(SIX), "nnc").lower_bound, ">",
          lambda: _plan(model(SIX), "dfs").lower_bound),
    Claim("More conflicts raise the lower bound", "RandWire: nnc's lower bound vs dfs's",
          lambda: _plan(model("randwire"), "nnc").lower_bound, ">",
          lambda: _plan(model("randwire"), "dfs").lower_bound),
    Claim("and the tightest limit would come out fastest",
          "RandWire eager: makespans from no limit to 22 MiB (decreasing)",
          lambda: _increasing(_budget_spans("eager")[::-1]), ">", const(0.0)),
    Claim("so fewer streams only means fewer event calls",
          "RandWire eager: smallest host_bound_fraction of the four limits",
          lambda: min(run(_budget(m)).meta["host_bound_fraction"] for m in LIMITS), ">=",
          const(0.99)),
    Claim("each tighter limit gives fewer streams and costs time",
          "RandWire graph mode: makespans from no limit to 22 MiB (increasing)",
          lambda: _increasing(_budget_spans("graph")), ">", const(0.0)),
    Claim("each tighter limit gives fewer streams", "RandWire: streams from 22 MiB to no limit",
          lambda: _increasing([_budget(m).n_streams for m in LIMITS][::-1]), ">", const(0)),
    Claim("takes about twice as long as the ten streams without a limit",
          "RandWire graph mode: 22 MiB / no limit", lambda: _budget_spans("graph")[-1]
          / _budget_spans("graph")[0], "in", const((1.75, 2.25))),
    Claim("This saves launches and, above all, the round trip of each intermediate tensor",
          "transformer block: memory traffic after fusion vs before",
          lambda: _fusion("bytes"), "<", const(1.0)),
)


def _fusion(what: str) -> float:
    """Notebook 04 §7: the transformer block's ``what`` after dropping and fusion / before."""
    from workbench.passes import drop_no_task_ops, fuse_elementwise

    g = model("transformer_block")
    after = run(sched(fuse_elementwise(drop_no_task_ops(g)), "serial"))
    before = run(sched(g, "serial"))
    return float(after.df[what].sum() / before.df[what].sum())


# --- notebook 05 -------------------------------------------------------------------------------

MULTI = ("nnc", "asap", "wavefront")
CLAIMS[NB05] = (
    Claim("so it finishes issuing just before the device finishes",
          "Inception eager serial: host_end_us / makespan",
          lambda: meta(inc(), "serial", "host_end_us") / span(inc(), "serial"), ">", const(0.99)),
    Claim("The multi-stream policies gain nothing there",
          "Inception eager: the best multi-stream speedup",
          lambda: max(speedup(inc(), p) for p in MULTI), "<=", const(1.0)),
    Claim("the device becomes the bottleneck and the multi-stream policies run",
          "Inception graph mode: the smallest multi-stream speedup",
          lambda: min(speedup(inc(), p, "graph") for p in MULTI), ">", const(1.5)),
    Claim("since their convolutions are more of their critical path",
          "calibrated graph mode: nnc's growth vs serial's", lambda: _growth("nnc"), ">",
          lambda: _growth("serial")),
    Claim("so their speedup over serial goes from",
          "graph mode: the largest calibrated multi-stream speedup vs the smallest uncalibrated",
          lambda: max(_speedup_cal(p) for p in MULTI), "<",
          lambda: min(speedup(inc(), p, "graph") for p in MULTI)),
)


def _speedup_cal(policy: str) -> float:
    """Notebook 05 §2 (the calibrated runs of ``tests/test_quoted_notebooks.py``)."""
    return float(_makespan("serial", True) / _makespan(policy, True))


# --- notebook 06 -------------------------------------------------------------------------------

# the app's prose describes widgets and states no direction or comparison of results
CLAIMS[NB06] = ()
