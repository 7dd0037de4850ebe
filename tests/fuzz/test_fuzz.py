"""The fuzz harness in CI (issue 27): a few hundred generated hostile inputs across every family,
fixed seed, each in a worker under a time and a memory limit; none may end in a traceback, a
hang, an out-of-memory or a silent acceptance.  ``benchmarks/fuzz.py`` runs thousands."""

from __future__ import annotations

from tests.fuzz.cases import FAMILIES, generate
from tests.fuzz.runner import BAD, Case, Pool, run_cases, table

CI_INPUTS = 300
CI_SEED = 27


def test_fuzz_has_no_bad_outcomes() -> None:
    results = list(run_cases(generate(CI_INPUTS, CI_SEED), time_limit_s=30))
    print(table(results))
    assert {r.case.family for r in results} == set(FAMILIES)
    bad = [f"{r.case.family}/{r.case.label}: {r.outcome}: {r.detail[:300]}" for r in results
           if r.outcome in BAD]
    assert not bad, "\n".join(bad)


def test_the_runner_sees_every_bad_outcome() -> None:
    """The classifier itself: a refusal that is accepted, a traceback, a hang and an
    out-of-memory are each reported as such (so zero counts above mean something)."""
    pool = Pool(time_limit_s=3, memory_limit=1 << 30)
    try:
        cases = {"silent": Case("api", "x", "api", ("schedule", {"policy": "serial"}), True),
                 "traceback": Case("api", "x", "api", ("nope", {})),
                 "hang": Case("cli", "x", "_sleep", None),
                 "oom": Case("cli", "x", "_allocate", None),
                 "clean": Case("api", "x", "api", ("schedule", {"policy": "nncc"}), True)}
        for outcome, case in cases.items():
            assert pool.run(case).outcome == outcome, outcome
    finally:
        pool.close()
