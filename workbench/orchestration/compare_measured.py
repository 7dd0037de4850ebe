"""Measured rows of compare(): which executors run, with what options, and what a row shows.

``compare(..., executor=...)`` takes one executor name or several: at most one *measured*
executor (``"torch"``, ``"cupy"``) and ``"simulator"``.  With both, each schedule runs on the
device and is also simulated, and the row carries the prediction beside the measurement
(``simulated_us``, ``sim_error`` = simulated / measured − 1).  A measured row's makespan is the
executor's median over its timed runs.  Measured rows carry the executor and
the GPU the trace names (``executor``, ``gpu``) and a utilisation computed from the measured
trace alone: the FLOPs its ops did over the measured makespan times the device's peak at the
precision the executor ran (:func:`measured_utilisation`); the cost model's ``compute_us``
column, a prediction at the TF32 tensor-core peak, is not used for measured rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from workbench.errors import OptionError
from workbench.simulator.cost_model.devices import DeviceSpec
from workbench.values.graph import Graph
from workbench.values.trace import Trace

SIMULATOR = "simulator"
MEASURED_COLUMNS = ("executor", "gpu", "simulated_us", "sim_error")


def executor_plan(executor: str | Iterable[str]) -> tuple[str, bool]:
    """``(executor that makes the traces, also simulate?)`` from compare()'s ``executor``:
    a name, a comma-separated list, or a list of names; at most one measured executor."""
    from workbench._checks import check_choice
    from workbench.executors.execute import EXECUTORS

    names = executor.split(",") if isinstance(executor, str) else list(executor)
    names = [check_choice(str(n).strip(), EXECUTORS, "executor") for n in names if str(n).strip()]
    if not names:
        raise OptionError("executor names no executor (e.g. 'simulator', 'torch', "
                          "'torch,simulator')")
    measured = list(dict.fromkeys(n for n in names if n != SIMULATOR))
    if len(measured) > 1:
        raise OptionError(f"compare() measures on one executor at a time, got {measured} "
                          f"(add 'simulator' for the predictions beside them)")
    if not measured:
        return SIMULATOR, False
    reason = EXECUTORS.unavailable_reason(measured[0])
    if reason:
        from workbench.errors import DeviceUnavailable

        raise DeviceUnavailable(f"executor {measured[0]!r} cannot run here: {reason}; use "
                                f"executor='simulator'")
    return measured[0], SIMULATOR in names


def run_precision(precision: str) -> str:
    """The precision a measured executor runs at for compare()'s ``precision`` (``auto``, the
    simulator's cuDNN default, runs FP32 kernels so outputs can be checked bitwise)."""
    return "fp32" if precision == "auto" else precision


def execute_options(executor: str, spec: DeviceSpec, mode: str, precision: str,
                    user: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword options for ``execute(schedule, executor=...)`` in a comparison."""
    if executor == SIMULATOR:
        return {"device": spec, "mode": mode, "precision": precision, **user}
    if executor == "cupy":
        return {"device": spec, "mode": mode, **user}
    return {"mode": mode, "precision": run_precision(precision), "device": spec, **user}


def measured_utilisation(trace: Trace, spec: DeviceSpec, precision: str = "auto",
                         makespan_us: float | None = None) -> float:
    """FLOPs of the trace's ops / (measured makespan × the device's peak FLOP/s at the precision
    the run used: ``meta["precision"]``, else :func:`run_precision`).  FP32 is the CUDA-core
    peak, TF32/FP16/BF16 the dense tensor-core peak (FP32's where the device has none).  The
    makespan is ``makespan_us`` when given, else the trace's.  O(V)."""
    span = float(trace.makespan if makespan_us is None else makespan_us)
    df = trace.df
    if "flops" in df and df["flops"].notna().all():
        flops = float(df["flops"].sum())
    else:
        flops = float(sum(trace.graph.op(op).flops for op in df["op"]))
    ran = str(trace.meta.get("precision") or run_precision(precision))
    peak = spec.peak_flops(ran if ran in spec.precisions() else "fp32")
    return flops / (span * 1e-6 * peak) if span > 0 and peak > 0 else 0.0


def provenance(trace: Trace) -> dict[str, Any]:
    """GPU, driver and library versions a measured trace names (CuPy's ``device_info``, the
    torch executor's meta keys), for the report's note on measured rows."""
    meta = dict(trace.meta or {})
    info = dict(meta.get("device_info") or {})
    out: dict[str, Any] = {"executor": trace.executor, "gpu": info.get("name") or trace.device}
    versions = dict(info.get("versions") or {})
    for key in ("driver", "cuda", "cudnn", "torch", "cupy", "cuda_driver", "cuda_runtime"):
        value = meta.get(key, versions.get(key, info.get(key)))
        if value not in (None, ""):
            out[key] = str(value)
    for key in ("mode", "precision", "repeats", "warmup", "verified"):
        if key in meta:
            out[key] = meta[key]
    return out


def measured_cells(trace: Trace, spec: DeviceSpec, precision: str,
                   simulated_us: float | None,
                   bounds: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The measured row's own cells: the makespan (the executor's median over its timed runs,
    ``meta["makespan_median_us"]``, else the trace's end) with its ratios to ``bounds``,
    utilisation from the trace, executor, GPU, and the simulator's prediction with its error
    when one was made."""
    from workbench.simulator.cost_model.calibration import measured_makespan_us

    nan = float("nan")
    span = measured_makespan_us(trace)
    cells: dict[str, Any] = {"makespan_us": span,
                             "utilisation": measured_utilisation(trace, spec, precision, span),
                             "executor": trace.executor, "gpu": provenance(trace)["gpu"],
                             "simulated_us": nan, "sim_error": nan}
    if bounds is not None:
        lb, best = bounds.get("lower_bound_us", nan), bounds.get("optimum_us", nan)
        cells.update(ratio_to_lb=span / lb if lb > 0 else nan, ratio_to_optimum=span / best)
    if simulated_us is not None and span > 0:
        cells.update(simulated_us=simulated_us, sim_error=simulated_us / span - 1.0)
    return cells


def _device_key(name: str) -> str:
    """``"NVIDIA H100 80GB HBM3"`` -> ``"nvidiah10080gbhbm3"``: lower case, letters and digits."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def check_measured_device(trace: Trace, graph: Graph, spec: DeviceSpec) -> str:
    """The device a recorded run (``compare(measured=...)``) ran on, checked against what the
    what-ifs simulate; a one-line :class:`OptionError` when they differ, so that a measured
    time is never shown beside a prediction for another device.

    * a CPU-only run (host ops) is comparable when the graph keeps those ops on the host
      (``device`` ``cpu``/``python``: the simulator runs them on the host's cores, never on GPU
      streams), e.g. the measured trace's own graph; not when the graph puts them on the GPU;
    * a GPU run names its GPU (Kineto's ``deviceProperties``): the simulated device must be
      that GPU (``"NVIDIA H200"`` is ``h200``); a run that names no GPU (``"gpu"``) cannot be
      checked and is accepted.  O(ops of the trace)."""
    from workbench.simulator.cost_model.devices import DEVICES, HOST_DEVICES

    ops = [graph.op(o) for o in dict.fromkeys(trace.df["op"]) if o in graph]
    devices = set(trace.df["device"]) if "device" in trace.df else set()
    if trace.device == "cpu" or (devices and devices <= HOST_DEVICES):
        on_gpu = [op.id for op in ops if op.device not in HOST_DEVICES]
        if on_gpu:
            raise OptionError(
                f"the measured run is a CPU run (host ops) but graph {graph.name!r} puts "
                f"{len(on_gpu)} of its ops (e.g. {on_gpu[0]!r}) on the GPU of {spec.name!r}: a "
                f"CPU time beside a GPU prediction; compare the measured run's own graph "
                f"(trace.graph, whose ops stay on the host) or leave measured out")
        return "cpu"
    name = str(trace.device)
    key = _device_key(name)
    if key in ("", "gpu", "measured") or _device_key(spec.name) in key:
        return name
    known = [d for d in DEVICES.names() if _device_key(d) in key]
    hint = f"device={known[0]!r}" if known else "a device file describing it (device=PATH)"
    raise OptionError(f"the measured run is on {name!r} but the what-ifs are simulated on "
                      f"{spec.name!r} ({spec.description}): pass {hint} to compare them, or "
                      f"leave measured out")


__all__ = ["MEASURED_COLUMNS", "check_measured_device", "execute_options", "executor_plan",
           "measured_cells", "measured_utilisation", "provenance", "run_precision"]
