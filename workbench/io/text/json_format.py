"""The graph JSON format (documented in docs/graph-format.md): reader and writer.

Two shapes are accepted:

* **full**: ``{"format": "schedule-workbench-graph", "version": 1, "name", "tensors": [...],
  "ops": [...], "control_edges": [[a, b], ...], "outputs": [...]}`` — what :func:`save` writes;
* **edge list**: ``{"edges": [[a, b], ...], "ops": {"a": "conv2d", ...}, "sizes": {...},
  "durations": {...}}`` — the :meth:`Graph.from_edges` short form, handy to write by hand.

Errors are one line and name the file and the place: a JSON syntax error gives its line and column;
a schema error gives the JSON path (``ops[3].flops``) and the line where that op starts.

Op attributes are read in the op vocabulary (:func:`workbench.ops.normalize_op_attrs`): a
synonym of an attribute the op's kind reads becomes the vocabulary's name (``kernel_shape`` ->
``kernel``, ``pads`` -> ``padding``, ``transB`` -> ``trans_b``), and a value of the wrong type
for such an attribute is a one-line error naming the op and the attribute.

Control-flow ops (``while``, ``case_of``; :mod:`workbench.control`) keep their sub-graphs inside
``attrs`` in the full form, nested up to :data:`~workbench.values.graph_items.MAX_CONTROL_DEPTH`
(100) levels (deeper is a one-line error, here and wherever a Graph is built): ``cond``/``body`` are
graph objects,
``branches`` a list of ``{"name", "graph"}``; ``carried`` a list of ``[state, init, next]``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from workbench._atomic import check_op_count, max_ops, read_input, write_chunks
from workbench._checks import (
    check_choice,
    check_keys,
    did_you_mean,
    parse_json,
    recursion_headroom,
    show,
)
from workbench._gc import without_gc
from workbench._progress import Reading, reading
from workbench.errors import FormatError, GraphError
from workbench.ops import normalize_op_attrs
from workbench.values.graph import CONTROL_KINDS, Graph, Op, Tensor
from workbench.values.graph_items import MAX_CONTROL_DEPTH

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
    """An op's attrs as JSON; a control-flow op's sub-graphs converted once each (not walked
    again by :func:`_jsonable`: that was O(depth²) and as deep a recursion as the file)."""
    attrs = dict(op.attrs)
    graphs: dict[str, Any] = {}
    if op.kind in CONTROL_KINDS:
        for key in ("cond", "body"):
            if isinstance(attrs.get(key), Graph):
                graphs[key] = graph_to_dict(attrs.pop(key))
        if "branches" in attrs:
            graphs["branches"] = [{"name": str(n), "graph": graph_to_dict(g)}
                                  for n, g in attrs.pop("branches")]
    out: dict[str, Any] = _jsonable(attrs)
    if not graphs:
        return out
    return {str(k): graphs[k] if k in graphs else out[str(k)] for k in op.attrs}  # same order


def _attrs_from_json(kind: str, attrs: dict[str, Any], where: str, depth: int) -> dict[str, Any]:
    """Sub-graphs and tuples back from the JSON form of a control-flow op's attrs (``depth``:
    how deep the op's graph is nested)."""
    if kind not in CONTROL_KINDS:
        return attrs
    out = dict(attrs)
    for key in ("flag", "selector"):
        if not isinstance(out.get(key), (str, type(None))):
            raise FormatError(f"{where}.attrs.{key} must be a tensor id or null, got "
                              f"{show(out[key], 40)}")
    for key in ("cond", "body"):
        if key in out:
            out[key] = _subgraph(out[key], f"{where}.attrs.{key}", depth)
    if "branches" in out:
        raw = out["branches"]
        if not isinstance(raw, list) or not all(isinstance(b, dict) and set(b) == {"name",
                                                                                   "graph"}
                                                for b in raw):
            raise FormatError(f"{where}.attrs.branches must be a list of {{\"name\", \"graph\"}} "
                              f"objects")
        out["branches"] = tuple((str(b["name"]), _subgraph(b["graph"], f"{where}.attrs."
                                                           f"branches[{k}].graph", depth))
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


class _TooDeep(FormatError):
    """Control flow nested past :data:`MAX_CONTROL_DEPTH`: raised where the limit is crossed,
    passed up unprefixed (a path of 100 levels is no one-line message)."""


def _subgraph(raw: Any, where: str, depth: int) -> Graph:
    if depth >= MAX_CONTROL_DEPTH:
        raise _TooDeep(f"control flow nested more than {MAX_CONTROL_DEPTH} levels deep (the "
                       f"most the workbench handles)")
    try:
        return graph_from_dict(raw, _depth=depth + 1)
    except _TooDeep:
        raise
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
    with recursion_headroom(_FRAMES_PER_LEVEL * MAX_CONTROL_DEPTH):
        data = graph_to_dict(graph)
        # streamed: the text of a 500,000-op graph is never whole in memory (the same bytes as
        # json.dumps(data, indent=1) would give)
        return write_chunks(path, _batched(json.JSONEncoder(indent=1).iterencode(data),
                                           "\n"))


def _batched(pieces: Iterator[str], end: str, size: int = 1 << 16) -> Iterator[str]:
    """``pieces`` then ``end``, joined into strings of about ``size`` characters (the encoder
    yields one token at a time; one write per token would be slow)."""
    batch: list[str] = []
    length = 0
    for piece in pieces:
        batch.append(piece)
        length += len(piece)
        if length >= size:
            yield "".join(batch)
            batch, length = [], 0
    batch.append(end)
    yield "".join(batch)


#: Python frames (and JSON nesting levels) one level of control flow takes to read or write:
#: ~7 JSON levels (``{"ops": [{"attrs": {"branches": [{"graph": {``) and ~5 calls.
_FRAMES_PER_LEVEL = 12


@without_gc  # ~10 containers an op, none garbage: collections would only walk them (27 -> 22 us)
def load_json(path: str | Path) -> Graph:
    """Read a graph file; every problem is a one-line :class:`FormatError` naming the file.
    More than :func:`~workbench._atomic.max_ops` ops are refused once the JSON is parsed,
    before any op is built.  A big file shows a bar (:func:`workbench._progress.reading`); its
    text and each op's parsed JSON are dropped once used (a lower peak of memory)."""
    path = Path(path)
    data = read_input(path, what="graph file")
    with reading(path.name, len(data)) as bar:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise FormatError(f"{path}: not a text file (is it really JSON?)") from None
        del data
        bar.phase(f"parsing {show(path.name, 40)}")
        with recursion_headroom(_FRAMES_PER_LEVEL * MAX_CONTROL_DEPTH):  # the deepest loads
            parsed = parse_json(text, path, nested=f"JSON nested too deeply to be a graph file "
                                                   f"(control flow nests at most "
                                                   f"{MAX_CONTROL_DEPTH} levels)")
            del text  # re-read for a line number only if a message needs one
            try:
                return graph_from_dict(parsed, text=lambda: _text_of(path), _bar=bar,
                                       _consume=True)
            except (FormatError, GraphError) as exc:
                kind = GraphError if isinstance(exc, GraphError) else FormatError
                raise kind(f"{path}: {exc}") from None


def _text_of(path: Path) -> str:
    return read_input(path, what="graph file").decode("utf-8")


def graph_from_dict(data: Any, *, text: str | Callable[[], str] = "", _depth: int = 0,
                    _bar: Reading | None = None, _consume: bool = False) -> Graph:
    """Build a graph from the parsed JSON (either shape); control flow nested past
    :data:`~workbench.values.graph_items.MAX_CONTROL_DEPTH` levels, or more than
    :func:`~workbench._atomic.max_ops` ops (``WORKBENCH_MAX_OPS``), is a one-line error.
    ``text``: the JSON text (or a function that reads it), for the line number of an op named
    in an error.  ``_consume``: ``data`` is the reader's own, and each op's and tensor's parsed
    JSON is dropped from it once built.  O(ops + tensors + edges)."""
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
    tensors_raw = _list(data.get("tensors", []), "tensors")
    check_op_count(len(ops_raw), "'ops' lists")
    bar = _bar if _bar is not None and _depth == 0 else None
    if bar is not None:
        bar.phase("building tensors and ops", total=len(tensors_raw) + len(ops_raw),
                  unit="item")
    tensors = []
    for i, t in enumerate(tensors_raw):
        tensors.append(_tensor_plain(t) or _tensor(t, f"tensors[{i}]"))
        if _consume:
            tensors_raw[i] = None
        if bar is not None and (i + 1) % bar.every == 0:
            bar.advance(bar.every)
    ops = []
    for i, raw in enumerate(ops_raw):
        op = _op_plain(raw)
        if op is None:
            try:
                op = _op(raw, f"ops[{i}]", _depth)
            except _TooDeep:
                raise
            except FormatError as exc:
                raise FormatError(f"{exc}{_line_hint(text, raw)}") from None
        ops.append(op)
        if _consume:
            ops_raw[i] = None
        if bar is not None and (i + len(tensors_raw) + 1) % bar.every == 0:
            bar.advance(bar.every)
    control = []
    for i, e in enumerate(_list(data.get("control_edges", []), "control_edges")):
        if not (type(e) is list and len(e) == 2 and type(e[0]) is str and type(e[1]) is str):
            raise FormatError(f"control_edges[{i}] must be a pair of op ids, got {show(e)}")
        control.append((e[0], e[1]))
    outputs = data.get("outputs")
    if outputs is not None:
        outputs = [str(t) for t in _list(outputs, "outputs")]
    if bar is not None:
        bar.phase("checking the graph")
    return Graph(ops, tensors, control, outputs=outputs, name=_name(data))


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
        if not (type(e) is list and len(e) == 2 and type(e[0]) is str and type(e[1]) is str):
            raise FormatError(f"edges[{i}] must be a pair of op ids, got {show(e)}")
        edges.append((e[0], e[1]))
    ops = data.get("ops")
    if ops is not None and not isinstance(ops, (dict, list)):
        raise FormatError(f"'ops' must be an object (id -> kind) or a list of ids, got "
                          f"{type(ops).__name__}")
    if ops is not None:
        if isinstance(ops, list) and not all(isinstance(k, str) for k in ops):
            raise FormatError("'ops' must list op ids (strings)")
        if isinstance(ops, list) and len(set(ops)) != len(ops):
            seen: set[str] = set()
            for twice in ops:  # the first repeat, in one pass (not a scan of each prefix)
                if twice in seen:
                    break
                seen.add(twice)
            raise FormatError(f"'ops' lists op {show(twice)} twice")
        if isinstance(ops, dict) and not all(isinstance(v, str) for v in ops.values()):
            raise FormatError("'ops' must map op ids to op types (strings)")
        declared = set(ops)
        for i, (a, b) in enumerate(edges):
            for end in (a, b):
                if end not in declared:
                    raise FormatError(f"edges[{i}] names op {show(end)}, which 'ops' does not "
                                      f"declare{did_you_mean(end, declared)}")
        check_op_count(len(ops), "'ops' lists")
    elif 2 * len(edges) > max_ops():  # only then can the ends name too many ops
        check_op_count(len({x for e in edges for x in e}), "the edges name")
    tables = {}
    for key in ("sizes", "durations", "thread_blocks", "devices"):
        table = data.get(key, {})
        if not isinstance(table, dict):
            raise FormatError(f"'{key}' must be an object keyed by op id")
        tables[key] = table
    return Graph.from_edges(edges, ops, name=_name(data), **tables)


def _name(data: dict[str, Any]) -> str:
    """The graph's ``name``: a string (``true``, ``5e-324`` or a list is a one-line error)."""
    name = data.get("name", "graph")
    if not isinstance(name, str):
        raise FormatError(f"'name' must be a string, got {type(name).__name__} {show(name, 40)}")
    return name


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


_BYTE_FIELDS = ("bytes_read", "bytes_written", "workspace_bytes")
_ROLES = frozenset(TENSOR_ROLES)
_DTYPES = frozenset(TENSOR_DTYPES)


def _op_plain(raw: Any) -> Op | None:
    """The op of ``raw`` when it is plainly well formed (known fields, strings where strings
    go, whole byte counts as integers, no control flow), built without composing the messages
    :func:`_op` would need; ``None`` otherwise, and then :func:`_op` builds it or says what is
    wrong.  The common case of a big file, at a fraction of :func:`_op`'s cost."""
    if type(raw) is not dict or not raw.keys() <= _OP_FIELDS:
        return None
    get = raw.get
    op_id, kind, device = get("id"), get("kind", "op"), get("device", "gpu")
    if type(op_id) is not str or type(kind) is not str or type(device) is not str \
            or kind in CONTROL_KINDS:
        return None
    for key in _BYTE_FIELDS:
        if type(get(key, 0)) is float:
            return None
    inputs, outputs, attrs = get("inputs", []), get("outputs", []), get("attrs")
    for names in (inputs, outputs):
        if type(names) is not list or not all(type(t) is str for t in names):
            return None
    if attrs:
        if type(attrs) is not dict:
            return None
        try:
            attrs = normalize_op_attrs(kind, attrs, op=op_id)
        except FormatError:
            return None
    elif attrs is not None and attrs != {}:
        return None
    return Op(op_id, kind=kind, device=device, flops=get("flops", 0.0),
              bytes_read=get("bytes_read", 0), bytes_written=get("bytes_written", 0),
              inputs=tuple(inputs), outputs=tuple(outputs),
              thread_blocks=get("thread_blocks"), duration_us=get("duration_us"),
              workspace_bytes=get("workspace_bytes", 0), attrs=attrs or {})


def _tensor_plain(raw: Any) -> Tensor | None:
    """The tensor of ``raw`` when it is plainly well formed (as :func:`_op_plain` for ops),
    else ``None`` (then :func:`_tensor` builds it or says what is wrong)."""
    if type(raw) is not dict or not raw.keys() <= _TENSOR_FIELDS:
        return None
    get = raw.get
    tid, size, producer = get("id"), get("size_bytes", 0), get("producer")
    role, dtype, shape = get("role", "activation"), get("dtype", "float32"), get("shape", [])
    if type(tid) is not str or type(size) is not int or not 0 <= size < 1 << 63 \
            or (producer is not None and type(producer) is not str) \
            or type(role) is not str or role not in _ROLES \
            or type(dtype) is not str or dtype not in _DTYPES or type(shape) is not list \
            or not all(type(d) is int and d >= 0 for d in shape):
        return None
    return Tensor(tid, size, producer=producer, role=role, shape=tuple(shape), dtype=dtype)


def _op(raw: Any, where: str, depth: int) -> Op:
    raw = _check_fields(raw, _OP_FIELDS, where)
    attrs = raw.get("attrs", {})
    if not isinstance(attrs, dict):
        raise FormatError(f"{where}.attrs must be an object")
    op_id = raw["id"]
    if not isinstance(op_id, str):
        raise FormatError(f"{where}.id must be a string, got {op_id!r}")
    for key in ("kind", "device"):
        if not isinstance(raw.get(key, ""), str):
            raise FormatError(f"{where} ({show(op_id)}): {key} must be a string, got "
                              f"{show(raw[key], 40)}")
    for key in ("bytes_read", "bytes_written", "workspace_bytes"):
        _whole(raw.get(key, 0), f"{where} ({show(op_id)}): {key}")
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
              attrs=_attrs_from_json(str(raw.get("kind", "op")), attrs, where, depth))


def _tensor(raw: Any, where: str) -> Tensor:
    raw = _check_fields(raw, _TENSOR_FIELDS, where)
    shape = raw.get("shape", [])
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise FormatError(f"{where}.shape must be a list of non-negative integers, got {shape!r}")
    size = raw.get("size_bytes", 0)
    _whole(size, f"{where} ({show(raw['id'])}): size_bytes")
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


def _whole(value: Any, where: str) -> None:
    """A byte count given as a fraction (``5e-324``, ``1.5``) is an error: it would be truncated
    (to 0) silently.  Other wrong values are left to the checks that name them."""
    if isinstance(value, float) and 0 < value < 2**63 and not value.is_integer():
        raise FormatError(f"{where} must be a whole number of bytes, got {value!r}")


def _line_hint(text: str | Callable[[], str], raw: Any) -> str:
    if not text or not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        return ""
    if callable(text):
        try:
            text = text()
        except (FormatError, UnicodeDecodeError):  # the file changed meanwhile: no line
            return ""
    match = re.search(r'"id"\s*:\s*' + re.escape(json.dumps(raw["id"])), text)
    if not match:
        return ""
    return f" (line {text.count(chr(10), 0, match.start()) + 1})"
