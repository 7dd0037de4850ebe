"""PyTorch Execution Trace (``torch.profiler.ExecutionTraceObserver``) + its Kineto trace: a
recorded run as a Graph with its real data dependencies and measured costs, plus the measured
Trace, so the run can be rescheduled (``wb.compare(trace.graph, measured=trace)``).

The execution trace (Chakra's "host ET" schema) lists every operator call as a node with its
parent (``ctrl_deps``), its record-function id (attr ``rf_id``) and its tensor arguments, each
``[tensor id, storage id, offset, elements, element size, device]``.  From it:

* ops: the outermost operator calls (``aten::conv2d``, not the ``aten::convolution`` ->
  ``aten::_convolution`` calls inside it; record-function scopes around them are looked through),
  in the order they started (node id), named ``"<name>#<k>"`` as in
  :func:`~workbench.io.traces.pytorch_profile.load_pytorch_trace`; kind, FLOPs and bytes from the
  torch.fx import's rules (:func:`workbench.io.torch.costs.cost_of_call`), shapes on the tensors;
* edges: an op that reads a tensor (by tensor and storage id) depends on the last op that wrote
  it; an op that writes in place also waits for the ops that read the old bytes, through any
  tensor of the storage (control edges).  What an op writes in place: the arguments its
  ``op_schema`` marks ``(a!)`` (also the lists a foreach op updates and returns nothing of);
  without a schema, its outputs that are inputs.  Writes of calls nested in an op that its
  outputs leave out (batch norm's saved statistics and running stats) are its writes too.
* storage aliases: a tensor id not seen before (a saved tensor unpacked in backward, a view
  made outside any operator) reads what the last writes of its bytes (storage id, offset and
  size) left there, when one of them wrote a tensor of its element size holding all its bytes;
  a tensor read after its storage was written in place through another tensor also follows
  that write.  A storage id is the address of its allocation, so a tensor on a storage none
  of the op's inputs is on starts the storage afresh: no read links to what a freed allocation
  at that address held, and a read no write covers (a wrapped scalar) is an input of the graph.
  Undefined tensors (one id for all, no storage) are no tensors.

The Kineto trace, joined on the record-function id (Kineto's ``args["Record function id"]``),
gives each op its measured time: in a GPU run the kernels it launched (joined through
``External id``, else through the ``correlation`` of the launch inside the op), on their CUDA
streams, with ``duration_us`` the sum of its kernels; ops that launched no kernel (views,
``empty``) did no device work and are left out, their readers depending on what they read.  In a
CPU-only run every op is a host op (``device="cpu"``) with its measured duration, one stream per
host thread.  Complexity: O(nodes + tensor arguments + events log events).

Steps: a profile recorded over several steps (``torch.profiler.schedule`` and ``prof.step()``)
holds each step's calls under a ``ProfilerStep#N`` scope in the ET and a ``ProfilerStep#N``
annotation in the Kineto trace.  One step is kept (``step=N``; default the last complete one
both traces hold, :func:`~workbench.io.traces.kineto_links.choose_step`; ``"all"``: every call, the
steps merged into one graph): the ET's calls under its scope, and the calls under no step scope
(on another thread, such as the autograd engine's device threads, or in an ET that names no
steps) whose Kineto host event lies in the step's span.  Values a kept step reads that an
earlier step wrote (momentum buffers, the weights an optimizer updated) are inputs of its graph.

Reading the ET's calls is :mod:`workbench.io.traces.et_calls`; the bookkeeping of which graph
tensors hold each ET tensor's value is :mod:`workbench.io.traces.et_values`; this module joins the
Kineto trace and builds the graph.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from workbench._gc import without_gc
from workbench.errors import FormatError
from workbench.io.traces.et_autograd import (
    backward_kind,
    part_cost,
    summed,
)
from workbench.io.traces.et_calls import key_of, read_calls
from workbench.io.traces.et_values import (
    Call,
    Ref,
    Values,
    dtype_name,
    how_written,
    nbytes_of,
)
from workbench.io.traces.kineto_links import (
    Step,
    check_step,
    choose_step,
    missing_step,
    profiler_steps,
)
from workbench.io.traces.pytorch_profile import GPU_CATEGORIES, gpu_name
from workbench.io.traces.trace_events import (
    args_of,
    duration,
    number,
    read_trace_json,
    trace_events,
    warn_nothing_to_schedule,
)
from workbench.ops.costs import ShapeCost, TensorInfo, default_cost
from workbench.values.graph import Graph, Op, Tensor
from workbench.values.trace import Trace


# ================================================================================ the Kineto side
def _attach_kineto(calls: list[Call], raw: list[Any], kineto: Path) -> bool:
    """Attach host events and kernels to the calls; True when the run had GPU kernels."""
    by_rf: dict[Any, Call] = {c.rf_id: c for c in calls if c.rf_id is not None}
    # Kineto before PyTorch 2.1 has no "Record function id": its "External id" of a CPU op is
    # the record-function id (what HTA's ET correlation joins on for those traces)
    rf_key = "Record function id" if any(
        isinstance(ev, dict) and "Record function id" in args_of(ev) for ev in raw) \
        else "External id"
    host: list[tuple[Any, float, float, Call]] = []  # (thread, ts, end, call)
    by_external: dict[Any, dict[str, Any]] = {}
    runtime: dict[Any, dict[str, Any]] = {}
    kernels = []
    for k, ev in enumerate(raw):
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        cat, args = str(ev.get("cat", "")).lower(), args_of(ev)
        ts, dur = number(ev, "ts", k, kineto), duration(ev, k, kineto)
        if cat in GPU_CATEGORIES:
            kernels.append((ts, k, {**ev, "ts": ts, "dur": dur}))
            continue
        item: dict[str, Any] = {"ts": ts, "end": ts + dur,
                                "thread": (ev.get("pid"), ev.get("tid")), "ev": ev}
        if cat == "cpu_op":
            call = by_rf.get(key_of(args.get(rf_key)))
            if call is not None and call.host is None:
                call.host = item
                host.append((item["thread"], ts, item["end"], call))
            if key_of(args.get("External id")) is not None:
                by_external[args["External id"]] = item
        elif cat == "cuda_runtime" and key_of(args.get("correlation")) is not None:
            runtime[args["correlation"]] = item
    if not any(c.host for c in calls):
        raise FormatError(f"{kineto}: no CPU op of this Kineto trace has a record-function id "
                          f"of the execution trace (are they from the same run?)")
    spans: dict[Any, list[tuple[float, float, Call]]] = defaultdict(list)
    for thread, ts, end, call in host:
        spans[thread].append((ts, end, call))
    for lst in spans.values():
        lst.sort(key=lambda s: s[0])

    def enclosing(item: dict[str, Any] | None) -> Call | None:
        if item is None:
            return None
        lst = spans.get(item["thread"], [])
        i = bisect.bisect_right([s[0] for s in lst], item["ts"]) - 1
        return lst[i][2] if i >= 0 and item["ts"] <= lst[i][1] else None

    for _, _, ev in sorted(kernels, key=lambda e: (e[0], e[1])):
        args = args_of(ev)
        call = enclosing(by_external.get(key_of(args.get("External id")))) or enclosing(
            runtime.get(key_of(args.get("correlation"))))
        if call is not None:
            call.kernels.append(ev)
    return bool(kernels)


# ================================================================================ the step
def _choose_calls(calls: list[Call], raw: list[Any], step: int | str | None,
                  kineto: Path) -> tuple[list[Call], Step | None, list[int]]:
    """The calls of the ``ProfilerStep`` to keep (module docstring), the step (None: every
    call) and the step numbers of the calls.  A call's step is the ``ProfilerStep#N`` scope it
    ran under in the ET, else (a call on another thread, such as the autograd engine's device
    threads, or an ET that names no steps) the Kineto step whose span holds its host event.
    O((calls + events) log steps)."""
    check_step(step, kineto)
    kineto_steps = {s.number: s for s in profiler_steps(raw)}
    spans = sorted(kineto_steps.values(), key=lambda s: s.start)
    starts = [s.start for s in spans]
    for c in calls:
        if c.step is None and c.host is not None:
            i = bisect.bisect_right(starts, c.host["ts"]) - 1
            if i >= 0 and c.host["ts"] <= spans[i].end:
                c.step = spans[i].number
    numbers = sorted({c.step for c in calls if c.step is not None})
    steps = [kineto_steps.get(n) or Step(n, math.inf, -math.inf) for n in numbers]
    launched = {corr for ev in raw if isinstance(ev, dict) and str(
        ev.get("cat", "")).lower() in GPU_CATEGORIES and isinstance(
        corr := args_of(ev).get("correlation"), int)}
    chosen = choose_step(steps, raw, launched, step, kineto)
    if chosen is None:
        return calls, None, numbers
    return [c for c in calls if c.step == chosen.number], chosen, numbers


# ================================================================================ the graph
def _graph_of(calls: list[Call], name: str, gpu_run: bool,
              need_host: bool = False) -> tuple[Graph, list[Call]]:
    """The ops, tensors and edges of the calls kept (module docstring); ``need_host`` (a CPU
    run with its Kineto trace) leaves out the calls the Kineto trace has no event for."""
    from workbench.io.torch.costs import cost_of_call

    seen: dict[str, int] = {}
    ops: list[Op] = []
    kept: list[Call] = []
    values = Values()
    tensors = values.tensors
    control: list[tuple[str, str]] = []
    for n, call in enumerate(calls):
        k = seen.get(call.name, 0)
        seen[call.name] = k + 1
        op_id = f"{call.name}#{k}"
        inputs: list[str] = []
        after: list[str] = []  # ops that wrote what it reads through another tensor id
        for ref in call.ins:
            held, writers = values.read(ref, n)
            inputs.extend(t for t in held if t not in inputs)
            after.extend(writers)
        hidden = [(ref, how_written(ref, call, mutated)) for ref, mutated in call.hidden]
        shown = [(ref, how_written(ref, call, ref.key in call.mutated)) for ref in call.outs]
        if (gpu_run and not call.kernels) or (need_host and call.host is None) or (
                call.grad_fn is not None and not call.parts):  # or an empty autograd scope
            # no device work (or no measured time): its outputs alias what it read
            made_by = [p for p in dict.fromkeys(tensors[t].producer for t in inputs) if p]
            for ref, how in hidden:
                values.hide(ref, n, how, made_by)
            for ref, how in shown:
                values.hold(ref, n, inputs, how, made_by)
            continue
        control.extend((w, op_id) for w in dict.fromkeys(after) if w != op_id)
        # new allocations first: an in-place write into one waits for no earlier reader
        for ref, how in sorted([*hidden, *shown], key=lambda rh: rh[1] != "fresh"):
            control.extend((r, op_id) for r in values.overwrite(ref, how) if r != op_id)
        for ref, how in hidden:
            values.hide(ref, n, how, [op_id])
        outputs = []
        for j, (ref, how) in enumerate(shown):
            tid = f"{op_id}:{j}"
            tensors[tid] = Tensor(tid, nbytes_of(ref.shape, ref.itemsize), producer=op_id,
                                  shape=ref.shape, dtype=dtype_name(ref.itemsize))
            outputs.append(tid)
            values.hold(ref, n, [tid], how, [op_id])
        for ref in call.ins:
            values.reader(ref, op_id)
        ins = [TensorInfo(tensors[t].shape, _itemsize(tensors[t])) if tensors[t].shape else None
               for t in inputs]
        outs = [TensorInfo(tensors[t].shape, _itemsize(tensors[t])) if tensors[t].shape
                else None for t in outputs]
        label = call.name.split("::", 1)[-1]
        attrs: dict[str, Any]
        cost: ShapeCost | None
        if call.grad_fn is not None:
            kind, attrs = backward_kind(call.grad_fn), {"grad_fn": call.grad_fn}
            cost = summed([part_cost(lab, _infos(a), _infos(b), v) for lab, a, b, v in call.parts])
        else:
            kind, cost, attrs = cost_of_call(label, ins, outs, call.values)
        if cost is None:
            cost = default_cost(ins, outs)
            attrs["cost"] = "default"
        attrs["phase"] = call.phase
        grids = [g for g in map(_grid, call.kernels) if g is not None]
        blocks = max(grids, default=0) or cost.thread_blocks
        attrs.update({"event": call.name, "et_node": call.node_id})
        if call.kernels:
            attrs["kernels"] = [str(ev.get("name")) for ev in call.kernels]
        ops.append(Op(op_id, kind=kind, device="gpu" if gpu_run else "cpu",
                      flops=float(cost.flops), bytes_read=int(cost.bytes_read),
                      bytes_written=int(cost.bytes_written), inputs=tuple(inputs),
                      outputs=tuple(outputs), thread_blocks=int(blocks),
                      duration_us=_measured(call, gpu_run), attrs=attrs))
        kept.append(call)
    data = {(t.producer, op.id) for op in ops for t in map(tensors.__getitem__, op.inputs)}
    control = list(dict.fromkeys(e for e in control if e not in data))
    return Graph(ops, tensors.values(), control, name=name), kept


def _infos(refs: list[Ref]) -> list[TensorInfo | None]:
    return [TensorInfo(r.shape, r.itemsize) if r.shape else None for r in refs]


def _itemsize(t: Tensor) -> int:
    return {"float16": 2, "float64": 8, "uint8": 1}.get(t.dtype, 4)


def _grid(ev: Mapping[str, Any]) -> int | None:
    grid = args_of(ev).get("grid")
    if isinstance(grid, list) and grid and all(isinstance(g, int) and g > 0 for g in grid):
        n = 1
        for g in grid:
            n *= g
        return n
    return None


def _measured(call: Call, gpu_run: bool) -> float | None:
    if gpu_run:
        return sum(float(ev.get("dur", 0.0)) for ev in call.kernels)
    return None if call.host is None else call.host["end"] - call.host["ts"]


# ================================================================================ entry points
def execution_graph(path: str | Path, *, name: str | None = None,
                    step: int | str | None = None) -> Graph:
    """The graph of an execution trace alone (no times: costs from the shape rules).  Every
    outermost call is an op on the device of its tensors' run (``gpu``).  ``step``: the
    ``ProfilerStep#N`` whose calls to keep (default: the last the trace holds; ``"all"``: every
    call)."""
    path = Path(path)
    calls = read_calls(read_trace_json(path), path)
    check_step(step, path)
    numbers = sorted({c.step for c in calls if c.step is not None})
    if isinstance(step, int) and step not in numbers:
        raise missing_step(step, numbers, path)
    if numbers and step != "all":
        keep = numbers[-1] if step is None else step
        calls = [c for c in calls if c.step == keep]
    for c in calls:
        c.kernels = [{}]  # keep every call: no Kineto trace tells which did device work
    graph, _ = _graph_of(calls, name or path.name.split(".")[0], gpu_run=True)
    return graph.replace(ops=[_unmeasured(op) for op in graph.ops])


def _unmeasured(op: Op) -> Op:
    from dataclasses import replace

    attrs = {k: v for k, v in op.attrs.items() if k != "kernels"}
    return replace(op, duration_us=None, thread_blocks=op.thread_blocks, attrs=attrs)


@without_gc  # as load_pytorch_trace: two files' events, none of them garbage
def load_execution_trace(path: str | Path, kineto: str | Path, *,
                         name: str | None = None, step: int | str | None = None) -> Trace:
    """The measured run of an execution trace and its Kineto trace (module docstring).

    Returns a :class:`~workbench.values.trace.Trace` (executor ``"measured"``, policy
    ``"measured"``)
    whose ``graph`` has the run's ops, data dependencies and measured ``duration_us``; time 0 is
    the first op's start.  ``step``: the ``ProfilerStep#N`` to keep (default: the last complete
    one both traces hold; ``"all"``: every call, the steps merged into one graph); a number
    neither trace holds is a one-line error naming the steps they have.  ``meta`` counts the
    calls, the kernels and the calls left out, and names the ``step`` kept and the ``steps``.
    A graph with nothing to schedule (one chain, or no costs) is a one-line warning
    (:func:`~workbench.io.traces.trace_events.nothing_to_schedule`).
    """
    path, kineto = Path(path), Path(kineto)
    calls = read_calls(read_trace_json(path), path)
    data = read_trace_json(kineto)
    raw = trace_events(data, kineto)
    gpu_run = _attach_kineto(calls, raw, kineto)
    every = len(calls)
    calls, chosen, steps = _choose_calls(calls, raw, step, kineto)
    if gpu_run and not any(c.kernels for c in calls):
        raise FormatError(f"{kineto}: no GPU kernel links to an op of the execution trace "
                          f"(by External id or launch correlation): are they from the same run?")
    graph, kept = _graph_of(calls, name or path.name.split(".")[0], gpu_run,
                            need_host=not gpu_run)
    if not kept:
        raise FormatError(f"{kineto}: no op of the execution trace has a Kineto event (by "
                          f"record-function id): are the two traces from the same run?")
    rows = []
    for op, call in zip(graph.ops, kept, strict=True):
        if gpu_run:
            first = min(call.kernels, key=lambda ev: float(ev.get("ts", 0.0)))
            start = float(first["ts"])
            end = max(float(ev.get("ts", 0.0)) + float(ev.get("dur", 0.0)) for ev in call.kernels)
            stream = _stream_of(first)
        elif call.host is not None:
            start, end, stream = call.host["ts"], call.host["end"], call.host["thread"]
        else:
            raise FormatError(f"{kineto}: no Kineto event for {op.id!r} (record-function id "
                              f"{call.rf_id}): are the two traces from the same run?")
        rows.append((op, start, end, stream))
    t0 = min(r[1] for r in rows)
    numbers: dict[Any, int] = {}
    for _, _, _, s in rows:
        if s not in numbers:
            numbers[s] = s if isinstance(s, int) else len(numbers)
    df = pd.DataFrame({
        "op": [op.id for op, *_ in rows], "kind": [op.kind for op, *_ in rows],
        "stream": [numbers[s] for *_, s in rows], "device": [op.device for op, *_ in rows],
        "start_us": [a - t0 for _, a, _, _ in rows], "end_us": [b - t0 for _, _, b, _ in rows],
        "duration_us": [op.duration_us for op, *_ in rows],
        "flops": [op.flops for op, *_ in rows],
        "bytes": [op.bytes_read + op.bytes_written for op, *_ in rows]})
    df = df.sort_values(["start_us", "op"], kind="stable").reset_index(drop=True)
    meta = {"t0_us": t0, "source": str(path), "kineto": str(kineto), "calls": len(calls),
            "left_out": len(calls) - len(kept), "gpu_run": gpu_run,
            "phases": {p: sum(op.attrs.get("phase") == p for op in graph.ops)
                       for p in ("forward", "backward", "optimizer")},
            "kernels": sum(len(c.kernels) for c in kept),
            "step": None if chosen is None else chosen.number, "steps": steps,
            "outside_step": every - len(calls)}
    meta["step_text"] = _step_text(chosen, steps, every - len(calls))
    meta["nothing_to_schedule"] = warn_nothing_to_schedule(graph, kineto, profile_alone=False)
    return Trace(df, graph=graph, policy="measured", device=gpu_name(data) if gpu_run else "cpu",
                 executor="measured", mode="eager", meta=meta)


def _step_text(chosen: Step | None, steps: list[int], outside: int) -> str:
    """One line: the step kept, of which, and the calls of the others left out."""
    if chosen is None:
        return "whole trace" + (f" ({len(steps)} steps merged: pick one with step=N / "
                                f"--step N)" if len(steps) > 1 else
                                f" (ProfilerStep#{steps[0]})" if steps else ", no ProfilerStep")
    state = "complete" if chosen.complete else \
        f"incomplete: {chosen.missing} launches without their kernel"
    return (f"ProfilerStep#{chosen.number} ({state}; steps {', '.join(map(str, steps))}); "
            f"{outside} calls outside it left out")


def _stream_of(ev: Mapping[str, Any]) -> int:
    for value in (args_of(ev).get("stream"), ev.get("tid")):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


__all__ = ["execution_graph", "load_execution_trace"]
