"""compare()'s time budgets: what a budget means for a stage, and the checks of the options.

A stage is killed at its budget unless it was told the budget (a ``budgeted=True`` policy: it
searches for :data:`COOPERATIVE_SHARE` of it and is killed only at :func:`hard_limit_s`).
"""

from __future__ import annotations

from typing import Any

from workbench.errors import OptionError

#: The share of a stage's budget a budgeted policy is told it may search; the rest is for turning
#: its best partial result into a schedule, so the stage as a whole keeps to the budget.
COOPERATIVE_SHARE = 0.9


def hard_limit_s(budget_s: float, *, cooperative: bool) -> float:
    """When compare() kills a stage: at ``budget_s`` for a stage that cannot stop by itself; a
    quarter later plus one second for one that was told its budget (time to wrap up its best
    result)."""
    return budget_s * 1.25 + 1.0 if cooperative else budget_s


#: Budgets above this (about 11.6 days; ``inf`` included) mean no limit.
MAX_BUDGET_S = 1e6


def check_budget(budget_s: Any) -> float | None:
    """``budget_s`` as seconds per stage, None for no limit (None, or above
    :data:`MAX_BUDGET_S`); anything but a positive number is an OptionError."""
    if budget_s is None:
        return None
    if isinstance(budget_s, bool) or not isinstance(budget_s, (int, float)) or not budget_s > 0:
        raise OptionError(f"budget_s must be a positive number of seconds or None, "
                          f"got {budget_s!r}")
    if budget_s > MAX_BUDGET_S:  # inf, 1e308: no limit (timeouts that large overflow)
        return None
    return float(budget_s)


def check_rounds(rounds: Any) -> int:
    """``rounds`` (measurement rounds) checked: an integer from 1 to 100."""
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= 100:
        raise OptionError(f"rounds must be an integer from 1 to 100, got {rounds!r:.80}")
    return rounds
