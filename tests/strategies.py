"""Hypothesis strategies shared by the tests: random DAGs with costs."""

from __future__ import annotations

from hypothesis import strategies as st

import workbench as wb


@st.composite
def dags(draw: st.DrawFn, max_ops: int = 20, *, costs: bool = True) -> wb.Graph:
    """A random DAG over ``n0..n{k}``: edges only from lower to higher index, program order shuffled
    sometimes (so program order need not be topological), random durations and launch shapes."""
    n = draw(st.integers(1, max_ops))
    edges = []
    for j in range(1, n):
        preds = draw(st.lists(st.integers(0, j - 1), max_size=min(j, 4), unique=True))
        edges += [(f"n{i}", f"n{j}") for i in preds]
    names = [f"n{i}" for i in range(n)]
    if draw(st.booleans()):
        names = draw(st.permutations(names))
    kinds = {name: draw(st.sampled_from(["conv2d", "relu", "concat", "matmul"])) for name in names}
    durations = blocks = sizes = None
    if costs:
        durations = {name: draw(st.floats(1.0, 80.0)) for name in names}
        blocks = {name: draw(st.integers(1, 600)) for name in names}
        sizes = {name: draw(st.integers(0, 1 << 20)) for name in names}
    return wb.Graph.from_edges(edges, ops=kinds, durations=durations, thread_blocks=blocks,
                               sizes=sizes)
