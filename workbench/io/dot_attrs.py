"""Which DOT attributes :func:`workbench.io.dot.load_dot` accepts, and the check that says so.

Workbench attributes (``kind``, ``device``, ``flops``, ...) set op figures.  Op attributes of
the vocabulary (:mod:`workbench.values.op_attrs`: ``kernel``, ``stride``, ``perm``, ... and their
synonyms ``kernel_shape``, ``strides``, ``group`` ...) set ``Op.attrs`` where the node's kind
reads them (:func:`op_attrs`: the value parsed by the attribute's type, the synonym renamed).
Graphviz's own attributes (``label``, ``shape``, ``color``, ``rankdir``, ... : the names of
https://graphviz.org/doc/info/attrs.html) only draw the graph and are accepted and ignored (a
name that is both, e.g. ``group`` or ``shape``, is the op's when its kind reads it and the value
reads as the attribute's type: ``shape="2,3"`` on a reshape, not ``shape=box``).  Any other
name is a typo that would silently change the result (``flopz=3``), so it is an error that names
it, its line, and the nearest workbench attribute.
"""

from __future__ import annotations

from typing import Any

from workbench._checks import did_you_mean, show
from workbench.errors import FormatError
from workbench.values.op_attrs import ATTRIBUTES, TYPES
from workbench.values.ops import OPS, canonical_kind, normalize_op_attrs

#: Numeric node attributes -> the op figure they set (``size``, ``bytes``, ``size_bytes``: output).
NUMBER_ATTRS = {"flops": "flops", "duration_us": "duration_us", "thread_blocks": "thread_blocks",
                "size": "size", "bytes": "size", "size_bytes": "size",
                "bytes_read": "bytes_read", "bytes_written": "bytes_written",
                "workspace_bytes": "workspace_bytes"}
NODE_ATTRS = frozenset({"kind", "device", *NUMBER_ATTRS})
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

_OWN = {"node": NODE_ATTRS, "edge": EDGE_ATTRS, "graph": frozenset()}


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


def op_attrs(node_id: str, kind: str, raw: dict[str, tuple[str, int]],
             where: str) -> dict[str, Any]:
    """The op attributes of a DOT node of ``kind``: every key of ``raw`` (``key -> (text,
    line)``) that is no workbench figure and that the kind reads (itself or a synonym), parsed by
    its type and normalised (:func:`workbench.values.ops.normalize_op_attrs`).  A vocabulary
    name the kind does not read (and Graphviz does not use) is a one-line error naming it, the
    node and what the kind reads; so is a value of the wrong type.  O(attributes)."""
    info = OPS.get(canonical_kind(kind))
    reads = set(info.attrs) if info is not None else set()
    names = {s: a for a in reads for s in (a, *ATTRIBUTES[a].synonyms)}
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
    try:
        return normalize_op_attrs(kind, found, op=node_id)
    except FormatError as exc:
        line = min((ln for _, ln in raw.values()), default=0)
        raise FormatError(f"{where}: line {line}: {exc}") from None


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


__all__ = ["EDGE_ATTRS", "GRAPHVIZ_ATTRS", "NODE_ATTRS", "NUMBER_ATTRS", "OP_ATTRS",
           "check_attr", "op_attrs"]
