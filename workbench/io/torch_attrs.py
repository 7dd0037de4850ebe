"""The attributes an op imported from PyTorch keeps: what a module or a call was configured with.

:func:`module_attrs` reads an ``nn.Module``'s configuration (``kernel_size``, ``stride``,
``groups``, ``eps`` ...); :func:`call_attrs` reads the same from a functional or aten call's
arguments, positional or keyword (``aten.conv2d(x, w, b, stride, padding, dilation, groups)``,
pooling windows).  :func:`workbench.io.fx.from_torch` stores them in ``Op.attrs``; the cost rules
and the torch forms read them.  Values are plain Python (numbers, lists, strings).  O(arguments).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Module configuration attributes kept in ``Op.attrs`` (when the module has them).
MODULE_ATTRS = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                "groups", "in_features", "out_features", "eps", "output_size", "p",
                "normalized_shape", "num_features", "negative_slope", "dim")

#: Positional parameters of functional calls whose values the cost model reads (after the
#: tensor arguments): ``F.conv2d(x, w, b, stride, padding, dilation, groups)``, pooling windows.
CALL_PARAMS: dict[str, tuple[str, ...]] = {
    "conv1d": ("", "", "", "stride", "padding", "dilation", "groups"),
    "conv2d": ("", "", "", "stride", "padding", "dilation", "groups"),
    "conv3d": ("", "", "", "stride", "padding", "dilation", "groups"),
    "max_pool2d": ("", "kernel_size", "stride", "padding"),
    "avg_pool2d": ("", "kernel_size", "stride", "padding"),
}


def plain(value: Any) -> Any:
    """A configuration value as plain Python (tuples become lists, other objects their text)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    return str(value)


def module_attrs(module: Any) -> dict[str, Any]:
    """The configuration of a called ``nn.Module`` (:data:`MODULE_ATTRS` it has)."""
    return {a: plain(getattr(module, a)) for a in MODULE_ATTRS if hasattr(module, a)}


def call_attrs(label: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``stride``/``groups``/``kernel_size``... of a functional call, positional or keyword."""
    names = CALL_PARAMS.get(label, ())
    found = {name: args[i] for i, name in enumerate(names) if name and i < len(args)}
    found.update({k: v for k, v in kwargs.items() if k in names})
    return {k: plain(v) for k, v in found.items()
            if isinstance(v, (int, list, tuple)) and not isinstance(v, bool)}


__all__ = ["CALL_PARAMS", "MODULE_ATTRS", "call_attrs", "module_attrs", "plain"]
