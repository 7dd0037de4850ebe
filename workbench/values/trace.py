"""Trace: what happened (or would happen) when a schedule ran, backed by a pandas DataFrame.

The simulator and the GPU executor both produce a Trace, so every view and metric works the same on
simulated and measured runs.  Columns of ``Trace.df`` (one row per op):

``op, kind, stream, device, start_us, end_us, duration_us, issue_us, alone_us, compute_us,
memory_us, flops, bytes, phase``.  Times are microseconds from the moment the host starts issuing.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.errors import OptionError
from workbench.values.graph import Graph
from workbench.values.schedule import Schedule

if TYPE_CHECKING:   # pandas is imported where a trace is built: the CLI starts fast
    import pandas as pd

TRACE_COLUMNS = ("op", "kind", "stream", "device", "start_us", "end_us", "duration_us", "issue_us",
                 "alone_us", "compute_us", "memory_us", "flops", "bytes", "phase")


class Trace:
    """Per-op start/end/stream of one run, plus who produced it and how."""

    def __init__(self, df: pd.DataFrame, *, graph: Graph, policy: str, device: str,
                 executor: str = "simulator", mode: str = "eager", schedule: Schedule | None = None,
                 meta: Mapping[str, Any] | None = None) -> None:
        import pandas as pd

        if not isinstance(df, pd.DataFrame):
            raise OptionError(f"a Trace needs a pandas DataFrame, got {type(df).__name__}")
        if not isinstance(graph, Graph):
            raise OptionError(f"a Trace needs a Graph, got {type(graph).__name__}")
        missing = [c for c in ("op", "stream", "start_us", "end_us") if c not in df.columns]
        if missing:
            raise OptionError(f"trace frame lacks columns {missing}")
        self.df = df.reset_index(drop=True)
        self.graph = graph
        self.policy = policy
        self.device = device
        self.executor = executor
        self.mode = mode
        self.schedule = schedule
        self.meta = dict(meta or {})

    @property
    def makespan(self) -> float:
        """End of the last op, in µs (time 0 = the host starts issuing)."""
        return float(self.df["end_us"].max()) if len(self.df) else 0.0

    def start_of(self, op: str) -> float:
        return float(self.df.loc[self.df["op"] == op, "start_us"].iloc[0])

    def end_of(self, op: str) -> float:
        return float(self.df.loc[self.df["op"] == op, "end_us"].iloc[0])

    def violations(self, graph: Graph | None = None, *, tol_us: float = 1e-6) -> list[str]:
        """Dependencies ``a -> b`` where ``b`` started before ``a`` ended (an independent check of
        the schedule and the executor)."""
        graph = graph or self.graph
        start = dict(zip(self.df["op"], self.df["start_us"]))
        end = dict(zip(self.df["op"], self.df["end_us"]))
        out = []
        for a, b in graph.edges:
            if a in end and b in start and start[b] < end[a] - tol_us:
                out.append(f"{b!r} starts at {start[b]:.3f} µs before {a!r} ends at "
                           f"{end[a]:.3f} µs")
        return out

    def respects(self, graph: Graph | None = None) -> bool:
        return not self.violations(graph)

    def metrics(self) -> dict[str, float]:
        """Makespan, busy time, average concurrency and utilisation.

        ``avg_concurrency`` = total kernel time / makespan; ``utilisation`` = total full-device
        compute time / makespan (1.0 would be every SM doing useful arithmetic all the time);
        ``busy_fraction`` = share of the makespan with at least one kernel running.
        """
        df = self.df
        span = self.makespan
        if span <= 0 or not len(df):
            return {"makespan_us": span, "avg_concurrency": 0.0, "utilisation": 0.0,
                    "busy_fraction": 0.0}
        busy = _union_length(df["start_us"].tolist(), df["end_us"].tolist())
        compute = float(df["compute_us"].sum()) if "compute_us" in df else 0.0
        return {
            "makespan_us": span,
            "avg_concurrency": float((df["end_us"] - df["start_us"]).sum()) / span,
            "utilisation": compute / span,
            "busy_fraction": busy / span,
        }

    def barrier_idle_us(self) -> float:
        """Device time lost at barriers: for each barrier, the gap between the last op before it
        ending and the first op after it starting (0 when they overlap).  With IOS's
        device-synchronize barriers this is the host round trip that idles the GPU at every
        stage boundary.  O(V)."""
        df = self.df
        if "phase" not in df or not len(df) or df["phase"].max() == 0:
            return 0.0
        by = df.groupby("phase")
        first, last = by["start_us"].min(), by["end_us"].max()
        gaps = first.iloc[1:].to_numpy() - last.iloc[:-1].to_numpy()
        return float(gaps[gaps > 0].sum())

    def concurrency_curve(self) -> pd.DataFrame:
        """Number of kernels running over time: columns ``time_us, running`` (step function)."""
        starts = [(t, 1) for t in self.df["start_us"]]
        events = sorted(starts + [(t, -1) for t in self.df["end_us"]],
                        key=lambda e: (e[0], e[1]))
        times, running, level = [], [], 0
        for t, d in events:
            level += d
            times.append(t)
            running.append(level)
        import pandas as pd

        return pd.DataFrame({"time_us": times, "running": running})

    def __repr__(self) -> str:
        return (f"Trace({self.policy!r} on {self.graph.name!r}, {self.executor}/{self.device}/"
                f"{self.mode}: makespan {self.makespan:.1f} µs, {len(self.df)} ops)")

    def _repr_html_(self) -> str:
        """Static HTML: metrics and timeline (plotly.js embedded once per session)."""
        from workbench.values.views import view

        return view("trace_html")(self, include_plotlyjs=None)

    def _ipython_display_(self) -> None:
        """Notebook display: the metrics table, then the timeline as a plotly mime bundle (see
        ``workbench.viz.display``)."""
        from workbench.values.views import view

        view("display_trace")(self)


def _union_length(starts: list[float], ends: list[float]) -> float:
    spans = sorted(zip(starts, ends))
    if not spans:
        return 0.0
    total = 0.0
    cur_s, cur_e = spans[0]
    for s, e in spans[1:]:
        if s > cur_e:
            total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + cur_e - cur_s


def makespan_stats(spans: Sequence[float]) -> dict[str, Any]:
    """Median, quartiles (q1, q3), spread (q3 - q1), min and max of the timed makespans (µs):
    the figures every measured executor keeps in ``meta``.  O(runs log runs)."""
    values = np.asarray(list(spans), dtype=float)
    q1, q3 = (float(v) for v in np.percentile(values, [25, 75])) if len(values) else (0.0, 0.0)
    return {"makespan_median_us": float(statistics.median(values)) if len(values) else 0.0,
            "makespan_q1_us": q1, "makespan_q3_us": q3, "makespan_spread_us": q3 - q1,
            "makespan_min_us": float(values.min()) if len(values) else 0.0,
            "makespan_max_us": float(values.max()) if len(values) else 0.0,
            "makespans_us": [float(v) for v in values]}
