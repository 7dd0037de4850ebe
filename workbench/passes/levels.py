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

:func:`workbench.passes.apply_level` runs a level's passes;
:func:`workbench.orchestration.pipelines.run_level`
also schedules and simulates the result.

>>> import workbench as wb
>>> from workbench.passes import apply_level
>>> g, mode = apply_level(wb.models.transformer_block(), "O2")
>>> mode, sum(op.kind == "fused" for op in g.ops)
('graph', 1)
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.errors import OptionError
from workbench.registry import Registry


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


__all__ = ["LEVELS", "Level", "levels"]
