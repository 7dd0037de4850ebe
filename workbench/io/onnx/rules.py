"""ONNX op type -> (op kind, shape-cost rule): :data:`RULES`.

The cost functions themselves (FLOPs, bytes and thread blocks from tensor shapes, the builders'
conventions) live in :mod:`workbench.ops.costs`, shared with :mod:`workbench.io.torch.fx`,
:mod:`workbench.io.traces.execution_trace` and the model builders; this module adapts them to ONNX
nodes.  The rules read the node's attributes in the op vocabulary
(:mod:`workbench.ops.attrs`: ``kernel``, ``trans_a``, ``window``), as
:mod:`workbench.io.onnx.attrs` converted them.  Every rule is O(rank of its tensors).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.ops import ONNX_ALIASES, ONNX_COSTS, OPS
from workbench.ops.costs import MAX_ELEMENTS as MAX_ELEMENTS  # re-exported
from workbench.ops.costs import VIEW_COST as VIEW_COST  # re-exported
from workbench.ops.costs import Info as Info  # re-exported
from workbench.ops.costs import Rule as Rule  # re-exported
from workbench.ops.costs import ShapeCost as ShapeCost  # re-exported
from workbench.ops.costs import TensorInfo as TensorInfo  # re-exported
from workbench.ops.costs import default_cost as default_cost  # re-exported
from workbench.ops.costs import (
    elementwise_cost,
    first_of,
)

# ------------------------------------------------------------------------- rules per ONNX op type










def _unary(per_element: float) -> Rule:
    def rule(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
        return elementwise_cost(first_of(outs), ins, outs, per_element=per_element)
    return rule






















def _camel_to_snake(name: str) -> str:
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower() or "op"


def kind_of(op_type: str) -> str:
    """The op kind an ONNX op type imports as: the table's alias, else its snake_case spelling.

    >>> kind_of("Conv"), kind_of("LeakyRelu")
    ('conv2d', 'leaky_relu')
    """
    return ONNX_ALIASES.get(op_type) or _camel_to_snake(op_type)


#: ONNX op types costed per output element (:func:`_unary`): every ONNX type a kind of the table
#: lists (``OpKind.onnx``) when the kind counts FLOPs per element (``flops_per_element``:
#: arithmetic and simple maps 1, clip and leaky relu 2, exp-based maps 3, sigmoid 4, tanh 5,
#: gelu 8; batch norm 2, layer/instance/group norm 8, softmax 5, log-softmax 6) and the type has
#: no rule of its own (:data:`workbench.ops.ONNX_COSTS`, the kinds' ``onnx_cost``).
_PER_ELEMENT: dict[str, tuple[str, Rule]] = {
    t: (name, _unary(info.flops_per_element)) for name, info in OPS.items()
    if info.flops_per_element is not None for t in info.onnx if t not in ONNX_COSTS}

#: ONNX op type -> (op kind, cost rule).
RULES: dict[str, tuple[str, Rule]] = {
    **{t: (kind_of(t), rule) for t, rule in ONNX_COSTS.items()},
    **_PER_ELEMENT,
}

VIEW_OP_TYPES = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})
CONSTANT_OP_TYPES = frozenset({"Constant", "ConstantOfShape"})

