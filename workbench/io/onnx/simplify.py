"""The optional simplify pass of the ONNX import (:func:`workbench.io.onnx.load.load_onnx`,
``simplify=True``): onnxscript's optimizer (``onnxscript.optimizer.optimize``: constant folding,
shape-op elimination, dead-code removal).  On a transformer from the legacy TorchScript exporter
it removes the ``Shape``/``Gather``/``Concat`` chains that would otherwise import as kernels with
default costs.  onnxscript is optional (the ``onnx`` extra): without it the import goes on with
ONNX's own shape inference (data propagation on) and says so in a warning."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any


def simplify(model: Any, path: Path) -> Any:
    """``model`` (an ``onnx.ModelProto``) through onnxscript's optimizer; unchanged, with a
    warning, when onnxscript is missing or fails on it."""
    try:
        from onnxscript import optimizer
    except ImportError:
        warnings.warn(f"{path}: simplify: onnxscript is not installed (pip install "
                      f"'schedule-workbench[onnx]'); only ONNX shape inference ran",
                      stacklevel=3)
        return model
    try:
        return optimizer.optimize(model)
    except Exception as exc:  # noqa: BLE001 - third-party optimiser on an arbitrary file
        text = " ".join(f"{path}: simplify: onnxscript's optimizer failed "
                        f"({type(exc).__name__}: {exc}); imported unsimplified".split())
        warnings.warn(text[:300], stacklevel=3)
        return model


__all__ = ["simplify"]
