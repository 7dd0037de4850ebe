"""Issue 27, defect 1 and the reading side of 9: outputs never destroy what is at the target,
loaders refuse devices, FIFOs and oversized files with one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import workbench as wb
from workbench._atomic import check_output, follow_symlinks, read_input, write_text
from workbench.cli import main
from workbench.errors import FormatError, OutputError


@pytest.fixture(autouse=True)
def _never_replace_a_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """A regression must fail these tests, not turn the machine's /dev/null into a file (the
    tests run as root in CI): the atomic writer's rename refuses non-regular targets here."""
    real = os.replace

    def guarded(src: str, dst: str | os.PathLike[str]) -> None:
        if os.path.lexists(dst) and not (os.path.isfile(dst) and not os.path.islink(dst)):
            raise AssertionError(f"the writer tried to replace {dst!r}")
        real(src, dst)

    monkeypatch.setattr("workbench._atomic.os.replace", guarded)


def _graph() -> wb.Graph:
    return wb.Graph.from_edges([("a", "b")])


def test_a_symlink_output_is_refused_unless_the_user_follows_links(tmp_path: Path) -> None:
    """A link planted at an output path (``report.html -> ~/.bashrc``) made the workbench replace
    what it points to (issue 43 #6); following links is the user's choice."""
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(OutputError, match="is a symbolic link .*refusing to replace") as info:
        wb.save(_graph(), link)
    assert "\n" not in str(info.value) and target.read_text() == "old"
    with wb.follow_symlinks():
        wb.save(_graph(), link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() != "old"
    assert [o.id for o in wb.load(link).ops] == [o.id for o in _graph().ops]


def test_a_dangling_symlink_is_written_through_only_when_asked(tmp_path: Path) -> None:
    link = tmp_path / "out.dot"
    link.symlink_to(tmp_path / "new.dot")
    with pytest.raises(OutputError, match="symbolic link"):
        wb.save(_graph(), link)
    assert not (tmp_path / "new.dot").exists()
    with wb.follow_symlinks():
        wb.save(_graph(), link)
    assert link.is_symlink() and (tmp_path / "new.dot").is_file()


def test_a_symlinked_folder_below_the_working_directory_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "out").symlink_to(elsewhere)
    monkeypatch.chdir(work)
    with pytest.raises(OutputError, match="folder .*out.* is a symbolic link"):
        wb.save(_graph(), "out/g.json")
    assert not list(elsewhere.iterdir())
    with wb.follow_symlinks():
        wb.save(_graph(), "out/g.json")
    assert (elsewhere / "g.json").is_file()


@pytest.mark.parametrize("special", ["/dev/null", "/dev/full"])
def test_devices_are_refused_as_outputs(special: str) -> None:
    before = os.stat(special)
    with pytest.raises(OutputError, match="character device, not a regular file"):
        write_text(special, "x")
    with pytest.raises(OutputError, match="not a regular file"):
        check_output(special)
    assert os.stat(special).st_rdev == before.st_rdev  # still the device


def test_fifo_and_directory_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="FIFO"):
        wb.save(_graph(), fifo)
    link = tmp_path / "to_null.html"
    link.symlink_to("/dev/null")
    with pytest.raises(OutputError, match="symbolic link"):
        write_text(link, "x")
    with follow_symlinks(), pytest.raises(OutputError, match="character device"):
        write_text(link, "x")
    assert link.is_symlink()
    with pytest.raises(OutputError, match="directory"):
        write_text(tmp_path, "x")


def test_loaders_refuse_devices_fifos_and_big_files(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    with pytest.raises(FormatError, match="character device, not a regular file"):
        wb.load(zero)
    fifo = tmp_path / "g.dot"
    os.mkfifo(fifo)
    with pytest.raises(FormatError, match="FIFO"):  # would block forever if opened
        wb.load(fifo)
    big = tmp_path / "big.json"
    wb.save(_graph(), big)
    monkeypatch.setenv("WORKBENCH_MAX_INPUT_BYTES", "10")
    with pytest.raises(FormatError, match="over the input limit of 10 .*WORKBENCH_MAX_INPUT"):
        wb.load(big)
    with pytest.raises(FormatError, match="over the input limit"):
        read_input(big)
    monkeypatch.setenv("WORKBENCH_MAX_INPUT_BYTES", "lots")
    with pytest.raises(FormatError, match="positive integer"):
        wb.load(big)


def test_cli_says_the_real_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "g.json"
    os.mkfifo(fifo)
    out = tmp_path / "r.html"
    assert main(["compare", str(fifo), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "FIFO" in err and "does not exist" not in err and err.count("\n") == 1
    assert main(["compare", "--model", "nnc_diamond", "-o", "/dev/null"]) == 2
    assert "character device" in capsys.readouterr().err
