"""DOT (Graphviz) export: every field the JSON format keeps, as DOT attributes.

:func:`to_dot` writes the *full form* that :func:`workbench.io.text.dot.load_dot` reads back into an
equal graph.  The attributes come from :func:`~workbench.io.text.json_format.graph_to_dict` (one
source for both formats, so they cannot drift):

* a ``graph [format=..., version=..., outputs="[...]", tensors="[...]"]`` statement holds the
  graph-level fields other than the name (the ``digraph`` id), the ops (the nodes) and the
  control edges (the dashed edges); ``tensors`` is the JSON list of tensor records (id,
  size_bytes, producer, role, shape, dtype) in the graph's order;
* each op is a node whose attributes are its JSON fields: text fields (``kind``, ``device``)
  as DOT strings, numbers as DOT numerals, lists and objects (``inputs``, ``outputs``,
  ``attrs`` with its nested values and a control-flow op's sub-graphs) as one quoted JSON
  string; a field that is ``null`` or empty is left out (the reader's default);
* data edges ``a -> b`` (drawn; the reader checks they match the ops' inputs) and control edges
  ``a -> b [style=dashed, kind="control"]`` in the graph's order.

Names are quoted and escaped (``"`` and ``\\``); a name that UTF-8 cannot hold (a lone
surrogate) is refused in one line, since JSON escapes it and DOT cannot.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workbench._atomic import write_bytes
from workbench._checks import recursion_headroom
from workbench.errors import FormatError
from workbench.io.text.dot_attrs import NESTING_FRAMES, graph_fields, text_field
from workbench.io.text.json_format import graph_to_dict
from workbench.values.graph import Graph


def quote(text: str) -> str:
    """``text`` as a DOT quoted string: ``"`` and ``\\`` escaped, everything else as is."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot_value(field_name: str, value: Any) -> str:
    """One JSON field as a DOT attribute value: a text field (:func:`text_field`) quoted as it
    is, an int or a float as a numeral (its JSON spelling, which reads back exactly), anything
    else as quoted JSON.  O(size of value)."""
    if text_field(field_name) and isinstance(value, str):
        return quote(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    encoded = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in a name: JSON's \udxxx escape keeps it
        encoded = json.dumps(value, separators=(",", ":"))
    return quote(encoded)


def to_dot(graph: Graph) -> str:
    """The graph as DOT text in the full form (module docstring); O(size of the graph).  Runs
    with the recursion headroom of the JSON writer: control flow to its depth limit is written
    from any caller's stack depth."""
    with recursion_headroom(NESTING_FRAMES):
        return _to_dot(graph)


def _to_dot(graph: Graph) -> str:
    data = graph_to_dict(graph)
    top = [f"{key}={dot_value(key, data[key])}" for key in graph_fields() if key in data]
    lines = [f"digraph {quote(data['name'])} {{", f"  graph [{', '.join(top)}];",
             "  rankdir=TB;", "  node [shape=box];"]
    for op in data["ops"]:
        attrs = [f"{key}={dot_value(key, value)}" for key, value in op.items()
                 if key != "id" and value is not None and value != [] and value != {}]
        attrs.append(f"label={quote(op['id'] + chr(10) + str(op['kind']))}")
        lines.append(f"  {quote(op['id'])} [{', '.join(attrs)}];")
    for a, b in graph.data_edges:
        lines.append(f"  {quote(a)} -> {quote(b)};")
    for a, b in data["control_edges"]:
        lines.append(f'  {quote(a)} -> {quote(b)} [style=dashed, kind="control"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def save_dot(graph: Graph, path: str | Path) -> Path:
    """Write :func:`to_dot` to ``path`` through the safe writer; a name UTF-8 cannot hold is a
    one-line :class:`FormatError` (save such a graph as ``.json``)."""
    path = Path(path)
    text = to_dot(graph)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FormatError(f"{path}: a name holds {exc.object[exc.start:exc.end]!r}, a lone "
                          f"surrogate that UTF-8 (and so DOT) cannot hold; save as .json "
                          f"(it escapes it)") from None
    return write_bytes(path, data)


__all__ = ["dot_value", "quote", "save_dot", "to_dot"]
