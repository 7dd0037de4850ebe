"""The torch executor's replay of a recorded run on the CPU (issue 44): the same values as the
general run, freed at the same points, with counted work per op instead of per-call lookups.

:class:`~workbench.executors.torch_exec.calls.CallEvaluator` records its first complete CPU run
and replays it (:mod:`workbench.executors.torch_exec.replay`).  The oracle is the general path
itself, the one every other torch test checks against the model: a fresh evaluator's first run.
The work a replay does is counted with a profiler hook (``sys.setprofile``), not timed: per step
at most two Python frames of the workbench (the compiled call and a container it rebuilds), no
``TorchProgram.call``, no lookup function, no ``map_arg`` walk, no reader counts.
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from tests.model_zoo import ZOO, new_inputs  # noqa: E402
from workbench.errors import ScheduleError  # noqa: E402
from workbench.executors.torch_exec.calls import CallEvaluator  # noqa: E402
from workbench.executors.torch_exec.host import run_once  # noqa: E402
from workbench.executors.torch_exec.program import build_program  # noqa: E402
from workbench.io import from_torch  # noqa: E402

WORKBENCH = str(Path(wb.__file__).parent)


class _Imported(dict):  # type: ignore[type-arg]
    def __missing__(self, name: str) -> tuple[Any, tuple[Any, ...], wb.Graph]:
        model, example = ZOO[name]()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # default-cost notes
            self[name] = (model, example, from_torch(model, example))
        return self[name]


@pytest.fixture(scope="module")
def imported() -> _Imported:
    """Zoo models imported on first use, once per module."""
    return _Imported()


def _evaluator(graph: wb.Graph, inputs: tuple[Any, ...]) -> CallEvaluator:
    program = graph.program
    return CallEvaluator(graph, program, program.graph_inputs(inputs),
                         module=program.module_on("cpu"), device="cpu")


def _released_run(ev: CallEvaluator, issue: Any) -> tuple[list[tuple[str, Any]], Any]:
    """One run: every value freed (in order) and what the model returns."""
    freed: list[tuple[str, Any]] = []
    ev.on_release = lambda name, value: freed.append((name, value))
    run_once(issue, ev)
    ev.on_release = None
    return freed, ev.result()


def _same(a: Any, b: Any) -> bool:
    from torch.utils._pytree import tree_flatten

    la, sa = tree_flatten(a)
    lb, sb = tree_flatten(b)
    return sa == sb and all(
        torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y
        for x, y in zip(la, lb, strict=True))


@pytest.mark.parametrize("name", sorted(ZOO))
def test_a_replay_computes_and_frees_what_the_general_run_does(
        imported: _Imported, name: str) -> None:
    _, example, graph = imported[name]
    sched = wb.schedule(graph, "nnc")
    issue = build_program(sched)
    fresh = new_inputs(example)
    with torch.no_grad():
        ev = _evaluator(graph, example)
        general = _released_run(ev, issue)
        assert ev.plan is not None and ev.plan.ops == issue.ops
        ev.inputs = ev.program.graph_inputs(fresh)
        replayed = _released_run(ev, issue)
        reference = _released_run(_evaluator(graph, fresh), issue)
    assert [n for n, _ in general[0]] == [n for n, _ in replayed[0]]  # same frees, same order
    assert _same(replayed, reference)  # every freed value and the result, bitwise
    assert not _same(replayed[1], general[1])  # the new inputs reached the replay


def _frames_per_step(ev: CallEvaluator, issue: Any) -> tuple[Counter[str], Counter[str]]:
    """The Python functions of the workbench and of torch.fx a replay enters, and the C
    functions it calls by name."""
    py: Counter[str] = Counter()
    c: Counter[str] = Counter()

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            if code.co_filename.startswith(WORKBENCH) or "torch/fx" in code.co_filename:
                py[f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_name}"] += 1
        elif event == "c_call":
            c[getattr(arg, "__name__", "?")] += 1

    ev.start()
    sys.setprofile(hook)
    try:
        ev.run_ops(issue.ops)
    finally:
        sys.setprofile(None)
    return py, c


@pytest.mark.parametrize("name", ["resnet", "gpt2", "swin"])
def test_a_replay_does_counted_work_per_op(imported: _Imported, name: str) -> None:
    _, example, graph = imported[name]
    issue = build_program(wb.schedule(graph, "nnc"))
    with torch.no_grad():
        ev = _evaluator(graph, example)
        run_once(issue, ev)  # the recorded run
        py, c = _frames_per_step(ev, issue)
    assert ev.plan is not None
    n_steps = len(ev.plan.flat)
    general = {"program.py:call", "calls.py:_value", "calls.py:_call",
               "calls.py:_release_if_done", "calls.py:run_op", "program.py:args_of"}
    assert not general & set(py), py
    assert not [k for k in py if k.startswith(("node.py", "immutable_collections.py:map"))], py
    assert "_fx_map_arg" not in c and "map_arg" not in c
    assert sum(py.values()) <= 2 * n_steps + 3, py  # the closures, one run_ops, one loop


def test_an_op_out_of_the_recorded_order_leaves_the_replay_and_runs_right(
        imported: _Imported) -> None:
    _, example, graph = imported["inception"]
    first, other = (build_program(wb.schedule(graph, p)) for p in ("serial", "critical_path"))
    assert first.ops != other.ops
    with torch.no_grad():
        want = _released_run(_evaluator(graph, example), other)
        ev = _evaluator(graph, example)
        run_once(first, ev)
        recorded = ev.plan
        # replayed from op 0 while the orders agree, then the general path
        assert _same(_released_run(ev, other), want)
        assert ev.plan is None
        assert _same(_released_run(ev, other), want)  # recorded anew, for this order
        assert ev.plan is not None and ev.plan is not recorded and ev.plan.ops == other.ops
        assert _same(_released_run(ev, other), want)  # and replayed


def test_a_replayed_op_twice_is_refused_as_in_a_general_run(imported: _Imported) -> None:
    _, example, graph = imported["resnet"]
    issue = build_program(wb.schedule(graph, "serial"))
    with torch.no_grad():
        ev = _evaluator(graph, example)
        run_once(issue, ev)
        ev.start()
        ev.run_op(issue.ops[0])
        with pytest.raises(ScheduleError, match="runs twice"):
            ev.run_op(issue.ops[0])


def test_a_run_whose_replay_failed_must_start_again(imported: _Imported) -> None:
    _, example, graph = imported["resnet"]
    issue = build_program(wb.schedule(graph, "serial"))
    with torch.no_grad():
        ev = _evaluator(graph, example)
        run_once(issue, ev)
        good = ev.result()
        ev.inputs = {k: v[:, :2] for k, v in ev.inputs.items()}  # 2 channels, not 3
        with pytest.raises(RuntimeError):
            run_once(issue, ev)
        with pytest.raises(ScheduleError, match="start a new run"):
            ev.run_op(issue.ops[-1])
        ev.inputs = ev.program.graph_inputs(example)
        run_once(issue, ev)
        assert ev.plan is not None and _same(ev.result(), good)


class _Shapes(torch.nn.Module):
    """Calls whose arguments nest nodes in lists, tuples, slices and keywords, a method, a
    submodule, a buffer and a recorded device (traced by torch.fx, which keeps them)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((8,), 2.0))

    def forward(self, x: Any) -> Any:
        y = self.lin(x)
        z = torch.cat([x, y], dim=1)
        w = z.view(2, -1)[:, 1:x.size(1) + 3]  # a node inside a slice
        t = torch.stack((w, w * 2), dim=0)
        u = torch.add(torch.zeros(2, 6, device="cpu"), other=w)
        return {"t": t, "u": u.add(self.scale[:6], alpha=0.5)}


def test_every_compiled_call_equals_the_program_call() -> None:
    from workbench.executors.torch_exec.thunks import compile_call

    x = torch.randn(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = from_torch(_Shapes(), (x,), tracer="fx")
    program = graph.program
    env: dict[str, Any] = {"x": x}
    seen = Counter()
    with torch.no_grad():
        for node in program.gm.graph.nodes:
            if node.op in ("placeholder", "output"):
                continue
            want = program.call(program.gm, node.name, env.__getitem__, "cpu")
            got = compile_call(node, program.gm, "cpu")(env)
            assert type(got) is type(want)
            assert _same(got, want), node.name
            env[node.name] = want
            seen[node.op] += 1
    assert set(seen) == {"call_module", "call_function", "call_method", "get_attr"}, seen
