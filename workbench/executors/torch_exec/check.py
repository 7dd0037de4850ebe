"""A run of a traced model checked against the model itself.

:func:`check_against_model` calls the user's module (or, when its parameters live elsewhere, the
traced module on the run's device) on the same arguments and compares what it returns with what
the schedule's run returned, leaf by leaf (``torch.utils._pytree``): same structure, same
shapes, and ``max |diff| / max |y|`` within the precision's tolerance.  O(output elements).
"""

from __future__ import annotations

from typing import Any

from workbench.errors import OptionError, ScheduleError
from workbench.executors.torch_exec.values import as_tensor, cast_dtype
from workbench.io.torch_program import TorchProgram
from workbench.values.op_torch import torch_module

#: ``max |diff| / max |y|`` a run may differ from the model by, per precision.
TOLERANCE = {None: 1e-4, "fp32": 1e-4, "tf32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}


def compare_results(got: Any, want: Any, *, tolerance: float, what: str) -> dict[str, Any]:
    """``{"max_rel_diff": ..., "bitwise": ...}`` of ``got`` against ``want`` (nested tensors);
    a one-line :class:`ScheduleError` naming the first leaf that differs in structure, shape or
    by more than ``tolerance`` (relative to that leaf's largest magnitude)."""
    from torch.utils._pytree import tree_flatten

    torch = torch_module()
    got_leaves, got_spec = tree_flatten(got)
    want_leaves, want_spec = tree_flatten(want)
    if got_spec != want_spec:
        raise ScheduleError(f"{what}: returns {got_spec}, the model returns {want_spec}")
    worst, bitwise = 0.0, True
    for k, (a, b) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        if not isinstance(b, torch.Tensor):
            if a != b:
                raise ScheduleError(f"{what}: output leaf {k} is {a!r}, the model returns {b!r}")
            continue
        if tuple(a.shape) != tuple(b.shape):
            raise ScheduleError(f"{what}: output leaf {k} has shape {tuple(a.shape)}, the "
                                f"model's {tuple(b.shape)}")
        x, y = a.detach().double().cpu(), b.detach().double().cpu()
        bitwise = bitwise and a.dtype == b.dtype and bool(torch.equal(a.detach().cpu(),
                                                                      b.detach().cpu()))
        if x.numel() == 0:
            continue
        scale = float(y.abs().max())
        diff = float((x - y).abs().max())
        rel = diff / scale if scale > 0 else diff
        if not rel <= tolerance:  # NaN fails too
            raise ScheduleError(f"{what}: output leaf {k} differs from the model's by "
                                f"{rel:.3g} of its largest value (tolerance {tolerance:g}): a "
                                f"missing sync or a stream race")
        worst = max(worst, rel)
    return {"max_rel_diff": worst, "bitwise": bitwise}


def check_against_model(program: TorchProgram, result: Any, inputs: Any, *, device: str,
                        precision: str | None, what: str) -> dict[str, Any]:
    """Call the model on ``inputs`` (``None``: the traced example) and compare with ``result``
    (see :func:`compare_results`; tolerance :data:`TOLERANCE` of ``precision``)."""
    from torch.utils._pytree import tree_map

    args = program.example if inputs is None else inputs
    if isinstance(args, dict):
        raise OptionError("verify needs the model's arguments as it takes them (a tensor or a "
                          "tuple), not a mapping by input name")
    call = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    dtype = cast_dtype(precision)
    torch = torch_module()
    moved = tree_map(lambda v: as_tensor(v, device=device, dtype=dtype)
                     if isinstance(v, torch.Tensor) else v, call)
    want = program.reference_module(device, dtype)(*moved)
    return compare_results(result, want, tolerance=TOLERANCE[precision], what=what)


__all__ = ["TOLERANCE", "check_against_model", "compare_results"]
