"""Training steps profiled on the CPU in the test (torch.profiler + ExecutionTraceObserver):
forward, backward (the autograd engine's functions) and optimizer ops import with their true
dependencies and costs, and the what-ifs of the measured step are bounded by its parallelism."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

import workbench as wb
from workbench.io import execution_graph, load_execution_trace

torch = pytest.importorskip("torch")
nn = torch.nn


def _profile(tmp: Path, name: str, model: Any, x: Any, loss: Any, *,
             optimizer: Callable[[Any], Any] | None = None, steps: int = 1) -> tuple[Path, Path]:
    """ET and Kineto trace of the steps after a first, unprofiled one (SGD with momentum unless
    ``optimizer`` makes another from the parameters); with ``steps`` > 1 each profiled step
    runs inside a ``record_function("## step k ##")`` scope."""
    from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile, record_function

    opt = (optimizer or (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)))(
        model.parameters())

    def step() -> None:
        opt.zero_grad()
        loss(model(x)).backward()
        opt.step()

    step()
    et, kineto = tmp / f"{name}_et.json", tmp / f"{name}_kineto.json"
    observer = ExecutionTraceObserver()
    observer.register_callback(str(et))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 execution_trace_observer=observer) as prof:
        for k in range(steps):
            if steps == 1:
                step()
                continue
            with record_function(f"## step {k} ##"):
                step()
    prof.export_chrome_trace(str(kineto))
    return et, kineto


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    torch.manual_seed(0)
    tmp = tmp_path_factory.mktemp("training")
    cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                        nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(8, 10))
    labels = torch.randint(0, 10, (4,))
    layer = nn.TransformerEncoderLayer(32, 2, 64, batch_first=True, dropout=0.0)
    transformer = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
    return {"cnn": _profile(tmp, "cnn", cnn, torch.randn(4, 3, 16, 16),
                            lambda out: nn.functional.cross_entropy(out, labels)),
            "transformer": _profile(tmp, "transformer", transformer, torch.randn(2, 8, 32),
                                    lambda out: out.pow(2).mean())}


def _digraph(g: wb.Graph) -> nx.DiGraph:
    d = nx.DiGraph(list(g.edges))
    d.add_nodes_from(g.op_ids)
    return d


@pytest.mark.parametrize("name", ["cnn", "transformer"])
def test_training_step_is_a_connected_dag_with_backward_costed(
        runs: dict[str, tuple[Path, Path]], name: str) -> None:
    trace = load_execution_trace(*runs[name])
    g = trace.graph
    phases = trace.meta["phases"]
    assert min(phases.values()) > 0, phases
    d = _digraph(g)
    assert nx.is_directed_acyclic_graph(d)
    main, *rest = sorted(nx.weakly_connected_components(d), key=len, reverse=True)
    # outside the one component: only in-place state updates nothing reads (BN's counter)
    for comp in rest:
        [op] = [g.op(o) for o in comp]
        assert op.kind == "add" and op.attrs["phase"] == "forward" and not d.out_degree(op.id)
    backward = [op for op in g.ops if op.attrs["phase"] == "backward"]
    assert all(op.attrs["grad_fn"] and op.kind for op in backward)
    heavy = [op for op in backward if op.kind in ("conv2d_backward", "matmul_backward")]
    assert heavy and all(op.flops > 0 for op in heavy)
    # every backward op reads something the forward or an earlier backward op made
    assert all(d.in_degree(op.id) > 0 for op in backward)
    # the optimizer's ops read the gradients
    optimizer = [op for op in g.ops if op.attrs["phase"] == "optimizer"]
    assert any(nx.has_path(d, b.id, o.id) for b in heavy for o in optimizer)


def test_conv_backward_flops_from_the_forward_shape_rules(
        runs: dict[str, tuple[Path, Path]]) -> None:
    """The ET alone (no times): the grad-input and grad-weight convolutions each cost the
    forward's FLOPs; the first convolution needs no grad-input (its input is data)."""
    g = execution_graph(runs["cnn"][0])
    conv = [op for op in g.ops if op.kind == "conv2d"]
    grads = [op for op in g.ops if op.kind == "conv2d_backward"]
    assert len(conv) == len(grads) == 2
    out_elements = 4 * 8 * 16 * 16
    # backward runs in reverse: grads[0] is the second convolution's
    assert grads[0].flops == pytest.approx(2 * conv[1].flops + out_elements)
    assert grads[1].flops == pytest.approx(conv[0].flops + out_elements)


@pytest.mark.parametrize("name", ["cnn", "transformer"])
def test_what_ifs_of_a_measured_step_are_bounded(runs: dict[str, tuple[Path, Path]],
                                                 name: str) -> None:
    trace = load_execution_trace(*runs[name])
    g = trace.graph
    policies = ["nnc", "asap", "critical_path", "gpto"]
    cmp = wb.compare(g, policies, measured=trace, show_progress=False)
    table = cmp.table.set_index("policy")
    work = sum(op.duration_us for op in g.ops)
    assert table.loc["serial", "makespan_us"] == pytest.approx(work, rel=0.25)
    # The bound in the simulator's own terms: each op's time in the serial run (its measured
    # duration plus the gap the device model puts before its first kernel) along the heaviest
    # path; no schedule runs an op faster than alone, so no speedup can pass busy / critical.
    serial = cmp.traces["serial"].df.set_index("op")
    busy = (serial["end_us"] - serial["start_us"]).to_dict()
    weighted = nx.DiGraph()
    weighted.add_nodes_from((o, {"w": busy[o]}) for o in g.op_ids)
    weighted.add_edges_from(g.edges)
    critical = _longest(weighted)
    bound = table.loc["serial", "makespan_us"] / critical
    assert bound <= work / _longest_of(g) * 1.05   # the gaps move the bound by under 5%
    for policy in policies:
        assert table.loc[policy, "speedup"] <= bound * (1 + 1e-6), policy
    assert table.loc["measured", "gpu"] == "cpu"


def _longest_of(g: wb.Graph) -> float:
    """The heaviest path of the graph's measured op durations."""
    weighted = nx.DiGraph()
    weighted.add_nodes_from((o, {"w": g.op(o).duration_us}) for o in g.op_ids)
    weighted.add_edges_from(g.edges)
    return _longest(weighted)


def _longest(d: nx.DiGraph) -> float:
    """The heaviest path's node weight (O(V + E))."""
    best: dict[Any, float] = {}
    for o in nx.topological_sort(d):
        best[o] = d.nodes[o]["w"] + max((best[p] for p in d.predecessors(o)), default=0.0)
    return max(best.values())
