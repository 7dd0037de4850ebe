"""Every registered policy × random DAGs → the shared invariants (STYLE.md R4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import workbench as wb
from tests.strategies import control_flow_graphs, dags
from workbench.control.expand import expand
from workbench.schedulers import POLICIES, TEST_OPTIONS
from workbench.simulator.cost_model.costs import critical_path_us
from workbench.simulator.simulate import simulate

POLICY_NAMES = wb.policies()


def _check(graph: wb.Graph, policy: str, **options: object) -> None:
    s = wb.schedule(graph, policy, **{**TEST_OPTIONS.get(policy, {}), **options})
    s.validate()
    launched = [op for ops in s.streams.values() for op in ops]
    assert sorted(launched) == sorted(graph.op_ids)          # every op exactly once
    assert sorted(s.issue_order) == sorted(graph.op_ids)
    if options.get("max_streams"):
        assert s.n_streams <= options["max_streams"]
    t = simulate(s, "h100")
    assert t.violations() == []                              # start >= end of every predecessor
    assert t.makespan >= critical_path_us(graph, "h100") - 1e-6
    if graph.has_control_flow:                               # every sub-graph scheduled too,
        _check_subschedules(s)                               # and the run's flat schedule valid
        expand(s).schedule.validate()


def _check_subschedules(s: wb.Schedule) -> None:
    from workbench.control import subgraphs

    for op in s.graph.ops:
        for name, g in subgraphs(op):
            sub = s.subschedules[op.id][name]
            assert sub.policy == s.policy and sub.graph is g
            _check_subschedules(sub)


@pytest.mark.parametrize("policy", POLICY_NAMES)
@settings(max_examples=60)
@given(graph=dags(max_ops=24))
def test_policy_invariants(policy: str, graph: wb.Graph) -> None:
    _check(graph, policy)


@pytest.mark.parametrize("policy", POLICY_NAMES)
@settings(max_examples=25)
@given(graph=dags(max_ops=16))
def test_policy_invariants_with_stream_cap(policy: str, graph: wb.Graph) -> None:
    _check(graph, policy, max_streams=2)


@pytest.mark.parametrize("policy", POLICY_NAMES)
@settings(max_examples=15)
@given(graph=control_flow_graphs())
def test_policy_invariants_with_control_flow(policy: str, graph: wb.Graph) -> None:
    _check(graph, policy)


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_policy_is_deterministic(policy: str) -> None:
    g = wb.models.inception_v3(batch=1, fused=False)
    options = TEST_OPTIONS.get(policy, {})
    a, b = wb.schedule(g, policy, **options), wb.schedule(g, policy, **options)
    assert dict(a.streams) == dict(b.streams) and a.syncs == b.syncs


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_policy_rejects_bad_options(policy: str) -> None:
    g = wb.Graph.from_edges([("a", "b")])
    with pytest.raises(wb.ScheduleError, match="no option 'bogus'"):
        wb.schedule(g, policy, bogus=1)
    with pytest.raises(wb.OptionError, match="max_streams"):
        wb.schedule(g, policy, max_streams=0)


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_policy_is_registered_with_a_seed_and_validates(policy: str) -> None:
    info = POLICIES.get(policy)
    assert info.seed and info.summary
    assert POLICIES.available(policy)
    assert "max_streams" in (POLICIES.options(policy) or {})    # the device's stream cap
    assert POLICIES.options(policy) == info.options()
    g = wb.models.raf_three_branches()
    s = wb.schedule(g, policy, **TEST_OPTIONS.get(policy, {}))
    s.validate()
    assert s.policy == policy and sorted(s.issue_order) == sorted(g.op_ids)


def test_every_schedule_function_is_registered() -> None:
    import importlib
    import pkgutil

    import workbench.schedulers as pkg

    registered = {info.fn for _, info in POLICIES.items()}
    for mod in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"workbench.schedulers.{mod.name}")
        for name in dir(module):
            fn = getattr(module, name)
            if name.startswith("schedule_") and callable(fn) and fn.__module__ == module.__name__:
                assert fn in registered, f"{module.__name__}.{name} is not in POLICIES"
