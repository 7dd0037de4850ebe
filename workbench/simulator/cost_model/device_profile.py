"""Device profiles: per-op stand-alone times and small probes measured on one GPU, with provenance.

``workbench calibrate`` (:func:`workbench.calibrate_device`) writes one; ``device=PATH`` (and
``--device PATH``) accepts one anywhere a device name is accepted: the profile names its base
device (a registered cost-model device, e.g. ``h200``) and its per-op times become the
simulator's calibration table for the graphs it measured (:func:`calibration_for`; ops and
graphs it did not measure keep the cost model).  Fitting the model's parameters to a profile
belongs to :mod:`workbench.simulator.fidelity`; the file format is shared and defined here.

JSON layout (``format`` ``"workbench-device-profile"``, ``version`` 1)::

    {"format": "workbench-device-profile", "version": 1,
     "provenance": {"gpu": "NVIDIA H200", "driver": "...", "torch": "2.13.0", "cudnn": "...",
                    "date": "2026-11-26T03:00:00Z", "timing": "one-op schedules, CUDA graph"},
     "base_device": "h200", "precision": "fp32",
     "ops": [{"graph": "inception_v3", "batch": 1, "op": "Conv2d_1a_3x3/conv",
              "kind": "conv2d", "alone_us": 11.3}, ...],
     "probes": {"launch_in_graph_us": 1.9, ...}}
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench._atomic import read_json, write_text
from workbench._checks import check_format, check_keys
from workbench.errors import FormatError
from workbench.simulator.cost_model.calibration import FrozenCalibration
from workbench.simulator.cost_model.devices import (
    PRECISIONS,
    DeviceSpec,
    get_device,
    with_overrides,
)

FORMAT = "workbench-device-profile"
VERSION = 1
_KEYS = ("format", "version", "provenance", "base_device", "precision", "ops", "probes")
_OP_KEYS = ("graph", "batch", "op", "kind", "alone_us")


@dataclass(frozen=True)
class OpTiming:
    """One op of one graph timed alone on the device (µs)."""

    graph: str
    batch: int
    op: str
    kind: str
    alone_us: float


@dataclass(frozen=True)
class DeviceProfile:
    """What :func:`workbench.calibrate_device` measured: per-op times, probes, provenance."""

    base_device: str
    precision: str
    ops: tuple[OpTiming, ...]
    probes: Mapping[str, Any] = field(default_factory=dict)
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "provenance": dict(self.provenance),
                "base_device": self.base_device, "precision": self.precision,
                "ops": [{"graph": t.graph, "batch": t.batch, "op": t.op, "kind": t.kind,
                         "alone_us": float(t.alone_us)} for t in self.ops],
                "probes": dict(self.probes)}

    def graphs(self) -> list[str]:
        """The names of the graphs measured, in file order."""
        return list(dict.fromkeys(t.graph for t in self.ops))

    def calibration_for(self, graph_name: str) -> dict[str, float]:
        """``{op_id: alone_us}`` of the graph called ``graph_name`` (empty when not measured)."""
        return {t.op: t.alone_us for t in self.ops if t.graph == graph_name}

    def spec(self, label: str = "") -> DeviceSpec:
        """The base device under its own name (``h200+profile`` or ``h200+<label>``), so that the
        simulator finds this profile's calibration through :func:`calibration_for`."""
        base = get_device(self.base_device)
        name = f"{base.name}+{label or 'profile'}"
        gpu = self.provenance.get("gpu", "?")
        return with_overrides(base, name=name,
                              description=f"{base.description}, op times measured on {gpu}")

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "device profile") -> DeviceProfile:
        """Check and read the JSON layout; one-line FormatError naming ``where`` and the key."""
        check_format(data, FORMAT, VERSION, where, kind="a device profile",
                     noun="device profile")
        check_keys(data, _KEYS, where, error=FormatError)
        base = data.get("base_device")
        if not isinstance(base, str):
            raise FormatError(f"{where}: \"base_device\" must be a device name, got {base!r}")
        try:
            get_device(base)
        except Exception as exc:  # OptionError: unknown device, with its known list
            raise FormatError(f"{where}: \"base_device\": {exc}") from None
        precision = data.get("precision", "fp32")
        if precision not in PRECISIONS:
            raise FormatError(f"{where}: \"precision\" must be one of {', '.join(PRECISIONS)}, "
                              f"got {precision!r}")
        for key in ("provenance", "probes"):
            if not isinstance(data.get(key, {}), Mapping):
                raise FormatError(f"{where}: {key!r} must be an object")
        raw_ops = data.get("ops")
        if not isinstance(raw_ops, list):
            raise FormatError(f"{where}: \"ops\" must be a list of op timings")
        ops = tuple(_op_timing(entry, f"{where}: ops[{i}]") for i, entry in enumerate(raw_ops))
        return cls(base_device=base, precision=precision, ops=ops,
                   probes=dict(data.get("probes", {})),
                   provenance=dict(data.get("provenance", {})))


def _op_timing(entry: Any, where: str) -> OpTiming:
    if not isinstance(entry, Mapping):
        raise FormatError(f"{where}: an op timing is an object with keys {', '.join(_OP_KEYS)}")
    check_keys(entry, _OP_KEYS, where, error=FormatError)
    missing = [k for k in _OP_KEYS if k not in entry]
    if missing:
        raise FormatError(f"{where}: missing key {missing[0]!r}")
    value, batch = entry["alone_us"], entry["batch"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        raise FormatError(f"{where}: \"alone_us\" must be a non-negative number of microseconds, "
                          f"got {value!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise FormatError(f"{where}: \"batch\" must be a positive integer, got {batch!r}")
    for key in ("graph", "op", "kind"):
        if not isinstance(entry[key], str):
            raise FormatError(f"{where}: {key!r} must be a string, got {entry[key]!r}")
    return OpTiming(entry["graph"], batch, entry["op"], entry["kind"], float(value))


def save_profile(profile: DeviceProfile, path: str | os.PathLike[str]) -> Path:
    """Write ``profile`` as JSON (atomically); returns the path."""
    return write_text(Path(path), json.dumps(profile.to_dict(), indent=1) + "\n")


def _read_json(path: Path, what: str) -> Any:
    """The JSON of ``path`` (:func:`workbench._atomic.read_json`: a FIFO, device, directory,
    oversized file or invalid JSON is a one-line FormatError, not a hang)."""
    if not path.exists() and not path.is_symlink():
        raise FormatError(f"{path}: no such {what}")
    return read_json(path, what=what)


def load_profile(path: str | os.PathLike[str]) -> DeviceProfile:
    """Read a profile written by :func:`save_profile` (one-line FormatError naming the file and
    the key otherwise)."""
    p = Path(path)
    return DeviceProfile.from_dict(_read_json(p, "device profile"), where=str(p))


#: Profiles loaded as devices, by the name of the spec they gave (see :func:`calibration_for`).
_LOADED: dict[str, DeviceProfile] = {}
#: The file each of those names was read from (two files with one stem get two names).
_SOURCES: dict[str, str] = {}


def spec_of_profile(path: Path, raw: Any) -> DeviceSpec:
    """The device spec of a profile file: its base device, named ``<base>+<file stem>``, whose
    op times :func:`calibration_for` then gives the simulator.  Another file with the same stem,
    read in the same process, is named ``<base>+<stem>-2`` (then ``-3`` ...), so each keeps its
    own op times; the same file read again (it changed) keeps its name.
    ``workbench.simulator.cost_model.devices.get_device`` calls this for files whose ``format``
    is a profile's: its ``FILE_FORMATS`` table names this function by import path, so reading a
    profile needs no import of this module first."""
    profile = DeviceProfile.from_dict(raw, where=str(path))
    source = str(Path(path).resolve())
    spec, n = profile.spec(path.stem), 1
    while _SOURCES.get(spec.name, source) != source:
        n += 1
        spec = profile.spec(f"{path.stem}-{n}")
    _LOADED[spec.name], _SOURCES[spec.name] = profile, source
    return spec


def profile_of(device: DeviceSpec | str) -> DeviceProfile | None:
    """The profile a device spec came from (``None`` for registered devices and device files)."""
    name = device.name if isinstance(device, DeviceSpec) else str(device)
    return _LOADED.get(name)


def calibration_for(device: DeviceSpec | str, graph_name: str) -> FrozenCalibration | None:
    """The measured ``{op: µs}`` of ``graph_name`` when ``device`` came from a profile that
    timed it, else ``None`` (the cost model decides)."""
    profile = profile_of(device)
    if profile is None:
        return None
    name = device.name if isinstance(device, DeviceSpec) else str(device)
    kept = _BY_GRAPH.get(name)
    if kept is None or kept[0] is not profile:  # a file read again: its old times are gone
        kept = _BY_GRAPH[name] = (profile, {})
    frozen = kept[1]
    if graph_name not in frozen:  # once per graph and profile read: O(profile ops)
        times = profile.calibration_for(graph_name)
        frozen[graph_name] = FrozenCalibration(times) if times else None
    return frozen[graph_name]

#: Per profile device name (with the profile read under it, so that a file read again is seen):
#: each measured graph's times, frozen once, so that every simulation of that graph on the
#: profile's device finds its cost table kept on the graph (``graph_costs``) instead of re-costing
#: every op (IOS on a profile ran 80-240x slower than on its base device).
_BY_GRAPH: dict[str, tuple[DeviceProfile, dict[str, FrozenCalibration | None]]] = {}


def ops_from(rows: Sequence[Mapping[str, Any]]) -> tuple[OpTiming, ...]:
    """Op timings from plain rows with the JSON keys (checked as a file's would be)."""
    return tuple(_op_timing(r, f"ops[{i}]") for i, r in enumerate(rows))


__all__ = [
    "FORMAT", "VERSION", "DeviceProfile", "OpTiming", "calibration_for", "load_profile",
    "ops_from", "profile_of", "save_profile", "spec_of_profile",
]
