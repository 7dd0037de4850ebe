"""``workbench._gc``: the collector is off inside a paused block and restored after it, also when
the block raises; a block inside another, or under a caller that turned it off, leaves it off."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from workbench._gc import paused_gc, without_gc


def test_a_paused_block_restores_the_collector_even_when_it_raises() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block does not turn it back on early
    assert gc.isenabled()
    with pytest.raises(KeyError), paused_gc():
        raise KeyError("x")
    assert gc.isenabled()


def test_a_caller_s_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_decorator_pauses_the_call_and_keeps_its_name_and_result() -> None:
    @without_gc
    def probe(x: int) -> tuple[int, bool]:
        return x + 1, gc.isenabled()

    assert probe(1) == (2, False) and gc.isenabled()
    assert probe.__name__ == "probe"


@pytest.mark.parametrize("suffix", [".json", ".dot"])
def test_the_text_loaders_read_with_the_collector_paused(suffix: str, tmp_path: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """wb.load of a JSON or DOT file builds the graph with the collector off (random 10k, DOT:
    59 -> 43 us an op) and turns it back on, also when the file is refused."""
    import workbench as wb
    from workbench.io.text import dot, json_format

    seen: list[bool] = []
    path = wb.save(wb.models.random_dag(20, seed=1), tmp_path / f"g{suffix}")
    module, name = (json_format, "graph_from_dict") if suffix == ".json" else (dot, "full_graph")
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: seen.append(gc.isenabled()) or real(*a, **k))
    assert wb.load(path) == wb.load(path)
    assert seen == [False, False] and gc.isenabled()
    path.write_text("{" if suffix == ".json" else "digraph {", encoding="utf-8")
    with pytest.raises(wb.errors.FormatError):
        wb.load(path)
    assert gc.isenabled()


def test_a_profiler_trace_is_read_with_the_collector_paused(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """load_pytorch_trace (a trace is a million small dicts: 200k events, 5.3 -> 3.9 s) reads
    with the collector off and restores it, also when the file is refused."""
    import json

    from tests.test_chrome_trace import KINETO
    from workbench.errors import FormatError
    from workbench.io.traces import pytorch_profile
    from workbench.io.traces.pytorch_profile import load_pytorch_trace

    seen: list[bool] = []
    real = pytorch_profile.trace_events
    monkeypatch.setattr(pytorch_profile, "trace_events",
                        lambda *a: seen.append(gc.isenabled()) or real(*a))
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps(KINETO), encoding="utf-8")
    assert len(load_pytorch_trace(path).graph) == 4
    assert seen == [False] and gc.isenabled()
    path.write_text("[", encoding="utf-8")
    with pytest.raises(FormatError):
        load_pytorch_trace(path)
    assert gc.isenabled()


def test_every_policy_schedules_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    """wb.schedule runs a policy with the collector off (nnc on a 400k-op random DAG: 7.1 ->
    6.3 s, the same peak memory) and turns it back on, also when the policy raises."""
    import dataclasses

    import workbench as wb
    from workbench import schedulers

    seen: list[bool] = []
    info = schedulers.POLICIES.get("serial")

    def watched(graph: Any, **options: Any) -> Any:
        seen.append(gc.isenabled())
        if options.get("max_streams") == 3:
            raise RuntimeError("refused")
        return info.fn(graph, **options)

    monkeypatch.setitem(schedulers.POLICIES._entries, "serial",
                        dataclasses.replace(info, fn=watched))
    graph = wb.models.random_dag(30, seed=2)
    assert wb.schedule(graph, "serial").issue_order == graph.topo_order()
    with pytest.raises(RuntimeError, match="refused"):
        wb.schedule(graph, "serial", max_streams=3)
    assert seen == [False, False] and gc.isenabled()
