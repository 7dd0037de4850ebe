"""The graph-source panel of the Workbench app: a built-in model, a random DAG, or an upload.

:class:`GraphSource` owns the widgets and turns their state into a graph builder
(:meth:`GraphSource.builder`).  Errors are raised as one-line
:class:`~workbench.errors.WorkbenchError` s; the app shows them.
"""

from __future__ import annotations

import html
import re
import tempfile
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import ipywidgets as widgets

import workbench as wb
from workbench._atomic import write_bytes
from workbench.errors import OptionError, WorkbenchError
from workbench.io import LOADERS
from workbench.models import MODELS
from workbench.ui.forms import FORM_LAYOUT, FORM_STYLE, ParamForm

SOURCES = (("built-in model", "model"), ("random DAG", "random"), ("upload", "upload"))
#: what the upload box accepts: every suffix the loader table knows (one list, no drift)
UPLOAD_SUFFIXES = tuple(LOADERS.names())
DEFAULT_MODEL = "inception_v3"
#: size parameter of each random family, and defaults of its other required parameters
RANDOM_FAMILIES: dict[str, tuple[str, dict[str, Any]]] = {
    "layered_dag": ("n_layers", {"width": 4}),
    "series_parallel_dag": ("n_ops", {}),
    "gnp_dag": ("n", {"p": 0.15}),
    "random_dag": ("n_ops", {}),
}


def describe(graph: wb.Graph) -> str:
    """``"<b>name</b>: 8 ops, 9 edges, 0.00 GFLOP"`` (name escaped)."""
    s = graph.summary()
    return (f"<b>{html.escape(graph.name)}</b>: {s['ops']} ops, {s['edges']} edges, "
            f"{s['gflops']:,.2f} GFLOP")


def load_bytes(name: str, data: bytes) -> wb.Graph:
    """Load an uploaded file: the bytes go to a temporary file with the same name (the suffix picks
    the reader, the stem names the graph) and :func:`workbench.load` reads it.  Error messages
    name the uploaded file, not the temporary path."""
    suffix = Path(name).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise OptionError(f"{name}: unsupported file type {suffix!r} "
                          f"(known: {', '.join(UPLOAD_SUFFIXES)})")
    safe = re.sub(r"[^\w.-]", "_", Path(name).name)
    with tempfile.TemporaryDirectory(prefix="workbench-upload-") as tmp:
        path = Path(tmp) / safe
        write_bytes(path, data)
        try:
            return wb.load(path)
        except WorkbenchError as exc:
            message = str(exc).replace(str(path), name).replace(tmp, "")
            raise type(exc)(message) from None


class GraphSource:
    """Widgets choosing the graph: ``source`` (ToggleButtons), ``model`` + its parameter form,
    ``random_family`` / ``random_size`` / ``random_seed`` + the family's other parameters,
    ``upload`` (FileUpload) + ``upload_info``; ``box`` holds them all.  ``info`` describes the
    graph they choose, refreshed on every change (:meth:`info_html`)."""

    def __init__(self, on_upload: Callable[[str, bytes], Any]) -> None:
        self.info = widgets.HTML()   # the graph the widgets describe (:meth:`info_html`)
        self._ready = False          # True once every widget is built
        self.source = widgets.ToggleButtons(options=SOURCES, value="model",
                                            style={"button_width": "105px"})
        fixed = [n for n in MODELS.names() if MODELS.get(n).family != "random"]
        self.model = widgets.Dropdown(
            options=[(f"{n} ({MODELS.get(n).family})", n) for n in fixed],
            value=DEFAULT_MODEL if DEFAULT_MODEL in fixed else fixed[0], description="model")
        self.model_params = widgets.VBox()
        self.model_form = ParamForm({})
        randoms = [n for n in MODELS.names() if MODELS.get(n).family == "random"]
        # the form's label width: "size (n_layers)" was cut to "size (n_la…" (issue 45)
        self.random_family = widgets.Dropdown(
            options=randoms, description="family", style=FORM_STYLE,
            layout=widgets.Layout(**FORM_LAYOUT))
        self.random_size = widgets.IntText(value=30, description="size", style=FORM_STYLE,
                                           layout=widgets.Layout(**FORM_LAYOUT))
        self.random_seed = widgets.IntText(value=0, description="seed", style=FORM_STYLE,
                                           layout=widgets.Layout(**FORM_LAYOUT))
        self.random_params = widgets.VBox()
        self.random_form = ParamForm({})
        self.upload = widgets.FileUpload(accept=",".join(UPLOAD_SUFFIXES), multiple=False,
                                         description="graph file")
        self.upload_info = widgets.HTML(f"<i>{_or(UPLOAD_SUFFIXES)}</i>")
        self.uploaded_graph: wb.Graph | None = None
        self.stack = widgets.Stack([
            widgets.VBox([self.model, self.model_params]),
            widgets.VBox([self.random_family, self.random_size, self.random_seed,
                          self.random_params]),
            widgets.VBox([self.upload, self.upload_info]),
        ], selected_index=0)
        self.box = widgets.VBox([self.source, self.stack])
        self.source.observe(self._on_source, names="value")
        self.model.observe(lambda _: self._refresh_model_form(), names="value")
        self.random_family.observe(lambda _: self._refresh_random_form(), names="value")
        for w in (self.random_size, self.random_seed):
            w.observe(lambda _: self._changed(), names="value")
        self.upload.observe(lambda ch: ch["new"] and on_upload(
            ch["new"][0]["name"], bytes(ch["new"][0]["content"])), names="value")
        self._refresh_model_form()
        self._refresh_random_form()
        self._ready = True
        self._changed()

    def _on_source(self, change: dict[str, Any]) -> None:
        self.stack.selected_index = [v for _, v in SOURCES].index(change["new"])
        self._changed()

    def _changed(self) -> None:
        """The chosen graph changed: refresh :attr:`info` (before Run, not only on Run)."""
        if self._ready:
            self.info.value = self.info_html()

    def _watch(self, form: ParamForm) -> None:
        for w in form.widgets.values():
            w.observe(lambda _: self._changed(), names="value")

    def _refresh_model_form(self) -> None:
        self.model_form = ParamForm(MODELS.get(self.model.value).params())
        self.model_params.children = [self.model_form.box]
        self._watch(self.model_form)
        self._changed()

    def _refresh_random_form(self) -> None:
        size_param, extra = RANDOM_FAMILIES.get(self.random_family.value, ("", {}))
        self.random_size.description = f"size ({size_param})" if size_param else "size"
        params = {**extra, **MODELS.get(self.random_family.value).params()}
        params.pop("seed", None)
        self.random_form = ParamForm(params)
        self.random_params.children = [self.random_form.box]
        self._watch(self.random_form)
        self._changed()

    def load(self, name: str, data: bytes) -> wb.Graph:
        """Load an upload, select the upload source and remember the graph (errors raise)."""
        self.source.value = "upload"
        self.uploaded_graph = None
        try:
            graph = load_bytes(name, data)
        except Exception:
            self.upload_info.value = f"<i>could not load {html.escape(name)}</i>"
            raise
        self.uploaded_graph = graph
        self.upload_info.value = f"loaded {html.escape(name)}: {describe(graph)}"
        self._changed()
        return graph

    def info_html(self) -> str:
        """The graph the widgets describe now, in a line (:func:`describe`), or why it cannot be
        built (escaped); refreshed whenever the source or its form changes (issue 45: the line
        stayed the last run's graph until Run)."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return describe(self.builder()())
        except Exception as exc:   # an unreadable field: said here, and again by Run
            lines = str(exc).strip().splitlines()
            return (f"<i>{html.escape(type(exc).__name__)}: "
                    f"{html.escape(lines[0] if lines else 'no message')}</i>")

    def builder(self) -> Callable[[], wb.Graph]:
        """A function building the chosen graph (called in the worker thread; parameters are read
        now).  OptionError when a parameter is unreadable or nothing was uploaded."""
        source = self.source.value
        if source == "model":
            return partial(wb.models.build, self.model.value, **self.model_form.values())
        if source == "random":
            family = self.random_family.value
            size_param = RANDOM_FAMILIES.get(family, ("", {}))[0]
            params = {**self.random_form.values(changed_only=False),
                      "seed": self.random_seed.value}
            if size_param:
                params[size_param] = self.random_size.value
            return partial(wb.models.build, family, **params)
        uploaded = self.uploaded_graph
        if uploaded is None:
            raise OptionError(f"no graph uploaded yet: upload a {_or(UPLOAD_SUFFIXES)} file")
        return partial(_same, uploaded)


def _or(names: tuple[str, ...]) -> str:
    """``".json, .onnx or .dot"``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _same(graph: wb.Graph) -> wb.Graph:
    return graph
