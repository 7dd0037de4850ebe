"""Exact minimum arena for small instances, as a mixed-integer program (scipy.optimize.milp).

The offset problem is 2-D strip packing with fixed x-positions and NP-complete (Pisarchyk & Lee
2020, notes §3), so this is for checking heuristics on small cases (about 14 tensors or fewer), not
for production. Seed 004 "Memory Management": SOMAS aims at "memory reuse close to the theoretical
limit"; this planner measures that limit where the peak-of-live-bytes bound is not tight.

Model, in units of ``alignment`` (so every offset is aligned): integer offset ``o_i``, arena ``M``
and one binary ``y_ij`` per conflicting pair of non-empty tensors, with big-M = ``U``, the arena of
greedy by size (a warm upper bound)::

    min M   s.t.  o_i + s_i <= M,      o_i + s_i <= o_j + U (1 - y_ij),   o_j + s_j <= o_i + U y_ij
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from workbench._checks import check_limit
from workbench.errors import OptionError
from workbench.memory.bounds import peak_live_bytes
from workbench.memory.plan import MemoryPlan, Problem, RecordLike, parse_records, prepare
from workbench.memory.static import make_plan, place_in_order, size_order

MAX_TENSORS = 40


def _solve(problem: Problem, upper: int, lower: int, time_limit_s: float) -> tuple[list[int], bool]:
    """Solve the MILP; return (offsets in bytes or [] if none found, proven optimal)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    align = problem.alignment
    units = [s // align for s in problem.sizes]  # sizes are already multiples of align
    items = [i for i, s in enumerate(units) if s > 0]
    col = {i: k for k, i in enumerate(items)}
    pairs = sorted(
        {(min(i, j), max(i, j)) for i in items for j in problem.neighbors[i] if units[j] > 0}
    )
    n_vars = len(items) + 1 + len(pairs)  # offsets, arena, one binary per pair
    arena = len(items)
    big = upper // align
    rows: list[np.ndarray] = []
    hi: list[float] = []

    def at_most(upper_value: float, coefs: dict[int, float]) -> None:
        """Add the row sum(coef * variable) <= upper_value."""
        row = np.zeros(n_vars)
        for var, value in coefs.items():
            row[var] += value
        rows.append(row)
        hi.append(upper_value)

    for i in items:  # o_i + s_i <= M
        at_most(-units[i], {col[i]: 1.0, arena: -1.0})
    for k, (i, j) in enumerate(pairs):
        oi, oj, y = col[i], col[j], arena + 1 + k
        at_most(big - units[i], {oi: 1.0, oj: -1.0, y: big})  # y = 1: i below j
        at_most(-units[j], {oj: 1.0, oi: -1.0, y: -big})  # y = 0: j below i
    c = np.zeros(n_vars)
    c[arena] = 1.0
    upper_b = np.full(n_vars, float(big))
    upper_b[arena + 1 :] = 1.0
    lower_b = np.zeros(n_vars)
    lower_b[arena] = -(-lower // align)
    constraints = [LinearConstraint(np.array(rows), -np.inf, hi)] if rows else []
    res = milp(
        c,
        integrality=np.ones(n_vars),
        bounds=Bounds(lower_b, upper_b),
        constraints=constraints,
        options={"time_limit": float(time_limit_s), "disp": False},
    )
    if res.x is None:
        return [], False
    offsets = [0] * len(problem.sizes)
    for i in items:
        offsets[i] = int(round(res.x[col[i]])) * align
    return offsets, res.status == 0


def _valid(problem: Problem, offsets: Sequence[int]) -> bool:
    s = problem.sizes
    return all(
        offsets[i] + s[i] <= offsets[j] or offsets[j] + s[j] <= offsets[i]
        for i in range(len(s))
        for j in problem.neighbors[i]
        if s[i] and s[j]
    )


def plan_exact(
    records: Iterable[RecordLike],
    *,
    alignment: int = 1,
    conflicts: Iterable[Sequence[int]] | None = None,
    time_limit_s: float = 10.0,
) -> MemoryPlan:
    """Minimum arena by MILP, warm-started from greedy by size.

    If greedy by size already meets the peak-of-live-bytes bound it is returned as optimal without
    calling the solver. ``notes["optimal"]`` says whether optimality was proven; when the time limit
    stops the solver, the best plan found (never worse than greedy by size) is returned with
    ``optimal=False``. ``notes["solver"]`` is ``"bound"``, ``"milp"`` or ``"greedy_by_size"``
    (whichever produced the offsets). More than 40 tensors raise OptionError.
    Complexity: exponential in the number of conflicting pairs (branch and bound).
    """
    records = parse_records(records)
    n = len(records)
    if n > MAX_TENSORS:  # before the conflict graph is built: a wide op's is large
        raise OptionError(
            f"plan_exact handles at most {MAX_TENSORS} tensors, got {n}; use 'somas' instead"
        )
    problem = prepare(records, alignment, conflicts)
    check_limit(time_limit_s, "time_limit_s", allow_none=False)  # finite: inf would never stop
    greedy = place_in_order(problem, size_order(problem), "best")
    peak = peak_live_bytes(problem.records, alignment=problem.alignment)  # once, not per plan
    plan = make_plan("exact", problem, greedy, peak=peak)
    if plan.arena_bytes <= plan.lower_bound:
        return make_plan("exact", problem, greedy, {"optimal": True, "solver": "bound"},
                         peak=peak)
    offsets, optimal = _solve(problem, plan.arena_bytes, plan.lower_bound, time_limit_s)
    if offsets and _valid(problem, offsets):
        found = make_plan("exact", problem, offsets, peak=peak)
        if found.arena_bytes <= plan.arena_bytes:
            return make_plan("exact", problem, offsets, {"optimal": optimal, "solver": "milp"},
                             peak=peak)
    return make_plan("exact", problem, greedy, {"optimal": False, "solver": "greedy_by_size"},
                     peak=peak)
