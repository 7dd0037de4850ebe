"""The Workbench app and the notebook rich display in a real browser (headless Chromium).

* The app is served by Voilà (the notebook rendered as a standalone page, with a live kernel) on
  127.0.0.1 and a free port, opened in Chromium with every non-loopback request aborted; the test
  clicks Run, waits for the ranking table, checks the other tabs and saves screenshots to
  ``test-artifacts/``.  ``WORKBENCH_UPDATE_ASSETS=1`` also refreshes ``assets/app.png`` (the
  README's screenshot).
* The rich display of Graph, Schedule, Trace, MemoryPlan and Comparison is executed with nbclient,
  exported with nbconvert and opened offline: every figure renders, plotly.js is embedded once.

Skipped, with the reason, without Chromium, Playwright, Voilà or nbclient/nbconvert.  Never run
``playwright install``: the system Chromium is used through ``executable_path``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._browser import (  # skips without Chromium/Playwright
    legend_title_overlaps,
    overflow_problems,
    sync_api,
)

nbformat = pytest.importorskip("nbformat")

import workbench as wb  # noqa: E402
from workbench.executors import gpu  # noqa: E402
from workbench.executors.execute import EXECUTORS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
ASSETS = ROOT / "assets"
SERVER_START_S = 60
RUN_TIMEOUT_MS = 90_000
SCRIPT = "<script>window.__pwned=1</script>"
APP_SOURCE = """\
from workbench.ui import Workbench

app = Workbench()
app"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _notebook(path: Path, cells: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)
    return path


#: The visible timeline figure of the app: its height, the marked (selected) group's title, the
#: first group's policy (the fastest) and whether two groups stand side by side.
TIMELINE_BOX_JS = """(() => {
    const gd = [...document.querySelectorAll('.wb-app .js-plotly-plot')]
        .find(e => e.offsetParent !== null && e.layout && e.layout.updatemenus);
    const texts = (gd._fullLayout.annotations || []).map(a => a.text);
    const first = gd.layout.updatemenus[0].buttons[1];
    return {height: gd.getBoundingClientRect().height,
            marked: texts.filter(t => t.startsWith('▶')),
            best: first ? first.label.split(' ')[0] : '',
            pair: !!(gd.layout.xaxis2 && gd.layout.xaxis2.visible)}; })()"""


def _label(page: Any, policy: str, where: str = ".wb-table-select") -> str:
    """The option label of ``policy`` in the app's policy list ("serial — 123.4 µs (1.00×)")."""
    labels = page.eval_on_selector_all(f"{where} option",
                                       "els => els.map(e => e.textContent)")
    return next(label for label in labels if label.split()[0] == policy)  # spaces may be nbsp


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server and its kernels (their own process group); SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=5)


@pytest.fixture(scope="module")
def browser(chromium: Any) -> Any:
    return chromium  # one Chromium for the session (conftest)


@contextlib.contextmanager
def _server(folder: Path, name: str, argv: list[str], env: dict[str, str],
            url: str) -> Iterator[str]:
    """Run ``argv`` (a notebook server on 127.0.0.1 at the port in ``url``) in ``folder``
    with its log in ``folder/<name>.log``; yields ``url`` once the port listens; always
    stopped."""
    port = int(url.split(":")[2].split("/")[0])
    log = (folder / f"{name}.log").open("wb")
    proc = subprocess.Popen(argv, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{name} exited ({proc.returncode}): "
                            f"{(folder / f'{name}.log').read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"{name} did not listen on port {port} in {SERVER_START_S} s")
                time.sleep(0.2)
        yield url
    finally:
        _stop(proc)
        log.close()


def _kernel_env(**extra: str) -> dict[str, str]:
    """The servers' environment: their kernels import this checkout's workbench, not an
    installed one, and draw no progress bars."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "WORKBENCH_PROGRESS": "0", "PYTHONPATH": path, **extra}


@contextlib.contextmanager
def _voila(folder: Path, cells: list[str]) -> Iterator[str]:
    """A Voilà server on 127.0.0.1 serving a notebook of ``cells``; always stopped."""
    pytest.importorskip("voila", reason="the app browser test needs Voilà (pip install voila)")
    _notebook(folder / "app.ipynb", cells)
    port, token = _free_port(), os.urandom(16).hex()
    argv = [sys.executable, "-m", "voila", "app.ipynb", "--no-browser", f"--port={port}",
            "--Voila.ip=127.0.0.1", f"--token={token}", "--Voila.port_retries=0"]
    with _server(folder, "voila", argv, _kernel_env(),
                 f"http://127.0.0.1:{port}/?token={token}") as url:
        yield url


@contextlib.contextmanager
def _jupyterlab(folder: Path, cells: list[str]) -> Iterator[str]:
    """A JupyterLab server on 127.0.0.1 with a notebook of ``cells`` (its settings, workspaces
    and runtime files under ``folder``); yields the notebook's URL; always stopped."""
    pytest.importorskip("jupyterlab", reason="the JupyterLab browser test needs jupyterlab")
    _notebook(folder / "app.ipynb", cells)
    port, token = _free_port(), os.urandom(16).hex()
    argv = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
            "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
            "--ServerApp.port_retries=0", f"--ServerApp.root_dir={folder}", "--allow-root",
            f"--LabApp.user_settings_dir={folder / 'settings'}",
            f"--LabApp.workspaces_dir={folder / 'workspaces'}"]
    with _server(folder, "jupyterlab", argv,
                 _kernel_env(JUPYTER_RUNTIME_DIR=str(folder / "runtime")),
                 f"http://127.0.0.1:{port}/lab/tree/app.ipynb?token={token}") as url:
        yield url


@pytest.fixture(scope="module")
def voila_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Voilà serving a notebook that shows the app."""
    with _voila(tmp_path_factory.mktemp("voila"), [APP_SOURCE]) as url:
        yield url


class Page:
    """A browser page that may reach 127.0.0.1 only, recording JS errors and blocked URLs."""

    def __init__(self, browser: Any, *, width: int = 1400, height: int = 950) -> None:
        self.page = browser.new_page(viewport={"width": width, "height": height})
        self.page_errors: list[str] = []
        self.blocked: list[str] = []
        self.page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        self.page.route("**/*", self._route)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith(("http://127.0.0.1:", "ws://127.0.0.1:", "file:", "data:")):
            route.continue_()
        else:  # CDN fonts/icons of the page template: harmless when missing
            self.blocked.append(url)
            route.abort()

    def tab(self, title: str) -> None:
        self.page.click(f".wb-app .lm-TabBar-tab:has-text('{title}')")

    def screenshot(self, path: Path) -> None:
        """A full-page screenshot from the top (clicking Run scrolled the page)."""
        self.page.evaluate("""() => { window.scrollTo(0, 0); document.querySelectorAll('*')
            .forEach(e => { if (e.scrollTop) e.scrollTop = 0; }); }""")
        self.page.wait_for_timeout(300)
        self.page.screenshot(path=str(path), full_page=True)

    def wait_for_figures(self, n: int) -> None:
        """Wait until ``n`` plotly figures are visible (the other tabs' figures are hidden)."""
        self.page.wait_for_function(
            """n => [...document.querySelectorAll('.wb-app .js-plotly-plot')]
                   .filter(e => e.offsetParent !== null && e.querySelector('.main-svg')).length
                   >= n""", arg=n, timeout=15_000)


def test_app_runs_in_voila(browser: Any, voila_url: str) -> None:
    t0 = time.perf_counter()
    view = Page(browser)
    page = view.page
    page.goto(voila_url, timeout=RUN_TIMEOUT_MS)
    run = page.wait_for_selector(".wb-app .wb-run", timeout=RUN_TIMEOUT_MS)
    shown = time.perf_counter() - t0
    assert run is not None and page.locator(".wb-app .lm-TabBar-tab").count() == 5
    measured = [name for name in EXECUTORS.names() if name != "simulator"
                and EXECUTORS.available(name)]
    menu = page.locator(".wb-executor select")
    # the menu is live when a measured executor can run here (torch on the CPU counts), else
    # greyed out; an executor that cannot run is named with its reason beside the menu
    assert menu.is_disabled() == (not measured)
    assert all(name in menu.inner_text() for name in measured)
    if not gpu.is_available():
        assert "cupy unavailable" in page.inner_text(".wb-app")

    # the default Run: graph mode, every registered policy (issue 45), every row shown
    assert "inception_v3" in page.inner_text(".wb-app")           # the graph, before Run
    options = page.locator(".wb-app select[multiple] option")
    assert options.count() == len(wb.policies())
    assert page.eval_on_selector(".wb-app select[multiple]",
                                 "e => e.scrollHeight <= e.clientHeight + 1")  # all rows shown
    export = ".wb-app button:has-text('Export HTML report')"
    run.click()
    assert page.eval_on_selector(export, "b => b.disabled")   # no export mid-run
    page.wait_for_selector(".wb-app table.wb-table", timeout=RUN_TIMEOUT_MS)
    ran = time.perf_counter() - t0
    rows = page.locator(".wb-app table.wb-table tbody tr")
    assert rows.count() == len(wb.policies())
    page.wait_for_function(  # the status line follows the views it waits for
        "() => document.querySelector('.wb-app .wb-status').innerText.includes('done in')",
        timeout=15_000)
    page.wait_for_selector(f"{export}:not([disabled])", state="attached",
                           timeout=15_000)   # enabled again (in the hidden Report tab)
    if page.locator(".wb-app .wb-why").count():   # the why text, where the app shows one
        assert page.locator(".wb-app .wb-why").first.is_visible()
        assert not overflow_problems(page, ".wb-app .wb-why")
    page.set_viewport_size({"width": 1280, "height": 950})   # all columns fit 1,280 px
    page.click(".wb-app details.wb-cols summary")
    page.wait_for_timeout(300)
    scroll = page.eval_on_selector(".wb-app .wb-scroll", "e => [e.scrollWidth, e.clientWidth]")
    assert scroll[0] <= scroll[1] + 1, f"all columns: {scroll[0]} px in {scroll[1]} px"
    page.click(".wb-app details.wb-cols summary")
    page.set_viewport_size({"width": 1400, "height": 950})
    ARTIFACTS.mkdir(exist_ok=True)
    view.screenshot(ARTIFACTS / "app.png")

    view.tab("Timelines")
    view.wait_for_figures(1)
    view.screenshot(ARTIFACTS / "app_timelines.png")
    figures, bad = legend_title_overlaps(page, ".wb-app")
    assert len(figures) == 1 and figures[0]["legends"] and figures[0]["titles"], figures
    assert not bad, bad
    assert page.evaluate(f"() => {TIMELINE_BOX_JS}")["height"] < 1_400
    # the selected policy drives the timeline figure: marked, beside the fastest
    before = page.evaluate(f"() => {TIMELINE_BOX_JS}")
    page.select_option(".wb-selected select",
                       label=_label(page, "memory_greedy", ".wb-selected"))
    page.wait_for_function(f"""() => {{ const b = {TIMELINE_BOX_JS};
        return b.marked.length === 1 && b.marked[0].includes('memory_greedy'); }}""",
                           timeout=15_000)
    after = page.evaluate(f"() => {TIMELINE_BOX_JS}")
    assert after["marked"] != before["marked"] and after["pair"] and not before["pair"]
    view.screenshot(ARTIFACTS / "app_timelines_selected.png")

    view.tab("Table")
    page.select_option(".wb-table-select select", label=_label(page, "serial"))  # a row click
    view.tab("DAG")
    page.wait_for_function(
        "() => document.querySelector('.wb-dag').innerText.includes('Streams of serial')",
        timeout=15_000)
    selected = page.eval_on_selector(".wb-selected select",
                                     "e => e.options[e.selectedIndex].textContent")
    assert selected.split()[0] == "serial"  # the dropdown above the tabs followed the table
    dag = page.locator(".wb-dag svg").first
    assert dag.is_visible()
    view.screenshot(ARTIFACTS / "app_dag.png")
    view.tab("Memory")
    view.wait_for_figures(3)  # peaks, the selected policy's curves and its lifetime chart
    view.screenshot(ARTIFACTS / "app_memory.png")
    figures, bad = legend_title_overlaps(page, ".wb-app")
    assert len(figures) == 3 and any(f["legends"] for f in figures), figures
    assert all(f["titles"] for f in figures) and not bad, bad
    view.tab("Report")
    label = page.eval_on_selector(  # the Export button shows its whole label
        ".wb-app button:has-text('Export HTML report')",
        "b => ({scroll: b.scrollWidth, client: b.clientWidth, text: b.innerText})")
    assert label["scroll"] <= label["client"] and "Export HTML report" in label["text"], label
    view.screenshot(ARTIFACTS / "app_report.png")
    view.tab("Table")
    view.screenshot(ARTIFACTS / "app_table.png")
    assert not view.page_errors, view.page_errors
    print(f"\napp shown after {shown:.1f} s, results after {ran:.1f} s, "
          f"test {time.perf_counter() - t0:.1f} s; blocked {len(view.blocked)} CDN requests")

    shot = ARTIFACTS / "app.png"
    assert shot.stat().st_size > 20_000
    if os.environ.get("WORKBENCH_UPDATE_ASSETS"):
        ASSETS.mkdir(exist_ok=True)
        shutil.copyfile(shot, ASSETS / "app.png")
        assert (ASSETS / "app.png").stat().st_size < 400_000
    page.close()


RICH_CELLS = [
    "import warnings\nwarnings.simplefilter('ignore')\nimport workbench as wb\n"
    f"g = wb.Graph.from_edges([({SCRIPT!r}, 'b'), ({SCRIPT!r}, 'c'), ('b', 'd'), ('c', 'd')], "
    f"name={SCRIPT!r})\ng",
    "s = wb.schedule(g, 'nnc'); s",
    "t = wb.simulate(s); t",
    "wb.simulate(wb.schedule(g, 'serial'))",
    "wb.plan_memory(s)",
    "wb.compare(g, ['nnc'], show_progress=False)",
]


def test_rich_display_survives_html_export(browser: Any, tmp_path: Path) -> None:
    nbclient = pytest.importorskip("nbclient")
    nbconvert = pytest.importorskip("nbconvert")
    nb = nbformat.read(_notebook(tmp_path / "rich.ipynb", RICH_CELLS), as_version=4)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    trace_outputs = nb.cells[2].outputs
    assert [o.output_type for o in trace_outputs] == ["display_data", "display_data"]
    assert "application/vnd.plotly.v1+json" in trace_outputs[1].data  # JupyterLab, Voilà
    html, _ = nbconvert.HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert html.count('class="plotly-graph-div"') == 3      # 2 timelines + 1 lifetime chart
    assert html.count("* plotly.js v") == 1                 # embedded once per notebook
    path = tmp_path / "rich.html"
    path.write_text(html, encoding="utf-8")

    view = Page(browser, width=1200, height=900)
    page = view.page
    page.goto(path.as_uri())
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=15_000)
    rendered = page.eval_on_selector_all(
        ".plotly-graph-div", "els => els.map(e => !!e.querySelector('.main-svg'))")
    assert rendered == [True, True, True]
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert SCRIPT in page.inner_text("body")  # shown as text
    assert not view.page_errors, view.page_errors
    page.close()


HOSTILE_APP = f"""\
import json
import workbench as wb
from workbench.io import graph_to_dict
from workbench.ui import Workbench

evil, img = {SCRIPT!r}, "<img src=x onerror=window.__pwned=2>"
quoted = "b'&\\"q\\""
g = wb.Graph.from_edges([(evil, quoted), (evil, img), (quoted, "d"), (img, "d")],
                        ops={{evil: "<b>conv</b>", quoted: "relu", img: "add&", "d": "x>y"}},
                        name="evil " + evil)
app = Workbench()
app.policies.value = ("serial", "nnc")
app.load_upload("evil<script>.json", json.dumps(graph_to_dict(g)).encode())
app.run(wait=True)
app.select("nnc")
app"""


def test_hostile_names_stay_text_in_the_app(browser: Any,
                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    """An uploaded graph whose names hold <script>, an <img onerror>, quotes and & renders as text
    in the app in a real browser: no script runs."""
    with _voila(tmp_path_factory.mktemp("voila_evil"), [HOSTILE_APP]) as url:
        view = Page(browser)
        page = view.page
        page.goto(url, timeout=RUN_TIMEOUT_MS)
        page.wait_for_selector(".wb-app table.wb-table", timeout=RUN_TIMEOUT_MS)
        view.tab("DAG")
        page.wait_for_selector(".wb-dag svg", timeout=15_000)
        assert page.evaluate("() => window.__pwned") is None
        assert page.locator(".wb-app img[src='x']").count() == 0
        text = page.inner_text(".wb-app")
        assert "<script>window.__pwned=1</script>" in text  # shown literally, not run
        assert not view.page_errors, view.page_errors
        page.close()


#: Every plotly title lies within its figure.
TITLES_JS = """root => {
    const out = [];
    for (const svg of root.querySelectorAll('.js-plotly-plot .main-svg')) {
        if (svg.getBoundingClientRect().width === 0) continue;
        const box = svg.getBoundingClientRect();
        for (const t of svg.querySelectorAll('.gtitle, .g-gtitle text')) {
            const r = t.getBoundingClientRect();
            if (r.left < box.left - 1 || r.right > box.right + 1)
                out.push(`plot title cut: ${t.textContent.slice(0, 40)}`);
        }
    }
    return out;
}"""
TAB_FIGURES = (("Table", 0), ("Timelines", 1), ("Memory", 3), ("DAG", 0), ("Report", 0))


def _clipped_by_tab(view: Page, width: int) -> dict[str, list[str]]:
    """For each tab of the app: every element clipped, cut by an ellipsis or sticking out past
    the viewport's right edge (:func:`tests._browser.overflow_problems`), and every plotly title
    outside its figure; a screenshot of each tab with a problem."""
    page = view.page
    bad: dict[str, list[str]] = {}
    for title, figures in TAB_FIGURES:
        view.tab(title)
        if figures:
            view.wait_for_figures(figures)
        if title == "DAG":  # the launch-order list and the drawing are there to be checked
            page.wait_for_selector(".wb-dag table.wb-streams", timeout=15_000)
            page.wait_for_selector(".wb-dag svg", timeout=15_000)
        page.wait_for_timeout(300)
        found = overflow_problems(page, ".wb-app") + page.eval_on_selector(".wb-app", TITLES_JS)
        if found:
            bad[title] = found
            view.screenshot(ARTIFACTS / f"app_clipped_{width}_{title}.png")
    return bad


def test_app_is_not_clipped_at_1280_and_1920_px(
        browser: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Nothing of the app is cut off or sticks out, in any tab, at 1,280 and at 1,920 px, in
    JupyterLab with its file browser open (where the app gets ~850 px of a 1,280 px window and
    its results pane ~480 px): the graph-source buttons, the status line, the DAG's launch-order
    list and drawing, the memory-plan title.  One Run, the window widened between the checks."""
    with _jupyterlab(tmp_path_factory.mktemp("lab"), [APP_SOURCE]) as url:
        view = Page(browser, width=1280, height=900)
        page = view.page
        page.goto(url, timeout=RUN_TIMEOUT_MS)
        _run_first_cell(page)
        run = page.wait_for_selector(".wb-app .wb-run", timeout=RUN_TIMEOUT_MS)
        t0 = time.perf_counter()
        run.click()
        page.wait_for_selector(".wb-app table.wb-table", timeout=RUN_TIMEOUT_MS)
        status = page.inner_text(".wb-app .wb-status")
        print(f"\nJupyterLab: Run click to ranking table {time.perf_counter() - t0:.1f} s "
              f"(the app's status: {status})")
        _check_not_clipped(view)


#: True once the app shows or the first cell runs (or waits to run): its prompt reads ``[*]``.
_CELL_TOOK = """() => document.querySelector('.wb-app') !== null
    || (document.querySelector('.jp-Notebook .jp-Cell .jp-InputPrompt')?.textContent ?? '')
       .includes('*')"""


def _run_first_cell(page: Any, tries: int = 6) -> None:
    """Run the notebook's first cell in JupyterLab (Shift+Enter in its editor), accepting a
    kernel dialog if one opens, until the app shows.  A key press can arrive before the
    notebook listens: when the cell has not started 5 s after the press, it is pressed again
    (a lost press used to cost a 30 s wait); once it runs, the app gets the run timeout."""
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                           timeout=RUN_TIMEOUT_MS)   # the kernel is up
    for _ in range(tries):
        if page.locator(".jp-Dialog .jp-mod-accept").count():
            page.click(".jp-Dialog .jp-mod-accept")  # "Select Kernel": the default one
        if page.locator(".wb-app").count():
            return
        page.click(".jp-Notebook .jp-Cell >> nth=0 >> .cm-content")
        page.keyboard.press("Shift+Enter")
        try:
            page.wait_for_function(_CELL_TOOK, timeout=5_000)
        except sync_api.TimeoutError:
            continue  # the press was lost
        page.wait_for_selector(".wb-app", timeout=RUN_TIMEOUT_MS)
        return


def _check_not_clipped(view: Page) -> None:
    page = view.page
    ARTIFACTS.mkdir(exist_ok=True)
    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(500)   # the widgets and figures relayout
        bad = _clipped_by_tab(view, width)
        view.tab("DAG")
        view.screenshot(ARTIFACTS / f"app_dag_{width}.png")
        view.tab("Table")
        view.screenshot(ARTIFACTS / f"app_{width}.png")
        app = page.eval_on_selector(".wb-app", "e => [e.scrollWidth, e.clientWidth]")
        assert app[0] <= app[1] + 1, f"the app is {app[0]} px wide in a {app[1]} px page"
        assert not bad, f"at {width} px: {bad}"
    # the labels of the "Run on" controls end at one x and sit on their control's line
    labels = page.eval_on_selector_all(
        ".wb-app .widget-label", """els => els.filter(e => ['device', 'executor', 'mode',
            'memory'].includes(e.innerText.trim())).map(e => {
                const r = e.getBoundingClientRect(), c = e.nextElementSibling
                    .getBoundingClientRect();
                return [e.innerText.trim(), Math.round(r.right), Math.round(r.top - c.top)];
            })""")
    assert len(labels) == 4 and len({right for _, right, _ in labels}) == 1, labels
    assert all(abs(dy) <= 6 for _, _, dy in labels), labels
    assert not view.page_errors, view.page_errors
    page.close()
