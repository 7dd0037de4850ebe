"""The values an ONNX graph runs with: its initializers and the constants the import folded.

:func:`load_onnx <workbench.io.onnx.load.load_onnx>` folds the nodes that compute only from weights
(:mod:`workbench.io.onnx.fold`: ``Constant``, ``ConstantOfShape``, ``Shape`` of a static shape
and the arithmetic on it, ``Identity``/``Cast``/``Transpose`` of a weight ...); their outputs are
parameters of the graph.  :func:`parameter_values` computes the value of every parameter an op
reads, so that the graph runs the model (:class:`workbench.values.program.Weights`):

* an initializer: ``onnx.numpy_helper.to_array``, copied once into a writable array (the file's
  bytes are not kept); initializers no kept op reads are not converted at all;
* ``Shape`` / ``Size`` of a tensor with a static shape: from the shape; ``Identity``: the same
  array (no copy);
* a folded value the import's shape pass already computed (:mod:`workbench.io.onnx.shapes`:
  shape arithmetic, masks, small index tables): that array;
* every other folded node an op needs (and only those, found backwards from the ops' inputs):
  one ``onnx.reference.ReferenceEvaluator`` run over just those nodes, fed the values above.

An initializer whose data cannot be read is a one-line FormatError naming it (never random
weights in its place; :mod:`workbench.io.onnx.checks` refuses most such files at load time).
Nothing else of the model is evaluated.  A folded node the reference evaluator cannot run leaves
its values out (one warning names the first failure): a run then draws them at random; so do
folded constants that would hold more than :data:`FOLDED_ELEMENTS` elements together (more than
the largest initializer).
Complexity: O(nodes) plus the folded nodes' own work.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from workbench._checks import warn_line
from workbench.errors import FormatError
from workbench.io.onnx.fold import SHAPE_OPS
from workbench.io.onnx.proto import one_line

#: Most elements the folded constants evaluated here may hold together, unless the model has a
#: larger initializer (a corrupt file's ``Range`` to 2**40 is not computed).
FOLDED_ELEMENTS = 1 << 26


def _array(onnx: Any, tensor: Any, base_dir: str) -> np.ndarray:
    """An initializer as a writable NumPy array (non-native float types widened to float32)."""
    value = onnx.numpy_helper.to_array(tensor, base_dir=base_dir)
    if value.dtype.kind == "V" or value.dtype.name not in np.sctypeDict:  # ml_dtypes bfloat16...
        value = value.astype(np.float32)
    return value if value.flags.writeable else value.copy()


def parameter_values(onnx: Any, graph: Any, nodes: Sequence[Any], folded: Collection[int],
                     needed: Collection[str], shape_of: Callable[[str], tuple[int, ...] | None],
                     *, opsets: Sequence[Any], path: Path,
                     known: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The value of each name in ``needed`` that is an initializer of ``graph`` or an output of
    a ``folded`` node (``nodes``: the graph's nodes as plain values, in file order);
    ``shape_of``: a value's static shape (``None`` if unknown); ``known``: folded values already
    computed (:mod:`workbench.io.onnx.shapes`), taken as they are.  See the module docstring."""
    known = known or {}
    inits = {str(t.name): t for t in graph.initializer if t.name}
    # the folded nodes the needed values come from, found backwards
    want = set(needed)
    required: list[int] = []
    values: dict[str, np.ndarray] = {}
    for i in sorted(folded, reverse=True):
        outs = [t for t in nodes[i].outputs if t]
        if not want.intersection(outs):
            continue
        if all(t in known for t in outs):
            values.update((t, known[t]) for t in outs)
            continue
        required.append(i)
        want.update(t for t in nodes[i].inputs if t)
    required.reverse()
    base_dir = str(path.parent)
    for name in want:
        if name in inits:
            try:
                values[name] = _array(onnx, inits[name], base_dir)
            except Exception as exc:  # noqa: BLE001 - never random weights in its place
                raise FormatError(one_line(f"{path}: initializer {name[:60]!r} cannot be read "
                                           f"({type(exc).__name__}: {exc})")[:400]) from None
    rest: list[int] = []
    for i in required:
        node = nodes[i]
        outs = [t for t in node.outputs if t]
        src = node.inputs[0] if node.inputs else ""
        if node.op_type in SHAPE_OPS and outs:
            shape = values[src].shape if src in values else shape_of(src)
            if shape is not None:
                values[outs[0]] = _shape_value(node, shape)
                continue
        if node.op_type == "Identity" and src in values and outs:
            values[outs[0]] = values[src]
            continue
        rest.append(i)
    if rest:
        made = sum(math.prod(shape) for i in rest for t in nodes[i].outputs
                   if t and (shape := shape_of(t)) is not None)
        largest = max((math.prod(t.dims) for t in inits.values()), default=0)
        if made > max(FOLDED_ELEMENTS, largest):
            _warn(path, f"they would hold {made} elements",
                  [t for i in rest for t in nodes[i].outputs if t and t in needed])
        else:
            _evaluate([graph.node[i] for i in rest], values, opsets, path)
    return {k: v for k, v in values.items() if k in needed}


def _shape_value(node: Any, shape: Sequence[int]) -> np.ndarray:
    if node.op_type == "Size":
        return np.asarray(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    start, end = node.attrs.get("start"), node.attrs.get("end")
    dims = list(shape)[None if start is None else int(start):None if end is None else int(end)]
    return np.asarray(dims, dtype=np.int64)


def _evaluate(protos: Sequence[Any], values: dict[str, np.ndarray], opsets: Sequence[Any],
              path: Path) -> None:
    """Run the node ``protos`` once with ONNX's reference evaluator, fed from ``values``; their
    outputs are added to ``values``."""
    from onnx import helper

    made = [str(t) for n in protos for t in n.output if t]
    fed = list(dict.fromkeys(str(t) for n in protos for t in n.input if t and t not in made))
    missing = [t for t in fed if t not in values]
    if missing:
        _warn(path, f"the value of {missing[0]!r} is unknown", made)
        return
    graph = helper.make_graph(list(protos), "folded", [helper.make_empty_tensor_value_info(t)
                                                 for t in fed],
                              [helper.make_empty_tensor_value_info(t) for t in made])
    model = helper.make_model(graph, opset_imports=list(opsets))
    try:
        from onnx.reference import ReferenceEvaluator

        results = ReferenceEvaluator(model).run(made, {t: values[t] for t in fed})
    except Exception as exc:  # noqa: BLE001 - third-party evaluator on an arbitrary file
        _warn(path, f"{type(exc).__name__}: {exc}", made)
        return
    for name, value in zip(made, results, strict=True):
        array = np.asarray(value)
        values[name] = array if array.flags.writeable else array.copy()


def _warn(path: Path, why: str, names: Sequence[str]) -> None:
    """One warning naming the folded constants a torch run will draw at random (the first
    four, and how many in all)."""
    listed = ", ".join(repr(n[:40]) for n in names[:4]) + (
        f" and {len(names) - 4} more" if len(names) > 4 else "")
    text = " ".join(f"{path.name}: {len(names)} folded constant(s) could not be computed "
                    f"({why}): {listed}; a torch run draws them at random".split())
    warn_line(text[:400], str(path))


__all__ = ["FOLDED_ELEMENTS", "parameter_values"]
