"""Figures that show themselves in every notebook front end without touching plotly's globals.

Inside a Jupyter kernel plotly's default renderer is ``"plotly_mimetype"``: JupyterLab, Notebook 7,
Voilà and VS Code draw its JSON, but static exports (nbconvert HTML, nbviewer) drop the figure.
Rather than switching ``plotly.io.renderers.default`` for the whole session (a global the user
owns), every figure the viz functions return is a :class:`NotebookFigure`: a ``go.Figure`` whose
own display emits the plotly JSON **and** a ``text/html`` fallback (plotly.js embedded once per
session, :func:`plotlyjs_once`, so the export works offline).  A renderer
chosen by the user or by plotly for another front end (``PLOTLY_RENDERER``, ``"vscode"``,
``"colab"``, ``"browser"``...) is honoured: the figure then displays as plotly would.

>>> import plotly.graph_objects as go
>>> type(as_notebook_figure(go.Figure())).__name__
'NotebookFigure'
"""

from __future__ import annotations

import functools
import json
import os
import threading
import uuid
from collections.abc import Callable
from typing import Any, ParamSpec

import plotly.graph_objects as go
import plotly.io as pio

#: plotly's own default inside a Jupyter kernel: the only case where the figure builds its bundle.
KERNEL_DEFAULT = "plotly_mimetype"
P = ParamSpec("P")

PLOTLY_MIME = "application/vnd.plotly.v1+json"
_plotlyjs_lock = threading.Lock()
_plotlyjs_sent = False


def plotlyjs_once() -> bool:
    """True the first time it is called in this process (the caller embeds plotly.js), then False.

    Notebook displays embed plotly.js (4.8 MB) once per kernel session instead of once per figure;
    later figures reuse ``window.Plotly`` from the first one.  Thread-safe.
    """
    global _plotlyjs_sent
    with _plotlyjs_lock:
        first = not _plotlyjs_sent
        _plotlyjs_sent = True
        return first


def reset_plotlyjs() -> None:
    """Embed plotly.js again in the next display (after clearing the output that held it)."""
    global _plotlyjs_sent
    with _plotlyjs_lock:
        _plotlyjs_sent = False


def figure_div(fig: go.Figure, *, prefix: str = "wb-fig",
               include_plotlyjs: bool | None = None) -> str:
    """The figure as an HTML fragment with a unique div id; ``include_plotlyjs=None`` embeds
    plotly.js only if no display of this session has done so yet (:func:`plotlyjs_once`)."""
    embed = plotlyjs_once() if include_plotlyjs is None else include_plotlyjs
    return fig.to_html(full_html=False, include_plotlyjs=embed,
                       div_id=f"{prefix}-{uuid.uuid4().hex[:12]}")


def figure_bundle(fig: go.Figure, *, html: bool = True, prefix: str = "wb-fig") -> dict[str, Any]:
    """A display bundle for ``fig``: plotly JSON (JupyterLab/Voilà render it natively),
    ``text/html`` for static exports (``html=False`` leaves it out: live widgets), and text."""
    title = fig.layout.title.text if fig.layout.title and fig.layout.title.text else "figure"
    bundle: dict[str, Any] = {
        PLOTLY_MIME: json.loads(pio.to_json(fig, validate=False, remove_uids=False)),
        "text/plain": f"<plotly figure: {title}>",
    }
    if html:
        bundle["text/html"] = figure_div(fig, prefix=prefix)
    return bundle




def _renderer_left_to_us() -> bool:
    """True when nobody chose a renderer: plotly's kernel default and no ``PLOTLY_RENDERER``."""
    return not os.environ.get("PLOTLY_RENDERER") and pio.renderers.default == KERNEL_DEFAULT


class NotebookFigure(go.Figure):
    """A ``go.Figure`` that displays as plotly JSON plus an HTML fallback (see the module doc).

    Everything else (``show``, ``to_html``, ``write_image``, updates, pickling) is plotly's.
    """

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None,
                          validate: bool = True, **kwargs: Any) -> dict[str, Any]:
        """The display bundle: plotly JSON, ``text/html`` and text when no renderer was chosen,
        else what plotly's chosen renderer gives.  O(size of the figure)."""
        if not _renderer_left_to_us():
            return dict(super()._repr_mimebundle_(include, exclude, validate, **kwargs))
        return figure_bundle(self)

    def _ipython_display_(self) -> None:
        """IPython's display hook: :meth:`_repr_mimebundle_` shown as a raw bundle."""
        if not _renderer_left_to_us():
            super()._ipython_display_()
            return
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)


def as_notebook_figure(fig: go.Figure) -> NotebookFigure:
    """``fig`` relabelled as a :class:`NotebookFigure` in place (no copy: O(1)); returns it."""
    if not isinstance(fig, NotebookFigure):
        fig.__class__ = NotebookFigure
    return fig  # type: ignore[return-value]


def notebook_figure(func: Callable[P, go.Figure]) -> Callable[P, go.Figure]:
    """Decorator: the figure ``func`` returns displays itself in every notebook front end."""
    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> go.Figure:
        return as_notebook_figure(func(*args, **kwargs))
    return wrapper
