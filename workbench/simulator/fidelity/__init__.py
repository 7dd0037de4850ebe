"""The simulator against published measurements: the fidelity dataset, its evaluation and the fit.

``workbench/data/fidelity.json`` holds published end-to-end latencies (network, batch, device,
schedule, milliseconds, citation).  :func:`evaluate` simulates every row with the workbench's own
graphs and schedules and reports the relative error; :func:`fit` fits the cost model's free
parameters (:data:`FIT_PARAMETERS`: kernel-library efficiencies, launch and synchronisation costs,
interference; never a per-network factor) on rows whose schedule does not depend on the model
(``sequential``, ``greedy``), by least squares on log latency; :func:`leave_one_network_out`
refits without each network in turn and predicts it, which is the honest estimate of the error on
a network the parameters never saw.  ``benchmarks/fidelity.py`` prints all of it.

Schedules: ``sequential`` → ``serial``; ``greedy`` → ``ios_greedy`` (IOS's Greedy, device syncs
between stages); ``ios_parallel`` → ``ios`` without merge and ``ios`` → ``ios`` with
``merge=True`` (IOS-Both), both with device-sync barriers as IOS's runtime runs them.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from workbench._atomic import read_json
from workbench.errors import OptionError
from workbench.simulator.cost_model.calibration import calibrate, measured_makespan_us
from workbench.simulator.cost_model.devices import DeviceSpec, data_text, get_device, with_overrides
from workbench.simulator.cost_model.kernel_model import GpuModel, default_model, model_for
from workbench.simulator.fidelity.searches import SearchStore, search_key
from workbench.values.graph import Graph
from workbench.values.trace import Trace

#: Parameters :func:`fit` may change: (name, where: "model" or "device", lower, upper).
FIT_PARAMETERS: tuple[tuple[str, str, float, float], ...] = (
    ("warp_utilization", "model", 0.01, 0.5),
    ("gemm_efficiency", "model", 0.5, 0.98),
    ("winograd_efficiency", "model", 0.2, 1.0),
    ("direct_efficiency", "model", 0.02, 0.9),
    ("interference", "device", 0.0, 3.0),
    ("launch_overhead_us", "device", 1.0, 20.0),
    ("kernel_latency_us", "device", 0.5, 20.0),
    ("device_sync_us", "device", 0.0, 60.0),
)
FIXED_SCHEDULES = ("sequential", "greedy")  # rows that can fit parameters
SEARCHED_SCHEDULES = ("ios_parallel", "ios")  # rows that need a search under the model


@dataclass(frozen=True)
class Row:
    """One published measurement."""

    id: str
    network: str
    batch: int
    device: str
    schedule: str
    latency_ms: float
    source: str


def load_rows(path: str | None = None) -> list[Row]:
    """The rows of the fidelity dataset (the packaged one unless ``path`` is given)."""
    raw = read_json(path, what="fidelity dataset") if path else \
        json.loads(data_text("fidelity.json"))
    rows = []
    for r in raw["rows"]:
        unknown = set(r) - set(Row.__dataclass_fields__)
        if unknown:
            raise OptionError(f"fidelity row {r.get('id')!r}: unknown key {sorted(unknown)[0]!r}")
        rows.append(Row(**r))
    return rows


def tolerances() -> dict[str, float]:
    return dict(json.loads(data_text("fidelity.json"))["tolerance"])


def network(name: str, batch: int) -> Graph:
    """The IOS benchmark graph ``name`` at ``batch`` (IOS's fused units)."""
    from workbench import models

    builders: dict[str, Callable[..., Graph]] = {
        "inception_v3": lambda b: models.inception_v3(b, fused=True),
        "squeezenet": lambda b: models.squeezenet(b),
        "randwire": lambda b: models.randwire(b),
        "nasnet_a_large": lambda b: models.nasnet_a_large(b),
    }
    if name not in builders:
        raise OptionError(f"unknown fidelity network {name!r} (known: {', '.join(builders)})")
    return builders[name](batch)


def schedule_row(row: Row, graph: Graph, spec: DeviceSpec, model: GpuModel | None = None,
                 *, ios_options: Mapping[str, Any] | None = None) -> Any:
    """The workbench schedule that corresponds to ``row.schedule``."""
    from workbench.schedulers import schedule

    if row.schedule == "sequential":
        return schedule(graph, "serial")
    if row.schedule == "greedy":
        return schedule(graph, "ios_greedy")
    if row.schedule in SEARCHED_SCHEDULES:
        options = {"device": spec, "merge": row.schedule == "ios", "sync": "device_sync",
                   "time_budget_s": None, "max_states": None,   # the full search, as published
                   "show_progress": False, **(ios_options or {})}
        return schedule(graph, "ios", **options)
    raise OptionError(f"fidelity row {row.id!r}: unknown schedule {row.schedule!r}")


def model_with(values: Mapping[str, float], base_model: GpuModel | None = None,
               base_device: str | DeviceSpec = "v100") -> tuple[GpuModel, DeviceSpec]:
    """The GPU model and device spec with the fitted ``values`` applied."""
    where = {name: place for name, place, _, _ in FIT_PARAMETERS}
    unknown = sorted(set(values) - set(where))
    if unknown:
        raise OptionError(f"unknown fit parameter {unknown[0]!r}")
    model = (base_model or model_for(get_device(base_device))).with_values(
        **{k: v for k, v in values.items() if where[k] == "model"})
    spec = with_overrides(get_device(base_device),
                          **{k: v for k, v in values.items() if where[k] == "device"})
    return model, spec


def predict(row: Row, model: GpuModel | None = None, spec: DeviceSpec | None = None, *,
            graphs: dict[tuple[str, int], Graph] | None = None,
            schedules: dict[str, Any] | None = None,
            ios_options: Mapping[str, Any] | None = None) -> float:
    """Simulated latency of ``row`` in ms.  ``graphs``/``schedules``: caches shared between
    calls (a fixed schedule does not depend on the model)."""
    from workbench.simulator.simulate import simulate_makespan

    spec = spec or get_device(row.device)
    key = (row.network, row.batch)
    graphs = graphs if graphs is not None else {}
    if key not in graphs:
        graphs[key] = network(row.network, row.batch)
    graph = graphs[key]
    sched = None
    if schedules is not None and row.schedule in FIXED_SCHEDULES:
        sched = schedules.get(row.id)
    searched = (row.network, row.batch, row.schedule, spec, model,
                tuple(sorted((ios_options or {}).items())))
    stored_key = None
    if sched is None and row.schedule in SEARCHED_SCHEDULES:
        sched = _SEARCHED.get(searched)
        if sched is None and _STORE:
            stored_key = search_key(graph, spec, model, row.schedule, ios_options or {})
            sched = _STORE[0].get(stored_key, graph)
    if sched is None:
        sched = schedule_row(row, graph, spec, model, ios_options=ios_options)
        if schedules is not None and row.schedule in FIXED_SCHEDULES:
            schedules[row.id] = sched
        if stored_key is not None:
            _STORE[0].put(stored_key, row.id, sched, graph)
    if row.schedule in SEARCHED_SCHEDULES and searched not in _SEARCHED:
        if len(_SEARCHED) >= 32:
            _SEARCHED.pop(next(iter(_SEARCHED)))
        _SEARCHED[searched] = sched
    return simulate_makespan(sched, spec, model=model) / 1000.0


#: IOS searches already run, by network, batch, schedule, device, model and options (the same
#: search for two rows, e.g. the README's Inception V3 row, or for two callers in one process
#: runs once; a search is deterministic).  At most 32 kept.
_SEARCHED: dict[tuple[Any, ...], Any] = {}
#: The store of searches in use (:func:`use_store`), if any.
_STORE: list[SearchStore] = []


def use_store(path: str | Path | None) -> SearchStore | None:
    """Take searched schedules from the file ``path`` (:mod:`.searches`), and add the searches
    run from now on to it (:meth:`SearchStore.save` writes them); ``None``: search every row
    again.  Returns the store."""
    _STORE.clear()
    if path is None:
        return None
    _STORE.append(SearchStore.load(path))
    return _STORE[0]


def evaluate(rows: Iterable[Row], model: GpuModel | None = None,
             spec: DeviceSpec | None = None, *, ios_options: Mapping[str, Any] | None = None,
             progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Simulate every row: dicts with the row's fields, ``simulated_ms`` and ``error``
    (simulated / published - 1) and ``seconds`` (time to schedule and simulate)."""
    graphs: dict[tuple[str, int], Graph] = {}
    out = []
    for row in rows:
        t0 = time.perf_counter()
        sim = predict(row, model, spec or get_device(row.device), graphs=graphs,
                      ios_options=ios_options)
        out.append({**row.__dict__, "simulated_ms": sim, "error": sim / row.latency_ms - 1.0,
                    "seconds": time.perf_counter() - t0})
        if progress:
            progress(f"{row.id}: {sim:.2f} ms (published {row.latency_ms:.2f})")
    return out


def fit(rows: Sequence[Row], *, start: Mapping[str, float] | None = None,
        parameters: Sequence[str] | None = None, max_evaluations: int = 400,
        progress: Callable[[str], None] | None = None) -> dict[str, float]:
    """Fit :data:`FIT_PARAMETERS` (or the named subset) on ``rows`` (fixed schedules only) by
    minimising the sum of squared log errors (Nelder-Mead in a bounded logistic space).  Returns
    the fitted values.  Deterministic; cost: ``max_evaluations`` × the rows' simulation time."""
    rows = [r for r in rows if r.schedule in FIXED_SCHEDULES]
    if not rows:
        raise OptionError("fit() needs rows with a fixed schedule (sequential or greedy)")
    graphs: dict[tuple[str, int], Graph] = {}
    schedules: dict[str, Any] = {}

    def loss(model: GpuModel, spec: DeviceSpec) -> float:
        return sum(math.log(predict(row, model, spec, graphs=graphs, schedules=schedules)
                            / row.latency_ms) ** 2 for row in rows)

    return _minimise(loss, start, parameters, max_evaluations, progress, "v100")


def fit_measured(traces: Iterable[Any], *, device: str | DeviceSpec = "h100",
                 parameters: Sequence[str] | None = None, max_evaluations: int = 200,
                 progress: Callable[[str], None] | None = None) -> DeviceSpec:
    """Fit the cost model to runs measured on a GPU (Traces of the CuPy executor, each with its
    schedule and mode; the whole-graph median makespan when the executor recorded one): the same
    parameters and loss as :func:`fit`, on the measured makespans.  Returns ``device``'s spec
    with the fitted runtime costs and a ``gpu_model`` override;
    :func:`workbench.simulator.cost_model.devices.save_device` writes it as a device file (the
    format of the shipped
    ones), :func:`workbench.simulator.cost_model.devices.load_device` reads it back.

    Per-op tables (each op's measured time pinned) are
    :func:`workbench.simulator.cost_model.costs.calibrate`'s job;
    this fits the model itself, so its predictions carry over to graphs never measured."""
    from workbench.simulator.simulate import simulate_makespan

    runs = []
    for trace in traces:
        schedule = getattr(trace, "schedule", None)
        if schedule is None:
            raise OptionError("fit_measured: a trace has no schedule to simulate")
        measured = measured_makespan_us(trace)
        if not measured > 0:
            raise OptionError(f"fit_measured: trace of {schedule.policy!r} has makespan "
                              f"{measured!r}")
        runs.append((schedule, trace.mode, measured))
    if not runs:
        raise OptionError("fit_measured: no traces given")

    def loss(model: GpuModel, spec: DeviceSpec) -> float:
        return sum(math.log(simulate_makespan(s, spec, mode=mode, model=model) / measured) ** 2
                   for s, mode, measured in runs)

    base = get_device(device)
    values = _minimise(loss, None, parameters, max_evaluations, progress, base)
    model, spec = model_with(values, base_device=base)
    overrides = tuple(sorted({**dict(base.model_overrides), **{
        name: float(values[name]) for name, place, _, _ in FIT_PARAMETERS
        if place == "model" and name in values}}.items()))
    from dataclasses import replace

    return replace(spec, model_overrides=overrides)


def simulator_error(traces: Mapping[str, Trace], calibration: Any = None, *,
                    device: str | DeviceSpec = "h100", mode: str | None = None) -> pd.DataFrame:
    """Simulated vs measured makespan per policy.

    ``traces`` maps a policy to its measured Trace (with ``trace.schedule``); ``calibration`` is
    anything :func:`workbench.simulator.cost_model.costs.calibrate` accepts (or None: the roofline);
    ``mode`` defaults
    to each trace's mode.  Columns: policy, mode, measured_us, simulated_us, error_us,
    error_pct (signed, relative to measured), abs_error_pct.
    """
    from workbench.simulator.simulate import simulate

    table = calibrate(calibration) if calibration is not None else None
    rows = []
    for policy, trace in traces.items():
        schedule = getattr(trace, "schedule", None)
        if schedule is None:
            raise OptionError(f"trace of policy {policy!r} has no schedule to simulate")
        run_mode = mode or trace.mode
        measured = measured_makespan_us(trace)
        simulated = simulate(schedule, device, mode=run_mode, calibration=table).makespan
        error = simulated - measured
        rows.append({"policy": policy, "mode": run_mode, "measured_us": measured,
                     "simulated_us": simulated, "error_us": error,
                     "error_pct": 100.0 * error / measured if measured > 0 else math.nan,
                     "abs_error_pct": 100.0 * abs(error) / measured if measured > 0
                     else math.nan})
    return pd.DataFrame(rows, columns=["policy", "mode", "measured_us", "simulated_us",
                                       "error_us", "error_pct", "abs_error_pct"])


def _minimise(loss: Callable[[GpuModel, DeviceSpec], float],
              start: Mapping[str, float] | None, parameters: Sequence[str] | None,
              max_evaluations: int, progress: Callable[[str], None] | None,
              base_device: str | DeviceSpec) -> dict[str, float]:
    from scipy.optimize import minimize

    bounds = {name: (lo, hi) for name, _, lo, hi in FIT_PARAMETERS}
    names = list(parameters or bounds)
    unknown = sorted(set(names) - set(bounds))
    if unknown:
        raise OptionError(f"unknown fit parameter {unknown[0]!r} (known: {', '.join(bounds)})")
    current = current_values()
    x0 = dict(current, **(start or {}))

    def unpack(x: Sequence[float]) -> dict[str, float]:
        out = {}
        for name, v in zip(names, x, strict=True):
            lo, hi = bounds[name]
            out[name] = lo + (hi - lo) / (1.0 + math.exp(-v))  # logistic: stays in bounds
        return out

    def pack(values: Mapping[str, float]) -> list[float]:
        x = []
        for name in names:
            lo, hi = bounds[name]
            p = min(max((values[name] - lo) / (hi - lo), 1e-6), 1 - 1e-6)
            x.append(math.log(p / (1 - p)))
        return x

    calls = [0]

    def objective(x: Sequence[float]) -> float:
        model, spec = model_with(unpack(x), base_device=base_device)
        total = loss(model, spec)
        calls[0] += 1
        if progress and calls[0] % 25 == 0:
            progress(f"fit: {calls[0]} evaluations, loss {total:.4f}")
        return total

    result = minimize(objective, pack(x0), method="Nelder-Mead",
                      options={"maxfev": max_evaluations, "xatol": 1e-3, "fatol": 1e-6})
    return {**{k: current[k] for k in names}, **unpack(result.x)}


def current_values() -> dict[str, float]:
    """The values of :data:`FIT_PARAMETERS` now in ``workbench/data/gpu_model.json``."""
    model = default_model()
    spec = get_device("v100")
    out = {}
    for name, place, _, _ in FIT_PARAMETERS:
        out[name] = float(getattr(model if place == "model" else spec, name))
    return out


def leave_one_network_out(rows: Sequence[Row], *, max_evaluations: int = 250,
                          progress: Callable[[str], None] | None = None
                          ) -> list[dict[str, Any]]:
    """For each network: fit on the other networks' fixed-schedule rows, then predict every row
    of the left-out network (fixed schedules only: a searched schedule would need the search per
    fold).  Returns :func:`evaluate`-style dicts with a ``fold`` key."""
    out = []
    for net in dict.fromkeys(r.network for r in rows):
        train = [r for r in rows if r.network != net]
        test = [r for r in rows if r.network == net and r.schedule in FIXED_SCHEDULES]
        values = fit(train, max_evaluations=max_evaluations, progress=progress)
        model, spec = model_with(values)
        for res in evaluate(test, model, spec):
            out.append({**res, "fold": f"without {net}"})
    return out
