"""compare(): run several policies on one graph, execute each schedule, rank them in one table.

The result, a :class:`Comparison`, keeps every Schedule and Trace so views, notebooks and the HTML
report can show them side by side.  Plotting is imported only when a figure or report is asked for.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from workbench._progress import progress
from workbench.costs import get_device, lower_bound_us
from workbench.errors import OptionError
from workbench.graph import Graph
from workbench.schedule import Schedule
from workbench.schedulers import POLICIES, schedule
from workbench.trace import Trace

BASELINE = "serial"
TABLE_COLUMNS = ("policy", "makespan_us", "speedup", "streams", "syncs", "barriers",
                 "avg_concurrency", "utilisation", "critical_path_us", "work_us", "lower_bound_us",
                 "ratio_to_lb", "optimum_us", "ratio_to_optimum",
                 "peak_live_mib", "arena_mib", "arena_ratio", "pool_reserved_mib", "schedule_ms")


class Comparison:
    """Policies side by side on one graph: ``table`` (one row per policy), ``schedules``,
    ``traces``, ``best`` (smallest makespan) and the ``settings`` used."""

    def __init__(self, graph: Graph, device: str, mode: str, schedules: Mapping[str, Schedule],
                 traces: Mapping[str, Trace], table: pd.DataFrame, settings: Mapping[str, Any],
                 lower_bounds: Mapping[str, float],
                 memory_plans: Mapping[str, Any] | None = None,
                 pools: Mapping[str, Any] | None = None) -> None:
        self.graph = graph
        self.device = device
        self.mode = mode
        self.schedules = dict(schedules)
        self.traces = dict(traces)
        self.table = table
        self.settings = dict(settings)
        self.lower_bounds = dict(lower_bounds)
        self.memory_plans = dict(memory_plans or {})
        self.pools = dict(pools or {})

    @property
    def best(self) -> str:
        """The policy with the smallest makespan (ties: the first in the table); a measured
        run's row is not a policy."""
        table = self.table[self.table["policy"].isin(list(self.schedules))]
        return str(table.sort_values("makespan_us", kind="stable").iloc[0]["policy"])

    @property
    def policies(self) -> list[str]:
        return list(self.schedules)

    def to_html(self, path: str | os.PathLike[str]) -> Path:
        """Write the self-contained HTML report (plotly embedded once; works offline)."""
        from workbench import report

        return report.write(self, path)

    def timelines(self) -> Any:
        """All traces on a shared time axis (a plotly Figure)."""
        from workbench.viz import timelines

        return timelines(self.traces)

    def _repr_html_(self) -> str:
        from workbench.viz.display import comparison_html

        return comparison_html(self)

    def __repr__(self) -> str:
        return (f"Comparison({self.graph.name!r} on {self.device}/{self.mode}: "
                f"{len(self.schedules)} policies, best {self.best!r})")


def compare(graph: Graph, policies: Iterable[str] | None = None, *, device: str = "h100",
            mode: str = "eager", executor: str = "simulator",
            options: Mapping[str, Mapping[str, Any]] | None = None,
            planner: str | None = "somas", pool_chunk_bytes: int = 32 << 20,
            optimum_max_ops: int = 8, show_progress: bool = True,
            measured: Trace | None = None) -> Comparison:
    """Schedule ``graph`` with each policy, execute each schedule, and rank them.

    ``options`` maps a policy name to its keyword options.  ``planner`` plans each schedule's
    activation memory (SOMAS conflicts for multi-stream schedules; ``None`` skips memory), and
    each trace is replayed through the BestFit pool growing in ``pool_chunk_bytes`` chunks.
    Graphs of at most ``optimum_max_ops`` ops (simulator only) also get the exact optimum
    (:func:`workbench.optimum.exact_optimum`) so each policy's distance to it is shown.
    ``executor`` is ``"simulator"`` (any machine) or ``"cupy"`` (a CUDA GPU).  Speedups are over
    ``serial`` (which is always run, and listed first).  Every schedule is validated before it is
    executed.  ``measured``, a recorded run of ``graph`` (e.g. from
    :func:`workbench.io.load_execution_trace`), is added as the row ``"measured"`` beside the
    what-if schedules (and to ``traces``).
    """
    if not isinstance(graph, Graph):
        raise OptionError(f"compare() needs a Graph, got {type(graph).__name__}")
    names = list(policies) if policies is not None else POLICIES.names()
    for name in names:
        POLICIES.get(name)
    if BASELINE not in names:
        names.insert(0, BASELINE)
    options = dict(options or {})
    for name in options:
        if name not in names:
            raise OptionError(f"options given for {name!r}, which is not among the policies")
    spec = get_device(device)
    from workbench.execute import execute
    from workbench.memory import plan_memory, replay_pool

    bounds = lower_bound_us(graph, spec)
    bounds["optimum_us"] = _optimum(graph, spec, mode, executor, optimum_max_ops)
    plans: dict[str, Any] = {}
    pools: dict[str, Any] = {}
    schedules: dict[str, Schedule] = {}
    traces: dict[str, Trace] = {}
    rows = []
    for name in progress(names, desc=f"comparing on {graph.name}", enabled=show_progress):
        t0 = time.perf_counter()
        sched = schedule(graph, name, **dict(options.get(name, {})))
        elapsed_ms = (time.perf_counter() - t0) * 1e3
        sched.validate()
        trace = execute(sched, executor=executor, device=spec, mode=mode)
        schedules[name], traces[name] = sched, trace
        m = trace.metrics()
        memory: dict[str, float] = {}
        if planner is not None:
            plan = plans[name] = plan_memory(sched, planner)
            pool = pools[name] = replay_pool(trace, chunk_bytes=pool_chunk_bytes)
            memory = {"peak_live_mib": plan.lower_bound / 2**20,
                      "arena_mib": plan.arena_bytes / 2**20, "arena_ratio": plan.ratio,
                      "pool_reserved_mib": pool.peak_reserved / 2**20}
        rows.append({**memory,
            "policy": name, "makespan_us": trace.makespan, "streams": sched.n_streams,
            "syncs": sched.n_syncs, "barriers": sched.n_barriers,
            "avg_concurrency": m["avg_concurrency"], "utilisation": m["utilisation"],
            "critical_path_us": bounds["critical_path_us"], "work_us": bounds["work_us"],
            "lower_bound_us": bounds["lower_bound_us"],
            "optimum_us": bounds["optimum_us"],
            "ratio_to_optimum": trace.makespan / bounds["optimum_us"],
            "ratio_to_lb": trace.makespan / bounds["lower_bound_us"]
            if bounds["lower_bound_us"] > 0 else float("nan"),
            "schedule_ms": elapsed_ms,
        })
    if measured is not None:
        rows.append(_measured_row(measured, graph, bounds))
        traces["measured"] = measured
    table = pd.DataFrame(rows)
    base = float(table.loc[table["policy"] == BASELINE, "makespan_us"].iloc[0])
    table.insert(2, "speedup", base / table["makespan_us"])
    table = table[[c for c in TABLE_COLUMNS if c in table.columns]]
    settings = {"policies": names, "options": {k: dict(v) for k, v in options.items()},
                "device": spec.name, "device_description": spec.description, "mode": mode,
                "executor": executor, "memory_planner": planner,
                "pool_chunk_mib": pool_chunk_bytes / 2**20}
    return Comparison(graph, spec.name, mode, schedules, traces, table, settings, bounds, plans,
                      pools)


def _optimum(graph: Graph, spec: Any, mode: str, executor: str, max_ops: int) -> float:
    """The exact optimum when the graph is small enough, else NaN."""
    from workbench.errors import WorkbenchError
    from workbench.optimum import exact_optimum

    if executor != "simulator" or len(graph) > max_ops:
        return float("nan")
    try:
        return exact_optimum(graph, spec, mode=mode).makespan_us
    except WorkbenchError:
        return float("nan")


def _measured_row(trace: Trace, graph: Graph, bounds: Mapping[str, float]) -> dict[str, Any]:
    """The table row of a recorded run of ``graph``."""
    unknown = [op for op in trace.df["op"] if op not in graph]
    if unknown:
        raise OptionError(f"measured trace has op {unknown[0]!r}, which is not in graph "
                          f"{graph.name!r}")
    m = trace.metrics()
    lb = bounds["lower_bound_us"]
    return {"policy": "measured", "makespan_us": trace.makespan,
            "streams": int(trace.df["stream"].nunique()), "syncs": 0, "barriers": 0,
            "avg_concurrency": m["avg_concurrency"], "utilisation": m["utilisation"],
            "critical_path_us": bounds["critical_path_us"], "work_us": bounds["work_us"],
            "lower_bound_us": lb, "optimum_us": bounds["optimum_us"],
            "ratio_to_optimum": trace.makespan / bounds["optimum_us"],
            "ratio_to_lb": trace.makespan / lb if lb > 0 else float("nan")}
