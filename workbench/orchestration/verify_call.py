"""Checking an accelerated model against the model itself without touching the caller's state:
runs on copies of the inputs, the model's buffers and random generators put back after every
run (:class:`KeptState`), and a perturbed copy of the inputs beside the example
(:func:`verify`).  Used by :func:`workbench.accelerate` and the ``torch.compile`` backend; torch
is imported inside the functions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from workbench.errors import ScheduleError


class KeptState:
    """The state runs of a model may change, saved so it can be put back: every buffer of
    ``modules`` (the buffer *objects* too, in case a forward assigns a new one), the tensors
    among ``tensors`` that are not parameters (buffers TorchDynamo hands a backend as inputs),
    and the random number generators (dropout draws from them).  :meth:`restore` puts it all
    back, as often as needed.  Parameters are not saved (a forward does not update them)."""

    def __init__(self, modules: Iterable[Any], tensors: Iterable[Any] = ()) -> None:
        torch = _torch()
        slots: dict[tuple[int, str], tuple[Any, str, Any]] = {}
        for module in modules:
            for sub in (module.modules() if module is not None else ()):
                for key, buf in sub._buffers.items():
                    if buf is not None:
                        slots[(id(sub), key)] = (sub, key, buf)
        loose = {id(t): t for t in tensors if isinstance(t, torch.Tensor)
                 and not isinstance(t, torch.nn.Parameter)}
        with torch.no_grad():
            self.slots = [(sub, key, buf, buf.detach().clone())
                          for sub, key, buf in slots.values()]
            self.loose = [(t, t.detach().clone()) for t in loose.values()]
        self.rng = torch.random.get_rng_state()
        self.cuda_rng = (torch.cuda.get_rng_state_all() if torch.cuda.is_available()
                         and torch.cuda.is_initialized() else None)

    def restore(self) -> None:
        torch = _torch()
        with torch.no_grad():
            for sub, key, buf, saved in self.slots:
                sub._buffers[key] = buf
                buf.copy_(saved)
            for t, saved in self.loose:
                t.copy_(saved)
        torch.random.set_rng_state(self.rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)


def state_tensors(call: Any) -> list[Any]:
    """The model's own state among a call's arguments (TorchDynamo hands a backend the
    parameters and buffers as inputs): the data inputs are never run on, copies are."""
    from torch.utils._pytree import tree_leaves

    from workbench.executors.torch_exec.module import is_static_input

    return [v for v in tree_leaves((call.args, call.kwargs)) if is_static_input(v)]


def copied(call: Any, perturb: bool = False) -> Any:
    """``call`` with every data tensor copied (the model's own state, parameters and tensors
    TorchDynamo marks static, stays itself); ``perturb``: floating values ``x * 0.5 + 0.1``
    and integer ones rolled by one along their last dimension (the example's values, in other
    places), so that a schedule that ignores its inputs is caught."""
    from torch.utils._pytree import tree_map

    from workbench.executors.torch_exec.module import is_static_input
    from workbench.io.torch.program import Call

    torch = _torch()

    def copy(v: Any) -> Any:
        if not isinstance(v, torch.Tensor) or is_static_input(v):
            return v
        t = v.detach().clone()
        if perturb and t.is_floating_point():
            return t * 0.5 + 0.1
        if perturb and t.dtype != torch.bool and t.dim() > 0 and t.shape[-1] > 1:
            return torch.roll(t, 1, dims=-1)
        return t

    return Call(tuple(tree_map(copy, tuple(call.args))), dict(tree_map(copy, dict(call.kwargs))))


def verify(fast: Any, model: Any, call: Any, precision: str | None,
            state: KeptState) -> None:
    """The accelerated module's outputs equal the model's (within the precision's tolerance)
    on the example and on a perturbed copy of it (:func:`_copied`), each run on copies of the
    inputs from the same saved state (``state``, put back after every run); else a one-line
    ScheduleError, which names the model when its own outputs differ between two calls."""
    from workbench.executors.torch_exec.check import TOLERANCE, compare_results

    what = f"accelerated {type(model).__name__} ({fast.policy})"
    for inputs in (call, copied(call, perturb=True)):
        want = _run(model, inputs, precision, state)
        got = _run(fast, inputs, precision, state)
        try:
            compare_results(got, want, tolerance=TOLERANCE[precision], what=what)
        except ScheduleError:
            again = _run(model, inputs, precision, state)
            try:
                compare_results(again, want, tolerance=0.0, what=what)
            except ScheduleError:
                raise ScheduleError(f"{what}: the model's own outputs differ between two calls "
                                    f"on the same inputs and state (state it keeps elsewhere, "
                                    f"or random numbers drawn outside torch's generators), so "
                                    f"no schedule can be checked against it") from None
            raise


def _run(module: Any, call: Any, precision: str | None, state: KeptState) -> Any:
    """``module`` on copies of ``call`` under no_grad and the precision's flags; the state put
    back after."""
    from workbench.executors.torch_exec.runner import precision_flags

    torch = _torch()
    inputs = copied(call)
    try:
        with torch.no_grad(), precision_flags(precision):
            return module(*inputs.args, **inputs.kwargs)
    finally:
        state.restore()


def _torch() -> Any:
    from workbench.ops.tensors import torch_module

    return torch_module()


__all__ = ["KeptState", "copied", "state_tensors", "verify"]
