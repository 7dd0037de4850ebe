"""NNC's while and case..of (seed 000): sub-graphs in the Graph, recursive schedules, runs with
iterations and branches, the coroutine host against a blocking one, memory, files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

import workbench as wb
from tests.strategies import control_flow_graphs
from workbench.control import case_of_op, subgraphs, while_op
from workbench.control.expand import expand
from workbench.control.trace import decisions_frame, iteration_summary
from workbench.memory import check_no_overlap, lifetimes
from workbench.schedulers import TEST_OPTIONS
from workbench.simulator.cost_model.costs import critical_path_us, op_cost, with_overrides
from workbench.values.graph import Graph, Op, Tensor

POLICIES = wb.policies()


def _schedule(g: Graph, policy: str) -> wb.Schedule:
    return wb.schedule(g, policy, **TEST_OPTIONS.get(policy, {}))


def _iteration_size(g: Graph, loop: str = "loop") -> int:
    op = g.op(loop)
    return len(op.attrs["cond"]) + len(op.attrs["body"])


# ---------------------------------------------------------------------------- built-in examples
@pytest.mark.parametrize("policy", POLICIES)
def test_while_loop_grows_by_one_iteration_per_extra_iteration(policy: str) -> None:
    runs = [wb.simulate(_schedule(wb.models.nnc_while_loop(iterations=n), policy), "h100")
            for n in range(6)]
    step = _iteration_size(wb.models.nnc_while_loop())      # less + gemm + count = 3
    assert step == 3
    counts = [len(t.df) for t in runs]
    assert [b - a for a, b in zip(counts, counts[1:])] == [step] * 5
    spans = [t.makespan for t in runs]
    assert all(b > a for a, b in zip(spans, spans[1:])), spans
    last = runs[-1]
    assert last.meta["control"]["trips"] == {"loop": 5}
    assert (last.df["op"] == "loop/body/gemm#4").sum() == 1
    assert sorted(last.df.loc[last.df["region"] == "body", "iteration"].unique()) == [0, 1, 2,
                                                                                      3, 4]
    assert last.violations() == []


@pytest.mark.parametrize("policy", POLICIES)
def test_case_of_branches_run_different_work(policy: str) -> None:
    heavy = wb.simulate(_schedule(wb.models.nnc_case_of(branch=0), policy), "h100")
    light = wb.simulate(_schedule(wb.models.nnc_case_of(branch=1), policy), "h100")
    assert list(heavy.df["op"]) == ["select", "pick/heavy/conv", "out"]
    assert sorted(light.df["op"]) == ["out", "pick/light/relu", "pick/light/scale", "select"]
    assert heavy.meta["control"]["branches"] == {"pick": "heavy"}
    assert light.meta["control"]["branches"] == {"pick": "light"}
    assert heavy.makespan > light.makespan  # 40 µs of conv against 2 x 4 µs
    # the branch is an input of the run too, by index or name
    s = _schedule(wb.models.nnc_case_of(branch=0), policy)
    assert list(wb.simulate(s, branch="light").df["op"]) == list(light.df["op"])


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("model", ["nnc_while_loop", "nnc_case_of", "rnn_loop"])
def test_every_policy_validates_the_builtin_examples(policy: str, model: str) -> None:
    g = wb.models.build(model)
    s = _schedule(g, policy).validate()
    cf = next(op for op in g.ops if subgraphs(op))
    assert set(s.subschedules[cf.id]) == {name for name, _ in subgraphs(cf)}
    flat = expand(s).schedule.validate()      # the run's flat schedule is a valid schedule too
    t = wb.simulate(s, "h100")
    assert t.violations() == [] and t.graph == flat.graph
    assert t.makespan >= critical_path_us(g, "h100") - 1e-6


def test_rnn_loop_needs_no_host_sync() -> None:
    t = wb.simulate(wb.schedule(wb.models.rnn_loop(steps=4), "nnc"), "h100")
    frame = decisions_frame(t)
    assert len(t.df) == 4 * 4 + 1 and not frame["sync"].any()   # 4 cell ops per step + head
    summary = iteration_summary(t)
    assert list(summary["iteration"]) == [0, 1, 2, 3] and set(summary["ops"]) == {4}


# ---------------------------------------------------------------------------- hand-worked host
def _loop_beside_chain() -> Graph:
    cond = Graph([Op("c", inputs=("s",), outputs=("go",), duration_us=10.0, thread_blocks=1)],
                 [Tensor("s", 0, role="input"), Tensor("go", 0, producer="c")])
    body = Graph([Op("b", inputs=("s",), outputs=("s2",), duration_us=20.0, thread_blocks=1)],
                 [Tensor("s", 0, role="input"), Tensor("s2", 0, producer="b")])
    loop = while_op("L", cond=cond, body=body, carried=[("s", "x", "s2")], flag="go",
                    iterations=2)
    chain = [Op("x1", outputs=("y1",), duration_us=30.0, thread_blocks=1),
             Op("x2", inputs=("y1",), outputs=("y2",), duration_us=30.0, thread_blocks=1)]
    return Graph([loop, *chain], [Tensor("x", 0, role="input")])


def test_coroutine_beats_blocking_by_hand() -> None:
    """Launch 1 µs per kernel, no kernel latency or event cost, device sync 5 µs, 0-byte flag
    (so the d2h copy is free), no interference; loop L (cond c 10 µs, body b 20 µs, 2
    iterations) on stream 0, the independent chain x1 -> x2 (30 µs each) on stream 1, issued after
    the loop.

    coroutine: c#0 issued 1, runs 1-11; flag known 11 + 5 = 16.  Meanwhile x1 is issued at 2 (runs
    2-32) and x2 at 3 (32-62).  b#0 issued 17 (17-37), c#1 at 18 (37-47); flag at 52.  b#1 issued
    53 (53-73), c#2 at 54 (73-83); the exit is known at 88, nothing waits for it.  Makespan 83.
    blocking: the same loop, then the host waits until 88 for the last flag; x1 issued 89
    (89-119), x2 at 90 (119-149).  Makespan 149: the chain no longer hides behind the loop.
    """
    g = _loop_beside_chain()
    dev = with_overrides("h100", launch_overhead_us=1.0, kernel_latency_us=0.0,
                         interference=0.0, event_overhead_us=0.0, device_sync_us=5.0,
                         model_overrides=())  # the shared library defaults: no op gap
    assert op_cost(Op("flag", kind="d2h", device="copy"), dev).alone_us == 0.0
    s = wb.schedule(g, "nnc")
    assert dict(s.streams) == {0: ("L",), 1: ("x1", "x2")}
    co = wb.simulate(s, dev, control="coroutine")
    bl = wb.simulate(s, dev, control="blocking")
    assert co.makespan == 83.0 and bl.makespan == 149.0

    def times(t: wb.Trace) -> dict[str, tuple[float, float, float]]:
        return {r.op: (r.issue_us, r.start_us, r.end_us) for r in t.df.itertuples()}

    assert times(co) == {"L/cond/c#0": (1, 1, 11), "L/body/b#0": (17, 17, 37),
                         "L/cond/c#1": (18, 37, 47), "L/body/b#1": (53, 53, 73),
                         "L/cond/c#2": (54, 73, 83), "x1": (2, 2, 32), "x2": (3, 32, 62)}
    assert times(bl)["x1"] == (89, 89, 119) and times(bl)["x2"] == (90, 119, 149)
    frame = decisions_frame(co)
    assert list(frame["kind"]) == ["continue", "continue", "exit"]
    assert list(frame["reached_us"]) == [1, 18, 54] and list(frame["ready_us"]) == [16, 52, 88]
    assert list(decisions_frame(bl)["ready_us"]) == [16, 52, 88]
    # with the loop on the chain's stream, NNC blocks that stream too: no gain
    one = wb.schedule(g, "serial")
    assert wb.simulate(one, dev).makespan == wb.simulate(one, dev, control="blocking").makespan
    # graph mode: conditional nodes on the device, no host round trip at all
    assert wb.simulate(s, dev, mode="graph").makespan < co.makespan


def test_decision_latency_is_the_sync_plus_a_small_copy() -> None:
    from workbench.control.host import decision_latency_us

    spec = wb.costs.get_device("h100")
    copy = op_cost(Op("f", kind="d2h", device="copy", bytes_read=4, bytes_written=4), spec)
    assert decision_latency_us(spec, 4) == pytest.approx(copy.alone_us + spec.device_sync_us)
    t = wb.simulate(wb.schedule(wb.models.nnc_while_loop(iterations=1, side_ops=0), "serial"))
    first = decisions_frame(t).iloc[0]
    assert first["ready_us"] == pytest.approx(t.end_of("loop/cond/less#0")
                                              + decision_latency_us(spec, 4))


# ---------------------------------------------------------------------------- run inputs
def _nested() -> Graph:
    """A loop whose body picks a branch each iteration."""
    a = Graph([Op("a1", inputs=("v",), outputs=("o",), duration_us=5.0, thread_blocks=4)],
              [Tensor("v", 64, role="input"), Tensor("o", 64, producer="a1")])
    b = Graph([Op("b1", inputs=("v",), outputs=("m",), duration_us=2.0, thread_blocks=4),
               Op("b2", inputs=("m",), outputs=("o",), duration_us=2.0, thread_blocks=4)],
              [Tensor("v", 64, role="input"), Tensor("m", 64, producer="b1"),
               Tensor("o", 64, producer="b2")])
    pick = case_of_op("pick", selector="h", branches={"a": a, "b": b}, bind={"v": "h"},
                      outputs=["h2"])
    body = Graph([pick], [Tensor("h", 64, role="input"), Tensor("h2", 64, producer="pick")])
    loop = while_op("loop", body=body, carried=[("h", "x", "h2")], flag="h", iterations=3)
    return Graph([loop, Op("tail", inputs=("loop:h",), outputs=("y",), duration_us=1.0)],
                 [Tensor("x", 64, role="input")])


def test_nested_control_flow_and_data_dependent_rules() -> None:
    g = _nested()
    s = wb.schedule(g, "nnc").validate()
    assert set(s.subschedules["loop"]["body"].subschedules["pick"]) == {"a", "b"}
    t = wb.simulate(s, branch=lambda k: k % 2)            # a, b, a: the iteration decides
    assert list(t.df["op"]) == ["loop/body/pick#0/a/a1", "loop/body/pick#1/b/b1",
                                "loop/body/pick#1/b/b2", "loop/body/pick#2/a/a1", "tail"]
    assert list(t.df["parent"])[:2] == ["loop/body/pick#0", "loop/body/pick#1"]
    assert list(t.df["iteration"]) == [0, 1, 1, 2, -1]
    assert t.meta["control"]["branches"] == {"loop/body/pick#0": "a", "loop/body/pick#1": "b",
                                             "loop/body/pick#2": "a"}
    assert t.violations() == [] and expand(s, branch=lambda k: k % 2).schedule.validate()
    # a rule of the iteration index decides when the loop stops; mappings name ops
    assert wb.simulate(s, iterations=lambda k: k < 5).meta["control"]["trips"] == {"loop": 5}
    assert wb.simulate(s, iterations={"loop": 1}, branch={"pick": "b"}).df["op"].tolist() == [
        "loop/body/pick#0/b/b1", "loop/body/pick#0/b/b2", "tail"]
    assert wb.simulate(s, iterations=0).df["op"].tolist() == ["tail"]


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"iterations": {"lopo": 2}}, "no control-flow op 'lopo' ran"),
    ({"iterations": -1}, "non-negative integer"),
    ({"branch": "c"}, "has no branch 'c' .branches: a, b"),
    ({"control": "threads"}, "unknown control model 'threads' .known: coroutine, blocking"),
])
def test_bad_run_inputs_are_one_line_errors(kwargs: dict[str, Any], match: str) -> None:
    s = wb.schedule(_nested(), "serial")
    with pytest.raises(wb.OptionError, match=match) as info:
        wb.simulate(s, **kwargs)
    assert "\n" not in str(info.value)


def test_a_rule_that_never_stops_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    import workbench.control.expand as ex

    monkeypatch.setattr(ex, "MAX_ITERATIONS", 50)
    with pytest.raises(wb.OptionError, match="ran 50 iterations"):
        wb.simulate(wb.schedule(_nested(), "serial"), iterations=lambda k: True)


# ---------------------------------------------------------------------------- checks
def _body(next_bytes: int = 64) -> Graph:
    return Graph([Op("mm", inputs=("h",), outputs=("h2",))],
                 [Tensor("h", 64, role="input"), Tensor("h2", next_bytes, producer="mm")])


@pytest.mark.parametrize(("build", "match"), [
    (lambda: while_op("L", body=_body(), carried=[("h", "x", "nope")], flag=None),
     "loop 'L': carried tensor 'h' does not match: the body has no tensor 'nope'"),
    (lambda: while_op("L", body=_body(128), carried=[("h", "x", "h2")], flag=None),
     "loop 'L': carried tensor 'h' does not match: 64 bytes as 'x' outside, 128 bytes as 'h2'"),
    (lambda: while_op("L", body=_body(), carried=[("q", "x", "h2")], flag=None,
                      bind={"h": "x"}),
     "carried tensor 'q' is read by neither the condition nor the body"),
    (lambda: while_op("L", body=_body(), carried=[("h", "x", "h2")], flag="h2"),
     "flag 'h2' is neither a tensor the condition produces nor a loop state"),
    (lambda: while_op("L", body=_body(), carried=[("h", "z", "h2")], flag=None, inputs=["x"]),
     "carried tensor 'h' starts from 'z', which is not an input of the op"),
    (lambda: case_of_op("C", selector="x", branches={"a": _body(), "b": Graph([])},
                        bind={"h": "x"}),
     "case_of 'C': branch 'b' has 0 outputs, the op has 1"),
    (lambda: case_of_op("C", selector="x", branches={"a": _body()}, inputs=["x"]),
     "case_of 'C': a input 'h' is bound to no outer tensor"),
])
def test_malformed_control_flow_is_a_one_line_error(build: Any, match: str) -> None:
    with pytest.raises(wb.GraphError, match=match) as info:
        Graph([Op("p", outputs=("x",)), build()], [Tensor("x", 64, producer="p")])
    assert "\n" not in str(info.value)


def test_graph_equality_and_costs_see_the_subgraphs() -> None:
    a, b = wb.models.nnc_while_loop(iterations=3), wb.models.nnc_while_loop(iterations=4)
    assert a == wb.models.nnc_while_loop(iterations=3) and a != b
    assert a.tensor("h_final").size_bytes == 256 * 256 * 4
    loop, spec = a.op("loop"), wb.costs.get_device("h100")
    cond, body = (critical_path_us(loop.attrs[k], spec) for k in ("cond", "body"))
    assert op_cost(loop, spec).alone_us == pytest.approx(4 * cond + 3 * body)


def test_schedule_validate_covers_the_subgraphs() -> None:
    from dataclasses import replace

    s = wb.schedule(wb.models.nnc_while_loop(), "nnc")
    body = s.subschedules["loop"]["body"]
    broken = replace(body, streams={0: ("gemm",)}, issue_order=("gemm",), syncs=())
    bad = replace(s, subschedules={"loop": {**s.subschedules["loop"], "body": broken}})
    with pytest.raises(wb.ScheduleError, match="^loop/body: op 'count' is never launched"):
        bad.validate()
    with pytest.raises(wb.ScheduleError, match="has no sub-graph 'bogus'"):
        replace(s, subschedules={"loop": {"bogus": body}}).validate()


def test_graphs_without_control_flow_run_as_before() -> None:
    g = wb.models.inception_v3(fused=False)
    s = wb.schedule(g, "nnc")
    t = wb.simulate(s)
    assert "iteration" not in t.df and "control" not in t.meta and t.schedule is s
    assert wb.simulate(s, control="blocking").makespan == t.makespan


# ---------------------------------------------------------------------------- memory
def test_loop_carried_tensors_live_across_iterations() -> None:
    t = wb.simulate(wb.schedule(wb.models.nnc_while_loop(iterations=3, side_ops=0), "serial"))
    lt = lifetimes(t)
    times = lt.step_times
    spans = {r.name: (times[r.first], times[r.last]) for r in lt.records}
    born, dies = spans["loop/body/h_next#0"]
    assert born == t.start_of("loop/body/gemm#0") and dies == t.end_of("loop/body/gemm#1")
    assert spans["loop/body/i_next#1"][1] == t.end_of("loop/body/count#2")  # cond#2 too
    plan = wb.plan_memory(t, "somas")
    check_no_overlap(plan)
    assert plan.arena_bytes >= 2 * 256 * 256 * 4   # h of two iterations at once


def test_a_static_plan_holds_whichever_branch_runs() -> None:
    s = wb.schedule(wb.models.nnc_case_of(), "nnc")
    lt = lifetimes(s)
    assert {"pick/heavy/y", "pick/light/r", "pick/light/y"} <= set(lt.names)
    plan = wb.plan_memory(s, "greedy_by_size")
    check_no_overlap(plan)
    for branch in (0, 1):
        run = wb.plan_memory(wb.simulate(s, branch=branch), "greedy_by_size")
        assert run.lower_bound <= plan.arena_bytes


# ---------------------------------------------------------------------------- files
def test_json_round_trip_keeps_nested_subgraphs(tmp_path: Path) -> None:
    for g in (_nested(), wb.models.nnc_while_loop(), wb.models.rnn_loop()):
        path = wb.save(g, tmp_path / "g.json")
        back = wb.load(path)
        assert back == g
        s = wb.schedule(back, "nnc")
        assert wb.simulate(s).makespan == wb.simulate(wb.schedule(g, "nnc")).makespan
    back = wb.load(wb.save(_nested(), tmp_path / "g.dot"))  # DOT keeps them too (issue 34)
    assert back == _nested()


def test_onnx_if_with_a_convolution_imports_it(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    def vi(name: str, shape: Any, dtype: int = TensorProto.FLOAT) -> Any:
        return helper.make_tensor_value_info(name, dtype, shape)

    conv = helper.make_node("Conv", ["x", "w"], ["t_y"], name="conv", kernel_shape=[3, 3],
                            pads=[1, 1, 1, 1])
    then = helper.make_graph([conv], "then", [], [vi("t_y", (1, 8, 8, 8))])
    relu = helper.make_node("Relu", ["x"], ["e_r"], name="relu")
    cat = helper.make_node("Concat", ["e_r", "e_r"], ["e_y"], name="cat", axis=1)
    other = helper.make_graph([relu, cat], "else", [], [vi("e_y", (1, 8, 8, 8))])
    nodes = [helper.make_node("Relu", ["x0"], ["x"], name="pre"),
             helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then,
                              else_branch=other)]
    w = helper.make_tensor("w", TensorProto.FLOAT, (8, 4, 3, 3), [0.0] * 288)
    graph = helper.make_graph(nodes, "m", [vi("x0", (1, 4, 8, 8)), vi("cond", [], 9)],
                              [vi("y", None)], initializer=[w])
    path = tmp_path / "if.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
                     .SerializeToString())
    g = wb.load(path)
    op = g.op("if")
    assert op.kind == "case_of" and set(op.inputs) == {"cond", "x", "w"}
    then_g = dict(subgraphs(op))["then_branch"]
    assert [(o.id, o.kind) for o in then_g.ops] == [("conv", "conv2d")]
    assert then_g.op("conv").flops == 2 * 512 * 36          # 512 outputs x 4*3*3 MACs
    assert g.predecessors("if") == ("pre",)                  # reads x from outside
    t = wb.simulate(wb.schedule(g, "nnc"), branch="then_branch")
    assert list(t.df["op"]) == ["pre", "if/then_branch/conv"]
    assert list(wb.simulate(wb.schedule(g, "nnc"), branch=1).df["op"]) == [
        "pre", "if/else_branch/relu", "if/else_branch/cat"]
    assert onnx is not None


# ---------------------------------------------------------------------------- host oracle
def _issued_before_known(t: wb.Trace) -> list[str]:
    """Independent check of a run's host: no op instance is issued before the host knows what it
    depends on (a loop's next iteration after that iteration's flag; anything after a
    control-flow op after its end is known).  Reads only the trace and its flat graph."""
    import networkx as nx

    g = t.graph.to_networkx()
    issue = dict(zip(t.df["op"], t.df["issue_us"], strict=True))
    bad = []
    for d in decisions_frame(t).itertuples():
        owner = str(d.op)
        if d.kind in ("exit", "done"):
            members = {op for op in issue if op.startswith(owner + "/")}
            held = set().union(*(nx.descendants(g, m) for m in members)) - members if members \
                else set()
        elif d.kind == "continue":  # body d.index: its first path segment ends in #index
            body = f"{owner}/body/"
            held = {op for op in issue if op.startswith(body)
                    and op[len(body):].split("/")[0].endswith(f"#{d.index}")}
        else:  # select: the branch that runs
            held = {op for op in issue if op.startswith(owner + "/")}
        bad += [f"{op} issued at {issue[op]} before {owner}'s {d.kind} at {d.ready_us}"
                for op in held if issue[op] < d.ready_us - 1e-9]
    return bad


@settings(max_examples=40)
@given(graph=control_flow_graphs())
def test_the_coroutine_host_never_runs_ahead_of_its_decisions(graph: Graph) -> None:
    for policy in ("nnc", "critical_path"):
        s = wb.schedule(graph, policy)
        for control in ("coroutine", "blocking"):
            t = wb.simulate(s, "h100", control=control)
            assert t.violations() == []
            assert _issued_before_known(t) == []


def test_a_loop_ending_in_a_loop_waits_for_the_inner_end() -> None:
    """The outer condition shares a run with the outer body; when the body ends in an inner loop,
    the condition of the next iteration is issued only once the host knows the inner loop ended."""
    def graph(op_id: str, reads: str, makes: str, us: float) -> Graph:
        return Graph([Op(op_id, inputs=(reads,), outputs=(makes,), duration_us=us,
                         thread_blocks=1)], [Tensor(reads, 64, role="input")])

    inner = while_op("inner", cond=graph("ichk", "v", "igo", 1.0), body=graph("step", "v", "v2",
                                                                              3.0),
                     carried=[("v", "h", "v2")], flag="igo", iterations=2, outputs=["h2"])
    body = Graph([inner], [Tensor("h", 64, role="input")])
    loop = while_op("loop", cond=graph("chk", "h", "go", 1.0), body=body,
                    carried=[("h", "x", "h2")], flag="go", iterations=2)
    g = Graph([loop], [Tensor("x", 64, role="input")])
    t = wb.simulate(wb.schedule(g, "nnc"), "h100")
    assert _issued_before_known(t) == [] and t.violations() == []
    ends = decisions_frame(t).set_index(["op", "kind"])["ready_us"]
    assert t.df.set_index("op")["issue_us"]["loop/cond/chk#1"] >= ends[("loop/body/inner#0",
                                                                          "exit")]
