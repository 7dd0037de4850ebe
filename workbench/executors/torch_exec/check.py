"""A run of a traced model checked against the model itself.

:func:`check_against_model` calls the user's module (or, when its parameters live elsewhere, the
traced module on the run's device) on the same arguments and compares what it returns with what
the schedule's run returned, leaf by leaf: same structure, same shapes, and
``max |diff| / max |y|`` within the precision's tolerance.  Structures compare by what they
hold, not by their container types (:func:`leaves`): a ``dict``, fx's ``immutable_dict``, an
``OrderedDict`` and a Hugging Face ``ModelOutput`` with the same keys are one structure, a
dataclass is the mapping of its fields, a list or tuple (named or not) its items in order.
O(output elements).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from workbench.errors import OptionError, ScheduleError
from workbench.executors.torch_exec.values import as_tensor, cast_dtype
from workbench.io.torch.program import Call, TorchProgram
from workbench.ops.tensors import torch_module

#: ``max |diff| / max |y|`` a run may differ from the model by, per precision.
TOLERANCE = {None: 1e-4, "fp32": 1e-4, "tf32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}


#: What a difference beyond the tolerance means, when the model's own outputs are the same
#: from call to call (:func:`workbench.orchestration.accelerate` checks that before blaming
#: the schedule).
WHY = "a missing sync or a stream race"


def leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """``(path, leaf)`` of every tensor or other value inside ``value``, in order: mappings by
    key (``.key``), dataclasses by field, lists and tuples by position (``[i]``); tensors and
    anything else are leaves.

    >>> leaves({"a": (1, 2), "b": None})
    [('.a[0]', 1), ('.a[1]', 2), ('.b', None)]
    """
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return [(path, value)]
    if isinstance(value, Mapping):
        return [leaf for k, v in value.items() for leaf in leaves(v, f"{path}.{k}")]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [leaf for f in dataclasses.fields(value)
                for leaf in leaves(getattr(value, f.name), f"{path}.{f.name}")]
    if isinstance(value, (list, tuple)):
        return [leaf for i, v in enumerate(value) for leaf in leaves(v, f"{path}[{i}]")]
    return [(path, value)]


def compare_results(got: Any, want: Any, *, tolerance: float, what: str) -> dict[str, Any]:
    """``{"max_rel_diff": ..., "bitwise": ...}`` of ``got`` against ``want`` (nested tensors,
    structures compared by :func:`leaves`); a one-line :class:`ScheduleError` naming the first
    leaf that differs in structure, shape or by more than ``tolerance`` (relative to that
    leaf's largest finite magnitude; NaN where the model returns NaN, and the same infinities,
    are equal)."""
    torch = torch_module()
    got_leaves, want_leaves = leaves(got), leaves(want)
    got_paths, want_paths = [p for p, _ in got_leaves], [p for p, _ in want_leaves]
    if got_paths != want_paths:
        raise ScheduleError(f"{what}: returns {_paths(got_paths)}, the model returns "
                            f"{_paths(want_paths)}")
    worst, bitwise = 0.0, True
    for (k, a), (_, b) in zip(got_leaves, want_leaves, strict=True):
        k = k or "output"
        if not isinstance(b, torch.Tensor) or not isinstance(a, torch.Tensor):
            if not _same_value(a, b):
                raise ScheduleError(f"{what}: {k} is {a!r:.80}, the model returns {b!r:.80}")
            continue
        if tuple(a.shape) != tuple(b.shape):
            raise ScheduleError(f"{what}: {k} has shape {tuple(a.shape)}, the "
                                f"model's {tuple(b.shape)}")
        x, y = a.detach().double().cpu(), b.detach().double().cpu()
        same = (x == y) | (x.isnan() & y.isnan())  # NaN where the model has NaN, inf as inf
        bitwise = bitwise and a.dtype == b.dtype and bool(same.all())
        if x.numel() == 0:
            continue
        finite = y[y.isfinite()]
        scale = float(finite.abs().max()) if finite.numel() else 0.0
        diff = float(torch.where(same, 0.0, (x - y).abs()).max())
        rel = diff / scale if scale > 0 else diff
        if not rel <= tolerance:  # NaN fails too
            raise ScheduleError(f"{what}: {k} differs from the model's by {rel:.3g} of its "
                                f"largest value (tolerance {tolerance:g}): {WHY}")
        worst = max(worst, rel)
    return {"max_rel_diff": worst, "bitwise": bitwise}


def _paths(paths: list[str]) -> str:
    shown = ", ".join(p or "one value" for p in paths[:6])
    return f"{len(paths)} leaves ({shown}{', ...' if len(paths) > 6 else ''})"


def _same_value(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values without a truth value (arrays): compare reprs
        return repr(a) == repr(b)


def check_against_model(program: TorchProgram, result: Any, inputs: Any, *, device: str,
                        precision: str | None, what: str) -> dict[str, Any]:
    """Call the model on ``inputs`` (``None``: the traced example; a tuple, a tensor or a
    :class:`~workbench.io.torch.program.Call`) and compare with ``result`` (see
    :func:`compare_results`; tolerance :data:`TOLERANCE` of ``precision``)."""
    from torch.utils._pytree import tree_map

    args = program.example if inputs is None else inputs
    if isinstance(args, Mapping):
        raise OptionError("verify needs the model's arguments as it takes them (a tensor, a "
                          "tuple or a Call), not a mapping by input name")
    call = Call.of(args)
    dtype = cast_dtype(precision)
    torch = torch_module()
    moved = tree_map(lambda v: as_tensor(v, device=device, dtype=dtype)
                     if isinstance(v, torch.Tensor) else v, (call.args, call.kwargs))
    want = program.reference_module(device, dtype)(*moved[0], **moved[1])
    return compare_results(result, want, tolerance=TOLERANCE[precision], what=what)


__all__ = ["TOLERANCE", "check_against_model", "compare_results", "leaves"]
