"""The stages give what they gave: every built-in model and 300 seeded random graphs, under every
policy, schedule, simulate (eager and graph mode) and plan memory (naive, greedy_by_size, somas)
exactly as recorded in ``tests/data/golden_stages.json`` (:mod:`tests.golden_stages`; issue 44:
performance work must not change an answer).  A deliberate change of an answer is recorded
again with ``python tests/golden_stages.py`` and said in the commit."""

from __future__ import annotations

import functools
import json

import pytest

from tests.golden_stages import GOLDEN, fingerprint, graphs

RECORDED = json.loads(GOLDEN.read_text())


@functools.cache
def _graphs() -> dict:
    return graphs()


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_every_policy_gives_the_recorded_schedule_makespans_and_plans(name: str) -> None:
    graph = _graphs()[name]
    for policy, want in RECORDED[name].items():
        got = fingerprint(graph, policy)
        for key in ("eager_us", "graph_us"):
            assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-6), (policy, key)
        assert {k: v for k, v in got.items() if not k.endswith("_us")} == \
            {k: v for k, v in want.items() if not k.endswith("_us")}, policy


def test_the_recorded_set_is_the_set_of_graphs() -> None:
    assert set(RECORDED) == set(_graphs())
