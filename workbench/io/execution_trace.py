"""PyTorch Execution Trace (``torch.profiler.ExecutionTraceObserver``) + its Kineto trace: a
recorded run as a Graph with its real data dependencies and measured costs, plus the measured
Trace, so the run can be rescheduled (``wb.compare(trace.graph, measured=trace)``).

The execution trace (Chakra's "host ET" schema) lists every operator call as a node with its
parent (``ctrl_deps``), its record-function id (attr ``rf_id``) and its tensor arguments, each
``[tensor id, storage id, offset, elements, element size, device]``.  From it:

* ops: the outermost operator calls (``aten::conv2d``, not the ``aten::convolution`` ->
  ``aten::_convolution`` calls inside it; record-function scopes around them are looked through),
  in the order they started (node id), named ``"<name>#<k>"`` as in
  :func:`~workbench.io.pytorch_profile.load_pytorch_trace`; kind, FLOPs and bytes from the
  torch.fx import's rules (:func:`workbench.io.fx.cost_of_call`), shapes on the tensors;
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
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from workbench.errors import FormatError
from workbench.io.et_autograd import (
    backward_kind,
    grad_fn_of,
    inner_calls,
    part_cost,
    phase_of,
    phases_below,
    scope_children,
    summed,
)
from workbench.io.pytorch_profile import GPU_CATEGORIES, gpu_name
from workbench.io.trace_events import args_of, duration, number, read_trace_json, trace_events
from workbench.values.graph import Graph, Op, Tensor
from workbench.values.shape_costs import ShapeCost, TensorInfo, default_cost
from workbench.values.trace import Trace

TensorKey = tuple[int, int]  # (tensor id, storage id)
Span = tuple[int, int]       # bytes [start, stop) of a storage


class _Ref(NamedTuple):
    """A tensor argument: its ids, shape, element size and the bytes of its storage it covers
    (from its storage offset and element count: the extent of a contiguous tensor; a strided
    view's last elements may lie past it)."""

    key: TensorKey
    shape: tuple[int, ...]
    itemsize: int
    span: Span


@dataclass
class _Call:
    """One outermost operator call of the execution trace."""

    node_id: int
    name: str
    rf_id: int | str | None
    ins: list[_Ref]
    outs: list[_Ref]
    values: list[Any]
    kernels: list[dict[str, Any]] = field(default_factory=list)
    host: dict[str, Any] | None = None
    phase: str = "forward"
    grad_fn: str | None = None
    parts: list[tuple[str, list[Any], list[Any], list[Any]]] = field(default_factory=list)
    mutated: set[TensorKey] = field(default_factory=set)  # the inputs it writes in place
    hidden: list[tuple[_Ref, bool]] = field(default_factory=list)  # nested writes (in place?)


# ================================================================================ the ET side
def _key(value: Any) -> int | str | None:
    """An id usable as a dict key (a corrupt file may hold lists or objects there)."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _attr(node: Mapping[str, Any], name: str) -> Any:
    attrs = node.get("attrs")
    for a in attrs if isinstance(attrs, list) else ():
        if isinstance(a, dict) and a.get("name") == name:
            return a.get("value")
    return None


def _is_operator(node: Mapping[str, Any]) -> bool:
    schema = _attr(node, "op_schema")
    name = str(node.get("name", ""))
    return bool(schema) or ("::" in name and not name.startswith("["))


def _tensors(values: Any, shapes: Any) -> Iterator[_Ref]:
    """Tensor references inside an argument list (nested lists of tensors too); an undefined
    tensor (``[id, 0, 0, 0, 0, ""]``: one id for all of them, no storage) is none."""
    if isinstance(values, list) and len(values) == 6 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in values[:5]) and isinstance(
            values[5], str):
        if values[1] == 0 and not values[5]:
            return
        shape = tuple(int(d) for d in shapes) if isinstance(shapes, list) and all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**31
            for d in shapes) else ()
        itemsize = min(max(1, values[4]), 16)
        offset, elements = values[2] * itemsize, max(0, values[3]) * itemsize
        yield _Ref((values[0], values[1]), shape, itemsize, (offset, offset + elements))
    elif isinstance(values, list):
        shapes = shapes if isinstance(shapes, list) and len(shapes) == len(values) else [
            None] * len(values)
        for v, s in zip(values, shapes, strict=True):
            yield from _tensors(v, s)


#: ET schema 1.0.x fields that later schemas (1.0.2+, Chakra's 1.1) moved into ``attrs``.
_OLD_ATTRS = ("rf_id", "op_schema", "fw_parent", "seq_id", "scope", "tid", "fw_tid")


def _normalise(node: dict[str, Any]) -> dict[str, Any]:
    """A node of any ET schema HTA reads in the 1.1 layout: schema 1.0.1 (PyTorch 2.0-2.1)
    keeps the parent in ``parent``, ``rf_id``/``op_schema`` at the top and ``inputs`` /
    ``input_shapes`` as parallel lists; later ones have ``ctrl_deps``, ``attrs`` and
    ``inputs: {values, shapes}``.  Nodes already in the new layout are returned as they are."""
    if "ctrl_deps" in node or "parent" not in node:
        return node
    attrs = [a for a in node.get("attrs", []) if isinstance(a, dict)] if isinstance(
        node.get("attrs"), list) else []
    attrs += [{"name": k, "value": node[k]} for k in _OLD_ATTRS if k in node]
    out = {**node, "ctrl_deps": node["parent"], "attrs": attrs}
    for side in ("input", "output"):
        values = node.get(f"{side}s")
        if isinstance(values, list):
            out[f"{side}s"] = {"values": values, "shapes": node.get(f"{side}_shapes"),
                               "types": node.get(f"{side}_types")}
    return out


def _below_operator(nodes: Mapping[int, Mapping[str, Any]]) -> dict[int, bool]:
    """Per node id: whether an operator is among its ``ctrl_deps`` ancestors (walked until a
    node repeats: the root names itself).  Memoised, so a 5,000-node chain costs O(V), not
    O(V²) (issue 27): ``above[n] = is_operator(parent) or above[parent]``; on a cycle every
    node's answer is whether another node of the cycle is an operator."""
    def parent(nid: int) -> int | None:
        p = nodes[nid].get("ctrl_deps")
        return p if isinstance(p, int) and not isinstance(p, bool) and p in nodes else None

    above: dict[int, bool] = {}
    for start in nodes:
        path: list[int] = []
        on_path: dict[int, int] = {}
        cur: int | None = start
        while cur is not None and cur not in above and cur not in on_path:
            on_path[cur] = len(path)
            path.append(cur)
            cur = parent(cur)
        if cur is not None and cur not in above:  # a cycle: path[on_path[cur]:]
            cycle = path[on_path[cur]:]
            ops = sum(_is_operator(nodes[c]) for c in cycle)
            for c in cycle:
                above[c] = ops - _is_operator(nodes[c]) > 0
            path = path[:on_path[cur]]
        for nid in reversed(path):
            p = parent(nid)
            above[nid] = p is not None and (_is_operator(nodes[p]) or above[p])
    return above


def _calls(data: Any, path: Path) -> list[_Call]:
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise FormatError(f"{path}: not a PyTorch execution trace (no 'nodes' list)")
    nodes = {n["id"]: _normalise(n) for n in data["nodes"] if isinstance(n, dict) and isinstance(
        n.get("id"), int)}
    below_operator = _below_operator(nodes)
    below = phases_below(nodes)
    children = scope_children(nodes)
    calls = []
    for nid in sorted(nodes):
        node = nodes[nid]
        if not _is_operator(node) or below_operator[nid]:
            continue
        t_in, t_out, mutated = _io(node)
        values = _args(node, "inputs").get("values")
        call = _Call(nid, str(node.get("name")), _key(_attr(node, "rf_id")), t_in, t_out,
                     values if isinstance(values, list) else [], mutated=mutated)
        call.grad_fn = grad_fn_of(call.name)
        call.phase = phase_of(nid, nodes, call.grad_fn is not None, below)
        if call.grad_fn is not None:
            _autograd_scope(call, [nodes[c] for c in inner_calls(nid, nodes, children,
                                                                 _is_operator)])
        call.hidden = _hidden_writes(nid, nodes, children, call.outs)
        calls.append(call)
    if not calls:
        raise FormatError(f"{path}: the execution trace records no operator calls")
    return calls


def _args(node: Mapping[str, Any], side: str) -> dict[str, Any]:
    args = node.get(side)
    return args if isinstance(args, dict) else {}


def _io(node: Mapping[str, Any]) -> tuple[list[_Ref], list[_Ref], set[TensorKey]]:
    """A call's tensor inputs, its outputs and the inputs it writes in place: those its
    ``op_schema`` marks ``(a!)`` (added to the outputs when it does not return them, as a
    foreach op's lists); without a schema, the outputs that are inputs."""
    ins, outs = _args(node, "inputs"), _args(node, "outputs")
    t_in = list(_tensors(ins.get("values"), ins.get("shapes")))
    t_out = list(_tensors(outs.get("values"), outs.get("shapes")))
    schema = _attr(node, "op_schema")
    if not isinstance(schema, str) or not schema:
        in_keys = {r.key for r in t_in}
        return t_in, t_out, {r.key for r in t_out if r.key in in_keys}
    values, shapes = ins.get("values"), ins.get("shapes")
    values = values if isinstance(values, list) else []
    shapes = shapes if isinstance(shapes, list) and len(shapes) == len(values) else [None] * len(
        values)
    written = {r.key: r for i in _mutated_args(schema) if i < len(values)
               for r in _tensors(values[i], shapes[i])}
    shown = {r.key for r in t_out}
    return t_in, t_out + [r for k, r in written.items() if k not in shown], set(written)


@lru_cache(maxsize=1024)
def _mutated_args(schema: str) -> tuple[int, ...]:
    """Positions of the arguments an operator schema marks as written (``Tensor(a!)``,
    ``Tensor(a!)[]``), counting the keyword-only ones after ``*`` as the trace lists them.

    >>> _mutated_args("aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1)"
    ...               " -> Tensor(a!)")
    (0,)
    >>> _mutated_args("aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, "
    ...               "ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)")
    (4,)
    """
    start = schema.find("(")
    args, depth, part = [], 0, ""
    for ch in schema[start + 1:] if start >= 0 else "":
        if ch in "([":
            depth += 1
        elif ch in ")]":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append(part.strip())
            part = ""
        else:
            part += ch
    args = [a for a in [*args, part.strip()] if a and a != "*"]
    return tuple(i for i, a in enumerate(args) if re.match(r"[\w.]+\(\w+!\)", a))


def _hidden_writes(nid: int, nodes: Mapping[int, Mapping[str, Any]],
                   children: Mapping[int, list[int]], shown: list[_Ref]) -> list[tuple[_Ref, bool]]:
    """What the calls nested in call ``nid`` wrote that its outputs ``shown`` leave out
    (batch norm's saved statistics and running stats, temporaries), in node order, each with
    whether the nested call wrote it in place: the storages they overwrite must not be linked
    to their earlier writers."""
    keys = {r.key for r in shown}
    found: list[tuple[int, _Ref, bool]] = []
    stack, seen = list(children.get(nid, [])), {nid}
    while stack:
        c = stack.pop()
        if c in seen:
            continue
        seen.add(c)
        stack.extend(children.get(c, []))
        _, outs, mutated = _io(nodes[c])
        found.extend((c, r, r.key in mutated) for r in outs if r.key not in keys)
    return [(r, m) for _, r, m in sorted(found, key=lambda f: f[0])]


def _autograd_scope(call: _Call, inner: list[Mapping[str, Any]]) -> None:
    """An autograd function's scope as one call (:mod:`workbench.io.et_autograd`): its inner
    calls as ``parts``; inputs: what they read that no earlier one wrote; outputs: what they
    wrote (the last value per tensor)."""
    written: dict[TensorKey, _Ref] = {}
    read: dict[TensorKey, _Ref] = {}
    call.mutated = set()
    for node in inner:
        t_in, t_out, mutated = _io(node)
        values = _args(node, "inputs").get("values")
        call.parts.append((str(node.get("name", "")).split("::", 1)[-1], t_in, t_out,
                           values if isinstance(values, list) else []))
        for t in t_in:
            if t.key not in written:
                read.setdefault(t.key, t)
        for t in t_out:
            written[t.key] = t
        call.mutated |= mutated
    call.ins, call.outs = list(read.values()), list(written.values())


# ================================================================================ the Kineto side
def _attach_kineto(calls: list[_Call], kineto: Path) -> tuple[bool, str]:
    """Attach host events and kernels to the calls; True when the run had GPU kernels."""
    data = read_trace_json(kineto)
    raw = trace_events(data, kineto)
    by_rf: dict[Any, _Call] = {c.rf_id: c for c in calls if c.rf_id is not None}
    # Kineto before PyTorch 2.1 has no "Record function id": its "External id" of a CPU op is
    # the record-function id (what HTA's ET correlation joins on for those traces)
    rf_key = "Record function id" if any(
        isinstance(ev, dict) and "Record function id" in args_of(ev) for ev in raw) \
        else "External id"
    host: list[tuple[Any, float, float, _Call]] = []  # (thread, ts, end, call)
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
            call = by_rf.get(_key(args.get(rf_key)))
            if call is not None and call.host is None:
                call.host = item
                host.append((item["thread"], ts, item["end"], call))
            if _key(args.get("External id")) is not None:
                by_external[args["External id"]] = item
        elif cat == "cuda_runtime" and _key(args.get("correlation")) is not None:
            runtime[args["correlation"]] = item
    if not any(c.host for c in calls):
        raise FormatError(f"{kineto}: no CPU op of this Kineto trace has a record-function id "
                          f"of the execution trace (are they from the same run?)")
    spans: dict[Any, list[tuple[float, float, _Call]]] = defaultdict(list)
    for thread, ts, end, call in host:
        spans[thread].append((ts, end, call))
    for lst in spans.values():
        lst.sort(key=lambda s: s[0])

    def enclosing(item: dict[str, Any] | None) -> _Call | None:
        if item is None:
            return None
        lst = spans.get(item["thread"], [])
        i = bisect.bisect_right([s[0] for s in lst], item["ts"]) - 1
        return lst[i][2] if i >= 0 and item["ts"] <= lst[i][1] else None

    for _, _, ev in sorted(kernels, key=lambda e: (e[0], e[1])):
        args = args_of(ev)
        call = enclosing(by_external.get(_key(args.get("External id")))) or enclosing(
            runtime.get(_key(args.get("correlation"))))
        if call is not None:
            call.kernels.append(ev)
    return bool(kernels), gpu_name(data)


# ================================================================================ the graph
class _Write(NamedTuple):
    """A write of a storage's bytes: the tensor written, the call, the graph tensors holding
    the value and the ops that wrote it; ``fresh``: a new allocation (:class:`_Values`)."""

    ref: _Ref
    call: int
    tids: list[str]
    writers: list[str]
    fresh: bool


@dataclass
class _Values:
    """Which graph tensors hold each ET tensor's value while the calls are walked in trace
    order (call ``n`` reads, then writes), by tensor id and through storage aliases (module
    docstring).  An output is written ``in_place`` (its tensor is an input), is an ``alias``
    (a new tensor on an input's storage: a view, ``.grad`` made by ``detach``; no bytes
    written) or ``fresh`` (new bytes: a new storage, or a freed one reused; a storage id is
    its allocation's address, so everything the storage held before is gone)."""

    tensors: dict[str, Tensor] = field(default_factory=dict)
    current: dict[TensorKey, list[str]] = field(default_factory=dict)  # key -> its value's tensors
    dated: dict[TensorKey, int] = field(default_factory=dict)  # key -> call its value dates from
    readers: dict[TensorKey, list[str]] = field(default_factory=lambda: defaultdict(list))
    # storage id -> its allocation's writes still visible, oldest first; the ops that read since
    writes: dict[int, list[_Write]] = field(default_factory=dict)
    reads: dict[int, list[tuple[Span, str]]] = field(default_factory=dict)

    def read(self, ref: _Ref, n: int) -> tuple[list[str], list[str]]:
        """The tensors holding ``ref``'s value, and the ops call ``n`` must follow for having
        written its bytes since through another tensor of the same allocation.

        A tensor id first seen here (a saved tensor unpacked, ``.grad``), or seen before its
        storage was allocated again, is read where the last writes of its bytes left them when
        one of those writes made a tensor of its element size that holds all of its bytes
        (else it is an allocation the trace does not show: an input of the graph, no edge)."""
        later = self._since(ref, self.dated.get(ref.key, n))
        if ref.key in self.current and not any(w.fresh for w in later):
            return self.current[ref.key], [op for w in later for op in w.writers]
        last = self._since(ref, -1)
        start, stop = ref.span
        if not any(w.ref.itemsize == ref.itemsize and w.ref.span[0] <= start
                   and stop <= w.ref.span[1] for w in last):
            last = []
        held = list(dict.fromkeys(t for w in last for t in w.tids))
        if not held:
            tid = f"t{ref.key[0]}.{ref.key[1]}"
            self.tensors[tid] = Tensor(tid, _size(ref.shape, ref.itemsize), role="input",
                                       shape=ref.shape, dtype=_dtype(ref.itemsize))
            held = [tid]
        self.current[ref.key], self.dated[ref.key] = held, n - 1
        return held, [op for w in last for op in w.writers]

    def hold(self, ref: _Ref, n: int, tids: list[str], how: str, writers: list[str]) -> None:
        """Call ``n`` (an op of ``writers``) leaves ``ref``'s value in ``tids`` (``how``: class
        docstring)."""
        self.current[ref.key], self.dated[ref.key] = list(tids), n
        self.hide(ref, n, how, writers, tids)

    def hide(self, ref: _Ref, n: int, how: str, writers: list[str],
             tids: list[str] | None = None) -> None:
        """Call ``n`` wrote ``ref`` (for :meth:`hold`, or inside a nested call, with no graph
        tensor holding it: its readers follow ``writers``)."""
        start, stop = ref.span
        if how == "alias" or start >= stop:
            return
        sid = ref.key[1]  # fresh: the storage's old writes are gone; in place: those it covers
        kept = [] if how == "fresh" else [w for w in self.writes.get(sid, []) if not
                                          start <= w.ref.span[0] <= w.ref.span[1] <= stop]
        self.writes[sid] = [*kept, _Write(ref, n, list(tids or []), list(writers),
                                          how == "fresh")]

    def overwrite(self, ref: _Ref, how: str) -> list[str]:
        """An op writes ``ref``: the ops that read the old bytes, which it must follow when
        it writes in place (a fresh value's bytes were free: their readers read a dead
        tensor, no edge).  Readers of the bytes written are forgotten."""
        start, stop = ref.span
        sid, key = ref.key[1], ref.key
        before, self.readers[key] = self.readers[key], []
        if how == "fresh" and start < stop:
            self.reads.pop(sid, None)
        if how != "in_place":
            return []
        old = self.reads.get(sid, [])
        self.reads[sid] = [(span, op) for span, op in old
                           if not start <= span[0] <= span[1] <= stop]
        return before + [op for (a, b), op in old if a < stop and start < b]

    def reader(self, ref: _Ref, op_id: str) -> None:
        """``op_id`` reads ``ref``."""
        self.readers[ref.key].append(op_id)
        if ref.span[0] < ref.span[1]:
            self.reads.setdefault(ref.key[1], []).append((ref.span, op_id))

    def _since(self, ref: _Ref, after: int) -> list[_Write]:
        """The writes of ``ref``'s bytes after call ``after`` still visible, oldest first."""
        start, stop = ref.span
        return [w for w in self.writes.get(ref.key[1], ())
                if w.call > after and w.ref.span[0] < stop and start < w.ref.span[1]]


def _how(ref: _Ref, call: _Call, mutated: bool) -> str:
    """How ``call`` writes ``ref`` (:class:`_Values`); ``mutated``: written in place."""
    if mutated:
        return "in_place"
    return "alias" if any(r.key[1] == ref.key[1] for r in call.ins) else "fresh"


def _graph_of(calls: list[_Call], name: str, gpu_run: bool,
              need_host: bool = False) -> tuple[Graph, list[_Call]]:
    """The ops, tensors and edges of the calls kept (module docstring); ``need_host`` (a CPU
    run with its Kineto trace) leaves out the calls the Kineto trace has no event for."""
    from workbench.io.fx import cost_of_call

    seen: dict[str, int] = {}
    ops: list[Op] = []
    kept: list[_Call] = []
    values = _Values()
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
        hidden = [(ref, _how(ref, call, mutated)) for ref, mutated in call.hidden]
        shown = [(ref, _how(ref, call, ref.key in call.mutated)) for ref in call.outs]
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
            tensors[tid] = Tensor(tid, _size(ref.shape, ref.itemsize), producer=op_id,
                                  shape=ref.shape, dtype=_dtype(ref.itemsize))
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


def _infos(refs: list[_Ref]) -> list[TensorInfo | None]:
    return [TensorInfo(r.shape, r.itemsize) if r.shape else None for r in refs]


def _size(shape: tuple[int, ...], itemsize: int) -> int:
    n = 1
    for d in shape:
        n *= max(0, d)
    return n * itemsize


def _dtype(itemsize: int) -> str:
    return {2: "float16", 8: "float64", 1: "uint8"}.get(itemsize, "float32")


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


def _measured(call: _Call, gpu_run: bool) -> float | None:
    if gpu_run:
        return sum(float(ev.get("dur", 0.0)) for ev in call.kernels)
    return None if call.host is None else call.host["end"] - call.host["ts"]


# ================================================================================ entry points
def execution_graph(path: str | Path, *, name: str | None = None) -> Graph:
    """The graph of an execution trace alone (no times: costs from the shape rules).  Every
    outermost call is an op on the device of its tensors' run (``gpu``)."""
    path = Path(path)
    calls = _calls(read_trace_json(path), path)
    for c in calls:
        c.kernels = [{}]  # keep every call: no Kineto trace tells which did device work
    graph, _ = _graph_of(calls, name or path.name.split(".")[0], gpu_run=True)
    return graph.replace(ops=[_unmeasured(op) for op in graph.ops])


def _unmeasured(op: Op) -> Op:
    from dataclasses import replace

    attrs = {k: v for k, v in op.attrs.items() if k != "kernels"}
    return replace(op, duration_us=None, thread_blocks=op.thread_blocks, attrs=attrs)


def load_execution_trace(path: str | Path, kineto: str | Path, *,
                         name: str | None = None) -> Trace:
    """The measured run of an execution trace and its Kineto trace (module docstring).

    Returns a :class:`~workbench.values.trace.Trace` (executor ``"measured"``, policy
    ``"measured"``)
    whose ``graph`` has the run's ops, data dependencies and measured ``duration_us``; time 0 is
    the first op's start.  ``meta`` counts the calls, the kernels and the calls left out.
    """
    path, kineto = Path(path), Path(kineto)
    calls = _calls(read_trace_json(path), path)
    gpu_run, gpu = _attach_kineto(calls, kineto)
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
            "kernels": sum(len(c.kernels) for c in kept)}
    return Trace(df, graph=graph, policy="measured", device=gpu if gpu_run else "cpu",
                 executor="measured", mode="eager", meta=meta)


def _stream_of(ev: Mapping[str, Any]) -> int:
    for value in (args_of(ev).get("stream"), ev.get("tid")):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


__all__ = ["execution_graph", "load_execution_trace"]
