"""IOS: the inter-operator scheduler's dynamic program over stages (seed 001 "IOS Schedule";
Ding et al., MLSys 2021; notes ios.md §2–4 and raf_nimble.md §4).

1. **Units.**  With ``units=True`` conv/matmul → batchnorm → activation chains (each link the
   only consumer of the one before) run as one schedule unit, as RAF's IOS pass does; IOS's own
   benchmark graphs fold these into one op, so unit counts match the paper's op counts.
2. **Blocks.**  The graph is cut after every node that every source-to-sink path passes through
   (the dominator chain of the sink); blocks larger than ``max_block_units`` are chopped into
   consecutive pieces of the topological order.
3. **DP over endings.**  For a block, a state is the set ``S`` of still-unscheduled units (a
   bitmask).  An *ending* ``E`` of ``S`` is a non-empty subset with no edge from ``E`` back into
   ``S - E``: it can be the last stage.  A stage runs the weakly connected components of ``E`` as
   groups, each group's units in order on its own stream; a stage may have at most ``s`` groups of
   at most ``r`` units (the paper's pruning; defaults r=3, s=8).  ``cost(S) = min_E cost(S - E) +
   latency(E)``, memoised; every ending is enumerated (the paper's released code misses some,
   its issue #10), so the search space contains the paper's.
4. **Stage latency** comes from a *cost oracle*: by default the workbench simulator runs the stage
   alone on the chosen device (so IOS runs on any machine); a user function
   ``cost_oracle(groups: list[list[op_id]]) -> µs`` can replace it (e.g. measured on a GPU).
   Latencies are cached per stage; the search reports states, transitions, stages evaluated and
   cache hits in ``Schedule.notes``.
5. **Emission.**  Stages in order; group ``j`` on stream ``j``; consecutive single-group stages are
   fused (no barrier between them, as RAF does); between other stages a barrier that joins every
   stream.  ``sync="events"`` instead keeps the stream assignment and order but replaces barriers by
   the transitively reduced cross-stream syncs (a variant, not the paper's).

``merge=True`` adds the paper's operator-merge strategy: an ending made of convolutions that read
the same input can instead run as one wider convolution (:mod:`workbench.schedulers.ios_merge`);
the DP keeps whichever of the two is faster.  Complexity: exponential in block width
(states ≤ (n/d+1)^d for width d, endings per state bounded by r·s), linear in the number of blocks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from workbench.costs import get_device
from workbench.errors import OptionError
from workbench.graph import Graph, OpId
from workbench.schedule import Schedule, build_schedule, check_max_streams

UNIT_HEADS = frozenset({"conv2d", "matmul", "sepconv"})
UNIT_TAILS = frozenset({"batchnorm", "relu", "gelu", "sigmoid", "tanh", "bias"})
Oracle = Callable[[list[list[OpId]]], float]


def schedule_ios(graph: Graph, *, r: int = 3, s: int = 8, max_block_units: int = 40,
                 units: bool = True, device: str = "h100", mode: str = "eager",
                 sync: str = "barrier", cost_oracle: Oracle | None = None,
                 merge: bool = False, max_streams: int | None = None,
                 show_progress: bool = False) -> Schedule:
    """Search the IOS schedule of ``graph`` (see the module docstring for the algorithm).

    ``r``: most units per group; ``s``: most groups per stage (``max_streams`` also caps ``s``);
    ``device``/``mode``: what the default simulator oracle models; ``cost_oracle``: a function
    ``groups -> µs`` replacing it; ``merge``: also try the operator-merge strategy for endings made
    of convolutions on one input (:mod:`workbench.schedulers.ios_merge`); when a merge wins, the
    schedule is of the merged graph (``schedule.graph``), as IOS returns a new graph.
    """
    from workbench._progress import progress

    for name, value in (("r", r), ("s", s), ("max_block_units", max_block_units)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise OptionError(f"ios option {name} must be a positive integer, got {value!r}")
    if max_block_units > 64:
        raise OptionError(f"ios option max_block_units must be at most 64, got {max_block_units}")
    if sync not in ("barrier", "events"):
        raise OptionError(f"ios option sync must be 'barrier' or 'events', got {sync!r}")
    max_streams = check_max_streams(max_streams)
    if max_streams is not None:
        s = min(s, max_streams)
    oracle = cost_oracle or simulator_oracle(graph, device=device, mode=mode)
    t0 = time.perf_counter()
    unit_ops = ios_units(graph) if units else [[op] for op in graph.topo_order()]
    blocks = partition_blocks(graph, unit_ops, max_block_units)
    search = _Search(graph, unit_ops, r, s, oracle)
    if merge:
        search.enable_merge(device, mode)
    stages: list[list[list[OpId]]] = []
    for block in progress(blocks, desc="IOS search", enabled=show_progress, total=len(blocks)):
        stages += search.block(block)
    target = graph
    if search.chosen_merges:
        from workbench.schedulers.ios_merge import merged_graph

        target, merged_ids = merged_graph(graph, unit_ops, search.chosen_merges)
        first_op = {unit_ops[g[0]][0]: merged_ids[g[0]] for g in search.chosen_merges}
        member_ops = {op for g in search.chosen_merges for u in g for op in unit_ops[u]}
        stages = [[[new for op in grp if op in first_op for new in first_op[op]]
                   or [op for op in grp if op not in member_ops]
                   for grp in stage if any(op not in member_ops or op in first_op
                                           for op in grp)]
                  for stage in stages]
    order, stream_of, barriers = _emit(stages)
    notes = {
        "stages": stages,
        "n_stages": len(stages),
        "blocks": [[op for u in b for op in unit_ops[u]] for b in blocks],
        "units": len(unit_ops),
        "search_s": time.perf_counter() - t0,
        "states": search.states,
        "transitions": search.transitions,
        "stages_evaluated": search.evaluated,
        "cache_hits": search.hits,
        "estimated_us": search.total,
        "merges": [[op for u in g for op in unit_ops[u][:1]] for g in search.chosen_merges],
    }
    options = {"r": r, "s": s, "max_block_units": max_block_units, "units": units,
               "device": device, "mode": mode, "sync": sync, "merge": merge,
               "max_streams": max_streams}
    if sync == "events":
        return build_schedule(target, "ios", stream_of, order, max_streams=max_streams,
                              options=options, notes=notes)
    return build_schedule(target, "ios", stream_of, order, barriers=barriers, syncs=(),
                          max_streams=max_streams, options=options, notes=notes)


def simulator_oracle(graph: Graph, *, device: str = "h100", mode: str = "eager") -> Oracle:
    """Stage latency from the simulator: the stage's ops alone, group ``j`` on stream ``j``,
    issued group by group (IOS's runtime order).  Groups of a stage are independent, so the stage
    needs no syncs; it is simulated as a partial schedule of the whole graph."""
    from workbench.simulate import simulate_makespan

    spec = get_device(device)

    def latency(groups: list[list[OpId]]) -> float:
        streams = {j: tuple(g) for j, g in enumerate(groups)}
        order = tuple(op for g in groups for op in g)
        return simulate_makespan(Schedule(graph, "stage", streams, (), order), spec, mode=mode)

    return latency


def ios_units(graph: Graph) -> list[list[OpId]]:
    """Group conv/matmul → batchnorm → activation chains into units (RAF IOS ``ios_units``);
    every other op is its own unit.  Units in topological order.  O(V)."""
    ops = graph.ops
    succ, pred = graph.succ_index, graph.pred_index
    taken: set[int] = set()
    units: list[list[OpId]] = []
    for i in graph.topo_index:
        if i in taken:
            continue
        unit = [i]
        taken.add(i)
        if ops[i].kind in UNIT_HEADS:
            cur = i
            while (len(succ[cur]) == 1 and len(pred[succ[cur][0]]) == 1
                   and ops[succ[cur][0]].kind in UNIT_TAILS):
                cur = succ[cur][0]
                unit.append(cur)
                taken.add(cur)
                if ops[cur].kind != "batchnorm":
                    break
        units.append([ops[k].id for k in unit])
    return units


def partition_blocks(graph: Graph, unit_ops: list[list[OpId]], max_units: int) -> list[list[int]]:
    """Cut the unit sequence after every unit all source-to-sink paths pass through (dominators of
    a virtual sink, from a virtual source), then chop long blocks.  Returns unit indices."""
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
        if u in cuts or len(blocks[-1]) >= max_units:
            blocks.append([])
    return [b for b in blocks if b]


class _Search:
    """The memoised DP over endings for one block at a time."""

    def __init__(self, graph: Graph, unit_ops: list[list[OpId]], r: int, s: int,
                 oracle: Oracle) -> None:
        self.graph, self.unit_ops, self.r, self.s, self.oracle = graph, unit_ops, r, s, oracle
        unit_of = {op: u for u, ops in enumerate(unit_ops) for op in ops}
        self.succ: list[set[int]] = [set() for _ in unit_ops]
        for a, b in graph.edges:
            if unit_of[a] != unit_of[b]:
                self.succ[unit_of[a]].add(unit_of[b])
        self.cache: dict[tuple[tuple[int, ...], ...], float] = {}
        self.states = self.transitions = self.evaluated = self.hits = 0
        self.total = 0.0
        self.merge_keys: list[Any] | None = None
        self.merge_cache: dict[tuple[int, ...], float] = {}
        self.chosen_merges: list[list[int]] = []

    def enable_merge(self, device: str, mode: str) -> None:
        from workbench.schedulers.ios_merge import merge_key

        self.merge_keys = [merge_key(self.graph, ops) for ops in self.unit_ops]
        self.device, self.mode = device, mode

    def _merge_latency(self, groups: Sequence[list[int]]) -> float | None:
        """Latency of the merged stage, or None when these groups cannot merge."""
        if self.merge_keys is None or len(groups) < 2 or any(len(g) != 1 for g in groups):
            return None
        units = tuple(g[0] for g in groups)
        key = self.merge_keys[units[0]]
        if key is None or any(self.merge_keys[u] != key for u in units):
            return None
        hit = self.merge_cache.get(units)
        if hit is None:
            from workbench.schedulers.ios_merge import merged_graph

            merged, ids = merged_graph(self.graph, self.unit_ops, [list(units)])
            hit = simulator_oracle(merged, device=self.device, mode=self.mode)([ids[units[0]]])
            self.merge_cache[units] = hit
            self.evaluated += 1
        return hit

    def block(self, block: list[int]) -> list[list[list[OpId]]]:
        n = len(block)
        local = {u: k for k, u in enumerate(block)}
        succ_mask = [0] * n
        pred_mask = [0] * n
        for k, u in enumerate(block):
            for v in self.succ[u]:
                if v in local:
                    succ_mask[k] |= 1 << local[v]
                    pred_mask[local[v]] |= 1 << k
        memo: dict[int, tuple[float, int, bool]] = {0: (0.0, 0, False)}

        def solve(state: int) -> float:
            hit = memo.get(state)
            if hit is not None:
                return hit[0]
            self.states += 1
            best = (float("inf"), 0, False)
            for ending, groups in self._endings(state, n, succ_mask, pred_mask, block):
                self.transitions += 1
                rest = solve(state & ~ending)
                cost = rest + self._latency(groups)
                if cost < best[0]:
                    best = (cost, ending, False)
                merged = self._merge_latency(groups)
                if merged is not None and rest + merged < best[0]:
                    best = (rest + merged, ending, True)
            memo[state] = best
            return best[0]

        full = (1 << n) - 1
        self.total += solve(full)
        stages = []
        state = full
        while state:
            _, ending, merged = memo[state]
            groups = self._groups(ending, n, succ_mask, block)
            if merged:
                self.chosen_merges.append([g[0] for g in groups])
                groups = [[u for g in groups for u in g]]
            stages.append(groups)
            state &= ~ending
        stages.reverse()
        return [[[op for u in g for op in self.unit_ops[u]] for g in stage] for stage in stages]

    def _endings(self, state: int, n: int, succ_mask: list[int], pred_mask: list[int],
                 block: list[int]):
        """Every ending of ``state`` with at most s groups of at most r units (reverse
        topological include/exclude; excluding a unit excludes its ancestors)."""
        nodes = [k for k in range(n - 1, -1, -1) if state >> k & 1]
        limit = self.r * self.s
        found: list[int] = []

        def rec(pos: int, chosen: int, blocked: int, size: int) -> None:
            if pos == len(nodes):
                if chosen:
                    found.append(chosen)
                return
            k = nodes[pos]
            bit = 1 << k
            if not blocked & bit and not succ_mask[k] & state & ~chosen and size < limit:
                rec(pos + 1, chosen | bit, blocked, size + 1)
            rec(pos + 1, chosen, blocked | (pred_mask[k] & state), size)

        rec(0, 0, 0, 0)
        for ending in found:
            groups = self._groups(ending, n, succ_mask, block)
            if len(groups) <= self.s and all(len(g) <= self.r for g in groups):
                yield ending, groups

    @staticmethod
    def _groups(ending: int, n: int, succ_mask: list[int], block: list[int]) -> list[list[int]]:
        """Weakly connected components of the ending, each in topological (block) order."""
        members = [k for k in range(n) if ending >> k & 1]
        parent = {k: k for k in members}

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for k in members:
            m = succ_mask[k] & ending
            while m:
                low = m & -m
                j = low.bit_length() - 1
                parent[find(j)] = find(k)
                m ^= low
        comps: dict[int, list[int]] = {}
        for k in members:
            comps.setdefault(find(k), []).append(block[k])
        return sorted(comps.values(), key=lambda g: g[0])

    def _latency(self, groups: Sequence[list[int]]) -> float:
        key = tuple(tuple(g) for g in groups)
        hit = self.cache.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.evaluated += 1
        value = float(self.oracle([[op for u in g for op in self.unit_ops[u]] for g in groups]))
        self.cache[key] = value
        return value


def _emit(stages: list[list[list[OpId]]]) -> tuple[list[OpId], dict[OpId, int], list[int]]:
    """Issue order, streams and barrier positions; single-group runs share stream 0, no barrier."""
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
