"""Fit a device's cost-model parameters to measurements on it, and write the device file.

Two stages, both least squares on log errors (Nelder-Mead in a bounded logistic space, as
:func:`workbench.simulator.fidelity.fit`):

1. **Kernels** (:data:`KERNEL_PARAMETERS`) on a stand-alone table: a plain mapping
   ``{(graph_key, op_id): µs}`` with the graphs it names (the shared H200 ``op_alone_us.json``
   through :func:`workbench.simulator.fidelity.measured.alone_table`; a calibration profile's
   ``ops`` rows
   ``{"graph", "batch", "op", "alone_us"}`` through :func:`table_from_profile`).  Each op's
   simulated ``op_cost(...).alone_us`` against its measured time.
2. **Running schedules** (:data:`RUN_PARAMETERS`) on measured makespans: ``(schedule, mode,
   precision, µs)`` runs (fixed schedules: the measured ones, never re-run policies).

Nothing is fitted per network or looked up by op name: the table and the makespans only set the
parameters of the general model.  :func:`fit_device` returns the fitted
:class:`~workbench.simulator.cost_model.devices.DeviceSpec` (runtime fields set, kernel parameters
as ``gpu_model``
overrides); :func:`workbench.simulator.cost_model.devices.save_device` writes it.  Cost: stage 1 one
costing of the
table's graphs per evaluation (about 0.1-1 s), stage 2 one simulation per run per evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from workbench._gc import without_gc
from workbench.errors import OptionError
from workbench.simulator.cost_model.devices import (
    PRECISIONS,
    DeviceSpec,
    get_device,
    with_overrides,
)
from workbench.simulator.cost_model.kernel_model import GpuModel, model_for
from workbench.values.graph import Graph

#: (name, "model" or "device", lower, upper) fitted on stand-alone times.
KERNEL_PARAMETERS: tuple[tuple[str, str, float, float], ...] = (
    ("kernel_latency_us", "device", 0.3, 10.0),
    ("elementwise_efficiency", "model", 0.001, 0.5),
    ("l2_bandwidth_ratio", "model", 1.0, 6.0),
    ("gemm_efficiency", "model", 0.1, 0.98),
    ("tile_intensity_ref", "model", 1.0, 128.0),
    ("winograd_efficiency", "model", 0.05, 1.0),
    ("direct_efficiency", "model", 0.005, 0.9),
    ("warp_utilization", "model", 0.005, 0.5),
    ("gemm_k_overhead", "model", 0.0, 256.0),
    ("elementwise_block_flops", "model", 0.0, 4096.0),
    ("window_efficiency", "model", 0.001, 0.5),
)
#: Fitted on measured makespans; the tensor-core ones (:data:`TENSOR_PARAMETERS`) on a
#: stand-alone table in a tensor-core precision instead, when there is one.
RUN_PARAMETERS: tuple[tuple[str, str, float, float], ...] = (
    ("tensor_efficiency", "model", 0.05, 0.98),
    ("tensor_k_overhead", "model", 0.0, 1024.0),
    ("tensor_intensity_ref", "model", 1.0, 1024.0),
    ("interference", "device", 0.0, 3.0),
    ("event_wait_us", "model", 0.0, 1.0),  # a graph edge: at most a kernel latency
    ("op_gap_us", "model", 0.0, 10.0),
)
TENSOR_PARAMETERS = ("tensor_efficiency", "tensor_k_overhead", "tensor_intensity_ref")
Run = tuple[Any, str, str, float]  # (Schedule, mode, precision, measured µs)
#: Starting points of stage 2 over the start given (each fitted, the lowest loss kept): the
#: tensor-core tiles' fixed K-steps have a valley near tens of K-steps and one near hundreds
#: (where small-K convolutions keep FP32 kernels under TF32).
RUN_STARTS: tuple[dict[str, float], ...] = (
    {}, {"tensor_k_overhead": 800.0, "tensor_intensity_ref": 30.0})


def table_from_profile(profile: Mapping[str, Any]) -> dict[tuple[str, str], float]:
    """A calibration profile (``{"ops": [{"graph", "batch", "op", "alone_us", ...}], ...}``) as
    the stand-alone table :func:`fit_device` takes: keyed ``<graph>_b<batch>`` (a graph name
    that already ends so is kept)."""
    out = {}
    for i, row in enumerate(profile.get("ops", ())):
        try:
            graph, batch = str(row["graph"]), int(row["batch"])
            key = (graph if graph.endswith(f"_b{batch}") else f"{graph}_b{batch}",
                   str(row["op"]))
            us = float(row["alone_us"])
        except (KeyError, TypeError, ValueError) as exc:
            raise OptionError(f"calibration profile: ops[{i}] lacks graph/batch/op/alone_us "
                              f"({exc})") from None
        if not us > 0:
            raise OptionError(f"calibration profile: ops[{i}] has alone_us {us!r}")
        out[key] = us
    return out


def apply(values: Mapping[str, float], base: DeviceSpec,
          fixed: Mapping[str, Any] | None = None) -> tuple[GpuModel, DeviceSpec]:
    """The model and device with ``values`` (and ``fixed`` model values) applied over ``base``
    and its overrides; the device carries the model values as ``gpu_model`` overrides."""
    where = {n: w for n, w, _, _ in (*KERNEL_PARAMETERS, *RUN_PARAMETERS)}
    unknown = sorted(set(values) - set(where))
    if unknown:
        raise OptionError(f"unknown device fit parameter {unknown[0]!r}")
    model_values = {**dict(base.model_overrides), **(fixed or {}),
                    **{k: v for k, v in values.items() if where[k] == "model"}}
    spec = with_overrides(base, **{k: v for k, v in values.items() if where[k] == "device"})
    spec = replace(spec, model_overrides=tuple(sorted(model_values.items())))
    return model_for(spec), spec


def current(spec: DeviceSpec, names: Sequence[str]) -> dict[str, float]:
    model = model_for(spec)
    out = {}
    for name in names:
        out[name] = float(getattr(spec, name) if hasattr(spec, name) else getattr(model, name))
    return out


def alone_loss(table: Mapping[tuple[str, str], float], graphs: Mapping[str, Graph],
               precision: str = "fp32") -> Callable[[GpuModel, DeviceSpec], list[float]]:
    """Log errors of the table's ops under a model (the stage-1 residuals)."""
    from workbench.simulator.cost_model.costs import graph_costs

    index: list[tuple[Graph, int, float]] = []
    for (key, op), us in table.items():
        if key not in graphs:
            raise OptionError(f"stand-alone table: no graph for {key!r}")
        g = graphs[key]
        if op not in g:
            raise OptionError(f"stand-alone table: graph {key!r} has no op {op!r}")
        if not us > 0:
            raise OptionError(f"stand-alone table: {key}/{op} has time {us!r}")
        index.append((g, g.index(op), math.log(us)))
    if not index:
        raise OptionError("stand-alone table is empty")

    def residuals(model: GpuModel, spec: DeviceSpec) -> list[float]:
        out = []
        costs: dict[int, list[Any]] = {}
        for g, i, log_us in index:
            c = costs.get(id(g))
            if c is None:
                c = costs[id(g)] = graph_costs(g, spec, precision=precision, model=model)
            out.append(math.log(max(c[i].alone_us, 1e-6)) - log_us)
        return out

    return residuals


def run_loss(runs: Sequence[Run]) -> Callable[[GpuModel, DeviceSpec], list[float]]:
    """The stage-2 residuals: the log error of every measured makespan and, for every run of a
    case (same graph, mode and precision) that has a measured ``serial`` run, the log error of
    its speedup over serial.  The second kind weighs what a comparison ranks: a fit of
    makespans alone can move every policy of a case together and leave them mis-ordered."""
    from workbench.simulator.simulate import simulate_makespan

    if not runs:
        raise OptionError("no measured runs to fit")
    serial: dict[tuple[int, str, str], int] = {}
    for i, (s, mode, prec, _) in enumerate(runs):
        if getattr(s, "policy", "") == "serial":
            serial[(id(s.graph), mode, prec)] = i
    pairs = [(i, serial[key]) for i, (s, mode, prec, _) in enumerate(runs)
             if (key := (id(s.graph), mode, prec)) in serial and serial[key] != i]

    def residuals(model: GpuModel, spec: DeviceSpec) -> list[float]:
        logs = [math.log(simulate_makespan(s, spec, mode=mode, precision=prec, model=model) / us)
                for s, mode, prec, us in runs]
        return logs + [logs[i] - logs[j] for i, j in pairs]

    return residuals


@without_gc  # thousands of simulations, no cycles: the collector had 18% of a fit (workbench._gc)
def minimise(residuals: Callable[[GpuModel, DeviceSpec], list[float]], base: DeviceSpec,
             parameters: Sequence[tuple[str, str, float, float]], *,
             fixed: Mapping[str, Any] | None = None, max_evaluations: int = 300,
             progress: Callable[[str], None] | None = None,
             start: Mapping[str, float] | None = None) -> dict[str, float]:
    """Bounded least squares on the residuals over ``parameters`` (scipy's trust-region
    reflective method, finite-difference Jacobian: ``len(parameters) + 1`` evaluations a step),
    from the values ``base`` has now, clipped into the bounds.  Deterministic."""
    import numpy as np
    from scipy.optimize import least_squares

    names = [p[0] for p in parameters]
    lo = np.array([p[2] for p in parameters])
    hi = np.array([p[3] for p in parameters])
    start = {**current(apply({}, base, fixed)[1], names),
             **{k: v for k, v in (start or {}).items() if k in names}}
    x0 = np.clip([start[n] for n in names], lo + 1e-3 * (hi - lo), hi - 1e-3 * (hi - lo))
    calls = [0]

    def objective(x: Any) -> Any:
        model, spec = apply(dict(zip(names, map(float, x), strict=True)), base, fixed)
        r = np.asarray(residuals(model, spec))
        calls[0] += 1
        if progress and calls[0] % 25 == 0:
            progress(f"fit: {calls[0]} evaluations, mean squared log error "
                     f"{float(np.mean(r ** 2)):.4f}")
        return r

    result = least_squares(objective, x0, bounds=(lo, hi), method="trf", diff_step=1e-2,
                           x_scale=hi - lo, max_nfev=max_evaluations)
    return dict(zip(names, map(float, result.x), strict=True))


def fit_device(base: str | DeviceSpec, *, table: Mapping[tuple[str, str], float] | None = None,
               graphs: Mapping[str, Graph] | None = None, runs: Sequence[Run] = (),
               fixed: Mapping[str, Any] | None = None,
               kernel_parameters: Sequence[str] | None = None,
               run_parameters: Sequence[str] | None = None, max_evaluations: int = 300,
               progress: Callable[[str], None] | None = None,
               start: Mapping[str, float] | None = None,
               run_starts: Sequence[Mapping[str, float]] = RUN_STARTS,
               tensor_table: Mapping[tuple[str, str], float] | None = None,
               tensor_precision: str = "tf32") -> DeviceSpec:
    """Fit ``base``'s parameters: stage 1 on the stand-alone ``table`` (with its ``graphs``),
    stage 2 on the measured ``runs``; ``tensor_table``: stand-alone times in
    ``tensor_precision`` (the calibration tool's output in TF32): stage 1 then fits the
    tensor-core parameters (:data:`TENSOR_PARAMETERS`) on it too, and stage 2 leaves them;
    ``fixed``: model values set, not fitted (e.g.
    ``{"concat_one_kernel": 1}``); ``*_parameters``: subsets of the stages' names; ``start``:
    starting values (default: the base's; the fit is local, so the start matters);
    ``run_starts``: stage 2's extra starting points over ``start`` (the best fit is kept).
    Returns the fitted spec (write it with
    :func:`workbench.simulator.cost_model.devices.save_device`)."""
    spec = get_device(base)
    spec = apply({}, spec, fixed)[1]
    tensor_precisions = [p for p in PRECISIONS if p != "fp32"]
    if tensor_table and tensor_precision not in tensor_precisions:
        raise OptionError(f"fit_device: tensor_precision {tensor_precision!r} is not a "
                          f"tensor-core precision ({', '.join(tensor_precisions)})")
    tensor = [p for p in RUN_PARAMETERS if p[0] in TENSOR_PARAMETERS] if tensor_table else []
    if table or tensor_table:
        if graphs is None:
            raise OptionError("fit_device: a stand-alone table needs its graphs")
        parts = [alone_loss(t, graphs, prec) for t, prec in ((table, "fp32"),
                                                              (tensor_table, tensor_precision))
                 if t]
        params = _subset([*(KERNEL_PARAMETERS if table else ()), *tensor], kernel_parameters)
        if params:
            values = minimise(_joined(parts), spec, params, max_evaluations=max_evaluations,
                              progress=progress, start=start)
            spec = apply(values, spec)[1]
    if runs:
        params = _subset([p for p in RUN_PARAMETERS if p not in tensor], run_parameters)
        if not params:
            return spec
        loss = run_loss(runs)
        best: tuple[float, DeviceSpec] | None = None
        for extra in run_starts:  # the stage-2 loss has several valleys: a few starts, the best
            tried = minimise(loss, spec, params, max_evaluations=max_evaluations,
                             progress=progress, start={**(start or {}), **extra})
            fitted = apply(tried, spec)[1]
            value = sum(r * r for r in loss(*apply({}, fitted)))
            if best is None or value < best[0]:
                best = (value, fitted)
        spec = best[1] if best is not None else spec
    return spec


def _joined(parts: Sequence[Callable[[GpuModel, DeviceSpec], list[float]]]
            ) -> Callable[[GpuModel, DeviceSpec], list[float]]:
    """One residual function: every part's residuals, one after another."""
    if len(parts) == 1:
        return parts[0]
    return lambda model, spec: [r for part in parts for r in part(model, spec)]


def _subset(params: Sequence[tuple[str, str, float, float]],
            names: Sequence[str] | None) -> list[tuple[str, str, float, float]]:
    if names is None:
        return list(params)
    known = {p[0] for p in params}
    unknown = sorted(set(names) - known)
    if unknown:
        raise OptionError(f"unknown fit parameter {unknown[0]!r} (known: {', '.join(known)})")
    return [p for p in params if p[0] in names]


__all__ = ["KERNEL_PARAMETERS", "RUN_PARAMETERS", "TENSOR_PARAMETERS", "alone_loss", "apply",
           "fit_device", "minimise", "run_loss", "table_from_profile"]
