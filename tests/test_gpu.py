"""The CuPy executor.

* ``@pytest.mark.gpu`` tests need a CUDA GPU (the conftest skips them otherwise): outputs of every
  policy on every built-in network equal the serial run's bitwise; hypothesis DAGs of spin
  kernels; a dropped sync caught on a graph built to expose it; graph mode equals eager mode;
  calibration round trip.
* Without a GPU: ``wb.execute(s, executor="cupy")`` raises a one-line DeviceUnavailable; and the
  real executor and graph-capture code run against :class:`FakeCuPy`, a small stand-in for the
  CuPy API surface they use (allocations with addresses, streams, events, stream capture with the
  CUDA membership rules, RawModule) whose kernels run the NumPy twins of
  :mod:`workbench.executors.gpu.reference` — so the issue loop, argument conversion, timing and
  trace code
  are exercised on every machine.
"""

from __future__ import annotations

import bisect
import sys
import types
from collections.abc import Iterator
from functools import cache
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from tests._schedules import drop_sync
from tests.strategies import dags
from workbench.executors import gpu
from workbench.executors.gpu import calibration as C
from workbench.executors.gpu import executor as E
from workbench.executors.gpu import kernels as K
from workbench.executors.gpu.emulator import TWINS, Memory, emulate_schedule
from workbench.executors.gpu.launch_plan import Ptr, build_launch_plan
from workbench.executors.gpu.reference import run_graph_reference
from workbench.executors.reference import outputs_of
from workbench.passes.fusion import fuse_elementwise
from workbench.schedulers import TEST_OPTIONS
from workbench.simulator import fidelity
from workbench.values.trace import TRACE_COLUMNS

NETWORKS = [name for name in wb.models.models() if wb.models.MODELS.get(name).family == "network"]


# =============================================================================== without a GPU
@pytest.mark.skipif(gpu.is_available(), reason="a GPU is present")
def test_execute_cupy_without_gpu_is_one_line() -> None:
    s = wb.schedule(wb.models.nnc_diamond(), "nnc")
    with pytest.raises(wb.DeviceUnavailable) as info:
        wb.execute(s, executor="cupy")
    message = str(info.value)
    assert "\n" not in message and "executor 'cupy' needs CuPy and a CUDA GPU" in message
    assert "simulator" in message


# =============================================================================== fake CuPy
class _Heap:
    """Fake device memory: allocations at distinct addresses."""

    def __init__(self) -> None:
        self.bases: list[int] = []
        self.buffers: dict[int, np.ndarray] = {}
        self.next = 1 << 32
        self.total = 0

    def alloc(self, nbytes: int) -> tuple[np.ndarray, int]:
        raw = np.zeros(max(8, nbytes), dtype=np.uint8)
        base = self.next
        self.next += (len(raw) + 4095) // 4096 * 4096 + 4096
        bisect.insort(self.bases, base)
        self.buffers[base] = raw
        self.total += len(raw)
        return raw, base

    def ptr(self, address: int) -> Ptr:
        if address == 0:
            return Ptr("null", 0)
        k = bisect.bisect_right(self.bases, address) - 1
        base = self.bases[k]
        assert address < base + len(self.buffers[base]), "pointer outside every allocation"
        return Ptr(base, address - base)  # type: ignore[arg-type]


class _Array:
    def __init__(self, a: np.ndarray, address: int) -> None:
        self.a, self.data = a, SimpleNamespace(ptr=address)

    @property
    def size(self) -> int:
        return int(self.a.size)

    def __getitem__(self, key: slice) -> _Array:
        start = key.start or 0
        return _Array(self.a[key], self.data.ptr + start * self.a.itemsize)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.a[key] = value.a if isinstance(value, _Array) else value

    def view(self, dtype: Any) -> _Array:
        return _Array(self.a.view(dtype), self.data.ptr)

    def fill(self, value: Any) -> None:
        self.a.fill(value)


class _AddrMemory(Memory):
    """The twins' Memory over the fake heap: pointer spaces are allocation bases, each one
    dense array (the heap's own buffers)."""

    def __init__(self, heap: _Heap) -> None:
        self.heap = heap
        self.spaces = heap.buffers

    def _floats(self, ptr: Any, count: int) -> Any:
        buf = self.spaces[ptr.space]
        assert ptr.offset % 4 == 0 and ptr.offset + 4 * count <= len(buf), (ptr, count)
        return buf[ptr.offset:ptr.offset + 4 * count].view(np.float32)

    def read(self, ptr: Any, count: int) -> Any:
        return np.array(self._floats(ptr, count), dtype=np.float32)

    def write(self, ptr: Any, values: Any, row_len: int = 0, row_stride: int = 0) -> None:
        flat = np.asarray(values, dtype=np.float32).reshape(-1)
        if flat.size == 0:
            return
        if not row_len or row_len == row_stride:
            self._floats(ptr, flat.size)[:] = flat
            return
        e = np.arange(flat.size)
        index = (e // row_len) * row_stride + e % row_len
        self._floats(ptr, int(index[-1]) + 1)[index] = flat

    def table(self, ptr: Any, count: int) -> list[Any]:
        raw = self.spaces[ptr.space][ptr.offset:ptr.offset + 8 * count].view(np.uint64)
        return [self.heap.ptr(int(v)) for v in raw]


class FakeCuPy(types.ModuleType):
    """Just enough of CuPy for workbench.executors.gpu.executor and graph_capture (API as in
    CuPy 14)."""

    uint8, uint64, float32 = np.uint8, np.uint64, np.float32
    __version__ = "fake-14"

    def __init__(self, fused: dict[str, Any]) -> None:
        super().__init__("cupy")
        heap = self.heap = _Heap()
        state = self.state = SimpleNamespace(clock=0, capture=None, current=None, launches=0)
        mem = _AddrMemory(heap)

        def tick() -> int:
            state.clock += 1
            return state.clock

        def execute(name: str, code: str, grid: Any, args: tuple[Any, ...]) -> None:
            params = K.parse_signatures(code)[name]
            assert len(params) == len(args), name
            named: dict[str, Any] = {}
            for p, v in zip(params, args, strict=True):
                assert isinstance(v, (np.generic,)), f"{name}.{p.name}: pass numpy scalars"
                expected = {"ptr": np.uint64, "i64": np.int64, "i32": np.int32,
                            "u64": np.uint64, "f32": np.float32}[p.type]
                assert type(v) is expected, f"{name}.{p.name}: {type(v).__name__}"
                named[p.name] = heap.ptr(int(v)) if p.type == "ptr" else v.item()
            tick()
            state.launches += 1
            if name == "stamp":
                mem._floats(named["slots"], 2 * (named["index"] + 1))  # bounds
                slots = heap.buffers[named["slots"].space][named["slots"].offset:].view(np.uint64)
                slots[named["index"]] = state.clock * 1000
                return
            call = SimpleNamespace(kernel=name, grid=tuple(grid) + (1,) * (3 - len(grid)),
                                   fused=fused.get(name))
            TWINS["fused" if call.fused is not None else name](mem, named, call)

        class Stream:
            null: Stream

            def __init__(self, null: bool = False, non_blocking: bool = False,
                         ptds: bool = False, priority: Any = None) -> None:
                self.non_blocking = non_blocking
                self._prev: list[Any] = []

            def use(self) -> Stream:
                state.current = self
                return self

            def __enter__(self) -> Stream:
                self._prev.append(state.current)
                state.current = self
                return self

            def __exit__(self, *exc: Any) -> None:
                state.current = self._prev.pop()

            def wait_event(self, event: Any) -> None:
                cap = state.capture
                if cap is not None and event in cap.events:
                    cap.members.add(self)

            def synchronize(self) -> None:
                assert state.capture is None, "synchronize during capture"

            def begin_capture(self, mode: Any = None) -> None:
                assert self.non_blocking, "capture needs a non-blocking stream"
                state.capture = SimpleNamespace(origin=self, members={self}, events=set(), ops=[])

            def end_capture(self) -> Any:
                cap, state.capture = state.capture, None
                assert cap is not None and cap.origin is self
                return Graph(cap.ops)

        Stream.null = Stream(null=True)

        class Event:
            def __init__(self, block: bool = False, disable_timing: bool = False,
                         interprocess: bool = False) -> None:
                self.disable_timing = disable_timing
                self.t: int | None = None

            def record(self, stream: Any = None) -> None:
                assert stream is not None, "always pass the stream (the NULL stream is default)"
                cap = state.capture
                if cap is not None:
                    assert stream in cap.members, "record on a stream outside the capture"
                    cap.events.add(self)
                    assert self.disable_timing, "timing events inside a graph cannot be read"
                    return
                self.t = tick()

            def synchronize(self) -> None:
                assert state.capture is None

        class Graph:
            def __init__(self, ops: list[Any]) -> None:
                self.ops = ops

            def upload(self, stream: Any = None) -> None:
                pass

            def launch(self, stream: Any = None) -> None:
                for op in self.ops:
                    execute(*op)

            def debug_dot_str(self, flags: int = 0) -> str:
                return "digraph {}"

        class Kernel:
            def __init__(self, name: str, code: str) -> None:
                self.name, self.code = name, code

            def __call__(self, grid: Any, block: Any, args: tuple[Any, ...], *,
                         shared_mem: int = 0) -> None:
                assert len(block) <= 3 and int(np.prod(block)) <= 1024
                cap = state.capture
                if cap is not None:
                    assert state.current in cap.members, "launch on a stream outside the capture"
                    cap.ops.append((self.name, self.code, grid, args))
                    return
                execute(self.name, self.code, grid, args)

        class RawModule:
            def __init__(self, code: str | None = None, *, path: str | None = None,
                         options: tuple[str, ...] = (), **kw: Any) -> None:
                assert "-std=c++17" in options and '#include "' not in (code or "")
                self.code = code or ""

            def get_function(self, name: str) -> Kernel:
                assert name in K.parse_signatures(self.code), name
                return Kernel(name, self.code)

        class Device:
            def __init__(self, device: Any = None) -> None:
                self.id, self.compute_capability = 0, "90"
                self.attributes = {"MultiProcessorCount": 132,
                                   "MaxThreadsPerMultiProcessor": 2048, "ClockRate": 1980000}

            def synchronize(self) -> None:
                assert state.capture is None

        def elapsed(a: Any, b: Any) -> float:
            assert not (a.disable_timing or b.disable_timing) and a.t and b.t
            return (b.t - a.t) / 1000.0  # one tick = 1 µs

        runtime = SimpleNamespace(
            getDeviceProperties=lambda i: {"name": b"Fake H100"},
            memGetInfo=lambda: (80 * 2**30 - heap.total, 80 * 2**30),
            runtimeGetVersion=lambda: 12090, driverGetVersion=lambda: 12090)
        self.cuda = SimpleNamespace(Stream=Stream, Event=Event, Device=Device,
                                    get_elapsed_time=elapsed, runtime=runtime)
        self.RawModule = RawModule
        self._pool = SimpleNamespace(total_bytes=lambda: heap.total, free_all_blocks=lambda: None,
                                     used_bytes=lambda: heap.total)

    def get_default_memory_pool(self) -> Any:
        return self._pool

    def _new(self, n: int, dtype: Any) -> _Array:
        itemsize = np.dtype(dtype).itemsize
        raw, base = self.heap.alloc(n * itemsize)
        return _Array(raw[: n * itemsize].view(dtype), base)

    def empty(self, n: int, dtype: Any = np.float32) -> _Array:
        return self._new(n, dtype)

    def zeros(self, n: int, dtype: Any = np.float32) -> _Array:
        return self._new(n, dtype)

    def asarray(self, values: Any) -> _Array:
        values = np.asarray(values)
        out = self._new(values.size, values.dtype)
        out.a[:] = values.reshape(-1)
        return out

    def asnumpy(self, arr: _Array) -> np.ndarray:
        return arr.a.copy()


def _fused_kernels(*graphs: wb.Graph) -> dict[str, Any]:
    out = {}
    for g in graphs:
        plan = build_launch_plan(wb.schedule(g, "serial"))
        for launch in plan.launches:
            if launch.call.fused is not None:
                out[launch.kernel] = launch.call.fused
    return out


@pytest.fixture()
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    def install(*graphs: wb.Graph) -> FakeCuPy:
        fake = FakeCuPy(_fused_kernels(*graphs))
        monkeypatch.setitem(sys.modules, "cupy", fake)
        return fake

    monkeypatch.setattr(E, "is_available", lambda: True)
    E.device_info.cache_clear()
    E._SPIN_OVERHEAD.clear()
    K._MODULES.clear()
    yield install
    E.device_info.cache_clear()
    E._SPIN_OVERHEAD.clear()
    K._MODULES.clear()


def _tiny_graphs() -> dict[str, wb.Graph]:
    tiny = {"seq_len": 6, "d_model": 16, "heads": 2, "d_ff": 32}
    return {"inception75": wb.models.inception_v3(resolution=75, fused=False),
            "transformer_fused": fuse_elementwise(wb.models.transformer_block(**tiny)),
            "diamond": wb.models.nnc_diamond()}


@pytest.mark.parametrize("name", list(_tiny_graphs()))
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_fake_device_runs_the_real_executor(fake_gpu: Any, name: str, mode: str) -> None:
    g = _tiny_graphs()[name]
    fake = fake_gpu(g)
    sched = wb.schedule(g, "nnc")
    trace = E.run(sched, mode=mode, repeats=3, warmup=1, verify=True, return_outputs=True,
                  measure_alone=True, alone_repeats=2)
    assert tuple(trace.df.columns) == TRACE_COLUMNS
    assert list(trace.df["op"]) == list(sched.issue_order)
    assert trace.executor == "cupy" and trace.mode == mode and trace.device == "Fake H100"
    meta = trace.meta
    assert meta["verified"] and len(meta["makespans_us"]) == 3
    assert meta["makespan_median_us"] > 0 and meta["peak_memory_bytes"] >= meta["planned_bytes"]
    assert meta["timeline"] == ("events" if mode == "eager" else "stamps")
    assert trace.violations() == []  # per-op marks respect every dependency
    assert (trace.df["alone_us"] >= 0).all()
    want = run_graph_reference(g)
    for t, value in meta["outputs"].items():
        np.testing.assert_allclose(value, want[t], rtol=1e-5, atol=1e-5)
    assert fake.state.capture is None


def test_fake_device_graph_mode_captures_once_and_replays(fake_gpu: Any) -> None:
    g = wb.models.squeezenet(resolution=32)
    fake_gpu(g)
    sched = wb.schedule(g, "wavefront")
    eager = E.run_outputs(sched, mode="eager")
    graph = E.run_outputs(sched, mode="graph")
    E.compare_outputs(graph, eager, what="graph vs eager")
    plan = build_launch_plan(drop_sync(wb.schedule(g, "nnc"), wb.schedule(g, "nnc").syncs[0]),
                             validate=False)
    assert plan.n_launches  # an unvalidated plan still runs (the executor trusts its input)


def test_fake_device_compare_outputs_is_bitwise() -> None:
    a = {"t": np.array([1.0, np.nan], np.float32)}
    E.compare_outputs(a, {"t": a["t"].copy()})
    with pytest.raises(wb.ScheduleError, match="differs from the serial run"):
        E.compare_outputs({"t": np.array([1.0, 2.0], np.float32)}, a)


def test_execute_routes_options_to_the_fake_executor(fake_gpu: Any) -> None:
    g = wb.models.textbook_mul_sub_add()
    fake_gpu(g)
    trace = wb.execute(wb.schedule(g, "nnc"), executor="cupy", device="h100", mode="eager",
                       repeats=2, warmup=1)
    assert trace.meta["n_launches"] == 3
    with pytest.raises(wb.OptionError, match="no option"):
        wb.execute(wb.schedule(g, "nnc"), executor="cupy", bogus=1)


def test_calibration_round_trip_on_the_fake_device(fake_gpu: Any, tmp_path: Any) -> None:
    from workbench.simulator.cost_model.costs import calibrate, load_calibration, save_calibration

    g = wb.models.transformer_block(seq_len=6, d_model=16, heads=2, d_ff=32)
    fake_gpu(g)
    table = C.calibrate_gpu(wb.schedule(g, "serial"), repeats=2)
    assert set(table.ops) == set(g.op_ids) and table.device == "Fake H100"
    path = save_calibration(table, tmp_path / "cal.json")
    again = load_calibration(path)
    assert again == table
    ops = calibrate(path)
    assert ops == calibrate(table) == dict(table.ops)
    traces = {p: E.run(wb.schedule(g, p), repeats=2, warmup=1) for p in ("serial", "nnc")}
    errors = fidelity.simulator_error(traces, ops, device=C.device_spec_for(table))
    assert list(errors["policy"]) == ["serial", "nnc"] and errors["simulated_us"].gt(0).all()


# =============================================================================== calibration (CPU)
def test_calibration_tables_and_simulator_error_on_the_cpu(tmp_path: Any) -> None:
    from workbench.simulator.cost_model.costs import calibrate

    g = wb.models.nnc_diamond()
    traces = {p: wb.simulate(wb.schedule(g, p), "h100") for p in ("serial", "nnc")}
    table = C.table_from_trace(traces["serial"])
    assert table.ops == {op: 10.0 for op in g.op_ids}  # duration_us pins the alone time
    errors = fidelity.simulator_error(traces, table, device="h100")
    assert np.allclose(errors["error_pct"], 0.0)  # the simulator agrees with itself
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "workbench-calibration", "version": 1, "ops": {"a": -1}}')
    with pytest.raises(wb.FormatError, match="non-negative"):
        calibrate(bad)
    with pytest.raises(wb.FormatError, match="not a workbench calibration"):
        C.CalibrationTable.from_dict({"ops": {}})
    with pytest.raises(wb.OptionError):
        calibrate({"a": float("nan")})


# =============================================================================== on a GPU
@cache
def _graph(name: str, batch: int = 1) -> wb.Graph:
    return wb.models.build(name, batch=batch)


@cache
def _serial_outputs(name: str) -> dict[str, np.ndarray]:
    return E.run_outputs(wb.schedule(_graph(name), "serial"))


@pytest.mark.gpu
@pytest.mark.parametrize("network", NETWORKS)
@pytest.mark.parametrize("policy", wb.policies())
def test_every_policy_matches_the_serial_run_bitwise(network: str, policy: str) -> None:
    sched = wb.schedule(_graph(network), policy, **TEST_OPTIONS.get(policy, {}))
    got = E.run_outputs(sched)
    E.compare_outputs(got, _serial_outputs(network), what=f"{network}/{policy}")


@pytest.mark.gpu
@pytest.mark.parametrize("network", NETWORKS)
def test_graph_mode_equals_eager_mode(network: str) -> None:
    sched = wb.schedule(_graph(network), "nnc")
    E.compare_outputs(E.run_outputs(sched, mode="graph"), E.run_outputs(sched, mode="eager"),
                      what=f"{network} graph vs eager")


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["inception_v3", "squeezenet", "transformer_block"])
def test_gpu_outputs_match_numpy_reference(name: str) -> None:
    small = {"inception_v3": {"resolution": 75}, "squeezenet": {"resolution": 32},
             "transformer_block": {"seq_len": 16, "d_model": 64, "heads": 4, "d_ff": 128}}
    for g in (wb.models.build(name, **small[name]),
              fuse_elementwise(wb.models.build(name, **small[name]))):
        got = E.run_outputs(wb.schedule(g, "nnc"))
        want = run_graph_reference(g)
        for t in g.outputs:
            np.testing.assert_allclose(got[t], want[t], rtol=2e-3, atol=2e-3)


@pytest.mark.gpu
@settings(max_examples=15, deadline=None)
@given(graph=dags(max_ops=10), policy=st.sampled_from(["nnc", "wavefront", "asap"]))
def test_spin_dags_respect_dependencies_and_compute_the_reference(graph: wb.Graph,
                                                                  policy: str) -> None:
    sched = wb.schedule(graph, policy)
    trace = E.run(sched, repeats=2, warmup=1, return_outputs=True)
    assert trace.violations(tol_us=1.0) == []
    want = run_graph_reference(graph)
    for t in graph.outputs:
        np.testing.assert_array_equal(trace.meta["outputs"][t], want[t])
    for mode in ("eager", "graph"):
        E.compare_outputs(E.run_outputs(sched, mode=mode), trace.meta["outputs"])


@pytest.mark.gpu
def test_dropped_sync_is_caught_on_a_graph_built_to_expose_it() -> None:
    # a long producer on one stream, a consumer on another that starts at once without the sync
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
                            durations={"a": 2000.0, "b": 5.0, "c": 5.0, "d": 5.0},
                            thread_blocks={k: 1 for k in "abcd"}, sizes={k: 256 for k in "abcd"})
    sched = wb.schedule(g, "nnc")
    (sync,) = [s for s in sched.syncs if s == ("a", "c")]
    broken = drop_sync(sched, sync)
    with pytest.raises(wb.ScheduleError, match="missing sync"):
        build_launch_plan(broken)                      # the validator refuses it ...
    plan = build_launch_plan(broken, validate=False)   # ... and on the GPU it really races
    got = E.run_outputs(broken, plan=plan)
    want = run_graph_reference(g)
    assert not np.array_equal(got["d:out"], want["d:out"])
    E.compare_outputs(E.run_outputs(sched), outputs_of(g, want))


def test_run_outputs_hold_only_graph_outputs_so_the_reference_is_cut_to_them() -> None:
    # the cause of the GPU failure above, reproduced on the CPU emulator (which runs the same
    # launch plans): run_outputs() returns the graph outputs, run_graph_reference() every
    # tensor, so comparing against the whole reference asks for the intermediate 'a:out'
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
                            durations={"a": 2000.0, "b": 5.0, "c": 5.0, "d": 5.0},
                            thread_blocks={k: 1 for k in "abcd"}, sizes={k: 256 for k in "abcd"})
    got = emulate_schedule(wb.schedule(g, "nnc"))
    want = run_graph_reference(g)
    assert set(got) == set(g.outputs) == {"d:out"} and "a:out" in want
    with pytest.raises(wb.ScheduleError, match=r"output 'a:out' is missing .*'d:out'"):
        E.compare_outputs(got, want)
    E.compare_outputs(got, outputs_of(g, want))


@pytest.mark.gpu
def test_spin_durations_follow_duration_us() -> None:
    g = wb.Graph.from_edges([("a", "b")], durations={"a": 200.0, "b": 50.0},
                            thread_blocks={"a": 8, "b": 8})
    trace = E.run(wb.schedule(g, "serial"), repeats=5, measure_alone=True)
    alone = dict(zip(trace.df["op"], trace.df["alone_us"], strict=True))
    assert alone["a"] == pytest.approx(200.0, rel=0.1)
    assert alone["b"] == pytest.approx(50.0, rel=0.2)


@pytest.mark.gpu
def test_calibration_round_trip(tmp_path: Any) -> None:
    from workbench.simulator.cost_model.costs import calibrate, load_calibration, save_calibration

    g = _graph("squeezenet")
    table = C.calibrate_gpu(wb.schedule(g, "serial"), repeats=3)
    assert set(table.ops) == set(g.op_ids) and all(v >= 0 for v in table.ops.values())
    again = load_calibration(save_calibration(table, tmp_path / "cal.json"))
    assert again == table
    ops = calibrate(again)
    traces = {p: E.run(wb.schedule(g, p), repeats=5) for p in ("serial", "nnc")}
    errors = fidelity.simulator_error(traces, ops, device=C.device_spec_for(table))
    assert errors["measured_us"].gt(0).all() and errors["simulated_us"].gt(0).all()


@pytest.mark.gpu
def test_trace_meta_and_memory() -> None:
    sched = wb.schedule(_graph("inception_v3"), "nnc")
    trace = E.run(sched, repeats=5)
    meta = trace.meta
    assert meta["peak_memory_bytes"] >= meta["planned_bytes"] > meta["arena_bytes"] > 0
    assert meta["makespan_spread_us"] >= 0 and meta["host_us_per_launch"] > 0
    assert trace.violations(tol_us=1.0) == []
    graph = E.run(sched, mode="graph", repeats=5)
    assert graph.meta["timeline"] == "stamps" and graph.violations(tol_us=2.0) == []
