"""ONNX node attributes in the op vocabulary (:mod:`workbench.ops.attrs`).

:func:`vocabulary_attrs` renames a node's attributes into the names its kind declares
(``OpKind.attrs``), then applies the conversion its kind declares for the node's op type
(``OpKind.onnx_attrs``, collected in :data:`workbench.ops.ONNX_CONVERSIONS`: each family module
keeps its kinds' conversions beside them) with the view of the node a conversion reads
(:class:`Node`: shapes, constant inputs, opset).  The conversions together:
``kernel_shape``/``strides``/``pads``/``dilations``/``group`` become
``kernel``/``stride``/``padding``/``dilation``/``groups`` (``auto_pad`` resolved into explicit
padding from the shapes; symmetric padding as one value per axis, asymmetric explicit per side),
``transA``/``transB`` ``trans_a``/``trans_b``, ``epsilon`` ``eps``, ``to`` a dtype name, ...;
ONNX's defaults are written out (a pool's stride is 1, not its kernel; a batch norm's epsilon is
1e-5, not the builder's 1e-3; ``Transpose``'s ``perm`` is the reversed axes; ``Softmax``'s axis
depends on the opset), and constant inputs that configure the op (``Slice``'s starts/ends/axes/
steps, ``Split``'s sizes, ``Pad``'s pads, ``Resize``'s scales, the axes of reductions,
``Squeeze``/``Unsqueeze``, ``Tile``'s repeats, ``Clip``'s bounds) are lifted into attributes
from the values the import folded.  Attributes the vocabulary does not name (``momentum``,
``allowzero``, ...) are kept as they are; a value of the wrong type, or out of range
(``strides`` 0, negative ``pads``, ``group`` 0, a ``kernel_shape`` that disagrees with the weight),
is kept under the vocabulary's name, where the graph's one check of attributes
(:mod:`workbench.values.attr_checks`) refuses the file in one line naming the node.
Complexity: O(attributes + rank) per node.

>>> vocabulary_attrs("Conv", "conv2d", {"kernel_shape": [3, 3], "pads": [0, 0, 1, 1],
...                  "group": 1}, Node(("x", "w"), [(1, 3, 8, 8), (4, 3, 3, 3)], [None]))
{'kernel': [3, 3], 'padding': [0, 0, 1, 1], 'groups': 1, 'stride': [1, 1], 'dilation': [1, 1]}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.errors import FormatError
from workbench.ops import ONNX_CONVERSIONS, OPS
from workbench.ops.attrs import normalize_attrs, synonyms_of

Shape = tuple[int, ...] | None


@dataclass(frozen=True)
class Node:
    """What the conversion knows of a node: its input names (``""`` for an omitted optional
    input, as in the file), the input and output shapes (``None``: unknown), the values of
    constant inputs (by name), the opset, the output dtypes and the output names (``""`` for an
    omitted optional output; empty: not known)."""

    inputs: tuple[str, ...]
    in_shapes: Sequence[Shape]
    out_shapes: Sequence[Shape]
    values: Mapping[str, Any] = field(default_factory=dict)
    opset: int = 17
    out_dtypes: Sequence[str] = ()
    outputs: tuple[str, ...] = ()

    def shape(self, k: int) -> Shape:
        return self.in_shapes[k] if k < len(self.in_shapes) else None

    def const(self, k: int) -> Any:
        """The value of input ``k`` when it is a constant the import folded, else ``None``."""
        if k >= len(self.inputs) or not self.inputs[k]:
            return None
        value = self.values.get(self.inputs[k])
        return None if value is None else np.asarray(value)

    def ints(self, k: int) -> list[int] | None:
        value = self.const(k)
        if value is None or value.dtype.kind not in "iu" or value.size > 4096:
            return None
        return [int(v) for v in value.reshape(-1)]

    def floats(self, k: int) -> list[float] | None:
        value = self.const(k)
        if value is None or value.dtype.kind not in "iuf" or value.size > 4096:
            return None
        return [float(v) for v in value.reshape(-1)]

    def scalar(self, k: int) -> float | None:
        values = self.floats(k)
        return values[0] if values and len(values) == 1 else None




def vocabulary_attrs(op_type: str, kind: str, attrs: Mapping[str, Any], node: Node) -> dict[str,
                                                                                          Any]:
    """The attributes of an ONNX node of ``op_type`` (imported as ``kind``) in the vocabulary
    (module docstring).  Never raises: a malformed value is kept for the graph's check."""
    info = OPS.get(kind)
    if info is None:
        return dict(attrs)
    out: dict[str, Any] = {}
    wrong: dict[str, Any] = {}
    renames = synonyms_of(info.attrs)
    for key, value in attrs.items():  # one at a time: a bad value stays under its own name
        try:
            out.update(normalize_attrs(kind, info.attrs, {key: value}))
        except (FormatError, TypeError, ValueError):
            name = renames.get(key, key)
            if name in info.attrs:
                wrong[name] = value
            else:
                out[key] = value
    rule = ONNX_CONVERSIONS.get(op_type)
    if rule is not None:
        try:
            written = rule(out, node)
        except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError):
            return {**out, **wrong}  # a malformed node: its attributes stay as read
        out.update({k: v for k, v in written.items() if v is not None and k in info.attrs})
    # a value of the wrong type is kept under the vocabulary's name, where the graph's check of
    # attributes (workbench.values.attr_checks) refuses it in one line naming the node
    return {**out, **wrong}


# ------------------------------------------------------------------------ windows


# ------------------------------------------------------------------------ products and norms


# ------------------------------------------------------------------------ axes


# ------------------------------------------------------------------------ values


__all__ = ["Node", "vocabulary_attrs"]
