"""Small probes of a CUDA device, timed inside CUDA graphs, and the provenance of a measurement.

What the simulator's launch, synchronisation and sharing parameters stand for, measured on the
device at hand (``workbench calibrate``;
:func:`workbench.executors.device_calibration.calibrate_device`):

* ``graph_floor_us``: a CUDA graph holding one 1-element kernel, launched and timed with two
  events (the fixed cost every timed graph carries);
* ``launch_in_graph_us``: one more back-to-back kernel inside a graph, ``(T(33) - T(1)) / 32``;
* ``event_wait_us``: a kernel whose successor runs on another stream after an event wait, minus
  the same two kernels on one stream;
* ``concurrent_k_us`` / ``serial_k_us`` / ``overlap_k`` for k = 1, 2, 4: ``k`` independent
  matrix products (1024², fp32) on ``k`` streams at once vs one after another on one stream
  (``overlap_k`` = serial / concurrent: 1.0 when kernels cannot share the GPU, k when they do
  perfectly).

Each probe is the median of ``repeats`` replays after ``warmup`` (CUDA events around the replay).
The probes see the device through a small interface (:class:`TorchCuda` over ``torch.cuda``) so
the timing loop and the probe arithmetic run on the CPU against a fake (tests/test_calibrate.py);
torch is imported only when a :class:`TorchCuda` is made (STYLE.md R11).
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import statistics
import subprocess
from collections.abc import Callable
from typing import Any, Protocol

from workbench.errors import DeviceUnavailable, OptionError

Body = Callable[[Any], None]


class ProbeDevice(Protocol):
    """What the probes need of a device (``TorchCuda``, or a fake in tests)."""

    def capture(self, body: Body) -> Any: ...
    def replay(self, graph: Any) -> None: ...
    def event(self) -> Any: ...
    def synchronize(self) -> None: ...
    def tiny(self) -> None: ...
    def busy(self, k: int) -> None: ...
    def fork(self, n: int) -> list[Any]: ...
    def on(self, stream: Any) -> Any: ...
    def join(self, streams: list[Any]) -> None: ...


class TorchCuda:
    """:class:`ProbeDevice` over ``torch.cuda`` (one device; tensors made once, before capture)."""

    def __init__(self, device: Any = None, size: int = 1024) -> None:
        import torch

        if not torch.cuda.is_available():
            raise DeviceUnavailable("device probes need a CUDA GPU (torch.cuda.is_available() "
                                    "is False)")
        self.torch, self.cuda = torch, torch.cuda
        self.device = torch.device(device or "cuda")
        self.x = torch.zeros(1, device=self.device)
        self.a = torch.randn(size, size, device=self.device)
        self.b = torch.randn(size, size, device=self.device)
        self.out = [torch.empty(size, size, device=self.device) for _ in range(4)]

    def capture(self, body: Body) -> Any:
        graph = self.cuda.CUDAGraph()
        body(self)                         # warm the kernels up outside the capture
        self.cuda.synchronize()
        with self.cuda.graph(graph):
            body(self)
        return graph

    def replay(self, graph: Any) -> None:
        graph.replay()

    def event(self) -> Any:
        return self.cuda.Event(enable_timing=True)

    def synchronize(self) -> None:
        self.cuda.synchronize()

    def tiny(self) -> None:
        self.x.add_(1.0)

    def busy(self, k: int) -> None:
        self.torch.mm(self.a, self.b, out=self.out[k % len(self.out)])

    def fork(self, n: int) -> list[Any]:
        here = self.cuda.current_stream()
        streams = [self.cuda.Stream(device=self.device) for _ in range(n)]
        for s in streams:
            s.wait_stream(here)
        return streams

    def on(self, stream: Any) -> Any:
        return self.cuda.stream(stream)

    def join(self, streams: list[Any]) -> None:
        here = self.cuda.current_stream()
        for s in streams:
            here.wait_stream(s)


def time_graph_us(dev: ProbeDevice, body: Body, *, warmup: int = 5,
                  repeats: int = 20) -> list[float]:
    """Replay times (µs) of ``body`` captured once as a CUDA graph: ``warmup`` untimed replays,
    then ``repeats`` replays each between two events on the current stream."""
    graph = dev.capture(body)
    for _ in range(warmup):
        dev.replay(graph)
    dev.synchronize()
    times = []
    for _ in range(repeats):
        start, end = dev.event(), dev.event()
        start.record()
        dev.replay(graph)
        end.record()
        end.synchronize()
        times.append(float(start.elapsed_time(end)) * 1000.0)
    return times


def _tiny(n: int) -> Body:
    def body(dev: Any) -> None:
        for _ in range(n):
            dev.tiny()
    return body


def _cross_stream(dev: Any) -> None:
    dev.tiny()
    (other,) = dev.fork(1)
    with dev.on(other):
        dev.tiny()
    dev.join([other])


def _concurrent(k: int) -> Body:
    def body(dev: Any) -> None:
        streams = dev.fork(k)
        for i, s in enumerate(streams):
            with dev.on(s):
                dev.busy(i)
        dev.join(streams)
    return body


def _serial(k: int) -> Body:
    def body(dev: Any) -> None:
        for i in range(k):
            dev.busy(i)
    return body


def graph_floor_us(dev: ProbeDevice, *, warmup: int = 5, repeats: int = 20) -> float:
    """The ``graph_floor_us`` probe alone: a graph of one 1-element kernel (median µs)."""
    return float(statistics.median(time_graph_us(dev, _tiny(1), warmup=warmup,
                                                 repeats=repeats)))


def run_probes(dev: ProbeDevice, *, warmup: int = 5, repeats: int = 20) -> dict[str, float]:
    """Every probe of the module docstring (µs, or ratios for ``overlap_k``)."""
    def med(body: Body) -> float:
        return float(statistics.median(time_graph_us(dev, body, warmup=warmup,
                                                     repeats=repeats)))

    one, many = med(_tiny(1)), med(_tiny(33))
    out = {"graph_floor_us": one, "launch_in_graph_us": max(0.0, (many - one) / 32),
           "event_wait_us": max(0.0, med(_cross_stream) - med(_tiny(2)))}
    for k in (1, 2, 4):
        together, alone = med(_concurrent(k)), med(_serial(k))
        out[f"concurrent_{k}_us"], out[f"serial_{k}_us"] = together, alone
        out[f"overlap_{k}"] = alone / together if together > 0 else float("nan")
    return out


def _driver_version() -> str:
    """The NVIDIA driver version from ``nvidia-smi`` ("" when it cannot be asked)."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout else ""


def cpu_model() -> str:
    """The CPU's model name, as a person would name it (``"AMD EPYC 7R13 Processor"``): the
    ``model name`` line of ``/proc/cpuinfo``, else ``lscpu``'s ``Model name``, else
    :func:`platform.processor`; the machine's architecture (``"x86_64"``) only when none of
    them answers.  O(size of /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key.strip().lower() in ("model name", "cpu model") and value.strip():
                    return " ".join(value.split())
    except OSError:
        pass
    try:
        done = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5,
                              check=False)
        for line in done.stdout.splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip().lower() == "model name" and value.strip():
                return " ".join(value.split())
    except (OSError, subprocess.SubprocessError):
        pass
    return platform.processor() or platform.machine() or "cpu"


def cpu_name() -> str:
    """The CPU's model name and core count (``"AMD EPYC 7R13 Processor, 2 cores"``)."""
    return f"{cpu_model()}, {os.cpu_count() or '?'} cores"


def provenance(*, timing: str = "") -> dict[str, Any]:
    """Where and with what a measurement was made: GPU, driver, CUDA, torch, cuDNN, host, date
    (UTC); ``gpu`` is ``"cpu (<model name>, <N> cores)"`` without CUDA."""
    out: dict[str, Any] = {"date": datetime.datetime.now(datetime.timezone.utc)
                           .strftime("%Y-%m-%dT%H:%M:%SZ"),
                           "host": platform.node(), "python": platform.python_version()}
    try:
        import torch
    except ImportError:
        out["gpu"] = f"cpu ({cpu_name()})"
    else:
        out["torch"] = str(torch.__version__)
        if torch.cuda.is_available():
            out["gpu"] = torch.cuda.get_device_name()
            out["cuda"] = str(torch.version.cuda)
            out["cudnn"] = str(torch.backends.cudnn.version())
            out["driver"] = _driver_version()
        else:
            out["gpu"] = f"cpu ({cpu_name()})"
    if timing:
        out["timing"] = timing
    return out


def base_device_for(gpu_name: str, default: str = "h100") -> str:
    """The registered cost-model device a GPU's name matches (``"NVIDIA H200"`` -> ``h200``),
    else ``default``.  A device matches when its name without ``_`` is one or more consecutive
    words of the GPU's name run together (``"NVIDIA GeForce RTX 3070 Laptop GPU"`` ->
    ``rtx3070_laptop``; ``"NVIDIA L40S"`` is not ``l4``).

    >>> base_device_for("NVIDIA H100 80GB HBM3"), base_device_for("NVIDIA L40S")
    ('h100', 'h100')
    >>> base_device_for("Tesla T4")
    't4'
    """
    from workbench.simulator.cost_model.devices import devices

    words = re.findall(r"[a-z0-9]+", gpu_name.lower())
    runs = {"".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1)}
    matched = [name for name in devices() if name.replace("_", "") in runs]
    return max(matched, key=len) if matched else default


#: The base device when nothing names one.
DEFAULT_BASE = "h100"


def choose_base_device(gpu_name: str, base: str | None = None) -> tuple[str, str]:
    """The cost-model device a profile refines, and why (one line, for the command's output and
    the profile's provenance): ``base`` when given (checked: an unknown name is a one-line
    OptionError listing the known devices), else the registered device the GPU's name matches
    (:func:`base_device_for`), else ``h100``.  A CPU profile (``gpu_name`` ``"cpu (...)"``) has
    no GPU to match: its op times stand in for the base device's on the graphs it timed.

    >>> choose_base_device("NVIDIA H200")
    ('h200', "matched the GPU name 'NVIDIA H200'")
    >>> choose_base_device("cpu (x86_64)", "a100")[0]
    'a100'
    """
    from workbench.simulator.cost_model.devices import DEVICES

    if base is not None:
        if not isinstance(base, str):
            raise OptionError(f"base device must be a device name, got {base!r}")
        DEVICES.get(base.lower())     # OptionError: unknown device 'x' (known: ...)
        return base.lower(), "chosen with --base / base_device="
    if gpu_name.startswith("cpu"):
        return DEFAULT_BASE, (f"no GPU to match, the ops ran on the CPU: the default; the "
                              f"CPU's op times stand in for {DEFAULT_BASE}'s on the graphs "
                              f"timed, the rest of the model is {DEFAULT_BASE}'s; pass --base "
                              f"to choose")
    name = base_device_for(gpu_name, "")
    if name:
        return name, f"matched the GPU name {gpu_name!r}"
    return DEFAULT_BASE, (f"no registered device matched the GPU name {gpu_name!r}, so the "
                          f"default; pass --base to choose")


__all__ = ["DEFAULT_BASE", "ProbeDevice", "TorchCuda", "base_device_for", "choose_base_device",
           "cpu_name", "graph_floor_us", "provenance", "run_probes", "time_graph_us"]
