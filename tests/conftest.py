"""Shared pytest configuration: hypothesis profiles, the GPU auto-skip, and test modules whose
display or notebook dependencies are missing skipped at collection (the GPU machine's image has
no plotly or graphviz)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


#: The fidelity rows' IOS searches (about 3 CPU minutes) as ``tests/fidelity_searches.py`` wrote
#: them, keyed by a hash of the graph, device, model and options searched: a change to any of
#: those searches again.  ``tests/test_fidelity.py`` searches the cheap rows again against them.
FIDELITY_SEARCHES = Path(__file__).resolve().parent / "data" / "fidelity_searches.json"


@pytest.fixture(scope="module")
def fidelity_searches() -> Iterator[None]:
    """The module's fidelity predictions take stored IOS searches (:data:`FIDELITY_SEARCHES`)."""
    from workbench.simulator import fidelity

    fidelity.use_store(FIDELITY_SEARCHES)
    yield
    fidelity.use_store(None)


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """One headless Chromium for every browser test of the session (tests/_browser.py launches
    it; skips where it cannot start)."""
    from tests._browser import launch

    yield from launch()


@pytest.fixture(scope="session")
def executed_notebook(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Any]:
    """``run(path)``: the notebook at ``path`` executed once per session with a real kernel
    (nbclient, widget state stored) in a scratch folder, this checkout's workbench on the
    kernel's path and progress bars off; each call returns a copy, so a test may change it.
    ``tests/test_notebooks.py`` and ``tests/test_notebook_export.py`` share the runs."""
    import copy

    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    root = Path(__file__).resolve().parents[1]
    done: dict[Path, Any] = {}

    def run(path: Path) -> Any:
        if path not in done:
            nb = nbformat.read(path, as_version=4)
            folder = tmp_path_factory.mktemp(path.stem)
            with pytest.MonkeyPatch.context() as mp:  # for the kernel: undone after it starts
                mp.setenv("WORKBENCH_PROGRESS", "0")
                mp.setenv("PYTHONPATH", os.pathsep.join(
                    p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p))
                nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                        store_widget_state=True,
                                        resources={"metadata": {"path": str(folder)}}).execute()
            done[path] = nb
        return copy.deepcopy(done[path])

    return run


def _gpu_available() -> tuple[bool, str]:
    try:
        from workbench.executors import gpu
    except ImportError:
        return False, "workbench.executors.gpu is not available"
    ok = gpu.is_available()
    return ok, "" if ok else gpu.unavailable_reason()


def _torch_cuda_available() -> tuple[bool, str]:
    """Whether PyTorch sees a CUDA GPU (the torch executor's GPU tests need no CuPy)."""
    try:
        import torch
    except ImportError:
        return False, "torch is not installed"
    if not torch.cuda.is_available():
        return False, "torch sees no CUDA device"
    return True, ""


_PROBES = {"gpu": _gpu_available, "torch_gpu": _torch_cuda_available}

#: Packages a test module may need that an image for GPU work can lack (the device machine has
#: torch, pandas, networkx, hypothesis and pytest, but no plotly or graphviz): a module whose
#: import fails for want of one of these is skipped at collection, saying which, instead of
#: stopping the whole session with a collection error.  Any other import error still errors.
OPTIONAL_PACKAGES = frozenset({
    "plotly", "graphviz", "ipywidgets", "IPython", "jupyterlab", "nbclient", "nbconvert",
    "nbformat", "ipykernel", "playwright", "voila", "hta", "dask", "distributed", "kaleido"})


class _ModuleNeedingOptionalPackages(pytest.Module):
    """A test module that is skipped, not an error, when importing it needs a missing package of
    :data:`OPTIONAL_PACKAGES` (directly or through the workbench module it imports)."""

    def _getobj(self) -> object:
        try:
            return super()._getobj()
        except self.CollectError as exc:
            missing = exc.__cause__
            name = getattr(missing, "name", None) or ""
            if isinstance(missing, ModuleNotFoundError) and \
                    name.partition(".")[0] in OPTIONAL_PACKAGES:
                pytest.skip(f"needs {name}, which is not installed here", allow_module_level=True)
            raise


def pytest_pycollect_makemodule(module_path: object, parent: pytest.Collector) -> pytest.Module:
    return _ModuleNeedingOptionalPackages.from_parent(parent, path=module_path)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``gpu`` tests (CuPy + CUDA) and ``torch_gpu`` tests (torch + CUDA) cleanly where the
    machine cannot run them; each probe runs only when a collected test carries its marker.
    Under xdist, the longest units of work first (:func:`_xdist_units`)."""
    _xdist_units(items)
    for marker, probe in _PROBES.items():
        marked = [item for item in items if marker in item.keywords]
        if not marked:
            continue
        ok, reason = probe()
        if ok:
            continue
        skip = pytest.mark.skip(reason=f"needs a CUDA GPU: {reason}")
        for item in marked:
            item.add_marker(skip)


# ---------------------------------------------------------------------------- pytest-xdist
#: Test modules that share one process-wide cache, so they run in the same xdist worker: the
#: fidelity rows' IOS searches (``fidelity.predict`` runs each once per process, when one is
#: not stored) are quoted by the README's table too; executed notebooks
#: (:func:`executed_notebook`) are checked for errors and exported.
SHARED_WORKER = {
    "test_fidelity.py": "ios_searches",
    "test_readme_figures.py": "ios_searches",
    "test_notebooks.py": "notebooks",
    "test_notebook_export.py": "notebooks",
    "test_one_answer.py": "notebooks",
}
#: The longest units first (seconds of a whole run under ``-n 2`` on the 2-core machine, from
#: ``--durations``: the H200 refit's leave-one-out fixture alone takes ~70 s), so that the
#: workers end together: a long module handed out last would run alone.  The rest keep their
#: order.
LONGEST_FIRST = (
    "test_fidelity_h200.py", "test_golden_stages.py", "test_accelerate_any_model.py",
    "test_app_browser.py", "notebooks", "test_storage_aliases.py", "test_device_check.py",
    "test_simulate_scale.py",
)


def _unit(nodeid: str) -> str:
    """The unit of work of a test under xdist: its module, or its :data:`SHARED_WORKER` group."""
    module = nodeid.split("::", 1)[0]
    return SHARED_WORKER.get(module.rsplit("/", 1)[-1], module)


def _xdist_units(items: list[pytest.Item]) -> None:
    """Under ``pytest -n N`` (the README's test command) the longest units of
    :data:`LONGEST_FIRST` come first in the collection, which is the order xdist hands the units
    out in (:func:`pytest_xdist_make_scheduler`).  Nothing changes in a run without xdist."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def order(item: pytest.Item) -> int:
        unit = _unit(item.nodeid)
        return rank.get(unit, rank.get(unit.rsplit("/", 1)[-1], len(rank)))

    items.sort(key=order)  # stable: the order within a unit is kept


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """xdist's ``loadscope`` scheduling with this suite's units (:func:`_unit`: a module, so its
    module fixtures run once; the modules of :data:`SHARED_WORKER` together), handed out in the
    order collected, whatever ``--dist`` says."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleUnits(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    config.option.loadscopereorder = False
    return ModuleUnits(config, log)


#: The young generation's threshold in a test process (Python's default: 700 allocations).
GC_YOUNG_THRESHOLD = 100_000


def pytest_collection_finish(session: pytest.Session) -> None:
    """The cyclic collector tuned for the test process (the product's own processes keep
    Python's defaults): what collection imported (torch, the test modules, hypothesis) is frozen
    out of every later collection, and young collections run every 100,000 allocations, not 700.
    A test process holds a large heap, and each collection walked it: golden stages, storage
    aliases, launch plans and common policies (571 tests) took 100.2 user s, 82.9 s tuned."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def pytest_sessionfinish(session: pytest.Session) -> None:
    """What the run left on the heap is frozen before pytest's last garbage collection (its
    unraisable-exception plugin collects once at exit, to report errors in finalizers of
    cycles still alive): in a test worker that walk of a heap of gigabytes cost 3-4 CPU s, for
    objects whose finalizers run only at the process's exit anyway.  An unraisable exception
    raised during the run is still reported with its test."""
    import gc

    gc.freeze()
