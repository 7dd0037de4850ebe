"""Calibration tables: per-op stand-alone times measured on a GPU, stored as JSON, fed to the
simulator.

A :class:`CalibrationTable` holds each op's time alone (µs), the device name, library versions,
the spin kernel's fixed overhead and the host time per eager launch.  It comes from
:func:`workbench.executors.gpu.calibration.calibrate_gpu` (times every op alone on the GPU, the only
part
that needs one) or :func:`table_from_trace` (a measured Trace's ``alone_us`` column), is written
and read with :func:`save_calibration` / :func:`load_calibration`, and :func:`calibrate` turns it
(or a Trace, a mapping or a path) into the ``{op_id: µs}`` mapping that
``simulate(..., calibration=...)`` accepts.  :func:`workbench.simulator.fidelity.simulator_error`
then
compares the calibrated simulator with measured makespans, one row per policy.

JSON layout (``format`` ``"workbench-calibration"``, ``version`` 1)::

    {"format": "workbench-calibration", "version": 1, "device": "NVIDIA H100 80GB HBM3",
     "graph": "inception_v3_b1", "versions": {"cupy": "14.2.0", ...},
     "spin_overhead_us": 2.9, "host_launch_us": 4.1, "ops": {"Conv2d_1a_3x3/conv": 11.3, ...},
     "meta": {...}}
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench._atomic import read_json, write_text
from workbench._checks import check_format, check_keys
from workbench.errors import FormatError, OptionError
from workbench.simulator.cost_model.devices import DeviceSpec, with_overrides
from workbench.values.trace import Trace

FORMAT = "workbench-calibration"
VERSION = 1


@dataclass(frozen=True)
class CalibrationTable:
    """Measured stand-alone op times (µs) and where they were measured."""

    ops: Mapping[str, float]
    device: str = ""
    graph: str = ""
    versions: Mapping[str, str] = field(default_factory=dict)
    spin_overhead_us: float | None = None
    host_launch_us: float | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "device": self.device, "graph": self.graph,
                "versions": dict(self.versions), "spin_overhead_us": self.spin_overhead_us,
                "host_launch_us": self.host_launch_us,
                "ops": {k: float(v) for k, v in self.ops.items()}, "meta": dict(self.meta)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "calibration") -> CalibrationTable:
        check_format(data, FORMAT, VERSION, where, kind="a workbench calibration table",
                     noun="calibration")
        check_keys(data, _KEYS, where, error=FormatError)
        for key in ("versions", "meta"):
            if not isinstance(data.get(key) or {}, Mapping):
                raise FormatError(f"{where}: {key!r} must be an object")
        for key in ("spin_overhead_us", "host_launch_us"):
            value = data.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(
                    value, (int, float)) or not math.isfinite(value) or value < 0):
                raise FormatError(f"{where}: {key!r} must be a non-negative number or null, "
                                  f"got {value!r}")
        ops = data.get("ops")
        if not isinstance(ops, Mapping):
            raise FormatError(f"{where}: \"ops\" must be an object of op id -> microseconds")
        clean = {}
        for k, v in ops.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or v < 0:
                raise FormatError(f"{where}: op {k!r} has time {v!r}; expected a non-negative "
                                  f"number of microseconds")
            clean[str(k)] = float(v)
        return cls(ops=clean, device=str(data.get("device", "")), graph=str(data.get("graph", "")),
                   versions=dict(data.get("versions") or {}),
                   spin_overhead_us=data.get("spin_overhead_us"),
                   host_launch_us=data.get("host_launch_us"), meta=dict(data.get("meta") or {}))


_KEYS = ("format", "version", "device", "graph", "versions", "spin_overhead_us",
         "host_launch_us", "ops", "meta")


def save_calibration(table: CalibrationTable | Mapping[str, float],
                     path: str | os.PathLike[str]) -> Path:
    """Write a calibration table (or a plain ``{op: µs}`` mapping) as JSON; returns the path."""
    if not isinstance(table, CalibrationTable):
        table = CalibrationTable(ops=dict(table))
    out = Path(path)
    return write_text(out, json.dumps(table.to_dict(), indent=1, sort_keys=True))


def load_calibration(path: str | os.PathLike[str]) -> CalibrationTable:
    """Read a table written by :func:`save_calibration` (one-line FormatError otherwise)."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise FormatError(f"{p}: no such calibration file")
    # read_json: a FIFO, device, directory, oversized file or invalid JSON is one line
    data = read_json(p, what="calibration file")
    return CalibrationTable.from_dict(data, where=str(p))


def table_from_trace(trace: Trace) -> CalibrationTable:
    """Calibration from a measured Trace: ``alone_us`` where finite (ops timed alone), else the
    op's measured duration in the run (which includes interference from concurrent ops)."""
    df = trace.df
    ops = {}
    for op, alone, dur in zip(df["op"], df["alone_us"], df["duration_us"], strict=True):
        value = alone if alone == alone and alone is not None else dur  # NaN check
        ops[str(op)] = float(max(0.0, value))
    meta = dict(getattr(trace, "meta", {}) or {})
    info = meta.get("device_info", {}) or {}
    return CalibrationTable(ops=ops, device=str(trace.device), graph=trace.graph.name,
                            versions=dict(info.get("versions", {})),
                            spin_overhead_us=meta.get("spin_overhead_us"),
                            host_launch_us=meta.get("host_us_per_launch"),
                            meta={"policy": trace.policy, "mode": trace.mode,
                                  "source": "trace alone_us" if df["alone_us"].notna().any()
                                  else "trace duration_us"})


def calibrate(trace_or_table: Trace | CalibrationTable | Mapping[str, Any] | str | os.PathLike[str]
              ) -> dict[str, float]:
    """Per-op stand-alone times (µs) for ``simulate(..., calibration=...)``.

    Accepts a measured :class:`~workbench.values.trace.Trace` (its ``alone_us`` where finite, else
    the
    op's measured ``duration_us``), a :class:`CalibrationTable`, a path
    to one saved as JSON (:func:`save_calibration`), a mapping with an ``"ops"`` entry (the JSON
    layout) or a plain ``{op_id: µs}`` mapping.  Times must be finite and non-negative.

    This pins the measured ops; to fit the cost model's own parameters to measured runs (so
    unmeasured graphs are predicted too) use :func:`workbench.simulator.fidelity.fit_measured`,
    which
    writes a device file in the format of ``workbench/data/devices/``.

    >>> calibrate({"a": 12.5, "b": 3})
    {'a': 12.5, 'b': 3.0}
    """
    source: object = trace_or_table
    if isinstance(source, (str, os.PathLike)):
        source = load_calibration(source)
    if hasattr(source, "df") and hasattr(source, "graph"):  # a Trace, or one read back
        source = table_from_trace(source)  # type: ignore[arg-type]
    if isinstance(source, CalibrationTable):
        ops: Mapping[str, Any] = source.ops
    elif isinstance(source, Mapping):
        ops = source["ops"] if isinstance(source.get("ops"), Mapping) else source
    else:
        raise OptionError(f"calibrate() needs a Trace, a calibration table, a path or a mapping, "
                          f"got {type(trace_or_table).__name__}")
    out = {}
    for op, value in ops.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            raise OptionError(f"calibration of op {op!r} is {value!r}; expected a non-negative "
                              f"number of microseconds")
        out[str(op)] = float(value)
    return out


def device_spec_for(table: CalibrationTable | None, base: str = "h100",
                    **changes: Any) -> DeviceSpec:
    """The cost-model device to simulate a calibrated run on: ``base`` with the measured host
    time per launch (``launch_overhead_us``) when the table has one."""
    updates: dict[str, Any] = {}
    if table is not None and table.host_launch_us:
        updates["launch_overhead_us"] = float(table.host_launch_us)
    updates.update(changes)
    return with_overrides(base, **updates) if updates else with_overrides(base)


def measured_makespan_us(trace: Trace) -> float:
    """A measured trace's whole-graph median makespan (else its timeline's makespan)."""
    meta = getattr(trace, "meta", {}) or {}
    value = meta.get("makespan_median_us")
    return float(value) if value is not None else float(trace.makespan)


#: Largest per-op time a calibration may give (µs; about 11.6 days): beyond it sums overflow.
MAX_CALIBRATED_US = 1e12


class FrozenCalibration(Mapping[str, float]):
    """Op times (op id -> µs) that cannot change: hashable, so that the cost table computed
    under them is kept on the graph like an uncalibrated one (``graph_costs``), and IOS's
    thousands of stage runs under one calibration cost each op once, not once a stage.

    ``checked`` is the op-id tuple :func:`check_calibration` checked it against (``None`` when
    it was not checked, e.g. a device profile's times): checking it again against the same ids
    returns it as it is.  Hash and equality are the contents'; a pickled copy rehashes.
    O(entries) to build, O(1) to hash."""

    __slots__ = ("_times", "_hash", "checked")

    def __init__(self, times: Mapping[str, float], checked: tuple[str, ...] | None = None
                 ) -> None:
        self._times = dict(times)
        self._hash = hash(frozenset(self._times.items()))
        self.checked = checked

    def __getitem__(self, key: str) -> float:
        return self._times[key]

    def __contains__(self, key: object) -> bool:
        return key in self._times

    def __iter__(self) -> Any:
        return iter(self._times)

    def __len__(self) -> int:
        return len(self._times)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenCalibration):
            return self._hash == other._hash and self._times == other._times
        return self._times == other if isinstance(other, Mapping) else NotImplemented

    def __repr__(self) -> str:
        return f"FrozenCalibration({self._times!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenCalibration, (self._times, self.checked))


def check_calibration(calibration: Any, op_ids: Any) -> FrozenCalibration | None:
    """``calibration`` (op id -> measured µs, as ``simulate(calibration=...)`` takes it, or a
    :class:`CalibrationTable`) checked against the graph's ``op_ids``: a mapping, every key a
    known op id (a near miss or a case variant is named: ``did you mean 'Conv'?``), every value
    a finite number in [0, :data:`MAX_CALIBRATED_US`] (no strings, booleans, NaN, infinities,
    negatives).  Each problem is a one-line :class:`OptionError`.  Returns the checked times as
    a :class:`FrozenCalibration`; one already checked against the same ids comes back as it is.
    O(ops + entries)."""
    from workbench._checks import did_you_mean, show

    if calibration is None:
        return None
    op_ids = tuple(op_ids)
    if isinstance(calibration, FrozenCalibration) and calibration.checked == op_ids:
        return calibration
    if isinstance(calibration, CalibrationTable):
        calibration = calibration.ops
    if not isinstance(calibration, Mapping):
        raise OptionError(f"calibration must be a mapping of op id -> measured µs (or a "
                          f"CalibrationTable), got {type(calibration).__name__} "
                          f"{show(calibration)}")
    known = set(op_ids)
    out: dict[str, float] = {}
    for key, value in calibration.items():
        if key not in known:
            raise OptionError(f"calibration names op {show(key)}, which the graph does not "
                              f"have{did_you_mean(key, known)}")
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or not 0 <= value <= MAX_CALIBRATED_US):
            raise OptionError(f"calibration of op {show(key)} must be a finite number of µs in "
                              f"[0, {MAX_CALIBRATED_US:g}], got {show(value)}")
        out[key] = float(value)
    return FrozenCalibration(out, checked=op_ids)


__all__ = [
    "FORMAT", "MAX_CALIBRATED_US", "VERSION", "CalibrationTable", "FrozenCalibration", "calibrate",
    "check_calibration", "device_spec_for", "load_calibration", "measured_makespan_us",
    "save_calibration", "table_from_trace",
]
