"""Small readers the families' torch-import conversions share: what a call's arguments are.

A conversion (``OpKind.torch_attrs``) reads a torch call's parameters by name and the shapes of
its tensor arguments; these helpers say whether a value is a number or a list of ints, the rank
of an argument, and torch's padding ``"same"``.  Imports nothing of the workbench.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: A tensor argument's shape (``None``: unknown).
Shape = Sequence[int] | None


INT64_MAX = (1 << 63) - 1


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_int_seq(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool)
                                                for x in v)


def rank_of(shapes: Sequence[Shape], k: int = 0) -> int:
    shape = shapes[k] if len(shapes) > k else None
    if shape is None:
        raise ValueError("shape unknown")
    return len(shape)


def operands(named: dict[str, Any]) -> dict[str, Any]:
    """A number operand as ``scalar`` (first: ``reverse``)."""
    a, b = named.get("input"), named.get("other")
    if is_number(b) and not is_number(a):
        return {"scalar": b}
    if is_number(a) and not is_number(b):
        return {"scalar": a, "reverse": True}
    return {}


def same_padding(kernel: Sequence[int], dilation: Sequence[int]) -> list[int]:
    """torch's ``padding="same"``: the total ``d*(k-1)`` split, the extra one at the end."""
    total = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
    begin = [t // 2 for t in total]
    end = [t - b for t, b in zip(total, begin, strict=True)]
    return begin if begin == end else [*begin, *end]


def plain(value: Any) -> Any:
    """A configuration value as plain Python (tuples become lists, dtypes their names, other
    objects their text)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    text = str(value)
    return text.removeprefix("torch.") if text.startswith("torch.") else text


__all__ = ["INT64_MAX", "Shape", "is_int_seq", "is_number", "operands", "plain", "rank_of",
           "same_padding"]
