"""The fuzz harness in CI (issues 27 and 34): generated hostile inputs from every family, fixed
seed, each in a worker under a time and a memory limit; none may end in a traceback, a hang, an
out-of-memory, a silent acceptance or a round trip that loses something.  ``benchmarks/fuzz.py``
runs thousands.

The issue-27 families run as one test of :data:`CI_INPUTS` cases; the issue-34 families
(:data:`NEW_FAMILIES`) as :data:`PER_FAMILY` cases each, one test per case, so that a case whose
finding is not fixed yet is marked ``xfail`` alone (:data:`KNOWN`, with the finding).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from tests.fuzz.cases import FAMILIES, generate
from tests.fuzz.families import FAMILIES as ALL_FAMILIES
from tests.fuzz.families import sample
from tests.fuzz.runner import BAD, Case, Pool, run_cases, table

CI_INPUTS = 200
CI_SEED = 27
NEW_FAMILIES = tuple(f for f in ALL_FAMILIES if f not in FAMILIES)
PER_FAMILY = 4
#: Cases of the sample below whose finding (issue 34) was not fixed when they were written:
#: ``(family, index) -> reason``; each is ``xfail(strict=False)``, so a fix turns it green.
KNOWN: dict[tuple[str, int], str] = {}


def test_fuzz_has_no_bad_outcomes() -> None:
    results = list(run_cases(generate(CI_INPUTS, CI_SEED), time_limit_s=30))
    print(table(results))
    assert {r.case.family for r in results} == set(FAMILIES)
    bad = [f"{r.case.family}/{r.case.label}: {r.outcome}: {r.detail[:300]}" for r in results
           if r.outcome in BAD]
    assert not bad, "\n".join(bad)


@functools.cache
def _sampled() -> tuple[Case, ...]:
    return tuple(sample(PER_FAMILY, CI_SEED, families=NEW_FAMILIES))


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    workers = Pool(time_limit_s=30)
    try:
        yield workers
    finally:
        workers.close()


def _params() -> list[object]:
    out: list[object] = []
    for family in NEW_FAMILIES:
        for i in range(PER_FAMILY):
            marks = []
            if (family, i) in KNOWN:
                marks.append(pytest.mark.xfail(reason=KNOWN[family, i], strict=False))
            out.append(pytest.param(family, i, id=f"{family}-{i}", marks=marks))
    return out


@pytest.mark.parametrize(("family", "index"), _params())
def test_new_family_case(pool: Pool, family: str, index: int) -> None:
    """One sampled case of an issue-34 family ends in ``clean`` or ``ok``."""
    case = _sampled()[NEW_FAMILIES.index(family) * PER_FAMILY + index]
    assert case.family == family
    result = pool.run(case)
    assert result.outcome not in BAD, (f"{case.family}/{case.label} (refuse={case.refuse}): "
                                       f"{result.outcome}: {result.detail[:400]}")


def test_every_family_is_sampled() -> None:
    """The CI sample covers every family, and the sample is the same on every call."""
    assert set(NEW_FAMILIES) | set(FAMILIES) == set(ALL_FAMILIES)
    assert {c.family for c in sample(1, 5)} == set(ALL_FAMILIES)
    assert [c.label for c in sample(2, 5)] == [c.label for c in sample(2, 5)]


def test_the_runner_sees_every_bad_outcome() -> None:
    """The classifier itself: a refusal that is accepted, a traceback, a hang and an
    out-of-memory are each reported as such (so zero counts above mean something)."""
    # a generous limit for the rest: on a loaded machine the allocation alone took over 3 s
    pool = Pool(time_limit_s=60, memory_limit=1 << 30)
    try:
        cases = {"silent": Case("api", "x", "api", ("schedule", {"policy": "serial"}), True),
                 "traceback": Case("api", "x", "api", ("nope", {})),
                 "hang": Case("cli", "x", "_sleep", None, extra={"time_limit_s": 3}),
                 "oom": Case("cli", "x", "_allocate", None),
                 "clean": Case("api", "x", "api", ("schedule", {"policy": "nncc"}), True)}
        for outcome, case in cases.items():
            assert pool.run(case).outcome == outcome, outcome
        lowered = Case("cli", "x", "_sleep", None, extra={"time_limit_s": 1})
        assert pool.run(lowered).detail == "over 1 s"
    finally:
        pool.close()


def test_the_roundtrip_check_sees_a_lost_field() -> None:
    """:func:`actions_io._differs` names an op field that changed, a lost op and a makespan
    that moved, and finds nothing between a graph and itself."""
    from tests.fuzz.actions_io import _differs
    from workbench.io import graph_from_dict, graph_to_dict
    from workbench.models import random_dags

    g = random_dags.random_dag(6, seed=4)
    assert _differs(g, g, "x") == ""
    d = graph_to_dict(g)
    d["ops"][2]["duration_us"] = 123.0
    assert "duration_us" in _differs(g, graph_from_dict(d), "x")
    d = graph_to_dict(g)
    d["ops"][1]["attrs"] = {"kernel": [3, 3]}
    assert "attrs" in _differs(g, graph_from_dict(d), "x")
    d = graph_to_dict(g)
    d["tensors"][0]["size_bytes"] += 1
    assert "size_bytes" in _differs(g, graph_from_dict(d), "x")


def test_first_difference_is_iterative() -> None:
    """The comparer walks values nested far past the recursion limit (a graph of 1,000 nested
    loops) and treats tuples as lists and NaN as NaN."""
    from tests.fuzz.actions_io import first_difference

    deep: list[object] = [1.0]
    other: list[object] = [2.0]
    for _ in range(20_000):
        deep, other = [deep], [other]
    assert first_difference(deep, deep) == ""
    assert "1.0 saved, 2.0 loaded" in first_difference(deep, other)
    assert first_difference({"a": (1, float("nan"))}, {"a": [1, float("nan")]}) == ""
    assert "keys" in first_difference({"a": 1}, {"b": 1})
    assert "saved" in first_difference([{"a": 1}], [[("a", 1)]])
