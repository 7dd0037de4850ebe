"""Progress: bars in notebooks and terminals (tqdm.auto), and plain lines on stderr.

* :func:`progress` wraps an iterable in a bar; no bar outside a terminal or notebook.
* :class:`Progress` is what long comparisons use: one line on stderr per event (a policy starts,
  a policy ends with its time and status) whether or not stderr is a terminal, so logs, CI output
  and piped runs say what is running; plus a bar when interactive (in a terminal the lines print
  above it through ``tqdm.write``; in a notebook the latest one goes beside the bar instead of
  under it, and the finished bar stays, so an exported notebook shows it at 100%).

``WORKBENCH_PROGRESS=0`` turns both off, as does ``enabled=False``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
PREFIX = "workbench: "


def progress(items: Iterable[T], *, desc: str = "", enabled: bool = True,
             total: int | None = None) -> Iterator[T]:
    """Iterate ``items`` with a progress bar (notebook widget or terminal line).

    Disabled when ``enabled`` is false, when ``WORKBENCH_PROGRESS=0``, or when stderr is not a
    terminal outside a notebook (so logs and CI output stay clean).
    """
    if not _enabled(enabled) or not _interactive():
        yield from items
        return
    from tqdm.auto import tqdm

    yield from tqdm(items, desc=desc, total=total, leave=False)


class Progress:
    """Lines on stderr (always, unless disabled) and a bar of ``total`` steps (interactive only).
    Also a bar driven by hand (:func:`progress_bar`): ``update(n)``, ``note(text)``.

    >>> with Progress(2, desc="demo", enabled=False) as p:
    ...     p.line("not printed")
    ...     p.advance()
    >>> with progress_bar(total=3, desc="parts", enabled=False) as bar:
    ...     bar.update(1); bar.note("part 2/3: 120 states")
    """

    def __init__(self, total: int | None, *, desc: str = "", enabled: bool = True,
                 unit: str = "it") -> None:
        self.enabled = _enabled(enabled)
        self._bar: Any = None
        if self.enabled and _interactive():
            from tqdm.auto import tqdm

            # in a notebook the finished bar stays (an exported notebook shows it at 100%, not
            # frozen at its first state); in a terminal it is cleared for the output after it
            self._bar = tqdm(total=total, desc=desc, leave=_in_kernel(), unit=unit)

    def line(self, text: str) -> None:
        """Print ``workbench: <text>`` on the current ``sys.stderr`` (above the bar in a
        terminal); in a notebook, where lines would pile up under the bar, the text goes beside
        the bar instead.  Terminal escapes and control characters in ``text`` (a graph's name)
        are neutralised."""
        if not self.enabled:
            return
        from workbench._terminal import clean

        text = clean(text)
        if self._bar is not None and _in_kernel():
            self._bar.set_postfix_str(text, refresh=True)
        elif self._bar is not None:
            self._bar.write(PREFIX + text, file=sys.stderr)
        else:
            print(PREFIX + text, file=sys.stderr, flush=True)

    def describe(self, text: str) -> None:
        """Show ``text`` beside the bar (the current step)."""
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=True)

    def advance(self, steps: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(steps)

    update = advance
    note = describe

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_bar(*, total: int | None = None, desc: str = "", enabled: bool = True,
                 unit: str = "it") -> Progress:
    """A bar with ``total`` steps of ``unit``, driven by hand (no stderr lines unless asked)."""
    return Progress(total, desc=desc, enabled=enabled, unit=unit)


Bar = Progress

#: Inputs from this many bytes get a reading bar (:func:`reading`): smaller ones load in about a
#: second, where a bar would only flicker.
READING_BAR_BYTES = 8 << 20


class Reading(Progress):
    """The bar of a reader on a big input (:func:`reading`): phases named beside it
    (:meth:`phase`), each with its own count of items (ops, events) or none (one C call, such
    as parsing the JSON, shows its elapsed time), advanced in steps of :attr:`every` items."""

    every = 1 << 14

    def __enter__(self) -> Reading:
        return self

    def phase(self, text: str, total: int | None = None, unit: str = "it") -> None:
        """Start the phase ``text`` of ``total`` ``unit`` (``None``: no count)."""
        if self._bar is not None:
            self._bar.reset(total=total)
            self._bar.unit = unit
            self._bar.set_description_str(text, refresh=True)


def reading(name: str, size_bytes: int, *, enabled: bool = True) -> Reading:
    """A bar for reading the input ``name`` of ``size_bytes`` bytes, shown (in a terminal or a
    notebook, as :class:`Progress`) from :data:`READING_BAR_BYTES` on.

    >>> with reading("g.json", 10, enabled=False) as bar:
    ...     bar.phase("building ops", total=3, unit="op"); bar.advance(3)
    """
    from workbench._terminal import clean

    return Reading(None, desc=f"reading {clean(name)}", unit="B",
                   enabled=enabled and size_bytes >= READING_BAR_BYTES)


def _enabled(enabled: bool) -> bool:
    return bool(enabled) and os.environ.get("WORKBENCH_PROGRESS", "1") != "0"


def _interactive() -> bool:
    """A terminal on stderr, or a running Jupyter kernel (not merely ipykernel imported, as in
    test runs and notebook executors' parents)."""
    if _in_kernel():
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def _in_kernel() -> bool:
    """A running Jupyter kernel, in its own process.  A process forked from the kernel (a
    budgeted ``compare`` stage, :mod:`workbench._bounded`) inherits the kernel object but may not
    talk to the frontend: its widget messages are dropped, each with a logged "attempted to send
    message from fork", so there it is no kernel (no widget bar)."""
    if "ipykernel" not in sys.modules or "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    kernel = getattr(shell, "kernel", None) if shell is not None else None
    if kernel is None:
        return False
    pid = getattr(getattr(kernel, "session", None), "pid", None)
    return pid is None or pid == os.getpid()
