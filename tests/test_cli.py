"""The README's main command end to end, and the listing commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import workbench as wb
from workbench.cli import main


def test_main_command_writes_a_report(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "compare", "--model",
                          "inception_v3", "--device", "h100", "-o", str(out), "--no-progress"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "best:" in run.stdout and "serial" in run.stdout
    html = out.read_text()
    assert html.count("* plotly.js v") == 1 and "<svg" in html
    for policy in wb.policies():
        assert policy in run.stdout


def test_compare_a_graph_file_with_options(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = wb.save(wb.models.nnc_diamond(), tmp_path / "g.json")
    code = main(["compare", str(path), "--policies", "nnc,asap", "--mode", "graph",
                 "--max-streams", "1", "-o", str(tmp_path / "r.html"), "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    assert "nnc_diamond: 4 ops on h100 (graph mode)" in out


def test_listings(capsys: pytest.CaptureFixture[str]) -> None:
    for command, expected in (("policies", "nnc"), ("models", "inception_v3"),
                              ("devices", "rtx3070_laptop")):
        assert main([command]) == 0
        assert expected in capsys.readouterr().out


def test_listings_are_aligned_and_models_show_their_parameters(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # the summary column starts at one offset whatever the length of name and seed (issue 25)
    from workbench.schedulers import POLICIES

    starts = {line.index(info.summary) for line, info in
              zip(lines, (info for _, info in POLICIES.items()), strict=True)}
    assert len(starts) == 1, lines
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "n_ops (required)" in out and "fused=True" in out and "seq_len=128" in out
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = capsys.readouterr().out
    assert "``" not in help_text and "The workbench command" in help_text


def test_model_parameters_and_usage_errors(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    report = str(tmp_path / "r.html")
    assert main(["compare", "--model", "inception_v3", "--param", "resolution=10", "-o", report,
                 "--no-progress"]) == 2
    assert "too small" in capsys.readouterr().err
    assert main(["compare", "-o", report]) == 2
    assert "either a graph file or --model" in capsys.readouterr().err
    assert main(["compare", "--model", "nnc_diamond", "--param", "x", "-o", report]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--help"], ["policies"], ["models"], ["devices"]])
def test_help_and_listings_start_without_the_heavy_imports(argv: list[str]) -> None:
    """``workbench --help`` and the listings import neither pandas nor the loaders (issue 25:
    they took 1.7 s; now 0.04-0.25 s), so the lazy imports are held by a check that cannot
    depend on the machine's speed."""
    code = ("import sys\nfrom workbench.cli import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted({'pandas', 'workbench.orchestration.compare', 'workbench.io'} & "
            "set(sys.modules)), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         check=True)
    assert out.stderr.strip().splitlines()[-1] == "[]", out.stderr


def test_the_lazy_package_behaves_as_the_eager_one() -> None:
    """``workbench/__init__`` imports its names on first use: functions named like a module
    stay functions once that module is imported, submodules are reachable as attributes, and
    the package pickles by name (cloudpickle sends lambdas that use ``wb`` to Dask workers)."""
    import importlib
    import pickle

    cloudpickle = pytest.importorskip("cloudpickle")
    for name, where in (("compare", "orchestration.compare"), ("schedule", "schedulers"),
                        ("sweep", "orchestration.sweep"), ("simulate", "simulator.simulate"),
                        ("execute", "executors.execute"),
                        ("devices", "simulator.cost_model.costs")):
        importlib.import_module(f"workbench.{where}")
        assert callable(getattr(wb, name)) and not isinstance(getattr(wb, name), type(wb))
    assert wb.costs.DEVICES and wb.io.load is wb.load
    assert pickle.loads(pickle.dumps(wb)) is wb
    assert pickle.loads(cloudpickle.dumps(lambda: wb.models.nnc_diamond()))().name == "nnc_diamond"
    with pytest.raises(AttributeError):
        _ = wb.no_such_name
