"""The device check runs in a simulated device image and comes back whole (issue 42, acceptance).

``tests/_device_image/sitecustomize.py`` makes plotly and graphviz unimportable (the GPU
machine's image has neither) and installs the strict fake ``torch.cuda`` as the torch
executor's CUDA, for every process the check starts.  Run 1 (``scripts/device_check.sh``) in its
tiny profile: every GPU test is collected (as many as where everything is installed) with no
collection error, the results are at most 8 plain files, the plan and budgets come first and fit
the device tool's limits; a benchmark stopped after its first case has that case on disk; run 2's
benchmarks take the GPU paths on the fake.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
IMAGE = ROOT / "tests" / "_device_image"

pytest.importorskip("torch")


def _check_module() -> Any:
    spec = importlib.util.spec_from_file_location("device_check",
                                                  ROOT / "scripts" / "device_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("device_check", module)  # (its dataclasses look it up)
    spec.loader.exec_module(module)
    return module


def _image_env(out: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "STEPS"}
    env.update(PYTHONPATH=os.pathsep.join([str(IMAGE), str(ROOT)]),
               DEVICE_IMAGE_MISSING="plotly,graphviz", WORKBENCH_FAKE_CUDA="1",
               DEVICE_CHECK_PROFILE="tiny", PYTHON=sys.executable, OUT=str(out),
               PYTHONUNBUFFERED="1", **extra)
    return env


def _collected(text: str) -> int:
    """N of pytest's 'N tests collected' or 'N/M tests collected'."""
    found = re.search(r"(\d+)(?:/\d+)? tests? collected", text)
    assert found, text[-2000:]
    return int(found.group(1))


def _marked_modules() -> list[Path]:
    """The test modules that mark tests ``gpu`` or ``torch_gpu``."""
    return [p for p in sorted((ROOT / "tests").glob("test_*.py"))
            if re.search(r"mark\.(torch_)?gpu\b", p.read_text(encoding="utf-8"))]


def _gpu_tests_collected_here(session: pytest.Session) -> int | None:
    """How many tests this session collected that are marked ``gpu`` or ``torch_gpu`` (where
    plotly and graphviz are installed), when it collected every module that marks any (a
    whole-suite run: each xdist worker collects everything); None otherwise."""
    collected = {item.path.name for item in session.items}
    if not {p.name for p in _marked_modules()} <= collected:
        return None
    return sum(1 for item in session.items
               if item.get_closest_marker("gpu") or item.get_closest_marker("torch_gpu"))


def _gpu_tests_where_everything_is_installed() -> subprocess.Popen[str]:
    """Collect, in this environment (plotly and graphviz installed), the modules that mark
    tests ``gpu`` or ``torch_gpu``: how many GPU tests there are (for a run of a few modules,
    where :func:`_gpu_tests_collected_here` cannot say)."""
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "--collect-only", "-m", "gpu or torch_gpu",
                             *map(str, _marked_modules())],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def test_the_image_lacks_plotly_and_graphviz(tmp_path: Path) -> None:
    code = ("import importlib\nfor m in ('plotly', 'graphviz', 'pandas'):\n    try:\n"
            "        importlib.import_module(m); print(m, 'yes')\n"
            "    except ModuleNotFoundError: print(m, 'no')\n"
            "from workbench.executors.torch_exec import runner\n"
            "print(type(runner._cuda_api()).__name__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env=_image_env(tmp_path), timeout=120)
    assert done.stdout.split() == ["plotly", "no", "graphviz", "no", "pandas", "yes",
                                   "StrictCuda"], done.stderr


def test_each_runs_plan_fits_the_device_tools_limits() -> None:
    check = _check_module()
    assert set(check.RUNS) == {1, 2}
    for run, steps in check.RUNS.items():
        total = sum(s.budget_s for s in steps)
        assert total + check.PACK_S <= check.TOTAL_S <= 480 < 600
        assert steps[0].name == "warmup" and "--seconds" in steps[0].argv
        done = subprocess.run([sys.executable, "scripts/device_check.py", "--run", str(run),
                               "--plan"], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0
        lines = done.stdout.splitlines()
        assert f"budget {total} s" in lines[0]
        assert [line.split()[1:3] for line in lines[1:]] == [[s.name, str(s.budget_s)]
                                                            for s in steps]
    names = [s.name for steps in check.RUNS.values() for s in steps]
    assert {"pytest_torch_gpu", "accelerate_b1", "pytest_cupy", "compile_b1",
            "accelerate_b16"} <= set(names)
    compile_step = next(s for s in check.RUNS[2] if s.name == "compile_b1")
    assert "default,reduce-overhead" in compile_step.argv


def test_run_1_in_the_simulated_image_collects_every_gpu_test_and_comes_back_whole(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    gpu_tests = _gpu_tests_collected_here(request.session)
    baseline = None if gpu_tests else _gpu_tests_where_everything_is_installed()
    out = tmp_path / "out"
    done = subprocess.run(["bash", "scripts/device_check.sh"], cwd=ROOT, capture_output=True,
                          text=True, env=_image_env(out), timeout=300)
    if baseline is not None:
        gpu_tests = _collected(baseline.communicate(timeout=300)[0])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.startswith("device check, run 1 of 2 (tiny profile)")
    files = sorted(p.name for p in out.iterdir())
    assert all((out / f).is_file() for f in files) and len(files) <= 8
    assert files == sorted(["summary.txt", "summary.json", "pytest.log", "cases.jsonl",
                            "results.tar.gz"])
    log = (out / "pytest.log").read_text(encoding="utf-8")
    assert "error" not in log.lower().split("short test summary info")[-1]
    assert "needs plotly, which is not installed here" in log  # the image lacked it
    assert gpu_tests is not None and gpu_tests > 100 and _collected(log) == gpu_tests
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert [s["status"] for s in summary["steps"]] == ["ok"] * 3
    assert summary["provenance"]["torch"] and summary["provenance"]["commit"]
    cases = [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()]
    assert [(c["benchmark"], c["network"], c["status"]) for c in cases] == [
        ("accelerate", "tiny_inception", "ok")]
    assert all(c["auto_err"] <= 1e-4 and c["graph_err"] <= 1e-4 for c in cases)
    with tarfile.open(out / "results.tar.gz") as tar:
        names = tar.getnames()
    assert {"work/provenance.json", "work/pytest_torch_gpu.log", "work/accelerate_b1.log",
            "work/accelerate_b1/accelerate_results.json", "cases.jsonl"} <= set(names)
    text = (out / "summary.txt").read_text(encoding="utf-8")
    assert "accelerate_b1      ok" in text and "tiny_inception" in text


def test_a_benchmark_stopped_after_its_first_case_keeps_it(tmp_path: Path) -> None:
    check = _check_module()
    step = next(s for s in check.RUNS[1] if s.name == "accelerate_b1")
    cases = tmp_path / "cases.jsonl"
    argv = [a.format(py=sys.executable, work=str(tmp_path), cases=str(cases))
            for a in step.tiny] + ["--networks", "tiny_inception,tiny_encoder"]  # two cases
    proc = subprocess.Popen(argv, cwd=ROOT, env=_image_env(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not (cases.exists() and cases.read_text().count("\n") >= 1):
            assert proc.poll() is None, "the benchmark ended before its first case was on disk"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        running = proc.poll() is None
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    assert running  # killed during its second case
    (line,) = cases.read_text().splitlines()
    first = json.loads(line)
    assert first["network"] == "tiny_inception" and first["status"] == "ok"
    assert first["auto_us"] > 0 and first["eager_us"] > 0


@pytest.mark.slow
def test_run_2s_benchmarks_take_the_gpu_paths_on_the_fake(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(["bash", "scripts/device_check_2.sh"], cwd=ROOT, capture_output=True,
                          text=True, env=_image_env(out, STEPS="gpu_torch"), timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    cases = [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()]
    assert {(c["mode"], c["ran_mode"], c["verified"]) for c in cases} == {
        ("eager", "eager", True), ("graph", "graph", True)}
    assert len(list(out.iterdir())) <= 8
