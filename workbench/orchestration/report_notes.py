"""The report's words: what its rows are and how to read them, and the notes above its table.

Every text depends on where the rows ran (:func:`~workbench.orchestration.comparison.ran_on`): a
simulated comparison and a GPU run are explained in the GPU's terms (streams of kernels sharing
the SMs and memory bandwidth, the host's launches, CUDA graphs), a CPU run in the CPU's (one op at
a time in each schedule's issue order, so only the order differs), never the other's.  Measured
rows are ordered only beyond measurement noise
(:func:`~workbench.orchestration.compare_measured.clearly_faster`), in the slower-than-serial note
as in the best.  Every name from the graph, the policies or the settings is HTML-escaped.  The
report (:mod:`workbench.orchestration.report`) places these; they import no plotting library.
"""

from __future__ import annotations

from workbench.ops.control import DEVICE_SYNC
from workbench.orchestration.compare_measured import clearly_faster
from workbench.orchestration.comparison import BASELINE, Comparison, ran_on
from workbench.values.ranking import TIE_RULE
from workbench.viz.style import escape
from workbench.viz.timeline_groups import identical_groups

#: What the rows are, by where they ran (:func:`~workbench.orchestration.comparison.ran_on`).
RUN_INTRO = {
    "simulator": ("Each policy assigned the graph's ops to GPU streams and the simulator ran the "
                  "result on the modelled device."),
    "gpu": ("Each policy assigned the graph's ops to GPU streams and the measured executor ran "
            "the result on the GPU named under Results, several times over."),
    "cpu": ("Each policy assigned the graph's ops to streams and the torch executor ran each "
            "schedule on the CPU named under Results, several times over: one op at a time in "
            "the schedule's issue order, so streams, syncs and barriers order nothing more there "
            "and the rows differ only in the order of the same ops."),
}
NOISE_TEXT = (
    "A measured <b>makespan</b> is the median of the timed runs and <b>q1</b>, <b>q3</b> its "
    "quartiles: a policy is called faster than another only when its quartile range lies wholly "
    "below the other's (and no chain of overlapping ranges links them); otherwise the two tie "
    "within measurement noise, and when several tie with the fastest they are named best "
    "together and all highlighted. ")
_EVENT = "an event recorded after one op and waited for before another"
SYNC_TEXT = {"simulator": _EVENT, "gpu": _EVENT,
             "cpu": "the schedule's order between streams; on one CPU they cost nothing"}
#: The table's line of "How to read this": the metrics are defined in the headers' tooltips
#: (:data:`workbench.viz.tables.COLUMN_HELP`), not here.
TABLE_TEXT = (
    "<b>The table</b> is fastest first; hover a column header (dotted underline) for what it "
    "measures, and open <i>all columns</i> for the bounds, utilisation and memory columns. "
    "The timelines, memory charts and bar chart list the policies in the table's order.")
#: Under the Timelines heading.
TIMELINES_TEXT = (
    "One row group per timeline, fastest first as in the table; policies that ran exactly the "
    "same timeline (every op on the same stream at the same times) share a group, named "
    "together ({collapsed}). Each row is a stream and each bar an op (hover for its name, "
    "kind, times, flops and bytes); red triangles are syncs ({sync}), binned: one marker per "
    "stream and time bin, larger for more syncs; dashed vertical lines are barriers (every "
    "stream joins). The shaded track under each group is how many ops run at once over time, "
    "on one scale for every group. The menu above shows one group alone on its own time axis, "
    "or {best} beside another on one time scale. Groups too large to draw op by op are "
    "binned: each cell's shade is the fraction of that time its stream (or group of streams) "
    "was busy.")
#: Under the Graph heading.
DAG_TEXT = (
    "Zoom with the buttons or Ctrl + wheel, drag to pan. Node colours are the streams of the "
    "best policy, dashed edges are control dependencies and bold red edges are the syncs that "
    "policy needs.")
MEASURED_GPU_TEXT = (
    "With a <b>measured</b> executor the rows are runs on a real device: <b>torch</b> "
    "runs the schedule with PyTorch's kernels (cuDNN, cuBLAS), what a framework user's graph "
    "runs; <b>cupy</b> runs the project's own hand-written CUDA kernels, about 6x slower than "
    "cuDNN (Inception V3 batch 1 on an H200: 24,006 µs serial against 3,922 µs with cuDNN), so "
    "its multi-stream speedups belong to kernels that leave most of the GPU idle: prefer torch "
    "to ask how a graph should run, and cupy to test the launch plans, syncs and memory plans "
    "themselves. A measured row's <b>utilisation</b> is its ops' FLOPs over the measured "
    "makespan times the device's peak at the precision the kernels ran. ")
MEASURED_CPU_TEXT = (
    "A CPU run has no <b>utilisation</b>, <b>lower bound</b> or simulated column unless the "
    "simulator's device was calibrated on this same CPU (a device profile): the cost model's "
    "device is another machine. ")
SIMULATED_BESIDE_TEXT = (
    "<b>simulated_us</b> is the simulator's prediction for the same schedule and "
    "<b>sim_error</b> the prediction over the measurement, minus one.")


def _winner(comparison: Comparison) -> str:
    """The "Winner" line: the best, its makespan, its speedup over serial, the policies it
    ties exactly (with the rule that picked it) and how far behind the next policy is."""
    best = comparison.best
    if best is None:
        return "<b>Winner:</b> none: no policy was executed (the notes under Results say why)."
    spreads = comparison.spreads()
    if len(comparison.best_policies) > 1:
        return (f"<b>Winner:</b> none alone: {escape(comparison.best_text)}; the fastest median "
                f"is {escape(best)}'s, {spreads[best][0]:,.1f} µs.")
    span = spreads[best][0]
    base = spreads.get(BASELINE)
    if best == BASELINE:
        how = "no policy is faster than serial (one stream, program order)"
    elif base is None:
        how = "serial was not executed, so there is no speedup"
    else:
        how = f"{base[0] / span:.2f}× serial's {base[0]:,.1f} µs"
    text = f"<b>Winner:</b> <b>{escape(best)}</b> at {span:,.1f} µs: {how}."
    same = comparison.exact_ties
    if same:
        text += (f" Tied with {escape(', '.join(same))} at the same makespan; "
                 f"{TIE_RULE}.")
    rest = [p for p in spreads if p != best and p not in same]
    if rest:
        nxt = min(rest, key=lambda p: spreads[p][0])
        text += (f" The next, {escape(nxt)}, takes {100 * (spreads[nxt][0] / span - 1):.1f}% "
                 f"longer ({spreads[nxt][0]:,.1f} µs).")
    return text


def _apart(comparison: Comparison) -> str:
    """The "can it tell the top policies apart" line: the near-tie (or noise-tie) sentence of
    :attr:`Comparison.near_tie_text`, or that the runner-up is beyond it."""
    if comparison.best is None or len(comparison.spreads()) < 2:
        return ""
    measured = comparison.measured
    head = ("<b>Can the measurement tell the top policies apart?</b> " if measured else
            "<b>Can the simulator tell the top policies apart?</b> ")
    text = comparison.near_tie_text
    if text:
        return head + "No: " + escape(text)
    if measured:
        return head + ("Yes: the fastest's quartile range lies wholly below every other's.")
    from workbench.simulator.fidelity.accuracy import TIE_BAND

    return head + (f"Yes: every other policy simulates more than {100 * TIE_BAND:.0f}% slower "
                   "than the best, beyond the band within which the simulator does not order "
                   "policies (its measured accuracy is under Simulator accuracy).")


def how_to_read(comparison: Comparison) -> str:
    """The "How to read this" list, for where the rows ran
    (:func:`~workbench.orchestration.comparison.ran_on`): the winner and by how much (exact ties
    and the rule that broke them), whether the simulator (or the measurement) can tell the top
    policies apart (:attr:`Comparison.near_tie_text`), and how to read the table (its metrics
    are defined in the headers' tooltips).  Measured rows add what they are, the noise rule and
    the executor's kernels; a simulated comparison says nothing of measured executors.  A CPU
    run is never described in GPU terms.  O(policies)."""
    settings = dict(comparison.settings or {})
    where = ran_on(settings)
    items = [_winner(comparison), _apart(comparison),
             TABLE_TEXT + " " + RUN_INTRO[where]]
    if where != "simulator":
        items.append("<b>Measured rows:</b> " + NOISE_TEXT
                     + (MEASURED_CPU_TEXT if where == "cpu" else MEASURED_GPU_TEXT)
                     + (SIMULATED_BESIDE_TEXT if settings.get("simulated_beside") else ""))
    return '<ul class="glance">' + "".join(
        f"<li>{item.strip()}</li>" for item in items if item) + "</ul>"


def precision_text(comparison: Comparison) -> str:
    """The precision the comparison ran at, resolved: ``"tf32 (auto: TF32 convolutions, FP32
    other ops)"`` for ``auto`` on a device with TF32 tensor cores, ``"fp32 (auto)"`` without
    them, else the precision asked for; ``"not recorded"`` when the settings lack it."""
    settings = dict(comparison.settings or {})
    asked = settings.get("precision")
    if asked is None:
        return "not recorded"
    if asked != "auto":
        return str(asked)
    conv = str(settings.get("conv_precision") or "fp32")
    if conv == "fp32":
        return "fp32 (auto)"
    return f"{conv} (auto: {conv.upper()} convolutions, FP32 other ops)"


def timelines_note(comparison: Comparison) -> str:
    """The note under the Timelines heading: the row groups (which policies share one), rows,
    bars, syncs and barriers, the busy track, the menu, binning."""
    sync = SYNC_TEXT[ran_on(comparison.settings)]
    traces = dict(comparison.traces)
    order = [str(p) for p in comparison.table["policy"] if str(p) in traces]
    groups = identical_groups([(p, traces[p]) for p in
                               [*order, *(p for p in traces if p not in order)]])
    shared = [g for g in groups if len(g.labels) > 1]
    collapsed = ("here " + "; ".join(escape(g.label) for g in shared) if shared else
                 f"here none: all {len(groups)} timelines differ")
    best = f"<b>{escape(comparison.best)}</b>" if comparison.best else "the first"
    text = TIMELINES_TEXT.format(sync=sync, collapsed=collapsed, best=best)
    return f'<p class="note">{text}</p>'


def dag_note() -> str:
    """The note under the Graph heading: zooming, colours and edges."""
    return f'<p class="note">{DAG_TEXT}</p>'


#: What each measured executor's kernels are, for the note above measured results (a CPU run
#: of an executor: ``"<executor>/cpu"``).
EXECUTOR_NOTES = {
    "torch": "PyTorch's kernels (cuDNN, cuBLAS) through torch.nn.functional",
    "torch/cpu": ("PyTorch's CPU kernels through torch.nn.functional, one op at a time in each "
                  "schedule's issue order"),
    "cupy": ("the project's hand-written CUDA kernels, about 6x slower than cuDNN on Inception "
             "V3 (24,006 µs serial against 3,922 µs with cuDNN on an H200): its speedups are "
             "not those of a framework's kernels; prefer executor='torch' for those"),
}


def unfinished_note(comparison: Comparison) -> str:
    """A note listing the policies whose row is not ``ok`` (budget hit, worker died) and the
    comparison's own notes (e.g. an exact optimum cut short); empty when all finished."""
    table = comparison.table
    items = []
    if "status" in table.columns:
        items = [f"<b>{escape(p)}</b>: {escape(st)}"
                 for p, st in zip(table["policy"], table["status"], strict=True)
                 if not str(st).startswith("ok")]   # "ok (work budget ...)" finished
    items += [escape(n) for n in (comparison.settings or {}).get("notes", [])]
    if not items:
        return ""
    budget = (comparison.settings or {}).get("budget_s_per_stage")
    head = (f"Not everything finished within the budget of {budget:g} s per stage"
            if isinstance(budget, (int, float)) else "Not everything finished")
    return (f'<p class="note">{head} (empty cells): ' + "; ".join(items) + ".</p>")


def _slower_than_serial(comparison: Comparison, policy: str, speedup: float) -> bool:
    """Whether ``policy`` is slower than serial: a measured one beyond measurement noise
    (:func:`~workbench.orchestration.compare_measured.clearly_faster`: serial's quartile range
    wholly below its own, no chain of overlaps between them), a simulated one by more than
    0.5%."""
    if ran_on(comparison.settings) == "simulator":
        return bool(speedup < 0.995)                       # NaN: not executed
    return clearly_faster(comparison.spreads(), BASELINE, policy)


def _slower_reasons(comparison: Comparison, policy: str, base_busy: float) -> list[str]:
    """Why ``policy`` is slower than serial, in the terms of where it ran."""
    trace, sched = comparison.traces[policy], comparison.schedules[policy]
    busy = float(trace.df["duration_us"].sum())
    longer = base_busy > 0 and busy > base_busy * 1.005
    if ran_on(comparison.settings) == "cpu":   # one op at a time: only the order differs
        took = (f"its ops took {100 * (busy / base_busy - 1):.1f}% longer in total than "
                "serial's: " if longer else "")
        return [took + "on the CPU every schedule runs the same ops one at a time in its issue "
                "order (streams and syncs cost nothing there), so only the order differs (what "
                "stays in the CPU's caches from one op to the next), or the machine's load "
                "changed while it ran"]
    why = []
    host_bound = float(trace.meta.get("host_bound_fraction") or 0.0)
    if host_bound >= 0.5:
        why.append(f"the host's launches bound it (the device waited for the host "
                   f"{100 * host_bound:.0f}% of the time, and every sync adds an event "
                   "record and a wait to the host's work: try mode='graph')")
    if longer:
        why.append(f"its ops ran {100 * (busy / base_busy - 1):.1f}% longer side by side "
                   "than one at a time (shared SMs and memory bandwidth)")
    if sched.n_syncs:
        why.append(f"{sched.n_syncs} cross-stream syncs")
    if sched.n_barriers:
        why.append(f"{sched.n_barriers} barriers (device idle {trace.barrier_idle_us():,.1f}"
                   " µs at them)")
    return why or ["its issue order delays the critical path"]


def slower_note(comparison: Comparison) -> str:
    """A note for each executed policy slower than serial saying why, from its trace against
    serial's; empty when none is slower.  A measured policy is slower only beyond measurement
    noise (serial's quartile range wholly below its own); a simulated one by more than 0.5%.
    On a GPU (simulated or measured): whether the host's launches bound it, how much longer its
    ops ran side by side than one at a time (they share the SMs and the memory bandwidth), the
    cross-stream syncs and barriers it added and the device's idle time at barriers.  On the
    CPU, where every schedule runs its ops one at a time in issue order, only the order differs
    and the note says so.  O(ops) per policy."""
    table = comparison.table
    base = comparison.traces.get(BASELINE)
    if base is None or "speedup" not in table.columns:
        return ""
    base_busy = float(base.df["duration_us"].sum())
    items = []
    for policy, speedup in zip(table["policy"], table["speedup"], strict=True):
        if policy not in comparison.traces or policy not in comparison.schedules \
                or not _slower_than_serial(comparison, policy, speedup):
            continue
        why = _slower_reasons(comparison, policy, base_busy)
        items.append(f"<b>{escape(policy)}</b> ({speedup:.2f}×): " + ", ".join(why))
    if not items:
        return ""
    beyond = " beyond measurement noise" if ran_on(comparison.settings) != "simulator" else ""
    return (f'<p class="note">Slower than serial{beyond}, and why: ' + "; ".join(items)
            + ".</p>")


def near_tie_note(comparison: Comparison) -> str:
    """:attr:`Comparison.near_tie_text` as a note; empty when there is none."""
    text = comparison.near_tie_text
    return f'<p class="note">{escape(text)}</p>' if text else ""


def nothing_to_schedule_note(comparison: Comparison) -> str:
    """A note when the graph leaves the policies no choice (one chain, or no op with a cost:
    :func:`workbench.io.traces.trace_events.nothing_to_schedule`), so that their tie with serial
    is not read as a finding; empty otherwise.  O(ops + edges)."""
    from workbench.io.traces.trace_events import nothing_to_schedule

    line = nothing_to_schedule(comparison.graph)
    return f'<p class="note">{escape(line[:1].upper() + line[1:])}.</p>' if line else ""


def barrier_note(comparison: Comparison) -> str:
    """A note on what barriers cost: per policy with barriers, how many, of which kind (in the
    comparison's mode: a device synchronisation makes the host wait in eager mode, and is a join
    of every stream inside the one CUDA graph in graph mode), and how long the device sat idle
    at them (``Trace.barrier_idle_us``), or that it never did; empty when none has any."""
    items = []
    for policy, trace in comparison.traces.items():
        sched = comparison.schedules.get(policy)
        if sched is None or not sched.n_barriers:
            continue
        if sched.barrier_kind != DEVICE_SYNC:
            kind = "event joins"
        elif comparison.mode == "graph":
            kind = ("stage boundaries (IOS's device synchronisations, which inside the one CUDA "
                    "graph are joins of every stream: the host does not wait)")
        else:
            kind = ("device synchronisations (the host waits for an idle device, as IOS's "
                    "runtime does)")
        idle = trace.barrier_idle_us()
        cost = (f"the device idles {idle:,.1f} µs at them "
                f"({100 * idle / max(trace.makespan, 1e-9):.1f}% of its makespan)" if idle > 0.05
                else "the device never idles at them: each stage only waits for its slowest "
                     "branch")
        items.append(f"<b>{escape(policy)}</b>: {sched.n_barriers} {kind}; {cost}")
    if not items:
        return ""
    return '<p class="note">Barriers: ' + "; ".join(items) + ".</p>"


def measured_note(comparison: Comparison) -> str:
    """Where measured rows were measured: the executor and what its kernels are, the GPU, the
    driver and library versions, mode, precision and repeats (``settings["measured_on"]``), and
    whether the simulator's predictions sit beside them; a recorded run (``compare(measured=
    ...)``) is named with its device; empty for simulated comparisons."""
    settings = dict(comparison.settings or {})
    recorded = settings.get("measured_device")
    note = (f'<p class="note">The row <b>measured</b> is a recorded run (a profiler trace) on '
            f"<b>{escape(recorded)}</b>; the other rows are what-if schedules simulated on "
            f"<b>{escape(comparison.device)}</b>.</p>" if recorded else "")
    executor = settings.get("executor", "simulator")
    if executor == "simulator":
        return note
    on = dict(settings.get("measured_on") or {})
    where = ran_on(settings)
    device = on.pop("cpu" if where == "cpu" else "gpu", "?")
    on.pop("executor", None)
    details = ", ".join(f"{escape(k)} {escape(v)}" for k, v in on.items())
    kernels = EXECUTOR_NOTES.get(f"{executor}/{where}", EXECUTOR_NOTES.get(str(executor), ""))
    kind = " (a CPU)" if where == "cpu" else ""
    beside = (f" The simulator's prediction on device <b>{escape(comparison.device)}</b> sits "
              f"beside each row (<b>simulated_us</b>, <b>sim_error</b>)."
              if settings.get("simulated_beside") else "")
    if settings.get("unmodelled"):
        why = str(settings["unmodelled"])
        beside = f" {escape(why[:1].upper() + why[1:])}."
    return note + (f'<p class="note">Measured with executor <b>{escape(executor)}</b>'
            + (f" ({escape(kernels)})" if kernels else "")
            + f" on <b>{escape(device)}</b>{kind}" + (f": {details}" if details else "") + "."
            + beside + "</p>")


def shows_simulation(comparison: Comparison) -> bool:
    """Whether the report shows simulated makespans (a simulated comparison, or predictions
    beside measured rows), so that the simulator's accuracy belongs in it."""
    settings = dict(comparison.settings or {})
    return ran_on(settings) == "simulator" or bool(settings.get("simulated_beside"))


__all__ = ["EXECUTOR_NOTES", "barrier_note", "dag_note", "how_to_read", "measured_note",
           "near_tie_note", "nothing_to_schedule_note", "precision_text", "shows_simulation",
           "slower_note",
           "timelines_note", "unfinished_note"]
