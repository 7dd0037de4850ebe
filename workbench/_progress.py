"""Progress bars that work in notebooks and on the terminal (tqdm.auto)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


def progress(items: Iterable[T], *, desc: str = "", enabled: bool = True,
             total: int | None = None) -> Iterator[T]:
    """Iterate ``items`` with a progress bar (notebook widget or terminal line).

    Disabled when ``enabled`` is false, when ``WORKBENCH_PROGRESS=0``, or when stderr is not a
    terminal outside a notebook (so logs and CI output stay clean).
    """
    if not _shown(enabled):
        yield from items
        return
    from tqdm.auto import tqdm

    yield from tqdm(items, desc=desc, total=total, leave=False)


class Bar:
    """A progress bar driven by hand: ``update(n)``, ``note(text)`` (shown after the count),
    ``close()``; a context manager.  Does nothing when disabled (same rules as :func:`progress`).

    >>> with progress_bar(total=3, desc="parts", enabled=False) as bar:
    ...     bar.update(1); bar.note("part 2/3: 120 states")
    """

    def __init__(self, total: int | None, desc: str, enabled: bool, unit: str = "it") -> None:
        self._bar: Any = None
        if _shown(enabled):
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, leave=False, unit=unit)

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def note(self, text: str) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_bar(*, total: int | None = None, desc: str = "", enabled: bool = True,
                 unit: str = "it") -> Bar:
    """A :class:`Bar` with ``total`` steps of ``unit``."""
    return Bar(total, desc, enabled, unit)


def _shown(enabled: bool) -> bool:
    return bool(enabled) and os.environ.get("WORKBENCH_PROGRESS", "1") != "0" and _interactive()


def _interactive() -> bool:
    if "ipykernel" in sys.modules:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())
