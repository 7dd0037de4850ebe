"""Each rule of the strict fake ``torch.cuda`` (``tests/fake_cuda.py``) catches its bug (issue 42).

The real code runs on :class:`~tests.fake_cuda.StrictCuda` and is right: outputs equal the model's
for new inputs in both modes, no rule broken.  Then one line of the real code is removed or
changed (:func:`mutant`: the function's own source, edited and compiled, monkeypatched in), and
the rule that a GPU would break shows it:

===========================================  ====================================================
mutation (the real code)                     rule that catches it
===========================================  ====================================================
no wait before an op (``cuda.issue``)        race: a read not ordered after its write; values
no ``record_stream`` (``CallEvaluator``)     allocator: a block freed under a reader on another
                                             stream is handed out again on its own: race
no join at the end (``cuda.issue``)          capture: a side stream not joined at capture_end;
                                             eager: the caller's read of an output races
no copy-in (``ScheduledModule._run_cuda``)   replay reads the static inputs as they are: a new
                                             input gives the old outputs
no fork (``cuda.issue``)                     capture: work on a stream before it joined
join events not re-recorded (``join_all``)   capture: a wait on an event recorded outside it
``device_sync`` barrier under capture        capture: ``synchronize()`` refused
no replay of the timed graph (``time_graph``)  ``elapsed_time`` on events never run
no synchronize before reading (``run_outputs``)  asynchrony: the outputs are not computed yet
timing events not external (``_marks``)      capture: a timing event must be external
no folding (``STREAM_POOL`` unbounded)       pool: two schedule streams on one CUDA stream,
                                             unsaid
===========================================  ====================================================

plus the rules shown on the fake directly: ``.item()``, ``query()`` and pageable host copies
under capture, the 33rd stream, and the allocator's reuse with and without ``record_stream``.
"""

from __future__ import annotations

import inspect
import textwrap
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from tests.fake_cuda import POOL, CudaError, StrictCuda, on_the_runner  # noqa: E402
from tests.model_zoo import imported, new_inputs  # noqa: E402
from workbench.errors import WorkbenchError  # noqa: E402
from workbench.executors.torch_exec import calls, runner  # noqa: E402
from workbench.executors.torch_exec import cuda as tcuda  # noqa: E402
from workbench.executors.torch_exec.module import ScheduledModule  # noqa: E402
from workbench.executors.torch_exec.program import build_program  # noqa: E402


def mutant(func: Callable[..., Any], old: str, new: str = "pass") -> Callable[..., Any]:
    """``func`` compiled from its own source with the first ``old`` replaced by ``new`` (the
    test fails loudly if the line it mutates is no longer there)."""
    source = textwrap.dedent(inspect.getsource(func))
    assert old in source, f"{func.__qualname__} no longer has {old!r}: update the mutation"
    namespace = dict(func.__globals__)
    exec(compile(source.replace(old, new, 1), inspect.getsourcefile(func) or "<mutant>",
                 "exec"), namespace)
    return namespace[func.__name__]  # type: ignore[no-any-return]


def broken(match: str) -> Any:
    """``pytest.raises`` for a broken rule: the fake's CudaError, or the executor's one-line
    error carrying it (the torch forms report a failing op as an OptionError)."""
    return pytest.raises((CudaError, WorkbenchError), match=match)


@pytest.fixture
def strict(monkeypatch: pytest.MonkeyPatch) -> StrictCuda:
    """The runner's CUDA is a fresh strict fake (tensors on the CPU)."""
    return on_the_runner(monkeypatch, StrictCuda())


def _transformer() -> wb.Graph:
    return wb.models.transformer_block(seq_len=8, d_model=16, heads=2, d_ff=32)


def _leaves(value: Any) -> list[Any]:
    from torch.utils._pytree import tree_leaves

    return [v for v in tree_leaves(value) if isinstance(v, torch.Tensor)]


def _accelerated(name: str, policy: str, mode: str, cuda: StrictCuda, *, calls_: int = 3,
                 consume: bool = False) -> float:
    """``name`` under ``policy`` as a ScheduledModule on ``cuda``, called on ``calls_`` new
    inputs; the largest ``max |diff| / max |y|`` against the model.  ``consume``: the caller
    reads each output on its own stream (as code after the call would) before the host does."""
    model, example, graph = imported(name)
    sched = wb.schedule(graph, policy)
    got = []
    with cuda.running(), torch.no_grad():  # under grad mode a call runs the model itself
        fast = ScheduledModule(model, sched, example, device="cpu", mode=mode, cuda=cuda)
        for k in range(calls_):
            x = new_inputs(example, seed=k + 1)
            out = fast(*x)
            got.append((x, [t * 1 for t in _leaves(out)] if consume else _leaves(out)))
        cuda.synchronize()
    worst = 0.0
    with torch.no_grad():
        for x, outs in got:
            for a, b in zip(outs, _leaves(model(*x)), strict=True):
                if a.is_floating_point():
                    worst = max(worst, float((a - b).abs().max() / b.abs().max()))
                else:
                    worst = max(worst, float(not torch.equal(a, b)))
    return worst


# ---------------------------------------------------------------------------- the real code
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_the_executor_is_right_on_the_strict_fake(strict: StrictCuda, mode: str) -> None:
    sched = wb.schedule(_transformer(), "nnc")
    trace = runner.run(sched, mode=mode, warmup=1, repeats=3, verify=True)
    assert trace.meta["verified"] and strict.errors == [] and strict.pending() == 0
    assert trace.meta["makespan_median_us"] > 0 and trace.meta["peak_memory_bytes"] > 0


@pytest.mark.parametrize(("name", "policy"), [("inception", "nnc"), ("resnet", "min_streams"),
                                              ("bert", "asap"), ("gpt2", "critical_path")])
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_a_scheduled_model_is_right_for_new_inputs(name: str, policy: str, mode: str) -> None:
    cuda = StrictCuda()
    assert _accelerated(name, policy, mode, cuda, consume=True) <= 1e-5
    assert cuda.errors == []
    if mode == "graph":
        assert cuda.graphs[0].replays == 3


# ---------------------------------------------------------------------------- waits
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_a_missing_wait_is_a_race(strict: StrictCuda, monkeypatch: pytest.MonkeyPatch,
                                  mode: str) -> None:
    monkeypatch.setattr(tcuda, "issue", mutant(tcuda.issue, "st.wait_event(rt.sync[a])"))
    with pytest.raises(WorkbenchError, match="race: aten::.* reads a block that"):
        runner.run(wb.schedule(_transformer(), "nnc"), mode=mode, warmup=1, repeats=2,
                   verify=True)


# ---------------------------------------------------------------------------- record_stream
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_a_missing_record_stream_lets_the_allocator_overwrite_a_read(
        monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    assert _accelerated("resnet", "min_streams", mode, StrictCuda()) <= 1e-5
    monkeypatch.setattr(calls.CallEvaluator, "_record_uses", mutant(
        calls.CallEvaluator._record_uses, "self.streams.record_use(t, stream)"))
    cuda = StrictCuda()
    with pytest.raises(CudaError, match="race: a block handed out on .* writes a block that "
                                        "aten::.* on .* reads"):
        _accelerated("resnet", "min_streams", mode, cuda)


# ---------------------------------------------------------------------------- joins
def test_a_missing_join_leaves_a_side_stream_out_of_the_capture(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tcuda, "issue", mutant(tcuda.issue, "rt.join_all()"))
    with pytest.raises(CudaError, match="not joined back into the capture stream"):
        _accelerated("inception", "nnc", "graph", StrictCuda())


def test_a_missing_join_makes_the_callers_read_of_an_output_race(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _accelerated("inception", "nnc", "eager", StrictCuda(), consume=True) <= 1e-5
    monkeypatch.setattr(tcuda, "issue", mutant(tcuda.issue, "rt.join_all()"))
    with pytest.raises(CudaError, match="race: aten::mul on default stream reads"):
        _accelerated("inception", "nnc", "eager", StrictCuda(), consume=True)


# ---------------------------------------------------------------------------- copy-in
def test_a_replay_reads_the_static_inputs_as_the_copy_in_left_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Graph mode returns the model's outputs for each new input only because each call copies
    it into the captured static inputs; without the copy every call replays the example."""
    assert _accelerated("bert", "asap", "graph", StrictCuda()) <= 1e-5
    monkeypatch.setattr(ScheduledModule, "_run_cuda",
                        mutant(ScheduledModule._run_cuda, "static.copy_(value)"))
    assert _accelerated("bert", "asap", "graph", StrictCuda()) > 1e-2


# ---------------------------------------------------------------------------- capture membership
def test_work_on_a_stream_before_it_joined_the_capture_is_refused(
        strict: StrictCuda, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tcuda, "issue", mutant(tcuda.issue, "rt.fork_all(rt.fork)"))
    with broken("during the capture before the stream joined it"):
        runner.run(wb.schedule(_transformer(), "nnc"), mode="graph", warmup=1, repeats=1)


def test_a_wait_on_an_event_recorded_outside_the_capture_is_refused(
        strict: StrictCuda, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without recording the join events again, the capture stream waits on the ones the eager
    warm-up recorded."""
    monkeypatch.setattr(tcuda.Streams, "join_all",
                        mutant(tcuda.Streams.join_all, "self.joins[s].record(st)"))
    with broken("waits during the capture on event .*, recorded outside it"):
        runner.run(wb.schedule(_transformer(), "nnc"), mode="graph", warmup=1, repeats=1)


# ---------------------------------------------------------------------------- under capture
def test_a_device_synchronisation_under_capture_is_refused(
        strict: StrictCuda, monkeypatch: pytest.MonkeyPatch) -> None:
    sched = wb.schedule(_transformer(), "ios_greedy")
    assert sched.barrier_kind == "device_sync" and sched.n_barriers
    runner.run(sched, mode="graph", warmup=1, repeats=1, verify=True)  # joins under capture
    monkeypatch.setattr(tcuda, "issue", mutant(tcuda.issue, "rt.barrier(capturing=capturing)",
                                               "rt.barrier(capturing=False)"))
    with broken(r"synchronize\(\) is not permitted while a stream is capturing"):
        runner.run(sched, mode="graph", warmup=1, repeats=1)


def test_elapsed_time_of_events_captured_but_never_replayed_is_refused(
        strict: StrictCuda, monkeypatch: pytest.MonkeyPatch) -> None:
    """(The executor takes the refusal for a driver without timing events in graphs, and says
    what it was.)"""
    monkeypatch.setattr(tcuda, "time_graph",
                        mutant(tcuda.time_graph, "replay(rt, stamped)\n", "pass\n"))
    trace = runner.run(wb.schedule(_transformer(), "nnc"), mode="graph", warmup=1, repeats=2)
    assert "has not completed" in trace.meta["graph_timeline_error"]


def test_timing_events_in_a_capture_must_be_external(strict: StrictCuda,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tcuda, "_marks", mutant(tcuda._marks, '{"external": True}', "{}"))
    monkeypatch.setattr(tcuda, "time_graph", mutant(
        tcuda.time_graph, "origin = cuda.Event(enable_timing=True, external=True)",
        "origin = cuda.Event(enable_timing=True)"))
    trace = runner.run(wb.schedule(_transformer(), "nnc"), mode="graph", warmup=1, repeats=2)
    assert "must be external" in trace.meta["graph_timeline_error"]
    assert "eager run" in trace.meta["timeline"]


def test_host_reads_queries_and_pageable_copies_under_capture_are_refused() -> None:
    cuda = StrictCuda()
    side = cuda.Stream()
    with cuda.running():
        x = torch.ones(4) * 2  # a block on the default stream
        host = cuda.host(torch.arange(4.0))
        done = cuda.Event()
        done.record(cuda.current_stream())
        for what, call in (("a host read", lambda: x.sum().item()),
                           ("Event.query", lambda: done.query()),
                           ("pageable host memory", lambda: x.copy_(host)),
                           ("Stream.synchronize", lambda: side.synchronize())):
            g = cuda.CUDAGraph()
            with pytest.raises(CudaError, match=what), cuda.graph(g, stream=side):
                call()
        assert x.sum().item() == 8.0  # outside a capture: fine
        x.copy_(host)  # a pageable copy outside a capture: staged when issued
        host.add_(100)
        cuda.synchronize()
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


# ---------------------------------------------------------------------------- asynchrony
def test_outputs_read_without_a_synchronisation_are_not_computed_yet(
        strict: StrictCuda, monkeypatch: pytest.MonkeyPatch) -> None:
    sched = wb.schedule(_transformer(), "nnc")
    want = runner.run_outputs(sched, device="cpu")
    got = runner.run_outputs(sched, device="cuda")
    assert all(np.array_equal(got[t], want[t]) for t in want)
    issue = "cuda_run.issue(rt, evaluator.run_op)"
    monkeypatch.setattr(runner, "run_outputs", mutant(
        runner.run_outputs, f"{issue}\n                api.synchronize()", issue))
    got = runner.run_outputs(sched, device="cuda")
    assert all(np.isnan(got[t]).all() for t in want)  # never-written memory
    assert strict.pending() > 0


def test_queued_work_runs_only_when_waited_for_and_a_race_is_named() -> None:
    cuda = StrictCuda()
    a, b = cuda.Stream(), cuda.Stream()
    with cuda.running():
        with cuda.stream(a):
            x = torch.full((8,), 3.0)
        assert cuda.pending() == 1
        ready = cuda.Event()
        ready.record(a)
        b.wait_event(ready)
        with cuda.stream(b):
            y = x + 1  # ordered: fine
        b.synchronize()
        assert cuda.pending() == 0 and y.tolist() == [4.0] * 8
        with cuda.stream(a):
            z = torch.full((8,), 5.0)
        with cuda.stream(b), pytest.raises(CudaError, match="race: aten::add on pool stream "
                                                            "0/1 reads a block that "
                                                            "aten::full on pool stream 0/0"):
            _ = z + 1


# ---------------------------------------------------------------------------- the allocator
def test_a_freed_block_is_handed_out_again_at_once_on_its_stream_unless_recorded() -> None:
    cuda = StrictCuda()
    a, b = cuda.Stream(), cuda.Stream()
    with cuda.running():
        with cuda.stream(a):
            x = torch.full((256,), 1.0)
            done = cuda.Event()
            done.record(a)
        b.wait_event(done)
        with cuda.stream(b):
            y = x * 2  # b reads x; nothing orders a's later work after it
        ptr = x.untyped_storage().data_ptr()
        cuda.record_stream(x, b)
        del x
        with cuda.stream(a):
            kept = torch.zeros(256)  # b has not run its read: another block
        assert kept.untyped_storage().data_ptr() != ptr
        b.synchronize()  # now it has
        with cuda.stream(a):
            again = torch.zeros(256)
        assert again.untyped_storage().data_ptr() == ptr
        with cuda.stream(a):
            w = torch.full((256,), 1.0)
        b.wait_event(cuda.Event())  # (a wait on nothing orders nothing)
        ready = cuda.Event()
        ready.record(a)
        b.wait_event(ready)
        with cuda.stream(b):
            _ = w * 2
        ptr = w.untyped_storage().data_ptr()
        del w  # freed with no record_stream: handed out again at once on a ...
        with pytest.raises(CudaError, match="race: a block handed out"), cuda.stream(a):
            torch.zeros(256)  # ... while b may still read it
    assert y.tolist() == [2.0] * 256 and ptr in cuda.blocks


# ---------------------------------------------------------------------------- the stream pool
def test_the_33rd_stream_is_the_first_again() -> None:
    cuda = StrictCuda()
    streams = [cuda.Stream() for _ in range(POOL + 1)]
    assert streams[POOL] == streams[0] and streams[POOL].cuda_stream == streams[0].cuda_stream
    assert len({s.cuda_stream for s in streams}) == POOL
    assert cuda.Stream(priority=-1) != streams[1]


def _wide(n: int) -> wb.Schedule:
    edges = [("src", f"b{i}") for i in range(n)] + [(f"b{i}", "sink") for i in range(n)]
    return wb.schedule(wb.Graph.from_edges(edges), "nnc")


def _shares_unsaid(schedule: wb.Schedule) -> bool:
    """Whether two schedule streams run on one CUDA stream of the fake's pool without the
    executor saying so."""
    cuda = StrictCuda()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        rt = tcuda.Streams(cuda, build_program(schedule))
    objects = set(map(id, rt.streams.values()))
    handles = {st.cuda_stream for st in rt.streams.values()}
    return len(handles) < len(objects) or (rt.folded == 0 and len(handles) < len(rt.streams)
                                           and not said)


def test_schedules_never_share_a_pool_stream_unsaid(monkeypatch: pytest.MonkeyPatch) -> None:
    wide = _wide(40)
    assert not _shares_unsaid(wide)
    monkeypatch.setattr(tcuda, "STREAM_POOL", 10**6)  # no folding
    assert _shares_unsaid(wide)
