"""The graph JSON format (documented in docs/graph-format.md): reader and writer.

Two shapes are accepted:

* **full**: ``{"format": "schedule-workbench-graph", "version": 1, "name", "tensors": [...],
  "ops": [...], "control_edges": [[a, b], ...], "outputs": [...]}`` — what :func:`save` writes;
* **edge list**: ``{"edges": [[a, b], ...], "ops": {"a": "conv2d", ...}, "sizes": {...},
  "durations": {...}}`` — the :meth:`Graph.from_edges` short form, handy to write by hand.

Errors are one line and name the file and the place: a JSON syntax error gives its line and column;
a schema error gives the JSON path (``ops[3].flops``) and the line where that op starts.

Op attributes are read in the op vocabulary (:func:`workbench.values.ops.normalize_op_attrs`): a
synonym of an attribute the op's kind reads becomes the vocabulary's name (``kernel_shape`` ->
``kernel``, ``pads`` -> ``padding``, ``transB`` -> ``trans_b``), and a value of the wrong type
for such an attribute is a one-line error naming the op and the attribute.

Control-flow ops (``while``, ``case_of``; :mod:`workbench.control`) keep their sub-graphs inside
``attrs`` in the full form, nested to any depth: ``cond``/``body`` are graph objects,
``branches`` a list of ``{"name", "graph"}``; ``carried`` a list of ``[state, init, next]``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from workbench._atomic import read_input, write_text
from workbench._checks import check_choice, check_keys, did_you_mean, parse_json, show
from workbench.errors import FormatError, GraphError
from workbench.values.graph import CONTROL_KINDS, Graph, Op, Tensor
from workbench.values.ops import normalize_op_attrs

FORMAT_NAME = "schedule-workbench-graph"
FORMAT_VERSION = 1
_OP_FIELDS = {"id", "kind", "device", "flops", "bytes_read", "bytes_written", "inputs", "outputs",
              "thread_blocks", "duration_us", "workspace_bytes", "attrs"}
_TENSOR_FIELDS = {"id", "size_bytes", "producer", "role", "shape", "dtype"}
_FULL_KEYS = {"format", "version", "name", "tensors", "ops", "control_edges", "outputs"}
_EDGE_LIST_KEYS = {"format", "version", "name", "edges", "ops", "sizes", "durations",
                   "thread_blocks", "devices"}


def graph_to_dict(graph: Graph) -> dict[str, Any]:
    """The full JSON form of a graph."""
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "name": graph.name,
        "tensors": [{"id": t.id, "size_bytes": t.size_bytes, "producer": t.producer,
                     "role": t.role, "shape": list(t.shape), "dtype": t.dtype}
                    for t in graph.tensors.values()],
        "ops": [{"id": op.id, "kind": op.kind, "device": op.device, "flops": op.flops,
                 "bytes_read": op.bytes_read, "bytes_written": op.bytes_written,
                 "inputs": list(op.inputs), "outputs": list(op.outputs),
                 "thread_blocks": op.thread_blocks, "duration_us": op.duration_us,
                 "workspace_bytes": op.workspace_bytes, "attrs": _attrs_to_json(op)}
                for op in graph.ops],
        "control_edges": [list(e) for e in graph.control_edges],
        "outputs": list(graph.outputs),
    }


def _attrs_to_json(op: Op) -> dict[str, Any]:
    attrs = dict(op.attrs)
    if op.kind in CONTROL_KINDS:
        for key in ("cond", "body"):
            if isinstance(attrs.get(key), Graph):
                attrs[key] = graph_to_dict(attrs[key])
        if "branches" in attrs:
            attrs["branches"] = [{"name": str(n), "graph": graph_to_dict(g)}
                                 for n, g in attrs["branches"]]
    return _jsonable(attrs)  # type: ignore[no-any-return]


def _attrs_from_json(kind: str, attrs: dict[str, Any], where: str) -> dict[str, Any]:
    """Sub-graphs and tuples back from the JSON form of a control-flow op's attrs."""
    if kind not in CONTROL_KINDS:
        return attrs
    out = dict(attrs)
    for key in ("cond", "body"):
        if key in out:
            out[key] = _subgraph(out[key], f"{where}.attrs.{key}")
    if "branches" in out:
        raw = out["branches"]
        if not isinstance(raw, list) or not all(isinstance(b, dict) and set(b) == {"name",
                                                                                   "graph"}
                                                for b in raw):
            raise FormatError(f"{where}.attrs.branches must be a list of {{\"name\", \"graph\"}} "
                              f"objects")
        out["branches"] = tuple((str(b["name"]), _subgraph(b["graph"], f"{where}.attrs."
                                                           f"branches[{k}].graph"))
                                for k, b in enumerate(raw))
    if "carried" in out:
        carried = out["carried"]
        if not isinstance(carried, list) or not all(
                isinstance(c, list) and len(c) == 3 and all(isinstance(x, str) for x in c)
                for c in carried):
            raise FormatError(f"{where}.attrs.carried must be a list of [state, init, next] "
                              f"tensor ids")
        out["carried"] = tuple(tuple(c) for c in carried)
    if isinstance(out.get("results"), list):
        out["results"] = tuple(out["results"])
    return out


def _subgraph(raw: Any, where: str) -> Graph:
    try:
        return graph_from_dict(raw)
    except (FormatError, GraphError) as exc:
        raise FormatError(f"{where}: {exc}") from None


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def save_json(graph: Graph, path: str | Path) -> Path:
    path = Path(path)
    return write_text(path, json.dumps(graph_to_dict(graph), indent=1) + "\n")


def load_json(path: str | Path) -> Graph:
    """Read a graph file; every problem is a one-line :class:`FormatError` naming the file."""
    path = Path(path)
    try:
        text = read_input(path, what="graph file").decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not a text file (is it really JSON?)") from None
    data = parse_json(text, path, nested="JSON nested too deeply to be a graph file")
    try:
        return graph_from_dict(data, text=text)
    except (FormatError, GraphError) as exc:
        raise type(exc)(f"{path}: {exc}") from None


def graph_from_dict(data: Any, *, text: str = "") -> Graph:
    """Build a graph from the parsed JSON (either shape)."""
    if not isinstance(data, dict):
        raise FormatError(f"the top level must be an object, got {type(data).__name__}")
    if "edges" in data:
        check_keys(data, _EDGE_LIST_KEYS, "edge-list graph", error=FormatError)
        _check_format(data)
        return _from_edge_list(data)
    check_keys(data, _FULL_KEYS, "graph", error=FormatError)
    _check_format(data)
    if "ops" not in data:
        raise FormatError("missing 'ops' (or 'edges' for the edge-list form)")
    ops_raw = _list(data["ops"], "ops")
    tensors = [_tensor(t, f"tensors[{i}]") for i, t in enumerate(_list(data.get("tensors", []),
                                                                       "tensors"))]
    ops = []
    for i, raw in enumerate(ops_raw):
        try:
            ops.append(_op(raw, f"ops[{i}]"))
        except FormatError as exc:
            raise FormatError(f"{exc}{_line_hint(text, raw)}") from None
    control = []
    for i, e in enumerate(_list(data.get("control_edges", []), "control_edges")):
        if not (isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e)):
            raise FormatError(f"control_edges[{i}] must be a pair of op ids, got {e!r}")
        control.append((e[0], e[1]))
    outputs = data.get("outputs")
    if outputs is not None:
        outputs = [str(t) for t in _list(outputs, "outputs")]
    return Graph(ops, tensors, control, outputs=outputs, name=str(data.get("name", "graph")))


def _check_format(data: dict[str, Any]) -> None:
    """``format`` and ``version``, when given, must be this reader's (both shapes)."""
    if data.get("format") not in (None, FORMAT_NAME):
        raise FormatError(f"unknown format {show(data.get('format'))} (expected "
                          f"{FORMAT_NAME!r})")
    version = data.get("version", FORMAT_VERSION)
    if isinstance(version, bool) or version != FORMAT_VERSION:
        raise FormatError(f"unsupported version {show(data.get('version'))} (this reader knows "
                          f"{FORMAT_VERSION})")


#: Tensor roles and dtypes the workbench knows (a typo would silently change memory planning).
TENSOR_ROLES = ("activation", "input", "parameter", "output")
TENSOR_DTYPES = ("float32", "float", "float16", "half", "bfloat16", "float64", "double", "int8",
                 "uint8", "int16", "int32", "int64", "bool")


def _from_edge_list(data: dict[str, Any]) -> Graph:
    edges = []
    for i, e in enumerate(_list(data["edges"], "edges")):
        if not (isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e)):
            raise FormatError(f"edges[{i}] must be a pair of op ids, got {e!r}")
        edges.append((e[0], e[1]))
    ops = data.get("ops")
    if ops is not None and not isinstance(ops, (dict, list)):
        raise FormatError(f"'ops' must be an object (id -> kind) or a list of ids, got "
                          f"{type(ops).__name__}")
    if ops is not None:
        if isinstance(ops, list) and not all(isinstance(k, str) for k in ops):
            raise FormatError("'ops' must list op ids (strings)")
        if isinstance(ops, dict) and not all(isinstance(v, str) for v in ops.values()):
            raise FormatError("'ops' must map op ids to op types (strings)")
        declared = set(ops)
        for i, (a, b) in enumerate(edges):
            for end in (a, b):
                if end not in declared:
                    raise FormatError(f"edges[{i}] names op {show(end)}, which 'ops' does not "
                                      f"declare{did_you_mean(end, declared)}")
    tables = {}
    for key in ("sizes", "durations", "thread_blocks", "devices"):
        table = data.get(key, {})
        if not isinstance(table, dict):
            raise FormatError(f"'{key}' must be an object keyed by op id")
        tables[key] = table
    return Graph.from_edges(edges, ops, name=str(data.get("name", "graph")), **tables)


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise FormatError(f"'{where}' must be a list, got {type(value).__name__}")
    return value


def _check_fields(raw: Any, allowed: set[str], where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise FormatError(f"{where} must be an object, got {type(raw).__name__}")
    if "id" not in raw:
        raise FormatError(f"{where}: missing 'id'")
    check_keys(raw, allowed, f"{where} ({show(raw.get('id'))})", error=FormatError,
               what="field")
    return raw


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FormatError(f"{where} must be a list of tensor ids, got {value!r}")
    return tuple(value)


def _op(raw: Any, where: str) -> Op:
    raw = _check_fields(raw, _OP_FIELDS, where)
    attrs = raw.get("attrs", {})
    if not isinstance(attrs, dict):
        raise FormatError(f"{where}.attrs must be an object")
    op_id = raw["id"]
    if not isinstance(op_id, str):
        raise FormatError(f"{where}.id must be a string, got {op_id!r}")
    try:
        attrs = normalize_op_attrs(str(raw.get("kind", "op")), attrs, op=op_id)
    except FormatError as exc:
        raise FormatError(f"{where}: {exc}") from None
    return Op(op_id, kind=str(raw.get("kind", "op")), device=str(raw.get("device", "gpu")),
              flops=raw.get("flops", 0.0), bytes_read=raw.get("bytes_read", 0),
              bytes_written=raw.get("bytes_written", 0),
              inputs=_str_list(raw.get("inputs", []), f"{where}.inputs"),
              outputs=_str_list(raw.get("outputs", []), f"{where}.outputs"),
              thread_blocks=raw.get("thread_blocks"), duration_us=raw.get("duration_us"),
              workspace_bytes=raw.get("workspace_bytes", 0),
              attrs=_attrs_from_json(str(raw.get("kind", "op")), attrs, where))


def _tensor(raw: Any, where: str) -> Tensor:
    raw = _check_fields(raw, _TENSOR_FIELDS, where)
    shape = raw.get("shape", [])
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise FormatError(f"{where}.shape must be a list of non-negative integers, got {shape!r}")
    size = raw.get("size_bytes", 0)
    if (isinstance(size, bool) or not isinstance(size, (int, float)) or size < 0
            or isinstance(size, float) and not math.isfinite(size) or size >= 1 << 63):
        raise FormatError(f"{where} ({raw['id']!r}): size_bytes must be a non-negative number, "
                          f"got {size!r}")
    producer = raw.get("producer")
    if producer is not None and not isinstance(producer, str):
        raise FormatError(f"{where}.producer must be an op id or null, got {producer!r}")
    role = check_choice(raw.get("role", "activation"), TENSOR_ROLES,
                        f"{where} ({show(raw['id'])}) role", error=FormatError)
    dtype = check_choice(raw.get("dtype", "float32"), TENSOR_DTYPES,
                         f"{where} ({show(raw['id'])}) dtype", error=FormatError)
    return Tensor(str(raw["id"]), int(size), producer=producer, role=role, shape=tuple(shape),
                  dtype=dtype)


def _line_hint(text: str, raw: Any) -> str:
    if not text or not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        return ""
    match = re.search(r'"id"\s*:\s*' + re.escape(json.dumps(raw["id"])), text)
    if not match:
        return ""
    return f" (line {text.count(chr(10), 0, match.start()) + 1})"
