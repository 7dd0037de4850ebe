"""GPU devices as data: one JSON file per device under ``workbench/data/devices/``.

Each file holds the public spec-sheet figures of one GPU (SMs, clock, FP32 lanes per SM, peak
FLOP/s per precision, memory bandwidth, per-SM limits on threads, blocks, registers and shared
memory, L2 size, host link) and ``sources`` naming the documents they came from; a built-in file's
``order`` places it in :func:`devices` (every file in that folder is registered, under its file
name).  Host-side costs
(kernel launch, event, device synchronisation) and the kernel-library efficiencies live in
``workbench/data/gpu_model.json`` (fitted on published measurements, see
``benchmarks/fidelity.py``); a device file may override any of them.

:class:`DeviceSpec` is the value the cost model and simulator read.  The heterogeneous-graph parts
(the host CPU pool, an Ascend-like NPU, copy engines) are attached to every device with assumed
defaults (:class:`HostSpec`, :class:`NpuSpec`).
"""

from __future__ import annotations

import importlib
import json
import math
import os
from dataclasses import dataclass, field, fields, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from workbench._atomic import read_json, write_text
from workbench._checks import check_keys, show
from workbench.errors import FormatError, OptionError
from workbench.registry import Registry

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
#: What a run may ask for: a precision, or "auto" (FP32 tensors; convolutions on TF32 tensor cores
#: where the device has them, as cuDNN 8's default math mode and PyTorch's default do).
RUN_PRECISIONS = ("auto", *PRECISIONS)
#: Bytes per element of each precision (tf32 is stored as fp32).
PRECISION_BYTES = {"auto": 4, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}


class HashedOnce:
    """For frozen dataclasses that key the timing caches (specs, GPU models): the hash of the
    fields, computed on first use and kept on the instance, and pickling without it (a process
    with another string-hash seed recomputes it).  A dataclass must say ``__hash__ =
    HashedOnce.__hash__`` in its body, else the decorator generates a hash over every field."""

    def __hash__(self) -> int:
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(tuple(getattr(self, f.name) for f in fields(self)))  # type: ignore[arg-type]
            object.__setattr__(self, "_hash", cached)
        return cached  # type: ignore[no-any-return]

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}


@dataclass(frozen=True)
class HostSpec:
    """The host CPU: a pool of cores for ``cpu`` ops and the interpreter thread for ``python`` ops.

    Defaults describe a 32-core server socket (AVX-512 at about 3 GHz: 100 GFLOP/s per core peak
    FP32, 200 GB/s DRAM, about 20 GB/s for one core).  Assumed figures, not measurements.
    """

    name: str = "host"
    cores: int = 32
    gflops_per_core: float = 100.0     # FP32 peak per core
    bandwidth_gbps: float = 200.0      # DRAM bandwidth for the whole socket
    core_bandwidth_gbps: float = 20.0  # what one core (a python op) can stream
    compute_efficiency: float = 0.5
    bandwidth_efficiency: float = 0.7
    dispatch_us: float = 1.0           # host time to hand one cpu/python op to its executor
    kernel_latency_us: float = 1.0     # fixed time per cpu op (thread-pool wake-up, tail)
    python_overhead_us: float = 20.0   # interpreter overhead per python op (call, boxing, GIL)


@dataclass(frozen=True)
class NpuSpec:
    """An Ascend-910-like NPU (seed 003: graphs sink to it).  32 AI cores; 256 TFLOP/s is the FP16
    cube peak (the graphs are costed with that peak: an assumption, the cube computes in FP16);
    1.2 TB/s HBM.  Per-op launch in single-op mode costs the host ``launch_overhead_us``."""

    name: str = "ascend910"
    ai_cores: int = 32
    peak_tflops: float = 256.0
    bandwidth_gbps: float = 1200.0
    launch_overhead_us: float = 6.0
    kernel_latency_us: float = 3.0
    blocks_per_core: int = 1
    compute_efficiency: float = 0.5
    bandwidth_efficiency: float = 0.8
    bandwidth_per_core_factor: float = 2.0


HOST_DEVICES = frozenset({"cpu", "python"})  # run on the host and share host memory


@dataclass(frozen=True)
class DeviceSpec(HashedOnce):
    """A GPU as the cost model sees it (plus the host, an NPU and copy engines beside it for
    heterogeneous graphs).  Units are in the names; see the module docstring for where the values
    come from.

    Hardware: ``sm_count``, ``boost_clock_mhz``, ``fp32_lanes_per_sm``, ``peak_tflops`` (FP32
    CUDA-core peak), ``tensor_tflops`` (dense tensor-core peak per precision), ``bandwidth_gbps``,
    the per-SM limits (``max_threads_per_sm``, ``max_blocks_per_sm``, ``registers_per_sm``,
    ``shared_memory_per_sm_kib``), ``l2_cache_mib``, ``memory_latency_ns``,
    ``max_concurrent_kernels`` (resident grids per device: 128 from compute capability 7.0 on),
    ``model_overrides`` (kernel-library parameters fitted for this device, applied over
    ``gpu_model.json``: :func:`workbench.simulator.cost_model.kernel_model.model_for`).
    Host and runtime: ``launch_overhead_us`` (host time per kernel launch, eager),
    ``kernel_latency_us`` (device time between one kernel's end and the next one's start on a
    stream), ``event_overhead_us`` (host time per event record or wait), ``device_sync_us`` (extra
    host time for a ``cudaDeviceSynchronize`` to return once the device is idle),
    ``graph_launch_us`` (one CUDA graph launch, sink mode), ``copy_bandwidth_gbps`` (host link),
    ``interference`` (how much co-running kernels slow each other: a kernel's speed is divided by
    ``1 + interference · share of the block slots the others hold``).
    """

    name: str
    sm_count: int
    peak_tflops: float            # FP32 CUDA-core peak
    bandwidth_gbps: float         # device memory bandwidth, GB/s
    launch_overhead_us: float = 5.0
    kernel_latency_us: float = 2.0
    event_overhead_us: float = 0.5
    graph_launch_us: float = 8.0
    device_sync_us: float = 8.0
    interference: float = 0.0
    memory_gib: float = 80.0
    copy_bandwidth_gbps: float = 25.0  # host <-> device copies (PCIe)
    description: str = ""
    boost_clock_mhz: float = 1500.0
    fp32_lanes_per_sm: int = 64
    tensor_tflops: tuple[tuple[str, float], ...] = ()
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    registers_per_sm: int = 65536
    shared_memory_per_sm_kib: float = 96.0
    l2_cache_mib: float = 6.0
    memory_latency_ns: float = 600.0
    max_concurrent_kernels: int = 128
    model_overrides: tuple[tuple[str, Any], ...] = ()  # GpuModel values for this device
    architecture: str = ""
    compute_capability: str = ""
    sources: tuple[str, ...] = ()
    host: HostSpec = field(default_factory=HostSpec)
    npu: NpuSpec = field(default_factory=NpuSpec)
    d2d_bandwidth_gbps: float | None = None  # device <-> device copies; None: copy_bandwidth_gbps
    # InferShape / Resize / Launch shares of each op's host cost (MindSpore multi-level pipeline)
    host_stage_split: tuple[float, float, float] = (0.25, 0.25, 0.5)
    # Before the occupancy model: a fixed number of resident blocks per SM; kept for the GPU
    # executor's spin kernels (one spin block per slot).
    blocks_per_sm: int = 2

    __hash__ = HashedOnce.__hash__  # explicit: the dataclass decorator would generate one

    @property
    def slots(self) -> int:
        return self.sm_count * self.blocks_per_sm

    def peak_flops(self, precision: str = "fp32") -> float:
        """Peak FLOP/s for GEMM-like kernels at ``precision`` (FP32: CUDA cores; others: dense
        tensor cores).  A precision the device has no tensor cores for is an error."""
        if precision == "fp32":
            return self.peak_tflops * 1e12
        table = dict(self.tensor_tflops)
        if precision not in table:
            have = ", ".join(["fp32", *table])
            raise OptionError(f"device {self.name!r} has no {precision} tensor cores "
                              f"(precisions: {have})")
        return table[precision] * 1e12

    def precisions(self) -> list[str]:
        return ["fp32", *dict(self.tensor_tflops)]

    @property
    def infer_us(self) -> float:
        """Host InferShape time per GPU op."""
        return self.host_stages_us("gpu")[0]

    @property
    def resize_us(self) -> float:
        """Host Resize time per GPU op (tiling, memory sizes)."""
        return self.host_stages_us("gpu")[1]

    @property
    def launch_us(self) -> float:
        """Host Launch time per GPU op (memory alloc/free and the kernel launch)."""
        return self.host_stages_us("gpu")[2]

    def host_op_us(self, device: str) -> float:
        """Serial host cost of issuing one kernel on ``device`` (the sum of its three stages)."""
        if device == "npu":
            return self.npu.launch_overhead_us
        if device in HOST_DEVICES:
            return self.host.dispatch_us
        return self.launch_overhead_us

    def host_stages_us(self, device: str) -> tuple[float, float, float]:
        """(InferShape, Resize, Launch) host times of one op on ``device``."""
        total = self.host_op_us(device)
        a, b, c = self.host_stage_split
        return (total * a, total * b, total * c)


_FIELD_NAMES = {f.name for f in fields(DeviceSpec)}
_FILE_KEYS = {"name", "description", "architecture", "compute_capability", "sm_count",
              "boost_clock_mhz", "fp32_lanes_per_sm", "peak_tflops", "memory_bandwidth_gbps",
              "memory_gib", "l2_cache_mib", "memory_type", "max_threads_per_sm",
              "max_blocks_per_sm", "registers_per_sm", "shared_memory_per_sm_kib", "pcie_gbps",
              "sources", "launch_overhead_us", "kernel_latency_us", "event_overhead_us",
              "device_sync_us", "graph_launch_us", "memory_latency_ns", "interference",
              "gpu_model", "fitted_on", "order"}
_TEXT_KEYS = {"name", "description", "architecture", "compute_capability", "memory_type",
              "sources", "fitted_on"}
_POSITIVE_KEYS = {"sm_count", "boost_clock_mhz", "fp32_lanes_per_sm", "memory_bandwidth_gbps",
                  "max_threads_per_sm", "max_blocks_per_sm", "pcie_gbps"}


def data_text(*parts: str) -> str:
    """Text of a file shipped under ``workbench/data/``."""
    return resources.files("workbench").joinpath("data", *parts).read_text(encoding="utf-8")


@cache
def gpu_model_parameters() -> dict[str, Any]:
    """``workbench/data/gpu_model.json``: kernel-library and runtime parameters (fitted values
    and their provenance)."""
    return json.loads(data_text("gpu_model.json"))


def device_from_dict(raw: dict[str, Any], *, where: str = "device file") -> DeviceSpec:
    """Build a :class:`DeviceSpec` from the JSON layout of ``workbench/data/devices/*.json``;
    unknown keys and missing figures are one-line errors naming ``where``."""
    check_keys(raw, _FILE_KEYS, where)
    for key in ("name", "sm_count", "peak_tflops", "memory_bandwidth_gbps"):
        if key not in raw:
            raise OptionError(f"{where}: missing {key!r}")
    for key, value in raw.items():
        if key == "sources" and not (isinstance(value, list)
                                     and all(isinstance(v, str) for v in value)):
            raise OptionError(f"{where}: sources must be a list of strings")
        if key in _TEXT_KEYS - {"sources"} and not isinstance(value, str):
            raise OptionError(f"{where}: {key} must be a string, got {value!r}")
        if key in _TEXT_KEYS or key in ("peak_tflops", "gpu_model"):
            continue
        positive = key in _POSITIVE_KEYS
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or value < 0 or positive and value == 0):
            need = "a positive" if positive else "a non-negative"
            raise OptionError(f"{where}: {key} must be {need} finite number, got {value!r}")
    return _spec_from_dict(raw, where)


def _spec_from_dict(raw: dict[str, Any], where: str) -> DeviceSpec:
    if not isinstance(raw["peak_tflops"], dict):
        raise OptionError(f"{where}: peak_tflops must be an object of precision -> TFLOP/s")
    peaks = dict(raw["peak_tflops"])
    if "fp32" not in peaks:
        raise OptionError(f"{where}: peak_tflops needs an 'fp32' entry")
    for key, value in peaks.items():
        if (key not in PRECISIONS or isinstance(value, bool) or not isinstance(value, (int, float))
                or not 0 < value < math.inf):
            raise OptionError(f"{where}: peak_tflops[{key!r}] = {value!r} is not a positive number "
                              f"of a known precision ({', '.join(PRECISIONS)})")
    defaults = gpu_model_parameters()["runtime"]
    runtime: dict[str, Any] = {k: float(raw.get(k, defaults[k]["value"])) for k in (
        "launch_overhead_us", "kernel_latency_us", "event_overhead_us", "device_sync_us",
        "graph_launch_us", "interference")}
    latency = float(raw.get("memory_latency_ns", defaults["memory_latency_ns"]["value"]))
    spec = DeviceSpec(
        name=str(raw["name"]), sm_count=int(raw["sm_count"]), peak_tflops=float(peaks["fp32"]),
        bandwidth_gbps=float(raw["memory_bandwidth_gbps"]),
        memory_gib=float(raw.get("memory_gib", 80)),
        copy_bandwidth_gbps=float(raw.get("pcie_gbps", 25.0)),
        description=str(raw.get("description", "")),
        boost_clock_mhz=float(raw.get("boost_clock_mhz", 1500)),
        fp32_lanes_per_sm=int(raw.get("fp32_lanes_per_sm", 64)),
        tensor_tflops=tuple((k, float(v)) for k, v in peaks.items() if k != "fp32"),
        max_threads_per_sm=int(raw.get("max_threads_per_sm", 2048)),
        max_blocks_per_sm=int(raw.get("max_blocks_per_sm", 32)),
        registers_per_sm=int(raw.get("registers_per_sm", 65536)),
        shared_memory_per_sm_kib=float(raw.get("shared_memory_per_sm_kib", 96)),
        l2_cache_mib=float(raw.get("l2_cache_mib", 6)),
        memory_latency_ns=latency,
        architecture=str(raw.get("architecture", "")),
        compute_capability=str(raw.get("compute_capability", "")),
        sources=tuple(str(s) for s in raw.get("sources", ())),
        model_overrides=_model_overrides(raw.get("gpu_model", {}), where),
        **runtime,
    )
    lanes_peak = 2 * spec.fp32_lanes_per_sm * spec.sm_count * spec.boost_clock_mhz * 1e-6
    if not math.isclose(lanes_peak, spec.peak_tflops, rel_tol=0.03):
        raise OptionError(f"{where}: fp32 peak {spec.peak_tflops} TFLOP/s disagrees with "
                          f"2 x lanes x SMs x clock = {lanes_peak:.1f}")
    return spec


def _model_overrides(raw: Any, where: str) -> tuple[tuple[str, Any], ...]:
    if not isinstance(raw, dict):
        raise OptionError(f"{where}: gpu_model must be an object of parameter values")
    check_keys(raw, set(gpu_model_parameters()["library"]), f"{where}: gpu_model",
               what="parameter")  # the fields of kernel_model.GpuModel
    for key, value in raw.items():
        if not isinstance(value, (int, float, list)) or isinstance(value, bool) or \
                (isinstance(value, float) and not math.isfinite(value)):
            raise OptionError(f"{where}: gpu_model parameter {key!r} must be a finite number "
                              f"or a list, got {value!r}")
        if isinstance(value, list):
            raw[key] = tuple(tuple(v) if isinstance(v, list) else v for v in value)
    return tuple(sorted(raw.items()))


def device_to_dict(spec: DeviceSpec, *, fitted_on: str = "") -> dict[str, Any]:
    """The JSON layout of a device file for ``spec`` (inverse of :func:`device_from_dict`): the
    spec-sheet figures, the runtime costs and any ``gpu_model`` overrides."""
    out: dict[str, Any] = {
        "name": spec.name, "description": spec.description, "architecture": spec.architecture,
        "compute_capability": spec.compute_capability, "sm_count": spec.sm_count,
        "boost_clock_mhz": spec.boost_clock_mhz, "fp32_lanes_per_sm": spec.fp32_lanes_per_sm,
        "peak_tflops": {"fp32": spec.peak_tflops, **dict(spec.tensor_tflops)},
        "memory_bandwidth_gbps": spec.bandwidth_gbps, "memory_gib": spec.memory_gib,
        "l2_cache_mib": spec.l2_cache_mib, "max_threads_per_sm": spec.max_threads_per_sm,
        "max_blocks_per_sm": spec.max_blocks_per_sm, "registers_per_sm": spec.registers_per_sm,
        "shared_memory_per_sm_kib": spec.shared_memory_per_sm_kib,
        "pcie_gbps": spec.copy_bandwidth_gbps, "memory_latency_ns": spec.memory_latency_ns,
        "launch_overhead_us": spec.launch_overhead_us,
        "kernel_latency_us": spec.kernel_latency_us, "event_overhead_us": spec.event_overhead_us,
        "device_sync_us": spec.device_sync_us, "graph_launch_us": spec.graph_launch_us,
        "interference": spec.interference, "sources": list(spec.sources),
    }
    if spec.model_overrides:
        out["gpu_model"] = {k: list(v) if isinstance(v, tuple) else v
                            for k, v in spec.model_overrides}
    if fitted_on:
        out["fitted_on"] = fitted_on
    return out


def save_device(spec: DeviceSpec, path: str | Any, *, fitted_on: str = "") -> Any:
    """Write ``spec`` as a device file (the format of ``workbench/data/devices/*.json``).  A spec
    its own reader would refuse (``with_overrides("a100", sm_count=200)`` keeps the fp32 peak of
    108 SMs) is refused here, in the reader's words, before anything is written: a saved device
    file always reads back."""
    from pathlib import Path

    target = Path(path)
    data = device_to_dict(spec, fitted_on=fitted_on)
    device_from_dict(json.loads(json.dumps(data)),
                     where=f"device {spec.name!r} cannot be saved as a file its reader accepts")
    return write_text(target, json.dumps(data, indent=1) + "\n")


def load_device(path: str | Any, *, register: bool = False) -> DeviceSpec:
    """Read a device file; ``register=True`` also adds it to :data:`DEVICES` under its name."""
    from pathlib import Path

    target = Path(path)
    raw = _read_json(target)
    if not isinstance(raw, dict):
        raise OptionError(f"{target}: a device file is a JSON object")
    spec = device_from_dict(raw, where=str(target))
    if register:
        DEVICES.register(spec.name, spec)
    return spec


def _load_builtin() -> Registry[DeviceSpec]:
    """Every ``workbench/data/devices/*.json``, registered under its file name in the order of the
    files' ``order`` key (the order of :func:`devices`; files without one come last, by name)."""
    found: list[tuple[float, str, DeviceSpec]] = []
    for entry in resources.files("workbench").joinpath("data", "devices").iterdir():
        if not entry.name.endswith(".json"):
            continue
        name = entry.name.removesuffix(".json")
        raw = json.loads(data_text("devices", entry.name))
        spec = device_from_dict(raw, where=f"devices/{entry.name}")
        found.append((float(raw.get("order", math.inf)), name, spec))
    registry = Registry[DeviceSpec]("device", error=OptionError)
    for _, name, spec in sorted(found, key=lambda item: item[:2]):
        registry.register(name, spec)
    return registry


DEVICES = _load_builtin()


def devices() -> list[str]:
    """The registered device names: the built-in ones in their files' ``order``, then any
    registered at run time."""
    return DEVICES.names()


#: Readers of device files by their ``"format"`` key: the ``"module:function"`` that turns
#: ``(path, parsed JSON)`` into a DeviceSpec, imported when a file of that format is read (STYLE.md
#: R11), so a device profile is read in a fresh process with nothing imported first.  A file
#: without a ``format`` key is a device file (:func:`load_device`).
FILE_FORMATS: dict[str, str] = {
    "workbench-device-profile": "workbench.simulator.cost_model.device_profile:spec_of_profile",
}
_FILE_SPECS: dict[tuple[str, int, int], DeviceSpec] = {}


def get_device(device: str | DeviceSpec | Any) -> DeviceSpec:
    """A registered device by name (case-insensitive), the given spec, or a file: a path (a
    ``PathLike``, or text ending in ``.json`` or holding a ``/``) to a device file or a device
    profile (read once per path, size and mtime)."""
    if isinstance(device, DeviceSpec):
        return device
    text = str(device)
    if isinstance(device, os.PathLike) or text.lower().endswith(".json") or "/" in text \
            or os.sep in text:
        return _device_file(Path(device))
    return DEVICES.get(text.lower())


def _read_json(path: Path) -> Any:
    """The JSON of a device file or profile (:func:`workbench._atomic.read_json`: a FIFO,
    device, directory, oversized file, invalid JSON, an integer past 4,300 digits or a float
    that overflows is one line, not a hang or a traceback), as a one-line OptionError.  NaN and
    Infinity written as such reach the figure checks, which name the field.  O(file size)."""
    try:
        return read_json(path, what="device file")
    except FormatError as exc:
        raise OptionError(str(exc)) from None


def _device_file(path: Path) -> DeviceSpec:
    try:
        stat = path.stat()
    except OSError:
        raise OptionError(f"{path}: no such device file or device profile") from None
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _FILE_SPECS:
        raw = _read_json(path)
        fmt = raw.get("format") if isinstance(raw, dict) else None
        _FILE_SPECS[key] = load_device(path) if fmt is None else _file_reader(fmt, path)(path, raw)
    return _FILE_SPECS[key]


def _file_reader(fmt: Any, path: Path) -> Any:
    """The reader :data:`FILE_FORMATS` names for ``fmt``, imported now; a one-line error naming
    the known formats otherwise."""
    where = FILE_FORMATS.get(fmt) if isinstance(fmt, str) else None
    if where is None:
        raise OptionError(f"{path}: format {show(fmt)} is not a device file or a device profile "
                          f"(known formats: {', '.join(sorted(FILE_FORMATS))}; a device file "
                          f"has no 'format' key)")
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)


def with_overrides(device: str | DeviceSpec, **changes: Any) -> DeviceSpec:
    """A copy of a device spec with some fields changed (e.g. ``launch_overhead_us=0``)."""
    spec = get_device(device)
    unknown = sorted(set(changes) - _FIELD_NAMES)
    if unknown:
        raise OptionError(f"unknown device field {unknown[0]!r} "
                          f"(known: {', '.join(sorted(_FIELD_NAMES))})")
    return replace(spec, **changes)


def with_host_stages(device: str | DeviceSpec, *, infer_us: float, resize_us: float,
                     launch_us: float) -> DeviceSpec:
    """A copy of a device spec whose GPU ops cost the host ``infer_us`` + ``resize_us`` +
    ``launch_us`` (``launch_overhead_us`` becomes their sum, ``host_stage_split`` their shares; the
    same shares then apply to NPU, cpu and python ops).

    >>> spec = with_host_stages("h100", infer_us=3.0, resize_us=1.0, launch_us=2.0)
    >>> spec.launch_overhead_us, spec.infer_us
    (6.0, 3.0)
    """
    stages = (infer_us, resize_us, launch_us)
    for v in stages:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or math.isnan(v):
            raise OptionError(f"host stage times must be non-negative numbers, got {stages}")
    total = float(sum(stages))
    split = tuple(v / total for v in stages) if total > 0 else (0.25, 0.25, 0.5)
    return with_overrides(device, launch_overhead_us=total, host_stage_split=split)
