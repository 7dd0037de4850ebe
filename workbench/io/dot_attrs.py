"""Which DOT attributes :func:`workbench.io.dot.load_dot` accepts, and the check that says so.

Workbench attributes (``kind``, ``device``, ``flops``, ...) set op figures.  Graphviz's own
attributes (``label``, ``shape``, ``color``, ``rankdir``, ... : the names of
https://graphviz.org/doc/info/attrs.html) only draw the graph and are accepted and ignored.  Any
other name is a typo that would silently change the result (``flopz=3``), so it is an error that
names it, its line, and the nearest workbench attribute.
"""

from __future__ import annotations

from workbench._checks import did_you_mean, show
from workbench.errors import FormatError

#: Numeric node attributes -> the op figure they set (``size``, ``bytes``, ``size_bytes``: output).
NUMBER_ATTRS = {"flops": "flops", "duration_us": "duration_us", "thread_blocks": "thread_blocks",
                "size": "size", "bytes": "size", "size_bytes": "size",
                "bytes_read": "bytes_read", "bytes_written": "bytes_written",
                "workspace_bytes": "workspace_bytes"}
NODE_ATTRS = frozenset({"kind", "device", *NUMBER_ATTRS})
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
    if key in own or key in GRAPHVIZ_ATTRS:
        return
    hint = did_you_mean(key, own) or did_you_mean(key, GRAPHVIZ_ATTRS)
    mine = f"workbench {context} attributes: {', '.join(sorted(own))}; " if own else ""
    raise FormatError(f"{where}: unknown {context} attribute {show(key)}{hint} ({mine}Graphviz's "
                      f"own attributes are accepted and ignored)")


__all__ = ["EDGE_ATTRS", "GRAPHVIZ_ATTRS", "NODE_ATTRS", "NUMBER_ATTRS", "check_attr"]
