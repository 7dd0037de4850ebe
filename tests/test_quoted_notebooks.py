"""Figures quoted in the prose of notebooks 01, 02 and 05 are the ones their cells compute (issue
25).  Entries as in ``tests/test_quoted_figures.py``: the notebook, the text with ``{}`` where the
figure stands, its format (the rounding the text implies; "about 1.8x" is ``{:.1f}``: the value
rounded to one decimal), and the computation of the cell beside it with the same workbench
functions and arguments.  A frozenset is a figure several results must agree on."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import pytest

import workbench as wb
from tests._quoted_text import assert_quoted, quoted_ids

NB01, NB02, NB05 = ("01_nnc_static_schedule.ipynb", "02_raf_wavefront_asap_ios.ipynb",
                    "05_gpu_execution.ipynb")
MULTI = ("nnc", "asap", "wavefront")  # notebook 05's multi-stream policies


@cache
def _inception() -> wb.Graph:
    """Inception V3 as notebooks 01 and 05 build it (batch 1, unfused)."""
    return wb.models.inception_v3(batch=1, fused=False)


# notebook 01 §7: NNC's while loop and case..of on an H100
@cache
def _while(iterations: int, **kw: Any) -> wb.Trace:
    s = wb.schedule(wb.models.nnc_while_loop(iterations=iterations), "nnc")
    return wb.simulate(s, "h100", **kw)


def _loop_ops(kind: str) -> int:
    """How many of the 5-iteration run's ops are ``loop/cond/less#k`` (or ``body/gemm``)."""
    return int(_while(5).df["op"].str.startswith(f"loop/{kind}#").sum())


def _sub_durations(op_id: str) -> dict[str, float]:
    """Stand-alone time of each op of the while loop's condition and body sub-graphs."""
    loop = wb.models.nnc_while_loop(iterations=5).op(op_id)
    return {op.id: op.duration_us or 0.0 for key in ("cond", "body") for op in loop.attrs[key].ops}


def _idle_between() -> frozenset[float]:
    """Cell 23's "device idle between" a condition's end and the body it decides, for every
    iteration after the first (the first also waits for the host's first launches)."""
    from workbench.control.trace import decisions_frame

    co = _while(5)
    return frozenset(co.start_of(f"loop/body/gemm#{d.iteration}")
                     - co.end_of(f"loop/cond/less#{d.iteration}")
                     for d in decisions_frame(co).itertuples()
                     if d.kind == "continue" and d.iteration > 0)


def _iteration_period() -> frozenset[float]:
    """Time from one condition's end to the next, for the iterations that run alone (after the
    side chain has ended: while it runs it slows the loop's kernels)."""
    co = _while(5)
    ends = [co.end_of(f"loop/cond/less#{k}") for k in range(6)]
    return frozenset(b - a for a, b in zip(ends, ends[1:], strict=False)
                     if a >= co.end_of("side2"))


def _per_iteration(what: str) -> frozenset[float]:
    """Cell 26's table, 2 to 8 iterations in steps of 2: what each iteration adds (ops run, or
    the coroutine and blocking makespans; from 0 to 2 the side chain is the longer, so the
    coroutine host hides the first iterations, as the prose says)."""
    def value(n: int, control: str) -> float:
        t = _while(n, control=control)
        return float(len(t.df)) if what == "ops" else t.makespan

    controls = ("coroutine",) if what == "ops" else ("coroutine", "blocking")
    return frozenset((value(n + 2, c) - value(n, c)) / 2 for c in controls for n in (2, 4, 6))


def _case_durations(branch: str) -> frozenset[float]:
    pick = wb.models.nnc_case_of().op("pick")
    return frozenset(op.duration_us or 0.0 for name, sub in pick.attrs["branches"]
                     if name == branch for op in sub.ops)


# notebook 02 §1: the seed's convolution on an RTX 3070 Laptop
def _laptop() -> wb.costs.DeviceSpec:
    return wb.costs.get_device("rtx3070_laptop")


def _conv_blocks() -> frozenset[int]:
    return frozenset(op.thread_blocks or 0 for op in wb.models.raf_occupancy_conv().ops)


def _occupancy_pct() -> float:
    from workbench.simulator.cost_model.costs import occupancy

    return 100 * occupancy(48, _laptop())


@cache
def _sweep_speedups(batch: int) -> frozenset[float]:
    """Notebook 02 §2: the sweep's speedup of each multi-stream policy at ``batch``."""
    sweep = wb.sweep(["inception_v3"], ["wavefront", "asap", "nnc"], devices=["v100"],
                     batch_sizes=[1, 4, 16, 64], show_progress=False)
    table = sweep.pivot(index="batch", columns="policy", values="speedup")
    return frozenset(float(table.loc[batch, p]) for p in ("wavefront", "asap", "nnc"))


# notebook 05: Inception V3 on an H100, eager and graph mode, as modelled and (graph mode) with
# convolutions 30 % slower
@cache
def _schedules() -> dict[str, wb.Schedule]:
    return {p: wb.schedule(_inception(), p) for p in ("serial", *MULTI)}


@cache
def _alone_us() -> dict[str, float]:
    from workbench.simulator.cost_model.costs import op_cost

    spec = wb.costs.get_device("h100")
    return {op.id: op_cost(op, spec, graph=_inception()).alone_us for op in _inception().ops}


def _conv_ids() -> set[str]:
    return {op.id for op in _inception().ops if op.kind == "conv2d"}


@cache
def _makespan(policy: str, calibrated: bool, mode: str = "graph") -> float:
    calibration = {i: 1.3 * _alone_us()[i] for i in _conv_ids()} if calibrated else None
    return wb.simulate(_schedules()[policy], "h100", mode=mode,
                       calibration=calibration).makespan


def _growth(policy: str) -> float:
    return _makespan(policy, True) / _makespan(policy, False) - 1


def _speedups(calibrated: bool) -> frozenset[float]:
    return frozenset(_makespan("serial", calibrated) / _makespan(p, calibrated) for p in MULTI)


def _conv_share() -> float:
    return sum(_alone_us()[i] for i in _conv_ids()) / sum(_alone_us().values())


QUOTED = [  # (notebook, text with {} where the figure stands, its format, the computation)
    (NB01, "Inception V3 at batch 1 ({} ops)", "{}", lambda: len(_inception())),
    (NB01, "({} iterations run the condition {} times)", "{}",
     lambda: (_loop_ops("body/gemm"), _loop_ops("cond/less"))),
    (NB01, "the device computes {} µs (`less`) + {} µs (`gemm`)", "{:g}",
     lambda: (_sub_durations("loop")["less"], _sub_durations("loop")["gemm"])),
    # "About 12 µs of every ~40 µs": each rounded to whole µs, every iteration after the first
    (NB01, "About {} µs of every ~{} µs iteration", "{:.0f}",
     lambda: (_idle_between(), _iteration_period())),
    (NB01, "Each iteration adds exactly the {} ops of one iteration and about {} µs", "{:.0f}",
     lambda: (_per_iteration("ops"), _per_iteration("makespan"))),
    (NB01, "`heavy` (one {} µs convolution)", "{:g}", lambda: _case_durations("heavy")),
    (NB01, "`light` (two {} µs ops)", "{:g}", lambda: _case_durations("light")),
    (NB02, "(375 -> {} channels", "{}",
     lambda: frozenset(op.attrs["cout"] for op in wb.models.raf_occupancy_conv().ops)),
    (NB02, "cuDNN launches it with **{} thread blocks**", "{}", _conv_blocks),
    (NB02, "An RTX 3070 Laptop has {} SMs, and each SM can hold {} such blocks", "{}",
     lambda: (_laptop().sm_count, _laptop().blocks_per_sm)),
    (NB02, "so the device has {} slots. 48 of {} slots is **{} %** occupancy, and {} slots sit",
     "{:.0f}", lambda: (_laptop().slots, _laptop().slots, _occupancy_pct(),
                        _laptop().slots - 48)),
    (NB02, "one wave of {} blocks runs at the speed of {} blocks", "{}",
     lambda: (_conv_blocks(), _conv_blocks())),
    # two convolutions' blocks, and how many waves of the device's slots they need
    (NB02, "{} blocks still need two waves of {} slots", "{}",
     lambda: (sum(op.thread_blocks or 0 for op in wb.models.raf_occupancy_conv().ops),
              _laptop().slots if math.ceil(96 / _laptop().slots) == 2 else "not two waves")),
    # "about 1.8x" and "about 1.02x": every multi-stream policy's speedup, rounded like that
    (NB02, "batch-1 speedup (about {}x)", "{:.1f}", lambda: _sweep_speedups(1)),
    (NB02, "the speedup falls to about {}x at batch 64", "{:.2f}", lambda: _sweep_speedups(64)),
    (NB05, "for one {} µs graph launch", "{:g}",
     lambda: wb.costs.get_device("h100").graph_launch_us),
    # whole percent; "under 1 %" is the largest multi-stream growth rounded up
    (NB05, "about three fifths ({} %) of Inception V3's", "{:.0f}",
     lambda: 100 * _conv_share()),
    (NB05, "30 % more on them is about {} % more work", "{:.0f}",
     lambda: 100 * (sum(_alone_us().values()) + 0.3 * sum(_alone_us()[i] for i in _conv_ids()))
     / sum(_alone_us().values()) - 100),
    (NB05, "the serial makespan grows about {} %", "{:.0f}", lambda: 100 * _growth("serial")),
    (NB05, "the multi-stream schedules by about {} %", "{:.0f}",
     lambda: frozenset(100 * _growth(p) for p in MULTI)),
    (NB05, "their speedup over serial goes from {}–{}x to {}–{}x", "{:.2f}",
     lambda: (min(_speedups(False)), max(_speedups(False)), min(_speedups(True)),
              max(_speedups(True)))),
    # eager mode: host-bound (every multi-stream policy slower than serial); graph mode: the
    # range of the multi-stream policies' speedups
    (NB05, "multi-stream policies run {}–{}x faster than serial", "{:.2f}",
     lambda: (min(_speedups(False)), max(_speedups(False)))),
    (NB05, "{}: their event records cost the host more", "{}",
     lambda: "The multi-stream policies gain nothing there" if all(
         _makespan(p, False, "eager") >= _makespan("serial", False, "eager") for p in MULTI)
     else "eager multi-stream runs beat serial now"),
]


@pytest.mark.parametrize("notebook,text,fmt,compute", QUOTED, ids=quoted_ids(QUOTED))
def test_quoted_figure_is_the_computed_one(notebook: str, text: str, fmt: str,
                                           compute: object) -> None:
    assert_quoted(notebook, text, fmt, compute)
