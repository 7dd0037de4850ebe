"""The Workbench app: pick a graph, policies and a device, run, and look at the results.

>>> from workbench.ui import Workbench
>>> app = Workbench()          # the last expression of a cell displays it
>>> app.model.value = "nnc_diamond"
>>> app.policies.value = ("serial", "nnc")
>>> app.run(wait=True).comparison.best
'nnc'

Layout: the controls on the left (graph source, policies and their options,
device, executor, mode, memory planner, Run), the results on the right in tabs (Table, Timelines,
Memory, DAG, Report), and an error line on top.  Every widget is an attribute, and :meth:`run`
is what the Run button calls, so tests drive the app without a browser.

The work runs in a background thread (a long IOS search does not freeze the notebook).  It calls
``wb.compare(graph, policies, ...)`` once, as a notebook would: the exact optimum of a small graph
is searched once, not once per policy (Run used to call ``compare`` per policy, ~12 s more on an
8-op graph); ``compare``'s ``on_policy_done`` moves the progress bar after each policy.  Only when
that call raises (a policy's impossible option, say) is each policy compared alone, without the
optimum search, to find the ones that fail; the others are then compared together.
"""

from __future__ import annotations

import re
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ipywidgets as widgets

import workbench as wb
from workbench.errors import OptionError, WorkbenchError
from workbench.executors.execute import EXECUTORS
from workbench.schedulers import POLICIES
from workbench.ui import results
from workbench.ui.css import style_html
from workbench.ui.forms import ParamForm
from workbench.ui.sources import GraphSource, describe
from workbench.viz import lifetime_chart
from workbench.viz.style import escape

#: policy options the app sets itself (from its device and mode) or that make no sense in a form
APP_OPTIONS = ("device", "mode", "cost_oracle", "show_progress")
TAB_TITLES = ("Table", "Timelines", "Memory", "DAG", "Report")
NO_PLANNER = "none"


def one_line(exc: BaseException) -> str:
    """``"FormatError: x.json line 3: ..."``: the error type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else 'no message'}"


def executor_choices() -> list[tuple[str, str]]:
    """The executor menu: ``(label, value)`` of every executor usable here (probed once each),
    and for each measured one also ``"<name> + simulator"`` (the prediction beside each
    measured row)."""
    usable = EXECUTORS.available_names()
    choices = [(name, name) for name in usable]
    choices += [(f"{name} + simulator", f"{name},simulator") for name in usable
                if name != "simulator"]
    return choices


@dataclass
class _Job:
    """Everything a run needs, read from the widgets before the thread starts."""

    build: Callable[[], wb.Graph]
    policies: list[str]
    options: dict[str, dict[str, Any]]
    device: str
    mode: str
    executor: str
    planner: str | None
    failures: list[tuple[str, BaseException]] = field(default_factory=list)


class Workbench:
    """An ipywidgets app over :func:`workbench.compare` (see the module docstring)."""

    def __init__(self) -> None:
        self.graph: wb.Graph | None = None          # the graph of the last run
        self.comparison: wb.Comparison | None = None  # the result of the last run
        self._thread: threading.Thread | None = None
        self._dag_cache: dict[str, str] = {}
        self._quiet = False  # True while the result views are being replaced
        self._option_forms: dict[str, ParamForm] = {}
        self.graph_source = GraphSource(on_upload=self.load_upload)
        gs = self.graph_source
        self.graph_info = gs.info   # the chosen graph, refreshed as its form changes
        self.source, self.model, self.model_params = gs.source, gs.model, gs.model_params
        self.random_family, self.random_size = gs.random_family, gs.random_size
        self.random_seed, self.random_params = gs.random_seed, gs.random_params
        self.upload, self.upload_info = gs.upload, gs.upload_info
        self._build_run_controls()
        self._build_results()
        self._build_layout()

    @property
    def model_form(self) -> ParamForm:
        """The parameter form of the chosen built-in model."""
        return self.graph_source.model_form

    @property
    def random_form(self) -> ParamForm:
        """The other parameters of the chosen random family."""
        return self.graph_source.random_form

    @property
    def uploaded_graph(self) -> wb.Graph | None:
        return self.graph_source.uploaded_graph

    def _build_run_controls(self) -> None:
        names = POLICIES.names()
        # every policy, ios included, every row shown (issue 45: critical_path was hidden)
        self.policies = widgets.SelectMultiple(options=names, value=tuple(names),
                                               rows=len(names), description="policies")
        self.options_for = widgets.Dropdown(options=[], description="options of")
        self.options_box = widgets.VBox()
        self.policies.observe(lambda _: self._refresh_options(), names="value")
        self.options_for.observe(lambda _: self._show_options(), names="value")
        self._refresh_options()
        self.device = widgets.Dropdown(options=wb.devices(), value="h100", description="device")
        self.executor = widgets.Dropdown(options=executor_choices(), value="simulator",
                                         description="executor")
        self.executor_note = widgets.HTML()
        missing = {name: EXECUTORS.unavailable_reason(name) for name in EXECUTORS.names()
                   if not EXECUTORS.available(name)}
        if missing:
            # a Dropdown cannot grey out one option: unusable executors are left out and named
            self.executor.disabled = len(self.executor.options) <= 1
            notes = [f"{name} unavailable: {reason}" for name, reason in missing.items()]
            self.executor.tooltip = "; ".join(notes)
            self.executor_note.value = (
                f'<div style="color:#777; font-size:11px; line-height:1.3; margin-left:90px">'
                f"{escape('; '.join(notes))}</div>")
        self.mode = widgets.ToggleButtons(options=["eager", "graph"], value="graph",
                                          style={"button_width": "70px"})
        # ToggleButtons put their description above the buttons: a label of the same width,
        # alignment and margins as the dropdowns' labels keeps "mode" beside them, in line
        mode_label = widgets.HTML(
            "<div style='text-align:right; line-height:28px'>mode</div>",
            layout=widgets.Layout(width="80px", min_width="80px", margin="2px 8px 2px 2px"))
        mode_label.add_class("widget-label")
        self.mode_row = widgets.HBox([mode_label, self.mode])
        planners = wb.memory.planners()
        self.planner = widgets.Dropdown(options=[*planners, NO_PLANNER],
                                        value="somas" if "somas" in planners else planners[0],
                                        description="memory")
        self.run_button = widgets.Button(description="Run", button_style="primary",
                                         icon="play", tooltip="schedule, execute and compare")
        self.progress = widgets.IntProgress(value=0, min=0, max=1, bar_style="info",
                                            layout=widgets.Layout(width="100%"))
        self.status = widgets.HTML("ready")  # HTML: a long line wraps instead of being cut
        self.status.add_class("wb-status")
        self.run_button.on_click(lambda _: self.run())

    def _build_results(self) -> None:
        self.error = widgets.HTML()
        self.error_details = widgets.Accordion(children=[widgets.HTML()], titles=("details",),
                                               selected_index=None,
                                               layout=widgets.Layout(display="none"))
        self.selected = widgets.Dropdown(options=[], description="selected",
                                         layout=widgets.Layout(width="320px"))
        self.table_select = widgets.Select(options=[], rows=6,
                                           layout=widgets.Layout(width="420px"))
        self.table_html = widgets.HTML("<i>Press Run.</i>")
        self.timelines_out = widgets.Output()
        self.memory_out = widgets.Output()
        self.lifetime_out = widgets.Output()
        self.dag_html = widgets.HTML()
        self.report_path = widgets.Text(value="workbench_report.html", description="file",
                                        layout=widgets.Layout(width="420px"))
        self.export_button = widgets.Button(  # width: the whole label, never cut
            description="Export HTML report", icon="download", disabled=True,
            layout=widgets.Layout(width="auto", min_width="max-content", flex="0 0 auto"))
        self.report_link = widgets.HTML()
        self.report_path.layout.flex = "1 1 260px"  # a narrow pane: the button wraps below
        self.tabs = widgets.Tab(children=[
            widgets.VBox([widgets.HTML("Click a policy to select it in every tab:"),
                          self.table_select, self.table_html]),
            self.timelines_out,
            widgets.VBox([self.memory_out, self.lifetime_out]),
            self.dag_html,
            widgets.VBox([widgets.HBox([self.report_path, self.export_button],
                                       layout=widgets.Layout(flex_flow="row wrap")),
                          self.report_link]),
        ], titles=TAB_TITLES)
        self.table_select.observe(self._on_table_select, names="value")
        self.selected.observe(self._on_selected, names="value")
        self.export_button.on_click(lambda _: self.export())

    def _build_layout(self) -> None:
        controls = widgets.VBox([
            widgets.HTML("<b>Graph</b>"), self.graph_source.box, self.graph_info,
            widgets.HTML("<b>Policies</b>"), self.policies, self.options_for, self.options_box,
            widgets.HTML("<b>Run on</b>"), self.device, self.executor, self.executor_note,
            self.mode_row, self.planner, self.run_button, self.progress, self.status,
        ], layout=widgets.Layout(width="360px", min_width="360px", padding="0 12px 0 0"))
        header = widgets.VBox([
            widgets.HTML(style_html() + "<h3 style='margin:4px 0'>Schedule Workbench</h3>"),
            self.error, self.error_details])
        results_pane = widgets.VBox([self.selected, self.tabs],
                                    layout=widgets.Layout(flex="1 1 auto", min_width="0"))
        self.widget = widgets.VBox([header, widgets.HBox([controls, results_pane])],
                                   layout=widgets.Layout(width="100%"))
        self.widget.add_class("wb-app")
        for w, name in ((self.run_button, "wb-run"), (self.executor, "wb-executor"),
                        (self.graph_source.box, "wb-source"),
                        (self.table_select, "wb-table-select"), (self.selected, "wb-selected"),
                        (self.tabs, "wb-tabs"), (self.dag_html, "wb-dag")):
            w.add_class(name)  # stable hooks for browser tests and custom CSS

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        state = "running" if self.running else ("no results" if self.comparison is None
                                                else repr(self.comparison))
        return f"Workbench({state})"

    # ------------------------------------------------------------------------------ forms
    def _refresh_options(self) -> None:
        """One options form per selected policy that has options; ``options_for`` picks the
        one shown (values are kept when a policy is deselected and selected again)."""
        with_options = []
        for name in self.policies.value:
            if name not in self._option_forms:
                defaults = {k: v for k, v in POLICIES.get(name).options().items()
                            if k not in APP_OPTIONS}
                self._option_forms[name] = ParamForm(defaults)
            if self._option_forms[name]:
                with_options.append(name)
        current = self.options_for.value
        self.options_for.options = with_options
        if with_options:  # keep the shown form when it is still selected, else the first
            self.options_for.value = current if current in with_options else with_options[0]
        self._show_options()

    def _show_options(self) -> None:
        name = self.options_for.value
        self.options_box.children = [self._option_forms[name].box] if name else []

    def option_form(self, policy: str) -> ParamForm:
        """The options form of ``policy``, shown in the app (the policy is selected if it was
        not)."""
        if policy not in self.policies.value:
            self.policies.value = (*self.policies.value, policy)
        self.options_for.value = policy
        return self._option_forms[policy]

    # ------------------------------------------------------------------------------ upload
    def load_upload(self, name: str, data: bytes) -> wb.Graph | None:
        """Load an uploaded graph file (what the FileUpload calls): the graph, or None with a
        one-line message in :attr:`error`."""
        self.clear_error()
        try:
            return self.graph_source.load(name, data)
        except Exception as exc:
            self.show_error(exc, prefix=f"could not load {name}")
            return None

    # ------------------------------------------------------------------------------ errors
    def show_error(self, exc: BaseException | str, *, prefix: str = "") -> None:
        """Show a one-line message; unexpected exceptions add a collapsed traceback."""
        text = exc if isinstance(exc, str) else one_line(exc)
        text = f"{prefix}: {text}" if prefix else text
        self.error.value = (f'<div class="wb-error" style="color:#b00020; font-weight:600">'
                            f"⚠ {escape(text)}</div>")
        if isinstance(exc, BaseException) and not isinstance(exc, WorkbenchError):
            details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            self.error_details.children[0].value = f"<pre>{escape(details)}</pre>"
            self.error_details.selected_index = None
            self.error_details.layout.display = None
        else:
            self.error_details.layout.display = "none"

    def clear_error(self) -> None:
        self.error.value = ""
        self.error_details.layout.display = "none"

    # ------------------------------------------------------------------------------ running
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _job(self) -> _Job:
        build = self.graph_source.builder()
        policies = list(self.policies.value)
        if not policies:
            raise OptionError("select at least one policy")
        options: dict[str, dict[str, Any]] = {}
        for name in policies:
            try:
                opts = self._option_forms[name].values()
            except OptionError as exc:
                raise OptionError(f"{name} option {exc}") from None
            known = POLICIES.get(name).options()
            opts.update({k: v for k, v in (("device", self.device.value),
                                           ("mode", self.mode.value))
                         if k in known and known[k] != v})
            if opts:
                options[name] = opts
        planner = None if self.planner.value == NO_PLANNER else self.planner.value
        return _Job(build, policies, options, self.device.value, self.mode.value,
                    self.executor.value, planner)

    def run(self, wait: bool = False) -> Workbench:
        """Start a run in a background thread (``wait=True``: return when it is done).  What the
        Run button calls; errors show in :attr:`error`, never as an exception."""
        if self.running:
            self.status.value = "already running"
        else:
            self.clear_error()
            try:
                job = self._job()
            except Exception as exc:
                self.show_error(exc)
                return self
            self.run_button.disabled = True
            self.export_button.disabled = True   # the last result is being replaced
            self._thread = threading.Thread(target=self._work, args=(job,), daemon=True,
                                            name="workbench-run")
            self._thread.start()
        if wait:
            self.join()
        return self

    def join(self, timeout: float | None = None) -> None:
        """Wait for the running job (if any)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _work(self, job: _Job) -> None:
        t0 = time.perf_counter()
        try:
            self.status.value = "building the graph…"
            graph = job.build()
            self.graph_info.value = describe(graph)
            comparison = self._compare_all(graph, job)
            if comparison is None:
                name, exc = job.failures[0]
                self.show_error(exc, prefix=f"{name} failed")
                self.status.value = "no results"
                return
            self.graph, self.comparison = graph, comparison
            self.status.value = "drawing the views…"   # the figures of 12 policies: ~1 s
            self._show(comparison)
            if job.failures:
                failed = ", ".join(f"{n} ({one_line(e)})" for n, e in job.failures)
                self.show_error(f"{len(job.failures)} of {len(job.policies)} policies failed: "
                                f"{failed}")
                unexpected = [e for _, e in job.failures if not isinstance(e, WorkbenchError)]
                if unexpected:
                    self.show_error(unexpected[0], prefix=f"{len(job.failures)} policies failed")
            self.status.value = escape(
                f"done in {time.perf_counter() - t0:.1f} s: {len(comparison.policies)} "
                f"policies, {results.best_line(comparison)}")
        except Exception as exc:  # shown in the app, never a traceback wall
            self.show_error(exc)
            self.status.value = "failed"
        finally:
            self.run_button.disabled = False
            self.export_button.disabled = self.comparison is None

    def _compare(self, graph: wb.Graph, job: _Job, names: list[str], *,
                 optimum: bool = True, track: bool = True) -> wb.Comparison:
        """One ``wb.compare`` of ``names`` with the job's settings (``optimum=False``: without
        the exact-optimum search); ``track``: the progress bar and the status line follow its
        policies."""
        def done(name: str, i: int, n: int) -> None:
            self.progress.max = n
            self.progress.value = i
            self.status.value = f"{name} done ({i}/{n})…"

        options = {n: job.options[n] for n in names if n in job.options}
        no_optimum: dict[str, Any] = {} if optimum else {"optimum_max_ops": 0}
        return wb.compare(graph, names, device=job.device, mode=job.mode,
                          executor=job.executor, options=options or None, planner=job.planner,
                          show_progress=False, on_policy_done=done if track else None,
                          **no_optimum)

    def _compare_all(self, graph: wb.Graph, job: _Job) -> wb.Comparison | None:
        """The comparison of every selected policy: one ``compare`` call.  Only if it raises,
        each policy is compared alone (no optimum search: that is the same for all) to find the
        ones that fail (into ``job.failures``), and the others are compared together.  Policies
        stopped by their stage budget are failures too.  None when no policy ran."""
        self.progress.max, self.progress.value = len(job.policies), 0
        self.progress.bar_style = "info"
        self.status.value = f"comparing {len(job.policies)} policies…"
        try:
            comparison = self._compare(graph, job, job.policies)
        except Exception as exc:
            ok = []
            for i, name in enumerate(job.policies, start=1):
                self.status.value = f"{name} alone ({i}/{len(job.policies)}): finding what failed…"
                try:
                    self._compare(graph, job, [name], optimum=False, track=False)
                except Exception as alone:
                    job.failures.append((name, alone))
                else:
                    ok.append(name)
            if not job.failures:  # fails together only: nothing to blame on one policy
                raise exc
            if not ok:
                return None
            comparison = self._compare(graph, job, ok)
        table = comparison.table
        for name in job.policies:
            if name not in comparison.schedules and name in set(table["policy"]):
                # its stage budget ran out: a row with a status, no schedule to show
                status = table.loc[table["policy"] == name, "status"].iloc[0]
                job.failures.append((name, WorkbenchError(str(status))))
        self.progress.bar_style = "warning" if job.failures else "success"
        return comparison

    # ------------------------------------------------------------------------------ results
    def _show(self, comparison: wb.Comparison) -> None:
        self._dag_cache = {}
        options = results.select_options(comparison)
        best = comparison.best or (options[0][1] if options else "serial")  # None: none ran
        self._quiet = True  # new options reset the values: render once, for the best policy
        try:
            self.selected.options = self.table_select.options = options
            self.selected.value = self.table_select.value = best
        finally:
            self._quiet = False
        self._render_selection(best)
        safe = re.sub(r"[^\w.-]", "_", comparison.graph.name)[:60] or "graph"
        self.report_path.value = f"{safe}_report.html"
        self.export_button.disabled = False
        self.report_link.value = ""

    def _on_table_select(self, change: dict[str, Any]) -> None:
        if not self._quiet and change["new"] is not None and self.selected.value != change["new"]:
            self.selected.value = change["new"]

    def _on_selected(self, change: dict[str, Any]) -> None:
        if self._quiet or change["new"] is None:
            return
        if self.table_select.value != change["new"]:
            self.table_select.value = change["new"]
        self._render_selection(change["new"])

    def select(self, policy: str) -> None:
        """Select ``policy`` in every tab (like clicking its row in the table)."""
        self.table_select.value = policy

    def _render_selection(self, policy: str) -> None:
        c = self.comparison
        if c is None or policy not in c.schedules:
            return
        self.table_html.value = results.table_html(c, policy)
        # the Timelines and Memory tabs follow the selected policy
        results.show_figure(self.timelines_out, results.timelines_figure(c, policy))
        results.show_figures(self.memory_out, results.memory_figures(c, policy))
        plan = c.memory_plans.get(policy)
        if plan is None:
            results.show_html(self.lifetime_out, "<i>No memory plan (memory planner: none).</i>")
        else:
            fig = lifetime_chart(plan)
            caption = fig.layout.title.text  # the plan's numbers: a line that may wrap
            fig.layout.title.text = f"{escape(policy)} · memory plan"
            results.show_figure(self.lifetime_out, fig, caption=caption)
        if policy not in self._dag_cache:
            self._dag_cache[policy] = results.dag_html(c, policy)
        self.dag_html.value = self._dag_cache[policy]

    def export(self, path: str | Path | None = None) -> Path | None:
        """Write the HTML report of the last run (to :attr:`report_path` by default) and show a
        download link; returns the path (None and an error line when there is nothing to write)."""
        comparison = self.comparison   # one result, whatever a run does meanwhile
        if self.running:   # the views are being replaced: never the old result, new names
            self.show_error("a run is in flight: export its report when it ends")
            return None
        if comparison is None:
            self.show_error("nothing to export yet: press Run first")
            return None
        self.clear_error()
        target = Path(path if path is not None else self.report_path.value).expanduser()
        try:
            with warnings.catch_warnings():  # no Graphviz: the report says so itself
                warnings.simplefilter("ignore", RuntimeWarning)
                written = comparison.to_html(target)
        except Exception as exc:
            self.show_error(exc, prefix="could not write the report")
            return None
        self.report_link.value = results.report_link_html(written)
        return written
