"""Loading the scripts under ``benchmarks/`` in tests (they are scripts, not a package), and the
skip their torch-executor smoke runs share."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_benchmark(name: str) -> Any:
    """``benchmarks/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def need_torch_executor() -> None:
    """Skip unless PyTorch is installed and the torch executor is registered and available."""
    from workbench.executors.execute import EXECUTORS

    pytest.importorskip("torch")
    if "torch" not in EXECUTORS or not EXECUTORS.available("torch"):
        pytest.skip("the torch executor is not registered here")
