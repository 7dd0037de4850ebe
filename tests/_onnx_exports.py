"""The zoo's models exported to ONNX once per test session, shared by the test modules that
read them (tests/test_onnx_shapes.py, tests/test_real_model_costs.py): the dynamo exporter takes
a second or two a model, so each file is written once.  ``legacy``: TorchScript's exporter,
opset 17; ``dynamo``: torch.export's, opset 18 (what it writes; 17 would be a lossy conversion
afterwards).  The files live in a temporary folder removed at exit."""

from __future__ import annotations

import atexit
import contextlib
import io
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

_MADE: dict[tuple[str, str], Path] = {}
_ROOT: list[Path] = []


def export(model: Any, example: tuple[Any, ...], path: Path, *, dynamo: bool = False,
           **options: Any) -> Path:
    """``model`` written to ``path`` by the chosen exporter, its chatter silenced."""
    import torch

    quiet = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(quiet), \
            contextlib.redirect_stderr(quiet):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, str(path), dynamo=dynamo,
                          opset_version=18 if dynamo else 17,
                          **({"verbose": False} if dynamo else {}), **options)
    return path


def exported(name: str, exporter: str) -> Path:
    """The zoo model ``name`` exported by ``exporter`` (``legacy`` or ``dynamo``), made once."""
    from tests.model_zoo import ZOO

    key = (name, exporter)
    if key not in _MADE:
        if not _ROOT:
            _ROOT.append(Path(tempfile.mkdtemp(prefix="wb-onnx-exports-")))
            atexit.register(shutil.rmtree, _ROOT[0], True)
        model, example = ZOO[name]()
        _MADE[key] = export(model, example, _ROOT[0] / f"{name}_{exporter}.onnx",
                            dynamo=exporter == "dynamo")
    return _MADE[key]
