"""Heterogeneous graphs (seed 003 §7.5.3): partition, copy ops, split vs merge, non-GPU costs."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.executors.reference import run_reference
from workbench.orchestration.pipelines import merge_schedule, split_schedule
from workbench.passes import insert_copies, min_subgraphs_lower_bound, partition
from workbench.passes.partition import memory_space
from workbench.simulator.cost_model.costs import get_device, op_cost, pool_of, with_overrides
from workbench.simulator.simulate import simulate
from workbench.values.graph import Graph, Op, Tensor

H100 = get_device("h100")
# hand-worked times use round host costs (4 µs per launch, 2 µs kernel latency), no interference
# hand-worked: the shared library defaults, not the Hopper fit h100 carries (issue 23)
TOY = with_overrides(H100, launch_overhead_us=4.0, kernel_latency_us=2.0, interference=0.0,
                     model_overrides=())


def test_textbook_partition_is_exactly_the_five_subgraphs() -> None:
    parts = partition(wb.models.textbook_heterogeneous())
    assert [(p.name, p.ops) for p in parts] == [
        ("Graph_1_CPU", ("Kernel_1", "Kernel_2")),
        ("Graph_2_GPU", ("Kernel_3", "Kernel_4")),
        ("Graph_3_CPU", ("Kernel_5", "Kernel_6")),  # Kernel_6 is a Python op: a host op
        ("Graph_4_Ascend", ("Kernel_7", "Kernel_8")),
        ("Graph_5_CPU", ("Kernel_9",)),
    ]
    assert parts[2].inputs == ("Kernel_3:out", "Kernel_4:out")
    assert parts[2].outputs == ("Kernel_6:out",)
    # minimal: the path 1 -> 3 -> 5 -> 6 -> 7 -> 8 -> 9 has 5 device runs (CPU GPU CPU NPU CPU)
    assert min_subgraphs_lower_bound(wb.models.textbook_heterogeneous()) == len(parts) == 5


def test_partition_never_makes_a_cycle_between_subgraphs() -> None:
    # a (cpu) -> b (gpu) -> c (cpu), and d (cpu) independent: d may join a's subgraph, c may not.
    g = Graph.from_edges([("a", "b"), ("b", "c")], ops=["a", "b", "c", "d"],
                         devices={"a": "cpu", "b": "gpu", "c": "cpu", "d": "cpu"})
    assert [p.ops for p in partition(g)] == [("a",), ("b",), ("c", "d")]
    single = wb.models.nnc_diamond()
    assert [p.name for p in partition(single)] == ["Graph_1_GPU"]


def test_copies_exactly_on_device_crossing_edges() -> None:
    g = wb.models.textbook_heterogeneous()
    g2 = insert_copies(g)
    copies = {op.id: (op.kind, op.inputs[0]) for op in g2.ops if op.device == "copy"}
    assert copies == {
        "h2d:Kernel_1:out@gpu": ("h2d", "Kernel_1:out"),
        "h2d:Kernel_2:out@gpu": ("h2d", "Kernel_2:out"),
        "d2h:Kernel_3:out@host": ("d2h", "Kernel_3:out"),
        "d2h:Kernel_4:out@host": ("d2h", "Kernel_4:out"),
        "h2d:Kernel_6:out@npu": ("h2d", "Kernel_6:out"),
        "d2h:Kernel_8:out@host": ("d2h", "Kernel_8:out"),
    }
    # an edge gets a copy iff it crosses memory spaces (cpu -> python shares host memory)
    for a, b in g.data_edges:
        crosses = memory_space(g.op(a)) != memory_space(g.op(b))
        reads_copy = any(g2.tensor(t).producer in copies for t in g2.op(b).inputs
                         if g2.tensor(t).producer is not None and t.startswith(f"{a}:"))
        assert crosses == reads_copy, (a, b)
    assert g2.op("Kernel_6").inputs == ("Kernel_5:out",)
    for op in g2.ops:
        if op.device == "copy":
            size = g.tensor(op.inputs[0]).size_bytes
            assert op.bytes_read == op.bytes_written == size == 4 << 20
    assert insert_copies(g2) == g2  # idempotent
    assert insert_copies(wb.models.nnc_diamond()) == wb.models.nnc_diamond()


def test_device_to_device_copy() -> None:
    g = Graph.from_edges([("a", "b")], devices={"a": "gpu", "b": "npu"})
    g2 = insert_copies(g)
    assert [op.id for op in g2.ops] == ["a", "d2d:a:out@npu", "b"]


def test_split_and_merge_schedules_are_valid_and_never_mix_devices() -> None:
    g = wb.models.textbook_heterogeneous()
    for policy in wb.policies():
        for s in (split_schedule(g, policy), merge_schedule(g, policy)):
            s.validate()
            for ops in s.streams.values():
                pools = {pool_of(s.graph.op(o)).replace("python", "cpu") for o in ops}
                assert len(pools) == 1, (s.policy, ops)
    split = split_schedule(g)
    assert split.notes["stages"] == [
        "Graph_1_CPU", "copies into Graph_2_GPU", "Graph_2_GPU", "copies into Graph_3_CPU",
        "Graph_3_CPU", "copies into Graph_4_Ascend", "Graph_4_Ascend",
        "copies into Graph_5_CPU", "Graph_5_CPU"]
    assert split.n_barriers == 8 and merge_schedule(g).n_barriers == 0


def test_merge_beats_split() -> None:
    g = wb.models.textbook_heterogeneous()
    split = simulate(split_schedule(g, "serial"), "h100")
    merged = simulate(merge_schedule(g, "nnc"), "h100")
    assert split.respects() and merged.respects()
    # Recorded on h100 (copies: 4 MiB at 50 GB/s = 86 µs each; kernels 20 µs):
    # split/serial 705.3 µs, merge/nnc 577.4 µs -> merge is 1.22x faster (18% less time).
    gain = split.makespan / merged.makespan
    print(f"split/serial {split.makespan:.1f} µs, merge/nnc {merged.makespan:.1f} µs, "
          f"merge {gain:.3f}x faster")
    assert gain > 1.15, f"merge {merged.makespan:.1f} µs vs split {split.makespan:.1f} µs"
    for policy in ("serial", "nnc", "wavefront"):  # same policy on both sides, too
        s = simulate(split_schedule(g, policy), "h100").makespan
        m = simulate(merge_schedule(g, policy), "h100").makespan
        assert m < s, f"{policy}: merge {m:.1f} µs vs split {s:.1f} µs"


def test_split_and_merge_compute_the_same_values() -> None:
    g = wb.models.textbook_heterogeneous()
    expect = run_reference(g)["Kernel_9:out"]
    for s in (split_schedule(g), merge_schedule(g)):
        assert np.array_equal(run_reference(s)["Kernel_9:out"], expect)


# ------------------------------------------------------------------------------ cost models
def test_non_gpu_cost_models() -> None:
    cpu = op_cost(Op("c", device="cpu", flops=3.2e9), H100)
    assert cpu.compute_us == pytest.approx(3.2e9 / (32 * 100e9 * 0.5) * 1e6)  # 2000 µs
    assert cpu.latency_us == H100.host.kernel_latency_us
    py = op_cost(Op("p", device="python", flops=1e8), H100)
    assert py.compute_us == pytest.approx(2000.0) and py.latency_us == 20.0
    npu = op_cost(Op("n", device="npu", flops=1.28e10), H100)
    assert npu.compute_us == pytest.approx(100.0)
    cp = op_cost(Op("h", kind="h2d", device="copy", bytes_read=50_000_000,
                    bytes_written=50_000_000), H100)
    assert cp.memory_us == pytest.approx(1000.0) and cp.compute_us == 0.0
    assert pool_of(Op("h", kind="d2h", device="copy")) == "copy:d2h"
    # pinned durations still win everywhere (the textbook's 20 µs kernels)
    assert op_cost(Op("k", device="cpu", duration_us=20.0), H100).alone_us == 20.0
    assert H100.host_op_us("npu") == H100.npu.launch_overhead_us


def _copies(kinds: tuple[str, str]) -> wb.Schedule:
    tensors = [Tensor("x1", 50_000_000, role="input"), Tensor("x2", 50_000_000, role="input")]
    ops = [Op(f"c{i}", kind=k, device="copy", inputs=(f"x{i}",), outputs=(f"y{i}",),
              bytes_read=50_000_000, bytes_written=50_000_000) for i, k in zip((1, 2), kinds,
                                                                               strict=True)]
    g = Graph(ops, tensors, name="copies")
    return wb.Schedule(g, "hand", {0: ("c1",), 1: ("c2",)}, (), ("c1", "c2")).validate()


def test_copy_engines_one_per_direction() -> None:
    same = simulate(_copies(("h2d", "h2d")), TOY)
    assert same.end_of("c1") == pytest.approx(4.0 + 1002.0)
    assert same.start_of("c2") == pytest.approx(same.end_of("c1"))  # one H2D engine: queued
    both = simulate(_copies(("h2d", "d2h")), TOY)
    assert both.start_of("c2") == pytest.approx(8.0)  # the D2H engine works at the same time
    assert both.makespan == pytest.approx(8.0 + 1002.0)


def test_copies_overlap_compute() -> None:
    tensors = [Tensor("x", 50_000_000, role="input")]
    ops = [Op("copy", kind="h2d", device="copy", inputs=("x",), outputs=("y",),
              bytes_read=50_000_000, bytes_written=50_000_000),
           Op("k", kind="op", duration_us=500.0, outputs=("z",))]
    g = Graph(ops, tensors)
    t = simulate(wb.Schedule(g, "hand", {0: ("copy",), 1: ("k",)}, (), ("copy", "k")), TOY)
    assert t.end_of("k") == pytest.approx(8.0 + 500.0)  # full speed beside the copy
    assert t.end_of("copy") == pytest.approx(4.0 + 1002.0)


def test_python_op_blocks_the_host() -> None:
    # P (python, 20 µs) then two GPU kernels: they are issued only after P returns.
    g = Graph.from_edges([], ops=["P", "G1", "G2"], devices={"P": "python"},
                         durations={"P": 20.0, "G1": 10.0, "G2": 10.0})
    s = wb.schedule(g, "nnc")
    t = simulate(s, TOY)
    dispatch = H100.host.dispatch_us
    assert t.start_of("P") == pytest.approx(dispatch)
    assert t.end_of("P") == pytest.approx(dispatch + 20.0)
    issue = dict(zip(t.df["op"], t.df["issue_us"], strict=True))
    assert issue["G1"] == pytest.approx(dispatch + 20.0 + 4.0)
    assert issue["G2"] == pytest.approx(dispatch + 20.0 + 8.0)
    # a C++ CPU op does not block: the GPU kernels are issued while it runs
    cpu = Graph.from_edges([], ops=["C", "G1", "G2"], devices={"C": "cpu"},
                           durations={"C": 20.0, "G1": 10.0, "G2": 10.0})
    tc = simulate(wb.schedule(cpu, "nnc"), TOY)
    assert tc.start_of("G1") == pytest.approx(dispatch + 4.0)
    # sink mode: nothing to block
    assert simulate(s, TOY, mode="graph").start_of("G1") == pytest.approx(8.0)
