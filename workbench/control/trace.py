"""What a simulated run with control flow adds to its Trace: instance columns and the decisions.

Columns (one row per executed op instance, in the flat issue order): ``iteration`` (of the
innermost enclosing loop, -1 outside loops), ``parent`` (the control-flow op instance the op runs
in, ``""`` at the top) and ``region`` (``cond``, ``body``, a branch name, ``""``).  ``meta`` gets
the source schedule, the trip count of every loop instance, the branch of every ``case_of``
instance and :func:`decisions_frame`'s rows.  O(I) for I instances.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from workbench.values.trace import Trace

__all__ = ["control_columns", "decisions_frame", "iteration_summary"]


def control_columns(df: pd.DataFrame, run: Any, control: str) -> dict[str, Any]:
    """Add the instance columns to ``df`` (in place) and return ``meta["control"]``."""
    e = run.expansion
    df["iteration"] = list(e.iteration)
    df["parent"] = list(e.parent)
    df["region"] = list(e.region)
    rows = []
    if run.host is not None:
        rows = run.host.decision_rows(run.order, run.end)
    return {"model": control if run.host is not None else "device (graph mode)",
            "source_schedule": e.source, "trips": dict(e.trips), "branches": dict(e.branches),
            "decisions": rows, "instances": len(df)}


def decisions_frame(trace: Trace) -> pd.DataFrame:
    """The host's decisions of a run with control flow: one row per decision with ``op`` (the
    control-flow op instance), ``index``, ``kind`` (``continue``, ``exit``, ``select``,
    ``done``), ``iteration``, ``flag`` (the op instance whose value the host read), ``sync``
    (whether a device→host sync was needed), ``reached_us`` and ``ready_us`` (when the host had
    the value: ``max(reached, flag end) + d2h + device_sync_us``).  Empty without control flow."""
    rows = trace.meta.get("control", {}).get("decisions", [])
    cols = ["op", "index", "kind", "iteration", "flag", "sync", "reached_us", "ready_us"]
    return pd.DataFrame(rows, columns=cols)


def iteration_summary(trace: Trace) -> pd.DataFrame:
    """Per loop instance and iteration: ops run, first start, last end and span (µs).  Shows
    what each iteration costs, host round trip included (the gap between iterations)."""
    df = trace.df
    cols = ["parent", "iteration", "ops", "start_us", "end_us", "span_us"]
    if "iteration" not in df:
        return pd.DataFrame(columns=cols)
    sub = df[df["iteration"] >= 0]
    g = sub.groupby(["parent", "iteration"], sort=False)
    out = g.agg(ops=("op", "size"), start_us=("start_us", "min"), end_us=("end_us", "max"))
    out = out.reset_index()
    out["span_us"] = out["end_us"] - out["start_us"]
    return out[cols]
