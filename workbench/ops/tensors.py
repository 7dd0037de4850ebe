"""The torch side every family shares: the torch-form signature and torch itself, imported lazily.

A kind's torch form (``OpKind.torch_form``) computes the same function as its NumPy reference
with PyTorch's kernels, ``(op, tensors, shape_of) -> tensors`` (:data:`TorchForm`); the torch
executor (:mod:`workbench.executors.torch_exec`) runs every op through its kind's form, so what it
times on a GPU is what cuDNN / cuBLAS / ATen run for ``torch.nn.functional`` calls (the calls
follow the H200 measurements, ``shared/data/h200_measured/README.md``).  Each form reads the
attributes exactly as the reference does (checked kind by kind in ``tests/test_torch_forms.py``).

torch is imported through :func:`torch_module` (one cached import) when a form first runs, never
at module import: the core stays light (``tests/test_import_hygiene.py``).  Values keep their
dtype (float32, or float16 / bfloat16 under those precisions; integers stay integers).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from workbench.errors import OptionError
from workbench.ops.arrays import ShapeOf

# ------------------------------------------------------------------------ torch forms


Tensor = Any  # torch.Tensor; torch itself is imported lazily


TorchForm = Callable[[Any, list[Any], ShapeOf], list[Any]]


TorchUnary = Callable[[Any], Any]


@cache
def torch_module() -> Any:
    """``torch``, imported once on first use; a one-line :class:`OptionError` without it."""
    try:
        import torch
    except ImportError:
        raise OptionError("the torch forms need PyTorch; pip install torch "
                          "(a CPU build is enough off a GPU)") from None
    return torch


def _f() -> Any:
    return torch_module().nn.functional


def _torch_pair(value: Any, default: int) -> tuple[int, int]:
    """``(h, w)`` from an int, a pair or ``None`` (``default``), as the reference reads them."""
    if value is None:
        return (default, default)
    if isinstance(value, int):
        return (value, value)
    try:
        return (int(value[0]), int(value[1]))
    except TypeError:
        return (int(value), int(value))


def _torch_pads(begin: tuple[int, ...], end: tuple[int, ...]) -> list[int]:
    """Per-side padding of the trailing axes in ``F.pad``'s order (last axis first)."""
    return [p for b, e in zip(reversed(begin), reversed(end), strict=True) for p in (b, e)]

# ------------------------------------------------------------------------ torch forms


def torch_dtype(name: Any) -> Any:
    torch = torch_module()
    value = getattr(torch, str(name or "float32"), None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return value
