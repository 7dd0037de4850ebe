"""The model itself, timed the way a schedule's run is timed: the baseline a schedule must beat.

:func:`time_model` calls ``model(*args)`` ``warmup`` times, then times ``repeats`` calls: with
``perf_counter_ns`` on the CPU; with two CUDA events on the current stream on a GPU, either each
call issued eagerly (``mode="eager"``) or the model's ``forward`` captured once as one CUDA graph
on one stream and replayed (``mode="graph"``, the model's own CUDA graph, as a schedule's
capture is replayed).  A model that cannot be captured (a host synchronisation inside, say) is
timed eagerly and the result says so.  Returns the median and quartiles
(:func:`workbench.values.trace.makespan_stats`) and ``how`` it was timed;
:func:`time_call` times any call that way.  O((warmup + repeats) · one forward).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from workbench._checks import first_line
from workbench.executors.torch_exec.runner import precision_flags
from workbench.values.op_torch import torch_module
from workbench.values.trace import makespan_stats


def time_model(model: Any, args: tuple[Any, ...], *, device: Any, mode: str = "graph",
               precision: str | None = None, warmup: int = 3,
               repeats: int = 20) -> dict[str, Any]:
    """Median and quartiles (µs) of ``repeats`` calls of ``model(*args)`` on ``device`` (see
    the module docstring); ``how``: what was timed."""
    torch = torch_module()
    dev = torch.device(device)
    with torch.no_grad(), precision_flags(precision):
        if dev.type != "cuda":
            return {**time_call(lambda: model(*args), device=dev, warmup=warmup,
                                repeats=repeats), "how": "the model's forward on the CPU"}
        if mode == "graph":
            try:
                return _graph(torch, model, args, warmup, repeats)
            except RuntimeError as exc:
                timed = _eager(model, args, warmup, repeats)
                timed["how"] += f" (its capture as a CUDA graph failed: {first_line(exc, 'error')})"
                return timed
        return _eager(model, args, warmup, repeats)


def time_call(call: Callable[[], Any], *, device: Any, warmup: int = 3,
              repeats: int = 20) -> dict[str, Any]:
    """Median and quartiles (µs, :func:`~workbench.values.trace.makespan_stats`)
    of ``repeats`` calls of ``call()`` after ``warmup``: two CUDA events on the current stream
    around each call on a GPU, ``perf_counter_ns`` on the CPU."""
    torch = torch_module()
    for _ in range(warmup):
        call()
    if torch.device(device).type != "cuda":
        spans = []
        for _ in range(repeats):
            t0 = time.perf_counter_ns()
            call()
            spans.append((time.perf_counter_ns() - t0) / 1e3)
        return makespan_stats(spans)
    torch.cuda.synchronize()
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in range(repeats)]
    for first, last in pairs:
        first.record()
        call()
        last.record()
    torch.cuda.synchronize()
    return makespan_stats([a.elapsed_time(b) * 1e3 for a, b in pairs])


def _eager(model: Any, args: tuple[Any, ...], warmup: int, repeats: int) -> dict[str, Any]:
    return {**time_call(lambda: model(*args), device="cuda", warmup=warmup, repeats=repeats),
            "how": "the model's forward, issued eagerly"}


def _graph(torch: Any, model: Any, args: tuple[Any, ...], warmup: int,
           repeats: int) -> dict[str, Any]:
    """The model captured as one CUDA graph (warm-up on a side stream first, as torch's
    documentation does), replays timed."""
    static = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(max(1, warmup)):
            model(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        model(*static)
    return {**time_call(graph.replay, device="cuda", warmup=warmup, repeats=repeats),
            "how": "the model's forward captured as one CUDA graph (one stream), replayed"}


__all__ = ["time_call", "time_model"]
