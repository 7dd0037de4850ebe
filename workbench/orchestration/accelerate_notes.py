"""What ``wb.accelerate`` says while it measures and once it has decided.

* :func:`plan_text`: the first line of a measurement, ``accelerate Net: measuring 2 policies
  × 3 rounds on cuda:0 (...)``: how many policies, in how many interleaved rounds
  (:func:`~workbench.orchestration.compare_measured.measure_rounds`), where, and the budget.
* :func:`with_model_row`: the measured comparison's table with the model itself as a row
  (``model itself``, status ``measured``, as compare's row of a recorded run) and a ``noise``
  column that flags every row tying with the fastest within measurement noise
  (:func:`~workbench.orchestration.compare_measured.noise_ties`: the rule compare names its
  best by, here over the policies and the model together), so that a speedup between rows
  whose quartile ranges overlap reads as the tie it is.
* :func:`summary_text`: the one line of the decision: ``running nnc: ... 1.35x`` or
  ``falling back to the model: <why>``.

The lines go through :class:`workbench._progress.Progress` (stderr, above the bar in a
terminal, beside it in a notebook; off with ``show_progress=False`` or
``WORKBENCH_PROGRESS=0``); the result's ``reason`` always holds the decision.
"""

from __future__ import annotations

from typing import Any

#: The model's row among the measured policies (its spread, its table row).
MODEL = "model itself"
#: The ``noise`` cell of a row that ties with the fastest within measurement noise.
TIE = "tie within noise"


def plan_text(label: str, n_policies: int, rounds: int, device: Any, repeats: int,
              budget_s: float | None) -> str:
    """The plan of a measurement in one line.

    >>> plan_text("Net", 2, 3, "cpu", 20, 60.0)  # doctest: +NORMALIZE_WHITESPACE
    'accelerate Net: measuring 2 policies × 3 rounds on cpu (7 timed runs per policy and round)
     and the model itself before and after them (20 timed runs each time); budget 60 s per
     stage, 6 stages'
    """
    from workbench.orchestration.compare_measured import round_repeats

    per_round = round_repeats({"repeats": repeats}, rounds)
    budget = "no budget" if budget_s is None else f"budget {budget_s:g} s per stage"
    return (f"accelerate {label}: measuring {_count(n_policies, 'polic', 'y', 'ies')} × "
            f"{_count(rounds, 'round')} on {device} ({_count(per_round, 'timed run')} per "
            f"policy and round) and the model itself before and after them "
            f"({_count(repeats, 'timed run')} each time); {budget}, {2 * n_policies + 2} stages")


def _count(n: int, stem: str, one: str = "", many: str = "s") -> str:
    return f"{n} {stem}{one if n == 1 else many}"


def timing_text(timed: dict[str, Any], when: str) -> str:
    """``the model itself: 1,234.5 µs median over 20 timed runs (before the policies)``."""
    from workbench.values.trace import makespan_stats

    stats = makespan_stats(timed["makespans_us"])
    return (f"{MODEL}: {stats['makespan_median_us']:,.1f} µs median over "
            f"{_count(int(timed['timed_runs']), 'timed run')} ({when})")


def with_model_row(comparison: Any, itself: dict[str, Any]) -> None:
    """Add the model itself (``itself``: its median and quartiles, as
    ``settings["model_itself"]`` holds them) to ``comparison``'s table as the row
    :data:`MODEL`, and the ``noise`` column: :data:`TIE` on the rows that tie with the fastest
    within measurement noise (:func:`~workbench.orchestration.compare_measured.noise_ties` over
    the executed policies and the model), empty elsewhere.  The comparison's best and ties stay
    those of its policies (the model's row has no schedule).  O(rows² log rows)."""
    import pandas as pd

    from workbench.orchestration.compare_measured import noise_ties
    from workbench.values.ranking import fastest_first

    median, q1, q3 = (float(itself[k]) for k in ("makespan_median_us", "makespan_q1_us",
                                                  "makespan_q3_us"))
    tied = set(noise_ties({**comparison.spreads(), MODEL: (median, q1, q3)}))
    table = comparison.table_in_policy_order
    table = table[table["policy"] != MODEL]
    serial = table.loc[table["policy"] == "serial", "makespan_us"]
    base = float(serial.iloc[0]) if len(serial) else float("nan")
    row = {"policy": MODEL, "status": "measured", "makespan_us": median,
           "makespan_q1_us": q1, "makespan_q3_us": q3,
           "speedup": base / median if median > 0 else float("nan")}
    for column in ("executor", "gpu"):
        if column in table.columns and len(table):
            row[column] = table[column].iloc[0]
    table = pd.concat([table, pd.DataFrame([row])], ignore_index=True)
    table["noise"] = [TIE if p in tied else "" for p in table["policy"]]
    comparison.table_in_policy_order = table
    comparison.table = fastest_first(table).reset_index(drop=True)


def summary_text(label: str, chosen: str | None, why: str, *, own_graph: bool = False) -> str:
    """The decision in one line: the policy run and why (the measured speedup), or the
    fallback and why.

    >>> summary_text("Net", None, "no schedule ran")
    'accelerate Net: falling back to the model: no schedule ran'
    """
    if chosen is not None:
        return f"accelerate {label}: running {chosen}: {why}"
    what = ("the model (its own CUDA graph: the serial schedule on one stream)" if own_graph
            else "the model")
    return f"accelerate {label}: falling back to {what}: {why}"


__all__ = ["MODEL", "TIE", "plan_text", "summary_text", "timing_text", "with_model_row"]
