"""A model run under a schedule, as a ``torch.nn.Module`` that computes what the model computes.

:class:`ScheduledModule` wraps a model and a :class:`~workbench.values.schedule.Schedule` of the
graph imported from it (:func:`workbench.io.from_torch`, whose program holds the model's own
calls).  Its ``forward`` takes what the model takes, positionally or by keyword (matched to the
traced example by the model's signature), and returns what the model returns:

* **CUDA, ``mode="graph"``**: the schedule's multi-stream run (one ``torch.cuda.Stream`` per
  schedule stream, events for syncs, joins for barriers; :mod:`workbench.executors.torch_exec.cuda`)
  is captured once as one CUDA graph over static input tensors; each call copies the new inputs
  into them (an input that *is* the static tensor, such as a parameter handed in by
  ``torch.compile``, is not copied), replays the graph and returns clones of its outputs, so a
  later call does not overwrite what an earlier one returned; inputs the model writes in place
  (``x.add_(1)``) are copied back into the caller's tensors after the replay.
* **CUDA, ``mode="eager"``**: each call issues the schedule on the streams.
* **CPU**: each call runs the ops in the schedule's issue order (one CPU has no streams).

Every call is ordered after the caller's current stream and before its later work (the
launching stream waits on it; it waits on the launching stream), so inputs produced just before
the call and outputs used just after it are safe.  The model's own module is kept
(``self.model``), so ``state_dict``, ``.eval()`` and parameter updates in place reach it; the
captured graph reads the parameters where they are, so replacing a parameter tensor (not
updating it in place) needs a new :func:`workbench.accelerate`.

Calls the schedule was not made for run the model itself, each kind with one warning line (the
first time): arguments laid out otherwise than the example's (an optional argument added or left
out: :class:`~workbench.io.torch.program.ArgumentsDiffer`); and calls with grad mode on where an
input or a parameter requires grad, so that autograd records them (the schedule runs under
``torch.no_grad()``: its outputs would carry no ``grad_fn``).  Inputs of other shapes, dtypes or
devices are *specialised* when the module was given a ``specialise`` function
(:func:`workbench.accelerate` gives one): a module for that input signature is built on its
first call with that call's inputs (traced, scheduled, verified) and kept, at most
:data:`MAX_SPECIALISATIONS` of them, the least recently used dropped first; without one, such
calls run the model itself.  torch is imported at this module's import; the package imports this
module only when a model is accelerated.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import torch
from torch.utils._pytree import tree_leaves, tree_map

from workbench._checks import first_line, warn_line
from workbench.executors.torch_exec import cuda as cuda_run
from workbench.executors.torch_exec.calls import CallEvaluator
from workbench.executors.torch_exec.host import run_once
from workbench.executors.torch_exec.program import build_program
from workbench.executors.torch_exec.runner import precision_flags
from workbench.io.torch.program import ArgumentsDiffer, Call, TorchProgram
from workbench.values.schedule import Schedule

#: Input signatures a module keeps a specialisation for (least recently used dropped first).
MAX_SPECIALISATIONS = 8
Signature = tuple[Any, ...]


def signature(values: Sequence[Any]) -> Signature:
    """What a call's flattened inputs must match: each tensor's shape, dtype and device, each
    other value itself."""
    return tuple((tuple(v.shape), v.dtype, v.device) if isinstance(v, torch.Tensor)
                 else ("=", _hashable(v)) for v in values)


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def is_static_input(value: Any) -> bool:
    """Whether an input is the model's own state rather than data: a parameter, or a tensor
    TorchDynamo marks static (the weights it hands a backend as inputs)."""
    return isinstance(value, torch.nn.Parameter) or getattr(
        value, "_dynamo_static_input_type", None) is not None


def records_grad(values: Any, model: Any = None) -> bool:
    """Whether autograd would record a call: grad mode is on and an input tensor (inside
    ``values``) or a parameter of ``model`` requires grad."""
    if not torch.is_grad_enabled():
        return False
    if any(isinstance(v, torch.Tensor) and v.requires_grad for v in tree_leaves(values)):
        return True
    return model is not None and any(p.requires_grad for p in model.parameters())


class Notes:
    """One warning line per kind of note, the first time (``where``: the warning's origin)."""

    def __init__(self, where: str = "workbench.accelerate") -> None:
        self.where = where
        self.said: set[str] = set()

    def say(self, kind: str, text: str) -> None:
        if kind not in self.said:
            self.said.add(kind)
            warn_line(text, self.where)


class Specialisations:
    """What ``build(*args)`` made, by key, at most ``limit`` of them: a key seen before gets
    its module back (and becomes the most recently used); a new one is built, and past the
    limit the least recently used is dropped.  O(1) per lookup."""

    def __init__(self, build: Callable[..., Any], limit: int = MAX_SPECIALISATIONS) -> None:
        self.build = build
        self.limit = limit
        self.built: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable, *args: Any) -> Any:
        if key in self.built:
            self.built.move_to_end(key)
            return self.built[key]
        made = self.build(*args)
        self.built[key] = made
        while len(self.built) > self.limit:
            self.built.popitem(last=False)
        return made


class ScheduledModule(torch.nn.Module):
    """``model`` run under ``schedule`` (see the module docstring).

    ``example``: the arguments the schedule was made (and, on CUDA with ``mode="graph"``,
    captured) for: a tuple of positional arguments or a
    :class:`~workbench.io.torch.program.Call`; ``device``: where it runs (the model's);
    ``precision``: ``None`` (torch's flags as they are), ``"fp32"`` or ``"tf32"`` (TF32 off / on
    and cuDNN's heuristics for the calls, as
    :func:`~workbench.executors.torch_exec.runner.precision_flags` sets them for the measured
    runs).  ``specialise(call)``: builds the module for a call of another input signature (see
    the module docstring; ``None``: such calls run the model itself).  Attributes:
    ``schedule``, ``policy``, ``mode`` (what runs: ``"graph"``, ``"eager"`` or ``"cpu"``),
    ``comparison`` (set by :func:`workbench.accelerate` when it measured the choice),
    ``reason`` (why it was chosen, when it was measured), ``specialisations`` (the modules
    built for other input signatures).
    ``cuda``: the ``torch.cuda`` to issue on (default: torch's own on a CUDA device, none on
    the CPU); the tests pass a recording fake with ``device="cpu"`` tensors.
    """

    def __init__(self, model: Any, schedule: Schedule, example: Any, *,
                 device: Any, mode: str = "graph", precision: str | None = None,
                 warmup: int = 2, cuda: Any = None,
                 specialise: Callable[[Call], Any] | None = None) -> None:
        super().__init__()
        program = schedule.graph.program
        if not isinstance(program, TorchProgram):
            raise TypeError("ScheduledModule needs a schedule of a graph imported from a "
                            "PyTorch module (workbench.io.from_torch)")
        self.model = model
        self.schedule = schedule
        self.policy = schedule.policy
        self.comparison: Any = None
        self.reason: str | None = None
        self.device = torch.device(device)
        self.precision = precision
        self._program = program
        self._issue = build_program(schedule)
        flat = list(program.graph_inputs(Call.of(example)).values())
        self._signature = signature(flat)
        self._written = program.written_inputs()
        self._notes = Notes()
        self.specialise = specialise
        self.specialisations = Specialisations(self._specialised)
        api: Any = cuda if cuda is not None else (
            torch.cuda if self.device.type == "cuda" else None)
        self._cuda = api
        on_cuda = api is not None
        self.mode = ("graph" if mode == "graph" else "eager") if on_cuda else "cpu"
        static = [self._static(v) for v in flat]
        self._static_inputs = static
        self._evaluator = CallEvaluator(schedule.graph, program,
                                        dict(zip(program.input_names, static, strict=True)),
                                        module=program.module_on(self.device),
                                        device=self.device)
        self._streams: cuda_run.Streams | None = None
        self._captured: cuda_run.Captured | None = None
        if on_cuda:
            self._streams = cuda_run.Streams(api, self._issue)
            self._evaluator.streams = self._streams
            if self.mode == "graph":
                self._capture(warmup)

    @staticmethod
    def _static(value: Any) -> Any:
        """A static input: a parameter or buffer handed in as an input is itself; another
        tensor is cloned (its storage is the capture's to keep)."""
        if not isinstance(value, torch.Tensor) or is_static_input(value):
            return value
        return value.detach().clone()

    def _capture(self, warmup: int) -> None:
        """Warm up, then capture one run (whatever fails inside the capture is the error
        raised, the capture-end error noted in it: :func:`~workbench.executors.torch_exec.
        cuda.capture`)."""
        rt = self._streams
        assert rt is not None
        cuda = self._cuda
        with torch.no_grad(), precision_flags(self.precision):
            rt.launch.wait_stream(cuda.current_stream())
            for _ in range(max(1, warmup)):  # lazy library handles and workspaces first
                self._evaluator.start()
                cuda_run.issue(rt, self._evaluator.run_op)
            cuda.synchronize()
            self._captured = cuda_run.capture(rt, self._evaluator)
            cuda.synchronize()

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        name = self._program.name
        if records_grad((args, kwargs), self.model):
            self._notes.say("grad", f"{name}: grad mode is on and an input or parameter "
                                    f"requires grad: running the model itself so that "
                                    f"autograd records the call (call it under "
                                    f"torch.no_grad() or torch.inference_mode() to run the "
                                    f"schedule)")
            return self.model(*args, **kwargs)
        try:
            flat = list(self._program.graph_inputs(args, kwargs).values())
        except ArgumentsDiffer as exc:
            self._notes.say("arguments", f"{name}: {first_line(exc)}; running the model "
                                         f"itself for such calls")
            return self.model(*args, **kwargs)
        key = signature(flat)
        if key != self._signature:
            if self.specialise is None:
                self._notes.say("shapes", f"{name}: inputs differ from the example the "
                                          f"schedule was made for (shapes, dtypes or devices); "
                                          f"running the model itself for such calls")
                return self.model(*args, **kwargs)
            return self.specialisations.get(key, Call(args, kwargs))(*args, **kwargs)
        with torch.no_grad(), precision_flags(self.precision):
            if self.mode == "cpu":
                return self._run_cpu(flat)
            return self._run_cuda(flat)

    def _specialised(self, call: Call) -> Any:
        """The module for ``call``'s input signature (:attr:`specialise`), else the model
        itself with one line saying why."""
        assert self.specialise is not None
        try:
            return self.specialise(call)
        except Exception as exc:  # noqa: BLE001 - any failure: the model itself, never raise
            self._notes.say("specialise", f"{self._program.name}: cannot make the schedule "
                                          f"for inputs of other shapes ({first_line(exc)}); "
                                          f"running the model itself for them")
            return self.model

    def _run_cpu(self, flat: list[Any]) -> Any:
        ev = self._evaluator
        ev.inputs = dict(zip(self._program.input_names, flat, strict=True))
        run_once(self._issue, ev)
        return ev.result()

    def _run_cuda(self, flat: list[Any]) -> Any:
        rt = self._streams
        assert rt is not None
        caller = self._cuda.current_stream()
        if self._captured is None:
            ev = self._evaluator
            ev.inputs = dict(zip(self._program.input_names, flat, strict=True))
            rt.launch.wait_stream(caller)
            ev.start()
            cuda_run.issue(rt, ev.run_op)
            caller.wait_stream(rt.launch)
            result = ev.result()
            for t in _leaves(result):  # freed later by the caller: not reused before it is done
                rt.record_use(t, caller)
            return result
        for static, value in zip(self._static_inputs, flat, strict=True):
            if isinstance(static, torch.Tensor) and static.data_ptr() != value.data_ptr():
                with self._cuda.stream(caller):  # before the replay, which waits on it
                    static.copy_(value)
        rt.launch.wait_stream(caller)
        cuda_run.replay(rt, self._captured)
        caller.wait_stream(rt.launch)
        for i in self._written:  # what the model writes in its inputs reaches the caller's
            static, value = self._static_inputs[i], flat[i]
            if isinstance(value, torch.Tensor) and isinstance(static, torch.Tensor) \
                    and static.data_ptr() != value.data_ptr():
                with self._cuda.stream(caller):
                    value.copy_(static)
        return tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v,
                        self._captured.result)

    def extra_repr(self) -> str:
        return f"policy={self.policy!r}, mode={self.mode!r}, device={str(self.device)!r}"


def _leaves(value: Any) -> list[Any]:
    return [v for v in tree_leaves(value) if isinstance(v, torch.Tensor)]


class ModelItself(torch.nn.Module):
    """The model itself, when no schedule beats it or it cannot be captured: ``forward`` calls
    it; ``reason`` says why, ``comparison`` holds the measurements when there were any."""

    def __init__(self, model: Any, reason: str) -> None:
        super().__init__()
        self.model = model
        self.reason = reason
        self.schedule: Schedule | None = None
        self.policy = "model"
        self.comparison: Any = None

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.model(*args, **kwargs)

    def extra_repr(self) -> str:
        return f"reason={self.reason!r}"


__all__ = ["MAX_SPECIALISATIONS", "ModelItself", "Notes", "ScheduledModule", "Specialisations",
           "is_static_input", "records_grad", "signature"]
