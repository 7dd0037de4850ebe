"""Figures quoted in the prose of notebooks 03 and 04 are the ones their cells compute (issue 25:
notebook 04 called a graph "host-bound" and said sinking "removes nearly all host cost" next to
output that did not show it).  Each entry: the notebook, the markdown text that quotes the figure
with ``{}`` where it stands, its format (the rounding the text implies: ``{:.1f}`` means the
value rounded to one decimal is the one quoted) and the computation of the cell beside it, with
the same workbench functions and arguments.  ``tests/test_quoted_scan.py`` checks that every
figure of the prose is one of these, of the other notebooks' entries or a GIVEN one."""

from __future__ import annotations

import inspect
from functools import cache
from typing import Any

import pytest

import workbench as wb
from tests._quoted_text import assert_quoted, quoted_ids
from workbench.memory import MemoryPlan, PoolResult

NB03, NB04 = "03_textbook_scheduling.ipynb", "04_mindspore_levels_memory.ipynb"
GIB, MIB = 2**30, 2**20


@cache
def _tiny() -> wb.Graph:
    return wb.models.transformer_block(seq_len=8, d_model=64, heads=2, d_ff=256, layers=4)


@cache
def _level(level: str) -> wb.Trace:
    """Notebook 04 §1: the tiny transformer at ``level`` on an H100 with a 12 µs host."""
    from workbench.orchestration.pipelines import run_level
    from workbench.simulator.cost_model.costs import with_overrides

    return run_level(_tiny(), level, device=with_overrides("h100", launch_overhead_us=12.0))


@cache
def _serial(**kw: Any) -> wb.Trace:
    """Notebooks 03 §5 and 04 §2: the tiny transformer's serial schedule on an H100."""
    return wb.simulate(wb.schedule(_tiny(), "serial"), "h100", **kw)


@cache
def _six(policy: str) -> wb.Schedule:
    """Notebook 04 §3 and §6: the seed's six kernels in ``policy``'s order."""
    return wb.schedule(wb.models.mindspore_six_kernels(), policy)


def _peak_gib(policy: str) -> float:
    """Notebook 04 §3: the peak of live bytes (SOMAS's lower bound) of ``policy``'s order."""
    return wb.plan_memory(_six(policy), "somas").lower_bound / GIB


@cache
def _pool() -> PoolResult:
    """Notebook 04 §4: the BestFit pool replaying the DFS order in 1 GiB chunks."""
    return wb.memory.replay_pool(wb.simulate(_six("dfs"), "h100"), chunk_bytes=GIB)


@cache
def _usage_plans() -> dict[str, MemoryPlan]:
    """Notebook 04 §5: every planner on the seven tensors of the cell."""
    records = [(4 * MIB, 2, 4, "t0"), (2 * MIB, 5, 7, "t1"), (6 * MIB, 0, 2, "t2"),
               (4 * MIB, 3, 4, "t3"), (2 * MIB, 0, 0, "t4"), (6 * MIB, 6, 7, "t5"),
               (1 * MIB, 4, 6, "t6")]
    return {p: wb.memory.plan_usage(records, p) for p in wb.memory.planners()}


def _optimum_mib() -> object:
    """The exact plan's arena, quoted as equal to the lower bound (shown apart if it is not)."""
    exact = _usage_plans()["exact"]
    if exact.arena_bytes != exact.lower_bound or not exact.notes["optimal"]:
        return f"{exact.arena_bytes / MIB:g} (bound {exact.lower_bound / MIB:g}, not proven)"
    return exact.arena_bytes / MIB


def _somas_alignment() -> object:
    from workbench.memory.somas import plan_somas

    return inspect.signature(plan_somas).parameters["alignment"].default


def _budget_host_bound() -> float:
    """Notebook 04 §6: the smallest eager host_bound_fraction of NNC on RandWire under the
    cell's memory limits (the runs of the claim table, memoised there)."""
    from tests._notebook_claims import LIMITS, _budget, run

    return min(run(_budget(m)).meta["host_bound_fraction"] for m in LIMITS)


@cache
def _heterogeneous() -> wb.Graph:
    """Notebook 03 §3: the textbook's heterogeneous graph with its copy ops."""
    from workbench.passes import insert_copies

    return insert_copies(wb.models.textbook_heterogeneous())


QUOTED = [  # (notebook, text with {} where the figure stands, its format, the computation)
    (NB04, "host_bound_fraction {} and", "{:.2f}",
     lambda: _level("O0").meta["host_bound_fraction"]),
    (NB04, "and {}: the device waits", "{:.2f}", lambda: _level("O1").meta["host_bound_fraction"]),
    (NB04, "host's work after {} µs", "{:.1f}", lambda: _level("O2").meta["host_end_us"]),
    (NB04, "instead of {} µs", "{:.1f}", lambda: _level("O1").meta["host_end_us"]),
    (NB04, "cuts the run from {} to", "{:.1f}", lambda: _level("O1").makespan),
    (NB04, "to {} µs.", "{:.1f}", lambda: _level("O2").makespan),
    (NB04, "the serial host takes {} µs", "{:.1f}",
     lambda: _serial(host_pipeline="serial").makespan),
    (NB04, "On the {} small ops of the tiny transformer", "{}", lambda: len(_tiny())),
    (NB04, "the pipelined host {} µs", "{:.1f}",
     lambda: _serial(host_pipeline="pipelined").makespan),
    # §3: whole GiB, as the seed writes them ("5G"), from the cell's SOMAS lower bound
    (NB04, "the seed's {}G vs {}G example", "{:.0f}",
     lambda: (_peak_gib("bfs"), _peak_gib("dfs"))),
    (NB04, "(BFS {}G vs DFS {}G)", "{:.0f}", lambda: (_peak_gib("bfs"), _peak_gib("dfs"))),
    (NB04, "-> 3 -> 6` peaks at **{}G**", "{:.0f}", lambda: _peak_gib("bfs")),
    (NB04, "-> 5 -> 6` peaks at **{}G**", "{:.0f}", lambda: _peak_gib("dfs")),
    # §4: what the pool reserves vs what is in use at most
    (NB04, "it reserves {}G while at most {}G is in use", "{:.0f}",
     lambda: (_pool().peak_reserved / GIB, _pool().peak_in_use / GIB)),
    (NB04, "SOMAS aligns every tensor to {} bytes", "{}", _somas_alignment),
    # §5: every planner that reuses memory (all but naive and exact) needs the same arena
    (NB04, "reuses memory needs {} MiB", "{:g}",
     lambda: frozenset(pl.arena_bytes / MIB for p, pl in _usage_plans().items()
                       if p not in ("naive", "exact"))),
    (NB04, "while the optimum is {} MiB, which equals the lower bound", "{:g}", _optimum_mib),
    # §6: the arena of SOMAS's plan of NNC's two streams vs the DFS order
    (NB04, "NNC's two streams need {}G where DFS needs {}G", "{:.0f}",
     lambda: tuple(wb.plan_memory(_six(p), "somas").arena_bytes / GIB for p in ("nnc", "dfs"))),
    # §6: RandWire under every memory limit of the cell is host-bound in eager mode
    (NB04, "(`host_bound_fraction` {} or more in every row)", "{:.2f}", _budget_host_bound),
    (NB03, "tiny transformer's {} ops", "{}", lambda: len(_tiny())),
    (NB03, "eager), {} of them reshapes that launch nothing", "{}",
     lambda: sum(1 for o in _tiny().ops if o.kind == "reshape")),
    (NB04, "({} of them reshapes, which the host only shape-infers)", "{}",
     lambda: sum(1 for o in _tiny().ops if o.kind == "reshape")),
    (NB03, "(host_bound_fraction {} eager)", "{:.2f}",
     lambda: _serial(mode="eager").meta["host_bound_fraction"]),
    (NB03, "take {} µs eager", "{:.1f}", lambda: _serial(mode="eager").makespan),
    (NB03, "and {} µs sunk", "{:.1f}", lambda: _serial(mode="graph").makespan),
    # §3: every copy moves the same bytes, every kernel of the graph takes the same time
    (NB03, "The copies are the largest bars: {} MiB over PCIe takes longer than any {} µs kernel",
     "{:g}", lambda: (frozenset(op.bytes_read / MIB for op in _heterogeneous().ops
                                if op.device == "copy"),
                      frozenset(op.duration_us for op in _heterogeneous().ops
                                if op.device != "copy"))),
]


@pytest.mark.parametrize("notebook,text,fmt,compute", QUOTED, ids=quoted_ids(QUOTED))
def test_quoted_figure_is_the_computed_one(notebook: str, text: str, fmt: str,
                                           compute: object) -> None:
    assert_quoted(notebook, text, fmt, compute)
