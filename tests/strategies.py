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


# ------------------------------------------------------------------------------ control flow
def _cf_block(draw: st.DrawFn, max_ops: int, depth: int, inputs: dict[str, int],
              out_size: int | None) -> tuple[list[wb.Op], list[wb.Tensor], list[str]]:
    """Random ops over ``inputs`` (tensor -> bytes), some of them ``while``/``case_of`` ops with
    random sub-blocks while ``depth`` > 0; with ``out_size`` a last op ``fin`` joins the sinks
    into one output of that size.  Returns ops, the tensors they produce, the outputs."""
    from workbench.control import case_of_op, while_op

    n = draw(st.integers(1, max_ops))
    sizes = dict(inputs)
    produced: list[str] = []
    ops: list[wb.Op] = []
    tensors: list[wb.Tensor] = []
    consumed: set[str] = set()
    for j in range(n):
        pool = produced + list(inputs)
        reads = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=min(3, len(pool)),
                              unique=True))
        consumed.update(reads)
        name, out = f"n{j}", f"n{j}:out"
        kind = draw(st.sampled_from(["op", "op", "while", "case_of"])) if depth > 0 else "op"
        if kind == "while":
            state = reads[0]
            size = sizes[state]
            body_ops, body_t, body_out = _cf_block(draw, max(1, max_ops // 2), depth - 1,
                                                   {"s": size, "c": sizes[reads[-1]]}, size)
            body = wb.Graph(body_ops, [wb.Tensor("s", size, role="input"),
                                       wb.Tensor("c", sizes[reads[-1]], role="input"), *body_t],
                            outputs=body_out)
            flag = draw(st.sampled_from(["cond", "state", None]))
            cond = None
            if flag == "cond":
                c_ops, c_t, c_out = _cf_block(draw, 2, depth - 1, {"s": size}, 4)
                cond = wb.Graph(c_ops, [wb.Tensor("s", size, role="input"), *c_t],
                                outputs=c_out)
            op = while_op(name, cond=cond, body=body, carried=[("s", state, body_out[0])],
                          flag=c_out[0] if flag == "cond" else "s" if flag else None,
                          iterations=draw(st.integers(0, 3)), bind={"c": reads[-1]},
                          outputs=[out])
        elif kind == "case_of":
            size = draw(st.integers(0, 1 << 16))
            branches = []
            for b in range(draw(st.integers(1, 3))):
                b_ops, b_t, b_out = _cf_block(draw, max(1, max_ops // 2), depth - 1,
                                              {"x": sizes[reads[-1]]}, size)
                branches.append((f"b{b}", wb.Graph(b_ops, [wb.Tensor("x", sizes[reads[-1]],
                                                                     role="input"), *b_t],
                                                   outputs=b_out)))
            op = case_of_op(name, selector=draw(st.sampled_from([reads[0], None])),
                            branches=branches, default=draw(st.integers(0, len(branches) - 1)),
                            bind={"x": reads[-1]}, outputs=[out])
        else:
            op = wb.Op(name, kind=draw(st.sampled_from(["conv2d", "relu", "matmul"])),
                       inputs=tuple(reads), outputs=(out,),
                       duration_us=draw(st.floats(1.0, 40.0)),
                       thread_blocks=draw(st.integers(1, 600)))
            size = draw(st.integers(0, 1 << 16))
        sizes[out] = size
        ops.append(op)
        tensors.append(wb.Tensor(out, size, producer=name))
        produced.append(out)
    sinks = [t for t in produced if t not in consumed]
    if out_size is None:
        return ops, tensors, sinks
    ops.append(wb.Op("fin", kind="add", inputs=tuple(sinks), outputs=("fin:out",),
                     duration_us=draw(st.floats(1.0, 10.0)), thread_blocks=8))
    tensors.append(wb.Tensor("fin:out", out_size, producer="fin"))
    return ops, tensors, ["fin:out"]


@st.composite
def control_flow_graphs(draw: st.DrawFn, max_ops: int = 6, depth: int = 2) -> wb.Graph:
    """A random graph whose ops are sometimes ``while`` loops (flag from a condition, from the
    loop state, or host-counted; 0-3 iterations) and ``case_of`` ops (1-3 branches, a device or
    host selector), with random sub-graphs nested up to ``depth`` levels."""
    ops, tensors, outputs = _cf_block(draw, max_ops, depth, {"x": 1 << 12}, None)
    return wb.Graph(ops, [wb.Tensor("x", 1 << 12, role="input"), *tensors], outputs=outputs,
                    name="random_control_flow")
