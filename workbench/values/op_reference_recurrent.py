"""The recurrent kinds (``lstm``, ``gru``, ``rnn``): how their inputs are read, and their NumPy
reference.

A recurrent op runs a cell over a sequence, per layer and direction.  Its inputs come in one of
two conventions (the ``convention`` attribute, :mod:`workbench.values.op_attrs`):

* ``torch`` (``from_torch``'s, ``aten.lstm``'s): ``x``, the initial states if given (``h0``,
  and ``c0`` for an LSTM, each ``(layers*directions, B, state)``), then per layer and direction
  ``w_ih (G*H, in)``, ``w_hh (G*H, state)``, ``b_ih``, ``b_hh`` (``bias``) and an LSTM's
  ``w_hr (P, H)`` (``proj_size``), torch's gate order (LSTM i f g o, GRU r z n);
* ``onnx`` (ONNX's ``LSTM`` / ``GRU`` / ``RNN``, one layer): ``X``, ``W (D, G*H, in)``,
  ``R (D, G*H, H)``, ``B (D, 2*G*H)``, ``sequence_lens``, ``initial_h``, ``initial_c``, ``P``,
  the optional ones present as ``slots`` lists them; ONNX's gate order (LSTM i o f c, GRU z r
  h), which the op table's ``recurrent`` entry maps onto torch's.

:func:`layout_of` reads the attributes and the input count into a :class:`Layout`,
:func:`cells` gathers each layer and direction's weights in torch's layout and gate order, and
:func:`initial_states` the states, so the torch forms (:mod:`workbench.values.op_torch_recurrent`)
and the reference read the same inputs the same way (both work on NumPy arrays and torch
tensors alike: reshapes, slices and list indexing only).  :func:`arrange_outputs` lays the
results out as the convention's outputs: torch's ``y`` (``(T, B, D*state)``, batch first when
``batch_first``), ``h_n`` and an LSTM's ``c_n`` (one output: the three flattened and
concatenated, the container ``from_torch`` records), or ONNX's ``Y (T, D, B, H)``, ``Y_h``,
``Y_c`` (``(B, T, D, H)`` and ``(B, D, H)`` under ``layout=1``) in ``out_slots``.

Not computed (a one-line :class:`~workbench.errors.OptionError`): ONNX's ``sequence_lens`` and
peepholes ``P``, non-default ``activations``, ``clip`` and ``input_forget``.  The reference runs
every step in float64 and returns the input's dtype.  Complexity: O(T * layers * directions)
matrix products.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.errors import OptionError
from workbench.values.op_attrs import flag
from workbench.values.op_reference import OpLike, ShapeOf
from workbench.values.op_reference_arrays import Array, _dtype, _f64, sigmoid


@dataclass(frozen=True)
class Layout:
    """How one recurrent op's inputs are read: its ``kind``, ``convention``, gate order
    (``order``: ONNX's gate blocks in torch's order), sizes and the position of each input."""

    kind: str
    convention: str
    order: tuple[int, ...]
    hidden: int
    layers: int
    directions: int
    reverse: bool
    batch_first: bool
    bias: bool
    proj: int
    act: str
    linear_before_reset: bool
    h0: int | None
    c0: int | None
    first_weight: int

    @property
    def gates(self) -> int:
        return len(self.order)

    @property
    def per_cell(self) -> int:
        """Weight tensors per layer and direction in the torch convention."""
        return 2 + 2 * self.bias + (1 if self.proj else 0)


@dataclass(frozen=True)
class Cell:
    """One layer and direction's weights in torch's layout and gate order (``None``: absent)."""

    w_ih: Any
    w_hh: Any
    b_ih: Any = None
    b_hh: Any = None
    w_hr: Any = None

    def flat(self) -> list[Any]:
        """The weights as ``aten.lstm`` lists them: w_ih, w_hh, b_ih, b_hh, w_hr."""
        return [t for t in (self.w_ih, self.w_hh, self.b_ih, self.b_hh, self.w_hr)
                if t is not None]


#: Each recurrent kind's gates, as the positions of ONNX's gate blocks in torch's order (LSTM
#: i o f c -> i f g o; GRU z r h -> r z n); the op table's ``OpKind.recurrent``.
GATE_ORDERS: dict[str, tuple[int, ...]] = {"lstm": (0, 2, 3, 1), "gru": (1, 0, 2), "rnn": (0,)}


def _refuse(op: OpLike, what: str) -> OptionError:
    return OptionError(f"op {getattr(op, 'id', '?')!r} ({op.kind}): {what} is not supported")


def layout_of(op: OpLike, n_inputs: int) -> Layout:
    """The :class:`Layout` of ``op`` with ``n_inputs`` inputs (module docstring); a one-line
    :class:`OptionError` for what is not computed or inputs that do not fit."""
    at = op.attrs
    convention = str(at.get("convention") or "torch")
    direction = str(at.get("direction") or "forward")
    if convention not in ("torch", "onnx") or direction not in ("forward", "reverse",
                                                                "bidirectional"):
        raise _refuse(op, f"convention {convention!r} with direction {direction!r}")
    act = str(at.get("act") or ("tanh" if op.kind == "rnn" else ""))
    if act not in (("tanh", "relu") if op.kind == "rnn" else ("",)):
        raise _refuse(op, f"the activations {act!r}")
    for name in ("cell_clip", "input_forget"):
        if at.get(name):
            raise _refuse(op, f"{name}={at[name]!r}")
    hidden = at.get("hidden_size")
    if not isinstance(hidden, int) or hidden < 1:
        raise OptionError(f"op {getattr(op, 'id', '?')!r} ({op.kind}): attribute "
                          f"'hidden_size' is missing")
    layers, proj = int(at.get("layers") or 1), int(at.get("proj_size") or 0)
    bias = flag(at, "bias", True)
    h0 = c0 = None
    if convention == "onnx":
        slots = [int(s) for s in at.get("slots") or range(n_inputs)]
        for slot, name in ((4, "sequence_lens"), (7, "peepholes (P)")):
            if slot in slots:
                raise _refuse(op, name)
        bias = 3 in slots
        h0 = slots.index(5) if 5 in slots else None
        c0 = slots.index(6) if 6 in slots else None
        first, expected = 1, len(slots)
    else:
        per = 2 + 2 * bias + (1 if proj else 0)
        weights = layers * (2 if direction == "bidirectional" else 1) * per
        states = n_inputs - 1 - weights
        if states not in ((0, 2) if op.kind == "lstm" else (0, 1)):
            raise OptionError(f"op {getattr(op, 'id', '?')!r} ({op.kind}): {n_inputs} inputs "
                              f"do not fit {weights} weights and the initial states")
        h0, c0 = (1, 2 if op.kind == "lstm" else None) if states else (None, None)
        first, expected = 1 + states, n_inputs
    if expected != n_inputs:
        raise OptionError(f"op {getattr(op, 'id', '?')!r} ({op.kind}): slots {at.get('slots')} "
                          f"name {expected} inputs, the op has {n_inputs}")
    return Layout(op.kind, convention, GATE_ORDERS[op.kind], hidden, layers,
                  2 if direction == "bidirectional" else 1, direction == "reverse",
                  flag(at, "batch_first", False), bias, proj, act,
                  flag(at, "linear_before_reset", convention == "torch"), h0, c0, first)


def _gates(w: Any, lay: Layout) -> Any:
    """ONNX's gate blocks (rows of ``w``) in torch's order."""
    rows = w.reshape(lay.gates, lay.hidden, *w.shape[1:])[list(lay.order)]
    return rows.reshape(lay.gates * lay.hidden, *w.shape[1:])


def cells(lay: Layout, a: Sequence[Any]) -> list[Cell]:
    """Every layer and direction's weights (layer by layer, forward direction first) in torch's
    layout and gate order, from the inputs ``a`` read as ``lay`` says."""
    if lay.convention == "torch":
        out = []
        for k in range(lay.layers * lay.directions):
            w = list(a[lay.first_weight + k * lay.per_cell:lay.first_weight + (k + 1)
                       * lay.per_cell])
            out.append(Cell(w[0], w[1], b_ih=w[2] if lay.bias else None,
                            b_hh=w[3] if lay.bias else None, w_hr=w[-1] if lay.proj else None))
        return out
    w, r = a[1], a[2]
    b = a[3] if lay.bias else None
    gh = lay.gates * lay.hidden
    return [Cell(_gates(w[d], lay), _gates(r[d], lay),
                 None if b is None else _gates(b[d][:gh], lay),
                 None if b is None else _gates(b[d][gh:], lay))
            for d in range(lay.directions)]


def initial_states(lay: Layout, a: Sequence[Any]) -> tuple[Any, Any]:
    """``(h0, c0)`` as torch lays them out, ``(layers*directions, B, state)`` (``None``: not
    given, zeros); ONNX's ``layout=1`` states are ``(B, D, H)`` and swap their first axes."""
    def read(k: int | None) -> Any:
        if k is None:
            return None
        s = a[k]
        return s.swapaxes(0, 1) if lay.convention == "onnx" and lay.batch_first else s
    return read(lay.h0), read(lay.c0)


def arrange_outputs(op: OpLike, lay: Layout, y: Any, h: Any, c: Any,
                    concat: Callable[[list[Any]], Any]) -> list[Any]:
    """The op's outputs from torch's time-major ``y (T, B, D*state)``, ``h_n`` and ``c_n``
    (module docstring); ``concat`` joins flattened arrays (the container output)."""
    if lay.convention == "onnx":
        t, b = y.shape[0], y.shape[1]
        y4 = y.reshape(t, b, lay.directions, -1)
        y4 = y4.swapaxes(0, 1) if lay.batch_first else y4.swapaxes(1, 2)
        states = [s.swapaxes(0, 1) if lay.batch_first and s is not None else s
                  for s in (h, c)]
        everything = [y4, *states]
        slots = [int(s) for s in op.attrs.get("out_slots") or range(len(op.outputs))]
        return [everything[s] for s in slots]
    everything = [y.swapaxes(0, 1) if lay.batch_first else y, h, *([c] if lay.kind == "lstm"
                                                                   else [])]
    if len(op.outputs) == 1 and len(everything) > 1:
        return [concat([v.reshape(-1) for v in everything])]
    return everything[:len(op.outputs)]


def batched(op: OpLike, x: Any) -> None:
    """Refuse an input that is not ``(T, B, in)`` / ``(B, T, in)`` (torch's unbatched input
    reaches an op only through a module call of an ``fx``-traced graph)."""
    if len(x.shape) != 3:
        raise _refuse(op, f"an input of shape {list(x.shape)} (unbatched)")


# ------------------------------------------------------------------------ the NumPy reference
def _act(name: str) -> Callable[[Array], Array]:
    return np.tanh if name == "tanh" else (lambda v: np.maximum(v, 0.0))


def _step(lay: Layout, cell: Cell, xw: Array, h: Array, c: Array) -> tuple[Array, Array]:
    """One step of one cell: ``xw`` is the step's input projection (with ``b_ih``)."""
    gh = h @ _f64(cell.w_hh).T + (0.0 if cell.b_hh is None else _f64(cell.b_hh))
    if lay.kind == "lstm":
        i, f, g, o = np.split(xw + gh, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        return (h if cell.w_hr is None else h @ _f64(cell.w_hr).T), c
    if lay.kind == "gru":
        xr, xz, xn = np.split(xw, 3, axis=-1)
        hr, hz, hn = np.split(gh, 3, axis=-1)
        r, z = sigmoid(xr + hr), sigmoid(xz + hz)
        if lay.linear_before_reset:
            n = np.tanh(xn + r * hn)
        else:  # ONNX's default: the reset gate scales the state before its product
            w_hn = _f64(cell.w_hh)[2 * lay.hidden:]
            b_hn = 0.0 if cell.b_hh is None else _f64(cell.b_hh)[2 * lay.hidden:]
            n = np.tanh(xn + (r * h) @ w_hn.T + b_hn)
        return (1.0 - z) * n + z * h, c
    return _act(lay.act)(xw + gh), c


def recurrent(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """lstm / gru / rnn (module docstring): every layer and direction step by step in
    float64."""
    lay = layout_of(op, len(a))
    x = a[0]
    batched(op, x)
    seq = _f64(x.swapaxes(0, 1) if lay.batch_first else x)
    t_len, b = seq.shape[0], seq.shape[1]
    h0, c0 = initial_states(lay, a)
    weights = cells(lay, a)
    hs, cs = [], []
    for layer in range(lay.layers):
        outs = []
        for d in range(lay.directions):
            k = layer * lay.directions + d
            cell = weights[k]
            h = np.zeros((b, lay.proj or lay.hidden)) if h0 is None else _f64(h0[k])
            c = np.zeros((b, lay.hidden)) if c0 is None else _f64(c0[k])
            xw = seq @ _f64(cell.w_ih).T + (0.0 if cell.b_ih is None else _f64(cell.b_ih))
            ys: list[Array] = [np.zeros(0)] * t_len
            backward = d == 1 or lay.reverse
            for t in (range(t_len - 1, -1, -1) if backward else range(t_len)):
                h, c = _step(lay, cell, xw[t], h, c)
                ys[t] = h
            outs.append(np.stack(ys))
            hs.append(h)
            cs.append(c)
        seq = np.concatenate(outs, axis=-1)
    dtype = _dtype(x)
    got = arrange_outputs(op, lay, seq, np.stack(hs), np.stack(cs), np.concatenate)
    return [np.ascontiguousarray(v).astype(dtype) for v in got]


__all__ = ["GATE_ORDERS", "Cell", "Layout", "arrange_outputs", "batched",
           "cells", "initial_states", "layout_of", "recurrent"]
