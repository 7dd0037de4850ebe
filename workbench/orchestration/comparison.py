"""Comparison: the result of :func:`~workbench.orchestration.compare.compare`, and its best in
words.

A :class:`Comparison` keeps every Schedule and Trace of the policies it compared, the ranking
table and the settings, so views, notebooks and the HTML report can show them side by side.  It
also says which policies it cannot order against the best (:attr:`Comparison.ties`): a measured
comparison's policies whose quartile ranges overlap the fastest's, directly or through a chain
of overlapping ranges (:func:`~workbench.orchestration.compare_measured.noise_ties`: a policy is
faster than another only when its q3 lies below the other's q1), or a simulated comparison's
policies within the simulator's :data:`~workbench.simulator.fidelity.accuracy.TIE_BAND` of the
best.  :attr:`Comparison.best_text` is the one text of the best that the report's header, the
CLI's ``best:`` line and the notebook view show: several policies that tie within measurement
noise are named best together, fastest median first, and a speedup over serial is claimed only
beyond noise.  Plotting is imported only when a figure or report is asked for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.orchestration.compare_measured import Spread, clearly_faster, noise_ties
from workbench.values.graph import Graph
from workbench.values.ranking import TIE_RULE, exact_ties, fastest_first
from workbench.values.schedule import Schedule
from workbench.values.trace import Trace

#: The policy every speedup is over (always run, listed first).
BASELINE = "serial"


def ran_on(settings: Mapping[str, Any] | None) -> str:
    """Where a comparison's makespans come from, by its ``settings``: ``"simulator"``, or where
    the measured executor ran, ``"cpu"`` or ``"gpu"`` (the report and the CLI explain each in
    its own terms)."""
    settings = settings or {}
    if settings.get("executor", "simulator") == "simulator":
        return "simulator"
    return "cpu" if "cpu" in dict(settings.get("measured_on") or {}) else "gpu"


def traces_in_table_order(comparison: Comparison) -> dict[str, Trace]:
    """The comparison's traces in the order of its table (fastest first: the order of every
    chart), then any trace without a row.  O(policies)."""
    traces = dict(comparison.traces)
    order = [str(p) for p in comparison.table["policy"] if str(p) in traces]
    return {p: traces[p] for p in [*order, *(p for p in traces if p not in order)]}


class Comparison:
    """Policies side by side on one graph: ``table`` (one row per policy, fastest first:
    :func:`~workbench.values.ranking.fastest_first`; ``table_in_policy_order`` keeps the order
    the policies were run in), ``schedules``, ``traces``, ``best`` (smallest makespan; exact
    ties go to the fewest streams, then syncs), the policies it cannot order against the best
    (``ties``: measurement noise, or the simulator's near ties) and the ``settings`` used.
    ``best_text`` is the best in words, shared by the report, the CLI and the notebook view."""

    def __init__(self, graph: Graph, device: str, mode: str, schedules: Mapping[str, Schedule],
                 traces: Mapping[str, Trace], table: pd.DataFrame, settings: Mapping[str, Any],
                 lower_bounds: Mapping[str, float],
                 memory_plans: Mapping[str, Any] | None = None,
                 pools: Mapping[str, Any] | None = None, device_spec: Any = None) -> None:
        self.graph = graph
        #: The resolved device the simulator ran on (a ``DeviceSpec``), for what is simulated
        #: again on demand (:func:`workbench.orchestration.why.other_mode`); None when unknown.
        self.device_spec = device_spec
        self.device = device
        self.mode = mode
        self.schedules = dict(schedules)
        self.traces = dict(traces)
        #: The rows in the order the policies were run (serial first), as ``compare`` made them.
        self.table_in_policy_order = table.reset_index(drop=True)
        #: The rows fastest first, exact ties by fewest streams, then syncs, then policy order
        #: (:func:`~workbench.values.ranking.fastest_first`): the order of every table and chart.
        self.table = fastest_first(self.table_in_policy_order).reset_index(drop=True)
        self.settings = dict(settings)
        self.lower_bounds = dict(lower_bounds)
        self.memory_plans = dict(memory_plans or {})
        self.pools = dict(pools or {})

    @property
    def best(self) -> str | None:
        """The policy with the smallest makespan (a measured row's: the median of its timed
        runs; exact ties: the fewest streams, then syncs, then policy order, as
        :data:`~workbench.values.ranking.TIE_RULE` says); a measured run's row is not a policy.
        None when no policy was executed (every one stopped before: a budget, an error).
        Whether it is faster than the next ones beyond measurement noise: :attr:`ties`,
        :attr:`best_text`; the policies it ties exactly: :attr:`exact_ties`."""
        table = self._executed()
        if table.empty:
            return None
        return str(fastest_first(table).iloc[0]["policy"])

    @property
    def exact_ties(self) -> list[str]:
        """The executed policies other than :attr:`best` with its makespan as the tables show
        it (within :data:`~workbench.values.ranking.TIE_US`), in the table's order: the best
        was picked from them by :data:`~workbench.values.ranking.TIE_RULE`.  Empty when the
        best stands alone."""
        best = self.best
        return [] if best is None else exact_ties(self._executed(), best)

    @property
    def measured(self) -> bool:
        """Whether the rows were measured on a device (an executor other than the simulator)."""
        return (self.settings or {}).get("executor", "simulator") != "simulator"

    @property
    def ran_on(self) -> str:
        """Where the rows' makespans come from (:func:`ran_on`)."""
        return ran_on(self.settings)

    @property
    def device_text(self) -> str:
        """The device the makespans are of, as the report's header, the CLI and the notebook
        view name it: the simulated device (``h100``), or the device a measured comparison ran
        on with the cost model's device beside it (``AMD EPYC (CPU; the policies' cost model is
        h100)``)."""
        if not self.measured:
            return str(self.device)
        on = dict((self.settings or {}).get("measured_on") or {})
        name = on.get("gpu", on.get("cpu", "?"))
        kind = "CPU" if self.ran_on == "cpu" else "GPU"
        return f"{name} ({kind}; the policies' cost model is {self.device})"

    def _executed(self) -> pd.DataFrame:
        """The table's rows of executed policies with a makespan (a recorded run is not one)."""
        executed = [p for p in self.schedules if p in self.traces]
        table = self.table
        return table[table["policy"].isin(executed) & (table["makespan_us"] < float("inf"))]

    def spreads(self) -> dict[str, Spread]:
        """``{policy: (makespan, q1, q3)}`` of the executed policies: a measured row's median
        and quartiles over its timed runs, a simulated row's makespan three times."""
        rows = self._executed()
        spans = rows["makespan_us"].astype(float)
        q1 = rows["makespan_q1_us"].astype(float) if "makespan_q1_us" in rows else spans
        q3 = rows["makespan_q3_us"].astype(float) if "makespan_q3_us" in rows else spans
        return {str(p): (m, a, b)
                for p, m, a, b in zip(rows["policy"], spans, q1, q3, strict=True)}

    @property
    def ties(self) -> list[str]:
        """The executed policies this comparison cannot order against the best, fastest first
        (empty when the best stands alone).  Measured: the fastest and every policy whose
        quartile range overlaps its own, directly or through a chain of overlapping ranges
        (:func:`~workbench.orchestration.compare_measured.noise_ties`: a policy is faster only
        when its q3 is below the other's q1).  Simulated:
        those within :data:`~workbench.simulator.fidelity.accuracy.TIE_BAND` of the best, which
        the simulator does not order (:func:`~workbench.simulator.fidelity.accuracy.near_ties`).
        """
        spreads = self.spreads()
        if self.measured:
            return noise_ties(spreads)
        from workbench.simulator.fidelity.accuracy import near_ties

        close = set(near_ties({p: s[0] for p, s in spreads.items()}))
        return [p for p in spreads if p in close]   # the table's order: the tie rule's

    @property
    def best_policies(self) -> list[str]:
        """The policies named best, the rows the tables highlight: a measured comparison's
        :attr:`ties` when the fastest does not stand alone, else :attr:`best` alone (a simulated
        near tie stays one best with a note); empty when none was executed."""
        if self.best is None:
            return []
        return (self.ties if self.measured else []) or [self.best]

    @property
    def best_makespan_us(self) -> float:
        """The table's makespan of :attr:`best` (a measured row's median over its timed runs,
        not the one run its timeline shows); NaN when none was executed."""
        best = self.best
        if best is None:
            return float("nan")
        return float(self.table.loc[self.table["policy"] == best, "makespan_us"].iloc[0])

    @property
    def best_text(self) -> str:
        """The best in words, the one text the report's header, the CLI's ``best:`` line and
        the notebook view show.  One policy faster than every other (beyond measurement noise
        when measured): ``"gpto (1.22x over serial)"``; when others have exactly its makespan,
        they and the rule that picked it follow: ``"min_streams (1.22x over serial; tied with
        nnc, gpto at 802.6 µs; ties go to fewest streams, then fewest syncs, then policy
        order)"``.  Several that tie with the fastest
        within measurement noise are named together, fastest median first, with no speedup
        unless each is faster than serial beyond noise: ``"serial, bfs, dfs tie within
        measurement noise (quartile ranges overlap)"``.  None executed: ``"none (no policy was
        executed)"``."""
        best = self.best
        if best is None:
            return "none (no policy was executed)"
        spreads = self.spreads()
        tied = self.best_policies
        base = spreads.get(BASELINE)
        if len(tied) > 1:
            text = f"{', '.join(tied)} tie within measurement noise (quartile ranges overlap)"
            if base is not None and all(clearly_faster(spreads, p, BASELINE) for p in tied):
                ups = sorted(base[0] / spreads[p][0] for p in tied)
                text += f", each {ups[0]:.2f}x-{ups[-1]:.2f}x over serial"
            return text
        same = self.exact_ties
        tie = (f"; tied with {', '.join(same)} at {spreads[best][0]:,.1f} µs; {TIE_RULE}"
               if same else "")
        if base is None or not base[0] > 0:
            return f"{best} (no speedup: serial was not executed{tie})"
        return f"{best} ({base[0] / spreads[best][0]:.2f}x over serial{tie})"

    @property
    def near_tie_text(self) -> str:
        """A sentence on the policies this comparison does not order (:attr:`ties`), empty when
        the best stands alone.  Measured: they tie within measurement noise, with the fastest's
        quartile range and the rule.  Simulated: they are within
        :data:`~workbench.simulator.fidelity.accuracy.TIE_BAND` of the best, which the
        simulator does not order, with the measured evidence
        (:func:`~workbench.simulator.fidelity.accuracy.tie_note`)."""
        tied = self.ties
        if not self.measured:
            from workbench.simulator.fidelity.accuracy import tie_note

            return tie_note(self.device, tied)
        if len(tied) < 2:
            return ""
        median, q1, q3 = self.spreads()[tied[0]]
        runs = dict((self.settings or {}).get("measured_on") or {}).get("repeats")
        over = f"its {runs} timed runs" if runs else "its timed runs"
        quartiles = f", quartiles {q1:,.1f}-{q3:,.1f} µs" if q1 == q1 and q3 == q3 else ""
        return (f"{', '.join(tied)} tie within measurement noise: each one's quartile range over "
                f"{over} overlaps that of {tied[0]}, the fastest median ({median:,.1f} µs"
                f"{quartiles}), directly or through a chain of overlapping ranges; a policy is "
                "called faster only when its quartile range lies wholly below another's, so this "
                "measurement does not order them (more repeats or a quieter machine may).")

    @property
    def why(self) -> list[str]:
        """Why the winner wins, in a few sentences computed from the traces
        (:func:`workbench.orchestration.why.why_lines`)."""
        from workbench.values.views import view

        return list(view("why")(self))

    @property
    def policies(self) -> list[str]:
        return list(self.schedules)

    def to_html(self, path: str | os.PathLike[str], *, plotlyjs: str = "inline") -> Path:
        """Write the HTML report.  ``plotlyjs="inline"`` (default): one self-contained file
        (plotly.js embedded once, ~4.8 MB; works offline); ``"directory"``: plotly.js in a shared
        ``plotly.min.js`` beside the report; ``"cdn"``: loaded from cdn.plot.ly when viewed."""
        from workbench.values.views import view

        return view("report")(self, path, plotlyjs=plotlyjs)

    def timelines(self) -> Any:
        """The report's timelines figure (:func:`workbench.viz.policy_timelines`): the traces in
        the table's order, identical timelines in one group, the best marked, a busy track per
        group and a menu of views."""
        from workbench.viz import policy_timelines

        return policy_timelines(traces_in_table_order(self), selected=self.best)

    def _repr_html_(self) -> str:
        from workbench.values.views import view

        return view("comparison_html")(self)

    def __repr__(self) -> str:
        return (f"Comparison({self.graph.name!r} on {self.device}/{self.mode}: "
                f"{len(self.schedules)} policies, best {self.best!r})")


__all__ = ["BASELINE", "Comparison", "ran_on"]
