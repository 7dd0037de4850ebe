"""What a graph imported from a model keeps so that the model itself can run under a schedule.

A :class:`~workbench.values.graph.Graph` is a value: ops, tensors, costs.  An imported model also
has a *program*: its own weights and, for a PyTorch module, its own calls.  The importers attach it
as ``graph.program`` (an attachment, not part of the value: equality ignores it, ``save`` and
pickling drop it), and the torch executor runs it instead of drawing random weights:

* :class:`Weights` (ONNX files, :func:`workbench.io.load_onnx`): the value of every parameter
  tensor (the initializers, and the constants folded at import), the model's positional inputs
  and its outputs in order.  Each op runs as its kind's torch form
  (:mod:`workbench.ops.tensors`) on these values.
* :class:`workbench.io.torch.program.TorchProgram` (:func:`workbench.io.from_torch`): the traced
  module itself; each op runs as the call the model makes (``aten.conv2d`` with the module's own
  weight), so the outputs are the model's.

Both map the model's arguments to the graph's input tensors (:meth:`ModelProgram.graph_inputs`)
and the graph's output values back to what the model returns (:meth:`ModelProgram.result`).
Nothing here imports torch or NumPy at module import.
"""

from __future__ import annotations

import itertools
import os
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.errors import OptionError

TensorId = str
Token = tuple[int, int]

_NUMBERS = itertools.count()
_LIVE: weakref.WeakValueDictionary[Token, ModelProgram] = weakref.WeakValueDictionary()


def token_of(program: ModelProgram | None) -> Token | None:
    """What a pickled Graph keeps of its program: a token that :func:`program_of` turns back
    into the program in the process that made it and in the workers it forks (a comparison's
    schedules come back from its workers with their program), and into nothing elsewhere."""
    return None if program is None else program.token


def program_of(token: Token | None) -> ModelProgram | None:
    """The live program of ``token`` in this process, else ``None``.  O(1)."""
    return None if token is None else _LIVE.get(tuple(token))  # type: ignore[arg-type]


class ModelProgram:
    """Base of a graph's program: the model's inputs and outputs by graph tensor, its weights.

    ``source`` names where it came from (``"torch"``, ``"onnx"``); ``input_names`` are the graph
    input tensors in the order the model takes its positional arguments; ``output_names`` the
    graph output tensors in the order the model returns them (flattened).
    """

    source = "model"

    def __init__(self, input_names: Sequence[TensorId], output_names: Sequence[TensorId]) -> None:
        self.input_names = tuple(input_names)
        self.output_names = tuple(output_names)
        self.token: Token = (os.getpid(), next(_NUMBERS))
        _LIVE[self.token] = self

    def describe(self) -> str:
        """One line for ``trace.meta["weights"]`` and notes."""
        return f"the model's own ({self.source})"

    def parameters(self) -> Mapping[TensorId, Any]:
        """The value of each parameter tensor the graph reads (the model's weights)."""
        return {}

    def graph_inputs(self, args: Any) -> dict[TensorId, Any]:
        """The graph input values for the model's arguments ``args``: one value (a tensor), a
        tuple or list of them in :attr:`input_names` order, or a mapping by input name.  A
        wrong count or an unknown name is a one-line :class:`OptionError`.  O(inputs)."""
        names = self.input_names
        if isinstance(args, Mapping):
            unknown = [k for k in args if k not in names]
            if unknown:
                raise OptionError(f"inputs: {unknown[0]!r} is not an input of the model "
                                  f"(inputs: {', '.join(names) or 'none'})")
            return dict(args)
        values = list(args) if isinstance(args, (tuple, list)) else [args]
        if len(values) != len(names):
            raise OptionError(f"inputs: the model takes {len(names)} input(s) "
                              f"({', '.join(names) or 'none'}), got {len(values)}")
        return dict(zip(names, values, strict=True))

    def result(self, values: Mapping[TensorId, Any]) -> Any:
        """What the model returns, from the graph's output values: the one output itself, else a
        tuple in :attr:`output_names` order."""
        outs = [values[t] for t in self.output_names]
        return outs[0] if len(outs) == 1 else tuple(outs)


class Weights(ModelProgram):
    """A model's parameter values by graph tensor id (NumPy arrays), e.g. an ONNX file's
    initializers and the constants folded at import; every op runs as its kind's torch form."""

    def __init__(self, values: Mapping[TensorId, Any], input_names: Sequence[TensorId],
                 output_names: Sequence[TensorId], *, source: str = "onnx") -> None:
        super().__init__(input_names, output_names)
        self.values = dict(values)
        self.source = source

    def describe(self) -> str:
        return f"the model's own ({self.source}: {len(self.values)} parameter tensors)"

    def parameters(self) -> Mapping[TensorId, Any]:
        return self.values


__all__ = ["ModelProgram", "TensorId", "Token", "Weights", "program_of", "token_of"]
