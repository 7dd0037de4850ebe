"""Issue 34, part 1: every file the workbench writes goes through the one safe writer
(:mod:`workbench._atomic`: symbolic links written through, devices, FIFOs and directories
refused, atomic replace, a full disk leaves the old file).

A walk of the package's source (``ast``) fails on any raw write call outside ``_atomic.py``;
reproducers of the audit's findings on ``--plotlyjs directory``, whose ``plotly.min.js`` was
written with ``Path.write_bytes``: a planted symbolic link overwrote its target, a FIFO hung the
command, a full disk gave a traceback and a truncated 64 KiB copy."""

from __future__ import annotations

import ast
import errno
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from workbench import _atomic
from workbench.errors import OutputError
from workbench.viz.embed import PLOTLYJS_FILE, write_plotlyjs

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workbench"

#: Methods that write a file whatever they are called on (plotly's, matplotlib's, pathlib's).
WRITING_METHODS = {"write_text", "write_bytes", "write_html", "write_image", "write_json",
                   "savefig", "tofile", "touch", "symlink_to", "hardlink_to"}
#: pandas' writers: they write when given a path (positional or ``path_or_buf``), else return
#: text.  ``to_html`` is left out: ``Comparison.to_html(path)`` is the project's own report
#: writer (through ``_atomic``), and the pandas one is only called for its text.
PANDAS_WRITERS = {"to_csv", "to_json", "to_parquet", "to_excel", "to_pickle", "to_feather",
                  "to_hdf", "to_markdown", "to_latex", "to_string", "to_xml"}
#: module.function calls that write files.
MODULE_WRITERS = {"shutil": {"copy", "copy2", "copyfile", "copytree", "move", "copyfileobj"},
                  "os": {"rename", "replace", "link", "symlink", "truncate", "mkfifo", "mknod"},
                  "json": {"dump"}, "pickle": {"dump"}, "marshal": {"dump"},
                  "np": {"save", "savez", "savez_compressed", "savetxt"},
                  "numpy": {"save", "savez", "savez_compressed", "savetxt"},
                  "torch": {"save"}, "pio": {"write_html", "write_image", "write_json"},
                  "tempfile": {"mkstemp", "NamedTemporaryFile", "TemporaryFile"}}
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
#: pandas' text writers whose receiver is a plotly module (``pio.to_json(fig)`` returns text).
TEXT_RECEIVERS = {"pio", "json"}


def _mode(call: ast.Call, position: int) -> str:
    """The literal mode of an ``open`` call ('' when absent or not a literal)."""
    node = call.args[position] if len(call.args) > position else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _is_devnull(call: ast.Call) -> bool:
    return bool(call.args) and ast.unparse(call.args[0]) == "os.devnull"


def raw_writes(source: str) -> list[tuple[int, str]]:
    """(line, call) of every call in ``source`` that writes a file other than through
    ``workbench._atomic`` (``write_text``/``write_bytes`` imported from it, or ``_atomic.*``);
    writing ``os.devnull`` is allowed."""
    if not any(word in source for word in ("write", "open(", "to_", "save", "dump", "copy",
                                               "rename", "replace", "touch", "link", "mkstemp",
                                               "Temporary", "truncate", "mkfifo", "mknod",
                                               "move", "tofile")):
        return []
    tree = ast.parse(source)
    safe_names = {a.asname or a.name for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom) and node.module == "workbench._atomic"
                  for a in node.names}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func, bad = node.func, False
        if isinstance(func, ast.Name):
            if func.id == "open":
                bad = bool(set(_mode(node, 1)) & set("wax+")) and not _is_devnull(node)
            else:
                bad = func.id in WRITING_METHODS and func.id not in safe_names
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if owner == "_atomic":
                continue
            if owner == "os" and func.attr == "open":
                flags = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
                bad = bool(flags & WRITE_FLAGS) and not _is_devnull(node)
            elif func.attr == "open":   # Path.open(mode)
                bad = bool(set(_mode(node, 0)) & set("wax+"))
            elif owner in MODULE_WRITERS:
                bad = func.attr in MODULE_WRITERS[owner]
            elif func.attr in WRITING_METHODS:
                bad = True
            elif func.attr in PANDAS_WRITERS and owner not in TEXT_RECEIVERS:
                bad = bool(node.args) or any(k.arg in ("path_or_buf", "path", "buf",
                                                       "excel_writer") for k in node.keywords)
        if bad:
            found.append((node.lineno, ast.unparse(node)[:80]))
    return found


def test_the_checker_finds_raw_writes() -> None:
    """The walk below can fail: each raw form is found, the safe ones are not."""
    bad = ("from pathlib import Path\nimport shutil, os, json\n"
           "Path(p).write_bytes(b'')\nopen(p, 'w')\nopen(p, mode='ab')\ndf.to_csv(p)\n"
           "shutil.copy(a, b)\nfig.write_html(p)\njson.dump(x, f)\nos.open(p, os.O_WRONLY)\n"
           "Path(p).open('w')\nos.replace(a, b)\nwrite_text(p, s)\n")
    assert len(raw_writes(bad)) == 11, raw_writes(bad)
    good = ("from workbench._atomic import write_text\nfrom workbench import _atomic\n"
            "write_text(p, s)\n_atomic.write_bytes(p, b'')\ndf.to_csv(index=False)\n"
            "pio.to_json(fig)\nopen(p)\nopen(p, 'rb')\nos.open(os.devnull, os.O_WRONLY)\n"
            "open(os.devnull, 'w')\ntext.replace('a', 'b')\ntable.rename(columns=f)\n")
    assert raw_writes(good) == []


def test_every_write_in_the_package_goes_through_atomic() -> None:
    """Only ``workbench/_atomic.py`` may call the raw file-writing APIs."""
    offenders = [f"{path.relative_to(ROOT)}:{line}: {call}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path.name != "_atomic.py"
                 or path.parent != PACKAGE
                 for line, call in raw_writes(path.read_text(encoding="utf-8"))]
    assert offenders == [], "\n".join(offenders)


# ------------------------------------------------------------------ --plotlyjs directory
def test_plotlyjs_never_writes_through_a_planted_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("secret\n")
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / PLOTLYJS_FILE).symlink_to(victim)
    with pytest.raises(OutputError, match=r"is a symbolic link .*\(remove it\)"):
        write_plotlyjs(folder)
    assert victim.read_text() == "secret\n"
    assert (folder / PLOTLYJS_FILE).is_symlink()


def _child(code: str, *args: str, timeout: float = 15) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter; a hang fails the test after ``timeout`` s."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                              text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {timeout} s (the child is killed)")


WRITE_PLOTLYJS = ("import resource, sys\nfrom workbench.viz.embed import write_plotlyjs\n"
                  "from workbench.errors import WorkbenchError\n"
                  "if len(sys.argv) > 2:\n"
                  "    limit = int(sys.argv[2])\n"
                  "    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
                  "try:\n    write_plotlyjs(sys.argv[1])\n"
                  "except WorkbenchError as exc:\n    print(exc, file=sys.stderr)\n"
                  "    sys.exit(3)\n")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_plotlyjs_refuses_a_fifo_instead_of_hanging(tmp_path: Path) -> None:
    """Run in a thread; a writer blocked on the FIFO is released by opening its other end."""
    fifo = tmp_path / PLOTLYJS_FILE
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def write() -> None:
        try:
            write_plotlyjs(tmp_path)
            outcome.append(None)
        except BaseException as exc:   # noqa: BLE001 (reported below)
            outcome.append(exc)

    worker = threading.Thread(target=write, daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)   # unblock the writer, then drain
        while worker.is_alive():
            try:
                os.read(fd, 1 << 20)
            except BlockingIOError:
                worker.join(0.01)
        os.close(fd)
        pytest.fail("write_plotlyjs hung on a FIFO named plotly.min.js")
    assert isinstance(outcome[0], OutputError), outcome
    assert str(outcome[0]).endswith("is a FIFO (named pipe), not a regular file; refusing to "
                                    "replace it (give a file name)")


def test_a_plotly_min_js_that_is_not_plotly_is_never_replaced(tmp_path: Path) -> None:
    """``--plotlyjs directory`` replaced a user's own, unrelated ``plotly.min.js`` (issue 43
    #6); an older plotly.js build is still refreshed."""
    mine = tmp_path / PLOTLYJS_FILE
    mine.write_text("my own notes\n")
    with pytest.raises(OutputError, match="is not a plotly.js build"):
        write_plotlyjs(tmp_path)
    assert mine.read_text() == "my own notes\n"
    mine.write_text("/**\n* plotly.js v0.1.0\n*/\n")
    write_plotlyjs(tmp_path)
    assert mine.stat().st_size > 1_000_000


def test_plotlyjs_on_a_full_disk_keeps_the_old_copy(tmp_path: Path) -> None:
    """The audit's full disk: a file-size limit of 64 KiB (the write fails part-way as on a full
    disk) gave a 21-line traceback and a truncated 64 KiB copy."""
    old = tmp_path / PLOTLYJS_FILE
    old.write_text("/**\n* plotly.js v0.1.0 (an older copy)\n*/\n")
    done = _child(WRITE_PLOTLYJS, str(tmp_path), str(64 * 1024))
    assert done.returncode == 3 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "the old file, if any, is unchanged" in done.stderr
    assert old.read_text() == "/**\n* plotly.js v0.1.0 (an older copy)\n*/\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [PLOTLYJS_FILE]   # no temporary left


def test_enospc_part_way_leaves_the_old_file(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC after part of the data is written: a one-line OutputError, the old file as it
    was, no temporary file left behind."""
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f: object) -> None:
            self.f = f

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()   # type: ignore[attr-defined]

        def write(self, data: bytes) -> int:
            self.f.write(data[:65536])   # type: ignore[attr-defined]
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fdopen", lambda *a, **k: Full(real_fdopen(*a, **k)))
    old = tmp_path / PLOTLYJS_FILE
    old.write_text("/**\n* plotly.js v0.1.0\n*/\n")
    with pytest.raises(OutputError) as exc:
        write_plotlyjs(tmp_path)
    assert "No space left on device" in str(exc.value) and "\n" not in str(exc.value)
    assert old.read_text() == "/**\n* plotly.js v0.1.0\n*/\n"
    assert [p.name for p in tmp_path.iterdir()] == [PLOTLYJS_FILE]
    with pytest.raises(OutputError, match="No space left on device"):
        _atomic.write_text(tmp_path / "report.html", "x" * 100_000)
    assert not (tmp_path / "report.html").exists()
