"""sweep(): policies × graphs × batch sizes × devices → one tidy table, locally or on Dask.

One row per (graph, batch, device, policy): the simulated makespan, the speedup over ``serial``
(always run, listed first), streams, syncs, barriers, the ratio to the makespan lower bound, the
time the policy took to schedule and the simulator to run, and the activation memory
(``plan_memory(schedule, "greedy_by_size")``: peak live MiB and arena MiB).

Work is split into one task per (graph, batch, device) that builds the graph and runs every
policy on it.  ``engine="local"`` runs the tasks in a loop, ``engine="processes"`` on local
processes (graphs given as callables must then pickle), ``engine="dask"`` submits them to a
``dask.distributed`` client (the one given, or a two-worker ``LocalCluster`` started and closed
here); the engines are :mod:`workbench._engines`.  Rows are sorted by (graph, batch, device,
policy) in the order given, so every engine returns the same table apart from the timing columns
(:data:`TIMING_COLUMNS`).

>>> import workbench as wb
>>> df = sweep({"diamond": wb.models.nnc_diamond()}, ["nnc"], show_progress=False)
>>> df[["graph", "policy", "streams", "syncs"]].to_dict("records")
[{'graph': 'diamond', 'policy': 'serial', 'streams': 1, 'syncs': 0}, \
{'graph': 'diamond', 'policy': 'nnc', 'streams': 2, 'syncs': 2}]
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from workbench._engines import DASK_MISSING, ENGINES, run_tasks  # noqa: F401 (re-exported)
from workbench._progress import progress_bar
from workbench.errors import OptionError
from workbench.simulator.cost_model.costs import DeviceSpec, get_device, lower_bound_us
from workbench.values.graph import Graph
from workbench.values.modes import DEFAULT_MODE, MODES
from workbench.values.schedule import Schedule

BASELINE = "serial"
TIMING_COLUMNS = ("schedule_ms", "simulate_ms")
COLUMNS = ("graph", "batch", "device", "mode", "policy", "ops", "makespan_us", "speedup",
           "streams", "syncs", "barriers", "lower_bound_us", "ratio_to_lb", "peak_live_mib",
           "arena_mib", "schedule_ms", "simulate_ms")
MEMORY_PLANNER = "greedy_by_size"

GraphSource = Graph | str | Callable[[int], Graph]
PolicyFn = Callable[..., Schedule]


@dataclass(frozen=True)
class _Task:
    index: int
    graph: str
    source: Any          # Graph | model name | callable(batch) -> Graph
    batch: int | None    # None: the graph does not depend on the batch size
    device: DeviceSpec


def sweep(graphs: Mapping[str, GraphSource] | Iterable[str],
          policies: Sequence[str | PolicyFn] | None = None,
          devices: Sequence[str | DeviceSpec] = ("h100",), batch_sizes: Sequence[int] = (1,), *,
          mode: str = DEFAULT_MODE, options: Mapping[str, Mapping[str, Any]] | None = None,
          engine: str = "local", client: Any = None, show_progress: bool = True) -> pd.DataFrame:
    """Run every policy on every (graph, batch size, device) and return one tidy DataFrame.

    Parameters
    ----------
    graphs:
        Name → a :class:`Graph` (batch-independent: run once, ``batch`` left empty), a built-in
        model name (``workbench.models.build(name, batch=b)``; models without a ``batch``
        parameter are run once) or a callable ``batch -> Graph``.  A plain list of model names
        is accepted too.
    policies:
        Registered policy names (default: all), or ``schedule_*`` functions (named after the
        function without its ``schedule_`` prefix).  ``serial`` is always run first: it is the
        baseline of ``speedup``.
    devices, batch_sizes, mode:
        Registered device names or specs, positive batch sizes, ``"eager"`` or ``"graph"``.
    options:
        Policy name → keyword options.
    engine, client:
        ``"local"`` (a loop), ``"processes"`` (a process pool, one task per graph, batch and
        device) or ``"dask"`` (one task per graph, batch and device on ``client``, or
        on a threaded ``LocalCluster(n_workers=2, threads_per_worker=1, processes=False)``
        started and closed for the call).
    """
    sources = _graph_sources(graphs)
    plist = _policy_list(policies)
    names = [n for n, _ in plist]
    specs = [get_device(d) for d in devices]
    if not specs:
        raise OptionError("sweep() needs at least one device")
    if len({s.name for s in specs}) != len(specs):
        raise OptionError(f"devices are listed twice: {[s.name for s in specs]}")
    batches = _batch_sizes(batch_sizes)
    if mode not in MODES:
        raise OptionError(f"unknown simulation mode {mode!r} (known: {', '.join(MODES)})")
    opts = {k: dict(v) for k, v in (options or {}).items()}
    for name in opts:
        if name not in names:
            raise OptionError(f"options given for {name!r}, which is not among the policies "
                              f"({', '.join(names)})")
    if engine not in ENGINES:
        raise OptionError(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    if client is not None and engine != "dask":
        raise OptionError("client= is only used with engine='dask'")
    tasks: list[_Task] = []
    for gname, src in sources:
        for b in (batches if _depends_on_batch(src) else (None,)):
            for spec in specs:
                tasks.append(_Task(len(tasks), gname, src, b, spec))
    with progress_bar(total=len(tasks), desc=f"sweep ({engine})", enabled=show_progress) as bar:
        results = run_tasks(_run_task, [(t, plist, mode, opts) for t in tasks], engine=engine,
                            client=client, on_done=lambda i, res: bar.update(1))
    rows = [row for res in results for row in res]
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    df = df.sort_values(["_task", "_policy"], kind="stable").drop(columns=["_task", "_policy"])
    df["batch"] = df["batch"].astype("Int64")
    return df[list(COLUMNS)].reset_index(drop=True)


# ---------------------------------------------------------------------------------- arguments
def _graph_sources(graphs: Any) -> list[tuple[str, Any]]:
    from workbench.models import MODELS

    if isinstance(graphs, Graph) or isinstance(graphs, str):
        raise OptionError("graphs must be a mapping name -> graph/model/callable, or a list of "
                          "model names")
    items = list(graphs.items()) if isinstance(graphs, Mapping) else [(g, g) for g in graphs]
    if not items:
        raise OptionError("sweep() needs at least one graph")
    out = []
    for name, src in items:
        if isinstance(src, str):
            MODELS.get(src)  # unknown model -> GraphError listing the known ones
        elif not isinstance(src, Graph) and not callable(src):
            raise OptionError(f"graph {name!r} must be a Graph, a model name or a callable "
                              f"batch -> Graph, got {type(src).__name__}")
        out.append((str(name), src))
    return out


def _policy_list(policies: Sequence[str | PolicyFn] | None) -> list[tuple[str, PolicyFn | None]]:
    from workbench.schedulers import POLICIES

    items: list[tuple[str, PolicyFn | None]] = []
    for p in (POLICIES.names() if policies is None else list(policies)):
        if isinstance(p, str):
            POLICIES.get(p)  # unknown -> ScheduleError listing the known ones
            items.append((p, None))
        elif callable(p):
            items.append((getattr(p, "__name__", "policy").removeprefix("schedule_"), p))
        else:
            raise OptionError(f"a policy must be a name or a schedule_* function, got {p!r}")
    names = [n for n, _ in items]
    if len(set(names)) != len(names):
        raise OptionError(f"policies are listed twice: {names}")
    if BASELINE not in names:
        items.insert(0, (BASELINE, None))
    return items


def _batch_sizes(batch_sizes: Sequence[int]) -> tuple[int, ...]:
    out = tuple(batch_sizes)
    if not out:
        raise OptionError("sweep() needs at least one batch size")
    for b in out:
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise OptionError(f"batch sizes must be positive integers, got {b!r}")
    if len(set(out)) != len(out):
        raise OptionError(f"batch sizes are listed twice: {list(out)}")
    return out


def _depends_on_batch(src: Any) -> bool:
    if isinstance(src, Graph):
        return False
    if isinstance(src, str):
        from workbench.models import MODELS

        return "batch" in (MODELS.options(src) or {})
    return True


# ---------------------------------------------------------------------------------- one task
def _build(task: _Task) -> Graph:
    src = task.source
    if isinstance(src, Graph):
        return src
    if isinstance(src, str):
        from workbench.models import build

        return build(src) if task.batch is None else build(src, batch=task.batch)
    graph = src(task.batch)
    if not isinstance(graph, Graph):
        raise OptionError(f"graph {task.graph!r}: the callable returned "
                          f"{type(graph).__name__}, not a Graph")
    return graph


def _run_task(task: _Task, plist: list[tuple[str, PolicyFn | None]], mode: str,
              options: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Build one graph and run every policy on it: one row per policy."""
    from workbench.memory import plan_memory
    from workbench.schedulers import schedule
    from workbench.simulator.simulate import simulate

    graph = _build(task)
    bound = lower_bound_us(graph, task.device)["lower_bound_us"]
    rows: list[dict[str, Any]] = []
    for k, (name, fn) in enumerate(plist):
        opts = dict(options.get(name, {}))
        t0 = time.perf_counter()
        sched = fn(graph, **opts) if fn is not None else schedule(graph, name, **opts)
        t1 = time.perf_counter()
        sched.validate()
        t2 = time.perf_counter()
        trace = simulate(sched, task.device, mode=mode)
        t3 = time.perf_counter()
        plan = plan_memory(sched, MEMORY_PLANNER)
        rows.append({
            "_task": task.index, "_policy": k, "graph": task.graph, "batch": task.batch,
            "device": task.device.name, "mode": mode, "policy": name, "ops": len(graph),
            "makespan_us": trace.makespan, "streams": sched.totals[0], "syncs": sched.totals[1],
            "barriers": sched.totals[2], "lower_bound_us": bound,
            "ratio_to_lb": trace.makespan / bound if bound > 0 else math.nan,
            "peak_live_mib": plan.lower_bound / 2**20, "arena_mib": plan.arena_bytes / 2**20,
            "schedule_ms": (t1 - t0) * 1e3, "simulate_ms": (t3 - t2) * 1e3,
        })
    base = float(rows[0]["makespan_us"])  # serial is first
    for row in rows:
        span = float(row["makespan_us"])
        row["speedup"] = base / span if span > 0 else math.nan
    return rows
