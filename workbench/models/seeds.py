"""Every example graph of the seed documents, one function each; the docstring cites the seed.

Where a seed only shows a figure, the topology is rebuilt from what its text says, and the
docstring states what was assumed.
"""

from __future__ import annotations

from workbench.values.graph import Graph, Op, Tensor

GIB = 1 << 30


def nnc_diamond() -> Graph:
    """NNC's ``N1 -> (N2, N3) -> N4`` (seed 000, "Static Schedule").

    NNC prefers N1, N2, N4 on stream 0 and N3 on stream 1 (the stream keeps its workspace).
    Each op is a small 10 µs kernel of 64 thread blocks so the two branches can overlap.
    """
    edges = [("N1", "N2"), ("N1", "N3"), ("N2", "N4"), ("N3", "N4")]
    return Graph.from_edges(edges, ops={"N1": "conv2d", "N2": "conv2d", "N3": "conv2d",
                                        "N4": "add"},
                            thread_blocks={n: 64 for n in ("N1", "N2", "N3", "N4")},
                            name="nnc_diamond")


def textbook_mul_sub_add() -> Graph:
    """The textbook's ``m = x * y; n = x - y; z = m + n`` (seed 003, §7.5.1–7.5.2, Fig. 7.5.2).

    ``mul`` and ``sub`` are independent, so graph scheduling can run them in parallel where
    single-op (PyNative) scheduling runs them one after the other.  Tiny scalar kernels: every op is
    dominated by launch cost, the textbook's point about host overhead.
    """
    x = Tensor("x", 4, role="input", shape=(1,))
    y = Tensor("y", 4, role="input", shape=(1,))
    ops = [
        Op("mul", kind="mul", inputs=("x", "y"), outputs=("m",), flops=1, bytes_read=8,
           bytes_written=4, thread_blocks=1),
        Op("sub", kind="sub", inputs=("x", "y"), outputs=("n",), flops=1, bytes_read=8,
           bytes_written=4, thread_blocks=1),
        Op("add", kind="add", inputs=("m", "n"), outputs=("z",), flops=1, bytes_read=8,
           bytes_written=4, thread_blocks=1),
    ]
    tensors = [x, y, Tensor("m", 4, "mul", shape=(1,)), Tensor("n", 4, "sub", shape=(1,)),
               Tensor("z", 4, "add", role="output", shape=(1,))]
    return Graph(ops, tensors, name="textbook_mul_sub_add")


def textbook_heterogeneous() -> Graph:
    """The textbook's heterogeneous 9-kernel graph (seed 003, Fig. 7.5.9–7.5.13).

    From the text: Kernel_1, 2, 5, 9 run on the CPU, Kernel_6 is a Python op (on the host), Kernel_3
    and 4 on the GPU, Kernel_7 and 8 on the Ascend NPU; 1 and 2 are independent, 3 and 4 are
    independent, 5 needs 3 and 4; the fewest-subgraph split is Graph_1_CPU, Graph_2_GPU,
    Graph_3_CPU, Graph_4_Ascend, Graph_5_CPU.  Assumed wiring consistent with that: 1 -> 3, 2 -> 4,
    (3, 4) -> 5 -> 6, 6 -> 7 -> 8 -> 9 (Kernel_6 joins Graph_3_CPU, being a host op).
    Each kernel is 20 µs; tensors are 4 MiB.
    """
    devices = {"Kernel_1": "cpu", "Kernel_2": "cpu", "Kernel_3": "gpu", "Kernel_4": "gpu",
               "Kernel_5": "cpu", "Kernel_6": "python", "Kernel_7": "npu", "Kernel_8": "npu",
               "Kernel_9": "cpu"}
    edges = [("Kernel_1", "Kernel_3"), ("Kernel_2", "Kernel_4"), ("Kernel_3", "Kernel_5"),
             ("Kernel_4", "Kernel_5"), ("Kernel_5", "Kernel_6"), ("Kernel_6", "Kernel_7"),
             ("Kernel_7", "Kernel_8"), ("Kernel_8", "Kernel_9")]
    return Graph.from_edges(edges, ops=list(devices), devices=devices,
                            durations={k: 20.0 for k in devices},
                            sizes={k: 4 << 20 for k in devices},
                            thread_blocks={k: 64 for k in devices}, name="textbook_heterogeneous")


def mindspore_six_kernels() -> Graph:
    """MindSpore's execution-order example (seed 004, "Executing Order Organization").

    The seed gives only the orders and peaks: BFS ``kernel1 -> 2 -> 4 -> 5 -> 3 -> 6`` peaks at 5G,
    DFS ``1 -> 2 -> 3 -> 4 -> 5 -> 6`` at 4G.  This topology reproduces both under the workbench's
    ``bfs`` and ``dfs`` policies: kernel1 feeds kernel2 and kernel3; kernel2 feeds kernel3 and
    kernel4; kernel4 -> kernel5; kernel3 and kernel5 feed kernel6.  Outputs are 1G except kernel4's
    (2G).  Program order lists kernel4 and kernel5 before kernel3 (the order MindSpore's BFS keeps
    them in).  Peaks, counting every output from its producer's start to its last consumer's end:
    BFS live {1,2,4,5} = 5G at kernel5; DFS at most 4G ({2,3,4} at kernel4, {3,4,5} at kernel5).
    """
    names = ["kernel1", "kernel2", "kernel4", "kernel5", "kernel3", "kernel6"]
    edges = [("kernel1", "kernel2"), ("kernel1", "kernel3"), ("kernel2", "kernel3"),
             ("kernel2", "kernel4"), ("kernel4", "kernel5"), ("kernel3", "kernel6"),
             ("kernel5", "kernel6")]
    sizes = {k: GIB for k in names}
    sizes["kernel4"] = 2 * GIB
    return Graph.from_edges(edges, ops=names, sizes=sizes, durations={k: 10.0 for k in names},
                            name="mindspore_six_kernels")


def textbook_side_effects() -> Graph:
    """The textbook's side-effect example (seed 003, §7.5.2, Fig. 7.5.4):
    ``x = y; x = z; r = x - y`` with a global parameter ``x``.  Without ordering, the two Assigns
    and the read of ``x`` are independent ops; ``workbench.passes.side_effects`` adds the control
    edges (Fig. 7.5.5)."""
    tensors = [Tensor("x", 4, role="parameter", shape=(1,)),
               Tensor("y", 4, role="input", shape=(1,)), Tensor("z", 4, role="input", shape=(1,))]
    ops = [
        Op("Assign_1", kind="assign", inputs=("x", "y"), outputs=("x_1",), thread_blocks=1,
           attrs={"writes": "x"}),
        Op("Assign_2", kind="assign", inputs=("x", "z"), outputs=("x_2",), thread_blocks=1,
           attrs={"writes": "x"}),
        Op("Sub_1", kind="sub", inputs=("x", "y"), outputs=("r",), thread_blocks=1,
           attrs={"reads": "x"}),
    ]
    tensors += [Tensor("x_1", 4, "Assign_1", shape=(1,)), Tensor("x_2", 4, "Assign_2", shape=(1,)),
                Tensor("r", 4, "Sub_1", role="output", shape=(1,))]
    return Graph(ops, tensors, name="textbook_side_effects")


def raf_three_branches() -> Graph:
    """RAF's wavefront test "three simple branches" (notes raf_nimble.md §2):
    ``x -> a0; x -> a1 -> a3; x -> a2 -> a4 -> a5; (a0, a3, a5) -> concat``.
    Wavefront gives waves {x}, {[a0], [a1, a3], [a2, a4, a5]}, {concat}."""
    edges = [("x", "a0"), ("x", "a1"), ("a1", "a3"), ("x", "a2"), ("a2", "a4"), ("a4", "a5"),
             ("a0", "concat"), ("a3", "concat"), ("a5", "concat")]
    kinds = {"x": "relu", "a0": "atan", "a1": "atan", "a2": "atan", "a3": "atan", "a4": "atan",
             "a5": "atan", "concat": "concat"}
    return Graph.from_edges(edges, ops=kinds, thread_blocks={k: 16 for k in kinds},
                            name="raf_three_branches")


def raf_occupancy_conv() -> Graph:
    """The RAF seed's occupancy example: two independent batch-1 convolutions (375 -> 750 channels,
    3x3, stride 1, 15x15 input) of 48 thread blocks each; on a 40-SM RTX 3070 Laptop with 2 blocks
    per SM one such kernel fills 60% of the device, so two on two streams overlap.  The ops keep
    the seed's launch shape (``attrs["launch"] = "given"``: 48 blocks, 2 per SM) instead of the
    kernel the cost model would choose for the shapes."""
    flops = 2 * 750 * 15 * 15 * 375 * 9
    in_bytes = 375 * 17 * 17 * 4
    w_bytes = 750 * 375 * 9 * 4
    out_bytes = 750 * 15 * 15 * 4
    tensors = [Tensor("x", in_bytes, role="input", shape=(1, 375, 17, 17)),
               Tensor("w1", w_bytes, role="parameter"), Tensor("w2", w_bytes, role="parameter"),
               Tensor("y1", out_bytes, "conv_a", shape=(1, 750, 15, 15)),
               Tensor("y2", out_bytes, "conv_b", shape=(1, 750, 15, 15))]
    ops = [Op(name, kind="conv2d", inputs=("x", w), outputs=(y,), flops=flops,
              bytes_read=in_bytes + w_bytes, bytes_written=out_bytes, thread_blocks=48,
              attrs={"kernel": (3, 3), "stride": (1, 1), "padding": (0, 0), "cin": 375,
                     "cout": 750, "launch": "given"})
           for name, w, y in (("conv_a", "w1", "y1"), ("conv_b", "w2", "y2"))]
    return Graph(ops, tensors, name="raf_occupancy_conv")
