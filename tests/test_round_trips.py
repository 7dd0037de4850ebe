"""Save/load round trips are lossless through every writable graph format (issue 34, finding 1).

Every built-in model (the ``wb.models`` MODELS table) and 300 seeded random graphs (the random
DAG families, then random figures, launch shapes, devices, free-form attrs, tensor sizes, shapes,
dtypes, roles, graph inputs, explicit outputs, control edges and hostile names) go through each
saver of ``workbench.io.SAVERS`` and its loader; the loaded graph must equal the original field
by field (every op field, every tensor field in the same order, the graph's fields) and simulate
to the same serial and ``nnc`` makespans.  The profile import keeps its measured durations in
``workbench import ... -o g.dot``.  Before issue 34, DOT lost durations, sizes, launch shapes and
attrs (Inception V3: ``nnc`` 2,999 µs saved, 778 µs loaded).
"""

from __future__ import annotations

import json
import math
import os
import random
import warnings
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench.cli import main
from workbench.io import LOADERS, SAVERS, load_pytorch_trace
from workbench.io.text.json_format import TENSOR_DTYPES, graph_to_dict
from workbench.models import MODELS
from workbench.models.random_dags import gnp_dag, layered_dag, random_dag, series_parallel_dag
from workbench.values.graph import OP_DEVICES, Graph, Op, Tensor

DATA = Path(__file__).parent / "data"
#: The random families need sizes; small ones keep the test fast.
RANDOM_PARAMS: dict[str, dict[str, Any]] = {
    "layered_dag": {"n_layers": 4, "width": 3, "seed": 1},
    "series_parallel_dag": {"n_ops": 12, "seed": 2},
    "gnp_dag": {"n": 12, "p": 0.3, "seed": 3},
    "random_dag": {"n_ops": 16, "seed": 4},
}
#: One entry per distinct (saver, loader): ``.gv`` is ``.dot`` under another name.
FORMATS = sorted({(SAVERS.get(s), LOADERS.get(s)): s
                  for s in sorted(SAVERS.names(), reverse=True)}.values())


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """The safe writer's fsync (~20 ms a file here) is not what these tests check."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


def _makespans(g: Graph) -> tuple[float, float]:
    return tuple(wb.simulate(wb.schedule(g, p)).makespan for p in ("serial", "nnc"))  # type: ignore[return-value]


def _assert_same(g: Graph, h: Graph, where: str, *,
                 makespans: tuple[float, float] | None = None) -> None:
    """``h`` (loaded) equals ``g`` (saved) in every field the formats keep."""
    assert h.name == g.name, where
    assert list(h.tensors) == list(g.tensors), f"{where}: tensor order"
    for t, u in zip(g.tensors.values(), h.tensors.values(), strict=True):
        assert u == t, f"{where}: tensor {t.id!r}"
    dg, dh = graph_to_dict(g), graph_to_dict(h)
    for i, (a, b) in enumerate(zip(g.ops, h.ops, strict=True)):
        assert b == a, f"{where}: op {a.id!r}"  # every field but attrs (compare=False) ...
        assert json.dumps(dh["ops"][i]) == json.dumps(dg["ops"][i]), \
            f"{where}: op {a.id!r}"  # ... and attrs, sub-graphs included; types exact (0 vs 0.0)
    assert h.control_edges == g.control_edges and h.outputs == g.outputs, where
    assert json.dumps(dh) == json.dumps(dg) and h == g, where
    if makespans is not None:
        assert _makespans(h) == makespans, f"{where}: makespans"


def _round_trip(g: Graph, tmp: Path, suffix: str, tag: object = "") -> Graph:
    """``g`` saved as ``g<tag><suffix>`` and loaded (a new name each time: ext4 flushes a
    rename over an existing file, ~5 ms)."""
    return wb.load(wb.save(g, tmp / f"g{tag}{suffix}"))


def test_the_formats_are_every_saver() -> None:
    assert {".json", ".dot"} <= set(FORMATS) and set(SAVERS.names()) <= set(LOADERS.names())


def test_every_builtin_model(tmp_path: Path) -> None:
    random_family = {n for n in MODELS.names() if MODELS.get(n).family == "random"}
    assert random_family <= set(RANDOM_PARAMS), "give the new random family small sizes here"
    for name in MODELS.names():
        g = MODELS.get(name).fn(**RANDOM_PARAMS.get(name, {}))
        spans = _makespans(g)
        for suffix in FORMATS:
            _assert_same(g, _round_trip(g, tmp_path, suffix, name), f"{name} via {suffix}",
                         makespans=spans)


# ------------------------------------------------------------------------- random graphs
HOSTILE = ['"', "\\", "\\n", "\n", "\r", "\t", "<b>", "</b>", "&amp;", " ", "->", "{", "}", ";",
           "//", "/*", "#", "é", "\u202e", "=", ",", "[", "]", "'", "\\\"", "\x00"]
KINDS = ["relu", "add", "mul", "matmul", "custom_kernel", 'odd "kind"\\', "op"]


def _name(rng: random.Random, base: str) -> str:
    if rng.random() < 0.5:
        return base
    return base + "".join(rng.choice(HOSTILE) for _ in range(rng.randint(1, 4)))


def _value(rng: random.Random, depth: int = 0) -> Any:
    """A free-form attribute value: numbers, text, booleans, null, nested lists and dicts."""
    pick = rng.randrange(8 if depth < 3 else 5)
    if pick == 0:
        return rng.randint(-10**18, 10**18)
    if pick == 1:
        return rng.choice([rng.uniform(-1e6, 1e6), 5e-324, 1e300, -0.0, 0.1, math.nan, -math.inf])
    if pick == 2:
        return _name(rng, "s")
    if pick == 3:
        return rng.choice([True, False])
    if pick == 4:
        return None
    if pick == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {_name(rng, "k"): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _family(rng: random.Random) -> Graph:
    seed = rng.randrange(2**32)
    return rng.choice([
        lambda: layered_dag(rng.randint(1, 4), rng.randint(1, 3), edge_prob=rng.random(),
                            seed=seed),
        lambda: series_parallel_dag(rng.randint(1, 10), seed=seed),
        lambda: gnp_dag(rng.randint(1, 10), rng.random(), seed=seed),
        lambda: random_dag(rng.randint(1, 10), edges_per_op=rng.randint(1, 3), seed=seed),
    ])()


def random_graph(seed: int) -> Graph:
    """A random DAG of the project's families with every field drawn at random (module doc)."""
    rng = random.Random(seed)
    base = _family(rng)
    ids = {op.id: _name(rng, f"op{i}") for i, op in enumerate(base.ops)}
    tids = {t: _name(rng, f"t{i}") for i, t in enumerate(base.tensors)}
    inputs = [Tensor(_name(rng, f"in{i}"), rng.randint(0, 1 << 30), role=rng.choice(
        ["input", "parameter"]), shape=tuple(rng.randint(0, 64) for _ in range(rng.randint(0, 4))),
        dtype=rng.choice(TENSOR_DTYPES)) for i in range(rng.randint(0, 2))]
    ops = []
    for op in base.ops:
        reads = tuple(tids[t] for t in op.inputs)
        reads += tuple(t.id for t in inputs if rng.random() < 0.3)
        attrs = {_name(rng, "a"): _value(rng) for _ in range(rng.randint(0, 3))}
        ops.append(Op(
            ids[op.id], kind=rng.choice(KINDS), device=rng.choice(OP_DEVICES),
            flops=rng.choice([0, 0.0, rng.uniform(0, 1e12), rng.randint(0, 10**15)]),
            bytes_read=rng.randint(0, 1 << 40), bytes_written=rng.randint(0, 1 << 40),
            inputs=reads, outputs=tuple(tids[t] for t in op.outputs),
            thread_blocks=rng.choice([None, rng.randint(1, 10**6)]),
            duration_us=rng.choice([None, rng.uniform(0.01, 500.0), 10.0]),
            workspace_bytes=rng.choice([0, rng.randint(0, 1 << 30)]), attrs=attrs))
    tensors = inputs + [Tensor(tids[t.id], rng.randint(0, 1 << 40), producer=ids[t.producer]
                               if t.producer else None, role=rng.choice(["activation", "output"]),
                               shape=tuple(rng.randint(0, 512) for _ in range(rng.randint(0, 4))),
                               dtype=rng.choice(TENSOR_DTYPES))
                        for t in base.tensors.values()]
    rng.shuffle(tensors)  # any order: the formats keep it
    order = [ids[o] for o in base.topo_order()]
    control = [(order[i], order[j]) for i in range(len(order)) for j in range(i + 1, len(order))
               if rng.random() < 0.1]
    produced = [t.id for t in tensors if t.producer is not None]
    outputs = None if rng.random() < 0.5 or not produced else rng.sample(
        produced, rng.randint(1, len(produced)))
    return Graph(ops, tensors, control, outputs=outputs, name=_name(rng, "g"))


N_RANDOM = 300


def test_random_graphs(tmp_path: Path) -> None:
    """300 graphs, every format; makespans for every third (equal fields already imply them,
    and the simulations are most of the time)."""
    for seed in range(N_RANDOM):
        g = random_graph(seed)
        spans = _makespans(g) if seed % 3 == 0 else None
        for suffix in FORMATS:
            _assert_same(g, _round_trip(g, tmp_path, suffix, seed), f"seed {seed} via {suffix}",
                         makespans=spans)


def test_random_graphs_are_varied() -> None:
    """The generator reaches what it should: hostile names, inputs, controls, None figures."""
    graphs = [random_graph(seed) for seed in range(60)]
    ops = [op for g in graphs for op in g.ops]
    assert any('"' in op.id or "\\" in op.id or "\n" in op.id for op in ops)
    assert any(op.duration_us is None for op in ops) and any(op.attrs for op in ops)
    assert any(g.control_edges for g in graphs)
    assert any(t.producer is None for g in graphs for t in g.tensors.values())
    assert len({op.device for op in ops}) == len(OP_DEVICES)


# ------------------------------------------------------------------------- profile import
@pytest.mark.parametrize("fixture", ["branchy_gpu_kineto.json", "branchy_cpu.pt.trace.json"])
def test_import_to_dot_keeps_the_measured_durations(tmp_path: Path, fixture: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(DATA / fixture), "-o", str(tmp_path / "g.dot")]) == 0
    assert main(["import", str(DATA / fixture), "-o", str(tmp_path / "g.json")]) == 0
    capsys.readouterr()
    dot, js = wb.load(tmp_path / "g.dot"), wb.load(tmp_path / "g.json")
    with warnings.catch_warnings():  # branchy_cpu: "nothing to schedule" (one chain)
        warnings.simplefilter("ignore")
        measured = load_pytorch_trace(DATA / fixture).graph
    assert [op.duration_us for op in dot.ops] == [op.duration_us for op in measured.ops]
    assert all(op.duration_us is not None for op in dot.ops)
    _assert_same(js, dot, fixture)
