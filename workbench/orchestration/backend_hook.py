"""``backend="workbench"`` in any process that imported ``workbench``, whatever the import order.

torch finds a backend by name in its registry (``torch._dynamo.backends.registry``), filled by
the backends torch ships, by ``torch_dynamo_backends`` entry points (``pyproject.toml`` has one,
but only an installed package has entry points) and by ``register_backend`` calls.
:func:`install` (called by ``import workbench``) registers the workbench backend now when the
registry is already imported, else installs a post-import hook (a ``sys.meta_path`` finder for
that one module) that registers it right after the registry is first imported, so
``import workbench; import torch`` works as ``import torch; import workbench`` does.  What is
registered is :func:`backend`, which imports the real one
(:func:`workbench.orchestration.compile_backend.workbench_backend`) on first use, so neither
this module nor the hook imports torch or the scheduler.  Standard library only.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

NAME = "workbench"
REGISTRY = "torch._dynamo.backends.registry"


def backend(gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
    """The registered backend: :func:`~workbench.orchestration.compile_backend.
    workbench_backend`, imported on first use."""
    from workbench.orchestration.compile_backend import workbench_backend

    return workbench_backend(gm, example_inputs, **kwargs)


def register_in(registry: ModuleType) -> None:
    """Register :func:`backend` as :data:`NAME` in dynamo's ``registry`` module (no-op when a
    compiler of that name is registered already)."""
    if NAME not in registry._COMPILER_FNS:
        registry.register_backend(backend, name=NAME)


def install() -> None:
    """Register now if dynamo's registry is imported, else when it is (see the module
    docstring).  Idempotent."""
    loaded = sys.modules.get(REGISTRY)
    if loaded is not None and hasattr(loaded, "_COMPILER_FNS"):
        register_in(loaded)
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


class _Finder(importlib.abc.MetaPathFinder):
    """Finds dynamo's registry as the path finder does, with a loader that registers the
    backend after executing it; every other module is left to the other finders."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != REGISTRY:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader)
        return spec


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]  # done
        try:
            register_in(module)
        except Exception:  # noqa: BLE001 - torch's registry changed: the entry point remains
            pass


__all__ = ["NAME", "REGISTRY", "backend", "install", "register_in"]
