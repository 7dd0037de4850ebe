"""GPU execution with CuPy.  Nothing here imports CuPy at module import (STYLE.md R11)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _probe() -> tuple[bool, str]:
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # ImportError, or a broken CUDA install
        return False, (f"CuPy is not installed ({type(exc).__name__}); "
                       f"pip install 'schedule-workbench[gpu]'")
    try:
        import cupy

        if not cupy.cuda.is_available():
            return False, "CuPy is installed but no CUDA GPU/driver is available"
    except Exception as exc:
        return False, f"CUDA is not usable: {exc}"
    return True, ""


def is_available() -> bool:
    """True when CuPy imports and a CUDA device is present (probed once, cached)."""
    return _probe()[0]


def unavailable_reason() -> str:
    return _probe()[1]
