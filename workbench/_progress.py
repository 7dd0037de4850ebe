"""Progress bars that work in notebooks and on the terminal (tqdm.auto)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def progress(items: Iterable[T], *, desc: str = "", enabled: bool = True,
             total: int | None = None) -> Iterator[T]:
    """Iterate ``items`` with a progress bar (notebook widget or terminal line).

    Disabled when ``enabled`` is false, when ``WORKBENCH_PROGRESS=0``, or when stderr is not a
    terminal outside a notebook (so logs and CI output stay clean).
    """
    if not enabled or os.environ.get("WORKBENCH_PROGRESS", "1") == "0" or not _interactive():
        yield from items
        return
    from tqdm.auto import tqdm

    yield from tqdm(items, desc=desc, total=total, leave=False)


def _interactive() -> bool:
    if "ipykernel" in sys.modules:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())
