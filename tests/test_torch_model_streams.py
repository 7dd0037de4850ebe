"""A traced model's own calls on a schedule's streams, driven on the CPU by the fake ``torch.cuda``.

:class:`~workbench.executors.torch_exec.calls.CallEvaluator` frees a value after its last reader
and records every read on a stream other than the one its storage was allocated on
(``record_stream``).  :func:`unprotected_frees` is an oracle of the caching allocator's rule,
independent of the evaluator's bookkeeping: it reads a log of calls (which storages each call
read and allocated, on which stream), ``record_stream`` calls and frees, and names every free of
a storage that a stream other than its own read without a recorded use before the free (a block
the allocator could hand out again while that stream still reads it).  The same runs are checked
for ordering by :func:`tests.test_torch_cuda_fake.violations`.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from tests.model_zoo import ZOO, new_inputs  # noqa: E402
from tests.test_torch_cuda_fake import (  # noqa: E402
    LAUNCH,
    FakeCuda,
    fake_cuda,  # noqa: F401 - the fixture: the runner on the fake CUDA
    violations,
)
from workbench.executors.torch_exec import cuda as tcuda  # noqa: E402
from workbench.executors.torch_exec import runner  # noqa: E402
from workbench.executors.torch_exec.calls import CallEvaluator  # noqa: E402
from workbench.executors.torch_exec.module import ScheduledModule  # noqa: E402
from workbench.executors.torch_exec.program import build_program  # noqa: E402
from workbench.schedulers import TEST_OPTIONS  # noqa: E402


def _ptrs(value: Any) -> frozenset[int]:
    from torch.utils._pytree import tree_leaves

    return frozenset(t.untyped_storage().data_ptr() for t in tree_leaves(value)
                     if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr())


def _imported(name: str) -> tuple[Any, tuple[Any, ...], wb.Graph]:
    model, example = ZOO[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # default-cost notes
        graph = wb.io.from_torch(model, example)
    return model, example, graph


def _instrumented(schedule: wb.Schedule, cuda: FakeCuda) -> tuple[tcuda.Streams, CallEvaluator]:
    """Streams and a call evaluator whose calls, ops and frees are logged in ``cuda.log``."""
    program = schedule.graph.program
    rt = tcuda.Streams(cuda, build_program(schedule))
    ev = CallEvaluator(schedule.graph, program, program.graph_inputs(program.example),
                       module=program.gm)
    ev.streams = rt
    original = program.call

    def call(module: Any, name: str, lookup: Any, device: Any = None) -> Any:
        reads = frozenset().union(*[_ptrs(lookup(a)) for a in program.args_of(name)])
        out = original(module, name, lookup, device)
        stream = rt.current.id if rt.current is not None else LAUNCH
        cuda.log.append(("call", stream, name, reads, _ptrs(out) - reads))
        return out

    program.call = call  # type: ignore[method-assign]
    run_op = ev.run_op

    def logged(op: str) -> None:
        cuda.log.append(("op", cuda.current.id, op))
        run_op(op)

    ev.run_op = logged  # type: ignore[method-assign]
    ev.on_release = lambda name, value: cuda.log.append(("free", name, _ptrs(value)))
    return rt, ev


def unprotected_frees(log: list[tuple[Any, ...]]) -> list[str]:
    """Frees of a storage read by a stream other than the one that allocated it, with no
    ``record_stream`` of that stream logged before the free."""
    home: dict[int, int] = {}
    readers: dict[int, set[int]] = {}
    recorded: set[tuple[int, int]] = set()
    found = []
    for entry in log:
        if entry[0] == "call":
            _, stream, _, reads, allocated = entry
            for p in allocated:  # a new block (maybe at an old address): a fresh history
                home[p], readers[p] = stream, set()
                recorded = {r for r in recorded if r[0] != p}
            for p in reads:
                readers.setdefault(p, set()).add(stream)
        elif entry[0] == "record_stream":
            recorded.add((entry[1], entry[2]))
        elif entry[0] == "free":
            for p in entry[2]:
                if p not in home:
                    continue  # an input or a parameter: not the run's to free
                found += [f"{entry[1]}: freed while stream {s} may still read it"
                          for s in sorted(readers[p] - {home[p]}) if (p, s) not in recorded]
    return found


def _cross_stream_frees(log: list[tuple[Any, ...]]) -> int:
    """How many frees release a storage some other stream read (the protection matters)."""
    home: dict[int, int] = {}
    readers: dict[int, set[int]] = {}
    n = 0
    for entry in log:
        if entry[0] == "call":
            for p in entry[4]:
                home[p], readers[p] = entry[1], set()
            for p in entry[3]:
                readers.setdefault(p, set()).add(entry[1])
        elif entry[0] == "free":
            n += any(p in home and readers[p] - {home[p]} for p in entry[2])
    return n


CASES = [("inception", "nnc"), ("inception", "wavefront"), ("bert", "asap"),
         ("resnet", "min_streams"), ("shufflenet", "gpto"), ("vit", "wavefront"),
         ("t5", "nnc"), ("gpt2", "critical_path")]


@pytest.mark.parametrize(("model", "policy"), CASES)
def test_values_read_on_other_streams_are_recorded_before_they_are_freed(
        model: str, policy: str) -> None:
    _, _, graph = _imported(model)
    sched = wb.schedule(graph, policy, **TEST_OPTIONS.get(policy, {}))
    assert sched.n_streams > 1
    cuda = FakeCuda()
    rt, ev = _instrumented(sched, cuda)
    tcuda.issue(rt, ev.run_op)
    assert violations(cuda.log, sched) == []
    assert _cross_stream_frees(cuda.log) > 0, "no value crosses streams: the case tests nothing"
    assert unprotected_frees(cuda.log) == []


def test_without_record_stream_a_freed_value_may_be_reused_under_a_reader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, graph = _imported("inception")
    sched = wb.schedule(graph, "nnc")
    cuda = FakeCuda()
    monkeypatch.setattr(tcuda.Streams, "record_use", lambda self, tensor, stream: None)
    rt, ev = _instrumented(sched, cuda)
    tcuda.issue(rt, ev.run_op)
    found = unprotected_frees(cuda.log)
    assert found and "may still read it" in found[0]


def test_values_are_freed_after_their_last_reader_and_outputs_kept() -> None:
    model, example, graph = _imported("resnet")
    sched = wb.schedule(graph, "nnc")
    cuda = FakeCuda()
    rt, ev = _instrumented(sched, cuda)
    tcuda.issue(rt, ev.run_op)
    freed = {e[1] for e in cuda.log if e[0] == "free"}
    outputs = {graph.tensor(t).producer for t in graph.outputs}
    assert freed and not freed & outputs
    live = {n for n in ev.env if n in graph}  # op values still held after the run
    assert live == outputs
    with torch.no_grad():
        assert torch.equal(ev.result(), model(*example))


@pytest.mark.usefixtures("fake_cuda")
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_a_run_on_the_fake_gpu_computes_the_model_with_its_inputs(mode: str) -> None:
    model, example, graph = _imported("bert")
    sched = wb.schedule(graph, "nnc")
    fresh = new_inputs(example)
    trace = runner.run(sched, mode=mode, warmup=1, repeats=2, verify=True, inputs=fresh,
                       return_outputs=True)
    assert trace.meta["verified"] and trace.meta["max_rel_diff"] <= 1e-4
    assert "the model's own" in trace.meta["weights"] and trace.meta["inputs"] == "given"
    with torch.no_grad():
        want = model(*fresh)
    got = trace.meta["outputs"]
    assert isinstance(got, tuple) and len(got) == 2
    for a, b in zip(got, want, strict=True):
        assert torch.equal(a, b)


def test_scheduled_module_orders_each_call_after_the_caller_and_before_its_next_work() -> None:
    model, example, graph = _imported("inception")
    sched = wb.schedule(graph, "nnc")
    cuda = FakeCuda()
    fast = ScheduledModule(model, sched, example, device="cpu", mode="eager", cuda=cuda)
    caller = cuda.current.id
    fresh = new_inputs(example)
    start = len(cuda.log)
    with torch.no_grad():
        got, want = fast(*fresh), model(*fresh)
    assert torch.equal(got, want)
    log = cuda.log[start:]
    launch = fast._streams.launch.id
    assert log[0] == ("wait_stream", launch, caller)
    assert ("wait_stream", caller, launch) in log
    after = log.index(("wait_stream", caller, launch))
    assert all(e[0] != "op" for e in log[after:])
    assert any(e[0] == "record_stream" and e[2] == caller for e in log[after:])


def test_scheduled_module_in_graph_mode_captures_once_and_replays_between_the_waits() -> None:
    model, example, graph = _imported("resnet")
    sched = wb.schedule(graph, "nnc")
    cuda = FakeCuda()
    fast = ScheduledModule(model, sched, example, device="cpu", mode="graph", cuda=cuda)
    assert fast.mode == "graph"
    assert sum(e[0] == "capture_begin" for e in cuda.log) == 1
    caller = cuda.current.id
    launch = fast._streams.launch.id
    start = len(cuda.log)
    with torch.no_grad():
        fast(*new_inputs(example))
    log = cuda.log[start:]
    replay = next(i for i, e in enumerate(log) if e[0] == "replay")
    assert log[replay][1] == launch
    assert log.index(("wait_stream", launch, caller)) < replay
    assert log.index(("wait_stream", caller, launch)) > replay
    assert not any(e[0] == "op" for e in log)  # nothing issued again: the graph replays


def test_scheduled_module_runs_the_model_itself_for_other_shapes() -> None:
    model, example, graph = _imported("resnet")
    fast = ScheduledModule(model, wb.schedule(graph, "serial"), example, device="cpu")
    other = (torch.randn(3, 3, 16, 16),)
    with pytest.warns(UserWarning, match="differ from the example"), torch.no_grad():
        got = fast(*other)
    with torch.no_grad():
        assert torch.equal(got, model(*other))
