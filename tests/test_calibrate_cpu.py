"""``workbench calibrate`` as a new user meets it: the profile it writes is a device in a fresh
process (no import made by the test process can hide a missing reader), the CPU op times agree
with a plain loop over the same torch call, the base device is chosen or stated, and bad input
is a one-line error."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests.test_calibrate import fake_run
from workbench.cli import main
from workbench.executors.execute import EXECUTORS

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python args...`` in a fresh interpreter that imports this checkout's workbench."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)


# --------------------------------------------------------------------------- a fresh process
def test_calibrate_then_compare_and_simulate_in_fresh_processes(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    cli = ["-m", "workbench.cli"]
    done = _run([*cli, "calibrate", "--model", "squeezenet", "--batch", "1", "--repeats", "3",
                 "--warmup", "1", "-o", "p.json"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "use --device p.json" in done.stdout and "base device " in done.stdout
    measured = {op["op"]: op["alone_us"] for op in json.loads(
        (tmp_path / "p.json").read_text())["ops"]}
    done = _run([*cli, "compare", "--model", "squeezenet", "--device", "p.json", "-o", "r.html",
                 "--no-progress"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "+p" in done.stdout and (tmp_path / "r.html").stat().st_size > 0
    # the Python API, nothing imported first but workbench itself
    code = ('import workbench as wb; t = wb.simulate(wb.schedule(wb.models.squeezenet(), '
            '"serial"), device="p.json"); import json; '
            'print(json.dumps(dict(zip(t.df["op"], t.df["alone_us"]))))')
    done = _run(["-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    simulated = json.loads(done.stdout)
    assert simulated.keys() == measured.keys()     # every op at its measured time
    assert all(simulated[op] == pytest.approx(us) for op, us in measured.items())


def test_device_files_are_read_by_format_without_importing_the_reader() -> None:
    from workbench.simulator.cost_model import device_profile, devices

    module, _, name = devices.FILE_FORMATS[device_profile.FORMAT].partition(":")
    assert module == device_profile.__name__ and name == "spec_of_profile"


def test_unknown_file_format_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(wb.OptionError, match=r"format 'something-else' is not a device file or "
                                             r"a device profile \(known formats: "
                                             r"workbench-device-profile"):
        wb.costs.get_device(path)


# --------------------------------------------------------------------------- CPU times
OPS = ("fire2/squeeze1x1", "fire2/expand1x1", "fire2/expand3x3", "fire2/shortcut")


def _plain_loop_us(graph: wb.Graph, op_id: str, threads: int, n: int = 300) -> float:
    """The op's torch call (F.conv2d, then F.relu as the op's ``act`` says) on random inputs of
    its shapes, timed alone in a loop with ``perf_counter_ns``: the median in µs."""
    import torch
    import torch.nn.functional as F  # noqa: N812 - torch's own alias

    op = graph.op(op_id)
    x, w, b = (torch.randn(*graph.tensors[t].shape) for t in op.inputs)
    at = op.attrs
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            def call() -> Any:
                y = F.conv2d(x, w, b, stride=at["stride"], padding=at["padding"])
                return F.relu(y) if at["act"] == "relu" else y
            for _ in range(20):
                call()
            times = []
            for _ in range(n):
                t0 = time.perf_counter_ns()
                call()
                times.append(time.perf_counter_ns() - t0)
    finally:
        torch.set_num_threads(before)
    return statistics.median(times) / 1e3


def test_cpu_calibration_agrees_with_a_plain_loop() -> None:
    pytest.importorskip("torch")
    g = wb.models.squeezenet()
    part = g.subgraph(list(OPS), name="fire2_b1")
    # the plain loop before and after the calibration (the machine's speed drifts between them
    # on a shared host).  The calibration times each op inside its part's run, with the other
    # ops' data between two calls, the plain loop one op hot in the caches: on this 2-core host
    # the first came out 1.2-1.45x the second on 2026-12-02 (at older commits too), within 25%
    # before; a timing broken by 2x still fails.  Up to three rounds: a burst of load during
    # one calibration only (the other test worker starting a process) put one op at 1.64x in a
    # full run on 2026-12-03; a broken timing is off in every round.
    misses = []
    for _ in range(3):
        before = {op: _plain_loop_us(g, op, 1) for op in OPS}
        prof = wb.calibrate_device(part, torch_device="cpu", warmup=10, repeats=101)
        threads = prof.provenance["cpu_threads"]
        assert threads == 1 and "1 intra-op thread" in prof.provenance["timing"]
        got = {t.op: t.alone_us for t in prof.ops}
        after = {op: _plain_loop_us(g, op, threads) for op in OPS}
        off = [(op, got[op], before[op], after[op]) for op in OPS
               if not 0.75 * min(before[op], after[op]) <= got[op]
               <= 1.6 * max(before[op], after[op])]
        if not off:
            return
        misses.append(off)
    raise AssertionError(f"the calibration disagrees with the plain loop in every round: {misses}")


# --------------------------------------------------------------------------- base device, errors
@pytest.fixture()
def fake_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXECUTORS._entries, "fake_device", fake_run)


@pytest.mark.usefixtures("fake_device")
@pytest.mark.parametrize(("argv", "base", "why"), [
    ([], "h100", "pass --base to choose"),
    (["--base", "H200"], "h200", "chosen with --base"),
    (["--base-device", "a100"], "a100", "chosen with --base"),
])
def test_base_device_is_stated_and_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            argv: list[str], base: str, why: str) -> None:
    out_path = tmp_path / "p.json"
    assert main(["calibrate", "--model", "nnc_diamond", "--executor", "fake_device",
                 "--repeats", "1", *argv, "-o", str(out_path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("base device"))
    assert line.startswith(f"base device {base} (") and why in line
    data = json.loads(out_path.read_text())
    assert data["base_device"] == base and why in data["provenance"]["base_device_reason"]
    assert wb.costs.get_device(out_path).name == f"{base}+p"


def test_base_device_choice() -> None:
    from workbench.executors.device_probes import base_device_for, choose_base_device

    assert choose_base_device("NVIDIA H200")[0] == "h200"
    assert choose_base_device("NVIDIA L40S")[0] == "h100"      # not l4
    assert "no registered device matched" in choose_base_device("NVIDIA L40S")[1]
    assert base_device_for("NVIDIA GeForce RTX 3070 Laptop GPU") == "rtx3070_laptop"
    assert base_device_for("NVIDIA A100-SXM4-40GB") == "a100"
    assert "ran on the CPU" in choose_base_device("cpu (x86_64, 2 cores)")[1]
    with pytest.raises(wb.OptionError, match=r"unknown device 'nosuch'.*known: .*h100"):
        choose_base_device("NVIDIA H200", "nosuch")


@pytest.mark.usefixtures("fake_device")
@pytest.mark.parametrize(("argv", "message"), [
    (["--model", "nosuch"], "unknown model 'nosuch' (known: "),
    (["--model", "nnc_diamond", "--base", "nosuch"], "unknown device 'nosuch' (known: a100, "),
    (["--model", "nnc_diamond", "--executor", "nosuch"], "unknown executor 'nosuch'"),
    (["--model", "nnc_diamond", "--executor", "simulator"], "'simulator' cannot time ops alone"),
    (["--model", "nnc_diamond", "--threads", "0"], "expected a positive integer"),
    (["--model", "nnc_diamond", "--warmup", "-1"], "--warmup must be >= 0"),
    (["--model", "nnc_diamond", "-o", "{tmp}/no/such/p.json"], "does not exist"),
    (["--model", "nnc_diamond", "-o", "{tmp}"], "-o"),
    (["--model", "nnc_diamond", "-o", "{tmp}/file.txt/p.json"], "-o"),
])
def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               argv: list[str], message: str) -> None:
    (tmp_path / "file.txt").write_text("")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "p.json")]
    try:
        code: Any = main(["calibrate", *argv])
    except SystemExit as exc:   # argparse's own errors exit
        code = exc.code
    captured = capsys.readouterr()
    assert code == 2 and message in captured.err, captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert not (tmp_path / "p.json").exists()


def test_help_names_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("--base DEVICE, --base-device DEVICE", "--threads", "CPU", "what-if",
                  "--device"):
        assert words in text


def test_cpu_profile_records_its_threads_and_warns_when_the_cpu_was_busy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    from workbench.executors import device_calibration

    g = wb.models.build("nnc_diamond")
    prof = wb.calibrate_device(g, torch_device="cpu", repeats=2, warmup=0, threads=2)
    assert prof.provenance["cpu_threads"] == 2 and 0 < prof.provenance["cpu_share"] <= 1
    assert prof.provenance["gpu"].startswith("cpu (")
    monkeypatch.setattr(device_calibration, "BUSY_SHARE", 1.01)   # every run looks crowded
    with pytest.warns(UserWarning, match=r"^the CPU was busy: the timing thread ran \d+%"):
        prof = wb.calibrate_device(g, torch_device="cpu", repeats=2, warmup=0)
    assert "calibrate on an idle machine" in prof.provenance["cpu_note"]


@pytest.mark.usefixtures("fake_device")
def test_threads_only_for_a_torch_cpu_calibration() -> None:
    g = wb.models.build("nnc_diamond")
    with pytest.raises(wb.OptionError, match="threads= sets torch's CPU threads"):
        wb.calibrate_device(g, executor="fake_device", threads=2)
    with pytest.raises(wb.OptionError, match="threads must be a positive integer"):
        wb.calibrate_device(g, executor="fake_device", threads=0)
    assert "cpu_threads" not in wb.calibrate_device(g, executor="fake_device").provenance


def test_two_profiles_with_one_file_name_keep_their_own_times(tmp_path: Path) -> None:
    from workbench.simulator.cost_model.device_profile import DeviceProfile, OpTiming

    g = wb.models.build("nnc_diamond")
    s = wb.schedule(g, "serial")
    for folder, us in (("a", 1.0), ("b", 2.0)):
        (tmp_path / folder).mkdir()
        ops = tuple(OpTiming(g.name, 1, op, g.op(op).kind, us) for op in g.op_ids)
        wb.save_profile(DeviceProfile("h100", "fp32", ops), tmp_path / folder / "p.json")
    first = wb.simulate(s, device=str(tmp_path / "a" / "p.json"))
    second = wb.simulate(s, device=str(tmp_path / "b" / "p.json"))
    again = wb.simulate(s, device=str(tmp_path / "a" / "p.json"))
    assert set(first.df["alone_us"]) == set(again.df["alone_us"]) == {1.0}
    assert set(second.df["alone_us"]) == {2.0}
    names = {wb.costs.get_device(tmp_path / f / "p.json").name for f in "ab"}
    assert len(names) == 2 and all(n.startswith("h100+p") for n in names)
