"""One run of a Schedule with control flow, made flat: every executed op instance, in issue order.

Implements the run-time side of NNC's ``while`` and ``case..of`` (seed 000; notes nnc_mindspore.md
§A.2 step 9 and §A.3) as a plain :class:`~workbench.values.schedule.Schedule` the simulator and the
memory
planners already understand, plus the points where the host must decide.

* **Instances.**  Iteration ``k`` of loop ``L`` runs a copy of its ``cond`` and (unless it exits)
  of its ``body``; a ``case_of`` runs a copy of the chosen branch.  An op instance is named after
  its path, e.g. ``loop/body/matmul#3`` (``#k``: the iteration of the innermost loop) or
  ``pick/then/conv``; its tensors likewise.  Ops outside control flow keep their ids, streams and
  syncs.  Loop states read the previous iteration's tensors (or the initial outer tensor), so
  loop-carried tensors live across iterations; the op's outputs become the final instances.
* **Streams.**  A sub-schedule's stream 0 is the control-flow op's own stream (NNC step 9); its
  other streams get fresh ids, one block per control-flow op, reused by every iteration.
* **Order.**  Each sub-graph copy is a unit: its sources wait for the previous copy's sinks (the
  iteration before, or the op's predecessors) and the op's successors wait for the last copy's sinks
  (NNC's begin/end signals).  Syncs: the policies' own (copied), plus what
  :func:`~workbench.values.schedule.insert_syncs` adds for the rest, so the flat schedule validates.
* **Decisions.**  Before each iteration the host reads the loop's ``flag`` (a device→host sync),
  and before a branch the ``selector``; an op with ``flag``/``selector`` ``None`` is decided on the
  host alone.  Each :class:`Decision` lists the instances it gates (the next run of the op; for the
  last one, what follows the op) and what it waits for (the instances of the run before it, the
  control-flow ops nested in that run, the decisions that open it) — what the host of
  :mod:`workbench.control.host` needs for NNC's coroutines and for a blocking host.

Iteration counts and branches are inputs of the run: ``iterations`` is an int, a callable
``rule(k) -> bool`` (go on into iteration ``k``?) or a mapping from loop id (or instance id) to
either; ``branch`` an index, a name, a callable of the enclosing iteration index, or a mapping.
``all_branches=True`` runs every branch of each ``case_of`` one after the other (a static memory
plan valid whichever branch runs).  Complexity: O(I + E_I) for I instances and E_I instance edges,
plus :func:`~workbench.values.schedule.insert_syncs` on the flat schedule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from workbench._checks import show
from workbench.control.ops import bindings, branch_index, result_names, subgraphs
from workbench.errors import OptionError
from workbench.ops.control import WHILE
from workbench.values.graph import CONTROL_KINDS, Graph, Op, OpId, Tensor, TensorId
from workbench.values.schedule import Schedule, insert_syncs, schedule_serial

__all__ = ["MAX_ITERATIONS", "MAX_TOTAL_ITERATIONS", "Decision", "Expansion", "expand"]

_SINK = "\x00sink:"  # key of a control-flow sink's end decisions in _block's table

#: A data-dependent loop rule that never says stop is cut here with a one-line error.
MAX_ITERATIONS = 100_000
#: Default cap on the iterations of one run, summed over every loop (nested ones multiply: 60
#: nested loops of 2 iterations are 2**60); ``expand(max_iterations=...)`` and
#: ``simulate(max_iterations=...)`` raise it.
MAX_TOTAL_ITERATIONS = 10_000

Choice = Any  # int | str | Callable | Mapping | None


@dataclass
class Decision:
    """A point where the host needs a value (or only its own count) before going on.

    ``kind``: ``continue`` / ``exit`` (a loop's flag), ``select`` (a branch), ``done`` (the end of
    a branch: host-known).  ``flag``: flat index of the op instance that produces the value (-1:
    none, e.g. a graph input); ``host_known``: no device→host sync at all.  ``position``: the flat
    issue position it stands before.  ``gates``: flat indices it holds back; ``notifies``: the
    decisions that count it among what they wait for; ``waits_for``: how many items (instances,
    nested exits, opening decisions) must be done before it is reached.  Read-only once built.
    """

    owner: str
    index: int
    iteration: int
    kind: str = "continue"
    flag: int = -1
    flag_tensor: str = ""
    flag_bytes: int = 0
    host_known: bool = False
    position: int = 0
    gates: list[int] = field(default_factory=list)
    notifies: list[int] = field(default_factory=list)
    waits_for: int = 0


@dataclass(frozen=True)
class Expansion:
    """The flat schedule of one run and what the host needs about it (module docstring)."""

    schedule: Schedule
    source: Schedule
    iteration: tuple[int, ...]     # per flat op: iteration of the innermost loop (-1: none)
    parent: tuple[str, ...]        # per flat op: the control-flow op instance it runs in ("")
    region: tuple[str, ...]        # "cond", "body", a branch name, "" at the top
    decisions: tuple[Decision, ...]
    run_of: tuple[int, ...]        # per flat op: the decision that waits for it (-1: none)
    trips: Mapping[str, int]       # loop instance -> iterations run
    branches: Mapping[str, str]    # case_of instance -> branch run


class _Ctx(NamedTuple):
    prefix: str
    suffix: str
    static: str
    iteration: int
    parent: str
    region: str
    streams: Mapping[int, int] | None   # sub-schedule stream -> flat stream (None: identity)
    run: int                            # decision counting this block's instances (-1: none)
    gates: tuple[int, ...]              # decisions holding this block's instances back
    graph: Graph


def expand(schedule: Schedule, *, iterations: Choice = None, branch: Choice = None,
           all_branches: bool = False, max_iterations: int | None = None) -> Expansion:
    """The flat schedule of one run of ``schedule`` (module docstring).  Sub-graphs without a
    schedule (a policy called directly, IOS's stage schedules) run serially.  A run of more
    than ``max_iterations`` loop iterations in total (default :data:`MAX_TOTAL_ITERATIONS`;
    nested loops multiply) stops with a one-line :class:`OptionError` before building them.

    >>> import workbench as wb
    >>> s = wb.schedule(wb.models.nnc_while_loop(iterations=2), "nnc")
    >>> e = expand(s)
    >>> e.schedule.issue_order[:4]
    ('loop/cond/less#0', 'loop/body/gemm#0', 'loop/body/count#0', 'loop/cond/less#1')
    >>> e.trips, [d.kind for d in e.decisions]
    ({'loop': 2}, ['continue', 'continue', 'exit'])
    """
    limit = MAX_TOTAL_ITERATIONS if max_iterations is None else max_iterations
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise OptionError(f"max_iterations must be a non-negative integer, got {show(limit)}")
    return _Expander(schedule, iterations, branch, all_branches, limit).run()


class _Expander:
    def __init__(self, schedule: Schedule, iterations: Choice, branch: Choice,
                 all_branches: bool, max_iterations: int = MAX_TOTAL_ITERATIONS) -> None:
        self.source = schedule
        self.max_iterations = max_iterations
        self.total_iterations = 0
        self.iterations = iterations
        self.branch = branch
        self.all_branches = all_branches
        self.ops: list[Op] = []
        self.index: dict[str, int] = {}
        self.tensors: dict[TensorId, Tensor] = {}
        self.control: list[tuple[str, str]] = []
        self.stream_of: dict[str, int] = {}
        self.given: list[tuple[str, str]] = []
        self.barriers: list[int] = []
        self.barrier_kind = schedule.barrier_kind if schedule.barriers else ""
        self.cols: tuple[list[int], list[str], list[str]] = ([], [], [])
        self.run_of: list[int] = []
        self.decisions: list[Decision] = []
        self.placed: list[int] = []
        self.trips: dict[str, int] = {}
        self.chosen: dict[str, str] = {}
        self.blocks: dict[str, int] = {}
        self.next_stream = max(schedule.streams, default=-1) + 1
        self.seen_ops: set[str] = set()
        self.sink_done: list[int] = []  # end decisions of the control-flow sinks of the last block

    # ------------------------------------------------------------------------------ driver
    def run(self) -> Expansion:
        src = self.source
        top = _Ctx("", "", "", -1, "", "", None, -1, (), src.graph)
        tmap: dict[TensorId, Any] = {}
        self._block(src.graph, src, top, [], tmap)
        self._check_keys()
        graph = src.graph
        outputs = [x for t in graph.outputs for x in self._lookup(t, top, tmap)
                   if x in self.tensors]
        flat = Graph(self.ops, self.tensors.values(), self.control,
                     outputs=list(dict.fromkeys(outputs)), name=graph.name)
        order = [op.id for op in self.ops]
        streams: dict[int, list[str]] = {}
        for op in order:
            streams.setdefault(self.stream_of[op], []).append(op)
        barriers = sorted(set(self.barriers))
        syncs = insert_syncs(flat, self.stream_of, order, barriers=barriers, given=self.given)
        notes = {**src.notes, "expanded_from": len(src.issue_order), "instances": len(order)}
        sched = Schedule(flat, src.policy, {s: tuple(v) for s, v in sorted(streams.items())},
                         tuple(syncs), tuple(order), tuple(barriers), dict(src.options), notes,
                         self.barrier_kind or src.barrier_kind)
        decisions = [self.decisions[d] for d in self.placed]
        remap = {d: k for k, d in enumerate(self.placed)}
        for d in decisions:
            d.notifies = [remap[x] for x in d.notifies]
        run_of = tuple(remap[r] if r >= 0 else -1 for r in self.run_of)
        return Expansion(sched, src, tuple(self.cols[0]), tuple(self.cols[1]),
                         tuple(self.cols[2]), tuple(decisions), run_of, dict(self.trips),
                         dict(self.chosen))

    # ------------------------------------------------------------------------------ blocks
    def _block(self, graph: Graph, sched: Schedule, ctx: _Ctx, entry: Sequence[str],
               tmap: dict[TensorId, Any]) -> list[str]:
        """Expand one (sub-)schedule; returns the instances its successors must wait for."""
        order = sched.issue_order
        self.sink_done = []
        if not order:
            return list(entry)
        exits: dict[OpId, list[str]] = {}
        held: dict[OpId, list[int]] = {}
        bars = set(sched.barriers)
        if bars and not self.barrier_kind:
            self.barrier_kind = sched.barrier_kind
        for pos, op_id in enumerate(order):
            if pos in bars:
                self.barriers.append(len(self.ops))
            op = graph.op(op_id)
            preds = graph.predecessors(op_id)
            before = list(dict.fromkeys(e for p in preds for e in exits.get(p, ()))) if preds \
                else list(entry)
            gates = ctx.gates + tuple(held.get(op_id, ()))
            stream = sched.stream_of(op_id)
            if ctx.streams is not None:
                stream = ctx.streams[stream]
            if op.kind in CONTROL_KINDS:
                exits[op_id], done = self._control(op, sched, ctx, stream, before, tmap, gates)
                for after in (*_after(graph, sched, op_id), f"{_SINK}{op_id}"):
                    held.setdefault(after, []).append(done)
            else:
                exits[op_id] = [self._instance(op, ctx, stream, before, tmap, gates)]
        if len(order) in bars:
            self.barriers.append(len(self.ops))
        for a, b in sched.syncs:
            if a in exits and b in exits and graph.op(a).kind not in CONTROL_KINDS \
                    and graph.op(b).kind not in CONTROL_KINDS:
                self.given.append((exits[a][0], exits[b][0]))
        sinks = [op for op in order if not graph.successors(op)]
        self.sink_done = [d for op in sinks for d in held.get(f"{_SINK}{op}", ())]
        return list(dict.fromkeys(e for s in sinks for e in exits[s]))

    def _instance(self, op: Op, ctx: _Ctx, stream: int, before: Sequence[str],
                  tmap: dict[TensorId, Any], gates: tuple[int, ...]) -> str:
        inst = ctx.prefix + op.id + ctx.suffix
        ins = [x for t in op.inputs for x in self._lookup(t, ctx, tmap)]
        outs = []
        for t in op.outputs:
            template = ctx.graph.tensor(t)
            fid = t if not ctx.prefix else ctx.prefix + t + ctx.suffix
            role = template.role if not ctx.prefix or template.role != "output" else "activation"
            self.tensors[fid] = replace(template, id=fid, producer=inst, role=role)
            tmap[t] = fid
            outs.append(fid)
        producers = {self.tensors[x].producer for x in ins}
        for e in before:
            if e not in producers:
                self.control.append((e, inst))
        i = len(self.ops)
        same = inst == op.id and tuple(ins) == op.inputs and tuple(outs) == op.outputs
        self.ops.append(op if same else replace(op, id=inst, inputs=tuple(ins),
                                                outputs=tuple(outs)))
        self.index[inst] = i
        self.stream_of[inst] = stream
        self.cols[0].append(ctx.iteration)
        self.cols[1].append(ctx.parent)
        self.cols[2].append(ctx.region)
        self.run_of.append(ctx.run)
        if ctx.run >= 0:
            self.decisions[ctx.run].waits_for += 1
        for g in gates:
            self.decisions[g].gates.append(i)
        return inst

    def _lookup(self, t: TensorId, ctx: _Ctx, tmap: dict[TensorId, Any]) -> list[TensorId]:
        """Flat tensor id(s) for tensor ``t`` of the block: produced or bound already, else a
        graph input (top level) or one of the sub-graph's own parameters (shared by iterations)."""
        v = tmap.get(t)
        if v is None:
            template = ctx.graph.tensor(t)
            fid = t if not ctx.prefix else ctx.static + t
            if fid not in self.tensors:
                role = template.role if template.role in ("input", "parameter") else "input"
                self.tensors[fid] = replace(template, id=fid, producer=None, role=role)
            tmap[t] = v = fid
        return list(v) if isinstance(v, list) else [v]

    # ------------------------------------------------------------------------------ control
    def _control(self, op: Op, sched: Schedule, ctx: _Ctx, stream: int, before: list[str],
                 tmap: dict[TensorId, Any], gates: tuple[int, ...]) -> tuple[list[str], int]:
        inst = ctx.prefix + op.id + ctx.suffix
        static = f"{ctx.static}{op.id}/"
        self.seen_ops.update((op.id, inst))
        subs = _subschedules(sched, op)
        base = self.blocks.get(static)
        if base is None:
            base = self.blocks[static] = self.next_stream
            self.next_stream += max((len([s for s in sub.streams if s != 0])
                                     for sub in subs.values()), default=0)
        maps = {}
        for name, sub in subs.items():
            others = sorted(s for s in sub.streams if s != 0)
            maps[name] = {0: stream, **{s: base + k for k, s in enumerate(others)}}
        binds = {name: {inner: self._lookup(outer, ctx, tmap)
                        for inner, outer in bindings(op, g).items()}
                 for name, g in subgraphs(op)}
        parts = (inst, static, ctx, maps, subs, binds)
        if op.kind == WHILE:
            frontier, done = self._while(op, parts, before, tmap, gates)
        else:
            frontier, done = self._case(op, parts, before, tmap, gates)
        if ctx.run >= 0:
            self.decisions[done].notifies.append(ctx.run)
            self.decisions[ctx.run].waits_for += 1
        return frontier, done

    def _decision(self, owner: str, index: int, iteration: int, opened_by: Sequence[int]) -> int:
        d = len(self.decisions)
        self.decisions.append(Decision(owner, index, iteration, waits_for=len(opened_by)))
        for g in opened_by:
            self.decisions[g].notifies.append(d)
        return d

    def _place(self, d: int, kind: str, value: list[TensorId] | None) -> None:
        dec = self.decisions[d]
        dec.kind = kind
        dec.position = len(self.ops)
        if value is None:
            dec.host_known = True
        else:
            tid = value[-1]
            dec.flag_tensor = tid
            dec.flag_bytes = self.tensors[tid].size_bytes
            producer = self.tensors[tid].producer
            dec.flag = self.index[producer] if producer is not None else -1
        self.placed.append(d)

    def _sub_ctx(self, parts: tuple[Any, ...], name: str, suffix: str, iteration: int, run: int,
                 gates: tuple[int, ...], graph: Graph) -> _Ctx:
        inst, static, ctx, maps, _, _ = parts
        return _Ctx(f"{inst}/{name}/", suffix, f"{static}{name}/", iteration, inst, name,
                    maps[name], run, gates, graph)

    def _while(self, op: Op, parts: tuple[Any, ...], before: list[str],
               tmap: dict[TensorId, Any], gates: tuple[int, ...]) -> tuple[list[str], int]:
        inst, _, ctx, _, subs, binds = parts
        cond, body = op.attrs["cond"], op.attrs["body"]
        carried = op.attrs["carried"]
        flag = op.attrs.get("flag")
        rule = self._trips(op, inst)
        states = {s: self._lookup(init, ctx, tmap) for s, init, _ in carried}
        frontier = before
        dec = self._decision(inst, 0, 0, gates)
        run_gates = gates
        last_body: dict[TensorId, Any] | None = None
        k = 0
        while True:
            cmap: dict[TensorId, Any] = {**binds["cond"],
                                         **{s: v for s, v in states.items() if s in cond.tensors}}
            cctx = self._sub_ctx(parts, "cond", f"#{k}", k, dec, run_gates, cond)
            frontier = self._block(cond, subs["cond"], cctx, frontier, cmap)
            go = k < rule if isinstance(rule, int) else bool(rule(k))
            value = None if flag is None else (cmap[flag] if flag in cmap else states[flag])
            self._place(dec, "continue" if go else "exit",
                        None if value is None else list(value) if isinstance(value, list)
                        else [value])
            if not go:
                break
            if k >= MAX_ITERATIONS:
                raise OptionError(f"loop {inst!r} ran {MAX_ITERATIONS} iterations and its rule "
                                  f"still says go on")
            self.total_iterations += 1
            if self.total_iterations > self.max_iterations:
                raise OptionError(f"the run exceeds {self.max_iterations:,} loop iterations in "
                                  f"total (at loop {show(inst)}, iteration {k}; nested loops "
                                  f"multiply); pass max_iterations= to allow more")
            nxt = self._decision(inst, k + 1, k + 1, (dec,))
            bmap: dict[TensorId, Any] = {**binds["body"],
                                         **{s: v for s, v in states.items() if s in body.tensors}}
            bctx = self._sub_ctx(parts, "body", f"#{k}", k, nxt, (dec,), body)
            frontier = self._block(body, subs["body"], bctx, frontier, bmap)
            states = {s: self._lookup(n, bctx, bmap) for s, _, n in carried}
            last_body = bmap
            # the next condition shares the body's run: it also waits until the host knows the
            # control-flow ops that end the body are over
            run_gates = (dec, *self.sink_done)
            dec = nxt
            k += 1
        self.trips[inst] = k
        for out, r in zip(op.outputs, result_names(op), strict=True):
            if r in states:
                tmap[out] = states[r]
            elif last_body is not None:
                tmap[out] = last_body[r]
            else:  # a scan output of a loop that ran no iteration: nothing produced it
                fid = f"{inst}:{out}"
                self.tensors[fid] = Tensor(fid, 0, role="input")
                tmap[out] = fid
        return frontier, dec

    def _case(self, op: Op, parts: tuple[Any, ...], before: list[str],
              tmap: dict[TensorId, Any], gates: tuple[int, ...]) -> tuple[list[str], int]:
        inst, _, ctx, _, subs, binds = parts
        branches = subgraphs(op)
        iteration = ctx.iteration
        chosen = range(len(branches)) if self.all_branches else [self._branch(op, inst,
                                                                              iteration)]
        selector = op.attrs.get("selector")
        select = self._decision(inst, 0, iteration, gates)
        self._place(select, "select", None if selector is None
                    else self._lookup(selector, ctx, tmap))
        done = self._decision(inst, 1, iteration, (select,))
        frontier = before
        results: list[list[TensorId]] = [[] for _ in op.outputs]
        for b in chosen:
            name, g = branches[b]
            bmap: dict[TensorId, Any] = dict(binds[name])
            bctx = self._sub_ctx(parts, name, "", iteration, done, (select,), g)
            frontier = self._block(g, subs[name], bctx, frontier, bmap)
            for j, t in enumerate(g.outputs):
                results[j].extend(self._lookup(t, bctx, bmap))
        self.chosen[inst] = "*" if self.all_branches else branches[chosen[0]][0]
        self._place(done, "done", None)
        for out, vals in zip(op.outputs, results, strict=True):
            tmap[out] = vals if len(vals) > 1 else vals[0]
        return frontier, done

    # ------------------------------------------------------------------------------ inputs
    def _pick(self, table: Choice, op: Op, inst: str) -> Any:
        if isinstance(table, Mapping):
            if inst in table:
                return table[inst]
            return table.get(op.id)
        return table

    def _trips(self, op: Op, inst: str) -> int | Callable[[int], Any]:
        value = self._pick(self.iterations, op, inst)
        if value is None:
            return int(op.attrs.get("iterations", 1))
        if callable(value):
            return value  # type: ignore[no-any-return]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise OptionError(f"iterations for loop {op.id!r} must be a non-negative integer or "
                              f"a rule(k) -> bool, got {value!r}")
        return value

    def _branch(self, op: Op, inst: str, iteration: int) -> int:
        value = self._pick(self.branch, op, inst)
        if callable(value):
            value = value(max(iteration, 0))
        return branch_index(op, value)

    def _check_keys(self) -> None:
        for what, table in (("iterations", self.iterations), ("branch", self.branch)):
            if isinstance(table, Mapping):
                unknown = [k for k in table if k not in self.seen_ops]
                if unknown:
                    known = sorted(self.trips if what == "iterations" else self.chosen)
                    raise OptionError(f"{what}: no control-flow op {unknown[0]!r} ran (ran: "
                                      f"{', '.join(known) or 'none'})")


def _subschedules(sched: Schedule, op: Op) -> dict[str, Schedule]:
    """The schedules of ``op``'s sub-graphs: the policy's, else serial."""
    have = sched.subschedules.get(op.id, {})
    out = {}
    for name, g in subgraphs(op):
        s = have.get(name)
        out[name] = s if s is not None else schedule_serial(g)
    return out


def _after(graph: Graph, sched: Schedule, op_id: OpId) -> list[OpId]:
    """What must wait until the host knows control-flow op ``op_id`` is over: its successors,
    the next op on its stream and the ops that wait on it (NNC marks their streams blocked)."""
    out = list(graph.successors(op_id))
    ops = sched.streams[sched.stream_of(op_id)]
    k = ops.index(op_id)
    if k + 1 < len(ops):
        out.append(ops[k + 1])
    out += [b for a, b in sched.syncs if a == op_id]
    return list(dict.fromkeys(o for o in out if o in sched._stream_of))  # noqa: SLF001
