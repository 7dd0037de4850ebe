"""Every registered executor and output runner on the same schedules (STYLE.md R4/R5).

* Every available output runner (the NumPy reference, the CPU emulator of launch plans, CuPy on a
  GPU) computes the same graph outputs for the same schedule and inputs.  Runners that need a GPU
  are marked ``gpu`` (skipped without one).
* Every available executor returns a Trace of the schedule: every op once, every dependency
  respected.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import workbench as wb
from workbench.executors.execute import EXECUTORS, OUTPUT_RUNNERS, run_outputs
from workbench.executors.reference import draw_inputs
from workbench.passes import add_side_effect_edges, fuse_elementwise

NEEDS_GPU = {"cupy"}   # entries whose probe asks for CuPy and a CUDA device


def _params(names: list[str]) -> list[object]:
    return [pytest.param(n, marks=pytest.mark.gpu) if n in NEEDS_GPU else n for n in names]


@functools.cache
def _graphs() -> dict[str, wb.Graph]:
    block = wb.models.transformer_block(seq_len=6, d_model=16, heads=2, d_ff=32)
    return {"mul_sub_add": wb.models.textbook_mul_sub_add(),
            "side_effects": add_side_effect_edges(wb.models.textbook_side_effects()),
            "transformer": block,
            "transformer_fused": fuse_elementwise(block)}


def test_the_gpu_entries_are_the_ones_with_a_gpu_probe() -> None:
    assert NEEDS_GPU <= set(OUTPUT_RUNNERS.names()) and NEEDS_GPU <= set(EXECUTORS.names())
    assert "reference" in OUTPUT_RUNNERS and OUTPUT_RUNNERS.available("reference")
    assert EXECUTORS.available("simulator")


@pytest.mark.parametrize("policy", ["serial", "nnc", "asap"])
@pytest.mark.parametrize("graph", ["mul_sub_add", "side_effects", "transformer",
                                   "transformer_fused"])
@pytest.mark.parametrize("runner", _params(OUTPUT_RUNNERS.names()))
def test_every_runner_gives_the_reference_outputs(runner: str, graph: str, policy: str) -> None:
    if not OUTPUT_RUNNERS.available(runner):
        pytest.skip(OUTPUT_RUNNERS.unavailable_reason(runner))
    g = _graphs()[graph]
    sched = wb.schedule(g, policy)
    inputs = draw_inputs(g, 0)
    want = run_outputs(sched, runner="reference", inputs=inputs)
    got = run_outputs(sched, runner=runner, inputs=inputs)
    assert sorted(got) == sorted(want) == sorted(g.outputs)
    for t in want:
        np.testing.assert_allclose(got[t], want[t], rtol=1e-4, atol=1e-5, err_msg=t)


@pytest.mark.parametrize("executor", _params(EXECUTORS.names()))
def test_every_executor_runs_the_schedule(executor: str) -> None:
    if not EXECUTORS.available(executor):
        pytest.skip(EXECUTORS.unavailable_reason(executor))
    g = _graphs()["transformer"]
    sched = wb.schedule(g, "nnc")
    trace = wb.execute(sched, executor=executor, device="h100")
    assert sorted(trace.df["op"]) == sorted(g.op_ids)
    assert trace.violations() == []
    assert trace.makespan > 0


@pytest.mark.parametrize("executor", EXECUTORS.names())
def test_every_executor_rejects_unknown_options(executor: str) -> None:
    if EXECUTORS.options(executor) is None and not EXECUTORS.available(executor):
        pytest.skip(f"{executor} checks its own options (**options) and cannot run here")
    sched = wb.schedule(wb.models.nnc_diamond(), "serial")
    with pytest.raises(wb.OptionError, match="no option 'bogus'"):
        wb.execute(sched, executor=executor, bogus=1)


def test_unknown_runner_is_a_one_line_error() -> None:
    sched = wb.schedule(wb.models.nnc_diamond(), "serial")
    with pytest.raises(wb.OptionError, match="unknown output runner 'emulatr'; did you mean "
                                             "'emulator'"):
        run_outputs(sched, runner="emulatr")
