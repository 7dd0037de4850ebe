"""The options of a command that reads an ONNX graph file: ``--input-shape NAME=1,3,224,224``
(repeatable: example shapes of the model's inputs, which set their symbolic dimensions; see
:func:`workbench.io.onnx.load.load_onnx`'s ``input_shapes``) and ``--simplify`` (onnxscript's
optimizer before the import).  ``--dim NAME=VALUE`` (a symbolic dimension by its name) sets the
same dimensions and stays with the command.
"""

from __future__ import annotations

import argparse
from typing import Any

from workbench.errors import OptionError


def add_onnx_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                        help="an example shape of an ONNX graph file's input, e.g. "
                             "input=1,3,224,224 (repeatable; sets its symbolic dimensions)")
    parser.add_argument("--simplify", action="store_true",
                        help="run onnxscript's optimizer on an ONNX graph file before the "
                             "import (folds shape arithmetic; slower)")


def onnx_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``load`` keywords of ``--input-shape``/``--simplify`` for a graph file; with
    ``--model`` either is a one-line error.  A malformed ``--input-shape`` is one too."""
    from workbench.io.onnx.proto import parse_input_shapes

    if not args.graph:
        if args.input_shape or args.simplify:
            raise OptionError("--input-shape/--simplify apply to graph files only")
        return {}
    return {"input_shapes": parse_input_shapes(args.input_shape) or None,
            "simplify": args.simplify}


__all__ = ["add_onnx_options", "onnx_options"]
