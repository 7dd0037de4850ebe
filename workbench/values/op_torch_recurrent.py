"""The PyTorch form of the recurrent kinds (``lstm``, ``gru``, ``rnn``): the kernels cuDNN runs.

The same function as :func:`workbench.values.op_reference_recurrent.recurrent`, reading the
inputs through the same :func:`~workbench.values.op_reference_recurrent.layout_of` /
:func:`~workbench.values.op_reference_recurrent.cells` (so an ONNX op's weights are put in
torch's gate order first, a gather of each weight per run), then one call of ``torch.lstm`` /
``torch.gru`` / ``torch.rnn_tanh`` / ``torch.rnn_relu`` (cuDNN's RNN on a GPU, inference:
no dropout), time-major.  An ONNX ``reverse`` op runs forward over the reversed sequence and
reverses its output.  ONNX's default GRU (``linear_before_reset`` false: the reset gate
scales the state before its product), which cuDNN has no kernel for, runs step by step with
``F.linear`` and the gate maps.  Complexity: one library call (or O(T) steps) per op.
"""

from __future__ import annotations

from typing import Any

from workbench.values.op_reference import OpLike, ShapeOf
from workbench.values.op_reference_recurrent import (
    Cell,
    Layout,
    arrange_outputs,
    batched,
    cells,
    initial_states,
    layout_of,
)
from workbench.values.op_torch import Tensor, _f, torch_module


def _gru_before_reset(lay: Layout, cell: Cell, x: Tensor, h: Tensor) -> tuple[Tensor, Tensor]:
    """ONNX's default GRU over the time-major ``x`` from ``h``: ``(outputs, last h)``."""
    torch, f = torch_module(), _f()
    xw = f.linear(x, cell.w_ih, cell.b_ih)
    w_rz, w_n = cell.w_hh[:2 * lay.hidden], cell.w_hh[2 * lay.hidden:]
    b_rz, b_n = (None, None) if cell.b_hh is None else (cell.b_hh[:2 * lay.hidden],
                                                        cell.b_hh[2 * lay.hidden:])
    ys = []
    for t in range(x.shape[0]):
        xr, xz, xn = xw[t].chunk(3, dim=-1)
        hr, hz = f.linear(h, w_rz, b_rz).chunk(2, dim=-1)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        n = torch.tanh(xn + f.linear(r * h, w_n, b_n))
        h = (1 - z) * n + z * h
        ys.append(h)
    return torch.stack(ys), h


def _run(lay: Layout, x: Tensor, h0: Tensor, c0: Tensor, weights: list[Cell]) -> tuple[Any, ...]:
    """``(y, h_n, c_n or None)`` of the time-major ``x`` through every layer and direction."""
    torch = torch_module()
    if lay.kind == "gru" and not lay.linear_before_reset:
        outs, hs = [], []
        for d, cell in enumerate(weights):  # ONNX: one layer
            seq = x.flip(0) if d == 1 else x
            y, h = _gru_before_reset(lay, cell, seq, h0[d])
            outs.append(y.flip(0) if d == 1 else y)
            hs.append(h)
        return torch.cat(outs, dim=-1), torch.stack(hs), None
    flat = [w for cell in weights for w in cell.flat()]
    args = (flat, lay.bias, lay.layers, 0.0, False, lay.directions == 2, False)
    if lay.kind == "lstm":
        return torch.lstm(x, (h0, c0), *args)
    fn = torch.gru if lay.kind == "gru" else getattr(torch, f"rnn_{lay.act}")
    y, h = fn(x, h0, *args)
    return y, h, None


def recurrent(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """lstm / gru / rnn with torch's recurrent kernels (module docstring)."""
    torch = torch_module()
    lay = layout_of(op, len(a))
    x = a[0]
    batched(op, x)
    seq = x.transpose(0, 1) if lay.batch_first else x
    h0, c0 = initial_states(lay, a)
    shape = (lay.layers * lay.directions, seq.shape[1])
    if h0 is None:
        h0 = torch.zeros((*shape, lay.proj or lay.hidden), dtype=x.dtype, device=x.device)
    if c0 is None and lay.kind == "lstm":
        c0 = torch.zeros((*shape, lay.hidden), dtype=x.dtype, device=x.device)
    if lay.reverse:
        seq = seq.flip(0)
    y, h, c = _run(lay, seq.contiguous(), h0.contiguous(),
                   None if c0 is None else c0.contiguous(), cells(lay, a))
    if lay.reverse:
        y = y.flip(0)
    return [v.contiguous() for v in arrange_outputs(op, lay, y, h, c, torch.cat)]


__all__ = ["recurrent"]
