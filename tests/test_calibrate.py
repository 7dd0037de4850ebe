"""Device profiles (workbench.simulator.cost_model.device_profile), calibrate_device() and the CUDA
probes' timing loop,
on the CPU: a fake executor times ops, a fake CUDA device runs the probes."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench.executors import device_probes as P
from workbench.executors.device_calibration import batch_of
from workbench.executors.execute import EXECUTORS
from workbench.simulator.cost_model.device_profile import DeviceProfile, OpTiming, calibration_for
from workbench.simulator.cost_model.devices import device_to_dict
from workbench.values.trace import Trace


def profile(**changes: Any) -> DeviceProfile:
    g = wb.models.build("squeezenet", resolution=32)
    ops = tuple(OpTiming(g.name, 1, op, g.op(op).kind, 7.0) for op in g.op_ids)
    fields = {"base_device": "h200", "precision": "fp32", "ops": ops,
              "probes": {"launch_in_graph_us": 1.5}, "provenance": {"gpu": "NVIDIA H200"}}
    fields.update(changes)
    return DeviceProfile(**fields)


def test_profile_round_trip_and_device_path_feeds_the_simulator(tmp_path: Path) -> None:
    path = wb.save_profile(profile(), tmp_path / "h200_lab.json")
    again = wb.load_profile(path)
    assert again == profile() and json.loads(path.read_text())["format"] == \
        "workbench-device-profile"
    spec = wb.costs.get_device(str(path))
    assert spec.name == "h200+h200_lab" and spec.sm_count == wb.costs.get_device("h200").sm_count
    g = wb.models.build("squeezenet", resolution=32)
    sched = wb.schedule(g, "serial")
    measured = wb.simulate(sched, device=str(path))
    # every op pinned at the profile's time (an op of several kernels: their scaled sum)
    assert np.allclose(measured.df["alone_us"], 7.0, rtol=1e-12)
    assert calibration_for(spec, "other_graph") is None     # unmeasured graphs keep the model
    modelled = wb.simulate(sched, device="h200")
    assert not (modelled.df["alone_us"] == 7.0).all()
    # the same path through compare() and a plain device file through get_device
    result = wb.compare(g, ["serial"], device=path, budget_s=None, show_progress=False,
                        planner=None, mode="eager")
    assert result.table["makespan_us"].iloc[0] == pytest.approx(measured.makespan)
    device_file = tmp_path / "dev.json"
    device_file.write_text(json.dumps(device_to_dict(wb.costs.get_device("l4"))))
    assert wb.costs.get_device(device_file).sm_count == wb.costs.get_device("l4").sm_count


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("format"), "not a device profile"),
    (lambda d: d.update(version=2), "version 2 is not supported"),
    (lambda d: d.update(base_device="h900"), "\"base_device\": unknown device 'h900'"),
    (lambda d: d.update(precision="fp8"), "\"precision\" must be one of"),
    (lambda d: d.update(extra=1), "unknown key 'extra'"),
    (lambda d: d["ops"][3].update(alone_us=-1), r"ops\[3\]: \"alone_us\" must be a non-negative"),
    (lambda d: d["ops"][0].pop("kind"), r"ops\[0\]: missing key 'kind'"),
    (lambda d: d["ops"][0].update(batch=0), r"ops\[0\]: \"batch\" must be a positive integer"),
])
def test_bad_profiles_are_one_line_errors_naming_the_file_and_key(tmp_path: Path, edit: Any,
                                                                  message: str) -> None:
    data = profile().to_dict()
    edit(data)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(wb.FormatError, match=message) as exc:
        wb.load_profile(path)
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(wb.WorkbenchError, match="p.json: ") as exc:  # without "format": a
        wb.costs.get_device(path)                                    # device file, also refused
    assert "\n" not in str(exc.value)


def test_missing_device_path_is_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(wb.OptionError, match="no such device file or device profile"):
        wb.costs.get_device(tmp_path / "nope.json")


# --------------------------------------------------------------------------- calibrate_device
TIMED: list[str] = []


def fake_run(schedule: wb.Schedule, *, mode: str = "eager", precision: str = "fp32",
             warmup: int = 3, repeats: int = 20, seed: int = 0, device: Any = None) -> Trace:
    """An op 'measured' as 10 µs per op plus 1 µs per MFLOP."""
    (op,) = schedule.issue_order
    TIMED.append(op)
    us = 10.0 + schedule.graph.op(op).flops / 1e6
    trace = wb.simulate(schedule)
    return Trace(trace.df, graph=schedule.graph, policy="serial", device="fake", executor="fake",
                 meta={"makespan_median_us": us})


def test_calibrate_device_times_each_distinct_op_once(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.setitem(EXECUTORS._entries, "fake_device", fake_run)
    TIMED.clear()
    g = wb.models.build("inception_v3", resolution=75)
    prof = wb.calibrate_device([g], executor="fake_device", repeats=2, warmup=0)
    assert [t.op for t in prof.ops] == list(g.topo_order())
    assert all(t.alone_us == pytest.approx(10.0 + g.op(t.op).flops / 1e6) for t in prof.ops)
    assert 0 < len(TIMED) < len(g)               # repeated blocks: ops timed once per structure
    assert prof.base_device == "h100" and prof.probes == {
        "skipped": "no CUDA device: the probes need CUDA graphs and streams"}
    assert "perf_counter" in prof.provenance["timing"] and prof.provenance["date"]
    assert batch_of(wb.models.build("squeezenet", batch=16)) == 16
    assert wb.load_profile(wb.save_profile(prof, tmp_path / "p.json")) == prof


# --------------------------------------------------------------------------- the probes
class FakeEvent:
    def __init__(self, dev: FakeDevice) -> None:
        self.dev, self.t = dev, 0.0

    def record(self) -> None:
        self.t = self.dev.clock

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: FakeEvent) -> float:
        return (end.t - self.t) / 1000.0            # milliseconds, as CUDA events report


class FakeDevice:
    """A device whose graph replay takes FLOOR + the longest stream's work + WAIT per join of
    streams; at most two busy kernels run at once."""

    FLOOR, TINY, BUSY, WAIT = 2.0, 1.5, 10.0, 0.7

    def __init__(self) -> None:
        self.clock = 0.0
        self.captures = self.replays = 0
        self._stream = 0
        self._work: dict[int, float] = {}
        self._waits = 0
        self._busy_streams: set[int] = set()

    def capture(self, body: Any) -> float:
        self.captures += 1
        self._work, self._waits, self._stream, self._busy_streams = {0: 0.0}, 0, 0, set()
        body(self)
        span = max(self._work.values())
        if len(self._busy_streams) > 2:           # at most two busy kernels at once
            span = self.BUSY * len(self._busy_streams) / 2
        return self.FLOOR + span + self.WAIT * self._waits

    def replay(self, graph: float) -> None:
        self.replays += 1
        self.clock += graph

    def event(self) -> FakeEvent:
        return FakeEvent(self)

    def synchronize(self) -> None:
        pass

    def tiny(self) -> None:
        self._work[self._stream] = self._work.get(self._stream, 0.0) + self.TINY

    def busy(self, k: int) -> None:
        self._work[self._stream] = self._work.get(self._stream, 0.0) + self.BUSY
        self._busy_streams.add(self._stream)

    def fork(self, n: int) -> list[int]:
        base = max(self._work) + 1
        streams = list(range(base, base + n))
        for s in streams:
            self._work[s] = self._work[0]
        return streams

    @contextmanager
    def on(self, stream: int) -> Any:
        before, self._stream = self._stream, stream
        yield
        self._stream = before

    def join(self, streams: list[int]) -> None:
        self._waits += 1
        self._work[0] = max(self._work[s] for s in [0, *streams])


def test_probes_recover_the_fake_devices_constants() -> None:
    dev = FakeDevice()
    got = P.run_probes(dev, warmup=2, repeats=3)
    assert got["graph_floor_us"] == pytest.approx(dev.FLOOR + dev.TINY)
    assert got["launch_in_graph_us"] == pytest.approx(dev.TINY)
    assert got["event_wait_us"] == pytest.approx(dev.WAIT)
    one = dev.FLOOR + dev.BUSY + dev.WAIT            # a fork and join around one kernel
    assert got["overlap_1"] == pytest.approx((dev.FLOOR + dev.BUSY) / one)
    assert got["overlap_2"] == pytest.approx((dev.FLOOR + 2 * dev.BUSY) / one)
    assert got["concurrent_4_us"] == pytest.approx(dev.FLOOR + 2 * dev.BUSY + dev.WAIT)
    assert got["serial_4_us"] == pytest.approx(dev.FLOOR + 4 * dev.BUSY)
    assert dev.captures == 10 and dev.replays == 10 * (2 + 3)   # each probe captured once


def test_probe_device_needs_cuda() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(wb.DeviceUnavailable, match="need a CUDA GPU"):
        P.TorchCuda()


@pytest.mark.torch_gpu
def test_probes_on_the_gpu() -> None:
    got = P.run_probes(P.TorchCuda(), warmup=3, repeats=10)
    assert 0 < got["launch_in_graph_us"] < 20 and got["overlap_1"] == pytest.approx(1, rel=0.2)
    assert got["overlap_2"] >= 0.9


@pytest.mark.torch_gpu
def test_calibrate_device_on_the_gpu(tmp_path: Path) -> None:
    g = wb.models.build("squeezenet", resolution=64)
    prof = wb.calibrate_device([g], repeats=5, warmup=2)
    assert prof.provenance["gpu"] and prof.provenance["cudnn"] and "CUDA graph" in \
        prof.provenance["timing"]
    assert {"graph_floor_us", "launch_in_graph_us", "event_wait_us", "overlap_2"} <= \
        set(prof.probes)
    assert len(prof.ops) == len(g) and all(t.alone_us >= 0 for t in prof.ops)
    spec = wb.costs.get_device(wb.save_profile(prof, tmp_path / "gpu.json"))
    assert wb.simulate(wb.schedule(g, "nnc"), device=spec).makespan > 0


class _LogCuda:
    """A recording stand-in for the part of ``torch.cuda`` TorchCuda uses (tensors stay on the
    CPU): checks that nothing synchronises during a capture and that timing events are
    recorded outside captures."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.capturing = False
        self.clock = 0.0
        self.made = 0
        self.current: Any = self._stream("default")

    def _stream(self, name: str) -> Any:
        cuda = self

        class _S:
            def wait_stream(self, other: Any) -> None:
                cuda.log.append(("wait", name, other.name))
        stream = _S()
        stream.name = name  # type: ignore[attr-defined]
        return stream

    def is_available(self) -> bool:
        return True

    def Stream(self, device: Any = None) -> Any:  # noqa: N802 - torch's names
        self.made += 1
        return self._stream(f"s{self.made}")

    def current_stream(self) -> Any:
        return self.current

    @contextmanager
    def stream(self, s: Any) -> Any:
        before, self.current = self.current, s
        yield
        self.current = before

    def Event(self, enable_timing: bool = False) -> Any:  # noqa: N802
        cuda = self

        class _E:
            t = 0.0

            def record(self) -> None:
                assert not cuda.capturing, "timing event recorded inside a capture"
                self.t = cuda.clock

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Any) -> float:
                return (end.t - self.t) / 1000.0
        return _E()

    def CUDAGraph(self) -> Any:  # noqa: N802
        cuda = self

        class _G:
            def replay(self) -> None:
                assert not cuda.capturing
                cuda.clock += 5.0
                cuda.log.append(("replay",))
        return _G()

    @contextmanager
    def graph(self, g: Any) -> Any:
        assert not self.capturing, "nested capture"
        self.capturing, before, self.current = True, self.current, self._stream("capture")
        self.log.append(("capture",))
        yield
        self.capturing, self.current = False, before

    def synchronize(self) -> None:
        assert not self.capturing, "cudaDeviceSynchronize during a capture"
        self.log.append(("synchronize",))


def test_torch_cuda_adapter_drives_torch_cuda_as_the_probes_need(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    from types import SimpleNamespace

    real = pytest.importorskip("torch")
    cuda = _LogCuda()
    fake = SimpleNamespace(cuda=cuda, device=lambda d: "cpu", zeros=real.zeros,
                           randn=real.randn, empty=real.empty, mm=real.mm)
    monkeypatch.setitem(sys.modules, "torch", fake)
    dev = P.TorchCuda(size=8)
    got = P.run_probes(dev, warmup=1, repeats=2)
    assert got["graph_floor_us"] == pytest.approx(5.0) and got["overlap_1"] == pytest.approx(1)
    assert sum(1 for e in cuda.log if e == ("capture",)) == 10
    assert sum(1 for e in cuda.log if e == ("replay",)) == 10 * 3
    forks = [e for e in cuda.log if e[0] == "wait" and e[2] == "capture"]
    joins = [e for e in cuda.log if e[0] == "wait" and e[1] == "capture"]
    # the cross-stream probe forks 1 stream, the concurrency probes 1, 2 and 4, in warm-up
    # (from the default stream) and in the capture; every stream forked in a capture is joined
    assert len(forks) == len(joins) == 1 + 1 + 2 + 4


def test_calibration_table_header_is_checked_like_a_profile_header() -> None:
    # one check (workbench._checks.check_format) serves both file formats, with each one's words
    from workbench.simulator.cost_model.calibration import FORMAT, CalibrationTable

    with pytest.raises(wb.FormatError, match=r"^t\.json: not a workbench calibration table"):
        CalibrationTable.from_dict({"format": "other"}, where="t.json")
    with pytest.raises(wb.FormatError, match="calibration version 3 is not supported"):
        CalibrationTable.from_dict({"format": FORMAT, "version": 3}, where="t.json")
