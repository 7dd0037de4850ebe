"""Which tensors share storage: the one aliasing rule of the importers, the memory stage and the
executors.

An op's output is (a view of) the storage of one of its inputs, and so needs no memory of its own
and keeps that storage alive for as long as it is read, when:

* its kind is a no-task kind (:data:`workbench.ops.NO_TASK_KINDS`: reshape, flatten,
  squeeze, ... — seed 004's ref nodes, whose output has the input's address): input 0;
* an importer marked it a view (``attrs["view"]``: torch's ``transpose``, ``select``,
  ``getitem``, ``expand``, ``split``, ``unbind`` ... return strided views of their input, and
  ``getitem`` of a container output picks one of its tensors): the input named by
  ``attrs["storage_of"]``, else input 0;
* it writes an input in place and returns it (``relu_``, ``add_``, ``masked_fill_``, a module
  with ``inplace=True``): the importer names that input in ``attrs["storage_of"]``.

:func:`storage_roots` follows chains (a view of a view of ``x`` is ``x``'s storage).  The memory
planners (:mod:`workbench.memory.lifetimes`) plan one block per root and fold every alias's
readers into its root's lifetime; the GPU executor's layout places an alias at its root's
address.  An importer that records what its program really does (:func:`workbench.io.torch.fx.
from_torch` reads torch's alias annotations) therefore gets the lifetimes the program has, and
one that records nothing gets fresh storage per output (the conservative answer: never less
memory than the program uses).

Simplification: a view keeps its *whole* root alive (a ``getitem`` of an LSTM's ``(y, (h, c))``
keeps all three until the last read of any), which can overstate the peak, never understate it.

>>> from workbench.values.graph import Graph
>>> g = Graph.from_edges([("a", "t"), ("t", "b")], ops={"a": "relu", "t": "transpose",
...                                                    "b": "relu"})
>>> storage_roots(g)  # a transpose the graph does not mark as a view is a copy
{}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.ops import NO_TASK_KINDS

# Ops and graphs are taken by what they have (``op.kind``, ``op.inputs``, ``op.outputs``,
# ``op.attrs``; ``graph.ops``): workbench.values.graph checks attributes with input_shapes, so
# this module cannot import it.
Op = Any
Graph = Any
TensorId = str

#: The attribute an importer names the shared input with (views and in-place writes).
STORAGE_ATTR = "storage_of"


def storage_input(op: Op) -> TensorId | None:
    """The input tensor whose storage ``op``'s (single) output shares, or ``None`` (fresh
    storage).  See the module docstring for the rule.  O(inputs)."""
    if not op.inputs or len(op.outputs) != 1:
        return None
    named = op.attrs.get(STORAGE_ATTR)
    if isinstance(named, str) and named in op.inputs:
        return named
    if op.kind in NO_TASK_KINDS or op.attrs.get("view") is True:
        return op.inputs[0]
    return None


def writes_in_place(op: Op) -> bool:
    """Whether ``op`` writes the storage its output shares (an in-place call, not a view): it
    reads and writes that storage, so the storage lives at least until ``op`` runs."""
    return (storage_input(op) is not None and op.kind not in NO_TASK_KINDS
            and op.attrs.get("view") is not True)


def input_shapes(op: Op, tensors: Mapping[str, Any]) -> list[tuple[int, ...]]:
    """The shapes ``op`` reads its inputs as (``()`` where unknown): its input tensors' shapes,
    except where a dropped view reshaped one (``attrs["view_shapes"]``, written by
    :func:`workbench.passes.no_task.drop_no_task_ops`: a depthwise convolution over tokens
    reshaped to an image reads the image's shape, not the tokens').  O(inputs)."""
    shapes = [tuple(getattr(tensors.get(t), "shape", ()) or ()) for t in op.inputs]
    views = op.attrs.get("view_shapes")
    if isinstance(views, Mapping):
        for pos, shape in views.items():
            i = int(pos) if isinstance(pos, (int, str)) and str(pos).isdigit() else -1
            if 0 <= i < len(shapes) and isinstance(shape, Sequence) and shape:
                shapes[i] = tuple(shape)
    return shapes


def storage_roots(graph: Graph) -> dict[TensorId, TensorId]:
    """Every aliasing output -> the tensor that owns its storage (chains followed; tensors that
    own their storage are not listed).  O(V) in program order plus the chain walks."""
    direct: dict[TensorId, TensorId] = {}
    for op in graph.ops:
        src = storage_input(op)
        if src is not None and src != op.outputs[0]:
            direct[op.outputs[0]] = src
    roots: dict[TensorId, TensorId] = {}
    for t in direct:
        path = [t]
        r = direct[t]
        while r in direct and r not in roots and r not in path:
            path.append(r)
            r = direct[r]
        r = roots.get(r, r)
        if r in path:  # a cycle of aliases cannot come from a valid graph: keep them apart
            continue
        for p in path:
            roots[p] = r
    return roots


__all__ = ["STORAGE_ATTR", "input_shapes", "storage_input", "storage_roots", "writes_in_place"]
