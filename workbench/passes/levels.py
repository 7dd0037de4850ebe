"""MindSpore's compilation levels O0 / O1 / O2 as named presets (seed 004, "Multi-Level Compilation
Architecture"; notes B.4–B.5).

=====  =====================================  ========  =====================================
level  passes                                  mode      host issue
=====  =====================================  ========  =====================================
O0     side_effects, no_task                   eager     op by op, multi-level pipeline
O1     side_effects, no_task, fusion           eager     op by op, multi-level pipeline
O2     side_effects, no_task, fusion           graph     whole-graph sink: no per-op host cost
=====  =====================================  ========  =====================================

O0 keeps only the passes needed for correctness (auto-monad ordering) plus the no-task ref-node
optimisation, and runs kernels one by one; O1 adds graph-kernel fusion; O2 sinks the whole graph to
the device (``simulate(..., mode="graph")``), which removes the host scheduling cost and helps
most on host-bound graphs.  The seed says O0/O1 executors "improve host scheduling performance
through runtime multistage pipeline", so their ``host_pipeline`` is ``"pipelined"``.
Simplified: O2's extra whole-graph optimisations (UB fusion, communication fusion, its own memory
reuse) are not modelled; LazyInline and the compilation cache do not apply here.

>>> import workbench as wb
>>> g, mode = apply_level(wb.models.transformer_block(), "O2")
>>> mode, sum(op.kind == "fused" for op in g.ops)
('graph', 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.costs import DeviceSpec
from workbench.errors import OptionError
from workbench.graph import Graph
from workbench.registry import Registry
from workbench.trace import Trace


@dataclass(frozen=True)
class Level:
    """A compilation level: the passes it runs (in order), the simulator mode and the host issue
    model of eager mode."""

    passes: tuple[str, ...]
    mode: str
    host_pipeline: str
    summary: str


LEVELS = Registry[Level]("compilation level", error=OptionError)
LEVELS.register("O0", Level(("side_effects", "no_task"), "eager", "pipelined",
                            "necessary passes only; op-by-op launch"))
LEVELS.register("O1", Level(("side_effects", "no_task", "fusion"), "eager", "pipelined",
                            "O0 + graph-kernel fusion; op-by-op launch"))
LEVELS.register("O2", Level(("side_effects", "no_task", "fusion"), "graph", "serial",
                            "O1 + whole-graph sink: no host scheduling cost"))


def levels() -> list[str]:
    """Names of the compilation levels."""
    return LEVELS.names()


def apply_level(graph: Graph, level: str) -> tuple[Graph, str]:
    """The graph after the level's passes, and the simulator mode it runs in."""
    from workbench.passes import run_passes

    info = LEVELS.get(level)
    return run_passes(graph, info.passes), info.mode


def run_level(graph: Graph, level: str, policy: str = "serial",
              device: str | DeviceSpec = "h100", **options: Any) -> Trace:
    """Apply ``level``, schedule with ``policy`` and simulate on ``device``.

    ``options`` go to the simulator (``calibration=``, or ``host_pipeline=`` to override the
    level's).  The trace's ``meta["level"]`` names the level.

    >>> import workbench as wb
    >>> t0 = run_level(wb.models.transformer_block(), "O0")
    >>> t2 = run_level(wb.models.transformer_block(), "O2")
    >>> t0.meta["host_end_us"], t2.meta["host_end_us"]  # 18 launches, pipelined; one graph launch
    (38.0, 8.0)
    """
    from workbench.schedulers import schedule
    from workbench.simulate import simulate

    info = LEVELS.get(level)
    for key in options:
        if key not in ("calibration", "host_pipeline"):
            raise OptionError(f"run_level has no option {key!r} "
                              f"(options: calibration, host_pipeline)")
    g, mode = apply_level(graph, level)
    options.setdefault("host_pipeline", info.host_pipeline)
    trace = simulate(schedule(g, policy), device, mode=mode, **options)
    trace.meta["level"] = level
    return trace
