"""The kernel-library parts of the cost model that the H200 measurements separated (issue 23):
a GEMM tile's fixed prologue/epilogue (``gemm_k_overhead``, ``tensor_k_overhead``), cuDNN's
per-channel batchnorm grid (``bn_per_channel``), PyTorch's chained n-ary add (``chained_add``)
and the per-block setup of elementwise kernels (``elementwise_block_flops``).  Each is 0 in the
shared (V100-fitted) parameters, so the V100 rows are untouched; the h200 file sets them."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.models._layers import GraphBuilder
from workbench.simulator.cost_model.devices import get_device
from workbench.simulator.cost_model.kernel_model import default_model, gemm_candidates, time_launch
from workbench.simulator.cost_model.launches import op_launches


def _gemm_tflops(k: int, model: object) -> float:
    """Achieved TFLOP/s (useful FLOPs) of the fastest FP32 tile for a 4096 x 256 x k product."""
    spec = get_device("h200")
    best = min((sum(time_launch(ln, spec, model).alone_us for ln in c), c)  # type: ignore[arg-type]
               for c in gemm_candidates(4096, 256, k, batch=1, precision="fp32",
                                        model=model, element_bytes=4, name="g"))  # type: ignore[arg-type]
    return 2.0 * 4096 * 256 * k / best[0] / 1e6


def test_shared_parameters_leave_the_new_parts_off() -> None:
    m = default_model()
    assert (m.gemm_k_overhead, m.tensor_k_overhead, m.bn_per_channel, m.chained_add,
            m.elementwise_block_flops) == (0.0, 0.0, 0, 0, 0.0)


def test_k_overhead_makes_small_k_products_slower_per_flop() -> None:
    base = default_model()
    with_fixed = base.with_values(gemm_k_overhead=32.0)
    # K = 64 pays 32 / (64 + 32) more tile work: its rate drops by well over 15% (the tile
    # loop is not all of its time: loads and latency are not scaled) ...
    assert _gemm_tflops(64, with_fixed) < 0.85 * _gemm_tflops(64, base)
    # ... a large-K product hardly notices (32 / 1056 of its K-steps)
    assert _gemm_tflops(1024, with_fixed) > 0.95 * _gemm_tflops(1024, base)


def test_tensor_overhead_applies_to_tensor_core_tiles_only() -> None:
    m = default_model().with_values(tensor_k_overhead=64.0)
    fp32 = gemm_candidates(512, 512, 64, batch=1, precision="fp32", model=m, element_bytes=4,
                           name="g", split=False)
    tf32 = gemm_candidates(512, 512, 64, batch=1, precision="tf32", model=m, element_bytes=4,
                           name="g", split=False)
    tm, tn = 128, 128
    assert any(c[-1].flops == 2.0 * 4 * tm * 4 * tn * 64 for c in fp32)       # untouched
    assert all(c[-1].flops >= 2.0 * 512 * 512 * (64 + 64) for c in tf32)      # K + 64


def _bn_graph(n: int, c: int, hw: int) -> wb.Graph:
    b = GraphBuilder("bn")
    b.batchnorm(b.input("x", (n, c, hw, hw)), name="bn")
    return b.build()


@pytest.mark.parametrize("hw,threads", [(8, 64), (17, 128), (35, 512), (147, 512)])
def test_batchnorm_is_cudnns_per_channel_grid(hw: int, threads: int) -> None:
    """Threads by plane size as the H200 profiler trace shows (bn_fw_inf_1C11_kernel_NCHW:
    64 threads on 8x8 planes, 128 on 17x17, 512 from 35x35); one block per plane."""
    spec = get_device("h200")
    g = _bn_graph(4, 96, hw)
    op = g.ops[g.index("bn")]
    m = default_model().with_values(bn_per_channel=1)
    (launch,) = op_launches(op, g, spec, m)
    assert (launch.blocks, launch.threads) == (4 * 96, threads)
    (plain,) = op_launches(op, g, spec, default_model())
    assert plain.threads == default_model().elementwise_threads


def test_small_planes_pay_the_block_setup_many_times() -> None:
    """With a per-block setup cost, a batchnorm over 8x8 planes streams far slower than one
    over 35x35 planes of the same size (measured on the H200: 0.86 against 3.9 TB/s)."""
    spec = get_device("h200")
    m = default_model().with_values(bn_per_channel=1, elementwise_block_flops=2000.0,
                                     elementwise_efficiency=0.01)

    def rate(c: int, hw: int) -> float:
        g = _bn_graph(64, c, hw)
        (ln,) = op_launches(g.ops[g.index("bn")], g, spec, m)
        return ln.bytes / time_launch(ln, spec, m).work_us

    assert rate(448, 8) < 0.5 * rate(23, 35)


def test_chained_add_launches_one_kernel_per_extra_input() -> None:
    spec = get_device("h200")
    b = GraphBuilder("sum")
    xs = [b.input(f"x{i}", (1, 64, 28, 28)) for i in range(4)]
    b.add(*xs, name="s")
    g = b.build()
    op = g.ops[g.index("s")]
    assert len(op_launches(op, g, spec, default_model())) == 1
    chained = op_launches(op, g, spec, default_model().with_values(chained_add=1))
    assert len(chained) == 3
    assert all(ln.bytes == 4 * 3 * 64 * 28 * 28 for ln in chained)


def test_pools_are_window_kernels_priced_by_their_own_efficiency() -> None:
    spec = get_device("h200")
    b = GraphBuilder("pool")
    b.maxpool(b.input("x", (8, 64, 56, 56)), 3, stride=2, name="p")
    g = b.build()
    op = g.ops[g.index("p")]
    base = default_model().with_values(elementwise_efficiency=0.01)
    (ln,) = op_launches(op, g, spec, base)
    assert ln.kind == "window"
    same = time_launch(ln, spec, base).alone_us
    # 0 (the shared value): priced like an elementwise kernel, so the V100 fit is untouched
    (plain,) = op_launches(op, g, spec, default_model())
    assert time_launch(plain, spec, default_model()).alone_us == pytest.approx(
        time_launch(plain._replace(kind="elementwise"), spec, default_model()).alone_us)
    slower = base.with_values(window_efficiency=0.005)
    assert time_launch(ln, spec, slower).work_us > 1.5 * (same - spec.kernel_latency_us)
