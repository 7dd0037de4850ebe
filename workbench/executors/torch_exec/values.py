"""Tensor values of a torch run: inputs, the op-by-op evaluator, outputs and their comparison.

The evaluator computes ops exactly as :func:`workbench.executors.reference.run_reference` does
(state of the
``assign`` family, ``fused`` ops member by member, ``view_shapes`` aliases), with each kind's
PyTorch form (:attr:`workbench.ops.OpKind.torch_form`) instead of its NumPy reference.
Inputs
and parameters are :func:`workbench.executors.reference.draw_inputs` (``init="scaled"``, as the CuPy
executor and the launch-plan emulator draw them: same seed, same values in every runner),
converted with ``torch.from_numpy`` and cast to the precision's dtype.

Every tensor stays referenced until the run ends (nothing is freed while side streams may still
read it), so no ``record_stream`` bookkeeping is needed; the peak memory is that of keeping every
tensor of the graph.  Complexity: one torch form per op, O(V + E) bookkeeping.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from workbench._checks import first_line
from workbench.errors import OptionError, ScheduleError
from workbench.executors.reference import draw_inputs
from workbench.ops import ASSIGN_KINDS, OPS, TORCH_FORM_KINDS
from workbench.ops.generic import FUSED
from workbench.ops.tensors import torch_module
from workbench.values.graph import Graph, Op, TensorId

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")


def dtype_of(precision: str | None) -> Any:
    """The torch dtype values are cast to under ``precision`` (fp32, tf32 and None: float32)."""
    torch = torch_module()
    return {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision or "", torch.float32)


def cast_dtype(precision: str | None) -> Any:
    """The dtype a traced model's floating values are cast to under ``precision``: ``None``
    (kept as the model has them) for fp32, TF32 and None, else fp16's or bf16's."""
    return None if precision in (None, "fp32", "tf32") else dtype_of(precision)


class EvaluatorLike(Protocol):
    """What the issue loops (:mod:`~workbench.executors.torch_exec.host`,
    :mod:`~workbench.executors.torch_exec.cuda`) need of an evaluator: :class:`Evaluator` (the
    kinds' torch forms) or :class:`workbench.executors.torch_exec.calls.CallEvaluator` (a
    traced model's own calls)."""

    def start(self) -> None: ...
    def run_op(self, op_id: str) -> None: ...
    def run_ops(self, op_ids: tuple[str, ...]) -> None: ...
    def outputs(self) -> dict[TensorId, Any]: ...
    def result(self) -> Any: ...
    def live_tensors(self) -> list[Any]: ...


def as_tensor(value: Any, *, device: str, dtype: Any) -> Any:
    """A NumPy array or a tensor as a tensor on ``device``; floating values cast to ``dtype``
    (``None``: kept; integer values, e.g. token ids or shape constants, keep theirs).  A 0-d
    array stays 0-d (``np.ascontiguousarray`` would make it 1-d)."""
    torch = torch_module()
    tensor = (value if isinstance(value, torch.Tensor)
              else torch.from_numpy(np.require(value, requirements="C"))).to(device)
    return tensor.to(dtype) if dtype is not None and tensor.is_floating_point() else tensor


def initial_tensors(graph: Graph, *, seed: int, inputs: Mapping[TensorId, Any] | None,
                    device: str, precision: str | None) -> dict[TensorId, Any]:
    """The graph inputs and parameters as tensors on ``device`` (floating ones cast to the
    precision's dtype).  Values ``inputs`` gives (by tensor id: arrays or tensors) are used as
    they are; the graph program's parameters (``graph.program``: an ONNX file's initializers)
    next; the rest as :func:`workbench.executors.reference.draw_inputs` draws them."""
    given = dict(graph.program.parameters()) if graph.program is not None else {}
    extra = dict(inputs or {})
    for k in extra:
        if k not in graph.tensors:
            raise OptionError(f"input {k!r} is not a tensor of graph {graph.name!r}")
    given.update(extra)
    given = {k: v for k, v in given.items() if k in graph.tensors}
    dtype = dtype_of(precision)
    drawn = draw_inputs(graph, seed, dict.fromkeys(given, 0.0))
    return {t: as_tensor(given[t] if t in given else value, device=device, dtype=dtype)
            for t, value in drawn.items()}


class Evaluator:
    """Runs the ops of one graph on tensors, one call of :meth:`run_op` per op; :meth:`start`
    begins a fresh run from the initial values (the state of parameters included)."""

    def __init__(self, graph: Graph, initial: Mapping[TensorId, Any]) -> None:
        self.graph = graph
        self.initial = dict(initial)
        self._params = [t.id for t in graph.tensors.values() if t.role == "parameter"
                        and t.id in self.initial]
        tensors = graph.tensors
        self._shapes = {t: tuple(tt.shape) if tt.shape else None for t, tt in tensors.items()}
        self.values: dict[TensorId, Any] = {}
        self.state: dict[TensorId, Any] = {}
        self.start()

    def start(self) -> None:
        self.values = dict(self.initial)
        self.state = {t: self.initial[t] for t in self._params}

    def shape_of(self, t: TensorId) -> tuple[int, ...] | None:
        return self._shapes.get(t)

    def run_op(self, op_id: str) -> None:
        """Compute op ``op_id`` from the current values (on the current torch stream)."""
        op = self.graph.op(op_id)
        args = []
        for t in op.inputs:
            if t in self.state:
                args.append(self.state[t])
            elif t in self.values:
                args.append(self.values[t])
            else:
                raise ScheduleError(f"op {op_id!r} runs before its input {t!r} is computed (the "
                                    f"order violates a dependency)")
        self.values.update(zip(op.outputs, self._compute(op, args), strict=True))

    def run_ops(self, op_ids: tuple[str, ...]) -> None:
        """:meth:`run_op` for each op of ``op_ids`` in turn."""
        for op_id in op_ids:
            self.run_op(op_id)

    def _compute(self, op: Op, args: list[Any]) -> list[Any]:
        views = op.attrs.get("view_shapes") or {}
        for pos, shape in views.items():
            args[int(pos)] = args[int(pos)].reshape(tuple(shape))
        if op.kind in ASSIGN_KINDS:
            return self._assign(op, args)
        if op.kind == FUSED:
            return self._fused(op, args)
        info = OPS.get(op.kind)
        form = info.torch_form if info is not None else None
        if form is None:
            known = ", ".join(sorted([*TORCH_FORM_KINDS, FUSED]))
            raise OptionError(f"torch executor: op {op.id!r} has kind {op.kind!r}, which has no "
                              f"torch form (known: {known})")
        try:
            return form(op, args, self.shape_of)
        except (IndexError, ValueError, KeyError, TypeError, RuntimeError) as exc:
            raise OptionError(f"torch executor: op {op.id!r} ({op.kind}) failed on inputs "
                              f"of shapes {[tuple(a.shape) for a in args]}: "
                              f"{first_line(exc)}") from None

    def _assign(self, op: Op, args: list[Any]) -> list[Any]:
        target = op.attrs.get("writes") or op.inputs[0]
        if not isinstance(target, str):
            target = list(target)[0]
        value = args[1] if len(args) > 1 else args[0]
        sign = OPS[op.kind].accumulate
        if sign > 0:
            value = self.state.get(target, args[0]) + value
        elif sign < 0:
            value = self.state.get(target, args[0]) - value
        self.state[target] = value.clone()
        return [value.clone() for _ in op.outputs]

    def _fused(self, op: Op, args: list[Any]) -> list[Any]:
        env = dict(zip(op.inputs, args, strict=True))
        for e in op.attrs["expr"]:
            member = Op(e["op"], kind=e["kind"], inputs=tuple(e["inputs"]),
                        outputs=tuple(e["outputs"]), attrs=e.get("attrs", {}) or {})
            outs = self._compute(member, [env[t] for t in member.inputs])
            env.update(zip(member.outputs, outs, strict=True))
        return [env[t] for t in op.outputs]

    def outputs(self) -> dict[TensorId, Any]:
        """The graph outputs of the last run, as tensors (parameters: their final state)."""
        merged = {**self.values, **self.state}
        missing = [t for t in self.graph.outputs if t not in merged]
        if missing:
            raise ScheduleError(f"torch executor: output {missing[0]!r} was not computed")
        return {t: merged[t] for t in self.graph.outputs}

    def result(self) -> Any:
        """What the model returns when the graph has a program (an ONNX file's outputs, in its
        order), else the graph outputs by tensor id."""
        outs = self.outputs()
        return outs if self.graph.program is None else self.graph.program.result(outs)

    def live_tensors(self) -> list[Any]:
        return [*self.values.values(), *self.state.values()]


def to_numpy(tensors: Mapping[TensorId, Any]) -> dict[TensorId, np.ndarray]:
    """Tensors as float32 NumPy arrays on the host (fp16 / bf16 widen exactly)."""
    out = {}
    for t, x in tensors.items():
        x = x.detach()
        out[t] = (x.float() if x.is_floating_point() else x).cpu().numpy()
    return out


def compare_outputs(got: Mapping[TensorId, np.ndarray], want: Mapping[TensorId, np.ndarray], *,
                    what: str) -> None:
    """Require bitwise-equal outputs (NaN patterns included); a one-line ScheduleError naming the
    first differing output otherwise.  O(total elements)."""
    for t, expected in want.items():
        actual = got.get(t)
        if actual is None:
            raise ScheduleError(f"{what}: output {t!r} is missing")
        a, b = np.ascontiguousarray(actual), np.ascontiguousarray(expected)
        if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
            diff = (float(np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64))))
                    if a.shape == b.shape and a.size else float("nan"))
            raise ScheduleError(f"{what}: output {t!r} differs from the serial torch run "
                                f"(max |diff| {diff:.3g}): a missing sync or a stream race")


__all__ = ["PRECISIONS", "Evaluator", "EvaluatorLike", "as_tensor", "cast_dtype",
           "compare_outputs", "dtype_of", "initial_tensors", "to_numpy"]
