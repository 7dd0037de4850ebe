"""CUDA kernel sources, their argument signatures and the compile cache.

**Sources.**  The ``.cu`` files live in the repository's top-level ``kernels/`` directory, which the
wheel ships as ``workbench/kernels`` (``[tool.hatch.build.targets.wheel.force-include]``);
:func:`kernels_dir` finds them in both layouts.  ``#include "x.cuh"`` lines are inlined
(:func:`module_source`), so NVRTC needs no include path.

**Argument layout.**  The CUDA source is the single source of truth: :func:`signature` parses each
``extern "C" __global__`` kernel's parameters (name and type: ``ptr``, ``i64``, ``i32``, ``f32``);
:func:`workbench.executors.gpu.calls.make_call` orders keyword arguments by that signature, and the
NumPy
twins of :mod:`workbench.executors.gpu.emulator` read arguments by the same names.

**Compile cache.**  :func:`get_function` compiles a module (or a generated source) once per process
with CuPy; it is the only function here that needs a GPU.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from workbench.errors import DeviceUnavailable, OptionError

#: The kernel source files (modules), without the ``.cu`` suffix.
SOURCE_FILES: tuple[str, ...] = ("elementwise", "conv", "gemm", "pool", "norm", "layout", "spin")


COMPILE_OPTIONS: tuple[str, ...] = ("-std=c++17",)


def kernels_dir() -> Path:
    """The directory holding the ``.cu`` sources: ``workbench/kernels`` in an installed wheel,
    the repository's ``kernels/`` in a source checkout or editable install."""
    candidates: list[Path] = []
    try:
        packaged = resources.files("workbench").joinpath("kernels")
        candidates.append(Path(str(packaged)))
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - odd loaders
        pass
    candidates.append(Path(__file__).resolve().parents[3] / "kernels")
    for path in candidates:
        if (path / "common.cuh").is_file():
            return path
    raise DeviceUnavailable("the CUDA kernel sources (kernels/*.cu) were not found next to the "
                            "workbench package; reinstall schedule-workbench")


@cache
def raw_source(filename: str) -> str:
    """The text of one file of :func:`kernels_dir` (``"conv.cu"``, ``"common.cuh"``)."""
    path = kernels_dir() / filename
    if not path.is_file():
        raise OptionError(f"no kernel source {filename!r} in {kernels_dir()}")
    return path.read_text(encoding="utf-8")


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)


def inline_includes(text: str, _seen: set[str] | None = None) -> str:
    """Replace ``#include "x.cuh"`` by the file's text (each file once; ``#pragma once`` kept)."""
    seen = set() if _seen is None else _seen

    def expand(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in seen:
            return f"// (already included: {name})"
        seen.add(name)
        return inline_includes(raw_source(name), seen)

    return _INCLUDE.sub(expand, text)


@cache
def module_source(module: str) -> str:
    """Compilable source of a kernel module (a name of :data:`SOURCE_FILES`), includes inlined."""
    if module not in SOURCE_FILES:
        raise OptionError(f"unknown kernel module {module!r} (known: {', '.join(SOURCE_FILES)})")
    return inline_includes(raw_source(f"{module}.cu"))


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its name and type (``ptr``, ``i64``, ``i32``, ``u64`` or ``f32``)."""

    name: str
    type: str


_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?'
                     r"(\w+)\s*\(([^)]*)\)", re.S)


_SCALARS = {"i64": "i64", "long long": "i64", "int": "i32", "float": "f32", "u64": "u64",
            "unsigned long long": "u64"}


def _param(text: str) -> Param:
    words = text.replace("__restrict__", " ").replace("const ", " ").split()
    if len(words) < 2:
        raise OptionError(f"cannot parse kernel parameter {text.strip()!r}")
    name = words[-1].lstrip("*")
    decl = " ".join(words[:-1]) + ("*" if words[-1].startswith("*") else "")
    if "*" in decl:
        return Param(name, "ptr")
    try:
        return Param(name, _SCALARS[decl.strip()])
    except KeyError:
        raise OptionError(f"kernel parameter {text.strip()!r} has an unsupported type") from None


def parse_signatures(source: str) -> dict[str, tuple[Param, ...]]:
    """Every ``extern "C" __global__`` kernel of ``source`` → its parameters, in order."""
    out = {}
    for match in _KERNEL.finditer(source):
        params = [p for p in match.group(2).split(",") if p.strip()]
        out[match.group(1)] = tuple(_param(p) for p in params)
    return out


@cache
def _module_signatures(module: str) -> dict[str, tuple[Param, ...]]:
    return parse_signatures(module_source(module))


def signature(module: str, kernel: str, source: str | None = None) -> tuple[Param, ...]:
    """Parameters of ``kernel`` in ``module`` (or in ``source`` for generated modules)."""
    table = parse_signatures(source) if source is not None else _module_signatures(module)
    try:
        return table[kernel]
    except KeyError:
        raise OptionError(f"kernel {kernel!r} is not defined in module {module!r} "
                          f"(kernels: {', '.join(table)})") from None


_MODULES: dict[tuple[str, str], Any] = {}


def get_function(module: str, kernel: str, source: str | None = None) -> Any:
    """The compiled ``cupy.RawKernel`` for ``kernel`` (GPU only; one RawModule per module and
    source text, options :data:`COMPILE_OPTIONS`, cached for the process)."""
    import cupy

    text = inline_includes(source) if source is not None else module_source(module)
    key = (module, hashlib.sha1(text.encode()).hexdigest())
    mod = _MODULES.get(key)
    if mod is None:
        mod = _MODULES[key] = cupy.RawModule(code=text, options=COMPILE_OPTIONS)
    return mod.get_function(kernel)


__all__ = [
    "COMPILE_OPTIONS", "SOURCE_FILES", "Param", "get_function", "inline_includes",
    "kernels_dir", "module_source", "parse_signatures", "raw_source", "signature",
]
