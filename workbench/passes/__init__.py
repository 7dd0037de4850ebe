"""Graph → Graph passes (DESIGN.md "passes"): one registry table, ``PASSES``; O0/O1/O2 levels.

Every pass is a pure function ``fn(graph) -> Graph`` that returns a new graph and never changes its
input (STYLE.md R1).  ``run_passes(graph, names)`` applies registered passes in order; an unknown
name raises a one-line :class:`~workbench.errors.OptionError` listing the known ones.  The
heterogeneous helper :func:`partition` is re-exported here but is not a pass.  Passes call no
scheduler and no simulator: what runs them together
(:func:`~workbench.orchestration.pipelines.run_level`,
:func:`~workbench.orchestration.pipelines.split_schedule`,
:func:`~workbench.orchestration.pipelines.merge_schedule`) is in
:mod:`workbench.orchestration.pipelines`.

>>> import workbench as wb
>>> from workbench.passes import run_passes
>>> run_passes(wb.models.textbook_side_effects(), ["side_effects"]).control_edges
(('Assign_1', 'Assign_2'), ('Assign_2', 'Sub_1'))

Graph-transforms layer: may import the values and the cost model, nothing above (no scheduler,
simulator or memory planner).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from workbench.errors import OptionError
from workbench.passes.fusion import fuse_elementwise, fusion_groups, pattern_of
from workbench.passes.levels import LEVELS, Level, levels
from workbench.passes.no_task import drop_no_task_ops
from workbench.passes.partition import (
    Subgraph,
    insert_copies,
    min_subgraphs_lower_bound,
    partition,
)
from workbench.passes.side_effects import add_side_effect_edges, state_effects
from workbench.registry import Registry
from workbench.values.graph import Graph


@dataclass(frozen=True)
class PassInfo:
    """A registered pass: the function, the seed it implements, one line on what it does."""

    fn: Callable[[Graph], Graph]
    seed: str
    summary: str


PASSES = Registry[PassInfo]("pass", error=OptionError)
PASSES.register("side_effects", PassInfo(
    add_side_effect_edges, "003 textbook §7.5.2; 004 auto-monad",
    "control edges keep program order among ops touching the same state"))
PASSES.register("no_task", PassInfo(
    drop_no_task_ops, "004 MindSpore no-task nodes",
    "reshape/flatten/squeeze/... become aliases: no launch, no memory"))
PASSES.register("fusion", PassInfo(
    fuse_elementwise, "004 MindSpore O1 graph-kernel fusion",
    "maximal elementwise groups (and their reduce) become one fused kernel"))
PASSES.register("insert_copies", PassInfo(
    insert_copies, "003 textbook §7.5.3 (subgraph merge)",
    "h2d/d2h/d2d copy ops on every data edge that crosses memory spaces"))


def passes() -> list[str]:
    """Names of all registered passes."""
    return PASSES.names()


def run_passes(graph: Graph, names: Iterable[str]) -> Graph:
    """Apply the named passes in order; unknown names fail before any pass runs."""
    fns = [PASSES.get(name).fn for name in names]
    for fn in fns:
        graph = fn(graph)
    return graph


def apply_level(graph: Graph, level: str) -> tuple[Graph, str]:
    """The graph after the level's passes, and the simulator mode it runs in."""
    info = LEVELS.get(level)
    return run_passes(graph, info.passes), info.mode


__all__ = [
    "LEVELS", "PASSES", "Level", "PassInfo", "Subgraph", "add_side_effect_edges", "apply_level",
    "drop_no_task_ops", "fuse_elementwise", "fusion_groups", "insert_copies", "levels",
    "min_subgraphs_lower_bound", "partition", "passes", "pattern_of", "run_passes",
    "state_effects",
]
