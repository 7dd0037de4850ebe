"""A simulated GPU-machine image, for the CI test of the device check (tests/test_device_check.py).

Put this folder first on ``PYTHONPATH`` and every Python process started under it (the device
check's steps included) sees:

* the packages named in ``DEVICE_IMAGE_MISSING`` (comma-separated; default ``plotly,graphviz``,
  which the device machine's image lacks) as not installed: importing them raises
  ``ModuleNotFoundError``;
* with ``WORKBENCH_FAKE_CUDA=1``, the strict fake ``torch.cuda`` of ``tests/fake_cuda.py`` as the
  torch executor's CUDA (``runner._cuda_api``; its tensors stay on the CPU), installed when the
  runner module is first imported, so a benchmark run with ``--device cuda`` takes the GPU paths.

Only tests set these; nothing in the workbench reads them.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from typing import Any

MISSING = frozenset(filter(None, os.environ.get("DEVICE_IMAGE_MISSING",
                                                "plotly,graphviz").split(",")))
RUNNER = "workbench.executors.torch_exec.runner"


class _Image(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name.partition(".")[0] in MISSING:
            raise ModuleNotFoundError(f"No module named {name!r} (not in the device image)",
                                      name=name)
        if name == RUNNER and os.environ.get("WORKBENCH_FAKE_CUDA") == "1":
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None and spec.loader is not None:
                load = spec.loader.exec_module

                def exec_module(module: Any) -> None:
                    load(module)
                    _fake_cuda(module)

                spec.loader.exec_module = exec_module  # type: ignore[method-assign]
            return spec
        return None


def _fake_cuda(runner: Any) -> None:
    from tests.fake_cuda import StrictCuda

    cuda = StrictCuda()
    runner._cuda_api = lambda: cuda
    runner._tensor_device = lambda device: "cpu"


sys.meta_path.insert(0, _Image())
