"""The torch executor's GPU paths that used to crash or mislead, reproduced on the CPU (issue 42).

* the TF32 switch read the legacy ``allow_tf32``, which raises once anything in the process set
  the precision API (``torch.backends.cuda.matmul.fp32_precision = "tf32"``);
* ``Event(enable_timing=True, external=True)`` raises ``TypeError`` on torch before 2.8;
* a failing capture raised the error of ending the broken capture, not its own;
* ``device="cuda"`` is not ``torch.device("cuda:0")``, the parameters' device (the model was
  copied, and verified against its copy);
* ``torch.cuda.Stream()`` hands out 32 streams per priority, so a schedule with more shared
  streams silently; now they are folded, validly, and said;
* a run had no way to stop its repeats at a deadline;
* every verified run of a built-in graph drew its weights twice.

CUDA is the recording fake of ``tests/test_torch_cuda_fake.py``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import workbench as wb
from tests.test_torch_cuda_fake import FakeCuda, FakeEvent, FakeGraph, ops_of, violations
from workbench.errors import OptionError
from workbench.executors.torch_exec import cuda as tcuda
from workbench.executors.torch_exec import runner
from workbench.executors.torch_exec.program import build_program

torch = pytest.importorskip("torch")
from tests.fake_cuda import on_the_runner  # noqa: E402 (imports torch)


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> FakeCuda:
    return on_the_runner(monkeypatch, FakeCuda())


def _transformer() -> wb.Graph:
    return wb.models.transformer_block(seq_len=8, d_model=16, heads=2, d_ff=32)


# ---------------------------------------------------------------------------- TF32 switches
@pytest.fixture
def precision_api() -> Iterator[list[tuple[Any, str]]]:
    """The precision API's switches, put back as they were after the test."""
    switches = runner.tf32_switches(torch)
    if switches is None:
        pytest.skip("this torch has no fp32_precision API")
    saved = [getattr(obj, attr) for obj, attr in switches]
    yield switches
    for (obj, attr), value in zip(switches, saved, strict=True):
        setattr(obj, attr, value)


def test_precision_flags_work_after_the_process_set_the_new_api(
        precision_api: list[tuple[Any, str]]) -> None:
    matmul = torch.backends.cuda.matmul
    matmul.fp32_precision = "tf32"  # what a user (or a library) does with torch >= 2.9
    with pytest.raises(RuntimeError, match="mix of the legacy and new APIs"):
        _ = matmul.allow_tf32  # what the switch used to read first
    conv = torch.backends.cudnn.conv.fp32_precision
    for precision, inside in (("fp32", "ieee"), ("tf32", "tf32")):
        with runner.precision_flags(precision):
            assert [getattr(o, a) for o, a in precision_api] == [inside] * 3
            assert torch.backends.cudnn.benchmark is False
        assert matmul.fp32_precision == "tf32" and torch.backends.cudnn.conv.fp32_precision == conv


def test_precision_flags_leave_legacy_readers_working(precision_api: list[tuple[Any, str]]) -> None:
    """A process that reads the legacy flags can still read them after a run (the new values
    are put back exactly, so the two APIs agree again)."""
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    for precision in ("fp32", "tf32"):
        with runner.precision_flags(precision):
            pass
        assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before


def test_a_run_under_the_new_api_does_not_crash(precision_api: list[tuple[Any, str]]) -> None:
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    trace = runner.run(wb.schedule(_transformer(), "nnc"), device="cpu", precision="tf32",
                       warmup=0, repeats=1, verify=True)
    assert trace.meta["verified"] and torch.backends.cuda.matmul.fp32_precision == "tf32"


def test_torch_without_the_precision_api_gets_the_legacy_flags() -> None:
    class Flags:
        allow_tf32 = False

    class OldTorch:  # torch 2.8 and before: no fp32_precision anywhere
        class backends:  # noqa: N801 - torch's names
            class cuda:  # noqa: N801
                matmul = Flags()

            cudnn = Flags()

    assert runner.tf32_switches(OldTorch) is None
    restore = runner._switch_tf32(OldTorch, True)
    assert OldTorch.backends.cuda.matmul.allow_tf32 and OldTorch.backends.cudnn.allow_tf32
    restore()
    assert not OldTorch.backends.cuda.matmul.allow_tf32 and not OldTorch.backends.cudnn.allow_tf32


# ---------------------------------------------------------------------------- external events
class NoExternalEvents(FakeCuda):
    """torch before 2.8: ``Event`` takes no ``external`` keyword."""

    def Event(self, enable_timing: bool = False, **kw: Any) -> FakeEvent:  # type: ignore[override]  # noqa: N802, E501
        if kw:
            raise TypeError(f"Event() got an unexpected keyword argument {next(iter(kw))!r}")
        return super().Event(enable_timing)


def _evaluator(graph: wb.Graph) -> Any:
    from workbench.executors.torch_exec.values import Evaluator, initial_tensors

    return Evaluator(graph, initial_tensors(graph, seed=0, inputs=None, device="cpu",
                                            precision="fp32"))


def test_graph_timing_without_external_events_falls_back_to_an_eager_timeline() -> None:
    sched = wb.schedule(_transformer(), "nnc")
    cuda = NoExternalEvents()
    rt = tcuda.Streams(cuda, build_program(sched))  # type: ignore[arg-type]
    timing, _ = tcuda.time_graph(rt, _evaluator(sched.graph), warmup=1, repeats=3)
    assert "eager run" in timing.timeline and "external" in str(
        timing.notes["graph_timeline_error"])
    assert len(timing.spans_us) == 3 and len(timing.end_us) == len(sched.issue_order)


def test_a_graph_mode_run_on_old_torch_does_not_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    on_the_runner(monkeypatch, NoExternalEvents())
    trace = runner.run(wb.schedule(_transformer(), "nnc"), mode="graph", warmup=1, repeats=2,
                       verify=True)
    assert trace.mode == "graph" and trace.meta["verified"]
    assert "external" in trace.meta["graph_timeline_error"]


# ---------------------------------------------------------------------------- failing captures
class BrokenCaptureEnd(FakeCuda):
    """Ending a capture that failed raises, as torch's ``capture_end`` does
    (``cudaErrorStreamCaptureInvalidated``)."""

    @contextmanager
    def graph(self, cuda_graph: FakeGraph, stream: Any = None) -> Iterator[None]:
        with super().graph(cuda_graph, stream):
            try:
                yield
            except Exception:
                raise RuntimeError("operation failed due to a previous error during capture") \
                    from None


class Failing:
    def __init__(self, op: str) -> None:
        self.op = op

    def start(self) -> None: ...

    def run_op(self, op: str) -> None:
        if op == self.op:
            raise ValueError(f"{op}: the model's own error")

    def outputs(self) -> dict[str, Any]:
        return {}

    def result(self) -> Any:
        return None

    def live_tensors(self) -> list[Any]:
        return []


def test_a_failing_capture_raises_its_own_error() -> None:
    sched = wb.schedule(_transformer(), "nnc")
    cuda = BrokenCaptureEnd()
    rt = tcuda.Streams(cuda, build_program(sched))
    op = sched.issue_order[3]
    with pytest.raises(ValueError, match="the model's own error") as err:
        tcuda.capture(rt, Failing(op))
    notes = getattr(err.value, "__notes__", [""])
    assert "previous error during capture" in notes[0] or not hasattr(err.value, "add_note")


# ---------------------------------------------------------------------------- devices
class SecondGpu(FakeCuda):
    def current_device(self) -> int:
        return 1


def test_cuda_is_the_current_device_with_its_index(fake_cuda: FakeCuda,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for given in ("cuda", "CUDA", torch.device("cuda"), None, "cuda:0"):
        dev, spec = runner.resolve_device(given)
        assert dev == "cuda:0" and spec is not None and spec.name == "h200"
        # the parameters' device: equal as devices, so the model is used, not copied
        assert torch.device(dev) == torch.device("cuda", 0)
    assert torch.device("cuda") != torch.device("cuda", 0)  # why the index is needed
    assert runner.resolve_device("cuda:3")[0] == "cuda:3"
    second = SecondGpu()
    monkeypatch.setattr(runner, "_cuda_api", lambda: second)
    assert runner.resolve_device("cuda")[0] == "cuda:1"
    with pytest.raises(OptionError, match="unknown device 'cuda:x'"):
        runner.resolve_device("cuda:x")


def test_a_traced_model_runs_its_own_module_on_cuda(fake_cuda: FakeCuda,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``device="cuda"`` the run and its check ask for the device with its index, so a
    model whose parameters are on ``cuda:0`` is run and checked as it is, never copied."""
    from workbench.io.torch.program import TorchProgram

    asked: list[Any] = []
    real = TorchProgram.module_on
    def where(device: str) -> str:
        asked.append(device)
        return "cpu"

    monkeypatch.setattr(runner, "_tensor_device", where)
    monkeypatch.setattr(TorchProgram, "module_on",
                        lambda self, device, dtype=None: real(self, device, dtype))
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = wb.io.from_torch(net.eval(), (torch.randn(3, 4),))
    runner.run(wb.schedule(graph, "nnc"), device="cuda", warmup=0, repeats=1, verify=True)
    assert asked and set(asked) == {"cuda:0"}


# ---------------------------------------------------------------------------- the stream pool
def _wide(n: int) -> wb.Schedule:
    edges = [("src", f"b{i}") for i in range(n)] + [(f"b{i}", "sink") for i in range(n)]
    sched = wb.schedule(wb.Graph.from_edges(edges), "nnc")
    assert sched.n_streams == n
    return sched


def test_more_streams_than_the_pool_gives_are_folded_validly_and_said() -> None:
    sched = _wide(40)
    cuda = FakeCuda()
    with pytest.warns(UserWarning, match="40 streams .* 9 of them share a CUDA stream"):
        rt = tcuda.Streams(cuda, build_program(sched))
    assert len(cuda.streams) == tcuda.STREAM_POOL and rt.folded == 9
    assert len(rt.distinct()) == tcuda.STREAM_POOL
    tcuda.issue(rt, lambda op: cuda.log.append(("op", cuda.current.id, op)))
    assert violations(cuda.log, sched) == []  # one CUDA stream keeps issue order: still valid
    assert [op for _, op in ops_of(cuda.log)] == list(sched.issue_order)


def test_a_schedule_within_the_pool_gets_a_stream_per_schedule_stream() -> None:
    sched = _wide(31)
    cuda = FakeCuda()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt = tcuda.Streams(cuda, build_program(sched))
    assert rt.folded == 0 and len({id(s) for s in rt.streams.values()}) == 31


def test_folding_puts_the_extra_streams_on_the_least_busy_ones() -> None:
    g = wb.Graph.from_edges([("a0", "a1"), ("a1", "a2"), ("b0", "b1"), ("c0", "c1"), ("d0", "d1")])
    sched = wb.Schedule(g, "hand", {0: ("a0", "a1", "a2"), 1: ("b0", "b1"), 2: ("c0", "c1"),
                                    3: ("d0", "d1")}, (),
                        ("a0", "b0", "c0", "d0", "a1", "b1", "c1", "d1", "a2"))
    home = tcuda.fold_streams(build_program(sched), 2)
    assert home[0] != home[1] and home[2] == home[1] and home[3] == home[0]


class PooledCuda(FakeCuda):
    """Streams with the handle of the pool slot they come from, as torch's do."""

    slot = 0

    def Stream(self) -> Any:  # noqa: N802
        s = super().Stream()
        s.cuda_stream = PooledCuda.slot % tcuda.STREAM_POOL  # type: ignore[attr-defined]
        PooledCuda.slot += 1
        return s


def test_two_live_programs_sharing_pool_streams_are_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tcuda, "_SAID", [])
    cuda = PooledCuda()
    first = tcuda.Streams(cuda, build_program(_wide(20)))
    with pytest.warns(UserWarning, match="also held by another live schedule"):
        second = tcuda.Streams(cuda, build_program(_wide(20)))
    assert second.shared_with_others == 2 * 21 - tcuda.STREAM_POOL
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        assert tcuda.Streams(cuda, build_program(_wide(20))).shared_with_others > 0
    assert tcuda.Streams(FakeCuda(), build_program(_wide(20))).shared_with_others == 0
    del first, second


# ---------------------------------------------------------------------------- deadlines
@pytest.mark.parametrize("where", ["cpu", "eager", "graph"])
def test_a_deadline_stops_the_timed_repeats(where: str, fake_cuda: FakeCuda) -> None:
    sched = wb.schedule(_transformer(), "nnc")
    kw: dict[str, Any] = ({"device": "cpu"} if where == "cpu" else {"mode": where})
    trace = runner.run(sched, warmup=0, repeats=50, deadline=time.perf_counter(), **kw)
    meta = trace.meta
    assert meta["stopped_at_deadline"] and meta["repeats_timed"] == 1
    assert len(meta["makespans_us"]) == 1
    full = runner.run(sched, warmup=0, repeats=4, deadline=time.perf_counter() + 600, **kw)
    assert "stopped_at_deadline" not in full.meta and len(full.meta["makespans_us"]) == 4


# ---------------------------------------------------------------------------- weights drawn once
def test_a_graphs_weights_are_drawn_once_for_its_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = runner.initial_tensors

    def counted(graph: wb.Graph, **kw: Any) -> Any:
        calls.append(graph.name)
        return real(graph, **kw)

    monkeypatch.setattr(runner, "initial_tensors", counted)
    monkeypatch.setattr(runner, "_DRAWN", type(runner._DRAWN)())
    graph = _transformer()
    for policy in ("nnc", "wavefront", "asap"):  # each verified against the serial run
        runner.run(wb.schedule(graph, policy), device="cpu", warmup=0, repeats=1, verify=True)
    assert calls == [graph.name]
    runner.run(wb.schedule(graph, "nnc"), device="cpu", precision="fp16", warmup=0, repeats=1)
    runner.run(wb.schedule(graph, "nnc"), device="cpu", seed=1, warmup=0, repeats=1)
    assert len(calls) == 3  # another precision or seed is another draw
    x = next(t.id for t in graph.tensors.values() if t.producer is None and t.role != "parameter")
    given = {x: real(graph, seed=5, inputs=None, device="cpu", precision="fp32")[x]}
    runner.run(wb.schedule(graph, "nnc"), device="cpu", inputs=given, warmup=0, repeats=1)
    assert len(calls) == 4  # given values are never cached
