"""The ONNX file as plain Python: the protobuf read and checked, its symbolic input dimensions
set, its value infos, scalar constants and nodes turned into plain values, op ids given.

:func:`workbench.io.onnx.load.load_onnx` builds the graph from these; nothing here knows op kinds or
costs.  The ``onnx`` module is passed in by the caller (which imports it inside the function), so
importing this module loads no ``onnx``.  Every problem with the file is a one-line
:class:`~workbench.errors.FormatError` (or :class:`~workbench.errors.OptionError` for a ``dims``
name the graph does not have) naming it.  Protobuf strings are read as text (:func:`text_of`:
invalid UTF-8 replaced), attribute values as plain Python (lists, numbers, strings; small tensors
as nested lists, others as ``<tensor dims>``).  O(nodes + values).

>>> op_ids([PlainNode("", "Relu", "", (), (), {}), PlainNode("a", "Add", "", (), (), {}),
...         PlainNode("a", "Add", "", (), (), {})])
['Relu_0', 'a', 'a_0']
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench._atomic import read_input
from workbench._checks import warn_line
from workbench.errors import FormatError, OptionError
from workbench.io.onnx.rules import MAX_ELEMENTS
from workbench.ops.costs import numel

#: What the import knows of a value: (shape or None, dtype name, bytes per element).
ValueInfo = tuple[tuple[int, ...] | None, str, int]


def one_line(text: str) -> str:
    """``text`` on one line (carriage returns and newlines escaped), for error messages."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def text_of(value: Any) -> str:
    """A protobuf string field as text (a corrupt file can hold invalid UTF-8, read as bytes)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def read_model(onnx: Any, path: Path) -> Any:
    """The ``ModelProto`` in the file at ``path``; a one-line error when it is empty, not an
    ONNX model or truncated."""
    from google.protobuf.message import DecodeError

    data = read_input(path, what="ONNX model")
    if not data:
        raise FormatError(f"{path}: empty file (not an ONNX model)")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError, RecursionError) as exc:
        raise FormatError(one_line(f"{path}: not an ONNX model or truncated file "
                                   f"({type(exc).__name__})")) from None
    if not model.HasField("graph") or not (model.ir_version or model.opset_import):
        raise FormatError(f"{path}: not an ONNX model (no graph or version found)")
    return model


def _dims_text(vi: Any) -> str:
    """An input's declared shape as text: ``(batch, 3, 224, 224)``, ``?`` without a shape."""
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return "?"
    return "(" + ", ".join(str(d.dim_value) if d.WhichOneof("value") == "dim_value" else
                           (text_of(d.dim_param) or "?") for d in tt.shape.dim) + ")"


def _int_tuple(value: Any) -> tuple[int, ...] | None:
    """A shape given as a list, tuple, ``torch.Size`` or 1-D integer array, as ints; None when
    it is not one (text, floats, booleans, a mapping)."""
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        return None
    out = []
    try:
        for v in value:
            if isinstance(v, bool):
                return None
            out.append(operator.index(v))
    except TypeError:
        return None
    return tuple(out)


def _shape_dims(input_shapes: Mapping[str, Any], inputs: Sequence[Any], path: Path,
                dims: dict[str, int]) -> dict[tuple[str, int], int]:
    """``input_shapes`` checked against the graph's inputs and turned into dimension values:
    the symbolic dimensions they name go into ``dims`` (so ``input_shapes={"x": (8, 3, 224,
    224)}`` on an input ``x: (batch, 3, 224, 224)`` is ``dims={"batch": 8}``), unnamed unknown
    dimensions are returned by (input, axis).  Every mistake is a one-line OptionError naming the
    input and the graph's inputs with their shapes."""
    by_name = {text_of(vi.name): vi for vi in inputs}
    listed = ", ".join(f"{name!r} {_dims_text(vi)}" for name, vi in by_name.items()) or "none"
    where = f"{path.name}: input_shapes"
    given_by: dict[str, str] = {}
    direct: dict[tuple[str, int], int] = {}
    for name, value in input_shapes.items():
        vi = by_name.get(name)
        if vi is None:
            raise OptionError(one_line(f"{where}: the graph has no input {name!r} "
                                       f"(inputs: {listed})"))
        value = _int_tuple(value)
        if value is None:
            raise OptionError(one_line(f"{where}[{name!r}] must be a sequence of positive "
                                       f"integers, got {input_shapes[name]!r} (inputs: "
                                       f"{listed})"[:400]))
        tt = vi.type.tensor_type
        declared = list(tt.shape.dim) if tt.HasField("shape") else None
        if declared is not None and len(declared) != len(value):
            raise OptionError(one_line(f"{where}[{name!r}] has {len(value)} dimensions "
                                       f"{tuple(value)}, the input has {len(declared)} "
                                       f"{_dims_text(vi)} (inputs: {listed})"))
        for k, v in enumerate(value):
            if not 0 < v < MAX_ELEMENTS:
                raise OptionError(one_line(f"{where}[{name!r}] dimension {k} is {v}: dimensions "
                                           f"must be positive (inputs: {listed})"))
        if declared is None:
            tt.shape.SetInParent()
            for v in value:
                tt.shape.dim.add().dim_value = v
            continue
        for k, (d, v) in enumerate(zip(declared, value, strict=True)):
            kind = d.WhichOneof("value")
            if kind == "dim_value" and d.dim_value != v:
                raise OptionError(one_line(f"{where}[{name!r}] dimension {k} is {v}, the file "
                                           f"fixes it at {d.dim_value} (inputs: {listed})"))
            if kind == "dim_param" and text_of(d.dim_param):
                symbol = text_of(d.dim_param)
                if symbol in dims and dims[symbol] != v:
                    before = given_by.get(symbol, "dims")
                    raise OptionError(one_line(
                        f"{where}[{name!r}] dimension {k} ({symbol!r}) is {v}, but {before} "
                        f"sets {symbol!r} to {dims[symbol]}"))
                dims[symbol] = v
                given_by[symbol] = f"input_shapes[{name!r}]"
            elif kind != "dim_value":
                direct[(name, k)] = v
    return direct


def fix_symbolic_dims(model: Any, dims: Mapping[str, int], path: Path,
                      input_shapes: Mapping[str, Any] | None = None) -> None:
    """Set symbolic or missing input dimensions, in place: from ``input_shapes`` (input name ->
    full shape; the symbolic dimensions it names take its values), else ``dims[name]``
    (symbolic dimension name -> value), else 1 (with a warning).  A name in ``dims`` that is no
    symbolic dimension of the graph, and an ``input_shapes`` entry that does not fit its input
    (no such input, another rank, a dimension that is not positive or differs from one the file
    fixes, two values for one symbolic dimension), is a one-line
    :class:`~workbench.errors.OptionError` naming what the graph has."""
    initializers = {text_of(t.name) for t in model.graph.initializer}
    declared = [vi for vi in model.graph.input if text_of(vi.name) not in initializers
                and vi.type.HasField("tensor_type")]
    symbolic = list(dict.fromkeys(text_of(d.dim_param) for vi in declared
                                  if vi.type.tensor_type.HasField("shape")
                                  for d in vi.type.tensor_type.shape.dim
                                  if d.WhichOneof("value") == "dim_param"))
    unknown = [k for k in dims if k not in symbolic]
    if unknown:
        have = ", ".join(map(repr, symbolic)) if symbolic else "none"
        raise OptionError(one_line(f"{path.name}: no symbolic dimension {unknown[0]!r} "
                                   f"(symbolic dimensions of this graph: {have})"))
    dims = dict(dims)
    direct = _shape_dims(input_shapes or {}, declared, path, dims)
    inputs = [vi for vi in declared if vi.type.tensor_type.HasField("shape")]
    defaulted: list[str] = []
    for vi in inputs:
        for k, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.WhichOneof("value") == "dim_value" and d.dim_value < 0:
                raise FormatError(one_line(f"{path.name}: input {text_of(vi.name)!r} "
                                           f"dimension {k} is {d.dim_value} (negative)"))
            if d.WhichOneof("value") == "dim_value":
                continue
            name = text_of(d.dim_param) if d.WhichOneof("value") == "dim_param" else "?"
            value = direct.get((text_of(vi.name), k)) or dims.get(name)
            if value is None:
                value = 1
                if name not in defaulted:
                    defaulted.append(name)
            d.dim_value = int(value)
    if defaulted:
        warn_line(one_line(f"{path.name}: symbolic input dimensions set to 1: "
                           f"{', '.join(map(repr, defaulted))} (pass dims={{...}} or "
                           f"input_shapes={{...}} to choose; CLI --dim / --input-shape)"),
                  str(path))


def parse_input_shapes(texts: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """The CLI's ``--input-shape NAME=1,3,224,224`` options as ``input_shapes`` (name ->
    shape); a malformed one, or one input given twice, is a one-line OptionError.  The shapes
    are checked against the graph by :func:`fix_symbolic_dims`.

    >>> parse_input_shapes(["input.1=1,3,224,224", "ids = 1x128"])
    {'input.1': (1, 3, 224, 224), 'ids': (1, 128)}
    """
    out: dict[str, tuple[int, ...]] = {}
    for text in texts:
        name, sep, dims = text.rpartition("=")
        parts = [p.strip() for p in dims.replace("x", ",").split(",")]
        if not sep or not name.strip() or not all(p.lstrip("-").isdigit() for p in parts):
            raise OptionError(one_line(f"--input-shape expects NAME=D1,D2,... (e.g. "
                                       f"input=1,3,224,224), got {text!r}"))
        if name.strip() in out:
            raise OptionError(one_line(f"--input-shape gives input {name.strip()!r} twice"))
        out[name.strip()] = tuple(int(p) for p in parts)
    return out


def tensor_type(onnx: Any, elem_type: int) -> tuple[str, int] | None:
    """(dtype name, bytes per element) of an ONNX data type, None if unknown."""
    if elem_type in (0, onnx.TensorProto.STRING):
        return None
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem_type)
    except Exception:  # noqa: BLE001 - unknown or corrupt data-type code
        return None
    return dtype.name, max(1, dtype.itemsize)


def _shape_of(dims: Sequence[Any]) -> tuple[int, ...] | None:
    shape = []
    for d in dims:
        if isinstance(d, int):
            value = d
        elif d.WhichOneof("value") == "dim_value":
            value = d.dim_value
        else:
            return None
        if value < 0:
            return None
        shape.append(value)
    return tuple(shape) if numel(shape) <= MAX_ELEMENTS else None


def value_infos(onnx: Any, graph: Any) -> dict[str, ValueInfo]:
    """Value name -> (shape or None, dtype, itemsize) from a graph's initializers and value
    infos (a body graph's own; shape inference fills them in too)."""
    table: dict[str, ValueInfo] = {}
    for vi in (*graph.value_info, *graph.input, *graph.output):
        if not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        kind = tensor_type(onnx, tt.elem_type) or ("float32", 4)
        shape = _shape_of(tt.shape.dim) if tt.HasField("shape") else None
        old = table.get(text_of(vi.name))
        if old is None or old[0] is None:
            table[text_of(vi.name)] = (shape, *kind)
    for init in graph.initializer:
        kind = tensor_type(onnx, init.data_type) or ("float32", 4)
        table[text_of(init.name)] = (_shape_of(list(init.dims)), *kind)
    return table


def small_ints(onnx: Any, graph: Any) -> dict[str, int]:
    """Scalar integer initializers and ``Constant`` outputs (a ``Loop``'s trip count)."""
    found: dict[str, int] = {}
    tensors = [(text_of(t.name), t) for t in graph.initializer]
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            tensors += [(text_of(node.output[0]), a.t) for a in node.attribute if a.HasField("t")]
    for name, t in tensors:
        if numel(list(t.dims)) != 1 or t.data_type not in (onnx.TensorProto.INT64,
                                                          onnx.TensorProto.INT32):
            continue
        try:
            found[name] = int(onnx.numpy_helper.to_array(t).reshape(-1)[0])
        except Exception:  # noqa: BLE001 - corrupt payload: trip count unknown
            pass
    return found


def _plain(onnx: Any, value: Any) -> Any:
    """An ONNX attribute value as plain Python (lists, numbers, strings)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (int, float, str, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(onnx, v) for v in value]
    if isinstance(value, onnx.TensorProto):
        dims = list(value.dims)
        if value.data_location != onnx.TensorProto.EXTERNAL and 0 <= numel(dims) <= 16 and all(
                d >= 0 for d in dims):
            try:
                return onnx.numpy_helper.to_array(value).tolist()
            except Exception:  # noqa: BLE001 - corrupt tensor payload
                pass
        return f"<tensor {dims}>"
    if isinstance(value, onnx.GraphProto):
        return f"<graph {text_of(value.name)}>"
    return f"<{type(value).__name__}>"


def _attrs(onnx: Any, node: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attr in node.attribute:
        try:
            out[text_of(attr.name)] = _plain(onnx, onnx.helper.get_attribute_value(attr))
        except Exception:  # noqa: BLE001 - unknown or corrupt attribute type
            out[text_of(attr.name)] = None
    return out


@dataclass(frozen=True)
class PlainNode:
    """One ONNX node as plain Python values."""

    name: str
    op_type: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any]


def plain_nodes(onnx: Any, graph: Any) -> list[PlainNode]:
    """The nodes of ``graph`` in file order, as plain values."""
    return [PlainNode(text_of(n.name), text_of(n.op_type), text_of(n.domain),
                      tuple(text_of(t) for t in n.input), tuple(text_of(t) for t in n.output),
                      _attrs(onnx, n)) for n in graph.node]


def op_ids(nodes: Sequence[PlainNode]) -> list[str]:
    """Node names verbatim; unnamed (or repeated) nodes get ``<op_type>_<k>`` / ``<name>_<k>``."""
    taken = {n.name for n in nodes if n.name}
    seen: set[str] = set()
    counters: Counter[str] = Counter()
    ids = []
    for n in nodes:
        if n.name and n.name not in seen:
            op_id = n.name
        else:
            base = n.name or n.op_type or "node"
            while True:
                op_id = f"{base}_{counters[base]}"
                counters[base] += 1
                if op_id not in taken and op_id not in seen:
                    break
        seen.add(op_id)
        ids.append(op_id)
    return ids


__all__ = ["PlainNode", "ValueInfo", "fix_symbolic_dims", "one_line", "op_ids",
           "parse_input_shapes", "plain_nodes", "read_model", "small_ints", "tensor_type",
           "text_of", "value_infos"]
