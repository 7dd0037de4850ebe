"""``wb.accelerate``: a PyTorch model run the way the workbench says, with its own weights.

:func:`accelerate` imports the model (:func:`workbench.io.from_torch`: its own calls and
parameters, traced with the example's positional and keyword arguments), picks a schedule and
returns a ``torch.nn.Module`` whose ``forward`` takes what the model takes (positionally or by
keyword, matched by the model's signature) and returns what it returns, computed by the
model's own ops under that schedule
(:class:`workbench.executors.torch_exec.module.ScheduledModule`: on CUDA one multi-stream CUDA
graph replayed with the new inputs copied in; on the CPU the ops in issue order).

``policy="auto"`` *measures* where schedules can differ: on a CUDA device every candidate
policy's schedule runs with the torch executor (:func:`workbench.orchestration.compare.compare`
with ``executor="torch"``, each stage bounded by ``budget_s``, timed runs included), and so does
the model itself (:func:`workbench.executors.torch_exec.baseline.time_model`: its own forward,
as one CUDA graph in graph mode), before and after the policies so that a machine whose speed
drifts during the measurement widens the model's quartile range instead of favouring whichever
ran later.  The fastest median wins, but only if it beats the model beyond measurement noise
(its third quartile below the model's first, and no chain of overlapping ranges linking them:
:func:`workbench.orchestration.compare_measured.clearly_faster`); otherwise the result is the
baseline it was judged against: in graph mode the model's own CUDA graph (the ``serial``
schedule captured on one stream, verified), else the model itself
(:class:`~workbench.executors.torch_exec.module.ModelItself`, with the reason).  The result
carries ``.schedule``, ``.policy``, ``.reason`` (the sentence that explains the choice) and the
measured ``.comparison`` (its ``settings["model_itself"]`` holds the model's timing and
``settings["decision"]`` the sentence; its table holds the model itself as a row and flags the
rows that tie with the fastest within measurement noise:
:func:`workbench.orchestration.accelerate_notes.with_model_row`).  ``show_progress`` (default
on, as compare's; ``WORKBENCH_PROGRESS=0`` too turns it off) says what happens on stderr and
in a bar (terminals and notebooks): the plan first (``measuring 12 policies × 3 rounds on
cuda:0 ...``), the model's timings and compare's line per policy, and one summary line of the
decision at the end (``running nnc: ... 1.35x`` or ``falling back to the model: <why>``, also
for ``auto``'s decision on the CPU).  On the CPU schedules cannot differ (one issue order, no
streams): ``auto`` decides without measuring, in milliseconds after the import, and keeps the
model itself (``reason`` says why); ``policies=[...]`` measures those anyway.

The caller's state is left alone: verification (the example and one perturbed input, through
the same copy-in path as a call) runs on copies of the inputs, with the model's buffers and the
random number generators saved and put back after every run, so the first call of the result
returns what ``model(x)`` would have returned; a model in training mode (dropout and batch
statistics make its outputs differ per call, and each call updates its buffers) is not run at
all: it is returned as itself with one line saying why.  The result keeps using the caller's own
model, parameters and buffers (never a copy).

What cannot be captured — a model ``torch.export`` and ``torch.fx`` cannot trace (data-dependent
control flow), a run whose outputs differ from the model's, any error while capturing (its own
message in the line) — is a one-line warning and the model itself, never a wrong answer.  Calls
with other input shapes are specialised (a schedule per input signature, at most
:data:`~workbench.executors.torch_exec.module.MAX_SPECIALISATIONS`, built and verified on first
use with that call's inputs, under the chosen policy; a specialisation that fails runs the model
itself for that signature, with one line).  Calls that leave out an optional argument the
example gave (or give one it left out) and grad-mode calls that autograd would record run the
model itself, each with one line.  Simplified: parameters a forward updates in place are not
put back after verification (buffers are).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from workbench._checks import check_choice, first_line, warn_line
from workbench.errors import OptionError
from workbench.orchestration.accelerate_notes import (
    MODEL,
    plan_text,
    summary_text,
    timing_text,
    with_model_row,
)
from workbench.orchestration.verify_call import KeptState, copied, state_tensors, verify
from workbench.values.graph import Graph

MODES = ("graph", "eager")
PRECISIONS = (None, "fp32", "tf32")
#: The options ``torch.compile(model, backend="workbench", options={...})`` takes.
OPTIONS = ("policy", "mode", "precision", "policies", "budget_s", "repeats", "warmup",
           "show_progress")
#: Why ``policy="auto"`` keeps the model itself without measuring on a device without streams.
CPU_DECISION = ("on the CPU every schedule runs the model's ops one at a time in one issue order "
                "(no streams to overlap), so none can beat the model's own forward, which makes "
                "the same calls without a schedule's per-op dispatch: running the model itself "
                "(nothing measured; pass policies=[...] to measure some anyway)")


def model_device(model: Any, example: Any) -> Any:
    """Where the model runs: its first parameter's or buffer's device, else its first tensor
    input's (positional or keyword), else the CPU."""
    from torch.utils._pytree import tree_leaves

    from workbench.io.torch.program import Call

    torch = _torch()
    for t in (*model.parameters(), *model.buffers()):
        return t.device
    call = Call.of(example)
    for x in tree_leaves((call.args, call.kwargs)):
        if isinstance(x, torch.Tensor):
            return x.device
    return torch.device("cpu")


def device_api(device: Any) -> tuple[str, Any]:
    """``(device for the torch executor, the torch.cuda to issue on or None)`` of the model's
    device: CUDA streams on a CUDA device, none on the CPU (the tests put a recording fake
    here)."""
    torch = _torch()
    if torch.device(device).type == "cuda":
        return str(device), torch.cuda
    return "cpu", None


def accelerate(model: Any, example_inputs: Any = None, *, args: Any = None,
               kwargs: Mapping[str, Any] | None = None, policy: str = "auto",
               mode: str = "graph", precision: str | None = None,
               policies: Iterable[str] | None = None, budget_s: float | None = 60.0,
               repeats: int = 20, warmup: int = 3, show_progress: bool = True) -> Any:
    """``model`` under the workbench's schedule: a ``torch.nn.Module`` computing ``model(...)``.

    The example the schedule is made (and on CUDA captured) for: ``example_inputs`` (a tensor or
    a tuple of the positional arguments), or ``args=`` (the same) and ``kwargs=`` (keyword
    arguments, e.g. ``attention_mask=``); giving both ``example_inputs`` and ``args`` is an
    error.  ``policy``: a registered policy name, or ``"auto"`` (see the module docstring:
    measure ``policies`` — default: every registered one — and the model itself on a GPU, keep
    the fastest beyond noise; on the CPU keep the model without measuring).  ``mode``:
    ``"graph"`` (one CUDA graph, the default) or ``"eager"`` (the streams issued on every call);
    the CPU has neither and runs the ops in issue order.  ``precision``: ``None`` (torch's TF32
    flags as they are), ``"fp32"`` or ``"tf32"``.  ``budget_s`` bounds each stage of each
    measured policy, its timed runs included, and each timing of the model; ``repeats`` and
    ``warmup`` are the timed and untimed runs of each (the policies' split into
    :data:`~workbench.orchestration.compare_measured.ROUNDS` interleaved rounds).
    ``show_progress``: the plan line, progress (lines on stderr and a bar) while measuring and
    the summary line of the decision (``reason`` holds it either way).

    >>> import torch, workbench as wb
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU()).eval()
    >>> fast = wb.accelerate(net, torch.randn(2, 4), policy="nnc")
    >>> x = torch.randn(2, 4)
    >>> with torch.no_grad():
    ...     bool(torch.allclose(fast(x), net(x))), fast.policy
    (True, 'nnc')
    """
    check_options(policy, mode, precision, repeats, warmup)
    call = example_call(example_inputs, args, kwargs)
    name = type(model).__name__
    training = in_training(model)
    if training:
        return _itself(model, f"accelerate: {name} is in training mode ({training}): its "
                              f"outputs differ from call to call (dropout, batch statistics) "
                              f"and calls update buffers, so no schedule can be checked against "
                              f"the model; running the model itself, untouched (call "
                              f"model.eval() first to accelerate it)", warn=True)
    if policy == "auto" and policies is None and device_api(model_device(model, call))[1] is None:
        return _decided(name, show_progress, _itself(model, CPU_DECISION))  # before tracing
    try:
        graph = _import(model, call)
    except Exception as exc:  # noqa: BLE001 - any tracing failure: the model itself
        return _itself(model, f"accelerate: cannot capture {name} ({first_line(exc)}); "
                              f"running the model itself", warn=True)
    return accelerate_graph(graph, model, call, policy=policy, mode=mode,
                            precision=precision, policies=policies, budget_s=budget_s,
                            repeats=repeats, warmup=warmup, show_progress=show_progress,
                            retrace=lambda c: _import(model, c))


def example_call(example_inputs: Any, args: Any, kwargs: Mapping[str, Any] | None) -> Any:
    """The example as a :class:`~workbench.io.torch.program.Call`: ``example_inputs`` or
    ``args`` (one of them) and ``kwargs``; a one-line :class:`OptionError` otherwise."""
    from workbench.io.torch.program import Call

    if example_inputs is not None and args is not None:
        raise OptionError("accelerate: the example is given twice (example_inputs and args=); "
                          "give the positional arguments once")
    if kwargs is not None and (not isinstance(kwargs, Mapping)
                               or not all(isinstance(k, str) for k in kwargs)):
        raise OptionError(f"accelerate: kwargs must be a mapping of argument names to values, "
                          f"got {type(kwargs).__name__}")
    given = example_inputs if example_inputs is not None else args
    if given is None and not kwargs:
        raise OptionError("accelerate: no example inputs: accelerate(model, x) or "
                          "accelerate(model, args=(...), kwargs={...})")
    return Call.of(() if given is None else given, kwargs)


def in_training(model: Any) -> str:
    """What is in training mode in ``model`` (``""``: nothing): the modules whose outputs
    differ per call or that update buffers then (dropout, batch norm), else the model."""
    modules = list(model.modules()) if hasattr(model, "modules") else [model]
    if not any(getattr(m, "training", False) for m in modules):
        return ""
    stateful = sorted({type(m).__name__ for m in modules if getattr(m, "training", False)
                       and ("Dropout" in type(m).__name__ or "Norm" in type(m).__name__)})
    return ", ".join(stateful) if stateful else "model.training is True"


def _import(model: Any, call: Any) -> Graph:
    from workbench.io.torch.fx import from_torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # default-cost notes: costs are not used here
        return from_torch(model, call.args, kwargs=call.kwargs)


def check_options(policy: str, mode: str, precision: str | None, repeats: Any = 1,
                  warmup: Any = 0) -> None:
    """The options :func:`accelerate` and the backend take, or a one-line error naming the
    wrong one (an unknown policy is the registry's ScheduleError)."""
    from workbench.schedulers import POLICIES

    if policy != "auto":
        POLICIES.get(policy)
    check_choice(mode, MODES, "mode")
    if precision not in PRECISIONS:
        raise OptionError(f"accelerate: unknown precision {precision!r} (known: None, fp32, "
                          f"tf32)")
    for name, value, low in (("repeats", repeats, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise OptionError(f"accelerate: {name} must be an integer >= {low}, got "
                              f"{value!r:.80}")


def accelerate_graph(graph: Graph, model: Any, example: Any, *, policy: str = "auto",
                     mode: str = "graph", precision: str | None = None,
                     policies: Iterable[str] | None = None, budget_s: float | None = 60.0,
                     repeats: int = 20, warmup: int = 3, show_progress: bool = True,
                     retrace: Callable[[Any], Graph] | None = None) -> Any:
    """:func:`accelerate` for a graph already imported from ``model`` with ``example`` (a tuple
    or a :class:`~workbench.io.torch.program.Call`; its program holds the model's calls;
    ``torch.compile``'s backend imports dynamo's graph this way).  ``retrace(call)``: the graph
    for a call of other input shapes (``None``: such calls run the model itself)."""
    from workbench.io.torch.program import Call
    from workbench.schedulers import schedule

    check_options(policy, mode, precision, repeats, warmup)
    call = Call.of(example)
    device = model_device(model, call)
    run_device, api = device_api(device)
    name = type(model).__name__
    build = _Builder(model, device=device, mode=mode, precision=precision, api=api)
    if policy == "auto":
        if api is None and policies is None:
            return _decided(name, show_progress, _itself(model, CPU_DECISION))
        from workbench._progress import Progress
        from workbench.schedulers import POLICIES

        names = list(policies) if policies is not None else POLICIES.names()
        with Progress(len({*names, "serial"}) + 3, desc=f"accelerate {name}",
                      enabled=show_progress) as bar:
            comparison, chosen, decision, itself = _measure(
                graph, model, call, device=device, run_device=run_device, api=api, mode=mode,
                precision=precision, names=names, budget_s=budget_s, repeats=repeats,
                warmup=warmup, show_progress=show_progress, bar=bar)
            bar.describe("building the choice" if chosen else "falling back to the model")
            fast, said = _decide(build, graph, call, comparison, chosen, decision, itself,
                                 retrace)
            bar.advance()
            bar.line(said)
        return fast
    sched = schedule(graph, policy)
    sched.validate()
    try:
        fast = build(graph, call, sched)
    except Exception as exc:  # noqa: BLE001 - a capture may fail any way: the model itself
        return _itself(model, f"accelerate: {sched.policy} on {name}: {first_line(exc)}; "
                              f"running the model itself", warn=True)
    fast.comparison, fast.reason = None, None
    if retrace is not None:
        fast.specialise = build.specialiser(sched.policy, retrace)
    return fast


def _decide(build: _Builder, graph: Graph, call: Any, comparison: Any, chosen: str | None,
            decision: str, itself: dict[str, Any],
            retrace: Callable[[Any], Graph] | None) -> tuple[Any, str]:
    """(what ``policy="auto"`` returns, the summary line saying so): the chosen policy's
    schedule built and verified; else, or when that fails, the baseline it was judged against
    (the model's own CUDA graph in graph mode on a GPU, else the model itself)."""
    from workbench.executors.torch_exec.module import ModelItself

    name = type(build.model).__name__
    if chosen is None:
        if build.api is not None and build.mode == "graph" and itself.get("captured"):
            fast = _own_graph(build, graph, call, decision, comparison)
            own = not isinstance(fast, ModelItself)
            return fast, summary_text(name, None, decision if own else str(fast.reason),
                                      own_graph=own)
        return (_itself(build.model, f"{decision}; running the model itself",
                        comparison=comparison), summary_text(name, None, decision))
    try:
        fast = build(graph, call, comparison.schedules[chosen])
    except Exception as exc:  # noqa: BLE001 - a capture may fail any way: the model itself
        why = f"{chosen} on {name}: {first_line(exc)}"
        return (_itself(build.model, f"accelerate: {why}; running the model itself", warn=True,
                        comparison=comparison),
                summary_text(name, None, f"{why} (measured: {decision})"))
    fast.comparison, fast.reason = comparison, decision
    if retrace is not None:
        fast.specialise = build.specialiser(chosen, retrace)
    return fast, summary_text(name, chosen, decision)


def _decided(name: str, show_progress: bool, result: Any) -> Any:
    """``result`` (decided without measuring), its reason said in the summary line."""
    from workbench._progress import Progress

    with Progress(1, desc=f"accelerate {name}", enabled=show_progress) as bar:
        bar.advance()
        bar.line(summary_text(name, None, str(result.reason)))
    return result


class _Builder:
    """Builds a verified :class:`ScheduledModule` of ``model`` for a graph, a call and a
    schedule, leaving the caller's state as it was (see :func:`_verify`)."""

    def __init__(self, model: Any, *, device: Any, mode: str, precision: str | None,
                 api: Any) -> None:
        self.model, self.device, self.mode = model, device, mode
        self.precision, self.api = precision, api

    def __call__(self, graph: Graph, call: Any, sched: Any) -> Any:
        from workbench.executors.torch_exec.module import ScheduledModule

        program = graph.program
        state = KeptState([self.model, getattr(program, "gm", None)], state_tensors(call))
        try:
            fast = ScheduledModule(self.model, sched, call, device=self.device, mode=self.mode,
                                   precision=self.precision, cuda=self.api)
            state.restore()  # the capture's warm-up runs
            verify(fast, self.model, call, self.precision, state)
        finally:
            state.restore()
        return fast

    def specialiser(self, policy: str, retrace: Callable[[Any], Graph]
                    ) -> Callable[[Any], Any]:
        """``specialise(call)`` for :class:`ScheduledModule`: the graph traced again for the
        call's shapes, scheduled by ``policy``, built and verified."""
        from workbench.schedulers import schedule

        def specialise(call: Any) -> Any:
            graph = retrace(call)
            sched = schedule(graph, policy)
            sched.validate()
            return self(graph, call, sched)

        return specialise


def _own_graph(build: _Builder, graph: Graph, call: Any, decision: str,
               comparison: Any) -> Any:
    """The model's own CUDA graph (its ops on one stream, the ``serial`` schedule, captured and
    verified): the baseline no schedule beat, so the result is never slower than it; the model
    itself when that cannot be built."""
    from workbench.schedulers import schedule

    reason = f"{decision}; running the model's own CUDA graph (the serial schedule on one stream)"
    try:
        fast = build(graph, call, schedule(graph, "serial"))
    except Exception as exc:  # noqa: BLE001
        return _itself(build.model, f"{decision}; the model's own CUDA graph could not be built "
                                    f"({first_line(exc)}): running the model itself",
                       warn=True, comparison=comparison)
    fast.comparison, fast.reason = comparison, reason
    return fast


def _measure(graph: Graph, model: Any, call: Any, *, device: Any, run_device: str, api: Any,
             mode: str, precision: str | None, names: list[str], budget_s: float | None,
             repeats: int, warmup: int, show_progress: bool, bar: Any
             ) -> tuple[Any, str | None, str, dict[str, Any]]:
    """(the measured comparison, the chosen policy or None for the model itself, why, the
    model's own timing), said on ``bar`` (a :class:`~workbench._progress.Progress`): the plan
    first, the model's timings, compare's line per policy, one step each.  The model's state is
    put back afterwards and every run reads copies of the example."""
    from workbench.executors.torch_exec.baseline import time_model
    from workbench.orchestration.compare import compare
    from workbench.orchestration.compare_measured import ROUNDS, clearly_faster
    from workbench.values.trace import makespan_stats

    n = len({*names, "serial"})
    label = type(model).__name__
    state = KeptState([model, getattr(graph.program, "gm", None)], state_tensors(call))
    try:
        bar.line(plan_text(label, n, ROUNDS, device, repeats, budget_s))
        timing = {"device": device, "mode": mode, "precision": precision,
                  "warmup": warmup, "repeats": repeats, "budget_s": budget_s, "cuda": api}
        bar.describe(f"{MODEL}, before the policies")
        first = copied(call)
        before = time_model(model, first.args, kwargs=first.kwargs, **timing)
        state.restore()
        bar.advance()
        bar.line(timing_text(before, "before the policies"))
        bar.describe("the policies")
        comparison = compare(
            graph, names, device=_cost_device(device), mode=mode, executor="torch",
            planner=None, budget_s=budget_s, optimum_max_ops=0, memory_budget_bytes=None,
            show_progress=show_progress, rounds=ROUNDS,
            on_policy_done=lambda *_: bar.advance(),
            executor_options={"device": run_device, "inputs": copied(call),
                              "repeats": repeats, "warmup": warmup,
                              "precision": precision, "verify": True})
        state.restore()
        bar.describe(f"{MODEL}, after the policies")
        last = copied(call)
        after = time_model(model, last.args, kwargs=last.kwargs, **timing)
        bar.advance()
        bar.line(timing_text(after, "after the policies"))
    finally:
        state.restore()
    itself = {**makespan_stats([*before["makespans_us"], *after["makespans_us"]]),
              "how": f"{after['how']}: {before['timed_runs']} timed runs before the policies "
                     f"and {after['timed_runs']} after them", "captured": after["captured"]}
    comparison.settings["model_itself"] = itself
    spreads = dict(comparison.spreads())
    median, q1, q3 = (float(itself[k]) for k in ("makespan_median_us", "makespan_q1_us",
                                                  "makespan_q3_us"))
    model_text = f"the model itself {median:,.1f} µs (quartiles {q1:,.1f}-{q3:,.1f})"
    if not spreads:
        decision = f"no schedule ran ({_statuses(comparison)}); {model_text}"
        chosen = None
    else:
        best = min(spreads, key=lambda p: (spreads[p][0], p))
        b = spreads[best]
        best_text = f"{best} {b[0]:,.1f} µs (quartiles {b[1]:,.1f}-{b[2]:,.1f})"
        if clearly_faster({**spreads, MODEL: (median, q1, q3)}, best, MODEL):
            chosen = best
            decision = (f"{best_text} beats {model_text} beyond measurement noise: "
                        f"{median / b[0]:.2f}x")
        else:
            chosen = None
            decision = (f"no schedule beats the model beyond measurement noise: the fastest, "
                        f"{best_text}, against {model_text}")
    comparison.settings["decision"] = decision
    with_model_row(comparison, itself)   # the table flags the rows tied within noise
    return comparison, chosen, decision, itself


def _statuses(comparison: Any) -> str:
    table = comparison.table
    return "; ".join(f"{p}: {s}" for p, s in zip(table["policy"], table["status"], strict=True))


def _cost_device(device: Any) -> str:
    """The cost-model device of the comparison's bounds: the GPU's when its name matches one,
    else h100 (a CPU run shows no simulated column)."""
    if getattr(device, "type", "cpu") != "cuda":
        return "h100"
    from workbench.executors.torch_exec.runner import gpu_spec

    return gpu_spec(str(device)).name


def _itself(model: Any, reason: str, *, warn: bool = False, comparison: Any = None) -> Any:
    from workbench.executors.torch_exec.module import ModelItself

    if warn:
        warn_line(reason, "workbench.accelerate")
    itself = ModelItself(model, reason)
    itself.comparison = comparison
    return itself


def _torch() -> Any:
    from workbench.ops.tensors import torch_module

    return torch_module()


__all__ = ["CPU_DECISION", "MODES", "OPTIONS", "PRECISIONS", "accelerate",
           "accelerate_graph", "check_options", "device_api", "example_call", "in_training",
           "model_device"]
