"""IOS: the inter-operator scheduler's dynamic program over stages (seed 001 "IOS Schedule";
Ding et al., MLSys 2021; notes ios.md §2–4 and raf_nimble.md §4).

1. **Units.**  With ``units=True`` conv/matmul → batchnorm → activation chains (each link the
   only consumer of the one before) run as one schedule unit, as RAF's IOS pass does; IOS's own
   benchmark graphs fold these into one op, so unit counts match the paper's op counts.  Bias
   ops, and ``mul``/``add`` whose other inputs are weights (a batchnorm exported as scale and
   shift), continue the chain like batchnorm; an activation ends it.  Ops that only compute
   weights (their outputs are parameters, or they read nothing but parameters, e.g. ONNX
   ``ConstantOfShape`` → ``Unsqueeze``) and feed one op join that op's unit: IOS's graphs hold
   weights, not ops that make them (such units do not merge).
2. **Blocks and parts.**  The graph is cut after every unit that every source-to-sink path passes
   through (the dominator chain of the sink).  A block larger than ``max_part_size`` units is cut
   into consecutive parts of its topological order, as IOS's optimizer does (its
   ``max_part_size``, default 100, 50 in its experiments; here 40), of near-equal size.
3. **DP over endings** per part (:mod:`workbench.schedulers.ios_search`): a state is the bitmask
   of units still to schedule, an ending a possible last stage; at most ``s`` groups of at most
   ``r`` units per stage (defaults r=3, s=8).  Endings are generated lazily, every ending of the
   paper's space is reached (its issue #10 fixed).  A part whose search exceeds ``part_work``
   (default :data:`DEFAULT_PART_WORK`) is split in halves, each searched on its own (the exact
   DP on smaller parts, near the one part per cell IOS cuts NASNet into).  Stage latencies
   bound from below prune most evaluations without changing the result (with the simulator
   oracle).
4. **Budgets.**  The search is bounded by work, not time, so one command gives one schedule on
   any machine however busy: ``part_work`` bounds each attempt at a part and ``max_states``
   (default :data:`DEFAULT_MAX_STATES` DP states) the whole search; a part may use up to
   ``SHARE_BOOST`` (4) times its share of the states left (its units over the units left; what
   it leaves unused goes to the later ones), so one hard part cannot starve the rest.  The
   defaults are sized so that every built-in model finishes within a third of compare's
   safety net on a loaded 2-core machine (figures at :data:`DEFAULT_MAX_STATES`).
   ``time_budget_s`` (default :data:`DEFAULT_TIME_BUDGET_S`) is only a safety limit on wall
   time (with ``max_states=None`` it alone shares out the search, by time, as before).  When
   a budget runs out, the part at hand keeps its best solved prefix and is finished greedily,
   and ``notes["budget_hit"]`` says which budget and where (a ``time_budget_s`` hit makes the
   result depend on the machine's speed; :mod:`workbench.orchestration.compare` says so in the
   row: ``budget hit (54 s): best so far``).  So ``wb.schedule(g, "ios")`` finishes in
   bounded time on any graph.
5. **Stage latency** comes from a *cost oracle*: by default the workbench simulator runs the stage
   alone on the chosen device (:class:`~workbench.schedulers.ios_oracle.StageOracle`, which
   simulates structurally identical stages once); a user function ``cost_oracle(groups:
   list[list[op_id]]) -> µs`` can replace it, and ``oracle="torch"`` times every stage on the
   device with PyTorch's kernels (:mod:`workbench.schedulers.ios_torch_oracle`).
6. **Parallel parts.**  ``engine="processes"`` (or ``workers=n``) or ``engine="dask"``
   (``client=``) search the parts at once (:mod:`workbench.schedulers.ios_parts` over
   :mod:`workbench._engines`, as ``sweep`` does); the schedule is identical to the serial one
   unless the time budget runs out.
7. **Emission.**  Stages in order; group ``j`` on stream ``j``; consecutive single-group stages
   are fused (no barrier between them, as IOS's runtime and RAF do); between other stages a
   barrier that joins every stream: ``sync="device_sync"`` (default) is IOS's runtime, a
   ``cudaDeviceSynchronize`` (the host waits for an idle device, and the oracle charges a
   multi-group stage that synchronisation, as IOS's profiler measures it); ``sync="barrier"`` an
   event join that lets the host issue on (RAF's NULL-stream barrier); ``sync="events"`` keeps
   the stream assignment and order but replaces barriers by the transitively reduced
   cross-stream syncs (a variant, not the paper's).  With the default
   oracle, a result slower on the simulator than the sequential schedule is replaced by the
   sequential one (``notes["fallback"]``).  In eager mode a bound on the host's issue time
   (:mod:`workbench.schedulers.ios_bounds`) proves, when launch bound, that any schedule with a
   barrier is slower than the sequential one: once a budget has cut the search (``early_stop``)
   it stops after the first part that returns a stage of several groups (the same schedule;
   ``notes["parts_searched"]``), and the same bound prunes stage evaluations inside each part.

``merge=True`` adds the paper's operator-merge strategy: an ending made of convolutions that read
the same input can instead run as one wider convolution (:mod:`workbench.schedulers.ios_merge`);
the DP keeps whichever of the two is faster (ties keep the graph unmerged).  Complexity:
exponential in part width (states ≤ (n/d+1)^d for width d), bounded by ``part_work`` per part
and by the budgets overall; memory O(``part_work``) per part.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from workbench.errors import OptionError
from workbench.ops import EPILOGUE_KINDS, GEMM_KINDS, OPS, UNIT_TAIL_KINDS
from workbench.ops.control import DEVICE_SYNC, JOIN
from workbench.schedulers.ios_oracle import StageOracle
from workbench.schedulers.ios_parts import (
    SearchContext,
    describe_hit,
    search_counts,
    search_parts,
)
from workbench.values.graph import Graph, OpId
from workbench.values.schedule import Schedule, build_schedule, check_max_streams

#: Unit heads, the tails a unit goes on after, and every tail (``gemm`` / ``epilogue`` /
#: activations in :data:`workbench.ops.OPS`).
UNIT_HEADS = GEMM_KINDS
AFFINE_TAILS = EPILOGUE_KINDS
UNIT_TAILS = UNIT_TAIL_KINDS
Oracle = Callable[[list[list[OpId]]], float]

DEFAULT_MAX_STATES = 4_000
"""DP states one search may visit unless ``max_states`` says otherwise: the work budget that makes
IOS deterministic.  With :data:`DEFAULT_PART_WORK`, per built-in model (graph mode; eager takes
at most as long), about 0.6 CPU s for Inception V3 (1,206 states, the paper's count); RandWire
completes in 3,913 states (9 parts halved, about 1.3 CPU s); NASNet-A large stops here (4,006
states, about 1.5 CPU s; 2026-12, 2-core host).  With both cores of the machine loaded by two
busy loops that was 2.4 s of wall time, far under the 54 s compare's default budget gives a
search, so the table does not depend on the machine's load (10,000 states with parts halved
only past 500,000 work took RandWire 24 s and NASNet 36 s on an idle machine, and hit 54 s
loaded, before the stage oracle's signature cache and the simulator's later speedups)."""
DEFAULT_TIME_BUDGET_S = 300.0
"""Wall-clock safety limit of one search unless ``time_budget_s`` says otherwise: never reached
by the built-in models under :data:`DEFAULT_MAX_STATES` (``benchmarks/ios_scaling.py``)."""
DEFAULT_PART_WORK = 20_000
"""Work (transitions, plus 16 per new stage) one attempt at a part may take before the part is
split in halves, each half searched exactly: under a CPU second of search.  Inception V3 never
comes close (about 3,000 per block); RandWire's and NASNet's 25-40-unit parts are halved to
10-20 units, near the one-cell parts (about 15 ops) IOS itself cuts NASNet into."""
MAX_PART_SIZE = 64


def schedule_ios(graph: Graph, *, r: int = 3, s: int = 8, max_part_size: int = 40,
                 max_block_units: int | None = None, units: bool = True, device: str = "h100",
                 mode: str = "eager", sync: str = "device_sync",
                 cost_oracle: Oracle | None = None, oracle: str = "simulator",
                 oracle_options: dict[str, Any] | None = None,
                 merge: bool = False, max_streams: int | None = None,
                 time_budget_s: float | None = DEFAULT_TIME_BUDGET_S,
                 max_states: int | None = DEFAULT_MAX_STATES,
                 part_work: int | None = DEFAULT_PART_WORK,
                 engine: str | None = None, workers: int | None = None, client: Any = None,
                 show_progress: bool = True, early_stop: bool | None = None) -> Schedule:
    """Search the IOS schedule of ``graph`` (see the module docstring for the algorithm).

    ``r``: most units per group; ``s``: most groups per stage (``max_streams`` also caps ``s``);
    ``max_part_size``: most units per DP part (at most 64; ``max_block_units`` is its old name);
    ``device``/``mode``: what the default simulator oracle models; ``cost_oracle``: a function
    ``groups -> µs`` replacing it; ``oracle``: ``"simulator"`` (default) or ``"torch"``, stages
    timed on the device with PyTorch's kernels (:mod:`workbench.schedulers.ios_torch_oracle`;
    ``oracle_options``: its mode, precision, warmup, repeats, max_timed); ``merge``: also try
    the operator-merge strategy for endings made of convolutions on one input
    (:mod:`workbench.schedulers.ios_merge`); when a merge wins, the schedule is of the merged
    graph (``schedule.graph``), as IOS returns a new graph.
    ``max_states``: the work budget of the whole search (DP states; ``None``: unbounded, the
    time budget then shares the search out); ``time_budget_s``: a wall-clock safety limit;
    ``part_work``: work one attempt at a part may take before the part is halved (``None``: no
    limit).  ``engine`` (``"local"``, ``"processes"``, ``"dask"``), ``workers``, ``client``: where
    parts are searched (default: this process; ``workers > 1`` alone means processes).
    ``show_progress``: a progress bar over units with per-part notes (terminals and notebooks).
    ``early_stop``: when the eager bound proves any schedule with a barrier slower than the
    sequential one (:mod:`workbench.schedulers.ios_bounds`), stop the search at the first part
    with a stage of several groups: ``None`` (default) once a budget has cut the search (a
    complete search keeps its notes: states, estimated cost), ``True`` always, ``False`` never;
    the schedule is the same in every case.

    In graph mode the diamond's two branches form one stage; in eager mode the
    ``cudaDeviceSynchronize`` that ends a stage of several groups costs more than running them
    side by side saves, so IOS keeps them in one group:

    >>> import workbench as wb
    >>> s = wb.schedule(wb.models.nnc_diamond(), "ios", mode="graph", show_progress=False)
    >>> s.notes["n_stages"], s.notes["budget_hit"]
    (3, None)
    >>> wb.schedule(wb.models.nnc_diamond(), "ios", show_progress=False).notes["n_stages"]
    2
    """
    if max_block_units is not None:
        if max_part_size not in (40, max_block_units):
            raise OptionError("ios options max_part_size and max_block_units (its old name) "
                              f"disagree: {max_part_size} vs {max_block_units}")
        max_part_size = max_block_units
    for name, value in (("r", r), ("s", s), ("max_part_size", max_part_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise OptionError(f"ios option {name} must be a positive integer, got {value!r}")
    if max_part_size > MAX_PART_SIZE:
        raise OptionError(f"ios option max_part_size must be at most {MAX_PART_SIZE}, "
                          f"got {max_part_size}")
    if sync not in SYNCS:
        raise OptionError(f"ios option sync must be one of {', '.join(SYNCS)}, got {sync!r}")
    _check_budget("time_budget_s", time_budget_s, number=True)
    _check_budget("max_states", max_states)
    _check_budget("part_work", part_work)
    if early_stop is not None and not isinstance(early_stop, bool):
        raise OptionError(f"ios option early_stop must be True, False or None, got {early_stop!r}")
    from workbench._engines import check_engine

    engine = engine or ("processes" if workers not in (None, 1) else "local")
    check_engine(engine, workers, client)
    if engine == "processes" and cost_oracle is not None:
        import pickle

        try:
            pickle.dumps(cost_oracle)
        except Exception:
            raise OptionError("ios with engine='processes' needs a cost_oracle that pickles (a "
                              "module-level function), not a lambda or closure") from None
    max_streams = check_max_streams(max_streams)
    if max_streams is not None:
        s = min(s, max_streams)

    options = {"r": r, "s": s, "max_part_size": max_part_size, "units": units,
               "device": device, "mode": mode, "sync": sync, "merge": merge,
               "oracle": oracle,
               "max_streams": max_streams, "time_budget_s": time_budget_s,
               "max_states": max_states, "part_work": part_work, "early_stop": early_stop}
    t0 = time.perf_counter()
    cost_oracle = _named_oracle(graph, oracle, oracle_options, cost_oracle, engine)
    unit_ops = ios_units(graph) if units else [[op] for op in graph.topo_order()]
    parts = partition_blocks(graph, unit_ops, max_part_size)
    ctx = SearchContext(uuid.uuid4().hex, graph, unit_ops, parts, r, s, device, mode, merge,
                        part_work, cost_oracle, sync)
    deadline = None if time_budget_s is None else time.time() + time_budget_s
    proof, sequential_us = None, None
    if cost_oracle is None:   # the simulator oracle: bounds from the eager host (ios_bounds)
        from workbench.schedulers import ios_bounds as bounds

        trace = bounds.serial_trace(graph, device, mode)
        if trace is not None:
            sequential_us = float(trace.makespan)   # the fallback's yardstick, simulated once
            ctx = replace(ctx, host_us=bounds.unit_host_us(trace, device, unit_ops),
                          sync_us=StageOracle(graph, device=device, mode=mode,
                                              sync=sync).sync_us)
            if not merge and engine == "local" and len(parts) > 1:
                proof = bounds.serial_proof(trace, device, sync)
    stop = None if proof is None or early_stop is False else \
        bounds.EarlyStop(len(unit_ops), always=bool(early_stop))
    results = search_parts(ctx, engine, workers, client, deadline, time_budget_s, max_states,
                           show_progress, stop)
    if stop is not None and stop.fired:
        assert proof is not None
        return bounds.proved_sequential(graph, proof, results, parts, unit_ops, t0, options,
                                        engine, time_budget_s, max_states)

    stages: list[list[list[OpId]]] = []
    chosen_merges: list[list[int]] = []
    for res in results:
        for groups, merged in zip(res.stages, res.merged):
            if merged:
                chosen_merges.append(groups[0])
            stages.append([[op for u in g for op in unit_ops[u]] for g in groups])
    target = graph
    if chosen_merges:
        from workbench.schedulers.ios_merge import merged_graph

        target, merged_ids = merged_graph(graph, unit_ops, chosen_merges)
        first_op = {unit_ops[g[0]][0]: merged_ids[g[0]] for g in chosen_merges}
        member_ops = {op for g in chosen_merges for u in g for op in unit_ops[u]}
        stages = [[[new for op in grp if op in first_op for new in first_op[op]]
                   or [op for op in grp if op not in member_ops]
                   for grp in stage if any(op not in member_ops or op in first_op
                                           for op in grp)]
                  for stage in stages]
    order, stream_of, barriers = emit_stages(stages)
    hit = next((res for res in results if res.budget_hit), None)
    notes = {
        "stages": stages,
        "n_stages": len(stages),
        **search_counts(results, parts, unit_ops, t0),
        "estimated_us": sum(res.cost_us for res in results),
        "merges": [[op for u in g for op in unit_ops[u][:1]] for g in chosen_merges],
        "engine": engine,
        "budget_hit": None if hit is None else describe_hit(hit, results, parts, time_budget_s,
                                                            max_states),
        "fallback": None,
    }
    if oracle != "simulator":
        notes.update(oracle=oracle, stages_timed=getattr(cost_oracle, "timed", None),
                     stages_reused=getattr(cost_oracle, "reused", None),
                     timing_s=getattr(cost_oracle, "timing_s", None))
    if sync == "events":
        sched = build_schedule(target, "ios", stream_of, order, max_streams=max_streams,
                               options=options, notes=notes)
    else:
        sched = build_schedule(target, "ios", stream_of, order, barriers=barriers, syncs=(),
                               max_streams=max_streams, options=options, notes=notes,
                               barrier_kind=DEVICE_SYNC if sync == "device_sync" else JOIN)
    if cost_oracle is None:
        sched = _no_slower_than_sequential(graph, sched, device, mode, sequential_us)
    elif oracle != "simulator" and hasattr(cost_oracle, "keep_fastest") and not merge:
        sched = cost_oracle.keep_fastest(sched)   # measured: no slower than its rivals
    return sched


#: Named stage oracles: ``None`` is the built-in simulator oracle; others ``"module:factory"``,
#: imported on first use (the torch oracle imports PyTorch only when asked for).
ORACLES = {"simulator": None, "torch": "workbench.schedulers.ios_torch_oracle:make_torch_oracle"}


def _named_oracle(graph: Graph, oracle: str, options: dict[str, Any] | None,
                  cost_oracle: Oracle | None, engine: str) -> Oracle | None:
    """The cost oracle ``oracle`` names (``cost_oracle`` itself for the simulator)."""
    import importlib

    if oracle not in ORACLES:
        raise OptionError(f"ios option oracle must be one of {', '.join(ORACLES)}, "
                          f"got {oracle!r}")
    target = ORACLES[oracle]
    if target is None:
        if options:
            raise OptionError("ios oracle_options apply to a measured oracle (oracle='torch')")
        return cost_oracle
    if cost_oracle is not None:
        raise OptionError(f"ios takes oracle={oracle!r} or a cost_oracle, not both")
    if engine != "local":
        raise OptionError(f"ios oracle={oracle!r} measures on this process's device: use "
                          f"engine='local' (got {engine!r})")
    module, _, factory = target.partition(":")
    made: Oracle = getattr(importlib.import_module(module), factory)(graph, dict(options or {}))
    return made


def simulator_oracle(graph: Graph, *, device: str = "h100", mode: str = "eager") -> Oracle:
    """Stage latency from the simulator (a :class:`StageOracle`): the stage's ops alone, group
    ``j`` on stream ``j``, issued group by group (IOS's runtime order)."""
    return StageOracle(graph, device=device, mode=mode)


SYNCS = ("device_sync", "barrier", "events")


# ------------------------------------------------------------------------------------ units
def ios_units(graph: Graph) -> list[list[OpId]]:
    """Group conv/matmul → batchnorm/affine → activation chains into units (RAF IOS
    ``ios_units``) and attach single-consumer weight-making ops to their consumer's unit; every
    other op is its own unit.  Each unit's ops and the units themselves are in topological
    order.  O(V + E)."""
    ops = graph.ops
    succ, pred = graph.succ_index, graph.pred_index
    host = _weight_hosts(graph)
    real_preds = [sum(1 for p in pred[i] if p not in host) for i in range(len(ops))]
    weights = {t for h in host for t in ops[h].outputs} | {
        t.id for t in graph.tensors.values() if t.role == "parameter" and t.producer is None}

    def links(cur: int) -> bool:     # may the one consumer of ``cur`` join its unit?
        nxt = succ[cur][0] if len(succ[cur]) == 1 else None
        if nxt is None or real_preds[nxt] != 1 or ops[nxt].kind not in UNIT_TAILS:
            return False
        if OPS[ops[nxt].kind].binary is not None:  # a binary epilogue (mul, add) joins only
            # with weights: not a residual add
            return all(t in weights or t in ops[cur].outputs for t in ops[nxt].inputs)
        return True

    unit_of: dict[int, int] = {}
    members: list[list[int]] = []
    for i in graph.topo_index:
        if i in unit_of or i in host:
            continue
        u = len(members)
        unit = [i]
        unit_of[i] = u
        if ops[i].kind in UNIT_HEADS:
            cur = i
            while links(cur):
                cur = succ[cur][0]
                unit.append(cur)
                unit_of[cur] = u
                if ops[cur].kind not in AFFINE_TAILS:
                    break
        members.append(unit)
    for i, h in host.items():
        members[unit_of[h]].append(i)
    position = {op: k for k, op in enumerate(graph.topo_index)}
    for unit in members:
        unit.sort(key=position.__getitem__)
    if not host:
        return [[ops[k].id for k in unit] for unit in members]
    from workbench.values.graph import priority_topological_order

    for i, h in host.items():
        unit_of[i] = unit_of[h]
    preds: dict[int, set[int]] = {u: set() for u in range(len(members))}
    for i in range(len(ops)):
        for j in succ[i]:
            if unit_of[i] != unit_of[j]:
                preds[unit_of[j]].add(unit_of[i])
    order = priority_topological_order(preds, {u: u for u in preds})
    return [[ops[k].id for k in members[u]] for u in order]


def _weight_hosts(graph: Graph) -> dict[int, int]:
    """Weight-making ops (outputs all parameters, or inputs all parameters or weight-made, and
    only weight-making predecessors) with one consumer → the op whose unit they join."""
    ops, tensors = graph.ops, graph.tensors
    succ, pred = graph.succ_index, graph.pred_index
    index = {op.id: i for i, op in enumerate(ops)}
    weight = [False] * len(ops)
    for i in graph.topo_index:
        op = ops[i]
        outs = [tensors.get(t) for t in op.outputs]
        ins = [tensors.get(t) for t in op.inputs]
        makes_params = bool(outs) and all(t is not None and t.role == "parameter" for t in outs)
        reads_params = bool(ins) and all(
            t is not None and (weight[index[t.producer]] if t.producer in index
                               else t.role == "parameter") for t in ins)
        weight[i] = (makes_params or reads_params) and all(weight[p] for p in pred[i])
    host: dict[int, int] = {}
    for i in reversed(graph.topo_index):
        if weight[i] and len(succ[i]) == 1:
            j = succ[i][0]
            host[i] = host.get(j, j)
    return host


def partition_blocks(graph: Graph, unit_ops: list[list[OpId]], max_units: int) -> list[list[int]]:
    """Cut the unit sequence after every unit all source-to-sink paths pass through (dominators of
    a virtual sink, from a virtual source), then cut blocks longer than ``max_units`` into
    consecutive parts of near-equal size (IOS's ``max_part_size``).  Returns unit indices, parts
    in topological order."""
    import networkx as nx

    unit_of = {op: u for u, ops in enumerate(unit_ops) for op in ops}
    g = nx.DiGraph()
    g.add_nodes_from(range(len(unit_ops)))
    for a, b in graph.edges:
        if unit_of[a] != unit_of[b]:
            g.add_edge(unit_of[a], unit_of[b])
    source, sink = -1, -2
    for u in range(len(unit_ops)):
        if g.in_degree(u) == 0:
            g.add_edge(source, u)
        if g.out_degree(u) == 0:
            g.add_edge(u, sink)
    idom = nx.immediate_dominators(g.reverse(copy=False), sink)
    cuts = set()
    node = idom.get(source)
    while node is not None and node != sink:
        cuts.add(node)
        node = idom.get(node) if idom.get(node) != node else None
    blocks: list[list[int]] = [[]]
    for u in range(len(unit_ops)):
        blocks[-1].append(u)
        if u in cuts:
            blocks.append([])
    parts: list[list[int]] = []
    for block in blocks:
        k = math.ceil(len(block) / max_units)
        for j in range(k):
            parts.append(block[j * len(block) // k:(j + 1) * len(block) // k])
    return [p for p in parts if p]


def _check_budget(name: str, value: Any, *, number: bool = False) -> None:
    if value is None:
        return
    ok = isinstance(value, (int, float) if number else int) and not isinstance(value, bool)
    if not ok or not value > 0:
        raise OptionError(f"ios option {name} must be a positive "
                          f"{'number' if number else 'integer'} or None, got {value!r}")


def _no_slower_than_sequential(graph: Graph, sched: Schedule, device: str, mode: str,
                               sequential_us: float | None = None) -> Schedule:
    """The better of the IOS schedule and the sequential one on the simulator (the search can
    lose to it when a budget ran out or when barriers cost more than the model of a stage).
    ``sequential_us``: the sequential makespan when already simulated (the eager bounds'
    :func:`~workbench.schedulers.ios_bounds.serial_trace`), else it is simulated here."""
    from workbench.schedulers.serial import schedule_serial
    from workbench.simulator.simulate import simulate_makespan

    ios_us = simulate_makespan(sched, device, mode=mode)
    seq = schedule_serial(graph)
    seq_us = (simulate_makespan(seq, device, mode=mode) if sequential_us is None
              else sequential_us)
    notes: dict[str, Any] = {**sched.notes, "simulated_us": ios_us, "sequential_us": seq_us}
    if ios_us <= seq_us:
        return replace(sched, notes=notes)
    notes["fallback"] = (f"sequential: the IOS schedule simulates to {ios_us:.1f} µs, the "
                         f"sequential one to {seq_us:.1f} µs")
    notes["stages"] = [[[op]] for op in seq.issue_order]
    notes["n_stages"] = len(seq.issue_order)
    return replace(seq, policy="ios", options=sched.options, notes=notes)


def emit_stages(stages: list[list[list[OpId]]]
                ) -> tuple[list[OpId], dict[OpId, int], list[int]]:
    """Issue order, streams and barrier positions of IOS stages: group ``j`` on stream ``j``; a
    barrier between stages unless both are single-group (those share stream 0, as IOS's runtime
    skips the synchronisation there)."""
    order: list[OpId] = []
    stream_of: dict[OpId, int] = {}
    barriers: list[int] = []
    previous_single = False
    for stage in stages:
        single = len(stage) == 1
        if order and not (single and previous_single):
            barriers.append(len(order))
        for j, group in enumerate(stage):
            for op in group:
                order.append(op)
                stream_of[op] = j
        previous_single = single
    return order, stream_of, barriers
