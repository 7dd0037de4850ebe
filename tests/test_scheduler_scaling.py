"""The scheduler paths issue 44 made linear stay linear: fitted exponents over sizes timed
interleaved, best of three (:mod:`tests._complexity`: a loaded machine slows every size alike),
or counted work where the work can be counted.  Each of these failed before the change it
guards (quadratic paths fit an exponent near 2)."""

from __future__ import annotations

import workbench as wb
from tests._complexity import assert_near_linear
from workbench.values.graph import Graph


def _fan(n: int) -> Graph:
    """One source read by ``n`` ops that one sink reads (fan 1 -> n -> 1), sizes varied."""
    mids = [f"m{i}" for i in range(n)]
    return Graph.from_edges([("src", m) for m in mids] + [(m, "sink") for m in mids],
                            ops=["src", *mids, "sink"],
                            sizes={m: 1024 * (1 + i * 7 % 13) for i, m in enumerate(mids)})


def _built(build):
    """``build(n)`` with the graph's integer views made outside the timed call."""
    graphs: dict[int, Graph] = {}

    def graph(n: int) -> Graph:
        if n not in graphs:
            g = graphs[n] = build(n)
            g.succ_index, g.pred_index, g.topo_index  # noqa: B018
        return graphs[n]
    return graph


def test_memory_greedy_on_a_fan_is_near_linear() -> None:
    """It rescanned every ready op at every step (12.5 M change computations for 5k ops)."""
    from workbench.schedulers.orders import memory_greedy_order

    fan = _built(_fan)
    assert_near_linear(lambda n: memory_greedy_order(fan(n)), 2000, "memory_greedy on a fan")


def test_ios_greedy_stages_on_a_fan_are_near_linear() -> None:
    """Unit edges were deduplicated with a list test and the ready queue sliced per stage."""
    from workbench.schedulers.ios_greedy import greedy_stages

    fan = _built(_fan)
    units = {}

    def stages(n: int) -> object:
        g = fan(n)
        if n not in units:
            units[n] = [[op] for op in g.topo_order()]
        return greedy_stages(g, units[n], 10)
    assert_near_linear(stages, 4000, "ios_greedy's stages on a fan")


def test_memory_greedy_keeps_its_choice_rule() -> None:
    """The heap picks what the scan picked: the fewest live bytes after the op, then the longer
    chain after it, then program order; a tensor's last reader gets cheaper as others run."""
    g = Graph.from_edges([("a", "b"), ("a", "c"), ("c", "w")], ops=["a", "b", "c", "w"],
                         sizes={"a": 100, "b": 60, "c": 1, "w": 5})
    # after a: b +60, c +1 -> c; now b is a's last reader: 60 - 100 = -40 beats w's 5 - 1
    assert list(wb.schedule(g, "memory_greedy").issue_order) == ["a", "c", "b", "w"]
    fan = Graph.from_edges([("s", "x"), ("s", "y"), ("s", "z")], ops=["s", "x", "y", "z"])
    # equal sizes: the ties go by program order; the last reader of s frees it and wins
    assert list(wb.schedule(fan, "memory_greedy").issue_order) == ["s", "x", "y", "z"]
