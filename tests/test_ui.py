"""The Workbench app driven without a browser: set widgets, click Run, read the tabs.

Also the rich display of the core values (Graph, MemoryPlan, Trace reprs) without a GPU and
without Graphviz ``dot``.
"""

from __future__ import annotations

import datetime
import html
import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ipywidgets")

import workbench as wb  # noqa: E402
from workbench.errors import OptionError  # noqa: E402
from workbench.executors import gpu  # noqa: E402
from workbench.executors.execute import EXECUTORS  # noqa: E402
from workbench.ui import Workbench  # noqa: E402
from workbench.ui import results as ui_results  # noqa: E402
from workbench.ui.forms import ParamForm  # noqa: E402
from workbench.values.graph import Graph  # noqa: E402
from workbench.viz import display  # noqa: E402
from workbench.viz.tables import ranking  # noqa: E402

PLOTLY_MIME = "application/vnd.plotly.v1+json"
SCRIPT = "<script>alert(1)</script>"
FAST = ("serial", "nnc", "wavefront")


def hostile_graph() -> Graph:
    a, b, c = SCRIPT, "b'&\"q\"", "<img src=x onerror=alert(2)>"
    return Graph.from_edges([(a, b), (a, c), (b, "d"), (c, "d")],
                            ops={a: "<b>conv</b>", b: "relu", c: "add&", "d": "x>y"},
                            name=f"evil {SCRIPT}")


def html_values(app: Workbench) -> list[str]:
    """Every HTML string the app shows (HTML widgets and Output widget HTML)."""
    out = [app.table_html.value, app.dag_html.value, app.graph_info.value, app.error.value,
           app.upload_info.value, app.report_link.value]
    for o in (app.timelines_out, app.memory_out, app.lifetime_out):
        out += [d["data"].get("text/html", "") for d in o.outputs]
    return out


def result(app: Workbench) -> wb.Comparison:
    """The comparison of the app's last run (fails with the app's error line if there is none)."""
    assert app.comparison is not None, app.error.value
    return app.comparison


def upload_value(name: str, data: bytes) -> tuple[dict[str, Any], ...]:
    """What an ipywidgets 8 FileUpload holds after the browser sent one file."""
    return ({"name": name, "type": "application/octet-stream", "size": len(data),
             "content": memoryview(data),
             "last_modified": datetime.datetime.now(datetime.timezone.utc)},)


@pytest.fixture
def app() -> Workbench:
    a = Workbench()
    a.model.value = "raf_three_branches"
    a.policies.value = FAST
    return a


@pytest.fixture(scope="module")
def ran() -> Workbench:
    a = Workbench()
    a.model.value = "raf_three_branches"
    a.policies.value = FAST
    a.run_button.click()
    a.join(timeout=120)
    return a


# ------------------------------------------------------------------------------------ running
def test_import_workbench_does_not_load_the_ui() -> None:
    code = ("import sys, workbench; "
            "print('workbench.ui' in sys.modules, 'ipywidgets' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_defaults() -> None:
    a = Workbench()
    # issue 45: every registered policy (ios too), every row of the list shown, graph mode
    assert a.policies.value == tuple(wb.policies()) and "ios" in a.policies.value
    assert a.policies.rows == len(wb.policies())
    assert a.source.value == "model" and a.model.value == "inception_v3"
    assert "inception_v3" in a.graph_info.value and "ops" in a.graph_info.value  # before Run
    assert a.tabs.titles == ("Table", "Timelines", "Memory", "DAG", "Report")
    assert a.device.value == "h100" and list(a.device.options) == wb.devices()
    assert a.mode.options == ("eager", "graph") and a.mode.value == "graph"
    assert a.planner.value == "somas"
    assert "none" in a.planner.options
    assert a.export_button.disabled and a.comparison is None
    assert a.options_for.value == a.policies.value[0]  # its options form is shown
    assert a.options_box.children == (a.option_form(a.policies.value[0]).box,)
    assert repr(a) == "Workbench(no results)"
    bundle = a._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_run_fills_every_tab(ran: Workbench) -> None:
    app = ran
    assert app.error.value == "" and app.status.value.startswith("done")
    assert not app.run_button.disabled and not app.running
    assert app.progress.value == app.progress.max == len(FAST)
    c = app.comparison
    assert c is not None and list(c.table_in_policy_order["policy"]) == list(FAST)
    # the selector lists the policies as the ranking table does: smallest makespan first
    assert [v for _, v in app.table_select.options] == list(ranking(c.table)["policy"])
    assert sorted(v for _, v in app.table_select.options) == sorted(FAST)
    assert app.selected.value == app.table_select.value == c.best
    assert "wb-table" in app.table_html.value
    fig = app.timelines_out.outputs[0]["data"][PLOTLY_MIME]
    assert fig["layout"]["title"]["text"].startswith("timelines of raf_three_branches")
    # one figure, the groups in rank order, the best marked; the memory tab: peaks + curve
    headers = [a["text"] for a in fig["layout"]["annotations"]]
    ranked = list(ranking(c.table)["policy"])
    assert [h.split("<b>")[1].split(" ")[0].split("<")[0] for h in headers] == [
        p for p in ranked if any(f"<b>{p}" in h for h in headers)]
    assert headers[0].startswith("▶") and c.best in headers[0]
    assert len(app.memory_out.outputs) == 2
    peaks, curve = (o["data"][PLOTLY_MIME] for o in app.memory_out.outputs)
    assert list(peaks["data"][0]["y"]) == ranked
    assert curve["layout"]["title"]["text"].endswith(c.best)
    lifetimes = app.lifetime_out.outputs[0]["data"][PLOTLY_MIME]
    assert lifetimes["layout"]["title"]["text"].startswith(c.best)
    assert "<svg" in app.dag_html.value and f"Streams of <b>{c.best}</b>" in app.dag_html.value
    assert "raf_three_branches" in app.graph_info.value
    assert not app.export_button.disabled
    # no plotly.js travels with the widget state: figures are plotly JSON only
    for out in (app.timelines_out, app.memory_out, app.lifetime_out):
        assert "text/html" not in out.outputs[0]["data"]


def test_selecting_a_row_drives_the_other_tabs(ran: Workbench) -> None:
    app = ran
    before = app.dag_html.value
    app.table_select.value = "serial"  # a click on the serial row
    assert app.selected.value == "serial"
    assert app.dag_html.value != before and "Streams of <b>serial</b>" in app.dag_html.value
    title = app.lifetime_out.outputs[0]["data"][PLOTLY_MIME]["layout"]["title"]["text"]
    assert title.startswith("serial")
    # the Timelines and Memory tabs follow the selection (issue 45)
    timelines = app.timelines_out.outputs[0]["data"][PLOTLY_MIME]["layout"]
    marked = [a["text"] for a in timelines["annotations"] if a["text"].startswith("▶")]
    assert len(marked) == 1 and "<b>serial" in marked[0]
    curve = app.memory_out.outputs[1]["data"][PLOTLY_MIME]["layout"]
    assert curve["title"]["text"].endswith("serial")
    assert ui_results.SELECTED_ROW_CSS in app.table_html.value
    app.selected.value = "wavefront"  # the dropdown above the tabs drives the table too
    assert app.table_select.value == "wavefront"
    assert "Streams of <b>wavefront</b>" in app.dag_html.value
    app.select(result(app).best)


def test_model_parameters_become_widgets(app: Workbench) -> None:
    import ipywidgets as widgets

    app.model.value = "inception_v3"
    kinds = {k: type(w) for k, w in app.model_form.widgets.items()}
    assert kinds == {"batch": widgets.IntText, "resolution": widgets.IntText,
                     "fused": widgets.Checkbox, "classifier": widgets.Checkbox}
    app.model.value = "transformer_block"
    app.model_form.widgets["layers"].value = 2
    app.policies.value = ("serial",)
    app.run(wait=True)
    assert app.error.value == ""
    assert app.graph is not None
    assert len(app.graph) == len(wb.models.build("transformer_block", layers=2))
    assert len(app.graph) > len(wb.models.build("transformer_block"))
    assert list(result(app).table["policy"]) == ["serial"]


def test_random_dag_source(app: Workbench) -> None:
    app.source.value = "random"
    assert app.graph_source.stack.selected_index == 1
    app.random_family.value = "layered_dag"
    assert app.random_size.description == "size (n_layers)"
    assert set(app.random_form.widgets) == {"width", "edge_prob"}
    app.random_size.value, app.random_seed.value = 5, 3
    # the info line follows the form before Run (issue 45: it stayed stale until Run)
    assert wb.models.layered_dag(5, 4, edge_prob=0.3, seed=3).name in app.graph_info.value
    app.random_form.widgets["width"].value = 2
    assert wb.models.layered_dag(5, 2, edge_prob=0.3, seed=3).name in app.graph_info.value
    app.random_form.widgets["width"].value = 4
    app.run(wait=True)
    assert app.error.value == ""
    assert app.graph == wb.models.layered_dag(5, 4, edge_prob=0.3, seed=3)


def test_graph_info_follows_the_form_and_says_what_is_wrong(app: Workbench) -> None:
    app.model.value = "transformer_block"
    assert "transformer" in app.graph_info.value and "22 ops" in app.graph_info.value
    app.model_form.widgets["layers"].value = 2
    assert f"{len(wb.models.build('transformer_block', layers=2))} ops" in app.graph_info.value
    app.source.value = "upload"
    assert "no graph uploaded yet" in app.graph_info.value
    app.source.value = "model"
    assert "transformer" in app.graph_info.value


def test_random_form_labels_are_not_cut() -> None:
    """Issue 45: "size (n_layers)" showed as "size (n_la…": the graph source's fields have the
    options forms' label width."""
    from workbench.ui.forms import FORM_STYLE

    a = Workbench()
    for w in (a.random_family, a.random_size, a.random_seed):
        assert w.style.description_width == FORM_STYLE["description_width"]
    widest = max(len(f"size ({p})") for p, _ in
                 __import__("workbench.ui.sources", fromlist=["x"]).RANDOM_FAMILIES.values())
    assert int(FORM_STYLE["description_width"].removesuffix("px")) >= 7 * widest


def test_policy_options_form(app: Workbench) -> None:
    app.policies.value = ("serial", "ios")
    assert app.options_for.options == ("serial", "ios")  # the policies that have options
    form = app.option_form("ios")
    assert app.options_box.children == (form.box,)
    assert {"r", "s", "max_block_units", "units", "sync"} <= set(form.widgets)
    assert not {"device", "mode", "cost_oracle", "show_progress"} & set(form.widgets)
    form.widgets["r"].value, form.widgets["s"].value = 2, 3
    app.device.value = "a100"
    app.run(wait=True)
    assert app.error.value == ""
    opts = result(app).settings["options"]["ios"]
    # the app's device (and its mode, where IOS's own default differs) reach the IOS oracle
    mode = {} if wb.schedulers.POLICIES.get("ios").options().get("mode") == app.mode.value \
        else {"mode": app.mode.value}
    assert opts == {"r": 2, "s": 3, "device": "a100", **mode}
    assert result(app).device == "a100"


def test_param_form_reads_text_values() -> None:
    form = ParamForm({"max_streams": None, "priorities": None, "variant": "documented"})
    form.widgets["priorities"].value = "['bottom_level']"
    assert form.values() == {"priorities": ["bottom_level"]}
    form.widgets["max_streams"].value = "two"
    with pytest.raises(OptionError, match="max_streams: cannot read 'two'"):
        form.values()


def test_unreadable_option_is_one_line_error(app: Workbench) -> None:
    app.option_form("nnc").widgets["max_streams"].value = "two"
    app.run_button.click()
    app.join()
    assert not app.running and app.comparison is None
    text = re.sub(r"<[^>]+>", "", app.error.value)
    assert "nnc option max_streams: cannot read" in text and "\n" not in text.strip()
    assert app.error_details.layout.display == "none"


def test_impossible_option_fails_that_policy_only(app: Workbench) -> None:
    app.policies.value = ("serial", "nnc", "ios")
    app.option_form("ios").widgets["r"].value = 0
    app.run(wait=True)
    assert list(result(app).table_in_policy_order["policy"]) == ["serial", "nnc"]
    text = re.sub(r"<[^>]+>", "", app.error.value).strip()
    assert "1 of 3 policies failed: ios (OptionError: ios option r must be a positive" in text
    assert "\n" not in text and "Traceback" not in text
    assert app.progress.bar_style == "warning"


def test_unexpected_exception_shows_collapsed_details(app: Workbench,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(wb.models, "build", boom)
    app.run(wait=True)
    text = re.sub(r"<[^>]+>", "", app.error.value).strip()
    assert text.endswith("RuntimeError: boom") and "second line" not in text
    assert app.error_details.layout.display != "none"
    assert app.error_details.selected_index is None  # collapsed
    assert "Traceback" in app.error_details.children[0].value
    assert app.status.value == "failed" and not app.run_button.disabled


def test_upload_json_graph(app: Workbench, tmp_path: Path) -> None:
    graph = wb.models.build("nnc_diamond")
    path = wb.save(graph, tmp_path / "diamond.json")
    app.upload.value = upload_value("diamond.json", path.read_bytes())
    assert app.error.value == "" and app.source.value == "upload"
    assert app.uploaded_graph == graph
    assert "loaded diamond.json" in app.upload_info.value
    app.run(wait=True)
    assert app.error.value == "" and app.graph == graph


@pytest.mark.parametrize(("name", "data", "expected"), [
    ("broken.json", b'{"ops": [', "FormatError: broken.json"),
    ("cycle.dot", b"digraph { a -> b; b -> a }", "broken"),
    ("graph.txt", b"a b", "unsupported file type '.txt'"),
])
def test_broken_upload_is_one_line_error(app: Workbench, name: str, data: bytes,
                                         expected: str) -> None:
    app.upload.value = upload_value(name, data)  # no exception escapes the handler
    text = html.unescape(re.sub(r"<[^>]+>", "", app.error.value).strip())
    assert text.startswith(f"⚠ could not load {name}: ") and "\n" not in text
    if expected != "broken":
        assert expected in text
    assert "workbench-upload-" not in text  # the temporary path is not shown
    assert app.uploaded_graph is None and "could not load" in app.upload_info.value
    app.run(wait=True)
    assert "no graph uploaded yet" in app.error.value


def test_executor_menu_offers_what_runs_here_and_says_why_not_the_rest() -> None:
    a = Workbench()
    values = [value for _, value in a.executor.options]
    assert values[0] == "simulator" and a.executor.value == "simulator"
    if EXECUTORS.available("torch"):
        assert "torch" in values and "torch,simulator" in values and not a.executor.disabled
    if gpu.is_available():
        assert "cupy" in values
    else:
        assert "cupy" not in values
        reason = gpu.unavailable_reason()
        assert reason and reason in a.executor.tooltip
        assert "cupy unavailable" in a.executor_note.value


def test_hostile_names_are_escaped(app: Workbench, tmp_path: Path) -> None:
    graph = hostile_graph()
    path = wb.save(graph, tmp_path / "evil.json")
    assert app.load_upload("evil<script>.json", path.read_bytes()) is not None
    app.run(wait=True)
    assert app.error.value == ""
    app.select("nnc")
    values = html_values(app)
    for value in values:
        assert "<script>" not in value and "<img src=x" not in value
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in app.dag_html.value
    assert "&lt;script&gt;" in app.graph_info.value and "&lt;script&gt;" in app.table_html.value
    assert "&lt;script&gt;" in app.upload_info.value
    fig = app.timelines_out.outputs[0]["data"][PLOTLY_MIME]
    assert SCRIPT not in fig["layout"]["title"]["text"]


def test_no_memory_planner(app: Workbench) -> None:
    app.planner.value = "none"
    app.run(wait=True)
    assert app.error.value == "" and not result(app).memory_plans
    assert "No memory plan" in app.lifetime_out.outputs[0]["data"]["text/html"]
    assert PLOTLY_MIME in app.memory_out.outputs[0]["data"]


def test_export_report(ran: Workbench, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the app keeps warnings out of the notebook
        path = ran.export(tmp_path / "r.html")
    assert path is not None and path.exists() and path.stat().st_size > 100_000
    link = ran.report_link.value
    assert str(path.resolve()) in link and 'download="r.html"' in link
    assert 'href="data:text/html;base64,' in link
    small = ui_results.report_link_html(path, data_uri_max=10)
    assert "data:" not in small and str(path.resolve()) in small


def test_export_is_disabled_while_a_run_is_in_flight(app: Workbench, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 45: Export clicked mid-run wrote the previous comparison under the new graph's
    view.  The button is disabled from Run until the run ends (success or failure), and
    :meth:`Workbench.export` refuses while it runs."""
    import threading

    app.model.value, app.policies.value, app.planner.value = "nnc_diamond", ("serial",), "none"
    app.run(wait=True)
    first = result(app)
    assert not app.export_button.disabled
    real, go_on = wb.compare, threading.Event()

    def held(*args: Any, fail: bool = False, **kwargs: Any) -> wb.Comparison:
        go_on.wait(30)
        if fail:
            raise RuntimeError("boom")
        return real(*args, **kwargs)

    for fail in (False, True):
        go_on.clear()
        monkeypatch.setattr(wb, "compare", lambda *a, _f=fail, **k: held(*a, fail=_f, **k))
        before = app.comparison
        app.run()
        assert app.running and app.export_button.disabled
        assert app.export(tmp_path / "mid.html") is None and not (tmp_path / "mid.html").exists()
        assert "run is in flight" in app.error.value
        go_on.set()
        app.join(timeout=60)
        assert not app.running and not app.export_button.disabled   # re-enabled either way
        assert (app.comparison is before) == fail and app.comparison is not None
    assert app.comparison is not first
    written = app.export(tmp_path / "after.html")
    assert written is not None and written.exists()


def test_export_before_run_and_bad_path(app: Workbench, tmp_path: Path) -> None:
    assert app.export(tmp_path / "r.html") is None
    assert "nothing to export yet" in app.error.value
    app.run(wait=True)
    (tmp_path / "file").write_text("x")
    assert app.export(tmp_path / "file" / "r.html") is None  # a file is in the way
    assert "could not write the report" in app.error.value
    assert app.export(tmp_path / "missing" / "r.html") is None  # folders are not made silently
    assert "does not exist" in app.error.value and not (tmp_path / "missing").exists()


# ------------------------------------------------------------------------------ rich display
@pytest.fixture
def no_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    dag = importlib.import_module("workbench.viz.dag")  # the module, not the function
    monkeypatch.setattr(dag, "_have_dot", lambda: False)


def test_reprs_render_without_dot_or_gpu(no_dot: None) -> None:
    graph = hostile_graph()
    s = wb.schedule(graph, "nnc")
    t = wb.simulate(s)
    plan = wb.plan_memory(s)
    c = wb.compare(graph, ["nnc"], show_progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        outputs = [graph._repr_html_(), s._repr_html_(), t._repr_html_(), plan._repr_html_(),
                   c._repr_html_()]
    for out in outputs:
        assert "<script>alert" not in out and "<img src=x" not in out
    assert "<svg" in outputs[0] and "Graph evil &lt;script&gt;" in outputs[0]
    assert "Memory plan somas" in outputs[3]
    for obj in (graph, s, t, plan, c):
        text = repr(obj)
        assert "\n" not in text and len(text) < 200, text


def test_trace_display_is_table_then_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[dict[str, Any]] = []
    import IPython.display

    monkeypatch.setattr(IPython.display, "display",
                        lambda obj, raw=False: shown.append(obj))
    display.reset_plotlyjs()
    t = wb.simulate(wb.schedule(wb.models.build("nnc_diamond"), "nnc"))
    t._ipython_display_()
    t._ipython_display_()
    wb.plan_memory(t.schedule)._ipython_display_()
    assert len(shown) == 6
    header, fig = shown[0], shown[1]
    assert set(header) == {"text/html", "text/plain"} and "makespan_us" in header["text/html"]
    assert set(fig) == {PLOTLY_MIME, "text/html", "text/plain"}
    assert fig[PLOTLY_MIME]["data"] and "Trace(" in header["text/plain"]
    marker = "* plotly.js v"
    assert fig["text/html"].count(marker) == 1          # the first figure of the session
    assert marker not in shown[3]["text/html"]          # later ones reuse window.Plotly
    assert marker not in shown[5]["text/html"]
    assert "Memory plan" in shown[4]["text/html"]
    # the pure functions stay self-contained by default
    assert display.trace_html(t).count(marker) == 1
    display.reset_plotlyjs()


def test_dag_tab_without_dot(ran: Workbench, no_dot: None) -> None:
    ran._dag_cache.clear()
    ran.select("serial")
    ran.select("nnc")
    assert "Graphviz 'dot' not found" in ran.dag_html.value and "<svg" in ran.dag_html.value
    ran._dag_cache.clear()


def test_progress_moves_once_per_policy(app: Workbench) -> None:
    app.model.value = "nnc_diamond"
    app.mode.value = "graph"
    app.policies.value = ("serial", "nnc", "ios")
    seen: list[int] = []
    app.progress.observe(lambda change: seen.append(change["new"]), names="value")
    app.run(wait=True)
    assert seen == [1, 2, 3] and app.progress.bar_style == "success"
    c = result(app)
    assert c.mode == "graph" and c.settings["options"] == {"ios": {"mode": "graph"}}
