"""The torch executor: any Schedule run with PyTorch's kernels (cuDNN, cuBLAS, ATen).

Each op runs as its kind's PyTorch form (:attr:`workbench.ops.OpKind.torch_form`,
:mod:`workbench.ops.tensors`).  On CUDA, one ``torch.cuda.Stream`` per schedule stream, syncs as
events, barriers as event joins or device synchronisation, eager or one CUDA graph, timed with
CUDA events; on the CPU, issue order timed on the host.  Registered as ``"torch"`` in
:data:`workbench.executors.execute.EXECUTORS` (:func:`run` -> Trace) and
:data:`workbench.executors.execute.OUTPUT_RUNNERS` (:func:`run_outputs` -> values).  torch is
imported only
when a function runs.

========================  ====================================================================
module                    job
========================  ====================================================================
``program``               Schedule -> issue program (steps, waits, records, barriers); no torch
``values``                inputs as tensors, the op-by-op evaluator, outputs, bitwise check
``host``                  the CPU run: issue order, ``perf_counter_ns`` per op
``cuda``                  streams, events, joins, CUDA graph capture, CUDA-event timing
``frame``                 the Trace rows, makespan statistics, device provenance
``runner``                ``run``, ``run_outputs``, device and precision handling, the probe
========================  ====================================================================

Examples
--------
>>> import workbench as wb
>>> g = wb.models.transformer_block(seq_len=4, d_model=8, heads=2, d_ff=16)
>>> trace = run(wb.schedule(g, "nnc"), device="cpu", repeats=3, warmup=0, verify=True)
>>> trace.executor, len(trace.df) == len(g.ops), trace.meta["verified"]
('torch', True, True)
"""

from __future__ import annotations

from workbench.executors.torch_exec.runner import MODES, probe, run, run_outputs
from workbench.executors.torch_exec.values import PRECISIONS

__all__ = ["MODES", "PRECISIONS", "probe", "run", "run_outputs"]
