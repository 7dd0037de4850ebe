"""The torch import's attribute conversions, one per torch call (or module type): the registry
the families fill.

:func:`workbench.io.torch.attrs.call_attrs` and :func:`~workbench.io.torch.attrs.module_attrs`
first rename the plain parameters the kind declares (``kernel_size`` -> ``kernel``, ``dim`` ->
``axis`` ...), then call the conversion the kind declares for the call's label
(``OpKind.torch_attrs``, collected in :data:`CONVERSIONS`: each family module keeps its kinds'
conversions beside them), for what a rename cannot say: torch's defaults written out
(``stride``, ``padding``, ``dilation`` of a convolution), ``padding="same"``,
``transpose(x, 1, 2)`` -> ``perm``, ``split`` -> ``sizes``, a number operand -> ``scalar``
(``reverse`` when it comes first, ``rsub``), ``linear`` -> ``trans_b``, ``interpolate``'s modes
in ONNX's terms, a recurrent call's hidden size read off its states.  A conversion sees the
call's parameters by torch name, the shapes of its tensor inputs and outputs (``None`` where
unknown) and the output's dtype name; it may raise on arguments torch would not pass (the caller
then keeps what the renames found).  Values are plain Python (:func:`plain`, re-exported by
:mod:`workbench.io.torch.attrs`).  O(arguments) each.

>>> CONVERSIONS["transpose"]({"dim0": 1, "dim1": 2}, [(2, 3, 4)], [], None)
{'perm': [0, 2, 1]}
>>> CONVERSIONS["conv1d"]({}, [(1, 2, 9), (4, 2, 3)], [], None)["kernel"]
[3]
"""

from __future__ import annotations

from collections.abc import Mapping

from workbench.ops import TORCH_CONVERSIONS
from workbench.ops.kind import TorchRule as Rule
from workbench.ops.readers import Shape
from workbench.ops.readers import plain as plain  # re-exported

#: Label (torch function / aten op name, or module type name) -> its conversion (the kinds'
#: ``torch_attrs``).
CONVERSIONS: Mapping[str, Rule] = TORCH_CONVERSIONS


__all__ = ["CONVERSIONS", "Rule", "Shape", "plain"]
