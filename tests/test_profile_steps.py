"""Profiles recorded the usual way (``torch.profiler.schedule`` + ``prof.step()`` with an
``ExecutionTraceObserver``) import one ``ProfilerStep`` at a time: the Execution Trace and the
Kineto trace are split by step, ``step=`` / ``--step`` picks one (default the last complete one),
unknown steps are one-line errors, and a graph with nothing to schedule says so in one line.

The profiles are recorded here, on the CPU, from the model zoo's tiny ResNet (inference, three
steps: one warm-up, two recorded) and a tiny CNN's training step; the expected op counts and
durations are read from the Kineto trace itself (outermost ``cpu_op`` events inside the step's
``ProfilerStep#N`` span), not from the importers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench.io import execution_graph, load_execution_trace, load_pytorch_trace

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"


def record(tmp: Path, model: Any, step: Any, *, steps: int = 3) -> tuple[Path, Path]:
    """ET and Kineto trace of ``steps`` calls of ``step()`` under the usual schedule (one
    warm-up step, then two active ones: ProfilerStep#1 and #2), written by ``on_trace_ready``."""
    from torch.profiler import (
        ExecutionTraceObserver,
        ProfilerActivity,
        profile,
        schedule,
    )

    et, kineto = tmp / "et.json", tmp / "kineto.json"
    observer = ExecutionTraceObserver().register_callback(str(et))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Profiler clears events at the end of each cycle"
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                     schedule=schedule(wait=0, warmup=1, active=2),
                     on_trace_ready=lambda p: p.export_chrome_trace(str(kineto)),
                     execution_trace_observer=observer) as prof:
            for _ in range(steps):
                step()
                prof.step()
    return et, kineto


@pytest.fixture(scope="module")
def resnet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from tests.model_zoo import ZOO

    model, example = ZOO["resnet"]()

    def step() -> None:
        with torch.no_grad():
            model(*example)

    return record(tmp_path_factory.mktemp("resnet"), model, step)


@pytest.fixture(scope="module")
def training(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, labels = torch.randn(2, 3, 12, 12), torch.tensor([0, 3])

    def step() -> None:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), labels).backward()
        opt.step()

    return record(tmp_path_factory.mktemp("training"), model, step)


def kineto_step(kineto: Path, number: int) -> tuple[int, float]:
    """(outermost CPU ops, µs from the first one's start to the last one's end) of
    ``ProfilerStep#number``, read from the Kineto JSON directly."""
    events = json.loads(kineto.read_text())["traceEvents"]
    (span,) = [(e["ts"], e["ts"] + e["dur"]) for e in events
               if e.get("name") == f"ProfilerStep#{number}"]
    ops = sorted((e for e in events if e.get("cat") == "cpu_op"
                  and span[0] <= e["ts"] <= span[1]), key=lambda e: (e["ts"], -e["dur"]))
    top: list[dict[str, Any]] = []
    for e in ops:   # not nested in the previous outermost op
        if not top or e["ts"] >= top[-1]["ts"] + top[-1]["dur"]:
            top.append(e)
    return len(top), max(e["ts"] + e["dur"] for e in top) - top[0]["ts"]


def _quiet(fn: Any, *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# ------------------------------------------------------------------------- one step, both files
def test_each_step_imports_alone_from_both_traces(resnet: tuple[Path, Path]) -> None:
    et, kineto = resnet
    one = {n: kineto_step(kineto, n) for n in (1, 2)}
    for n, (ops, span) in one.items():
        trace = load_execution_trace(et, kineto, step=n)
        assert trace.meta["step"] == n and trace.meta["steps"] == [1, 2]
        assert len(trace.graph) == ops and trace.makespan == pytest.approx(span, abs=0.01)
        assert trace.meta["outside_step"] == one[3 - n][0]   # the other step's calls
        alone = _quiet(load_pytorch_trace, kineto, step=n)
        assert len(alone.graph) == ops and alone.makespan == pytest.approx(span, abs=0.01)
    # default: the last complete step, not both merged
    default = load_execution_trace(et, kineto)
    assert default.meta["step"] == 2 and len(default.graph) == one[2][0]
    merged = load_execution_trace(et, kineto, step="all")
    assert len(merged.graph) == one[1][0] + one[2][0] and merged.meta["step"] is None
    assert merged.makespan > one[2][1]
    print(f"\nstep 2: {len(default.graph)} ops, {default.makespan:,.1f} µs; merged: "
          f"{len(merged.graph)} ops, {merged.makespan:,.1f} µs")
    # the ET alone splits the same way
    assert len(execution_graph(et)) == one[2][0] == len(execution_graph(et, step=1))
    assert len(execution_graph(et, step="all")) == len(merged.graph)


def test_a_call_outside_the_step_scope_joins_its_step_by_time(
        resnet: tuple[Path, Path], tmp_path: Path) -> None:
    """A call on another thread (the autograd engine's device threads) has no ProfilerStep
    parent in the ET: the Kineto step whose span holds its host event is its step."""
    et, kineto = resnet
    data = json.loads(et.read_text())
    nodes = {n["id"]: n for n in data["nodes"]}
    step2 = next(i for i, n in nodes.items() if n["name"] == "ProfilerStep#2")
    first = min(i for i, n in nodes.items() if n.get("ctrl_deps") == step2
                and "::" in n["name"])
    nodes[first]["ctrl_deps"] = nodes[step2]["ctrl_deps"]   # the thread's root
    moved = tmp_path / "et.json"
    moved.write_text(json.dumps(data))
    trace = load_execution_trace(moved, kineto, step=2)
    assert len(trace.graph) == kineto_step(kineto, 2)[0]


def test_training_steps_keep_forward_backward_and_optimizer(
        training: tuple[Path, Path]) -> None:
    et, kineto = training
    every = load_execution_trace(et, kineto, step="all")
    step = load_execution_trace(et, kineto)
    assert step.meta["step"] == 2 and 2 * len(step.graph) == len(every.graph)
    assert min(step.meta["phases"].values()) > 0, step.meta["phases"]
    assert step.respects() and len(step.graph) == kineto_step(kineto, 2)[0]


# ------------------------------------------------------------------------- errors
@pytest.mark.parametrize("load", ["et", "kineto", "et_alone"])
def test_unknown_steps_are_one_line_errors(resnet: tuple[Path, Path], load: str) -> None:
    et, kineto = resnet
    calls = {"et": lambda s: load_execution_trace(et, kineto, step=s),
             "kineto": lambda s: load_pytorch_trace(kineto, step=s),
             "et_alone": lambda s: execution_graph(et, step=s)}
    with pytest.raises(wb.FormatError, match=r"no ProfilerStep#7 in the trace \(it has steps "
                                             r"1, 2\)") as info:
        calls[load](7)
    assert "\n" not in str(info.value)
    with pytest.raises(wb.FormatError, match="step must be a ProfilerStep number or 'all'"):
        calls[load]("last")


def test_a_step_of_a_trace_without_steps_is_refused() -> None:
    no_steps = "no ProfilerStep#99 in the trace (it has no ProfilerStep"
    with pytest.raises(wb.FormatError, match=no_steps.replace("(", r"\(")):
        load_pytorch_trace(DATA / "branchy_cpu.pt.trace.json", step=99)
    with pytest.raises(wb.FormatError, match=no_steps.replace("(", r"\(")):
        load_execution_trace(DATA / "branchy_et.json", DATA / "branchy_et_kineto.json", step=99)
    # leaving the step out, or "all", keeps the whole trace as before
    for step in (None, "all"):
        whole = load_execution_trace(DATA / "branchy_et.json", DATA / "branchy_et_kineto.json",
                                     step=step)
        assert len(whole.graph) == 17 and whole.meta["step"] is None
        assert whole.meta["steps"] == []


# ------------------------------------------------------------------------- nothing to schedule
def test_a_chain_says_there_is_nothing_to_schedule(resnet: tuple[Path, Path]) -> None:
    et, kineto = resnet
    with pytest.warns(UserWarning, match=r"nothing to schedule: graph 'kineto' is one chain of "
                                         r"\d+ ops .*Execution Trace") as record_:
        alone = load_pytorch_trace(kineto, step=2)
    assert len(record_) == 1 and "\n" not in str(record_[0].message)
    assert alone.meta["nothing_to_schedule"].startswith("nothing to schedule")
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the ET's graph has the residual branches: no warning
        with_et = load_execution_trace(et, kineto, step=2)
    assert not with_et.meta["nothing_to_schedule"]
    assert len(with_et.graph.edges) > len(with_et.graph) - 1
    # the comparison's report says it too
    cmp = wb.compare(alone.graph, ["nnc"], device="cpu", measured=alone, show_progress=False)
    from workbench.orchestration.report_notes import nothing_to_schedule_note

    assert "Nothing to schedule" in nothing_to_schedule_note(cmp)
    assert "Nothing to schedule" not in nothing_to_schedule_note(wb.compare(
        with_et.graph, ["nnc"], device="cpu", measured=with_et, show_progress=False))


def test_no_costs_is_nothing_to_schedule() -> None:
    from workbench.io.traces.trace_events import nothing_to_schedule

    diamond = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    assert nothing_to_schedule(diamond) == ""
    bare = diamond.replace(ops=[wb.Op(o.id, kind=o.kind, inputs=o.inputs, outputs=o.outputs)
                                for o in diamond.ops])
    assert "has a cost" in nothing_to_schedule(bare)
    two_chains = wb.Graph.from_edges([("a", "b"), ("c", "d")])
    assert nothing_to_schedule(two_chains) == ""   # two chains can overlap


# ------------------------------------------------------------------------- the command
def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_step_through_the_command(resnet: tuple[Path, Path], tmp_path: Path) -> None:
    et, kineto = resnet
    ops, span = kineto_step(kineto, 1)
    done = _cli("import", "--et", str(et), str(kineto), "--step", "1", "-o", "g.json",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"et: {ops} ops" in done.stdout and "ProfilerStep#1 (complete; steps 1, 2)" \
        in done.stdout
    assert len(wb.load(tmp_path / "g.json")) == ops
    measured = float(done.stdout.split("measured ")[1].split(" µs")[0].replace(",", ""))
    assert measured == pytest.approx(span, abs=0.1)
    bad = _cli("import", "--et", str(et), str(kineto), "--step", "3", "-o", "g.json",
               cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "no ProfilerStep#3 in the trace (it has steps 1, 2)" in bad.stderr
    # a profile alone: one warning line on stdout, no Python warning on stderr
    chain = _cli("import", str(kineto), "-o", "k.json", cwd=tmp_path)
    assert chain.returncode == 0 and not chain.stderr.strip(), chain.stderr
    lines = [x for x in chain.stdout.splitlines() if x.startswith("warning:")]
    assert len(lines) == 1 and "nothing to schedule" in lines[0]
