"""Launch plans on the CPU: every policy on every built-in network validates; barriers really join;
arena offsets come from the memory plan and a wrong plan or a dropped sync is caught; kernel
argument layout; fused kernel generation; spin kernel parameters; the NumPy emulation of plans
(issue order and random stream interleavings) computes the reference outputs."""

from __future__ import annotations

import dataclasses
from functools import cache, lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from tests._schedules import drop_sync
from tests.strategies import dags
from workbench.executors.gpu import kernels as K
from workbench.executors.gpu.emulator import emulate
from workbench.executors.gpu.graph_capture import check_capturable
from workbench.executors.gpu.launch_plan import (
    ORIGIN,
    Launch,
    OpBegin,
    OpEnd,
    Ptr,
    Record,
    Wait,
    build_launch_plan,
    step_frame,
    validate_plan,
)
from workbench.executors.gpu.reference import run_graph_reference
from workbench.memory import plan_memory
from workbench.passes.fusion import fuse_elementwise
from workbench.schedulers import TEST_OPTIONS

NETWORKS = [name for name in wb.models.models() if wb.models.MODELS.get(name).family == "network"]


@cache
def _graph(name: str) -> wb.Graph:
    # the unfused inception_v3 (conv → batchnorm → relu): the kernels these tests lay out
    return wb.models.build(name, **({"fused": False} if name == "inception_v3" else {}))


@cache
def _schedule(name: str, policy: str) -> wb.Schedule:
    return wb.schedule(_graph(name), policy, **TEST_OPTIONS.get(policy, {}))


@lru_cache(maxsize=1)
def _small_graphs() -> dict[str, wb.Graph]:
    tiny = {"seq_len": 6, "d_model": 16, "heads": 2, "d_ff": 32}
    return {
        "inception75": wb.models.inception_v3(resolution=75, fused=False),
        "squeezenet32": wb.models.squeezenet(resolution=32),
        "transformer": wb.models.transformer_block(**tiny),
        "transformer_fused": fuse_elementwise(wb.models.transformer_block(**tiny)),
        "inception75_fused": fuse_elementwise(wb.models.inception_v3(resolution=75, fused=False)),
        "nnc_diamond": wb.models.nnc_diamond(),
        "mul_sub_add": wb.models.textbook_mul_sub_add(),
        "occupancy": wb.models.raf_occupancy_conv(),
    }


# ------------------------------------------------------------------------------- every policy
@pytest.mark.parametrize("network", NETWORKS)
@pytest.mark.parametrize("policy", wb.policies())
def test_plans_validate_for_every_policy_on_every_network(network: str, policy: str) -> None:
    sched = _schedule(network, policy)
    plan = build_launch_plan(sched)  # validates
    check_capturable(plan)
    assert plan.streams == tuple(s for s, ops in sched.streams.items() if ops)
    begins = [s.op for s in plan.steps if isinstance(s, OpBegin)]
    assert begins == list(sched.issue_order)
    assert plan.n_launches >= sum(1 for h in plan.lowering.values() if h != "alias") - \
        sum(1 for op in sched.graph.ops if op.kind == "concat")
    assert plan.arena_bytes > 0 and plan.device_bytes >= plan.arena_bytes
    summary = plan.summary()
    assert summary["events"] == len(plan.events) and summary["launches"] == plan.n_launches


def test_sync_events_follow_the_schedule() -> None:
    sched = _schedule("inception_v3", "nnc")
    plan = build_launch_plan(sched)
    sync_events = [e for e in plan.events if e.kind == "sync"]
    assert len(sync_events) == sched.n_events
    waits = [s for s in plan.steps if isinstance(s, Wait) and plan.events[s.event].kind == "sync"]
    assert len(waits) == sched.n_syncs
    # first step forks every stream off the origin, last steps join them back
    assert isinstance(plan.steps[0], Record) and plan.steps[0].stream == ORIGIN
    tail = plan.steps[-2 * len(plan.streams):]
    assert [type(s).__name__ for s in tail] == ["Record", "Wait"] * len(plan.streams)
    assert all(s.stream == ORIGIN for s in tail[1::2])


# ------------------------------------------------------------------------------- barriers
def test_barriers_expand_into_joins() -> None:
    sched = _schedule("inception_v3", "wavefront")
    assert sched.n_barriers > 0 and sched.n_syncs == 0
    plan = build_launch_plan(sched)
    n = len(plan.streams)
    marks = [k for k, e in enumerate(plan.events) if e.kind == "barrier"]
    assert len(marks) == n * len(set(sched.barriers))
    records = [s for s in plan.steps if isinstance(s, Record) and s.event in set(marks)]
    waits = [s for s in plan.steps if isinstance(s, Wait) and s.event in set(marks)]
    assert len(records) == len(marks)                       # a record on every stream
    assert len(waits) == n * (n - 1) * len(set(sched.barriers))  # every stream waits on all others
    # without the waits the barriers join nothing, and the validator sees unordered reads
    stripped = dataclasses.replace(plan, steps=tuple(s for s in plan.steps if s not in waits))
    with pytest.raises(wb.ScheduleError, match="not ordered"):
        validate_plan(stripped)


def test_barrier_steps_sit_before_the_op_at_their_position() -> None:
    sched = _schedule("transformer_block", "wavefront")
    plan = build_launch_plan(sched)
    frame = step_frame(plan)
    for pos in sched.barriers:
        if pos == len(sched.issue_order):
            continue
        op = sched.issue_order[pos]
        begin = frame.index[(frame.type == "OpBegin") & (frame.op == op)][0]
        label = f"{pos}@"
        mark_steps = [k for k, s in enumerate(plan.steps) if isinstance(s, (Record, Wait))
                      and plan.events[s.event].kind == "barrier"
                      and plan.events[s.event].label.startswith(label)]
        assert mark_steps and max(mark_steps) < begin


# ------------------------------------------------------------------------------- memory
def test_arena_offsets_come_from_the_memory_plan() -> None:
    sched = _schedule("inception_v3", "nnc")
    mp = plan_memory(sched, "somas")
    plan = build_launch_plan(sched, memory=mp)
    assert plan.notes["in_place"] == {}  # a given plan is used verbatim: concats copy
    for record, offset in zip(mp.records, mp.offsets, strict=True):
        place = plan.placements[record.name]
        assert (place.space, place.offset) == ("arena", offset)
    assert plan.arena_bytes >= mp.arena_bytes
    persistent = [plan.placements[t] for t in plan.inputs]
    assert all(p.space == "arena" and p.offset >= plan.arena_bytes for p in persistent)
    used = plan.spaces["arena"] - plan.arena_bytes
    assert mp.notes["persistent_bytes"] <= used <= mp.notes["persistent_bytes"] + 256 * len(
        persistent)
    with pytest.raises(wb.OptionError, match="concat_in_place"):
        build_launch_plan(sched, memory=mp, concat_in_place=True)


def test_default_plan_uses_the_planner_when_no_concat_is_in_place() -> None:
    sched = _schedule("transformer_block", "nnc")
    mp = plan_memory(sched, "somas", alignment=256)
    plan = build_launch_plan(sched)
    assert plan.notes["in_place"] == {}
    for record, offset in zip(mp.records, mp.offsets, strict=True):
        assert plan.placements[record.name].offset == offset


@pytest.mark.parametrize("network", ["inception_v3", "squeezenet", "transformer_block"])
def test_wrong_memory_plan_is_caught(network: str) -> None:
    sched = _schedule(network, "nnc")
    mp = plan_memory(sched, "somas")
    squashed = dataclasses.replace(mp, offsets=(0,) * len(mp.offsets))
    plan = build_launch_plan(sched, memory=squashed, validate=False)
    with pytest.raises(wb.MemoryPlanError, match="share bytes while both may be live"):
        validate_plan(plan)
    with pytest.raises(wb.MemoryPlanError):
        build_launch_plan(sched, memory=squashed)
    missing = dataclasses.replace(mp, records=mp.records[1:], offsets=mp.offsets[1:])
    with pytest.raises(wb.MemoryPlanError, match="no offset"):
        build_launch_plan(sched, memory=missing)


def test_in_place_concat_slices() -> None:
    sched = _schedule("inception_v3", "serial")
    plan = build_launch_plan(sched)
    concats = [op for op in sched.graph.ops if op.kind == "concat"]
    assert concats and all(not plan.launches_of(op.id) for op in concats)  # no copies at all
    for t, (root, elem_offset, row_len, row_stride) in plan.notes["in_place"].items():
        place, base = plan.placements[t], plan.placements[root]
        assert place.buffer == root and place.offset == base.offset + 4 * elem_offset
        assert (place.row_len, place.row_stride) == (row_len, row_stride)
        producer = sched.graph.tensor(t).producer
        assert producer is not None
        launch = plan.launches_of(producer)[-1]
        assert Ptr(place.space, place.offset) in launch.args
        assert launch.args[-2:] == (row_len, row_stride)
    copying = build_launch_plan(sched, concat_in_place=False)
    assert copying.n_launches == plan.n_launches + sum(len(op.inputs) for op in concats)


def test_pool_memory_gives_every_tensor_its_own_allocation() -> None:
    sched = _schedule("squeezenet", "nnc")
    plan = build_launch_plan(sched, memory="pool")
    spaces = {plan.placements[t].space for t in plan.placements}
    assert "persistent" in spaces and sum(s.startswith("pool:") for s in spaces) > 10


# ------------------------------------------------------------------------------- dropped syncs
@pytest.mark.parametrize("network", ["transformer_block", "squeezenet"])
def test_dropped_sync_is_caught_by_the_plan_validator(network: str) -> None:
    sched = _schedule(network, "nnc")
    assert sched.syncs
    for sync in sched.syncs:
        broken = drop_sync(sched, sync)
        plan = build_launch_plan(broken, validate=False)
        with pytest.raises(wb.ScheduleError, match="missing sync"):
            validate_plan(plan)


def test_dropped_sync_changes_outputs_in_some_interleaving() -> None:
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")], sizes={
        k: 64 for k in "abcd"})
    sched = wb.schedule(g, "nnc")
    (a, c), = [s for s in sched.syncs if s[1] == "c"]
    plan = build_launch_plan(drop_sync(sched, (a, c)), validate=False)
    want = run_graph_reference(g)
    results = [emulate(plan, order="random", interleave_seed=k) for k in range(20)]
    wrong = [r for r in results if not np.array_equal(r["d:out"], want["d:out"])]
    assert wrong and any(np.isnan(r["d:out"]).any() for r in wrong)


def test_unjoined_plan_is_not_capturable() -> None:
    plan = build_launch_plan(_schedule("transformer_block", "nnc"))
    steps = plan.steps[:-2]  # drop the last stream's join
    with pytest.raises(wb.ScheduleError, match="not joined"):
        check_capturable(dataclasses.replace(plan, steps=steps))
    early = (plan.steps[3], *plan.steps)  # a stream acting before the fork
    with pytest.raises(wb.ScheduleError):
        check_capturable(dataclasses.replace(plan, steps=early))


# ------------------------------------------------------------------------------- argument layout
def test_kernel_argument_layout() -> None:
    sched = _schedule("inception_v3", "serial")
    plan = build_launch_plan(sched, concat_in_place=False)
    op = sched.graph.op("Conv2d_2a_3x3/conv")
    (launch,) = plan.launches_of(op.id)
    params = K.signature("conv", launch.kernel)
    args = {p.name: v for p, v in zip(params, launch.args, strict=True)}
    x, w = op.inputs[:2]
    assert launch.kernel == "conv2d_igemm"
    assert args["x"] == Ptr("arena", plan.placements[x].offset)
    assert args["w"] == Ptr("arena", plan.placements[w].offset)
    assert args["y"] == Ptr("arena", plan.placements[op.outputs[0]].offset)
    assert args["bias"] == Ptr("null", 0)
    n, c, h, wd = sched.graph.tensor(x).shape
    assert (args["N"], args["C"], args["H"], args["W"], args["K"]) == (n, c, h, wd, 32)
    assert (args["kh"], args["kw"], args["sh"], args["pw"]) == (3, 3, 1, 0)
    m = n * args["Ho"] * args["Wo"]
    assert launch.grid == (-(-m // 64), 1, 1) and launch.block == (256, 1, 1)
    assert launch.grid[0] * launch.grid[1] == op.thread_blocks  # the builder's estimate
    assert launch.reads == (x, w) and launch.writes == (op.outputs[0],)
    bad = dataclasses.replace(launch, args=launch.args[:-1])
    with pytest.raises(wb.OptionError, match="arguments"):
        validate_plan(dataclasses.replace(plan, steps=tuple(
            bad if s is launch else s for s in plan.steps)))


def test_pointer_tables_and_scratch() -> None:
    g = wb.models.randwire(resolution=32)
    plan = build_launch_plan(wb.schedule(g, "nnc"))
    add_n = [la for la in plan.launches if la.kernel == "add_n"]
    assert add_n
    la = add_n[0]
    op = g.op(la.op)
    table = la.args[0]
    assert table.space == "tables"
    entries = plan.tables[table.offset // 8: table.offset // 8 + len(op.inputs)]
    assert [(p.space, p.offset) for p in entries] == [
        (plan.placements[t].space, plan.placements[t].offset) for t in op.inputs]
    sep = [op for op in g.ops if op.kind == "sepconv"][0]
    dw, pw = plan.launches_of(sep.id)
    assert (dw.kernel, pw.kernel) == ("conv2d_direct", "conv2d_igemm")
    assert dw.args[3].space == "scratch" and pw.args[0] == dw.args[3]
    assert f"scratch:{sep.id}" in dw.writes and f"scratch:{sep.id}" in pw.reads


def test_fused_op_lowers_to_one_generated_kernel() -> None:
    g = fuse_elementwise(wb.models.inception_v3(resolution=75, fused=False))
    plan = build_launch_plan(wb.schedule(g, "nnc"))
    fused = [op for op in g.ops if op.kind == "fused"]
    assert len(fused) == 94
    names = set()
    for op in fused:
        (launch,) = plan.launches_of(op.id)
        assert launch.call.fused is not None and launch.kernel.startswith("wb_fused_")
        names.add(launch.kernel)
    assert len(names) == 1  # BN+ReLU everywhere: one kernel, shapes are arguments
    source, fk = launch.call.source, launch.call.fused
    assert source is not None and fk is not None
    assert "wb_batchnorm(" in source and "wb_unary(" in source and source.count("__global__") == 1
    assert [st[0] for st in fk.stmts] == ["load", "bn", "un", "store"]
    assert [p.name for p in K.parse_signatures(source)[fk.name]] == [
        "in0", "in1", "out0", "rl0", "rs0", "c0", "inner0", "n"]


def test_fused_reduce_pattern_stores_kept_outputs_once() -> None:
    g = fuse_elementwise(wb.models.transformer_block(seq_len=4, d_model=8, heads=2, d_ff=16))
    op = next(o for o in g.ops if o.kind == "fused")
    fk = K.fused_kernel(op, lambda t: g.tensor(t).shape)
    assert fk.reduce is not None and fk.reduce[0] == "layernorm"
    assert fk.outputs[0] == "block0/ln2:out" and "block0/residual1:out" in fk.outputs
    assert "if (first) out1[" in fk.source and "wb_layernorm_rows(load" in fk.source
    with pytest.raises(wb.OptionError, match="no fused code"):
        bad = dataclasses.replace(op, attrs={**op.attrs, "expr": ({**op.attrs["expr"][0],
                                                                 "kind": "erf"},)})
        K.fused_kernel(bad, lambda t: g.tensor(t).shape)


# ------------------------------------------------------------------------------- spin kernel
def test_spin_kernel_grid_and_duration() -> None:
    g = wb.Graph.from_edges([("a", "b"), ("a", "c")], durations={"a": 50.0, "b": 10.0, "c": 2.0},
                            thread_blocks={"a": 48, "b": 600})
    limits = K.DeviceLimits(sm_count=132, max_threads_per_sm=2048, blocks_per_sm=2,
                            spin_overhead_us=3.0)
    plan = build_launch_plan(wb.schedule(g, "serial"), limits=limits)
    (a,), (b,), (c,) = (plan.launches_of(x) for x in "abc")
    assert {la.kernel for la in (a, b, c)} == {"spin"}
    assert a.block == (1024, 1, 1)                  # 2048 threads/SM, 2 blocks/SM
    assert a.grid == (48, 1, 1) and b.grid == (600, 1, 1)
    assert c.grid == (264, 1, 1)                    # unknown shape: the whole device
    names = [p.name for p in K.signature("spin", "spin")]
    spin_ns = {x.op: dict(zip(names, x.args, strict=True))["spin_ns"] for x in (a, b, c)}
    assert spin_ns["a"] == 47_000                   # (50 - 3) µs in one wave
    assert spin_ns["b"] == round(7_000 / 3)         # 600 blocks on 264 slots: 3 waves
    assert spin_ns["c"] == 0                        # shorter than the launch overhead
    b_args = dict(zip(names, b.args, strict=True))
    assert b_args["n_in"] == 1 and b_args["n"] == (1 << 20) // 4
    rtx = K.DeviceLimits(sm_count=40, max_threads_per_sm=1536, blocks_per_sm=2)
    assert rtx.spin_block == 768 and rtx.slots == 80


def test_spin_for_shapeless_and_other_device_ops() -> None:
    g = wb.models.textbook_heterogeneous()
    plan = build_launch_plan(wb.schedule(g, "serial"))
    assert set(plan.lowering.values()) == {"spin"}
    assert all(la.kernel == "spin" for la in plan.launches)


# ------------------------------------------------------------------------------- emulation
@cache
def _want(name: str) -> dict[str, np.ndarray]:
    return run_graph_reference(_small_graphs()[name])


@pytest.mark.parametrize("name", list(_small_graphs()))
@pytest.mark.parametrize("policy", ["serial", "nnc", "wavefront", "ios", "critical_path"])
def test_emulated_plans_compute_the_reference(name: str, policy: str) -> None:
    g = _small_graphs()[name]
    want = _want(name)
    sched = wb.schedule(g, policy, **TEST_OPTIONS.get(policy, {}))
    plan = build_launch_plan(sched)
    orders = (("issue", 0), ("random", 1)) if policy == "serial" else (("random", 1),)
    for order, seed in orders:
        got = emulate(plan, order=order, interleave_seed=seed)
        for t in g.outputs:
            np.testing.assert_allclose(got[t], want[t], rtol=1e-5, atol=1e-5,
                                       err_msg=f"{name}/{policy}/{order}/{t}")
            assert np.isfinite(got[t]).all()


def test_emulation_with_pool_memory_and_copies() -> None:
    g = wb.models.squeezenet(resolution=32)
    want = run_graph_reference(g)
    sched = wb.schedule(g, "nnc")
    for plan in (build_launch_plan(sched, memory="pool"),
                 build_launch_plan(sched, concat_in_place=False),
                 build_launch_plan(sched, memory=plan_memory(sched, "greedy_by_size"))):
        got = emulate(plan, order="random", interleave_seed=3)
        for t in g.outputs:
            np.testing.assert_allclose(got[t], want[t], rtol=1e-5, atol=1e-5)


def test_emulation_agrees_with_workbench_reference() -> None:
    from workbench.executors.gpu.reference import draw_inputs
    from workbench.executors.reference import run_reference

    g = wb.models.transformer_block(seq_len=6, d_model=16, heads=2, d_ff=32)
    inputs = draw_inputs(g, 0)
    plan = build_launch_plan(wb.schedule(g, "asap"))
    got = emulate(plan, inputs)
    theirs = run_reference(g, inputs)
    for t in g.outputs:
        np.testing.assert_allclose(got[t], theirs[t], rtol=1e-4, atol=1e-5)


def test_side_effects_need_their_control_edges() -> None:
    from workbench.passes import add_side_effect_edges

    raw = wb.models.textbook_side_effects()
    sched = wb.Schedule(raw, "manual", {0: ("Assign_1",), 1: ("Sub_1",), 2: ("Assign_2",)}, (),
                        ("Assign_1", "Sub_1", "Assign_2"))
    with pytest.raises(wb.ScheduleError, match="race"):
        build_launch_plan(sched)
    fixed = add_side_effect_edges(raw)
    for policy in ("nnc", "wavefront", "serial"):
        plan = build_launch_plan(wb.schedule(fixed, policy))
        got = emulate(plan, order="random", interleave_seed=5)
        want = run_graph_reference(wb.schedule(fixed, policy))
        np.testing.assert_array_equal(got["r"], want["r"])


@settings(max_examples=25)
@given(graph=dags(max_ops=12), policy=st.sampled_from(["nnc", "wavefront", "asap", "min_streams"]),
       seed=st.integers(0, 1000))
def test_random_dags_plan_and_emulate(graph: wb.Graph, policy: str, seed: int) -> None:
    sched = wb.schedule(graph, policy)
    plan = build_launch_plan(sched)
    check_capturable(plan)
    got = emulate(plan, order="random", interleave_seed=seed)
    want = run_graph_reference(graph)
    for t in graph.outputs:
        np.testing.assert_array_equal(got[t], want[t])


def test_steps_are_plain_values() -> None:
    plan = build_launch_plan(_schedule("transformer_block", "nnc"))
    kinds = {type(s) for s in plan.steps}
    assert kinds == {Record, Wait, OpBegin, OpEnd, Launch}
    assert "LaunchPlan('nnc'" in repr(plan)
    assert sorted(plan.modules()) == ["elementwise", "gemm", "layout", "norm"]
