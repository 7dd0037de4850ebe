"""compare(): run several policies on one graph, execute each schedule, rank them in one table.

The result, a :class:`~workbench.orchestration.comparison.Comparison`, keeps every Schedule and
Trace so views, notebooks and the HTML report can show them side by side, and names the best
(beyond measurement noise when measured).  Plotting is imported only when a figure or report is
asked for.

Every comparison finishes: each policy's stages (schedule; validate and execute; plan memory) run
in a worker process (:mod:`workbench._bounded`; one worker takes the optimum's search and every
policy in turn, and is replaced only after a job it was killed for) and each stage gets
``budget_s`` seconds of wall time, after which the worker is killed and the row's ``status`` says
which stage overran and the budget.  Policies registered with ``budgeted=True`` also get
``time_budget_s`` (:data:`COOPERATIVE_SHARE` of ``budget_s``, leaving the rest for wrapping up: IOS
schedules the parts it did not search greedily) and stop cooperatively with their best schedule so
far (their hard limit is then a little longer: :func:`hard_limit_s`).  The exact optimum of tiny
graphs is bounded the same way.  Beside the time, each worker's memory is capped at
``memory_budget_bytes`` more than it started with (by default half the machine's memory): a stage
that needs more ends and its row says ``stopped: memory budget ... exceeded in <stage>``.

The torch executor runs in this process (CUDA does not survive a fork), where a stage cannot be
killed; its timed runs keep to the budget instead (:func:`_execute_within`: no timed run starts
once most of the budget is spent), and the measurement rounds after them go only to policies
whose runs so far leave room for them; a row whose runs were cut says so (``ok (budget 60 s: 7
of 20 timed runs)``).  A single run longer than the budget is not stopped.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

import pandas as pd

from workbench._bounded import Outcome, StageWorker
from workbench._bounded.memory import format_bytes, memory_budget
from workbench._checks import check_choice, first_line
from workbench._progress import Progress
from workbench.errors import OptionError
from workbench.orchestration.compare_budget import (
    COOPERATIVE_SHARE,
    check_budget,
    check_rounds,
    hard_limit_s,
)
from workbench.orchestration.compare_measured import (
    KEEPS_RUNS,
    MEASURED_COLUMNS,
    ROUNDS,
    check_measured_device,
    device_for_measured,
    execute_options,
    executor_plan,
    measure_rounds,
    measured_cells,
    provenance,
    round_repeats,
    simulates,
    unmodelled_note,
)
from workbench.orchestration.compare_rows import (
    measured_row,
    policy_row,
    secs,
    unplanned_notes,
)
from workbench.orchestration.comparison import BASELINE, Comparison
from workbench.orchestration.graph_notes import default_cost_note, measured_times_note
from workbench.orchestration.table_columns import DEFAULT_BUDGET_S, TABLE_COLUMNS
from workbench.passes.no_task import drop_for_comparison
from workbench.schedulers import POLICIES, PolicyInfo, schedule
from workbench.simulator.cost_model.costs import DeviceSpec, lower_bound_us
from workbench.simulator.cost_model.target import resolve_device
from workbench.values.graph import CONTROL_KINDS, Graph
from workbench.values.modes import MODES, mode_for
from workbench.values.schedule import Schedule
from workbench.values.trace import Trace


def compare(graph: Graph, policies: Iterable[str] | None = None, *, device: str = "h100",
            mode: str | None = None, executor: str | Iterable[str] = "simulator",
            executor_options: Mapping[str, Any] | None = None,
            options: Mapping[str, Mapping[str, Any]] | None = None,
            planner: str | None = "somas", pool_chunk_bytes: int = 32 << 20,
            optimum_max_ops: int = 8, show_progress: bool = True,
            budget_s: float | None = DEFAULT_BUDGET_S,
            memory_budget_bytes: int | str | None = "auto",
            measured: Trace | None = None, precision: str = "auto",
            rounds: int = ROUNDS, keep_views: bool = False,
            on_policy_done: Callable[[str, int, int], None] | None = None) -> Comparison:
    """Schedule ``graph`` with each policy, execute each schedule, and rank them.

    ``mode``: ``"graph"`` (the default: one CUDA graph launch) or ``"eager"`` (the host launches
    each kernel); the default on a CPU device is eager (:func:`workbench.values.modes.mode_for`).
    ``options`` maps a policy name to its keyword options.  ``planner`` plans each schedule's
    activation memory (SOMAS conflicts for multi-stream schedules; ``None`` skips memory), and each
    trace is replayed through the BestFit pool growing in ``pool_chunk_bytes`` chunks.  Bounds are
    of the graph as run (side effects in order); up to ``optimum_max_ops`` ops (simulator only) the
    exact optimum too (:func:`~workbench.orchestration.optimum.exact_optimum`): the best
    barrier-free schedule, which a barrier policy can beat.
    ``executor`` is ``"simulator"`` (any machine), ``"torch"`` (PyTorch's kernels: a CUDA GPU,
    or the CPU in issue order) or ``"cupy"`` (the project's own CUDA kernels), or a measured one
    with ``"simulator"`` (``"torch,simulator"`` or a list): then every row also holds the
    simulator's prediction (``simulated_us``, ``sim_error``) when the simulated device is the
    measured one (else ``settings["unmodelled"]`` says why those cells are empty); measured rows
    carry their median makespan with its quartiles (``makespan_q1_us``, ``makespan_q3_us``),
    ``executor``, ``gpu`` (the device they ran on: the GPU's or the CPU's name) and a
    utilisation computed from the measured trace
    (:mod:`workbench.orchestration.compare_measured`), and a policy is faster than another only
    beyond measurement noise (:attr:`Comparison.ties`, :attr:`Comparison.best_text`);
    ``executor_options`` go to the measured executor (``repeats``, ``warmup``, ``verify`` ...).
    A measured comparison splits each policy's ``repeats`` timed runs into ``rounds`` rounds
    (default :data:`~workbench.orchestration.compare_measured.ROUNDS`; ``1``: one block each),
    the policies interleaved round by round
    (:func:`~workbench.orchestration.compare_measured.measure_rounds`), so that the machine's
    drift is shared by all of them rather than read as differences between them.
    ``device`` is a device name or a device file or profile path
    (:func:`workbench.simulator.cost_model.devices.get_device`).  Speedups are over
    ``serial`` (which is always run, and listed first).  Every schedule is validated before it is
    executed.  ``precision`` (simulator): ``auto``, ``fp32``, ``tf32``, ``fp16`` or ``bf16``
    (:mod:`workbench.simulator.cost_model.costs`).  ``measured``, a recorded run of ``graph`` (e.g.
    from
    :func:`workbench.io.load_execution_trace`), is added as the row ``"measured"`` beside the
    what-if schedules (and to ``traces``); a CPU run compared with a built-in GPU device is
    simulated on the device ``cpu`` instead, with a note
    (:func:`~workbench.orchestration.compare_measured.device_for_measured`).

    ``budget_s`` (default :data:`DEFAULT_BUDGET_S`) bounds every stage of every policy: its
    scheduling, its validation and execution, its memory planning (see the module docstring).  A
    stage that overruns leaves empty cells and a ``status`` such as ``"budget hit (60 s): no
    schedule"``; the other rows and the report are unaffected.  ``budget_s=None`` runs everything
    in this process without limits.  With ``executor="cupy"`` the stages run in this process
    (CUDA does not survive a fork) and only budgeted policies are bounded.
    ``memory_budget_bytes`` (bytes, a size such as ``"2G"``, ``"auto"``: half the machine's
    memory, or None) bounds the memory each policy's worker may add (:mod:`workbench._bounded`,
    Linux); a stage that needs more leaves a row ``stopped: memory budget 2 GiB exceeded in
    memory`` and the other rows unaffected; it also runs the stages in a worker when
    ``budget_s=None``.  Policy errors (bad
    options, invalid schedules) are raised as before.

    ``keep_views``: a simulated comparison (no measured executor, no ``measured`` run) first
    drops the no-task ops (reshape, flatten, squeeze, eval-mode dropout ...: MindSpore's no-task
    rule, :func:`workbench.passes.no_task.drop_no_task_ops`), as a graph compiler does, and says
    how many in ``settings["notes"]`` and ``settings["no_task_dropped"]``; ``True`` keeps them.

    ``show_progress`` prints one line on stderr per policy as it starts and ends (time, status),
    also when stderr is not a terminal, and shows a bar in terminals and notebooks.
    ``on_policy_done(name, i, n)``, when given, is called in the calling thread after the i-th
    of the n policies (``serial`` included) has finished: an app's own progress bar.
    """
    if not isinstance(graph, Graph):
        raise OptionError(f"compare() needs a Graph, got {type(graph).__name__}")
    if len(graph) == 0:
        raise OptionError(f"graph {graph.name!r} has no ops: nothing to compare")
    if mode is not None:
        check_choice(mode, MODES, "mode")   # before any work: a typo starts nothing
    if isinstance(policies, str):
        raise OptionError(f"policies must be a list of names, got the string {policies!r} "
                          f"(use [{policies!r}])")
    budget = check_budget(budget_s)
    mem = memory_budget(memory_budget_bytes)
    if (isinstance(optimum_max_ops, bool) or not isinstance(optimum_max_ops, int)
            or not 0 <= optimum_max_ops <= 64):
        raise OptionError(f"optimum_max_ops must be an integer in [0, 64] (the exact search is "
                          f"exponential), got {optimum_max_ops!r:.80}")
    names = list(policies) if policies is not None else POLICIES.names()
    for name in names:
        POLICIES.get(name)
    for twice in (n for k, n in enumerate(names) if n in names[:k]):  # a policy against itself
        raise OptionError(f"policy {twice!r} is listed twice; give each policy once")
    if BASELINE not in names:
        names.insert(0, BASELINE)
    options = dict(options or {})
    for name in options:
        if name not in names:
            raise OptionError(f"options given for {name!r}, which is not among the policies")
    cpu_note = None
    if measured is not None:
        device, cpu_note = device_for_measured(measured, device)
    spec = resolve_device(device, precision=precision)  # the one resolution of the device
    mode = mode_for(mode, spec.architecture)            # graph, or eager on a CPU
    measured_on = None if measured is None else check_measured_device(measured, graph, spec)
    executor, simulate_too = executor_plan(executor)
    exec_opts = execute_options(executor, spec, mode, precision, dict(executor_options or {}))
    # imported here, once, so that forked workers inherit them instead of each importing them
    import workbench.executors.execute
    import workbench.memory
    import workbench.orchestration.optimum  # noqa: F401

    notes: list[str] = [cpu_note] if cpu_note else []
    if not isinstance(keep_views, bool):
        raise OptionError(f"keep_views must be True or False, got {keep_views!r:.80}")
    graph, dropped = drop_for_comparison(graph, keep_views or executor != "simulator"
                                         or measured is not None, notes)
    notes.extend(n for n in (default_cost_note(graph), measured_times_note(graph, spec.name))
                 if n)
    from workbench.simulator.cost_model.kernel_model import check_precision, kernel_precision

    check_precision(precision)
    if planner is not None:  # a typo is refused here, not turned into every row's memory note
        from workbench.memory.planners import PLANNERS

        PLANNERS.get(planner)
    bounds = lower_bound_us(graph, spec, precision=precision)
    jobs: dict[Any, tuple[list[Any], list[float | None]]] = {
        name: _policy_job(graph, name, _policy_options(name, options, spec, mode), spec=spec,
                          precision=precision, mode=mode, executor=executor, planner=planner,
                          budget=budget, pool_chunk_bytes=pool_chunk_bytes, exec_opts=exec_opts,
                          simulate_too=simulate_too) for name in names}
    searched = _optimum_job(graph, spec, mode, executor, optimum_max_ops, budget, notes, precision)
    if searched is not None:
        jobs[OPTIMUM] = searched
    results: dict[str, list[Outcome]] = {}
    measuring = executor != "simulator"
    rounds = check_rounds(rounds)
    if executor not in KEEPS_RUNS:  # its traces keep no runs to join: one block each
        rounds = 1
    asked = int(exec_opts.get("repeats", 20))
    if rounds > 1:
        exec_opts["repeats"] = round_repeats(exec_opts, rounds)

    def row_of(name: str) -> dict[str, Any]:
        row = policy_row(name, results[name], bounds, budget)
        if measuring and len(results[name]) > 1 and results[name][1].ok:
            trace, m = results[name][1].value
            row.update(measured_cells(trace, spec, precision, m.get("simulated_us"), bounds,
                                      modelled=simulates(spec, trace)))
        return row

    per_stage = "no budget" if budget is None else f"budget {secs(budget)} per stage"
    per_stage += "" if mem is None else f", memory budget {format_bytes(mem)}"
    # every job in one worker, replaced only after a job it was killed for (workbench._bounded)
    with StageWorker(jobs, isolate=executor == "simulator", shared=(graph, spec),
                     memory_bytes=mem) as worker, \
            Progress(len(names), desc=f"comparing on {graph.name}", enabled=show_progress) as bar:
        bounds["optimum_us"] = (_optimum(worker, notes, budget) if searched is not None
                                else float("nan"))
        bar.line(f"comparing {len(names)} policies on {graph.name} ({len(graph)} ops, "
                 f"{per_stage})")
        for i, name in enumerate(names, start=1):
            tag = f"[{i}/{len(names)}] {name}"
            bar.describe(name)
            bar.line(f"{tag}: started")
            t0 = time.perf_counter()
            results[name] = worker.run(name)
            row = row_of(name)
            span = row["makespan_us"]
            bar.line(f"{tag}: {row['status']} in {time.perf_counter() - t0:.2f} s"
                     + ("" if math.isnan(span) else f" (makespan {span:,.1f} µs)"))
            bar.advance()
            if on_policy_done is not None:
                on_policy_done(name, i, len(names))
        if rounds > 1:
            measure_rounds(_room_for_rounds(results, rounds, budget, asked, executor),
                           executor, exec_opts, rounds,
                           on_round=lambda k: bar.line(f"round {k}/{rounds}: every policy's "
                                                       f"timed runs again, interleaved"))
    rows = [row_of(name) for name in names]
    notes.extend(unplanned_notes(results))
    if measured is not None:
        rows.append(measured_row(measured, graph, bounds))
        rows[-1].update(measured_cells(measured, spec, precision, None, bounds))
    settings = {"policies": names, "options": {k: dict(v) for k, v in options.items()},
                **({"rounds": rounds} if measuring else {}),  # 1: one block per policy
                "device": spec.name, "device_description": spec.description, "mode": mode,
                "precision": precision,   # "auto": convolutions at conv_precision, the rest fp32
                "conv_precision": (kernel_precision(precision, spec, convolution=True)
                                   if precision == "auto" else precision),
                "executor": executor, "simulated_beside": simulate_too,
                "memory_planner": planner,
                "pool_chunk_mib": pool_chunk_bytes / 2**20,
                "budget_s_per_stage": budget, "memory_budget_bytes": mem,
                "no_task_dropped": dropped,
                **({"notes": notes} if notes else {}),
                **({"measured_device": measured_on} if measured_on else {})}
    first = next((out[1].value[0] for out in results.values() if len(out) > 1 and out[1].ok),
                 None)
    if executor != "simulator" and first is not None:
        settings["measured_on"] = provenance(first)
        if not simulates(spec, first):   # a CPU run, another GPU: no prediction beside it
            settings["simulated_beside"] = False
            settings["unmodelled"] = unmodelled_note(spec, first)
    comparison = _comparison(graph, spec, mode, results, rows, settings, bounds)
    if measured is not None:
        comparison.traces["measured"] = measured
    return comparison


def _comparison(graph: Graph, spec: DeviceSpec, mode: str, results: dict[str, list[Outcome]],
                rows: list[dict[str, Any]], settings: dict[str, Any],
                bounds: dict[str, float]) -> Comparison:
    """The Comparison of the finished stages: values of the stages that ended, the table with
    speedups over the baseline (NaN when the baseline has no makespan)."""
    def values(stage: int) -> dict[str, Any]:
        return {name: out[stage].value for name, out in results.items()
                if len(out) > stage and out[stage].ok}

    table = pd.DataFrame(rows)
    base_rows = table.loc[table["policy"] == BASELINE, "makespan_us"]
    base = float(base_rows.iloc[0]) if len(base_rows) else float("nan")
    table["speedup"] = base / table["makespan_us"]
    table = table[[c for c in (*TABLE_COLUMNS, *MEASURED_COLUMNS) if c in table.columns]]
    memory = values(2)
    return Comparison(graph, spec.name, mode, {k: v[0] for k, v in values(0).items()},
                      {k: v[0] for k, v in values(1).items()}, table, settings, bounds,
                      {k: v[0] for k, v in memory.items() if not isinstance(v[0], str)},
                      {k: v[1] for k, v in memory.items() if not isinstance(v[1], str)},
                      device_spec=spec)


def _policy_options(name: str, options: Mapping[str, Mapping[str, Any]], spec: DeviceSpec,
                    mode: str) -> dict[str, Any]:
    """The policy's options, with the comparison's device and mode for policies that model the
    device themselves (IOS's oracle, gpto, critical_path) unless the caller chose otherwise;
    gpto plans only the arenas its choice needs (the memory stage plans the winner's)."""
    opts = dict(options.get(name, {}))
    known = POLICIES.get(name).options()
    if "device" in known:
        opts.setdefault("device", spec)
    if "mode" in known:
        opts.setdefault("mode", mode)
    if "portfolio_arenas" in known:
        opts.setdefault("portfolio_arenas", "needed")
    return opts


def _stage_schedule(graph: Graph, name: str, opts: dict[str, Any]) -> tuple[Schedule, float]:
    t0 = time.perf_counter()
    sched = schedule(graph, name, **opts)
    return sched, (time.perf_counter() - t0) * 1e3


def _stage_execute(executor: str, options: dict[str, Any], simulate_too: bool, spec: DeviceSpec,
                   mode: str, precision: str,
                   scheduled: tuple[Schedule, float], *,
                   budget: float | None = None) -> tuple[Trace, dict[str, float]]:
    from workbench.executors.execute import execute

    sched = scheduled[0]
    sched.validate()
    if budget is not None and executor == IN_PROCESS:
        trace = _execute_within(sched, executor, options, budget)
    else:
        trace = execute(sched, executor=executor, **options)
    metrics = trace.metrics()
    if simulate_too:
        from workbench.simulator.simulate import simulate

        metrics["simulated_us"] = simulate(sched, device=spec, mode=mode,
                                           precision=precision).makespan
    return trace, metrics


#: The measured executor whose stages run in this process with their timed runs budgeted
#: (:func:`_execute_within`).
IN_PROCESS = "torch"


def _execute_within(sched: Schedule, executor: str, options: dict[str, Any],
                    budget: float) -> Trace:
    """The executor's run of ``sched`` with its timed runs kept within ``budget``: no timed run
    starts after :data:`COOPERATIVE_SHARE` of it (the runner's ``deadline``; the rest is for the
    verification and per-op timeline after them; at least one is timed); ``meta["budget_cut"]``
    when fewer than ``repeats`` were timed.  O(timed runs)."""
    from workbench.executors.execute import execute

    asked = int(options.get("repeats", 20))
    deadline = time.perf_counter() + budget * COOPERATIVE_SHARE
    trace = execute(sched, executor=executor, **{**options, "deadline": deadline})
    timed = len(trace.meta.get("makespans_us", ()))
    trace.meta["repeats"] = timed
    if timed < asked:
        trace.meta["budget_cut"] = {"timed": timed, "asked": asked, "budget_s": budget}
    return trace


def _room_for_rounds(results: Mapping[str, list[Outcome]], rounds: int, budget: float | None,
                     asked: int, executor: str) -> dict[str, Trace]:
    """The traces that get measurement rounds 2 to ``rounds``: every executed one without a
    budget; with one, those whose runs so far (their execute stage's time, times ``rounds``)
    fit in it; the others keep their first round and say so (``budget_cut``)."""
    traces = {n: out[1].value[0] for n, out in results.items() if len(out) > 1 and out[1].ok}
    if budget is None or executor != IN_PROCESS:
        return traces
    room = {}
    for name, trace in traces.items():
        if "budget_cut" not in trace.meta and results[name][1].elapsed_s * rounds <= budget:
            room[name] = trace
        else:
            timed = len(trace.meta.get("makespans_us", ()))
            trace.meta["budget_cut"] = {"timed": timed, "asked": asked, "budget_s": budget}
    return room


def _stage_memory(planner: str, chunk_bytes: int, budget: float | None,
                  scheduled: tuple[Schedule, float], executed: tuple[Trace, dict[str, float]]
                  ) -> tuple[Any, Any]:
    """(memory plan, pool replay) of one policy; a plan or replay the memory stage refuses
    (a :class:`~workbench.errors.MemoryPlanError`: lifetimes it cannot follow, a budget too
    short for one pass) is the string saying why, so the comparison still finishes (that row's
    memory cells empty, a note).  A budgeted planner is told :data:`COOPERATIVE_SHARE` of the
    stage's budget (SOMAS then keeps the best pass that finished) and draws no bar (the
    comparison has its own)."""
    from workbench.errors import MemoryPlanError
    from workbench.memory import plan_memory, replay_pool
    from workbench.memory.planners import PLANNERS

    options: dict[str, Any] = {}
    if PLANNERS.get(planner).budgeted:
        options["show_progress"] = False
        if budget is not None:
            options["time_budget_s"] = budget * COOPERATIVE_SHARE
    out: list[Any] = []
    for make in (lambda: plan_memory(scheduled[0], planner, **options),
                 lambda: replay_pool(executed[0], chunk_bytes=chunk_bytes)):
        try:
            out.append(make())
        except MemoryPlanError as exc:
            out.append(first_line(exc))
    return out[0], out[1]


def _policy_job(graph: Graph, name: str, opts: dict[str, Any], *, spec: DeviceSpec, mode: str,
                executor: str, planner: str | None, pool_chunk_bytes: int,
                budget: float | None, precision: str, exec_opts: dict[str, Any],
                simulate_too: bool) -> tuple[list[Any], list[float | None]]:
    """The policy's stages and their budgets (see the module docstring)."""
    info: PolicyInfo = POLICIES.get(name)
    cooperative = info.budgeted and budget is not None
    if budget is not None and cooperative:
        opts.setdefault("time_budget_s", budget * COOPERATIVE_SHARE)
    stages: list[Any] = [partial(_stage_schedule, graph, name, opts),
                         partial(_stage_execute, executor, exec_opts, simulate_too, spec, mode,
                                 precision, budget=budget)]
    budgets: list[float | None] = [
        None if budget is None else hard_limit_s(budget, cooperative=cooperative), budget]
    if planner is not None:
        from workbench.memory.planners import PLANNERS

        stages.append(partial(_stage_memory, planner, pool_chunk_bytes, budget))
        budgets.append(None if budget is None else
                       hard_limit_s(budget, cooperative=PLANNERS.get(planner).budgeted))
    return stages, budgets


# ---------------------------------------------------------------------------------- optimum
def _stage_optimum(graph: Graph, spec: DeviceSpec, mode: str, budget: float | None,
                   precision: str = "auto") -> tuple[float, bool]:
    from workbench.orchestration.optimum import exact_optimum

    best = exact_optimum(graph, spec, mode=mode, time_budget_s=budget, precision=precision)
    return best.makespan_us, best.complete


#: The key of the exact optimum's job among compare's jobs (no policy has this name).
OPTIMUM = ("optimum",)


def _optimum_job(graph: Graph, spec: DeviceSpec, mode: str, executor: str, max_ops: int,
                 budget: float | None, notes: list[str], precision: str = "auto"
                 ) -> tuple[list[Any], list[float | None]] | None:
    """The exact optimum's search as a job when the graph is small enough and has no control
    flow, else None (with a line in ``notes`` saying why, for control flow)."""
    if executor != "simulator" or len(graph) > max_ops:
        return None
    control = Counter(op.kind for op in graph.ops if op.kind in CONTROL_KINDS)
    if control:
        notes.append(f"exact optimum not shown: the graph holds control flow ("
                     f"{', '.join(f'{k} ×{n}' for k, n in control.items())}); the search orders "
                     f"its top-level ops only, while every policy also schedules the loop bodies "
                     f"and branches, so it bounds nothing")
        return None
    hard = None if budget is None else hard_limit_s(budget, cooperative=True)
    return [partial(_stage_optimum, graph, spec, mode, budget, precision)], [hard]


def _optimum(worker: StageWorker, notes: list[str], budget: float | None) -> float:
    """The exact optimum when its search (:data:`OPTIMUM`'s job) ends within the budget, else
    NaN (with a line in ``notes`` saying why)."""
    from workbench.errors import WorkbenchError

    try:
        (out,) = worker.run(OPTIMUM)
    except WorkbenchError as exc:
        notes.append(f"exact optimum not found: {exc}")
        return float("nan")
    if not out.ok:
        notes.append(f"exact optimum: {out.message}")
        return float("nan")
    makespan, complete = out.value
    if not complete:
        notes.append(f"exact optimum: search stopped at its budget of {secs(budget or 0.0)} "
                     f"(best schedule found: {makespan:,.1f} µs)")
        return float("nan")
    return float(makespan)
