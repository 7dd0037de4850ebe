"""Static shapes for every op of an ONNX graph as real exporters write it: the shape arithmetic
evaluated, its values fed to ONNX's shape inference, in one pass over the nodes.

ONNX's own shape inference (``onnx.shape_inference.infer_shapes``, data propagation on) stops at
the first op whose shape input it cannot follow: the legacy TorchScript exporter computes the
shapes of ``Expand``/``Reshape``/``Slice``/``Range``/``ConstantOfShape``/``Tile``/``Pad`` from
``Shape -> Gather -> Div -> Concat -> Where ...`` chains, and inference's data propagation knows
only a few of those ops, so everything after the first ``Expand`` of a BERT, or the first shifted
window of a Swin transformer, is left with unknown dimensions (and a default cost).

:func:`static_shapes` completes them the way a compiler does, without rewriting the model:

* one pass over the main graph's nodes in file order (ONNX requires topological order);
* a node computing only from constants (a ``Shape``/``Size`` of a tensor whose shape is static,
  or a node whose inputs are all known values: the nodes :mod:`workbench.io.onnx.fold` folds) is
  evaluated with ONNX's reference implementation of its op (``onnx.reference``, one op at a time,
  no graph built) when its outputs are small (:data:`VALUE_ELEMENTS`: shape vectors, masks,
  index tables; weights are never computed here);
* a node whose outputs have no static shape yet is inferred again by ONNX's own inference
  function for its op (``OpSchema``'s node inference), given its inputs' types as the pass found
  them and the small constant values among its inputs as data, so an ``Expand`` whose shape was
  computed gets a static output and the ops after it do too.

Since every value a node needs is known before the node is reached, one pass reaches the fixed
point.  Control flow (``If``/``Loop``/``Scan``), nodes of custom domains and random generators keep
what ONNX's inference said.  Nothing here raises on a malformed file: a node whose inference or
evaluation fails keeps what was known.  Complexity: O(nodes), each node inferred at most once and
evaluated at most once, on values of at most :data:`VALUE_ELEMENTS` elements.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench._bounded.memory import address_space_headroom
from workbench.io.onnx.fold import NOT_FOLDED, SHAPE_OPS, STANDARD_DOMAINS
from workbench.io.onnx.proto import ValueInfo, tensor_type, text_of
from workbench.io.onnx.rules import MAX_ELEMENTS

#: Largest value (elements) the pass computes: shape vectors, attention masks, relative-position
#: index tables; larger constants are left to :mod:`workbench.io.onnx.weights`.
VALUE_ELEMENTS = 1 << 16
#: Largest value (elements) handed to ONNX's inference as a constant input (shapes, axes, pads,
#: scales, repeats: a few elements each).
DATA_ELEMENTS = 64
#: Op types whose nodes hold sub-graphs: ONNX's whole-model inference is kept for them.
_BODIES = frozenset({"If", "Loop", "Scan"})
#: Op types whose outputs are no larger than what the file holds (a ``Constant``'s value, an
#: input passed on, a shape vector): evaluated without inferring them again first.
_SAFE_SIZES = frozenset({"Constant", "Identity", "Shape", "Size"})


@dataclass
class StaticShapes:
    """What :func:`static_shapes` found: value name -> (shape, dtype, itemsize) of every value of
    the main graph with a static shape, and the small constants it computed (name -> array)."""

    infos: dict[str, ValueInfo] = field(default_factory=dict)
    values: dict[str, np.ndarray] = field(default_factory=dict)
    inferred: int = 0  # nodes inferred again with their inputs' values
    evaluated: int = 0  # nodes evaluated


def _gather_elements(node: Any, data: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray]:
    """``GatherElements`` (ONNX's reference fails on an axis longer than 64: ``np.choose``)."""
    axis = next((int(a.i) for a in node.attribute if text_of(a.name) == "axis"), 0)
    axis %= data.ndim
    indices = np.where(indices < 0, indices + data.shape[axis], indices)
    return (np.take_along_axis(data, indices, axis=axis),)


#: Op types evaluated here instead of by ``onnx.reference`` (whose implementation fails on the
#: tensors exporters write).
_OWN: dict[str, Callable[..., tuple[np.ndarray, ...]]] = {"GatherElements": _gather_elements}


def _domain(domain: Any) -> str:
    """An op domain, ONNX's own spelled ``""`` (files may write ``ai.onnx``)."""
    text = text_of(domain)
    return "" if text == "ai.onnx" else text


def _static(tp: Any) -> tuple[int, ...] | None:
    """The static shape of a tensor ``TypeProto``; None when a dimension is unknown."""
    if tp is None or tp.WhichOneof("value") != "tensor_type":
        return None
    tt = tp.tensor_type
    if not tt.HasField("shape"):
        return None
    dims = []
    for d in tt.shape.dim:
        if d.WhichOneof("value") != "dim_value" or d.dim_value < 0:
            return None
        dims.append(int(d.dim_value))
    return tuple(dims)


def _known_dims(tp: Any) -> int:
    """How much a tensor type tells: -1 without a shape, else the number of known dimensions."""
    if tp is None or tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField(
            "shape"):
        return -1
    return sum(d.WhichOneof("value") == "dim_value" for d in tp.tensor_type.shape.dim)


class _Pass:
    """The state of one pass over a graph (see the module docstring)."""

    def __init__(self, onnx: Any, model: Any, base_dir: str) -> None:
        self.onnx = onnx
        self.base_dir = base_dir
        g = model.graph
        self.opsets = {_domain(o.domain): int(o.version) for o in model.opset_import}
        self.opsets.setdefault("", 17)
        self.ir_version = int(model.ir_version) or 8
        self.types: dict[str, Any] = {}
        for vi in (*g.input, *g.value_info, *g.output):
            name = text_of(vi.name)
            if name and _known_dims(vi.type) > _known_dims(self.types.get(name)):
                self.types[name] = vi.type
        self.inits = {text_of(t.name): t for t in g.initializer if t.name}
        for name, init in self.inits.items():
            tp = onnx.TypeProto()
            tp.tensor_type.elem_type = init.data_type
            tp.tensor_type.shape.SetInParent()
            for d in init.dims:
                tp.tensor_type.shape.dim.add().dim_value = d
            self.types[name] = tp
        self.shapes = {name: s for name, tp in self.types.items()
                       if (s := _static(tp)) is not None}
        self.values: dict[str, np.ndarray] = {}
        self._type_bytes: dict[str, bytes] = {}
        self._data_bytes: dict[str, bytes] = {}
        self._schemas: dict[tuple[str, str], Any] = {}
        self._ops: dict[tuple[str, str], Any] = {}
        self.inferred = self.evaluated = 0

    # ----------------------------------------------------------------- values
    def value(self, name: str) -> np.ndarray | None:
        """A known small constant: computed by the pass, or a small initializer (read once)."""
        if name in self.values:
            return self.values[name]
        init = self.inits.get(name)
        if init is None:
            return None
        shape = self.shapes.get(name)
        if shape is None or math.prod(shape) > VALUE_ELEMENTS:
            return None
        try:  # a small part of the external data file when the weights are kept there
            array = self.onnx.numpy_helper.to_array(init, base_dir=self.base_dir)
        except Exception:  # noqa: BLE001 - corrupt payload: unknown
            return None
        self.values[name] = array
        return array

    def _foldable(self, node: Any, inputs: list[str]) -> bool:
        if node.op_type in SHAPE_OPS:
            return bool(inputs) and inputs[0] in self.shapes
        return all(self.value(t) is not None for t in inputs)

    def _evaluate(self, node: Any, outs: list[str], fresh: dict[str, tuple[int, ...]] | None
                  ) -> None:
        """The node's outputs as values, when it computes only from known values; ``fresh``:
        the output shapes inference just found from the inputs' values (a file's own value
        infos are not trusted with the size of what is allocated)."""
        inputs = [text_of(t) for t in node.input]
        if node.op_type in SHAPE_OPS:
            self._shape_value(node, self.shapes[inputs[0]], outs)
            return
        shapes = [self.shapes.get(t) for t in outs]
        if fresh is not None and any(fresh.get(t) != s for t, s in zip(outs, shapes,
                                                                         strict=True)):
            return
        if any(s is None or math.prod(s) > VALUE_ELEMENTS for s in shapes):
            return
        args = [self.value(t) if t else None for t in inputs]
        try:
            own = _OWN.get(node.op_type)
            if own is not None:
                results = own(node, *args)
            else:
                run = self._op(node)
                if run is None:
                    return
                results = run.run(*args)
        except Exception:  # noqa: BLE001 - the reference op on an arbitrary node
            return
        for name, shape, result in zip(outs, shapes, results, strict=False):
            array = np.asarray(result)
            if array.shape == shape:
                self.values[name] = array if array.flags.writeable else array.copy()
        self.evaluated += 1

    def _shape_value(self, node: Any, shape: tuple[int, ...], outs: list[str]) -> None:
        if not outs:
            return
        if node.op_type == "Size":
            self.values[outs[0]] = np.asarray(math.prod(shape), dtype=np.int64)
        else:
            attrs = {text_of(a.name): a.i for a in node.attribute}
            start, end = attrs.get("start"), attrs.get("end")
            self.values[outs[0]] = np.asarray(shape[start:end], dtype=np.int64)
        self.evaluated += 1

    def _op(self, node: Any) -> Any:
        """ONNX's reference implementation of the node's op, bound to the node (None if none)."""
        from onnx.reference import ReferenceEvaluator
        from onnx.reference.ops import load_op

        key = (_domain(node.domain), text_of(node.op_type))
        try:
            cls = self._ops.get(key)
            if cls is None:
                cls = load_op(key[0], key[1], self.opsets.get(key[0]),
                              evaluator_cls=ReferenceEvaluator)
                self._ops[key] = cls
            return cls(node, {"log": lambda *a: None, "opsets": self.opsets, "verbose": 0,
                              "new_ops": None, "existing_functions": {},
                              "evaluator_cls": ReferenceEvaluator})
        except Exception:  # noqa: BLE001 - no implementation, or a context-dependent one
            self._ops[key] = None
            return None

    # ----------------------------------------------------------------- shapes
    def _infer(self, node: Any, inputs: list[str], outs: list[str]
               ) -> dict[str, tuple[int, ...]] | None:
        """ONNX's inference of one node from its inputs' current types and small values: the
        types it finds are kept where they tell more; returns the static output shapes it found
        (None when inference could not run)."""
        schema = self._schema(node)
        if schema is None:
            return None
        types, data = {}, {}
        for t in inputs:
            if t not in self.types:
                continue
            if t not in self._type_bytes:
                self._type_bytes[t] = self.types[t].SerializeToString()
            types[t] = self._type_bytes[t]
            value = self.value(t)
            if value is not None and value.size <= DATA_ELEMENTS:
                if t not in self._data_bytes:
                    try:
                        self._data_bytes[t] = self.onnx.numpy_helper.from_array(
                            value, t).SerializeToString()
                    except Exception:  # noqa: BLE001 - a dtype ONNX cannot hold
                        self._data_bytes[t] = b""
                if self._data_bytes[t]:
                    data[t] = self._data_bytes[t]
        try:
            found = schema._infer_node_outputs(node.SerializeToString(), types, data, {},
                                               self.opsets, self.ir_version)
        except Exception:  # noqa: BLE001 - inconsistent or unsupported node: keep what was known
            return None
        self.inferred += 1
        fresh: dict[str, tuple[int, ...]] = {}
        for name in outs:
            raw = found.get(name)
            if raw is None:
                continue
            tp = self.onnx.TypeProto.FromString(raw)
            shape = _static(tp)
            if shape is not None:
                fresh[name] = shape
            if _known_dims(tp) > _known_dims(self.types.get(name)):
                self.types[name] = tp
                self._type_bytes.pop(name, None)
                if shape is not None:
                    self.shapes[name] = shape
        return fresh

    def _schema(self, node: Any) -> Any:
        key = (_domain(node.domain), text_of(node.op_type))
        if key not in self._schemas:
            version = self.opsets.get(key[0])
            try:
                self._schemas[key] = (None if version is None else
                                      self.onnx.defs.get_schema(key[1], version, key[0]))
            except Exception:  # noqa: BLE001 - unknown op or domain
                self._schemas[key] = None
        return self._schemas[key]

    # ----------------------------------------------------------------- the pass
    def run(self, nodes: Any) -> None:
        for node in nodes:
            if node.op_type in _BODIES or text_of(node.domain) not in STANDARD_DOMAINS:
                continue
            inputs = [text_of(t) for t in node.input if t]
            outs = [text_of(t) for t in node.output if t]
            if not outs:
                continue
            foldable = node.op_type not in NOT_FOLDED and self._foldable(node, inputs)
            fresh = None
            if any(t not in self.shapes for t in outs) or (
                    foldable and node.op_type not in _SAFE_SIZES):
                fresh = self._infer(node, inputs, outs)
                if fresh is None and foldable and node.op_type not in _SAFE_SIZES:
                    continue  # the size of its outputs is not known from its inputs
            if foldable:
                self._evaluate(node, outs, fresh)


def _light(onnx: Any, model: Any) -> Any:
    """``model`` without its large initializers (each a typed graph input instead)."""
    g = model.graph
    light = onnx.ModelProto()
    light.ir_version = model.ir_version
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    lg = light.graph
    lg.node.extend(g.node)
    lg.input.extend(g.input)
    lg.output.extend(g.output)
    lg.value_info.extend(g.value_info)
    lg.sparse_initializer.extend(g.sparse_initializer)
    declared = {text_of(vi.name) for vi in g.input}
    for init in g.initializer:
        if math.prod(init.dims) <= VALUE_ELEMENTS:
            lg.initializer.append(init)
        elif text_of(init.name) not in declared:
            vi = lg.input.add()
            vi.name = init.name
            vi.type.tensor_type.elem_type = init.data_type
            vi.type.tensor_type.shape.SetInParent()
            for d in init.dims:
                vi.type.tensor_type.shape.dim.add().dim_value = d
    return light


def infer_shapes(onnx: Any, model: Any) -> str:
    """ONNX's whole-model shape inference (data propagation on) written into ``model`` (value
    infos, output types, bodies' value infos); ``""``, or why it failed (the model is then left as
    it was).  The model goes to inference without its large initializers (they become typed
    inputs): a BERT-base's 440 MB of weights would otherwise be copied four times, 8 s of the
    import.  O(nodes) plus ONNX's inference."""
    g = model.graph
    try:
        light = _light(onnx, model)
    except (UnicodeDecodeError, ValueError, TypeError):  # a corrupt name: the model as it is
        light = model
    try:
        # data_prop folds Shape -> Gather -> Reshape chains; a model that trips ONNX's own
        # checker keeps the shapes stored in the file (so any exception type is acceptable here)
        with address_space_headroom():  # a hostile Range to 2**40: bad_alloc, not an OOM kill
            inferred = onnx.shape_inference.infer_shapes(light, check_type=False,
                                                         strict_mode=False, data_prop=True)
    except Exception as exc:  # noqa: BLE001 - third-party inference on an arbitrary file
        return f"shape inference failed ({type(exc).__name__})"
    ig = inferred.graph
    if len(ig.node) != len(g.node) or len(ig.output) != len(g.output):
        return "shape inference failed (the model came back changed)"
    g.ClearField("value_info")
    g.value_info.extend(ig.value_info)
    g.ClearField("output")
    g.output.extend(ig.output)
    g.ClearField("node")
    g.node.extend(ig.node)
    return ""


def static_shapes(onnx: Any, model: Any, base_dir: str = "") -> StaticShapes:
    """The static shapes of the main graph's values after the pass (module docstring), and the
    small constants it computed.  ``model``: the ``ModelProto`` after ONNX's own inference
    (:func:`infer_shapes`; or as read, when that failed); ``base_dir``: the folder of its
    external data, if any."""
    state = _Pass(onnx, model, base_dir)
    with np.errstate(all="ignore"):  # log(0) in a T5 bucket table is -inf, as in the model
        state.run(model.graph.node)
    infos: dict[str, ValueInfo] = {}
    for name, shape in state.shapes.items():
        if math.prod(shape) <= MAX_ELEMENTS:
            kind = tensor_type(onnx, state.types[name].tensor_type.elem_type) or ("float32", 4)
            infos[name] = (shape, *kind)
    values = {k: v for k, v in state.values.items() if k not in state.inits}
    return StaticShapes(infos, values, state.inferred, state.evaluated)


__all__ = ["DATA_ELEMENTS", "VALUE_ELEMENTS", "StaticShapes", "infer_shapes", "static_shapes"]
