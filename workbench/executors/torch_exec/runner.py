"""``run`` and ``run_outputs``: a Schedule executed with PyTorch's kernels (the ``"torch"`` entries
of :data:`workbench.executors.execute.EXECUTORS` and
:data:`workbench.executors.execute.OUTPUT_RUNNERS`).

On CUDA the issue program runs on one ``torch.cuda.Stream`` per schedule stream
(:mod:`workbench.executors.torch_exec.cuda`); without CUDA, or with ``device="cpu"``, on the CPU in
issue
order (:mod:`workbench.executors.torch_exec.host`), so the op mapping and every policy are tested
anywhere.
``mode="graph"`` on the CPU runs eager (there are no CUDA graphs) and says so: ``trace.mode`` is
``"eager"`` and ``meta["requested_mode"]`` is ``"graph"``.

A graph without a program runs on drawn inputs and weights; they are drawn (and moved to the
device) once per graph, seed, device and precision and kept for the next runs of the same graph
(the last :data:`DRAWN_GRAPHS` graphs), so a verified run and its serial reference, or every
schedule of one network in a benchmark, share one draw.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from workbench._checks import warn_line
from workbench.errors import DeviceUnavailable, OptionError, ScheduleError
from workbench.executors.torch_exec import cuda as cuda_run
from workbench.executors.torch_exec.calls import CallEvaluator
from workbench.executors.torch_exec.check import check_against_model
from workbench.executors.torch_exec.frame import device_info, trace_frame
from workbench.executors.torch_exec.host import run_host, run_once
from workbench.executors.torch_exec.program import build_program
from workbench.executors.torch_exec.values import (
    PRECISIONS,
    Evaluator,
    EvaluatorLike,
    as_tensor,
    cast_dtype,
    compare_outputs,
    dtype_of,
    initial_tensors,
    to_numpy,
)
from workbench.io.torch.program import TorchProgram
from workbench.ops.tensors import torch_module
from workbench.simulator.cost_model.devices import DEVICES, DeviceSpec, get_device
from workbench.values.graph import Graph, TensorId
from workbench.values.schedule import Schedule, schedule_serial
from workbench.values.trace import Trace, makespan_stats

MODES = ("eager", "graph")
#: How many graphs' drawn inputs and weights are kept for their next runs.
DRAWN_GRAPHS = 2
_DRAWN: OrderedDict[tuple[Any, ...], tuple[Graph, dict[TensorId, Any]]] = OrderedDict()


def probe() -> str:
    """"" when PyTorch imports (a CPU build counts: it runs on the CPU), else one line saying
    what to install."""
    try:
        torch_module()
    except OptionError:
        return "executor 'torch' needs PyTorch; pip install torch (a CPU build runs on the CPU)"
    return ""


def _torch() -> Any:
    reason = probe()
    if reason:
        raise DeviceUnavailable(reason)
    return torch_module()


def _cuda_api() -> Any:
    """``torch.cuda``: the one place the runner takes its CUDA calls from (the fake CUDA of
    ``tests/test_torch_cuda_fake.py`` stands in here)."""
    return torch_module().cuda


def _tensor_device(device: str) -> str:
    """Where a run on ``device`` keeps its tensors: ``device`` itself (the fake CUDA keeps them on
    the CPU)."""
    return device


def resolve_device(device: Any) -> tuple[str, DeviceSpec | None]:
    """The torch device to run on and the cost-model spec of the ``compute_us`` columns.

    ``None``: CUDA when available, else the CPU.  ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a
    ``torch.device``: that device.  A cost-model device (a name of
    ``workbench.simulator.cost_model.devices`` such as
    ``"h100"``, or a :class:`DeviceSpec`, as ``compare`` passes): run on the default device and
    fill ``compute_us`` / ``memory_us`` from that spec.  A CUDA device is returned with its
    index (``"cuda"`` is the current device, ``"cuda:0"`` on one GPU): ``torch.device("cuda")``
    does not equal ``torch.device("cuda:0")``, the device of the model's parameters, and the
    model would be copied and checked against its own copy.
    """
    torch = _torch()
    api = _cuda_api()
    auto = _indexed("cuda", api) if api.is_available() else "cpu"
    if device is None:
        return auto, gpu_spec(auto) if auto != "cpu" else None
    if isinstance(device, DeviceSpec):
        return auto, device
    text = str(device).lower() if isinstance(device, (str, torch.device)) else None
    if text in ("cpu", "cuda") or (text or "").startswith("cuda:"):
        assert text is not None
        if text != "cpu" and not api.is_available():
            raise DeviceUnavailable(f"executor 'torch': device {device!r} needs a CUDA GPU and a "
                                    f"CUDA build of torch ({torch.__version__} sees none); use "
                                    f"device='cpu'")
        if text == "cpu":
            return text, None
        text = _indexed(text, api)
        return text, gpu_spec(text)
    if text is not None and text in DEVICES:
        return auto, get_device(text)
    raise OptionError(f"executor 'torch': unknown device {device!r} (a torch device: cpu, cuda, "
                      f"cuda:N; or a cost-model device: {', '.join(DEVICES.names())})")


def _indexed(device: str, api: Any) -> str:
    """``"cuda:N"`` for ``"cuda"`` (N: the current device) or ``"cuda:N"``; a one-line error for
    an index that is no number."""
    _, _, index = device.partition(":")
    if not index:
        current = getattr(api, "current_device", None)
        return f"cuda:{int(current()) if current is not None else 0}"
    if not index.isdigit():
        raise OptionError(f"executor 'torch': unknown device {device!r} (a torch device: cpu, "
                          f"cuda, cuda:N)")
    return f"cuda:{int(index)}"


def gpu_spec(device: str) -> DeviceSpec:
    """The cost-model spec the GPU's name matches word by word (``NVIDIA H200`` -> ``h200``;
    :func:`workbench.executors.device_probes.base_device_for`), else ``h100``."""
    from workbench.executors.device_probes import base_device_for

    return get_device(base_device_for(str(_cuda_api().get_device_name(device))))


@contextmanager
def precision_flags(precision: str | None) -> Iterator[None]:
    """TF32 on for ``"tf32"``, off otherwise (cuBLAS matmuls and cuDNN convolutions and RNNs),
    and cuDNN's heuristics (``benchmark = False``: every run, baseline or schedule, picks its
    convolution algorithms the same way, whatever else runs beside it), as the H200
    measurements ran; restored afterwards.  ``None``: torch's flags as the process set them (a
    model accelerated as it runs).

    Torch with the precision API (``torch.backends.cuda.matmul.fp32_precision``,
    ``torch.backends.cudnn.conv.fp32_precision``) is switched through it alone: once anything in
    the process sets it, reading the legacy ``allow_tf32`` raises ("mix of the legacy and new
    APIs").  Its values are put back exactly, which leaves the legacy flags readable wherever
    they were.  Older torch: the legacy flags."""
    if precision is None:
        yield
        return
    torch = torch_module()
    cudnn = torch.backends.cudnn
    restore = _switch_tf32(torch, precision == "tf32")
    benchmark = cudnn.benchmark
    cudnn.benchmark = False
    try:
        yield
    finally:
        cudnn.benchmark = benchmark
        restore()


def tf32_switches(torch: Any) -> list[tuple[Any, str]] | None:
    """The precision API's TF32 switches, ``(object, attribute)``: cuBLAS matmuls, cuDNN
    convolutions and RNNs; ``None`` where this torch has no such API (before 2.9)."""
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    parts = [(matmul, "fp32_precision"), (getattr(cudnn, "conv", None), "fp32_precision"),
             (getattr(cudnn, "rnn", None), "fp32_precision")]
    if not all(obj is not None and hasattr(obj, attr) for obj, attr in parts):
        return None
    return parts


def _switch_tf32(torch: Any, on: bool) -> Callable[[], None]:
    """Set TF32 ``on`` or off; return what puts the switches back as they were."""
    switches = tf32_switches(torch)
    if switches is None:
        matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
        legacy = (matmul.allow_tf32, cudnn.allow_tf32)
        matmul.allow_tf32 = cudnn.allow_tf32 = on

        def restore_legacy() -> None:
            matmul.allow_tf32, cudnn.allow_tf32 = legacy

        return restore_legacy
    saved = [getattr(obj, attr) for obj, attr in switches]
    for obj, attr in switches:
        setattr(obj, attr, "tf32" if on else "ieee")

    def restore() -> None:
        for (obj, attr), value in zip(switches, saved, strict=True):
            setattr(obj, attr, value)

    return restore


def _warn_program_only(graph: Any, evaluator: Any, notes: dict[str, Any]) -> None:
    """One warning (and ``meta["program_only"]``) when the torch forms run ops whose values only
    the traced program computes (``attrs["program_only"]``,
    :func:`workbench.io.torch.fx.from_torch`: reads after an in-place write through another
    name): the outputs are not the model's."""
    if isinstance(evaluator, CallEvaluator):
        return
    only = [op for op in graph.ops if op.attrs.get("program_only")]
    if only:
        notes["program_only"] = [op.id for op in only]
        warn_line(f"torch executor: {len(only)} op(s) of {graph.name!r} need the model's own "
                  f"program (e.g. {only[0].id!r} {only[0].attrs['program_only']}), which this "
                  f"graph has not (a file keeps the graph only): the torch forms compute "
                  f"other values there, so the outputs are not the model's")


def _check(schedule: Any, mode: str, precision: str | None, warmup: Any, repeats: Any) -> None:
    if not isinstance(schedule, Schedule):
        raise ScheduleError(f"executor 'torch' needs a Schedule, got {type(schedule).__name__}")
    if mode not in MODES:
        raise OptionError(f"executor 'torch': unknown mode {mode!r} (known: {', '.join(MODES)})")
    if precision is not None and precision not in PRECISIONS:
        raise OptionError(f"executor 'torch': unknown precision {precision!r} (known: "
                          f"{', '.join(PRECISIONS)})")
    for name, value, low in (("warmup", warmup, 0), ("repeats", repeats, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise OptionError(f"executor 'torch': {name} must be an integer >= {low}, "
                              f"got {value!r}")


def _evaluator(schedule: Schedule, *, seed: int, inputs: Any, device: str,
               precision: str | None) -> tuple[EvaluatorLike, dict[str, Any]]:
    """The evaluator of a run of ``schedule`` on ``device``, and what ``meta`` says of its
    values.  A graph with a traced module (``from_torch``) runs the model's own calls with its
    own parameters and ``inputs`` (the model's arguments; default: the example it was traced
    with); a graph with weights (an ONNX file) runs the kinds' torch forms on them with
    ``inputs`` (the model's inputs, positional or by name; default: drawn); any other graph runs
    the torch forms on drawn weights and inputs (``inputs`` by tensor id overrides some)."""
    graph, program = schedule.graph, schedule.graph.program
    where = _tensor_device(device)
    if isinstance(program, TorchProgram):
        dtype = cast_dtype(precision)
        given = program.graph_inputs(program.example if inputs is None else inputs)
        values = {k: as_tensor(v, device=where, dtype=dtype) if _is_tensor(v) else v
                  for k, v in given.items()}
        evaluator = CallEvaluator(graph, program, values, module=program.module_on(where, dtype),
                                  device=where)
        return evaluator, {"weights": program.describe(),
                           "inputs": "the example traced" if inputs is None else "given"}
    if program is not None:
        mapped = program.graph_inputs(inputs) if inputs is not None else {}
        initial = _initial(graph, seed=seed, inputs=mapped, device=where, precision=precision)
        return Evaluator(graph, initial), {
            "weights": program.describe(),
            "inputs": "given" if inputs is not None else f"drawn (seed {seed})"}
    if inputs is not None and not isinstance(inputs, Mapping):
        raise OptionError(f"executor 'torch': graph {graph.name!r} has no program, so inputs "
                          f"are a mapping of tensor id to value, got {type(inputs).__name__}")
    initial = _initial(graph, seed=seed, inputs=inputs, device=where, precision=precision)
    return Evaluator(graph, initial), {
        "weights": f"random (seed {seed}, He-scaled): graph {graph.name!r} has no program "
                   f"(a built-in graph, or a file that holds none)",
        "inputs": "drawn" if not inputs else "given, the rest drawn"}


def _initial(graph: Graph, *, seed: int, inputs: Mapping[TensorId, Any] | None, device: str,
             precision: str | None) -> dict[TensorId, Any]:
    """:func:`initial_tensors`, drawn once per graph, seed, device and precision when no value is
    given (the last :data:`DRAWN_GRAPHS` graphs are kept; nothing runs in place on them)."""
    if inputs:
        return initial_tensors(graph, seed=seed, inputs=inputs, device=device,
                               precision=precision)
    key = (id(graph), seed, str(device), precision)
    hit = _DRAWN.get(key)
    if hit is not None and hit[0] is graph:
        _DRAWN.move_to_end(key)
        return hit[1]
    initial = initial_tensors(graph, seed=seed, inputs=None, device=device, precision=precision)
    _DRAWN[key] = (graph, initial)
    while len(_DRAWN) > DRAWN_GRAPHS:
        _DRAWN.popitem(last=False)
    return initial


def _is_tensor(value: Any) -> bool:
    return isinstance(value, (torch_module().Tensor, np.ndarray))


def run_outputs(schedule: Schedule, *, seed: int = 0, precision: str | None = "fp32",
                device: Any = None, inputs: Any = None) -> dict[str, np.ndarray]:
    """The graph outputs of one eager run of ``schedule`` with torch, as float32 NumPy arrays
    (fp16 / bf16 values widened exactly), by graph tensor id.  Values as :func:`run` takes them
    (``seed``, ``inputs``).  O(V) torch calls."""
    _check(schedule, "eager", precision, 0, 1)
    dev, _ = resolve_device(device)
    program = build_program(schedule)
    with precision_flags(precision), torch_module().no_grad():
        evaluator, _ = _evaluator(schedule, seed=seed, inputs=inputs, device=dev,
                                  precision=precision)
        if dev == "cpu":
            run_once(program, evaluator)
        else:
            api = _cuda_api()
            with api.device(dev):
                rt = cuda_run.Streams(api, program)
                _attach(evaluator, rt)
                api.synchronize()
                cuda_run.issue(rt, evaluator.run_op)
                api.synchronize()
        return to_numpy(evaluator.outputs())


def _attach(evaluator: EvaluatorLike, rt: cuda_run.Streams) -> None:
    """Let a call evaluator see the current stream (cross-stream uses are recorded)."""
    if isinstance(evaluator, CallEvaluator):
        evaluator.streams = rt


def run(schedule: Schedule, *, mode: str = "eager", precision: str | None = "fp32",
        warmup: int = 3,
        repeats: int = 20, verify: bool = False, seed: int = 0, device: Any = None,
        barrier_kind: str | None = None, inputs: Any = None,
        return_outputs: bool = False, deadline: float | None = None) -> Trace:
    """Execute ``schedule`` with PyTorch and return the measured
    :class:`~workbench.values.trace.Trace`.

    What runs: a graph imported from a PyTorch module (:func:`workbench.io.from_torch`) runs
    the model's own calls with its own weights; ``inputs`` are the model's arguments (a tensor,
    a tuple as the model takes them, or a mapping by input name; default: the example it was
    traced with).  A graph with weights (an ONNX file) runs each kind's torch form on them
    (``inputs``: the model's inputs, positional or by name).  Any other graph (built-in, or
    loaded from a file without a program) runs the torch forms on random weights
    (``inputs``: a mapping of tensor id to value overrides some).  ``meta["weights"]`` and
    ``meta["inputs"]`` say which.

    ``mode``: ``"eager"`` (the host issues every op each run) or ``"graph"`` (the whole
    multi-stream run captured once as a CUDA graph and replayed; eager on the CPU, see the module
    docstring).  ``precision``: ``"fp32"`` (TF32 off), ``"tf32"``, ``"fp16"`` or ``"bf16"``
    (inputs and weights cast), or ``None`` (torch's TF32 flags as the process set them, the
    model's dtypes).  ``warmup`` runs, then ``repeats`` timed runs: the makespan's
    median and quartiles are in ``meta`` (CUDA events on a GPU, ``perf_counter_ns`` on the CPU).
    The rows are one run's per-op start and end, so ``trace.makespan`` is that run's end: on the
    CPU the lower-median timed run; in graph mode the lower-median replay of a capture with
    timing events inside; in eager mode on CUDA one more run with events around every op (their
    host cost included).  ``meta["makespan_median_us"]`` (runs timed by two events only) is the
    figure to compare between schedules.  ``device``: see
    :func:`resolve_device`.  ``barrier_kind``: ``"join"`` or ``"device_sync"`` (``None``: the
    schedule's).  ``verify``: check the outputs, against the model itself for a traced module
    (``max |diff| / max |y|`` at most 1e-4 in fp32 / TF32, 1e-2 in fp16 / bf16;
    ``meta["max_rel_diff"]`` and ``meta["bitwise"]`` say how close), else bitwise against the
    serial schedule's torch run; a one-line :class:`ScheduleError` naming the first differing
    output otherwise.  ``return_outputs``: keep the outputs in ``meta["outputs"]``: what the
    model returns (tensors, its own nesting) when the graph has a program, else the graph
    outputs by tensor id (NumPy).  ``deadline``: a ``time.perf_counter()`` value after which
    no further timed repeat starts (at least one is timed; ``meta["stopped_at_deadline"]`` and
    ``meta["repeats_timed"]`` say so), for callers that bound a run's time (``budget_s``).
    """
    _check(schedule, mode, precision, warmup, repeats)
    dev, spec = resolve_device(device)
    program = build_program(schedule, barrier_kind)
    notes: dict[str, Any] = {}
    torch = torch_module()
    with precision_flags(precision), torch.no_grad():
        evaluator, provenance = _evaluator(schedule, seed=seed, inputs=inputs, device=dev,
                                           precision=precision)
        _warn_program_only(schedule.graph, evaluator, notes)
        peak = None
        if dev == "cpu":
            ran = "eager"
            if mode == "graph":
                notes["mode_note"] = "no CUDA graphs on the CPU: ran eager"
            timing = run_host(program, evaluator, warmup=warmup, repeats=repeats,
                              deadline=deadline)
            outputs, result = evaluator.outputs(), evaluator.result()
        else:
            ran = mode
            api = _cuda_api()
            with api.device(dev):
                rt = cuda_run.Streams(api, program)
                _attach(evaluator, rt)
                api.reset_peak_memory_stats()
                if mode == "eager":
                    timing = cuda_run.time_eager(rt, evaluator, warmup=warmup, repeats=repeats,
                                                 deadline=deadline)
                    outputs, result = evaluator.outputs(), evaluator.result()
                else:
                    timing, captured = cuda_run.time_graph(rt, evaluator, warmup=warmup,
                                                           repeats=repeats, deadline=deadline)
                    outputs, result = captured.outputs, captured.result
                api.synchronize()
                peak = int(api.max_memory_allocated())
                notes["barriers_as_joins"] = rt.barriers_as_joins
                notes["streams_folded"] = rt.folded
                notes["streams_shared_with_others"] = rt.shared_with_others
        got = to_numpy(outputs)
        storages = {v.untyped_storage().data_ptr(): v.untyped_storage().nbytes()
                    for v in evaluator.live_tensors()}
        live = int(sum(storages.values()))
        what = f"executor 'torch', policy {schedule.policy!r} ({ran}, {precision})"
        if verify and isinstance(evaluator, CallEvaluator):
            notes.update(check_against_model(evaluator.program, result, inputs,
                                             device=_tensor_device(dev), precision=precision,
                                             what=what))
    if verify and not isinstance(evaluator, CallEvaluator):
        want = run_outputs(schedule_serial(schedule.graph), seed=seed, precision=precision,
                           device=dev, inputs=inputs)
        compare_outputs(got, want, what=what)
    info = device_info(dev, _cuda_api())
    released = isinstance(evaluator, CallEvaluator)
    meta: dict[str, Any] = {
        "executor": "torch", "mode": ran, "requested_mode": mode, "precision": precision,
        "dtype": str(dtype_of(precision)).replace("torch.", ""), "repeats": repeats,
        "warmup": warmup, "seed": seed, **makespan_stats(timing.spans_us),
        "timeline": timing.timeline, "timeline_makespan_us": max(timing.end_us, default=0.0),
        "host_us_median": float(np.median(timing.host_us)) if timing.host_us else None,
        "peak_memory_bytes": peak, "live_bytes": live, "torch_device": dev,
        "memory_note": ("a value is freed after its last reader, reads on other streams "
                        "recorded (record_stream)" if released else
                        "every tensor is kept until the run ends (no frees between streams)"),
        "device_info": info, "simulated_device": spec.name if spec is not None else None,
        "barrier_kind": program.barrier_kind, "streams": len(program.streams),
        "syncs": program.n_waits, "events": len(program.sources),
        "barriers": program.n_barriers, "verified": bool(verify), **provenance, **notes,
        **timing.notes,
    }
    if return_outputs:
        meta["outputs"] = (_detached(result) if schedule.graph.program is not None else got)
    df = trace_frame(schedule, timing, spec=spec, device_column="cpu" if dev == "cpu" else "gpu")
    return Trace(df, graph=schedule.graph, policy=schedule.policy, device=str(info["name"]),
                 executor="torch", mode=ran, schedule=schedule, meta=meta)


def _detached(value: Any) -> Any:
    """``value`` with every tensor detached (same nesting)."""
    from torch.utils._pytree import tree_map

    return tree_map(lambda v: v.detach() if hasattr(v, "detach") else v, value)


__all__ = ["MODES", "precision_flags", "probe", "resolve_device", "run", "run_outputs"]
