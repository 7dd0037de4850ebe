"""Capture a launch plan into ONE CUDA graph and replay it (ecosystem notes §1.4).

The plan already has the fork/join shape that stream capture needs: its first step records the
fork event on the origin stream and every schedule stream waits on it (which pulls the stream into
the capture), and its last steps record one join event per stream that the origin waits on
(without it, ``end_capture`` fails with ``cudaErrorStreamCaptureUnjoined``).  :func:`capture`
begins capture on the origin stream, issues the plan with the eager issue loop, and ends it there.
Restrictions honoured: the streams are non-blocking; everything is allocated, uploaded, compiled
and warmed up before capture; nothing synchronises during capture; no library calls (cuBLAS is
never used).

:func:`check_capturable` is the pure-Python part (tested on the CPU): it replays the steps'
capture membership and fails where CUDA would — a stream issuing work before it joined the
capture, a wait on an event recorded outside it, or a stream left unjoined at the end.
"""

from __future__ import annotations

from typing import Any

from workbench.errors import ScheduleError
from workbench.executors.gpu.launch_plan import ORIGIN, LaunchPlan, Record, Wait


def check_capturable(plan: LaunchPlan) -> LaunchPlan:
    """Raise ScheduleError unless capturing ``plan`` on the origin stream would succeed."""
    captured = {ORIGIN}
    in_capture: set[int] = set()  # events recorded by captured streams
    last_step: dict[int, Any] = {}
    origin_waits: set[int] = set()
    for k, step in enumerate(plan.steps):
        s = step.stream
        if s not in captured:
            if not (isinstance(step, Wait) and step.event in in_capture):
                raise ScheduleError(f"step {k}: stream {s} issues {type(step).__name__} before "
                                    f"it joins the capture (it must first wait on an event "
                                    f"recorded on a captured stream)")
            captured.add(s)
        if isinstance(step, Record):
            in_capture.add(step.event)
        elif isinstance(step, Wait):
            if step.event not in in_capture:
                raise ScheduleError(f"step {k}: stream {s} waits on event {step.event}, which "
                                    f"was not recorded inside the capture")
            if s == ORIGIN:
                origin_waits.add(step.event)
        last_step[s] = step
    for s in sorted(captured - {ORIGIN}):
        step = last_step[s]
        if not (isinstance(step, Record) and step.event in origin_waits):
            raise ScheduleError(f"stream {s} is not joined back into the origin stream before "
                                f"the capture ends (cudaErrorStreamCaptureUnjoined)")
    return plan


def capture(runtime: Any, *, marks: str | None = None) -> Any:
    """Capture one issue of ``runtime``'s plan (see
    :class:`workbench.executors.gpu.runtime.Runtime`)
    into a CUDA graph, upload it and return it (a ``cupy.cuda.graph.Graph``).  ``marks``:
    ``None`` or ``"stamps"`` (per-op timestamp kernels; timing events cannot be read inside a
    graph)."""
    if marks not in (None, "stamps"):
        raise ScheduleError(f"graph capture supports marks=None or 'stamps', not {marks!r}")
    check_capturable(runtime.plan)
    origin = runtime.streams[ORIGIN]
    origin.use()
    try:
        origin.begin_capture()
        try:
            runtime.issue(marks=marks)
        finally:
            origin.use()
            graph = origin.end_capture()
    finally:
        runtime.cp.cuda.Stream.null.use()
    graph.upload(origin)
    origin.synchronize()
    return graph


def replay(graph: Any, runtime: Any, repeats: int = 1) -> None:
    """Launch a captured graph ``repeats`` times on the origin stream and wait for it."""
    origin = runtime.streams[ORIGIN]
    for _ in range(repeats):
        graph.launch(origin)
    origin.synchronize()


def graph_dot(graph: Any) -> str:
    """DOT text of a captured graph (``Graph.debug_dot_str``), for Graphviz."""
    return str(graph.debug_dot_str())


__all__ = ["capture", "check_capturable", "graph_dot", "replay"]
