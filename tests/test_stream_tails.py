"""StreamTails' compact ancestor sets against brute-force ancestry, on graphs large enough to
compact columns and with late sources (whose descendants must not see older streams as finished)."""

from __future__ import annotations

import random

import pytest

from workbench.schedulers._tails import StreamTails


def _graph(n: int, rng: random.Random) -> list[list[int]]:
    preds = []
    for i in range(n):
        if i and rng.random() < 0.03:  # a late source
            preds.append([])
            continue
        lo = max(0, i - 40)
        preds.append(sorted(rng.sample(range(lo, i), min(i - lo, rng.randint(1, 3)))))
    return preds


@pytest.mark.parametrize("seed", range(6))
def test_compact_clocks_answer_like_brute_force_ancestry(seed: int) -> None:
    rng = random.Random(seed)
    n = 900
    pred = _graph(n, rng)
    succ: list[list[int]] = [[] for _ in range(n)]
    for v, ps in enumerate(pred):
        for p in ps:
            succ[p].append(v)
    ancestors: list[set[int]] = []
    for v in range(n):
        a: set[int] = set()
        for p in pred[v]:
            a |= ancestors[p] | {p}
        ancestors.append(a)
    labels: list[set[str]] = []
    tails = StreamTails(pred, succ, labels=labels.__getitem__)
    for v in range(n):
        clock = tails.clock_of(v)
        truth = [s for s in range(tails.n_streams) if tails.tail_node[s] in ancestors[v]]
        assert tails.finished_streams(clock) == truth, f"node {v}"
        label = "ab"[v % 2]
        preferred = [s for s in truth if label in labels[s]]
        expected = (preferred or truth or [None])[0]
        assert tails.pick_first(clock, label=label) == expected, f"node {v}"
        if truth and rng.random() < 0.4:
            stream = rng.choice(truth)
        else:
            stream = tails.new_stream()
            labels.append(set())
        tails.place(v, stream)
        labels[stream].add(label)
        tails.set_tail(stream, v)
        tails.visit(v, clock)
    assert tails.compactions >= 2 and tails.retired > 50  # compactions ran and retired tails
    assert tails.n_streams > 300
    # the gone bitmap marks exactly the superseded and the retired instances
    retired = set(tails._retired_instance.values())
    for k, s in enumerate(tails._instance_stream):
        superseded = tails._instance[s] != k
        assert tails._is_gone(k) == (superseded or k in retired), f"instance {k}"
