"""Plotly figures in a standalone HTML page, small: plotly.js once, each figure's JSON gzipped.

A page holds any number of figures (:func:`figure_html`: an empty ``div`` and the figure's JSON,
gzipped and base64-encoded, in a ``<script type="application/x-wb-figure">``), then, once, at
the end of the page, plotly.js (:func:`plotlyjs_html`) and :data:`FIGURES_JS`, which unpacks every
figure with the browser's ``DecompressionStream`` and draws it with ``Plotly.newPlot``.

Why gzip: the figures of one comparison repeat themselves (a timeline panel per policy, each op's
hover text once per policy, plotly's template once per figure); gzip takes a squeezenet
comparison of 14 policies from 430 kB of figure JSON to about 50 kB.  Why at the end: the
tables and text of the page show before the 4.8 MB of plotly.js are parsed.

``plotlyjs`` (:data:`PLOTLYJS_MODES`): ``"inline"`` embeds plotly.js (the page works offline on
its own), ``"directory"`` refers to :data:`PLOTLYJS_FILE` beside the page (written once by
:func:`write_plotlyjs`, shared by every page of the folder), ``"cdn"`` to plotly's CDN (with the
bundle's subresource-integrity hash).  When plotly.js or ``DecompressionStream`` is missing, each
figure's box says so instead of staying blank.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs, get_plotlyjs_version

from workbench._atomic import read_input, resolve_output, write_bytes
from workbench.errors import OutputError
from workbench.viz.style import escape

#: Where a page's plotly.js comes from (see the module docstring).
PLOTLYJS_MODES = ("inline", "directory", "cdn")
#: The file name of the shared plotly.js of ``plotlyjs="directory"`` (beside the page).
PLOTLYJS_FILE = "plotly.min.js"
FIGURE_TYPE = "application/x-wb-figure"
CONFIG: dict[str, Any] = {"displaylogo": False, "responsive": True}

_WHERE = {"inline": "it is embedded in this page",
          "directory": f"{PLOTLYJS_FILE} is expected beside this file",
          "cdn": "it comes from cdn.plot.ly: are you offline?"}

FIGURES_JS = """
(function () {
  "use strict";
  var CONFIG = %(config)s, WHERE = %(where)s;
  function note(div, text) {
    var p = document.createElement("p"); p.className = "wb-nojs"; p.textContent = text;
    div.appendChild(p);
  }
  function unpack(b64) {
    var bin = atob(b64.trim()), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).json();
  }
  document.querySelectorAll('script[type="%(type)s"]').forEach(function (s) {
    var div = document.getElementById(s.getAttribute("data-div"));
    if (!div) return;
    if (typeof window.Plotly === "undefined") {
      note(div, "This figure needs plotly.js, which could not be loaded (" + WHERE + ").");
      return;
    }
    if (typeof window.DecompressionStream === "undefined") {
      note(div, "This browser cannot unpack the figure (it needs DecompressionStream: " +
                "Chrome 80, Firefox 113, Safari 16.4 or later).");
      return;
    }
    unpack(s.textContent).then(function (fig) {
      return window.Plotly.newPlot(div, fig.data, fig.layout, CONFIG);
    }).catch(function (e) { note(div, "This figure could not be drawn: " + e); });
  });
})();
"""


def check_plotlyjs(plotlyjs: str) -> str:
    """``plotlyjs`` if it is one of :data:`PLOTLYJS_MODES`, else a one-line OptionError."""
    if plotlyjs not in PLOTLYJS_MODES:
        from workbench.errors import OptionError

        raise OptionError(f"unknown plotlyjs {plotlyjs!r} (known: {', '.join(PLOTLYJS_MODES)})")
    return plotlyjs


def cdn_url() -> str:
    """plotly's CDN address of the plotly.js version bundled with the installed plotly."""
    return f"https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js"


def plotlyjs_html(plotlyjs: str = "inline") -> str:
    """The ``<script>`` elements that bring plotly.js to a page (once per page)."""
    check_plotlyjs(plotlyjs)
    head = "<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>"
    if plotlyjs == "inline":
        return f"{head}\n<script>{get_plotlyjs()}</script>"
    if plotlyjs == "directory":
        return f'{head}\n<script charset="utf-8" src="{PLOTLYJS_FILE}"></script>'
    digest = base64.b64encode(hashlib.sha256(get_plotlyjs().encode("utf-8")).digest()).decode()
    return (f'{head}\n<script charset="utf-8" src="{cdn_url()}" integrity="sha256-{digest}" '
            'crossorigin="anonymous"></script>')


def pack(fig: go.Figure) -> str:
    """The figure's JSON, gzipped (reproducibly: no timestamp) and base64-encoded."""
    text = pio.to_json(fig, validate=False, remove_uids=True)
    return base64.b64encode(gzip.compress(text.encode("utf-8"), mtime=0)).decode("ascii")


def unpack(data: str) -> dict[str, Any]:
    """The inverse of :func:`pack` (for tests and tools): the figure as a dict.

    >>> unpack(pack(go.Figure(layout={"title": {"text": "t"}})))["layout"]["title"]["text"]
    't'
    """
    return dict(json.loads(gzip.decompress(base64.b64decode(data)).decode("utf-8")))


def figure_html(fig: go.Figure, div_id: str) -> str:
    """A placeholder ``div`` for ``fig`` (its height reserved) and its packed JSON; drawn by
    :data:`FIGURES_JS` once plotly.js is loaded."""
    height = fig.layout.height
    style = f"height:{int(height)}px; width:100%;" if height else "height:450px; width:100%;"
    div_id = escape(div_id)
    return (f'<div id="{div_id}" class="plotly-graph-div" style="{style}"></div>\n'
            f'<script type="{FIGURE_TYPE}" data-div="{div_id}">{pack(fig)}</script>')


def figures_script(plotlyjs: str = "inline") -> str:
    """:data:`FIGURES_JS` for a page whose plotly.js comes from ``plotlyjs``."""
    return FIGURES_JS % {"config": json.dumps(CONFIG), "where": json.dumps(_WHERE[plotlyjs]),
                         "type": FIGURE_TYPE}


def _plotlyjs_target(folder: str | os.PathLike[str], size: int) -> tuple[Path, bool]:
    """``folder``/:data:`PLOTLYJS_FILE` and whether a copy of ``size`` bytes is there already
    (a regular file, through a link); a one-line OutputError when it must be written but cannot
    be safely: a symbolic link to anything else (the user never named this file, so a planted
    link must not make the workbench overwrite its target), a FIFO, a device, a directory."""
    target = Path(folder) / PLOTLYJS_FILE
    try:
        same_size = target.is_file() and target.stat().st_size == size
    except OSError:
        same_size = False
    if not same_size:
        resolve_output(target, what="plotly.js copy (--plotlyjs directory)", through_links=False)
        if target.is_file() and not _is_plotly_build(target):
            raise OutputError(f"{str(target)!r} is not a plotly.js build (it does not start "
                              f"with plotly's header); refusing to replace it: rename it, or "
                              f"use --plotlyjs inline or cdn")
    return target, same_size


def _is_plotly_build(path: Path) -> bool:
    """Whether the file starts as every plotly.js bundle does (``/**`` then ``* plotly.js v``
    within its first lines): an older copy the workbench may refresh, not a user's own file."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return False
    return head.lstrip().startswith(b"/**") and b"plotly.js v" in head[:200]


def check_plotlyjs_folder(folder: str | os.PathLike[str]) -> Path:
    """Before any work: :data:`PLOTLYJS_FILE` in ``folder`` is an up-to-date copy or can be
    written by :func:`write_plotlyjs` (one-line OutputError otherwise, see
    :func:`_plotlyjs_target`).  O(1): nothing is read."""
    return _plotlyjs_target(folder, len(get_plotlyjs().encode("utf-8")))[0]


def write_plotlyjs(folder: str | os.PathLike[str]) -> Path:
    """Write plotly.js to ``folder``/:data:`PLOTLYJS_FILE` unless an identical copy is there
    already (so a folder of pages shares one copy, rewritten only when plotly changes).  Written
    atomically by :func:`workbench._atomic.write_bytes`, never through a symbolic link; a FIFO,
    device or directory of that name is a one-line OutputError, as is a full disk (which leaves
    the old copy as it was)."""
    data = get_plotlyjs().encode("utf-8")
    target, same_size = _plotlyjs_target(folder, len(data))
    if not (same_size and read_input(target, what=PLOTLYJS_FILE) == data):
        write_bytes(target, data, through_links=False)
    return target
