"""The simulator judged on schedules measured on a GPU: per case errors, regret, rank correlation,
and per-op stand-alone errors.

A *case* is a network at a batch and precision; within it every measured policy's schedule
(:mod:`workbench.simulator.fidelity.measured`, rebuilt exactly) is simulated in graph mode (the
measurements replay a CUDA graph) and compared with its measured ``graph_us``:

* serial and best (the fastest policy, measured and simulated each on its own) and their errors;
* the speedup serial / best, measured and simulated;
* **regret**: the measured time of the policy the simulator ranks first over the measured best,
  minus 1 (0: the simulator picks a policy the GPU also finds fastest);
* Spearman's rank correlation of the policies' makespans (pandas ranks; ties averaged), the
  criterion; beside it, for information, the same with the measured ranks of policies whose
  quartile ranges overlap tied (:func:`noise_tied_ranks`: the GPU did not order them).

:func:`alone_errors` compares every op's simulated stand-alone time (``op_cost(...).alone_us``)
with the measured one (``op_alone_us.json``) and classes the ops by shape (:func:`shape_class`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.errors import OptionError
from workbench.ops import OPS
from workbench.simulator.cost_model.devices import DeviceSpec, get_device
from workbench.simulator.cost_model.kernel_model import GpuModel, model_for
from workbench.simulator.fidelity.measured import (
    MeasuredRow,
    load_graph,
    load_measured_rows,
    load_schedule,
)
from workbench.values.graph import Graph, Op

#: Rounding slack of the rank-correlation criterion.
SPEARMAN_SLACK = 1e-9
#: Acceptance of issue 23, per measured case.
CASE_TOLERANCE = {"serial": 0.15, "best": 0.15, "speedup": 0.10, "regret": 0.02,
                  "spearman": 0.8, "alone_median": 0.15, "alone_p90": 0.35}


def cases(rows: Iterable[MeasuredRow] | None = None) -> list[tuple[str, int, str]]:
    """The (network, batch, precision) cases of the measured rows, in file order."""
    return list(dict.fromkeys(r.case for r in (rows if rows is not None
                                               else load_measured_rows())))


def simulate_rows(rows: Sequence[MeasuredRow], spec: DeviceSpec | str = "h200",
                  model: GpuModel | None = None) -> list[float]:
    """Simulated graph-mode makespan (µs) of every row's measured schedule, at the row's
    precision.  Cost: one simulation per row."""
    from workbench.simulator.simulate import simulate_makespan

    spec = get_device(spec)
    model = model or model_for(spec)
    return [simulate_makespan(load_schedule(r.network, r.batch, r.policy, r.gpu), spec,
                              mode="graph", precision=r.precision, model=model) for r in rows]


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (Pearson on average ranks); NaN for fewer than 2 values or a
    constant side."""
    if len(a) < 2:
        return math.nan
    ra = pd.Series(list(a)).rank()
    rb = pd.Series(list(b)).rank()
    if ra.nunique() < 2 or rb.nunique() < 2:
        return math.nan
    return float(ra.corr(rb))


def noise_tied_ranks(median: Sequence[float], q1: Sequence[float],
                     q3: Sequence[float]) -> list[float]:
    """Ranks of measured values (1 = least) in which values whose quartile ranges ``[q1, q3]``
    overlap, directly or through a chain of overlapping neighbours in sorted order, share their
    average rank.  O(n log n).

    >>> noise_tied_ranks([10, 11, 20], [9, 10.5, 19], [10.6, 12, 21])
    [1.5, 1.5, 3.0]
    """
    order = sorted(range(len(median)), key=lambda j: median[j])
    ranks = [0.0] * len(median)
    start = 0
    while start < len(order):
        end, reach = start + 1, q3[order[start]]
        while end < len(order) and q1[order[end]] <= reach:
            reach = max(reach, q3[order[end]])
            end += 1
        for j in order[start:end]:
            ranks[j] = (start + 1 + end) / 2
        start = end
    return ranks


def case_table(rows: Sequence[MeasuredRow], simulated: Sequence[float]) -> pd.DataFrame:
    """One line per case: measured and simulated serial and best, their errors, the speedups and
    their error, the policies ranked first, regret, Spearman (and ``spearman_noise``, with
    :func:`noise_tied_ranks` on the measured side), number of policies."""
    if len(rows) != len(simulated):
        raise OptionError("case_table: one simulated value per row")
    by: dict[tuple[str, int, str], list[tuple[MeasuredRow, float]]] = {}
    for r, s in zip(rows, simulated, strict=True):
        by.setdefault(r.case, []).append((r, s))
    out = []
    for (net, batch, prec), items in by.items():
        meas = {r.policy: r.graph_us for r, _ in items}
        sim = {r.policy: s for r, s in items}
        if "serial" not in meas:
            raise OptionError(f"case {net} b{batch} {prec}: no serial row")
        best_m = min(meas, key=meas.__getitem__)
        best_s = min(sim, key=sim.__getitem__)
        serial_m, serial_s = meas["serial"], sim["serial"]
        sp_m, sp_s = serial_m / meas[best_m], serial_s / sim[best_s]
        pols = list(meas)
        tied = noise_tied_ranks([r.graph_us for r, _ in items],
                                [r.graph_q1_us for r, _ in items],
                                [r.graph_q3_us for r, _ in items])
        out.append({
            "network": net, "batch": batch, "precision": prec, "policies": len(pols),
            "serial_measured": serial_m, "serial_simulated": serial_s,
            "serial_error": serial_s / serial_m - 1,
            "best_measured": meas[best_m], "best_policy_measured": best_m,
            "best_simulated": sim[best_s], "best_policy_simulated": best_s,
            "best_error": sim[best_s] / meas[best_m] - 1,
            "speedup_measured": sp_m, "speedup_simulated": sp_s, "speedup_error": sp_s / sp_m - 1,
            "regret": meas[best_s] / meas[best_m] - 1,
            "spearman": spearman([meas[p] for p in pols], [sim[p] for p in pols]),
            "spearman_noise": spearman(tied, [s for _, s in items]),
        })
    return pd.DataFrame(out)


def misses(table: pd.DataFrame, tol: Mapping[str, float] | None = None) -> dict[str, list[str]]:
    """Per case label, the criteria it fails (empty lists dropped)."""
    tol = dict(CASE_TOLERANCE, **(tol or {}))
    out: dict[str, list[str]] = {}
    for r in table.to_dict("records"):
        bad = []
        for name in ("serial", "best", "speedup"):
            if abs(r[f"{name}_error"]) > tol[name]:
                bad.append(f"{name} {100 * r[f'{name}_error']:+.1f}%")
        if r["regret"] > tol["regret"]:
            bad.append(f"regret {100 * r['regret']:.1f}%")
        if r["policies"] > 2 and not rank_correlation_ok(r["spearman"], tol["spearman"]):
            bad.append(f"spearman {r['spearman']:.2f}")
        if bad:
            out[case_label(r)] = bad
    return out


def rank_correlation_ok(rho: float, minimum: float) -> bool:
    """``rho`` at least ``minimum`` (NaN is not): rho of n policies is a ratio of integers, so
    0.8 exactly may compute as 0.7999999; :data:`SPEARMAN_SLACK` absorbs that."""
    return rho >= minimum - SPEARMAN_SLACK


def case_label(r: Mapping[str, Any]) -> str:
    return f"{r['network']} b{r['batch']} {r['precision']}"


def shape_class(op: Op) -> str:
    """A coarse kernel class of an op from its kind and attrs: ``conv1x1``, ``conv3x3``,
    ``conv1x7``/``conv7x1`` (``conv1xk``), ``conv_large`` (5x5, 7x7), ``depthwise`` (a sepconv),
    ``pool``, ``elementwise`` (relu, add, batchnorm) or the kind (``OpKind.kernel_class``)."""
    info = OPS.get(op.kind)
    kernel_class = info.kernel_class if info is not None else None
    if kernel_class == "conv":
        kh, kw = (tuple(op.attrs.get("kernel", (1, 1))) * 2)[:2]
        if int(op.attrs.get("groups", 1)) > 1:
            return "depthwise"
        if kh == kw == 1:
            return "conv1x1"
        if kh == kw == 3:
            return "conv3x3"
        if kh == 1 or kw == 1:
            return "conv1xk"
        return "conv_large"
    if kernel_class is not None:
        return kernel_class
    return op.kind


def alone_graphs(table: Mapping[tuple[str, str], float], gpu: str = "h200"
                 ) -> dict[str, Graph]:
    """The graphs the keys of a stand-alone table name (``<network>_b<batch>``): the measured
    graph where one was shipped, else the built-in model's."""
    from workbench import models

    out: dict[str, Graph] = {}
    for key in dict.fromkeys(k for k, _ in table):
        net, _, b = key.rpartition("_b")
        if not b.isdigit() or not hasattr(models, net):
            raise OptionError(f"stand-alone table: cannot read graph key {key!r} "
                              "(<network>_b<batch> of a built-in model)")
        try:
            out[key] = load_graph(net, int(b), gpu)
        except OptionError:
            out[key] = getattr(models, net)(int(b))
    return out


def alone_errors(table: Mapping[tuple[str, str], float], graphs: Mapping[str, Graph],
                 spec: DeviceSpec | str = "h200", model: GpuModel | None = None, *,
                 precision: str = "fp32") -> pd.DataFrame:
    """Simulated vs measured stand-alone time of every op of ``table`` (``{(graph_key, op_id):
    µs}``): columns graph, op, kind, shape_class, measured_us, simulated_us, error.  O(ops)."""
    from workbench.simulator.cost_model.costs import graph_costs

    spec = get_device(spec)
    model = model or model_for(spec)
    rows = []
    costs: dict[str, list[Any]] = {}
    for (key, op_id), us in table.items():
        if key not in graphs:
            raise OptionError(f"stand-alone table: no graph for {key!r}")
        g = graphs[key]
        if op_id not in g:
            raise OptionError(f"stand-alone table: graph {key!r} has no op {op_id!r}")
        if key not in costs:
            costs[key] = graph_costs(g, spec, precision=precision, model=model)
        i = g.index(op_id)
        sim = costs[key][i].alone_us
        op = g.ops[i]
        rows.append({"graph": key, "op": op_id, "kind": op.kind, "shape_class": shape_class(op),
                     "measured_us": us, "simulated_us": sim, "error": sim / us - 1})
    return pd.DataFrame(rows)


def alone_summary(errors: pd.DataFrame) -> dict[str, Any]:
    """Median and 90th percentile of |error|, and the three worst shape classes by median
    |error|."""
    a = errors["error"].abs()
    by = errors.assign(abs_error=a).groupby("shape_class")["abs_error"].median()
    worst = by.sort_values(ascending=False).head(3)
    return {"ops": len(errors), "median": float(a.median()), "p90": float(a.quantile(0.9)),
            "worst": [(k, float(v)) for k, v in worst.items()]}


__all__ = ["CASE_TOLERANCE", "SPEARMAN_SLACK", "alone_errors", "alone_graphs", "alone_summary",
           "case_label", "case_table", "cases", "misses", "noise_tied_ranks",
           "rank_correlation_ok", "shape_class", "simulate_rows", "spearman"]
