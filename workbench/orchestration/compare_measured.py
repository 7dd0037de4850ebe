"""Measured rows of compare(): which executors run, with what options, what a row shows, and
when two measured rows are told apart.

``compare(..., executor=...)`` takes one executor name or several: at most one *measured*
executor (``"torch"``, ``"cupy"``) and ``"simulator"``.  With both, each schedule runs on the
device and is also simulated, and the row carries the prediction beside the measurement
(``simulated_us``, ``sim_error`` = simulated / measured − 1) *when the simulated device is the
measured one* (:func:`simulates`: the GPU's name names the cost-model device, ``NVIDIA H200`` ↔
``h200``, or the device profile was calibrated on that same device); otherwise those cells stay
empty and :func:`unmodelled_note` says why (a CPU run beside an H100 prediction is no error of
the simulator's).  A measured row's makespan is the executor's median over its timed runs and
``makespan_q1_us`` / ``makespan_q3_us`` its quartiles (:func:`quartiles_us`).  Measured rows
carry the executor and the device they ran on (``executor``; ``gpu``: the GPU's name, or the
CPU's model name for a CPU run) and a utilisation computed from the measured trace alone: the
FLOPs its ops did over the measured makespan times the device's peak at the precision the
executor ran (:func:`measured_utilisation`; empty for a device the cost model does not model);
the cost model's ``compute_us`` column, a prediction at the TF32 tensor-core peak, is not used
for measured rows.

Noise (:func:`clearly_faster`, :func:`noise_ties`): a measured policy is faster than another only
when its quartile range lies wholly below the other's (its q3 < the other's q1, :func:`faster`)
and no chain of overlapping ranges of the other policies links the two (the noise-tied ranks of
the fidelity tables); otherwise the two tie within measurement noise.  The best is then every
policy that ties with the fastest, named together.  The comparison's best, its speedup wording
and its slower-than-serial notes all follow this one rule (``Comparison.ties``,
``Comparison.best_text``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from workbench.errors import OptionError
from workbench.orchestration.table_columns import MEASURED_COLUMNS, QUARTILE_COLUMNS
from workbench.simulator.cost_model.devices import DeviceSpec
from workbench.values.graph import Graph
from workbench.values.trace import Trace

SIMULATOR = "simulator"
#: Columns computed on the simulated device's model: left empty in measured rows of a device the
#: simulator does not model (:func:`simulates`).
MODELLED_COLUMNS = ("critical_path_us", "work_us", "lower_bound_us", "ratio_to_lb",
                    "optimum_us", "ratio_to_optimum", "utilisation")
#: A makespan with its quartiles: ``(median, q1, q3)`` in µs (a simulated one: all three equal).
Spread = tuple[float, float, float]


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


def measured_kind(trace: Trace) -> str:
    """``"cpu"`` when ``trace`` ran on the host's CPU (the torch executor without CUDA, a
    recorded run of host ops), else ``"gpu"``.  O(ops) for a recorded run."""
    from workbench.simulator.cost_model.devices import HOST_DEVICES

    meta = dict(trace.meta or {})
    info = dict(meta.get("device_info") or {})
    if info.get("type") == "cpu" or meta.get("torch_device") == "cpu" or trace.device == "cpu":
        return "cpu"
    devices = set(trace.df["device"]) if "device" in trace.df else set()
    return "cpu" if devices and devices <= HOST_DEVICES else "gpu"


def provenance(trace: Trace) -> dict[str, Any]:
    """Where a measured trace ran and with what: the executor, the device under its kind
    (``gpu``: the GPU's name; ``cpu``: the CPU's model name), driver and library versions
    (CuPy's ``device_info``, the torch executor's meta keys), for the report's note on measured
    rows and the CLI's ``measured on`` line."""
    meta = dict(trace.meta or {})
    info = dict(meta.get("device_info") or {})
    out: dict[str, Any] = {"executor": trace.executor,
                           measured_kind(trace): info.get("name") or trace.device}
    versions = dict(info.get("versions") or {})
    for key in ("driver", "cuda", "cudnn", "torch", "cupy", "cuda_driver", "cuda_runtime"):
        value = meta.get(key, versions.get(key, info.get(key)))
        if value not in (None, ""):
            out[key] = str(value)
    for key in ("mode", "precision", "repeats", "warmup", "verified"):
        if key in meta:
            out[key] = meta[key]
    return out


def device_name(trace: Trace) -> str:
    """The name of the device ``trace`` ran on (the GPU's, or the CPU's model name)."""
    on = provenance(trace)
    return str(on.get("gpu", on.get("cpu")))


def quartiles_us(trace: Trace) -> tuple[float, float]:
    """The quartiles (q1, q3) of a measured trace's timed makespans (µs): the executor's
    ``meta["makespan_q1_us"]`` / ``["makespan_q3_us"]``, else computed from
    ``meta["makespans_us"]``; NaN when the trace records neither (a recorded profile).

    >>> from types import SimpleNamespace as N
    >>> quartiles_us(N(meta={"makespans_us": [10.0, 11.0, 12.0, 13.0, 14.0]}))
    (11.0, 13.0)
    """
    import numpy as np

    meta = dict(getattr(trace, "meta", None) or {})
    q1, q3 = meta.get("makespan_q1_us"), meta.get("makespan_q3_us")
    if q1 is not None and q3 is not None:
        return float(q1), float(q3)
    spans = [float(v) for v in meta.get("makespans_us") or ()]
    if not spans:
        return math.nan, math.nan
    low, high = np.percentile(np.asarray(spans), [25, 75])
    return float(low), float(high)


def _point(spread: Spread) -> tuple[float, float]:
    """``(q1, q3)`` of a spread, the median for a quartile that is unknown (NaN)."""
    median, q1, q3 = (float(v) for v in spread)
    return (median if math.isnan(q1) else q1), (median if math.isnan(q3) else q3)


def faster(a: Spread, b: Spread) -> bool:
    """The rule's test: the makespan ``a`` (median, q1, q3) has its quartile range wholly below
    ``b``'s (``a``'s q3 < ``b``'s q1); overlapping ranges are a tie.  A makespan without
    quartiles (simulated; NaN quartiles) is its own range, so two of them compare as numbers.
    Among several policies, :func:`clearly_faster` also asks that no chain of overlapping
    ranges links the two.

    >>> faster((10.0, 9.0, 10.5), (12.0, 11.0, 13.0))
    True
    >>> faster((10.0, 9.0, 11.5), (12.0, 11.0, 13.0))    # 11.5 >= 11: the ranges overlap
    False
    """
    return _point(a)[1] < _point(b)[0]


def noise_ranks(spreads: Mapping[str, Spread]) -> dict[str, float]:
    """Each executed policy's rank (1 = least median) with measurement noise tied: policies
    whose quartile ranges overlap, directly or through a chain of overlapping neighbours in
    median order, share their average rank
    (:func:`workbench.simulator.fidelity.judge.noise_tied_ranks`, which the fidelity tables use
    too).  Infinite or NaN medians (not executed) are left out.  O(n log n)."""
    from workbench.simulator.fidelity.judge import noise_tied_ranks

    done = {p: (float(s[0]), *_point(s)) for p, s in spreads.items()
            if 0.0 <= float(s[0]) < math.inf}
    if not done:
        return {}
    names = list(done)
    median, q1, q3 = (list(col) for col in zip(*(done[p] for p in names), strict=True))
    return dict(zip(names, noise_tied_ranks(median, q1, q3), strict=True))


def clearly_faster(spreads: Mapping[str, Spread], a: str, b: str) -> bool:
    """Whether policy ``a`` is faster than ``b`` beyond measurement noise: ``a``'s quartile
    range lies wholly below ``b``'s (:func:`faster`) and no chain of overlapping ranges of the
    other policies links them (:func:`noise_ranks` differ), so that one-stream orders of the
    same work, each overlapping the next, are never ordered.  O(n log n).

    >>> s = {"a": (100.0, 95.0, 104.0), "b": (103.0, 101.0, 106.0), "c": (106.0, 105.5, 107.0)}
    >>> clearly_faster(s, "a", "c"), clearly_faster({"a": s["a"], "c": s["c"]}, "a", "c")
    (False, True)
    """
    if a not in spreads or b not in spreads or not faster(spreads[a], spreads[b]):
        return False
    ranks = noise_ranks(spreads)
    return a in ranks and b in ranks and ranks[a] != ranks[b]


def noise_ties(spreads: Mapping[str, Spread]) -> list[str]:
    """The policies that tie with the fastest within measurement noise, fastest median first
    (ties in the mapping's order): the fastest (least median) and every policy it is not
    :func:`clearly_faster` than; empty unless at least two, as
    :func:`~workbench.simulator.fidelity.accuracy.near_ties` for simulated rows.  No policy of
    the group is clearly faster than another of it.  O(n² log n).

    >>> noise_ties({"a": (100.0, 95.0, 104.0), "b": (103.0, 101.0, 106.0),
    ...             "c": (106.0, 105.5, 107.0), "d": (120.0, 118.0, 125.0)})
    ['a', 'b', 'c']
    >>> noise_ties({"a": (100.0, 95.0, 104.0), "b": (110.0, 105.0, 112.0)})
    []
    """
    ranks = noise_ranks(spreads)
    if len(ranks) < 2:
        return []
    order = sorted(ranks, key=lambda p: float(spreads[p][0]))
    tied = [p for p in order if p == order[0] or not clearly_faster(spreads, order[0], p)]
    return tied if len(tied) >= 2 else []


def _base_device(spec: DeviceSpec) -> tuple[str, str]:
    """``(cost-model device, what a profile was calibrated on)`` of ``spec``: a profile's
    (``h200+lab``) base device and its provenance's device; a registered or file device's own
    name and ``""``."""
    from workbench.simulator.cost_model.device_profile import profile_of

    profile = profile_of(spec)
    if profile is None:
        return spec.name, ""
    return profile.base_device, str(profile.provenance.get("gpu") or "")


def _names(device_name: str, model: str) -> bool:
    """Whether ``device_name`` names the cost-model device ``model``: ``model`` without ``_`` is
    one or more consecutive words of the name run together (``"NVIDIA H200"`` names ``h200``,
    ``"NVIDIA GeForce RTX 3070 Laptop GPU"`` ``rtx3070_laptop``; ``"NVIDIA L40S"`` is no
    ``l4``).

    >>> _names("NVIDIA H100 80GB HBM3", "h100"), _names("NVIDIA L40S", "l4")
    (True, False)
    """
    words = re.findall(r"[a-z0-9]+", device_name.lower())
    key = re.sub(r"[^a-z0-9]", "", model.lower())
    return bool(key) and any("".join(words[i:j]) == key for i in range(len(words))
                             for j in range(i + 1, len(words) + 1))


def simulates(spec: DeviceSpec, trace: Trace) -> bool:
    """Whether the simulator's device ``spec`` models the device ``trace`` was measured on, so
    that a prediction may stand beside the measurement: a GPU whose name names the cost-model
    device (``"NVIDIA H200"`` ↔ ``h200``; a profile ``h200+lab`` by its base ``h200``), or a
    device profile calibrated on that same device (its provenance names it: a CPU matches only
    that way).  O(words of the name²)."""
    measured = device_name(trace)
    base, calibrated_on = _base_device(spec)
    key, made_on = _device_key(measured), _device_key(calibrated_on)
    if key and made_on and (key in made_on or made_on in key):
        return True
    return measured_kind(trace) == "gpu" and _names(measured, base)


def unmodelled_note(spec: DeviceSpec, trace: Trace) -> str:
    """Why a measured comparison has no simulated column (:func:`simulates` is false): e.g.
    ``no simulated column: the run was measured on AMD EPYC (a CPU), the simulator models
    h100``."""
    base, calibrated_on = _base_device(spec)
    kind = " (a CPU)" if measured_kind(trace) == "cpu" else ""
    model = spec.name if not calibrated_on else f"{spec.name} (calibrated on {calibrated_on})"
    return (f"no simulated column: the run was measured on {device_name(trace)}{kind}, the "
            f"simulator models {model}; the model's bounds and utilisation are left out too")


def measured_cells(trace: Trace, spec: DeviceSpec, precision: str,
                   simulated_us: float | None,
                   bounds: Mapping[str, float] | None = None, *,
                   modelled: bool = True) -> dict[str, Any]:
    """The measured row's own cells: the makespan (the executor's median over its timed runs,
    ``meta["makespan_median_us"]``, else the trace's end) and its quartiles
    (:func:`quartiles_us`) with its ratios to ``bounds``, utilisation from the trace, executor,
    device, and the simulator's prediction with its error when one was made.  ``modelled``
    false (:func:`simulates`): the cells of :data:`MODELLED_COLUMNS` and the prediction are
    NaN, since they describe another device."""
    from workbench.simulator.cost_model.calibration import measured_makespan_us

    nan = float("nan")
    span = measured_makespan_us(trace)
    q1, q3 = quartiles_us(trace)
    cells: dict[str, Any] = {"makespan_us": span, "makespan_q1_us": q1, "makespan_q3_us": q3,
                             "utilisation": measured_utilisation(trace, spec, precision, span),
                             "executor": trace.executor, "gpu": device_name(trace),
                             "simulated_us": nan, "sim_error": nan}
    if bounds is not None:
        lb, best = bounds.get("lower_bound_us", nan), bounds.get("optimum_us", nan)
        cells.update(ratio_to_lb=span / lb if lb > 0 else nan, ratio_to_optimum=span / best)
    if not modelled:
        cells.update(dict.fromkeys(MODELLED_COLUMNS, nan))
    elif simulated_us is not None and span > 0:
        cells.update(simulated_us=simulated_us, sim_error=simulated_us / span - 1.0)
    return cells


def _device_key(name: str) -> str:
    """``"NVIDIA H100 80GB HBM3"`` -> ``"nvidiah10080gbhbm3"``: lower case, letters and digits."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def device_for_measured(trace: Trace, device: Any) -> tuple[Any, str | None]:
    """The device a comparison with the recorded run ``trace`` simulates its what-ifs on, and a
    note when it is not ``device``: a CPU run (host ops) compared with a built-in GPU device
    (``compare``'s default ``h100``) is compared on the built-in ``cpu`` device (the host, with
    the run's measured op times), since a CPU time beside a GPU's name is no comparison; a device
    file, a profile or a spec is kept as given.  O(ops of the trace)."""
    from workbench.simulator.cost_model.devices import DEVICES

    name = str(device).lower() if isinstance(device, str) else None
    if name is None or name not in DEVICES or name == "cpu" or measured_kind(trace) != "cpu":
        return device, None
    return "cpu", (f"the measured run is a CPU run: its what-ifs are simulated on device 'cpu' "
                   f"(the host, with the run's measured op times), not on {name!r}; a device "
                   f"file or profile of that CPU is device=PATH")


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


#: Rounds a measured comparison splits each policy's timed runs into (:func:`measure_rounds`).
ROUNDS = 3
#: The executors whose traces keep every timed run (``meta["makespans_us"]``), so that rounds
#: can be joined; another executor runs each policy once with the repeats asked for.
KEEPS_RUNS = ("torch", "cupy")


def round_repeats(exec_opts: Mapping[str, Any], rounds: int) -> int:
    """The timed runs of each round: the runs asked for (``repeats``, default 20) split over
    ``rounds``, rounded up."""
    return max(1, -(-int(exec_opts.get("repeats", 20)) // max(1, rounds)))


def measure_rounds(traces: Mapping[str, Trace], executor: str, exec_opts: Mapping[str, Any],
                   rounds: int, on_round: Any = None) -> dict[str, int]:
    """Rounds 2 to ``rounds`` of a measured comparison whose first round ran with
    ``exec_opts`` (``repeats``: one round's timed runs, :func:`round_repeats`): each policy's
    schedule runs that many more timed runs (after one warm-up run, since other schedules ran in
    between), the policies taken in turn and the first one rotated each round, and the
    makespans join its trace's (``meta``: median, quartiles and ``makespans_us`` recomputed,
    ``rounds`` counted).  Interleaving spreads a drift of the machine's speed (clock changes,
    other load) over every policy instead of turning it into differences between policies
    measured one after the other: on a shared 2-core machine one-stream orders of the same work
    measured in one block each came out up to 20% apart, consistently, and were called faster.
    A round that fails for a policy leaves its earlier runs.  ``on_round(k)`` is called as
    round ``k`` starts.  Returns the rounds each policy got.  O(rounds · policies) runs."""
    from workbench.errors import WorkbenchError
    from workbench.executors.execute import execute
    from workbench.values.trace import makespan_stats

    names = [p for p, t in traces.items()  # an executor that keeps no runs gets no rounds
             if t.schedule is not None and "makespans_us" in t.meta]
    done = dict.fromkeys(names, 1)
    opts = {**exec_opts, "warmup": 1}
    for key in ("verify", "return_outputs"):
        opts.pop(key, None)
    for k in range(2, rounds + 1):
        if on_round is not None:
            on_round(k)
        shift = (k - 1) % max(1, len(names))
        for name in names[shift:] + names[:shift]:
            trace = traces[name]
            assert trace.schedule is not None
            try:
                extra = execute(trace.schedule, executor=executor, **opts)
            except (WorkbenchError, RuntimeError):
                continue
            spans = [*trace.meta["makespans_us"], *extra.meta.get("makespans_us", [])]
            trace.meta.update(makespan_stats(spans))
            done[name] += 1
            trace.meta.update(rounds=done[name], repeats=len(spans))
    return done


__all__ = ["KEEPS_RUNS", "MEASURED_COLUMNS", "MODELLED_COLUMNS", "QUARTILE_COLUMNS", "ROUNDS",
           "Spread",
           "check_measured_device", "clearly_faster", "device_for_measured", "device_name",
           "execute_options",
           "executor_plan", "faster", "measure_rounds", "measured_cells", "measured_kind",
           "measured_utilisation", "noise_ranks", "noise_ties", "provenance",
           "quartiles_us", "round_repeats", "run_precision", "simulates", "unmodelled_note"]
