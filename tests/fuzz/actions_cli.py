"""What the worker does with the CLI cases of :mod:`tests.fuzz.cases_paths`,
``cases_options`` and ``cases_nested``, and with the API writer cases (``actions_cli.*``).

Files a case needs are *planted* in its work folder first (``extra["plant"]``: ``(name, kind)``
pairs, :data:`PLANTS`): a small graph, a Kineto trace, a device file, or the hostile things every
path argument must refuse: a FIFO, a directory, a link to ``/dev/zero``, a sparse file over the
input cap, a symlink loop.
"""

from __future__ import annotations

import contextlib
import io
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

#: What a symlinked target holds before a case; a writer must write through the link, so the
#: content after shows whether it did (see :func:`writer`).
OLD = b"old1234"


def _plant(wd: Path, name: str, kind: str) -> None:
    """Create ``wd/name`` as ``kind`` (:data:`PLANTS`)."""
    path = wd / name
    path.parent.mkdir(parents=True, exist_ok=True)
    PLANTS[kind](path)


def _graph(path: Path) -> None:
    import workbench as wb

    wb.save(wb.models.random_dag(8, seed=1), path)


def _trace(path: Path) -> None:
    import workbench as wb
    from workbench.io import save_chrome_trace

    graph = wb.models.random_dag(8, seed=2)
    save_chrome_trace(wb.simulate(wb.schedule(graph, "nnc")), path)


def _device(path: Path) -> None:
    from workbench.simulator.cost_model.devices import get_device, save_device

    save_device(get_device("h100"), path)


def _sparse(path: Path) -> None:
    """A file of 96 MiB of holes, over the worker's 64 MiB ``WORKBENCH_MAX_INPUT_BYTES``."""
    with open(path, "wb") as fh:
        fh.truncate(96 << 20)


def _real(path: Path) -> None:
    path.write_bytes(OLD)


def _link(path: Path) -> None:
    real = path.parent / f"real-{path.name}"
    real.write_bytes(OLD)
    path.symlink_to(real)


def _readonly(path: Path) -> None:
    path.mkdir()
    path.chmod(0o500)


def _nested(depth: int) -> Any:
    def make(path: Path) -> None:
        from tests.fuzz.actions_io import nested_text

        path.write_text(nested_text(depth, ("while", "case_of")))

    return make


PLANTS: dict[str, Any] = {
    "graph": _graph, "trace": _trace, "device": _device, "sparse": _sparse, "real": _real,
    "link": _link, "readonly": _readonly, "fifo": os.mkfifo, "dir": lambda p: p.mkdir(),
    "zero": lambda p: p.symlink_to("/dev/zero"), "loop": lambda p: p.symlink_to(p),
    "dangling": lambda p: p.symlink_to(p.parent / "nowhere" / "x"),
    "nested90": _nested(90), "nested300": _nested(300), "nested1000": _nested(1000),
}


def cli_files(case: Any, workdir: str) -> tuple[str, str]:
    """``data``: argv with ``{wd}`` for the work folder.  ``extra``: ``plant`` (files first),
    ``stdout`` (``closed``: ``sys.stdout`` is ``None``, as under ``workbench ... >&-``;
    ``full``: ``/dev/full``, as under ``workbench ... > /dev/full``), ``forbid`` (texts whose
    presence in the output makes an exit 0 ``silent``: ``budget hit`` where a memory budget
    must be reported as one), ``link`` (a planted symlink that must still be a symlink
    afterwards).  Exit codes as in :func:`tests.fuzz.actions.cli`."""
    from workbench.cli import main

    wd = Path(workdir)
    for name, kind in case.extra.get("plant", ()):
        _plant(wd, name, kind)
    argv = [a.replace("{wd}", workdir) for a in case.data]
    out, err = io.StringIO(), io.StringIO()
    mode = case.extra.get("stdout")
    target: Any = out
    if mode == "closed":
        target = None
    elif mode == "full":
        target = open("/dev/full", "w")  # noqa: SIM115 - closed below
    try:
        with redirect_stdout(target), redirect_stderr(err):
            code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    finally:
        if mode == "full":
            with contextlib.suppress(OSError):
                target.close()
    text = err.getvalue()
    everything = out.getvalue() + text
    if "Traceback" in text:
        return "traceback", text[-400:]
    for name in case.extra.get("link", ()):
        if not os.path.islink(wd / name):
            return "silent", f"the symlink {name} was replaced by a file"
    if code == 0:
        hit = [f for f in case.extra.get("forbid", ()) if f in everything]
        if hit:
            return "silent", f"exit 0 with {hit[0]!r} in the output"
        return ("silent", "exit 0") if case.refuse else ("ok", "")
    if mode and code in (0, 1, 2, 120, 141):
        return "clean", f"exit {code} with stdout {mode}"
    lines = [x for x in text.splitlines() if x.strip()]
    if code in (1, 2) and (code == 1 or len(lines) == 1):
        return "clean", (lines[-1] if lines else "")[:200]
    return "traceback", f"exit {code}: {text[-300:]!r}"


def writer(case: Any, workdir: str) -> Any:
    """``data``: (writer, target name); the target is planted first (``extra["plant"]``).
    Writers: ``json``/``dot`` (``wb.save``), ``chrome`` (``save_chrome_trace``), ``device``,
    ``calibration``.  A planted symlink target must be refused unless the case follows links
    (``extra["follow"]``), and then written through (the link stays, its file changes), else
    ``silent``."""
    import workbench as wb

    wd = Path(workdir)
    for name, kind in case.extra.get("plant", ()):
        _plant(wd, name, kind)
    which, name = case.data
    target = Path(str(name).replace("{wd}", workdir))
    if not target.is_absolute():
        target = wd / target
    graph = wb.models.random_dag(6, seed=3)
    with wb.follow_symlinks(case.extra.get("follow", False)):
        _write_with(which, graph, target)
    if os.path.lexists(target) and case.extra.get("plant") and \
            dict(case.extra["plant"]).get(target.name) == "link":
        if not target.is_symlink():
            return ("silent", "the symlink target was replaced by a file, not written through")
        if target.read_bytes() == OLD:
            return ("silent", "the symlink's file still holds the old bytes")
    if case.refuse:
        return ("silent", "written to a target that must be refused")
    return None


def _write_with(which: str, graph: Any, target: Path) -> None:
    import workbench as wb

    if which in ("json", "dot"):
        wb.save(graph, target)
    elif which == "chrome":
        from workbench.io import save_chrome_trace

        save_chrome_trace(wb.simulate(wb.schedule(graph, "serial")), target)
    elif which == "device":
        from workbench.simulator.cost_model.devices import get_device, save_device

        save_device(get_device("a100"), target)
    elif which == "calibration":
        from workbench.simulator.cost_model.calibration import save_calibration

        save_calibration({"n0": 5.0}, target)
    else:
        raise AssertionError(f"unknown writer {which!r}")


def import_roundtrip(case: Any, workdir: str) -> Any:
    """``data``: (graph seed, ops, policy): a simulated run saved as a Kineto trace, then
    ``workbench import`` to ``g.json`` and to ``g.dot``; both must load to the same graph (every
    op field, the serial/nnc makespans), or the DOT import must be refused in one line."""
    import workbench as wb
    from tests.fuzz.actions_io import _differs
    from workbench.cli import main
    from workbench.io import save_chrome_trace

    seed, n, policy = case.data
    wd = Path(workdir)
    graph = wb.models.random_dag(n, seed=seed)
    save_chrome_trace(wb.simulate(wb.schedule(graph, policy)), wd / "t.json")
    codes = []
    err = io.StringIO()
    for suffix in (".json", ".dot"):
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            codes.append(main(["import", str(wd / "t.json"), "-o", str(wd / f"g{suffix}")]))
    text = err.getvalue()
    if "Traceback" in text:
        return ("traceback", text[-400:])
    if codes[0] != 0:
        return ("traceback", f"import -o g.json failed (exit {codes[0]}): {text[-200:]!r}")
    if codes[1] != 0:
        return ("clean", f"import -o g.dot refused: {text.strip().splitlines()[-1][:160]}")
    diff = _differs(wb.load(wd / "g.json"), wb.load(wd / "g.dot"), "import -o .dot")
    return ("roundtrip", diff) if diff else None
