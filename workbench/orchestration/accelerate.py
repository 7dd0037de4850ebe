"""``wb.accelerate``: a PyTorch model run the way the workbench says, with its own weights.

:func:`accelerate` imports the model (:func:`workbench.io.from_torch`: its own calls and
parameters), picks a schedule and returns a ``torch.nn.Module`` whose ``forward`` takes what the
model takes and returns what it returns, computed by the model's own ops under that schedule
(:class:`workbench.executors.torch_exec.module.ScheduledModule`: on CUDA one multi-stream CUDA
graph replayed with the new inputs copied in; on the CPU the ops in issue order).

``policy="auto"`` *measures*: every candidate policy's schedule runs on the model's device with
the torch executor (:func:`workbench.orchestration.compare.compare` with ``executor="torch"``,
each stage bounded by ``budget_s``), and so does the model itself
(:func:`workbench.executors.torch_exec.baseline.time_model`: its own forward, as one CUDA graph
in graph mode), before and after the policies so that a machine whose speed drifts during the
measurement widens the model's quartile range instead of favouring whichever ran later.  The
fastest median wins, but only if it beats the model beyond measurement noise (its third
quartile below the model's first, and no chain of overlapping ranges linking them: the rule of
measured comparisons, :func:`workbench.orchestration.compare_measured.clearly_faster`);
otherwise the model itself is returned (:class:`~workbench.executors.torch_exec.module.
ModelItself`, with the reason).  The result carries ``.schedule``, ``.policy`` and the measured
``.comparison`` (its ``settings["model_itself"]`` holds the model's timing and
``settings["decision"]`` the sentence that explains the choice).

What cannot be captured — a model ``torch.export`` and ``torch.fx`` cannot trace (data-dependent
control flow), calls with other shapes than the example's, a run whose outputs differ from the
model's — is a one-line warning and the model itself, never a wrong answer.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from workbench._checks import check_choice, first_line, warn_line
from workbench.errors import OptionError, WorkbenchError
from workbench.values.graph import Graph

MODES = ("graph", "eager")
MODEL = "model itself"  # the model's row among the measured policies' spreads
PRECISIONS = (None, "fp32", "tf32")
#: The options ``torch.compile(model, backend="workbench", options={...})`` takes.
OPTIONS = ("policy", "mode", "precision", "policies", "budget_s", "repeats", "warmup",
           "show_progress")


def model_device(model: Any, example: tuple[Any, ...]) -> Any:
    """Where the model runs: its first parameter's or buffer's device, else its first tensor
    input's, else the CPU."""
    torch = _torch()
    for t in (*model.parameters(), *model.buffers()):
        return t.device
    for x in example:
        if isinstance(x, torch.Tensor):
            return x.device
    return torch.device("cpu")


def accelerate(model: Any, example_inputs: Any, *, policy: str = "auto", mode: str = "graph",
               precision: str | None = None, policies: Iterable[str] | None = None,
               budget_s: float | None = 60.0, repeats: int = 20, warmup: int = 3,
               show_progress: bool = False) -> Any:
    """``model`` under the workbench's schedule: a ``torch.nn.Module`` computing ``model(*x)``.

    ``example_inputs``: a tensor or a tuple, as the model takes them (the schedule is made, and
    on CUDA captured, for their shapes).  ``policy``: a registered policy name, or ``"auto"``
    (measure ``policies`` — default: every registered one — and the model itself, keep the
    fastest beyond noise; see the module docstring).  ``mode``: ``"graph"`` (one CUDA graph,
    the default) or ``"eager"`` (the streams issued on every call); the CPU has neither and runs
    the ops in issue order.  ``precision``: ``None`` (torch's TF32 flags as they are), ``"fp32"``
    or ``"tf32"``.  ``budget_s`` bounds each stage of each measured policy; ``repeats`` and
    ``warmup`` are the timed and untimed runs of each.

    >>> import torch, workbench as wb
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU()).eval()
    >>> fast = wb.accelerate(net, torch.randn(2, 4), policy="nnc")
    >>> x = torch.randn(2, 4)
    >>> bool(torch.allclose(fast(x), net(x))), fast.policy
    (True, 'nnc')
    """
    from workbench.io.fx import from_torch

    _check(policy, mode, precision)
    example = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (
        example_inputs,)
    name = type(model).__name__
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # default-cost notes: costs are not used here
            graph = from_torch(model, example)
    except WorkbenchError as exc:
        return _itself(model, f"accelerate: cannot capture {name} ({exc}); running the model "
                              f"itself", warn=True)
    return accelerate_graph(graph, model, example, policy=policy, mode=mode,
                            precision=precision, policies=policies, budget_s=budget_s,
                            repeats=repeats, warmup=warmup, show_progress=show_progress)


def _check(policy: str, mode: str, precision: str | None) -> None:
    from workbench.schedulers import POLICIES

    if policy != "auto":
        POLICIES.get(policy)
    check_choice(mode, MODES, "mode")
    if precision not in PRECISIONS:
        raise OptionError(f"accelerate: unknown precision {precision!r} (known: None, fp32, "
                          f"tf32)")


def accelerate_graph(graph: Graph, model: Any, example: tuple[Any, ...], *, policy: str = "auto",
                     mode: str = "graph", precision: str | None = None,
                     policies: Iterable[str] | None = None, budget_s: float | None = 60.0,
                     repeats: int = 20, warmup: int = 3, show_progress: bool = False) -> Any:
    """:func:`accelerate` for a graph already imported from ``model`` (its program holds the
    model's calls; ``torch.compile``'s backend imports dynamo's graph this way)."""
    from workbench.executors.torch_exec.module import ScheduledModule
    from workbench.schedulers import schedule

    _check(policy, mode, precision)
    device = model_device(model, example)
    comparison = None
    if policy == "auto":
        comparison, chosen, decision = _measure(graph, model, example, device=device, mode=mode,
                                                precision=precision, policies=policies,
                                                budget_s=budget_s, repeats=repeats,
                                                warmup=warmup, show_progress=show_progress)
        if chosen is None:
            return _itself(model, decision, comparison=comparison)
        sched = comparison.schedules[chosen]
    else:
        sched = schedule(graph, policy)
        sched.validate()
    try:
        fast = ScheduledModule(model, sched, example, device=device, mode=mode,
                               precision=precision)
        _verify(fast, model, example, precision)
    except (WorkbenchError, RuntimeError) as exc:  # RuntimeError: torch refused a capture
        return _itself(model, f"accelerate: {sched.policy} on {type(model).__name__}: "
                              f"{first_line(exc)}; "
                              f"running the model itself", warn=True, comparison=comparison)
    fast.comparison = comparison
    return fast


def _measure(graph: Graph, model: Any, example: tuple[Any, ...], *, device: Any, mode: str,
             precision: str | None, policies: Iterable[str] | None, budget_s: float | None,
             repeats: int, warmup: int, show_progress: bool) -> tuple[Any, str | None, str]:
    """(the measured comparison, the chosen policy or None for the model itself, why)."""
    from workbench.executors.torch_exec.baseline import time_model
    from workbench.orchestration.compare import compare
    from workbench.orchestration.compare_measured import clearly_faster
    from workbench.values.trace import makespan_stats

    before = time_model(model, example, device=device, mode=mode, precision=precision,
                        warmup=warmup, repeats=repeats)
    comparison = compare(
        graph, list(policies) if policies is not None else None, device=_cost_device(device),
        mode=mode, executor="torch", planner=None, budget_s=budget_s, optimum_max_ops=0,
        memory_budget_bytes=None, show_progress=show_progress,
        executor_options={"device": str(device), "inputs": example, "repeats": repeats,
                          "warmup": warmup, "precision": precision, "verify": True})
    after = time_model(model, example, device=device, mode=mode, precision=precision,
                       warmup=warmup, repeats=repeats)
    itself = {**makespan_stats([*before["makespans_us"], *after["makespans_us"]]),
              "how": f"{after['how']}: {repeats} timed runs before the policies and "
                     f"{repeats} after them"}
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
                        f"{best_text}, against {model_text}; running the model itself")
    comparison.settings["decision"] = decision
    return comparison, chosen, decision


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


def _verify(fast: Any, model: Any, example: tuple[Any, ...], precision: str | None) -> None:
    """The accelerated module's outputs on the example equal the model's (within the
    precision's tolerance), else a one-line ScheduleError."""
    from workbench.executors.torch_exec.check import TOLERANCE, compare_results
    from workbench.executors.torch_exec.runner import precision_flags

    torch = _torch()
    with torch.no_grad(), precision_flags(precision):  # the reference under the run's flags
        want = model(*example)
    compare_results(fast(*example), want, tolerance=TOLERANCE[precision],
                    what=f"accelerated {type(model).__name__} ({fast.policy})")


def _itself(model: Any, reason: str, *, warn: bool = False, comparison: Any = None) -> Any:
    from workbench.executors.torch_exec.module import ModelItself

    if warn:
        warn_line(reason, "workbench.accelerate")
    itself = ModelItself(model, reason)
    itself.comparison = comparison
    return itself


def _torch() -> Any:
    from workbench.values.op_torch import torch_module

    return torch_module()


__all__ = ["MODES", "OPTIONS", "PRECISIONS", "accelerate", "accelerate_graph", "model_device"]
