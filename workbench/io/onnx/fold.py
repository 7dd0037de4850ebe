"""Constant folding for the ONNX importer: which nodes compute only from weights.

A compiler (TensorRT, ONNX Runtime's graph optimiser, TVM's ``FoldConstant``) evaluates every node
whose inputs are all known before the first inference and stores the result as a weight, so such
a node never becomes a kernel.  :func:`weight_only_nodes` finds them in one pass over the nodes in
file order (ONNX requires topological order):

* a node with no inputs (``Constant``) or whose inputs are all initializers or outputs of nodes
  already folded (``ConstantOfShape`` of a stored shape, ``Identity``/``Cast``/``Reshape``/
  ``Unsqueeze``/``Transpose`` of a weight, batch-norm parameters pre-multiplied, ...);
* a ``Shape``/``Size`` of any tensor whose shape is static once the symbolic dimensions are set:
  shape arithmetic (``Shape -> Gather -> Concat -> Reshape``'s shape input) folds with it.

Random generators, control flow and ops of custom domains are never folded (their results are not
known ahead of the run).  Complexity: O(nodes + node inputs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

#: Op types whose result is not fixed ahead of the run, so they are never folded.
NOT_FOLDED = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                        "Multinomial", "Bernoulli", "If", "Loop", "Scan", "SequenceEmpty"})
#: Op types that read only the shape of their input.
SHAPE_OPS = frozenset({"Shape", "Size"})
STANDARD_DOMAINS = frozenset({"", "ai.onnx"})


class NodeLike(Protocol):
    @property
    def op_type(self) -> str: ...
    @property
    def domain(self) -> str: ...
    @property
    def inputs(self) -> tuple[str, ...]: ...
    @property
    def outputs(self) -> tuple[str, ...]: ...


def weight_only_nodes(nodes: Sequence[NodeLike], weights: Iterable[str],
                      static_shape: Callable[[str], bool]) -> tuple[set[int], set[str]]:
    """(indices of the nodes that fold, names of the values they make).

    ``weights`` are the values known before the run (initializers, outer-scope weights);
    ``static_shape(name)`` tells whether a value's shape is fully known.  O(nodes + inputs).

    >>> from types import SimpleNamespace as N
    >>> nodes = [N(op_type="Identity", domain="", inputs=("w",), outputs=("w2",)),
    ...          N(op_type="Conv", domain="", inputs=("x", "w2"), outputs=("y",)),
    ...          N(op_type="Shape", domain="", inputs=("y",), outputs=("s",))]
    >>> folded, made = weight_only_nodes(nodes, {"w"}, lambda name: name == "y")
    >>> sorted(folded), sorted(made)
    ([0, 2], ['s', 'w2'])
    """
    known = set(weights)
    folded: set[int] = set()
    made: set[str] = set()
    for i, node in enumerate(nodes):
        if node.op_type in NOT_FOLDED or node.domain not in STANDARD_DOMAINS:
            continue
        inputs = [t for t in node.inputs if t]
        if node.op_type in SHAPE_OPS:
            ok = bool(inputs) and (inputs[0] in known or static_shape(inputs[0]))
        else:
            ok = all(t in known for t in inputs)
        if ok:
            folded.add(i)
            outs = {t for t in node.outputs if t}
            made |= outs
            known |= outs
    return folded, made


__all__ = ["NOT_FOLDED", "SHAPE_OPS", "weight_only_nodes"]
