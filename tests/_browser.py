"""Shared by the browser tests: the system Chromium, its flags, and a module-scoped launch.

Import it at the top of a browser test module: the import skips the module (with the reason) when
Chromium or Playwright is missing.  Never run ``playwright install``: the system Chromium is used
through ``executable_path``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} "
                "(apt-get install chromium fonts-liberation)", allow_module_level=True)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="browser tests need the 'playwright' package")

LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--disable-background-networking"]


def launch() -> Iterator[Any]:
    """Yield a headless Chromium (for a module-scoped fixture); skip if it cannot start."""
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
        except Exception as exc:  # a broken system Chromium is an environment problem
            pytest.skip(f"cannot launch {CHROMIUM}: {str(exc).splitlines()[0]}")
        yield b
        b.close()
