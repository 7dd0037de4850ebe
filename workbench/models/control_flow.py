"""Built-in graphs with control flow: NNC's ``while`` and ``case..of`` tests and an RNN loop.

Seed 000 (NNC), "while and case..of"; ccv's ``test/int/nnc/schedule.tests.c`` runs a while loop
(5 iterations of a GEMM) and a case..of (notes nnc_mindspore.md §A.4).  Op times are pinned with
``duration_us`` where the example is about the schedule (so hand arithmetic works); the RNN's
come from shapes through the cost model.  See :mod:`workbench.control` for the data model.
"""

from __future__ import annotations

from workbench.control.ops import case_of_op, while_op
from workbench.errors import OptionError
from workbench.models._layers import GraphBuilder
from workbench.values.graph import Graph, Op, Tensor

__all__ = ["nnc_case_of", "nnc_while_loop", "rnn_loop"]

MAT = 256 * 256 * 4  # one 256×256 float32 matrix (NNC's test uses 2×2; bigger shows in memory)
FLAG = 4             # one int32


def _count(value: object, what: str, *, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise OptionError(f"{what} must be an integer >= {low}, got {value!r}")
    return value


def _side_chain(n: int, source: str) -> tuple[list[Op], list[Tensor]]:
    ops, tensors, prev = [], [], source
    for k in range(n):
        out = f"side{k}:out"
        ops.append(Op(f"side{k}", kind="conv2d", inputs=(prev,), outputs=(out,), duration_us=25.0,
                      thread_blocks=64, bytes_read=MAT, bytes_written=MAT))
        tensors.append(Tensor(out, MAT, producer=f"side{k}"))
        prev = out
    return ops, tensors


def nnc_while_loop(iterations: int = 5, *, side_ops: int = 3) -> Graph:
    """NNC's while loop: ``h = h · W`` until a counter reaches ``iterations`` (seed 000; ccv's
    schedule test "while": 5 iterations of a GEMM), next to ``side_ops`` independent ops.

    ``loop`` (while): ``cond`` = ``less`` (2 µs, counter < limit → the flag ``go``, 4 bytes the
    host reads each iteration); ``body`` = ``gemm`` (20 µs, ``h · W``) and ``count`` (2 µs,
    counter + 1), independent of each other; loop states ``h`` (from input ``x``) and ``i`` (from
    input ``i0``).  After it, ``relu`` (5 µs) reads the final ``h``.  Beside it, ``side0`` →
    ``side1`` → … (25 µs each) read ``x`` only: the work NNC's coroutines keep issuing while the
    loop waits for its flag.  Each iteration runs 3 ops (``less``, ``gemm``, ``count``); the run
    ends with one more ``less``.
    """
    iterations = _count(iterations, "nnc_while_loop: iterations")
    side_ops = _count(side_ops, "nnc_while_loop: side_ops")
    cond = Graph([Op("less", kind="less", inputs=("i",), outputs=("go",), duration_us=2.0,
                     thread_blocks=1, bytes_read=FLAG, bytes_written=FLAG)],
                 [Tensor("i", FLAG, role="input"), Tensor("go", FLAG, producer="less")],
                 outputs=["go"], name="while_cond")
    body = Graph([Op("gemm", kind="matmul", inputs=("h", "w"), outputs=("h_next",),
                     duration_us=20.0, thread_blocks=16, bytes_read=2 * MAT, bytes_written=MAT),
                  Op("count", kind="add", inputs=("i",), outputs=("i_next",), duration_us=2.0,
                     thread_blocks=1, bytes_read=FLAG, bytes_written=FLAG)],
                 [Tensor("h", MAT, role="input"), Tensor("w", MAT, role="parameter"),
                  Tensor("i", FLAG, role="input"), Tensor("h_next", MAT, producer="gemm"),
                  Tensor("i_next", FLAG, producer="count")],
                 outputs=["h_next", "i_next"], name="while_body")
    loop = while_op("loop", cond=cond, body=body, carried=[("h", "x", "h_next"),
                                                            ("i", "i0", "i_next")],
                    flag="go", iterations=iterations, outputs=["h_final", "i_final"])
    relu = Op("relu", kind="relu", inputs=("h_final",), outputs=("y",), duration_us=5.0,
              thread_blocks=64, bytes_read=MAT, bytes_written=MAT)
    side, side_tensors = _side_chain(side_ops, "x")
    tensors = [Tensor("x", MAT, role="input", shape=(256, 256)),
               Tensor("i0", FLAG, role="input"), Tensor("h_final", MAT, producer="loop"),
               Tensor("i_final", FLAG, producer="loop"), Tensor("y", MAT, producer="relu"),
               *side_tensors]
    return Graph([loop, relu, *side], tensors, name="nnc_while_loop")


def nnc_case_of(branch: int = 0) -> Graph:
    """NNC's case..of: a selector computed on the device picks one of two branches (seed 000;
    ccv's schedule test "case..of").

    ``select`` (3 µs) computes ``p`` (4 bytes) from ``x``; ``pick`` (case_of on ``p``) runs
    branch ``heavy`` (``conv``, 40 µs) or branch ``light`` (``relu`` → ``scale``, 4 µs each);
    ``out`` (5 µs) reads the result.  ``branch`` (0 = ``heavy``, 1 = ``light``) is the default a
    run takes (``simulate(..., branch=...)`` overrides it).
    """
    if branch not in (0, 1, "heavy", "light") or isinstance(branch, bool):
        raise OptionError(f"nnc_case_of: branch must be 0 / 'heavy' or 1 / 'light', got "
                          f"{branch!r}")
    heavy = Graph([Op("conv", kind="conv2d", inputs=("x",), outputs=("y",), duration_us=40.0,
                      thread_blocks=128, bytes_read=MAT, bytes_written=MAT)],
                  [Tensor("x", MAT, role="input"), Tensor("y", MAT, producer="conv")],
                  outputs=["y"], name="heavy")
    light = Graph([Op("relu", kind="relu", inputs=("x",), outputs=("r",), duration_us=4.0,
                      thread_blocks=64, bytes_read=MAT, bytes_written=MAT),
                   Op("scale", kind="mul", inputs=("r",), outputs=("y",), duration_us=4.0,
                      thread_blocks=64, bytes_read=MAT, bytes_written=MAT)],
                  [Tensor("x", MAT, role="input"), Tensor("r", MAT, producer="relu"),
                   Tensor("y", MAT, producer="scale")],
                  outputs=["y"], name="light")
    pick = case_of_op("pick", selector="p", branches={"heavy": heavy, "light": light},
                      default=branch, outputs=["picked"])
    ops = [Op("select", kind="argmax", inputs=("x",), outputs=("p",), duration_us=3.0,
              thread_blocks=8, bytes_read=MAT, bytes_written=FLAG),
           pick,
           Op("out", kind="add", inputs=("picked",), outputs=("z",), duration_us=5.0,
              thread_blocks=64, bytes_read=MAT, bytes_written=MAT)]
    tensors = [Tensor("x", MAT, role="input", shape=(256, 256)), Tensor("p", FLAG,
                                                                         producer="select"),
               Tensor("picked", MAT, producer="pick"), Tensor("z", MAT, producer="out")]
    return Graph(ops, tensors, name="nnc_case_of")


def rnn_loop(steps: int = 8, *, batch: int = 16, hidden: int = 256) -> Graph:
    """An Elman RNN over ``steps`` time steps as a ``while`` over one cell, then a linear head.

    Cell (``body``): ``wx = x_t · Wx``, ``wh = h · Wh + b`` (independent: two streams can overlap
    them), ``add``, ``tanh`` → next ``h``; ``x_t`` reads the input sequence ``x_seq`` (bound),
    ``h`` starts from ``h0``.  The host counts the steps itself (``flag=None``): a loop over a
    known length needs no device→host sync, unlike :func:`nnc_while_loop`.  Costs from shapes
    (float32, batch × hidden).
    """
    steps = _count(steps, "rnn_loop: steps")
    batch = _count(batch, "rnn_loop: batch", low=1)
    hidden = _count(hidden, "rnn_loop: hidden", low=1)
    b = GraphBuilder("rnn_cell")
    x_t = b.input("x_t", (batch, hidden))
    h = b.input("h", (batch, hidden))
    wx = b.linear(x_t, hidden, bias=False, name="wx")
    wh = b.linear(h, hidden, name="wh")
    s = b.add(wx, wh, name="add")
    h_next = b.activation(s, "tanh", name="tanh")
    cell = b.build(outputs=[h_next])
    size = batch * hidden * 4
    loop = while_op("rnn", body=cell, carried=[("h", "h0", h_next)], flag=None,
                    iterations=steps, bind={"x_t": "x_seq"}, outputs=["h_last"])
    head = Op("head", kind="matmul", inputs=("h_last", "head:weight"), outputs=("logits",),
              flops=2.0 * batch * hidden * 10, bytes_read=size + hidden * 10 * 4,
              bytes_written=batch * 10 * 4, thread_blocks=max(1, (batch + 63) // 64),
              attrs={"m": batch, "k": hidden, "n": 10, "batch": 1, "bias": False,
                     "weight": True})
    tensors = [Tensor("x_seq", steps * size, role="input", shape=(steps, batch, hidden)),
               Tensor("h0", size, role="input", shape=(batch, hidden)),
               Tensor("h_last", size, producer="rnn", shape=(batch, hidden)),
               Tensor("head:weight", hidden * 10 * 4, role="parameter", shape=(hidden, 10)),
               Tensor("logits", batch * 10 * 4, producer="head", shape=(batch, 10))]
    return Graph([loop, head], tensors, name="rnn_loop")
