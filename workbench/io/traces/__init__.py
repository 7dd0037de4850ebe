"""Recorded runs in and out: profiler traces, execution traces and Chrome trace export.

Flow: :mod:`~workbench.io.traces.trace_events` reads a trace file (gzip or plain, size-limited)
and checks its events; :mod:`~workbench.io.traces.pytorch_profile` turns a PyTorch profiler
(Kineto) trace into a :class:`~workbench.values.trace.Trace`, with
:mod:`~workbench.io.traces.kineto_links` linking launches, steps and cross-stream waits;
:mod:`~workbench.io.traces.execution_trace` builds a graph with real data dependencies from a
PyTorch Execution Trace (:mod:`~workbench.io.traces.et_calls` reads its calls,
:mod:`~workbench.io.traces.et_values` follows its tensors, :mod:`~workbench.io.traces.et_autograd`
its backward and optimizer ops) beside the measured Kineto trace;
:mod:`~workbench.io.traces.chrome_trace` writes a Trace in the Kineto layout that HTA, Perfetto
and ``load_pytorch_trace`` read.
"""
