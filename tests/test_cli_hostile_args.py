"""Issue 34, parts 4, 11 and 12 on the command line: every path argument through the input
checks (``--device`` FIFO, oversized device file), one-line errors instead of tracebacks (a
300-character ``-o``, stdout closed by the shell), and no silent acceptance (``--policies
nnc,,serial``, two outputs or an output and an input naming the same file).  Each test is built
from the audit's reproducer; the checks must all come before any work."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli_safety import error_line, no_work  # noqa: F401 (a fixture)
from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.viz.embed import PLOTLYJS_FILE

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "workbench.cli"]


def run_cli(*args: str, timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kw = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kw}
    try:
        return subprocess.run([*CLI, *args], text=True, timeout=timeout, env=env, cwd=ROOT, **kw)
    except subprocess.TimeoutExpired:
        pytest.fail(f"workbench {' '.join(args)[:80]} hung for {timeout} s")


def compare(*args: str) -> list[str]:
    return ["compare", "--model", "nnc_diamond", "--policies", "nnc,serial", "--no-progress",
            *args]


# ------------------------------------------------------------------ path arguments (part 4)
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.usefixtures("no_work")
def test_device_fifo_is_refused_not_read_forever(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Run in a thread; a reader blocked on the FIFO is released by opening its other end."""
    fifo = tmp_path / "h100.json"
    os.mkfifo(fifo)
    codes: list[int] = []
    worker = threading.Thread(daemon=True, target=lambda: codes.append(
        main(compare("--device", str(fifo), "-o", str(tmp_path / "r.html")))))
    worker.start()
    worker.join(5)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))   # EOF for the blocked reader
        worker.join(5)
        pytest.fail("--device FIFO hung reading the FIFO")
    assert codes == [2]
    assert "is a FIFO (named pipe), not a regular file" in error_line(capsys)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_device_calibration_profile_and_dataset_readers_refuse_a_fifo(tmp_path: Path) -> None:
    """The readers behind the other path arguments (``device=PATH``, calibration tables, device
    profiles, a fidelity dataset) go through the same input checks: one line, no hang."""
    from workbench.simulator.cost_model.calibration import load_calibration
    from workbench.simulator.cost_model.device_profile import load_profile
    from workbench.simulator.cost_model.devices import load_device
    from workbench.simulator.fidelity import load_rows

    fifo = tmp_path / "file.json"
    os.mkfifo(fifo)
    for reader in (load_device, load_calibration, load_profile, load_rows):
        outcome: list[BaseException | None] = []

        def read(reader: Any = reader, outcome: list[Any] = outcome) -> None:
            try:
                reader(str(fifo))
                outcome.append(None)
            except BaseException as exc:   # noqa: BLE001 (checked below)
                outcome.append(exc)

        worker = threading.Thread(target=read, daemon=True)
        worker.start()
        worker.join(5)
        if worker.is_alive():
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))   # EOF for the blocked reader
            worker.join(5)
            pytest.fail(f"{reader.__name__} hung reading a FIFO")
        assert isinstance(outcome[0], WorkbenchError), (reader, outcome)
        assert "is a FIFO (named pipe), not a regular file" in str(outcome[0]), outcome


@pytest.mark.usefixtures("no_work")
def test_oversized_device_file_is_refused_before_it_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3 GB device file was read whole (MemoryError); the size limit is lowered here."""
    big = tmp_path / "big.json"
    big.write_text('{"name": "x"}' + " " * 5000)
    monkeypatch.setenv("WORKBENCH_MAX_INPUT_BYTES", "4096")
    assert main(compare("--device", str(big), "-o", str(tmp_path / "r.html"))) == 2
    assert "over the input limit of 4,096" in error_line(capsys)


# ------------------------------------------------------------------ tracebacks (part 11)
@pytest.mark.usefixtures("no_work")
def test_a_300_character_output_name_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long_name = str(tmp_path / ("a" * 300 + ".html"))
    report = ["-o", str(tmp_path / "r.html")]
    # the --export-trace base fits (250 characters), its row files t.<policy>.json do not
    for args in (["-o", long_name], [*report, "--table", long_name[:-5] + ".csv"],
                 [*report, "--export-trace", str(tmp_path / ("t" * 245 + ".json"))]):
        assert main(compare(*args)) == 2, args[-1][-20:]
        assert "file name too long" in error_line(capsys).lower()


def test_closed_stdout_ends_without_a_traceback() -> None:
    """``workbench ... >&-`` gave ``AttributeError: 'NoneType' object has no attribute
    'flush'``; now one line says stdout is closed (exit 1)."""
    done = run_cli("policies", stdout=None, preexec_fn=lambda: os.close(1))
    assert "Traceback" not in done.stderr and done.returncode == 1, done.stderr
    assert done.stderr == "workbench: standard output is closed; nothing was printed there\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_stdout_on_a_full_device_is_one_line() -> None:
    """``workbench ... > /dev/full`` gave ``OSError: [Errno 28] No space left on device``."""
    with open("/dev/full", "w") as full:
        done = run_cli("policies", stdout=full)
    assert done.returncode == 1, done.stderr
    assert done.stderr == ("workbench: error: cannot write to standard output (No space left "
                           "on device)\n")


def test_closed_stdout_still_writes_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process, as Python leaves it when the shell closed stdout: ``sys.stdout`` is None."""
    monkeypatch.setattr(sys, "stdout", None)
    report = tmp_path / "r.html"
    assert main(compare("-o", str(report), "--plotlyjs", "cdn")) == 1
    assert capsys.readouterr().err.endswith("standard output is closed; nothing was printed "
                                            "there\n")
    assert report.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# ------------------------------------------------------------------ silent acceptances (part 12)
@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("policies", ["nnc,,serial", "nnc,serial,", " ,nnc"])
def test_empty_policy_name_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       policies: str) -> None:
    assert main(["compare", "--model", "nnc_diamond", "--policies", policies, "-o",
                 str(tmp_path / "r.html"), "--no-progress"]) == 2
    assert "has an empty name" in error_line(capsys)


def test_empty_column_name_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["compare", "--model", "nnc_diamond", "--columns", "policy,,status"])
    assert exc.value.code == 2
    assert "empty column name in 'policy,,status'" in error_line(capsys)


@pytest.mark.usefixtures("no_work")
def test_two_outputs_naming_one_file_are_refused_before_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``--table X -o X`` replaced the report with the table (exit 0); also through ``./X``,
    a symbolic link, a hard link, an ``--export-trace`` row file and ``plotly.min.js``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "old.csv").write_text("keep\n")
    (tmp_path / "link.csv").symlink_to(tmp_path / "old.csv")
    os.link(tmp_path / "old.csv", tmp_path / "hard.csv")
    cases = [(["-o", "x.csv", "--table", "x.csv"], "--table 'x.csv' and -o 'x.csv'"),
             (["-o", "x.csv", "--table", "./x.csv"], "are the same file"),
             (["-o", str(tmp_path / "x.csv"), "--table", "x.csv"], "are the same file"),
             (["-o", "link.csv", "--table", "old.csv", "--follow-symlinks"],
              "are the same file"),
             (["-o", "link.csv"], "is a symbolic link"),
             (["-o", "hard.csv", "--table", "old.csv"], "are the same file"),
             (["-o", "t.nnc.json", "--export-trace", "t.json"], "--export-trace 't.nnc.json'"),
             (["-o", "t.serial.json", "--export-trace", "t.json"], "are the same file"),
             (["-o", "r.html", "--plotlyjs", "directory", "--table", PLOTLYJS_FILE],
              "are the same file")]
    for args, message in cases:
        assert main(compare(*args)) == 2, args
        assert message in error_line(capsys), args
    assert (tmp_path / "old.csv").read_text() == "keep\n"


@pytest.mark.usefixtures("no_work")
def test_an_output_naming_an_input_is_refused(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    device = tmp_path / "dev.json"
    device.write_text((ROOT / "workbench/data/devices/h100.json").read_text())
    assert main(compare("--device", str(device), "-o", str(device))) == 2
    assert "would overwrite the device file --device" in error_line(capsys)
    assert main(compare("--device", str(device), "-o", str(tmp_path / "r.html"),
                        "--table", str(tmp_path / ".." / tmp_path.name / "dev.json"))) == 2
    assert "would overwrite the device file --device" in error_line(capsys)
    profile = tmp_path / "profile.json"
    profile.write_text("{}")
    assert main(["import", str(profile), "-o", str(profile)]) == 2
    assert "would overwrite the profile" in error_line(capsys)


@pytest.mark.usefixtures("no_work")
def test_plotlyjs_directory_with_a_planted_link_is_refused_before_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("secret\n")
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / PLOTLYJS_FILE).symlink_to(victim)
    assert main(compare("-o", str(pages / "r.html"), "--plotlyjs", "directory")) == 2
    line = error_line(capsys)
    assert "is a symbolic link" in line and "(remove it)" in line
    assert victim.read_text() == "secret\n"


def test_out_of_memory_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``workbench import`` of a 10^6-event trace under a 2 GiB cap read the trace, then died in
    the JSON writer with a raw MemoryError traceback; a MemoryError no reader bounds is one
    line naming the cap."""
    import workbench.io.text.json_format as json_format
    from workbench import cli

    def exhausted(*_: object, **__: object) -> None:
        raise MemoryError

    monkeypatch.setattr(json_format, "graph_to_dict", exhausted)
    trace = Path(__file__).parent / "data" / "branchy_gpu_kineto.json"
    code = cli.main(["import", str(trace), "-o", str(tmp_path / "g.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("workbench: error: out of memory (") and \
        err.count("\n") == 1, err
    assert not (tmp_path / "g.json").exists()


def test_a_saved_graph_is_streamed_as_the_same_bytes(tmp_path: Path) -> None:
    """save_json writes the encoder's pieces as they come (the text of a 500,000-op graph is
    never whole in memory), byte for byte what json.dumps(..., indent=1) gives."""
    import json

    import workbench as wb
    from workbench.io.text.json_format import graph_to_dict

    graph = wb.models.nnc_while_loop()
    wb.save(graph, tmp_path / "g.json")
    assert (tmp_path / "g.json").read_text() == json.dumps(graph_to_dict(graph), indent=1) + "\n"


def test_a_policy_listed_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """``--policies nnc,nnc`` ran nnc twice and ranked it against itself in two rows."""
    import workbench as wb

    assert main(["compare", "--model", "nnc_diamond", "--policies", "nnc,gpto,nnc",
                 "--no-progress"]) == 2
    assert "policy 'nnc' is listed twice" in error_line(capsys)
    with pytest.raises(wb.OptionError, match="policy 'serial' is listed twice"):
        wb.compare(wb.models.nnc_diamond(), ["serial", "serial"], show_progress=False)
