"""The model itself, timed the way a schedule's run is timed: the baseline a schedule must beat.

:func:`time_model` calls ``model(*args, **kwargs)`` ``warmup`` times, then times ``repeats``
calls: with ``perf_counter_ns`` on the CPU; with two CUDA events on the current stream on a GPU,
either each call issued eagerly (``mode="eager"``) or the model's ``forward`` captured once as one
CUDA graph on one stream and replayed (``mode="graph"``, the model's own CUDA graph, as a
schedule's capture is replayed).  A model that cannot be captured (a host synchronisation inside,
say) is timed eagerly and the result says so (``captured``: whether the CUDA graph was timed).
``budget_s`` bounds the timing: the timed calls stop once it is spent (at least one is timed;
``timed_runs`` and ``how`` say how many).  Returns the median and quartiles
(:func:`workbench.values.trace.makespan_stats`) and ``how`` it was timed; :func:`time_call` times
any call that way.  The caller's tensors are used as given (pass copies to keep them).
O((warmup + repeats) · one forward).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from workbench._checks import first_line
from workbench.executors.torch_exec.runner import precision_flags
from workbench.ops.tensors import torch_module
from workbench.values.trace import makespan_stats


def time_model(model: Any, args: tuple[Any, ...], *, kwargs: Mapping[str, Any] | None = None,
               device: Any, mode: str = "graph", precision: str | None = None,
               warmup: int = 3, repeats: int = 20, budget_s: float | None = None,
               cuda: Any = None) -> dict[str, Any]:
    """Median and quartiles (µs) of ``repeats`` calls of ``model(*args, **kwargs)`` on
    ``device`` (see the module docstring); ``how``: what was timed; ``captured``: whether it
    was the model's own CUDA graph.  ``cuda``: the ``torch.cuda`` to use (default: torch's own
    on a CUDA device; the tests pass a recording fake)."""
    torch = torch_module()
    dev = torch.device(device)
    api = cuda if cuda is not None else (torch.cuda if dev.type == "cuda" else None)
    keywords = dict(kwargs or {})

    def call() -> Any:
        return model(*args, **keywords)

    with torch.no_grad(), precision_flags(precision):
        if api is None:
            timed = time_call(call, device=dev, warmup=warmup, repeats=repeats,
                              budget_s=budget_s)
            return {**_with_count(timed, "the model's forward on the CPU", repeats),
                    "captured": False}
        if mode == "graph":
            try:
                return _graph(api, model, args, keywords, warmup, repeats, budget_s)
            except RuntimeError as exc:
                timed = _eager(api, call, warmup, repeats, budget_s)
                timed["how"] += f" (its capture as a CUDA graph failed: {first_line(exc, 'error')})"
                return timed
        return _eager(api, call, warmup, repeats, budget_s)


def time_call(call: Callable[[], Any], *, device: Any, warmup: int = 3, repeats: int = 20,
              budget_s: float | None = None, cuda: Any = None) -> dict[str, Any]:
    """Median and quartiles (µs, :func:`~workbench.values.trace.makespan_stats`)
    of ``repeats`` calls of ``call()`` after ``warmup``: two CUDA events on the current stream
    around each call on a GPU, ``perf_counter_ns`` on the CPU; ``timed_runs``: how many were
    timed (fewer than ``repeats`` when ``budget_s`` was spent first)."""
    torch = torch_module()
    start = time.perf_counter()
    api = cuda if cuda is not None else (
        torch.cuda if torch.device(device).type == "cuda" else None)
    if api is None:
        for _ in range(warmup):
            call()
        spans = []
        for _ in range(repeats):
            t0_ns = time.perf_counter_ns()
            call()
            spans.append((time.perf_counter_ns() - t0_ns) / 1e3)
            if _spent(start, budget_s):
                break
        return {**makespan_stats(spans), "timed_runs": len(spans)}
    api.synchronize()
    one = 0.0
    for _ in range(max(1, warmup)):
        t0 = time.perf_counter()
        call()
        api.synchronize()
        one = time.perf_counter() - t0
    n = repeats if budget_s is None else max(1, min(repeats, int(
        (budget_s - (time.perf_counter() - start)) / max(one, 1e-6))))
    pairs = [(api.Event(enable_timing=True), api.Event(enable_timing=True)) for _ in range(n)]
    for first, last in pairs:
        first.record()
        call()
        last.record()
    api.synchronize()
    return {**makespan_stats([a.elapsed_time(b) * 1e3 for a, b in pairs]), "timed_runs": n}


def _spent(start: float, budget_s: float | None) -> bool:
    return budget_s is not None and time.perf_counter() - start >= budget_s


def _with_count(timed: dict[str, Any], how: str, repeats: int) -> dict[str, Any]:
    n = timed["timed_runs"]
    cut = "" if n >= repeats else f" ({n} of {repeats} timed runs: the budget was spent)"
    return {**timed, "how": how + cut}


def _eager(api: Any, call: Callable[[], Any], warmup: int, repeats: int,
           budget_s: float | None) -> dict[str, Any]:
    timed = time_call(call, device="cuda", warmup=warmup, repeats=repeats, budget_s=budget_s,
                      cuda=api)
    return {**_with_count(timed, "the model's forward, issued eagerly", repeats),
            "captured": False}


def _graph(api: Any, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], warmup: int,
           repeats: int, budget_s: float | None) -> dict[str, Any]:
    """The model captured as one CUDA graph (warm-up on a side stream first, as torch's
    documentation does), replays timed."""
    torch = torch_module()
    static = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    static_kw = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    side = api.Stream()
    side.wait_stream(api.current_stream())
    with api.stream(side):
        for _ in range(max(1, warmup)):
            model(*static, **static_kw)
    api.current_stream().wait_stream(side)
    graph = api.CUDAGraph()
    with api.graph(graph):
        model(*static, **static_kw)
    timed = time_call(graph.replay, device="cuda", warmup=warmup, repeats=repeats,
                      budget_s=budget_s, cuda=api)
    return {**_with_count(timed, "the model's forward captured as one CUDA graph (one stream), "
                                 "replayed", repeats), "captured": True}


__all__ = ["time_call", "time_model"]
