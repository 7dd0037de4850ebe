"""Training steps profiled on the CPU (SGD with momentum, AdamW, Adam; AdamW's foreach form):
the optimizer's reads of ``.grad`` come after the gradients are made, its in-place updates
after the backward reads of the parameters and before the next step's forward.

AccumulateGrad installs a parameter's gradient as ``.grad`` through an ``aten::detach`` nested
in its ``torch::autograd::AccumulateGrad`` record: a new tensor id on the gradient's storage.
The optimizer reads that tensor, so an importer that links ops by exact tensor ids alone cuts
the optimizer off from the backward pass.  The oracle here reads the raw execution trace
(which ``.grad`` each AccumulateGrad installs, which op last wrote its storage before, which
optimizer calls read it, which tensors they update in place), apart from the importer's own
bookkeeping.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

import workbench as wb
from tests.test_training_profiles import _digraph, _profile
from workbench.io import load_execution_trace

torch = pytest.importorskip("torch")
nn = torch.nn

ACCUMULATE = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"
BACKWARD = "autograd::engine::evaluate_function: "
STEP = "Optimizer.step#"
Nodes = Mapping[int, Mapping[str, Any]]


def _cnn() -> tuple[Any, Any, Callable[[Any], Any]]:
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, padding=1, stride=2), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
    labels = torch.randint(0, 10, (2,))
    return model, torch.randn(2, 3, 16, 16), lambda out: nn.functional.cross_entropy(out, labels)


def _transformer() -> tuple[Any, Any, Callable[[Any], Any]]:
    layer = nn.TransformerEncoderLayer(32, 2, 64, batch_first=True, dropout=0.0)
    model = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
    return model, torch.randn(2, 8, 32), lambda out: out.pow(2).mean()


RUNS: dict[str, tuple[Callable[[], Any], Callable[[Any], Any], int]] = {
    "sgd_momentum_cnn": (_cnn, lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), 1),
    "adamw_transformer": (_transformer, lambda ps: torch.optim.AdamW(ps, lr=1e-3), 1),
    "adam_transformer": (_transformer, lambda ps: torch.optim.Adam(ps, lr=1e-3), 1),
    "sgd_momentum_cnn_two_steps": (_cnn, lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
                                   2),
    # the foreach form (the default on GPUs): in-place list ops that return nothing
    "adamw_foreach_transformer_two_steps": (
        _transformer, lambda ps: torch.optim.AdamW(ps, lr=1e-3, foreach=True), 2),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    tmp = tmp_path_factory.mktemp("optimizer_alias")
    out = {}
    for name, (make, optimizer, steps) in RUNS.items():
        torch.manual_seed(0)
        model, x, loss = make()
        out[name] = _profile(tmp, name, model, x, loss, optimizer=optimizer, steps=steps)
    return out


# ================================================================================ the oracle
Arg = tuple[int, int, int, int]  # tensor id, storage id, elements, element size


def _refs(values: Any) -> Iterator[Arg]:
    """Every tensor in an ET argument list."""
    if isinstance(values, list) and len(values) == 6 and isinstance(values[5], str) and all(
            isinstance(v, int) for v in values[:5]):
        yield values[0], values[1], values[3], values[4]
    elif isinstance(values, list):
        for v in values:
            yield from _refs(v)


def _args(node: Mapping[str, Any], side: str) -> list[Arg]:
    args = node.get(side)
    return list(_refs(args.get("values") if isinstance(args, dict) else args))


def _io(node: Mapping[str, Any], side: str) -> list[tuple[int, int]]:
    """(tensor id, storage id) of a node's inputs or outputs."""
    return [(tid, sid) for tid, sid, _, _ in _args(node, side)]


def _ancestors(nid: int, nodes: Nodes) -> Iterator[int]:
    seen = {nid}
    cur = nodes[nid].get("ctrl_deps")
    while isinstance(cur, int) and cur in nodes and cur not in seen:
        yield cur
        seen.add(cur)
        cur = nodes[cur].get("ctrl_deps")


def _scope(nid: int, nodes: Nodes, prefix: str) -> int | None:
    """The outermost node at or above ``nid`` whose name starts with ``prefix``."""
    found = None
    for a in (nid, *_ancestors(nid, nodes)):
        if str(nodes[a].get("name", "")).startswith(prefix):
            found = a
    return found


@dataclass(frozen=True)
class GradRead:
    """An optimizer call (an op of the graph) that reads the ``.grad`` tensor AccumulateGrad
    installed on ``storage``; ``producer`` is the backward scope that last wrote that storage
    before."""

    reader: int
    accumulate: int
    producer: int
    storage: int


def _grad_reads(et: Path, graph: wb.Graph) -> list[GradRead]:
    """Every (optimizer op, gradient) read, walking the raw trace in node order: the calls in
    an AccumulateGrad scope make the ``.grad`` tensor (``detach``, or ``add_`` into the old
    one) on the gradient's storage, which the backward scope that last wrote that storage
    made; an optimizer call reading that very tensor (ids, elements, element size) reads the
    gradient, until another call writes the storage."""
    nodes = {n["id"]: n for n in json.loads(et.read_text())["nodes"]}
    ops = {op.attrs["et_node"] for op in graph.ops}
    installed: dict[Arg, tuple[int, int]] = {}  # .grad -> (AccumulateGrad, producer)
    writer: dict[int, int | None] = {}          # storage id -> last backward scope writing it
    out = []
    for nid in sorted(nodes):
        top = _scope(nid, nodes, BACKWARD)
        if nid in ops and _scope(nid, nodes, STEP) is not None:
            for arg in sorted(set(_args(nodes[nid], "inputs")) & set(installed)):
                out.append(GradRead(nid, *installed[arg], arg[1]))
        if top is not None and str(nodes[top]["name"]) == ACCUMULATE:
            for arg in _args(nodes[nid], "outputs"):
                made_by = writer.get(arg[1])
                if made_by is not None:
                    installed[arg] = (top, made_by)
            continue
        for _, sid in _io(nodes[nid], "outputs"):
            writer[sid] = top
            for arg in [a for a in installed if a[1] == sid]:
                del installed[arg]
    return out


def _op_of(graph: wb.Graph) -> dict[int, str]:
    return {op.attrs["et_node"]: op.id for op in graph.ops}


def _missing(graph: wb.Graph, reads: list[GradRead]) -> list[tuple[str, str]]:
    """(AccumulateGrad op, optimizer op) pairs with no path between them."""
    d, op_of = _digraph(graph), _op_of(graph)
    return [(op_of[r.accumulate], op_of[r.reader]) for r in reads
            if not nx.has_path(d, op_of[r.accumulate], op_of[r.reader])]


def _step_of(et: Path) -> Callable[[int], int]:
    """ET node id -> the profiled step it ran in (by the ``## step k ##`` marks)."""
    nodes = json.loads(et.read_text())["nodes"]
    marks = sorted(n["id"] for n in nodes if str(n.get("name")).startswith("## step "))
    return lambda nid: sum(nid > m for m in marks[1:])


def _keys_read(nid: int, nodes: Nodes, children: Mapping[int, list[int]]) -> set[tuple[int, int]]:
    """(tensor id, storage id) of what node ``nid`` and the calls nested in it read."""
    out: set[tuple[int, int]] = set()
    stack = [nid]
    while stack:
        c = stack.pop()
        out |= set(_io(nodes[c], "inputs"))
        stack.extend(children.get(c, []))
    return out


def _updates(et: Path, graph: wb.Graph) -> list[tuple[int, tuple[int, int]]]:
    """(optimizer op's ET node, tensor) for each tensor an in-place optimizer call writes: the
    ``self`` argument (a tensor, or a foreach op's list) of an ``aten::*_`` call."""
    nodes = {n["id"]: n for n in json.loads(et.read_text())["nodes"]}
    out: list[tuple[int, tuple[int, int]]] = []
    for op in graph.ops:
        nid = op.attrs["et_node"]
        if _scope(nid, nodes, STEP) is None or not str(nodes[nid]["name"]).endswith("_"):
            continue
        selves = {(a[0], a[1]) for a in _refs(nodes[nid]["inputs"]["values"][:1])}
        out.extend((nid, key) for key in sorted(selves))
    return out


ONE_STEP = ["sgd_momentum_cnn", "adamw_transformer", "adam_transformer"]
TWO_STEPS = ["sgd_momentum_cnn_two_steps", "adamw_foreach_transformer_two_steps"]


# ================================================================================ the tests
@pytest.mark.parametrize("name", ONE_STEP + TWO_STEPS)
def test_optimizer_reads_of_grad_follow_accumulate_grad(
        runs: dict[str, tuple[Path, Path]], name: str) -> None:
    et, kineto = runs[name]
    g = load_execution_trace(et, kineto).graph
    reads = _grad_reads(et, g)
    op_of = _op_of(g)
    accumulate = {op.id for op in g.ops if op.attrs.get("grad_fn") == "AccumulateGrad"}
    assert accumulate and {op_of[r.accumulate] for r in reads} == accumulate
    assert not _missing(g, reads)
    d = _digraph(g)
    assert [a for a in sorted(accumulate) if not d.out_degree(a)] == []
    # ... and the AccumulateGrad after the backward op that made the gradient
    assert all(nx.has_path(d, op_of[r.producer], op_of[r.accumulate]) for r in reads)


@pytest.mark.parametrize("name", ONE_STEP + TWO_STEPS)
def test_what_if_optimizer_waits_for_its_gradients(
        runs: dict[str, tuple[Path, Path]], name: str) -> None:
    et, kineto = runs[name]
    g = load_execution_trace(et, kineto).graph
    t = wb.simulate(wb.schedule(g, "nnc"), device="h100").df.set_index("op")
    op_of = _op_of(g)
    early = [(op_of[r.reader], float(t.loc[op_of[r.reader], "start_us"]), op_of[r.producer],
              float(t.loc[op_of[r.producer], "end_us"])) for r in _grad_reads(et, g)
             if t.loc[op_of[r.reader], "start_us"] < t.loc[op_of[r.producer], "end_us"] - 1e-9]
    assert early == []


@pytest.mark.parametrize("name", TWO_STEPS)
def test_two_steps_link_each_step_to_its_own_gradients(
        runs: dict[str, tuple[Path, Path]], name: str) -> None:
    """Each step's optimizer reads its own step's gradients; no edge from a step's backward
    into the next step, although the next step's gradients may reuse the freed storages."""
    et, kineto = runs[name]
    g = load_execution_trace(et, kineto).graph
    step_of = _step_of(et)

    def step(op: str) -> int:
        return step_of(g.op(op).attrs["et_node"])

    reads = _grad_reads(et, g)
    op_of = _op_of(g)
    assert {step(op_of[r.reader]) for r in reads} == {0, 1}
    for r in reads:
        assert step(op_of[r.accumulate]) == step(op_of[r.reader]) == step(op_of[r.producer])
    phase = {op.id: op.attrs["phase"] for op in g.ops}
    crossing = [(a, b) for a, b in g.edges if step(a) == 0 and step(b) == 1]
    assert crossing and all(phase[a] != "backward" for a, _ in crossing), crossing


@pytest.mark.parametrize("name", TWO_STEPS)
def test_parameter_updates_after_backward_reads_before_next_step(
        runs: dict[str, tuple[Path, Path]], name: str) -> None:
    """An optimizer op updating a parameter in place runs after the backward ops of its step
    that read the parameter (through any view), and before the next step's forward ops that
    read it.  Parameters: the tensors both steps' forward ops read that the first step's
    optimizer writes (alive throughout, so their storages are never reused)."""
    et, kineto = runs[name]
    g = load_execution_trace(et, kineto).graph
    nodes = {n["id"]: n for n in json.loads(et.read_text())["nodes"]}
    children: dict[int, list[int]] = {}
    for n in nodes.values():
        if isinstance(n.get("ctrl_deps"), int) and n["ctrl_deps"] != n["id"]:
            children.setdefault(n["ctrl_deps"], []).append(n["id"])
    step_of, op_of, d = _step_of(et), _op_of(g), _digraph(g)

    def step(op: str) -> int:
        return step_of(g.op(op).attrs["et_node"])

    reads = {op.id: _keys_read(op.attrs["et_node"], nodes, children) for op in g.ops}
    phase = {op.id: op.attrs["phase"] for op in g.ops}
    forward = [set().union(*(reads[o] for o in reads if phase[o] == "forward" and step(o) == k))
               for k in (0, 1)]
    updates = [(op_of[nid], key) for nid, key in _updates(et, g)
               if step_of(nid) == 0 and key in forward[0] and key in forward[1]]
    assert len({key for _, key in updates}) >= 8, updates
    missing = []
    for w, (_, sid) in updates:
        for op, keys in reads.items():
            if sid not in {s for _, s in keys}:
                continue
            if phase[op] == "backward" and step(op) == 0 and not nx.has_path(d, op, w):
                missing.append((op, w, sid))
            if phase[op] == "forward" and step(op) == 1 and not nx.has_path(d, w, op):
                missing.append((w, op, sid))
    assert missing == []


def _as_gpu_run(et: Path, kineto: Path, out: Path) -> Path:
    """A Kineto trace of the same run as if on a GPU: one kernel per op of the CPU run, none
    for AccumulateGrad and views (as there: no device work, so the import leaves them out)."""
    g = load_execution_trace(et, kineto).graph
    nodes = {n["id"]: n for n in json.loads(et.read_text())["nodes"]}
    events: list[dict[str, Any]] = []
    for k, op in enumerate(g.ops):
        node = nodes[op.attrs["et_node"]]
        rf = next(a["value"] for a in node["attrs"] if a["name"] == "rf_id")
        events.append({"ph": "X", "cat": "cpu_op", "name": node["name"], "ts": 100.0 * k,
                       "dur": 50.0, "pid": 1, "tid": 1,
                       "args": {"Record function id": rf, "External id": k + 1}})
        if op.attrs.get("grad_fn") != "AccumulateGrad" and op.kind not in ("view", "detach"):
            events.append({"ph": "X", "cat": "kernel", "name": f"kernel_{k}",
                           "ts": 100.0 * k + 10, "dur": 20.0, "pid": 0, "tid": 7,
                           "args": {"External id": k + 1, "stream": 7}})
    out.write_text(json.dumps({"traceEvents": events}))
    return out


@pytest.mark.parametrize("name", ["sgd_momentum_cnn", "adamw_foreach_transformer_two_steps"])
def test_gpu_run_links_optimizer_to_the_backward_op_of_its_gradient(
        runs: dict[str, tuple[Path, Path]], name: str, tmp_path: Path) -> None:
    """Where AccumulateGrad launched no kernel it is left out, and the optimizer reads the
    gradient from the backward op that made it."""
    et, kineto = runs[name]
    trace = load_execution_trace(et, _as_gpu_run(et, kineto, tmp_path / "gpu_kineto.json"))
    g = trace.graph
    assert trace.meta["gpu_run"] and not any(
        op.attrs.get("grad_fn") == "AccumulateGrad" for op in g.ops)
    d, op_of = _digraph(g), _op_of(g)
    reads = _grad_reads(et, g)
    assert reads and all(nx.has_path(d, op_of[r.producer], op_of[r.reader]) for r in reads)
