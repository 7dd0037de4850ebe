"""Shared pytest configuration: hypothesis profiles and the GPU auto-skip."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _gpu_available() -> tuple[bool, str]:
    try:
        from workbench.executors import gpu
    except ImportError:
        return False, "workbench.executors.gpu is not available"
    ok = gpu.is_available()
    return ok, "" if ok else gpu.unavailable_reason()


def _torch_cuda_available() -> tuple[bool, str]:
    """Whether PyTorch sees a CUDA GPU (the torch executor's GPU tests need no CuPy)."""
    try:
        import torch
    except ImportError:
        return False, "torch is not installed"
    if not torch.cuda.is_available():
        return False, "torch sees no CUDA device"
    return True, ""


_PROBES = {"gpu": _gpu_available, "torch_gpu": _torch_cuda_available}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``gpu`` tests (CuPy + CUDA) and ``torch_gpu`` tests (torch + CUDA) cleanly where the
    machine cannot run them; each probe runs only when a collected test carries its marker."""
    for marker, probe in _PROBES.items():
        marked = [item for item in items if marker in item.keywords]
        if not marked:
            continue
        ok, reason = probe()
        if ok:
            continue
        skip = pytest.mark.skip(reason=f"needs a CUDA GPU: {reason}")
        for item in marked:
            item.add_marker(skip)
