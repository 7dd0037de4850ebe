"""Notebook 00's kernel logged "attempted to send message from fork" (issue 35): ``wb.compare``
runs each budgeted stage in a forked worker (``workbench._bounded``), and IOS's search opened a
tqdm widget bar there; the worker inherits the kernel object, but jupyter_client's Session drops
every message sent from a pid other than its own, logging each.  A forked child of the kernel is
therefore no kernel for the progress bars (they fall back to the terminal rule: no bar, since the
kernel's stderr is no terminal)."""

from __future__ import annotations

import os
import sys
import types

import pytest

from workbench import _progress


def test_a_process_forked_from_the_kernel_gets_no_widget_bar(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ipython = pytest.importorskip("IPython")
    session = types.SimpleNamespace(pid=os.getpid())
    shell = types.SimpleNamespace(kernel=types.SimpleNamespace(session=session))
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    monkeypatch.setattr(ipython, "get_ipython", lambda: shell)
    monkeypatch.setenv("WORKBENCH_PROGRESS", "1")
    assert _progress._in_kernel() and _progress._interactive()
    session.pid = os.getpid() + 1  # the kernel's session, as a forked worker sees it
    assert not _progress._in_kernel()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert not _progress._interactive()
    with _progress.progress_bar(total=3, desc="IOS search") as bar:
        assert bar._bar is None
