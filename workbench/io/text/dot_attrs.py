"""Which DOT attributes :func:`workbench.io.text.dot.load_dot` accepts, and the check that says so.

Workbench attributes (``kind``, ``device``, ``flops``, ...) set op figures.  Op attributes of
the vocabulary (:mod:`workbench.ops.attrs`: ``kernel``, ``stride``, ``perm``, ... and their
synonyms ``kernel_shape``, ``strides``, ``group`` ...) set ``Op.attrs`` where the node's kind
reads them (:func:`op_attrs`: the value parsed by the attribute's type, the synonym renamed).
Graphviz's own attributes (``label``, ``shape``, ``color``, ``rankdir``, ... : the names of
https://graphviz.org/doc/info/attrs.html) only draw the graph and are accepted and ignored (a
name that is both, e.g. ``group`` or ``shape``, is the op's when its kind reads it and the value
reads as the attribute's type: ``shape="2,3"`` on a reshape, not ``shape=box``).  Any other
name is a typo that would silently change the result (``flopz=3``), so it is an error that names
it, its line, and the nearest workbench attribute.

The *full form* (what :func:`workbench.io.text.dot_write.to_dot` writes, marked by the graph
attribute ``format``) carries every field of :func:`~workbench.io.text.json_format.graph_to_dict`:
the op fields are node attributes and the other graph fields graph attributes, both named as in
the JSON format and read from it (:func:`op_fields`, :func:`graph_fields`), so the two formats
cannot drift; :func:`full_graph` builds the graph through
:func:`~workbench.io.text.json_format.graph_from_dict`.  Byte counts are whole numbers in both
forms.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from typing import Any

from workbench._checks import (
    decode_json,
    did_you_mean,
    parse_json,
    recursion_headroom,
    show,
)
from workbench.errors import FormatError, GraphError
from workbench.io.text.json_format import _FRAMES_PER_LEVEL, graph_from_dict, graph_to_dict
from workbench.ops import OPS, canonical_kind, normalize_op_attrs
from workbench.ops.attrs import ATTRIBUTES, TYPES
from workbench.values.graph import Graph, Op
from workbench.values.graph_items import MAX_CONTROL_DEPTH

#: Numeric node attributes -> the op figure they set (``size``, ``bytes``, ``size_bytes``: output).
NUMBER_ATTRS = {"flops": "flops", "duration_us": "duration_us", "thread_blocks": "thread_blocks",
                "size": "size", "bytes": "size", "size_bytes": "size",
                "bytes_read": "bytes_read", "bytes_written": "bytes_written",
                "workspace_bytes": "workspace_bytes"}
#: Node attributes of files without ``graph [format=...]`` only (one ``"<id>:out"`` tensor).
SHORT_FORM_ATTRS = frozenset({"size", "bytes", "size_bytes"})
#: Recursion headroom for reading and writing control flow to its depth limit, as the JSON
#: format's (a control-flow op's sub-graphs travel as JSON in its ``attrs``).
NESTING_FRAMES = _FRAMES_PER_LEVEL * MAX_CONTROL_DEPTH
#: Byte counts among :data:`NUMBER_ATTRS`' figures: whole numbers.
BYTE_FIGURES = frozenset({"size", "bytes_read", "bytes_written", "workspace_bytes"})


@functools.cache
def _template() -> dict[str, Any]:
    """graph_to_dict of a one-op graph: which fields the JSON format writes, and their types."""
    return graph_to_dict(Graph([Op("o", outputs=("t",))], name="g"))


def op_fields() -> tuple[str, ...]:
    """The op fields of the JSON format (``kind``, ``flops``, ``inputs``, ``attrs`` ...) but
    ``id``: the node attributes of the full form."""
    return tuple(k for k in _template()["ops"][0] if k != "id")


def graph_fields() -> tuple[str, ...]:
    """The graph fields of the JSON format that the full form keeps as graph attributes (all
    but ``name``, the ``digraph`` id; ``ops``, the nodes; ``control_edges``, the dashed edges)."""
    return tuple(k for k in _template() if k not in ("name", "ops", "control_edges"))


@functools.cache
def text_field(name: str) -> bool:
    """Whether the JSON field ``name`` holds text (``kind``, ``device``, ``format``): written as
    a DOT string; every other field is written and read as JSON."""
    template = _template()
    return isinstance(template["ops"][0].get(name, template.get(name)), str)


NODE_ATTRS = frozenset({"kind", "device", *NUMBER_ATTRS, *op_fields()})
#: Op attributes of the vocabulary, and their synonyms (a node's kind decides which it reads).
OP_ATTRS = frozenset({*ATTRIBUTES, *(s for a in ATTRIBUTES.values() for s in a.synonyms)})
EDGE_ATTRS = frozenset({"kind", "style"})
EDGE_TYPES = ("data", "control")

GRAPHVIZ_ATTRS = frozenset("""
_background area arrowhead arrowsize arrowtail bb beautify bgcolor center charset class cluster
clusterrank color colorscheme comment compound concentrate constraint Damping decorate defaultdist
dim dimen dir diredgeconstraints distortion dpi edgehref edgetarget edgetooltip edgeURL epsilon esep
fillcolor fixedsize fontcolor fontname fontnames fontpath fontsize forcelabels gradientangle group
head_lp headclip headhref headlabel headport headtarget headtooltip headURL height href id image
imagepath imagepos imagescale inputscale K label label_scheme labelangle labeldistance labelfloat
labelfontcolor labelfontname labelfontsize labelhref labeljust labelloc labeltarget labeltooltip
labelURL landscape layer layerlistsep layers layerselect layersep layout len levels levelsgap lhead
lheight linelength lp ltail lwidth margin maxiter mclimit mindist minlen mode model newrank nodesep
nojustify normalize notranslate nslimit nslimit1 oneblock ordering orientation outputorder overlap
overlap_scaling overlap_shrink pack packmode pad page pagedir pencolor penwidth peripheries pin pos
quadtree quantum radius rank rankdir ranksep ratio rects regular remincross repulsiveforce
resolution root rotate rotation samehead sametail samplepoints scale searchsize sep shape shapefile
showboxes sides size skew smoothing sortv splines start style stylesheet tail_lp tailclip tailhref
taillabel tailport tailtarget tailtooltip tailURL target TBbalance tooltip truecolor URL vertices
viewport voro_margin weight width xdotversion xlabel xlp z
""".split())

#: Op attributes that are neither workbench node attributes nor Graphviz's: an error on a
#: node whose kind does not read them.
_STRICT_OP_ONLY = OP_ATTRS - NODE_ATTRS - GRAPHVIZ_ATTRS
_OWN = {"node": NODE_ATTRS, "edge": EDGE_ATTRS, "graph": frozenset(graph_fields())}


def check_attr(context: str, key: str, value: str, where: str) -> None:
    """A one-line FormatError unless ``key`` is a workbench attribute of a ``context``
    (``"node"``, ``"edge"``, ``"graph"``) statement or a Graphviz attribute; an edge's ``kind``
    must be ``data`` or ``control``.  ``where`` is ``"<file>: line <n>"``."""
    own = _OWN[context]
    if key == "kind" and context == "edge" and value.casefold() not in EDGE_TYPES:
        raise FormatError(f"{where}: edge kind {show(value)} is not one of "
                          f"{', '.join(EDGE_TYPES)}")
    if key in own or key in GRAPHVIZ_ATTRS or context == "node" and key in OP_ATTRS:
        return
    hint = did_you_mean(key, own) or did_you_mean(key, GRAPHVIZ_ATTRS)
    mine = f"workbench {context} attributes: {', '.join(sorted(own))}; " if own else ""
    raise FormatError(f"{where}: unknown {context} attribute {show(key)}{hint} ({mine}Graphviz's "
                      f"own attributes are accepted and ignored)")


@functools.cache
def _read_by(kind: str) -> tuple[frozenset[str], dict[str, str]]:
    """The attributes ``kind`` reads and their spellings (synonyms too) -> the attribute."""
    info = OPS.get(canonical_kind(kind))
    reads = frozenset(info.attrs) if info is not None else frozenset()
    return reads, {s: a for a in reads for s in (a, *ATTRIBUTES[a].synonyms)}


def op_attrs(node_id: str, kind: str, raw: dict[str, tuple[str, int]],
             where: str) -> dict[str, Any]:
    """The op attributes of a DOT node of ``kind``: every key of ``raw`` (``key -> (text,
    line)``) that is no workbench figure and that the kind reads (itself or a synonym), parsed by
    its type and normalised (:func:`workbench.ops.normalize_op_attrs`).  A vocabulary
    name the kind does not read (and Graphviz does not use) is a one-line error naming it, the
    node and what the kind reads; so is a value of the wrong type.  O(attributes)."""
    reads, names = _read_by(kind)
    if "attrs" not in raw and names.keys().isdisjoint(raw) and _STRICT_OP_ONLY.isdisjoint(raw):
        return {}  # nothing the kind reads, nothing to refuse (most nodes)
    found: dict[str, Any] = {}
    for key, (text, line) in raw.items():
        if key in NODE_ATTRS:
            continue
        name = names.get(key)
        if name is None:
            if key in OP_ATTRS and key not in GRAPHVIZ_ATTRS:
                listed = ", ".join(sorted(reads)) or "none"
                raise FormatError(f"{where}: line {line}: node {show(node_id)} (kind "
                                  f"{show(kind)}) has attribute {show(key)}, which its kind "
                                  f"does not read (it reads: {listed})")
            continue
        value = _parsed(text, ATTRIBUTES[name].type)
        check, _ = TYPES[ATTRIBUTES[name].type]
        if key in GRAPHVIZ_ATTRS and not check(value):
            continue  # Graphviz's (``shape=box``): the op's only when it reads as the op's type
        found[key] = value
    line = min((ln for _, ln in raw.values()), default=0)
    try:
        found = normalize_op_attrs(kind, found, op=node_id)
        if "attrs" not in raw:
            return found
        text, line = raw["attrs"]
        given = field_value("attrs", text, f"{where}: line {line}: node {show(node_id)}")
        if not isinstance(given, dict):
            raise FormatError(f"node {show(node_id)}: attrs must be a JSON object, got "
                              f"{type(given).__name__}")
        given = normalize_op_attrs(kind, given, op=node_id)
    except FormatError as exc:
        if str(exc).startswith(where):
            raise
        raise FormatError(f"{where}: line {line}: {exc}") from None
    for key, value in found.items():
        if key in given and given[key] != value:
            raise FormatError(f"{where}: line {line}: node {show(node_id)}: attribute "
                              f"{show(key)} and attrs[{show(key)}] say different things "
                              f"({show(value)} and {show(given[key])}); keep one")
    return {**given, **found}


def field_value(name: str, text: str, where: str) -> Any:
    """The value of the JSON field ``name`` written as DOT attribute ``text``: a text field's
    text as it is, any other field's JSON (a DOT numeral such as ``.5`` is a number too); a byte
    count (a field named ``*bytes*``) must be a whole number.  ``where`` starts the one-line
    :class:`FormatError` (file, line, node).  O(len(text))."""
    if text_field(name):
        return text
    value = _number(text) if text[:1] in "-.0123456789" else None  # most fields: one numeral
    if value is not None:
        return whole_bytes(name, value, where) if "bytes" in name else value
    try:
        value = parse_json(text, f"{where}: {name}")
    except FormatError:
        value = _number(text)
        if value is None:
            raise
    except ValueError as exc:  # an integer of more digits than int() converts
        raise FormatError(f"{where}: {name}: {str(exc).splitlines()[0]}") from None
    return whole_bytes(name, value, where) if "bytes" in name else value


#: A JSON list of strings without escapes or control characters (its items split at ``","``).
_PLAIN_LIST = re.compile(r'\["[^"\\\x00-\x1f]*+"(?:,"[^"\\\x00-\x1f]*+")*+\]').fullmatch
_SLOW = object()  # _quick_value: "ask field_value" (it names what is wrong)


@functools.cache
def _op_field_kinds() -> dict[str, bool]:
    """The op fields of the full form but ``attrs`` (read by :func:`op_attrs`) -> whether the
    field holds text."""
    return {k: text_field(k) for k in op_fields() if k != "attrs"}


def _quick_value(name: str, text: str) -> Any:
    """:func:`field_value` of a well-formed ``text`` without composing the message it would
    need (``where``, per attribute, cost more than the value); ``_SLOW`` whenever
    :func:`field_value` could say anything else than the value (it is then asked)."""
    if text_field(name):
        return text
    value: Any
    if text.isdecimal() and text.isascii():  # a plain count (sizes, thread blocks)
        try:
            return int(text)
        except ValueError:  # more digits than int() converts: field_value's answer
            return _SLOW
    if text[:2] == '["' and _PLAIN_LIST(text):  # a list of plain strings (inputs, outputs)
        return text[2:-2].split('","')
    if text[:1] in "-.0123456789" and text:
        try:  # _number's answer, without int() failing first on every float
            value = float(text) if "." in text or "e" in text or "E" in text else int(text)
        except ValueError:
            value = _number(text)
    else:
        try:
            value = decode_json(text)  # parse_json's decoder
        except Exception:  # noqa: BLE001 - any failure: field_value says what it is
            return _SLOW
    if value is None or isinstance(value, float) and "bytes" in name:
        return _SLOW
    return value


def whole_bytes(name: str, value: Any, where: str) -> Any:
    """``value`` of byte count ``name`` as an int: a float must be whole (``1e6``, not ``1.5``);
    a value of another type is left for the graph's checks to name.  O(1)."""
    if isinstance(value, float) and math.isfinite(value) and abs(value) < 2.0**63:
        if value != int(value):
            raise FormatError(f"{where}: {name} must be a whole number of bytes, got {value!r}")
        return int(value)
    return value


_PLACE = re.compile(r"(ops|tensors)\[(\d+)\]")


def full_graph(name: str, top: dict[str, tuple[str, int]],
               nodes: dict[str, tuple[int, dict[str, tuple[str, int]]]],
               edges: list[tuple[str, str, bool, int]], where: str) -> Graph:
    """The graph of a full-form file: graph attributes ``top`` and nodes (``id -> (line,
    attrs)``) as the JSON format's fields, through
    :func:`~workbench.io.text.json_format.graph_from_dict`; dashed edges in order are the control
    edges, and the data edges drawn must be those the ops' inputs make (a one-line error names
    the first that differs).  O(size of the file).  Runs with the JSON reader's recursion
    headroom (control flow to its depth limit loads from any caller's stack depth)."""
    with recursion_headroom(NESTING_FRAMES):
        return _full_graph(name, top, nodes, edges, where)


def _full_graph(name: str, top: dict[str, tuple[str, int]],
                nodes: dict[str, tuple[int, dict[str, tuple[str, int]]]],
                edges: list[tuple[str, str, bool, int]], where: str) -> Graph:
    data: dict[str, Any] = {"name": name}
    for key, (text, line) in top.items():
        data[key] = field_value(key, text, f"{where}: line {line}: graph attribute")
    for i, t in enumerate(data.get("tensors") or []):
        if isinstance(t, dict) and isinstance(t.get("size_bytes"), float):  # else as it is
            here = f"{where}: line {top['tensors'][1]}: tensors[{i}] ({show(t.get('id'))})"
            t["size_bytes"] = whole_bytes("size_bytes", t["size_bytes"], here)
    fields = _op_field_kinds()
    ops, lines = [], []
    for node_id, (line, raw) in nodes.items():
        op: dict[str, Any] = {"id": node_id}
        for key, (text, at) in raw.items():
            textual = fields.get(key)
            if textual is None:
                if key in SHORT_FORM_ATTRS:
                    raise FormatError(f"{where}: line {at}: node {show(node_id)}: {key} is for "
                                      f"files without graph [format=...]; here tensor sizes "
                                      f"are the size_bytes of the graph's tensors attribute")
                continue
            value = text if textual else _quick_value(key, text)
            if value is _SLOW:
                value = field_value(key, text, f"{where}: line {at}: node {show(node_id)}")
            op[key] = value
        attrs = op_attrs(node_id, str(op.get("kind", "op")), raw, where)
        if attrs:
            op["attrs"] = attrs
        ops.append(op)
        lines.append(line)
    data["ops"] = ops
    data["control_edges"] = [[a, b] for a, b, control, _ in edges if control]
    try:
        graph = graph_from_dict(data)
    except (FormatError, GraphError) as exc:
        place = _PLACE.match(str(exc))
        if place and place.group(1) == "ops":
            prefix = f"{where}: line {lines[int(place.group(2))]}"
        elif place:
            prefix = f"{where}: line {top['tensors'][1]}: graph attribute tensors"
        else:
            prefix = where
        raise type(exc)(f"{prefix}: {exc}".replace("\n", "\\n")) from None
    _same_data_edges(graph, edges, nodes, where)
    return graph


_ENDS, _IS_CONTROL = operator.itemgetter(0, 1), operator.itemgetter(2)


def _same_data_edges(graph: Graph, edges: list[tuple[str, str, bool, int]],
                     nodes: dict[str, tuple[int, dict[str, tuple[str, int]]]], where: str) -> None:
    """A one-line error unless the solid edges drawn are the data edges of ``graph``. O(E)."""
    listed = graph.data_edges
    if any(map(_IS_CONTROL, edges)):
        pairs = [(a, b) for a, b, control, _ in edges if not control]
    else:
        pairs = list(map(_ENDS, edges))
    if len(pairs) == len(listed) and tuple(pairs) == listed:
        return  # as to_dot draws them: nothing to name
    made = set(listed)
    if made == set(pairs):
        return
    drawn: dict[tuple[str, str], int] = {}
    for a, b, control, line in edges:
        if not control:
            drawn.setdefault((a, b), line)
            if (a, b) not in made:
                raise FormatError(f"{where}: line {line}: edge {show(a)} -> {show(b)}: "
                                  f"{show(b)} reads no output of {show(a)} (in a file with "
                                  f"graph [format=...] the data edges follow the ops' inputs; "
                                  f"a dependency without data is [style=dashed])")
    for a, b in graph.data_edges:
        if (a, b) not in drawn:
            raise FormatError(f"{where}: line {nodes[b][0]}: node {show(b)} reads an output of "
                              f"{show(a)}, but the file has no edge {show(a)} -> {show(b)}")


def _parsed(text: str, type_: str) -> Any:
    """A DOT attribute value as the Python value its type wants: numbers, ``true``/``false``,
    lists (``3,3``, ``[3, 3]`` or ``(3 3)``); anything unparsable stays text (the type check
    then names it)."""
    if type_ in ("str", "dtype"):
        return text
    if type_ == "bool" and text.casefold() in ("true", "false"):
        return text.casefold() == "true"
    items = text.strip().strip("[]()").replace(",", " ").split()
    values = [_number(v) for v in items]
    if any(v is None for v in values) or not values:
        return text
    if type_ in ("ints", "numbers") or len(values) > 1 or text.strip()[:1] in "[(":
        return values
    return values[0]


def _number(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


__all__ = ["BYTE_FIGURES", "EDGE_ATTRS", "GRAPHVIZ_ATTRS", "NESTING_FRAMES", "NODE_ATTRS",
           "NUMBER_ATTRS", "OP_ATTRS", "SHORT_FORM_ATTRS", "check_attr", "field_value",
           "full_graph", "graph_fields", "op_attrs", "op_fields", "text_field", "whole_bytes"]
