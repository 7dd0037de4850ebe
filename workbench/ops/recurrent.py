"""Recurrent cells over a sequence: ``lstm``, ``gru`` and ``rnn`` (cuDNN's GEMMs and gate kernels,
step by step).

:func:`layout_of` reads the attributes and the input count into a :class:`Layout`,
:func:`cells` gathers each layer and direction's weights in torch's layout and gate order, and
:func:`initial_states` the states, so the torch forms and the NumPy references compute the same
function from ONNX's or torch's conventions.  :data:`GATE_ORDERS` gives the positions of ONNX's
gate blocks in torch's order (LSTM i o f c -> i f g o; GRU z r h -> r z n), declared as each
kind's ``recurrent`` fact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.errors import OptionError
from workbench.ops.arrays import Array, OpLike, ShapeOf, _dtype, _f64, sigmoid
from workbench.ops.attrs import flag
from workbench.ops.costs import Info, Rule, ShapeCost, gemm_blocks, total_bytes
from workbench.ops.kind import kind
from workbench.ops.readers import Shape
from workbench.ops.tensors import Tensor, _f, torch_module

# ------------------------------------------------------------------------ NumPy references


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

# ------------------------------------------------------------------------ torch forms


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


def recurrent_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
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


# ------------------------------------------------------------------------ ONNX import
def _onnx_recurrent(defaults: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The ONNX import's attribute conversion of a recurrent kind (its ``onnx_attrs``): ONNX's
    LSTM, GRU or RNN node, whose default ``activations`` per direction are ``defaults``, in the
    ``onnx`` convention: the slots of the inputs and outputs given (``""``
    ones left out), ``layout`` as ``batch_first``, the biases given when ``B`` is; activations
    other than the defaults are written to ``act`` for the forms to refuse (an RNN's one
    activation, ``Relu`` or ``Tanh``, is its ``act``)."""
    per = defaults.lower().split()  # ONNX spells them Sigmoid, Tanh, Relu

    def rule(a: dict[str, Any], node: Any) -> dict[str, Any]:
        acts = [str(v).lower() for v in a.pop("activations", None) or []]
        if len(per) == 1:  # RNN: its nonlinearity, one per direction
            act = acts[0] if acts and acts.count(acts[0]) == len(acts) else ",".join(acts)
        else:
            act = "" if acts in ([], per * (len(acts) // len(per))) else ",".join(acts)
        slots = [k for k, name in enumerate(node.inputs) if name]
        outputs = node.outputs or tuple("y" for _ in node.out_shapes)
        return {"convention": "onnx", "slots": slots,
                "out_slots": [k for k, name in enumerate(outputs) if name],
                "direction": str(a.get("direction") or "forward"), "layers": 1,
                "bias": 3 in slots, "batch_first": bool(a.pop("layout", 0)),
                "act": act or None,
                "linear_before_reset": bool(a.get("linear_before_reset") or False)}
    return rule


# ------------------------------------------------------------ torch import: call conversions


def _torch_recurrent(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
               dtype: str | None) -> dict[str, Any]:
    """``aten.lstm(x, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`` (and gru, rnn_tanh, rnn_relu) or the ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN``
    module: torch's input convention; a call's hidden size is its last state's (``c_n``'s
    for an LSTM, ``h_n``'s otherwise), its projection ``h_n``'s when that differs."""
    label = str(named.get("_label"))
    states = [s for s in outs[1:] if s is not None]
    hidden = named.get("hidden_size")
    if hidden is None and states:
        hidden = int(states[-1][-1])
    proj = named.get("proj_size")
    if proj is None and len(states) == 2 and states[0][-1] != states[1][-1]:
        proj = int(states[0][-1])
    bias = named.get("has_biases", named.get("bias", True))
    out = {"hidden_size": hidden, "layers": int(named.get("num_layers") or 1),
           "direction": "bidirectional" if named.get("bidirectional") else "forward",
           "batch_first": bool(named.get("batch_first") or False), "bias": bool(bias),
           "convention": "torch", "proj_size": proj or None}
    if label.startswith("rnn_"):
        out["act"] = label.removeprefix("rnn_")
    return out


# ------------------------------------------------------------------------ shapes and costs
@dataclass(frozen=True)
class RecurrentSizes:
    """The sizes of a recurrent op (LSTM, GRU, RNN) over a sequence: ``steps`` x ``batch``
    inputs of ``inputs`` features, ``hidden`` units with ``gates`` gates each, ``layers``
    stacked, ``directions`` (1, or 2 when bidirectional), an LSTM's ``proj`` (torch's
    ``proj_size``; 0: none)."""

    steps: int
    batch: int
    inputs: int
    hidden: int
    gates: int
    layers: int = 1
    directions: int = 1
    proj: int = 0

    @property
    def state(self) -> int:
        """The size of ``h`` (the projection's, when there is one)."""
        return self.proj or self.hidden

    def gemms(self) -> list[tuple[int, int, int, int]]:
        """``(count, m, n, k)`` of the matrix products cuDNN runs, per layer and direction:
        the input projection of every step at once (``T*B x G*H x inputs``, layer 1's input
        is the previous layer's output), then per step the recurrent product (``B x G*H x
        state``) and an LSTM's projection (``B x P x H``)."""
        out = []
        gh = self.gates * self.hidden
        for layer in range(self.layers):
            k = self.inputs if layer == 0 else self.directions * self.state
            for _ in range(self.directions):
                out += [(1, self.steps * self.batch, gh, k), (self.steps, self.batch, gh,
                                                               self.state)]
                if self.proj:
                    out.append((self.steps, self.batch, self.proj, self.hidden))
        return out

    @property
    def gemm_flops(self) -> float:
        """``2*m*n*k`` per product: ``2*T*B*in*G*H + T * 2*B*H*G*H`` per layer and direction
        (as ``FlopCounterMode`` counts the ``addmm``/``mm`` an unfused LSTM runs)."""
        return float(sum(2 * c * m * n * k for c, m, n, k in self.gemms()))

    @property
    def cells(self) -> int:
        """Hidden units updated over the run: ``T * B * H`` per layer and direction."""
        return self.steps * self.batch * self.hidden * self.layers * self.directions


def recurrent_sizes(kind: str, attrs: Mapping[str, Any], x: Sequence[int] | None
                    ) -> RecurrentSizes | None:
    """The :class:`RecurrentSizes` of a recurrent op of ``kind`` (``lstm``, ``gru``, ``rnn``)
    from its attributes (``hidden_size``, ``layers``, ``direction``, ``batch_first``,
    ``proj_size``) and its input's shape ``(T, B, in)`` (``(B, T, in)`` batch first, ``(T,
    in)`` unbatched); ``None`` when they are unknown."""
    hidden = attrs.get("hidden_size")
    if x is None or not 2 <= len(x) <= 3 or not isinstance(hidden, int) or hidden < 1 \
            or kind not in GATE_ORDERS:
        return None
    steps, batch = (x[0], 1) if len(x) == 2 else (x[1], x[0]) if attrs.get("batch_first") \
        else (x[0], x[1])
    return RecurrentSizes(int(steps), int(batch), int(x[-1]), hidden, len(GATE_ORDERS[kind]),
                          int(attrs.get("layers") or 1),
                          2 if attrs.get("direction") == "bidirectional" else 1,
                          int(attrs.get("proj_size") or 0))


def recurrent_cost(kind: str, attrs: Mapping[str, Any], ins: Sequence[Info],
                   outs: Sequence[Info]) -> ShapeCost | None:
    """A recurrent op as the work cuDNN does: its GEMMs (:meth:`RecurrentSizes.gemm_flops`)
    plus the gate arithmetic, the kind's ``flops_per_element`` per hidden unit and step
    (biases counted whether given or not; an RNN's ReLU as its tanh); reads its inputs and
    writes its outputs once (the gates' round trips through memory are the launch rule's);
    thread blocks: the input projection's tiles."""
    x = ins[0] if ins else None
    r = recurrent_sizes(kind, attrs, x.shape if x is not None else None)
    if r is None:
        return None
    flops = r.gemm_flops + _GATE_FLOPS[kind] * r.cells
    return ShapeCost(flops, total_bytes(ins), total_bytes(outs),
                     gemm_blocks(r.steps * r.batch, r.gates * r.hidden))


# -------------------------------------------------------------- ONNX import: cost rules


def _recurrent(kind: str) -> Rule:
    """LSTM / GRU / RNN: :func:`~workbench.ops.recurrent.recurrent_cost` of the node's
    vocabulary attributes (``hidden_size``, ``direction``, ``layout`` as ``batch_first``)."""
    def rule(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
        return recurrent_cost(kind, a, ins, outs)
    return rule


# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind("lstm", "compute", onnx_cost={"LSTM": _recurrent("lstm")}, flops_per_element=38,
         launch_rule="recurrent", recurrent=GATE_ORDERS["lstm"],
         attrs="hidden_size layers direction batch_first bias convention slots out_slots act "
               "cell_clip proj_size input_forget", reference=recurrent, torch_form=recurrent_torch,
         torch="LSTM lstm", torch_attrs={"lstm LSTM": _torch_recurrent},
         onnx_attrs={"LSTM": _onnx_recurrent("Sigmoid Tanh Tanh")}),
    kind("gru", "compute", onnx_cost={"GRU": _recurrent("gru")}, flops_per_element=27,
         launch_rule="recurrent", recurrent=GATE_ORDERS["gru"],
         attrs="hidden_size layers direction batch_first bias convention slots out_slots act "
               "cell_clip linear_before_reset", reference=recurrent, torch_form=recurrent_torch,
         torch="GRU gru", torch_attrs={"gru GRU": _torch_recurrent},
         onnx_attrs={"GRU": _onnx_recurrent("Sigmoid Tanh")}),
    kind("rnn", "compute", onnx_cost={"RNN": _recurrent("rnn")}, flops_per_element=8,
         launch_rule="recurrent", recurrent=GATE_ORDERS["rnn"],
         attrs="hidden_size layers direction batch_first bias convention slots out_slots act "
               "cell_clip", reference=recurrent, torch_form=recurrent_torch,
         torch="RNN rnn_tanh rnn_relu", torch_attrs={"rnn_tanh rnn_relu RNN": _torch_recurrent},
         onnx_attrs={"RNN": _onnx_recurrent("Tanh")}),
)

#: Each cell's gate FLOPs per hidden unit and step (its ``flops_per_element``), for
#: :func:`recurrent_cost`.
_GATE_FLOPS = {k.name: k.flops_per_element or 0 for k in KINDS}
