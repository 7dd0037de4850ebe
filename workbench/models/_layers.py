"""A small graph builder for DNN layers: tracks activation shapes and derives op costs from them.

:class:`GraphBuilder` emits one :class:`~workbench.values.graph.Op` per layer call and returns the
id of
the op's output tensor, so networks read like forward passes::

    b = GraphBuilder("tiny")
    x = b.input("input", (1, 3, 32, 32))
    y = b.conv(x, 16, 3, padding=1, act="relu", name="conv1")
    y = b.global_avgpool(y, name="pool")
    g = b.build()

Cost conventions (float32, :data:`ELEMENT_BYTES` = 4 bytes per element):

- ``flops`` counts a multiply-add as two FLOPs.  Convolutions and matmuls count only their
  multiply-adds (bias and fused activation are not counted); other ops count the simple per-element
  work each docstring states.
- ``bytes_read`` is every input tensor the op reads, parameters (weights, bias, norm scales)
  included; ``bytes_written`` is the output tensor.  Views (``reshape``, ``flatten``) move nothing.
- ``thread_blocks`` estimates the launch shape.  Convolutions and matmuls are treated as an implicit
  GEMM with 64×64 output tiles: ``ceil(M/64) * ceil(Cout/64)`` with ``M = N*Hout*Wout`` (matmul:
  ``batch * ceil(M/64) * ceil(N/64)`` for an ``M × N`` output).  Every other op is a grid-stride
  kernel of 256 threads handling 4 elements each: ``ceil(output_elements / 1024)``; at least 1.

Op ids are the ``name`` given to each call and must be unique; the op's output tensor is
``"<name>:out"`` and its parameters ``"<name>:weight"``, ``"<name>:bias"``, ``"<name>:params"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.errors import GraphError, OptionError
from workbench.ops import ACTIVATION_FLOPS as _ACTIVATION_FLOPS
from workbench.ops.costs import ELEMENTS_PER_BLOCK as ELEMENTS_PER_BLOCK  # re-exported
from workbench.ops.costs import GEMM_TILE as GEMM_TILE  # re-exported
from workbench.ops.costs import (
    ShapeCost,
    TensorInfo,
    conv_cost,
    copy_cost,
    elementwise_cost,
    global_pool_cost,
    window_cost,
)
from workbench.ops.costs import blocks as _blocks
from workbench.ops.costs import gemm_blocks as _gemm_blocks
from workbench.ops.costs import numel as numel  # re-exported
from workbench.values.graph import Graph, Op, Tensor

ELEMENT_BYTES = 4  # float32

#: Every op kind the builder emits.
OP_KINDS: tuple[str, ...] = (
    "conv2d", "sepconv", "batchnorm", "relu", "gelu", "sigmoid", "tanh", "add", "mul",
    "maxpool", "avgpool", "global_avgpool", "concat", "matmul", "softmax", "layernorm",
    "reshape", "flatten", "transpose",
)

#: FLOPs per output element of the elementwise activations (``gelu``: tanh approximation).
ACTIVATION_FLOPS: dict[str, int] = dict(_ACTIVATION_FLOPS)  # from workbench.ops.OPS

Shape = tuple[int, ...]
Pair = tuple[int, int]


def _pair(value: int | Sequence[int], what: str, name: str) -> Pair:
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if not isinstance(value, Sequence):
        raise GraphError(f"{name}: {what} must be an int or a pair of ints, got {value!r}")
    pair = tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair):
        raise GraphError(f"{name}: {what} must be an int or a pair of ints, got {value!r}")
    return (pair[0], pair[1])


def conv_output_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """Output length of a convolution or pool along one axis: ``floor((size + 2p - k) / s) + 1``
    (no dilation, no ceil mode); may be <= 0 when the input is too small."""
    return (size + 2 * padding - kernel) // stride + 1


class GraphBuilder:
    """Accumulates ops and tensors layer by layer; :meth:`build` returns the :class:`Graph`.

    Every layer method takes input tensor ids, a keyword ``name`` (the op id, unique) and returns
    the output tensor id; :meth:`shape` gives any tensor's shape.  Shapes of images are
    ``(N, C, H, W)``.  Each call is O(1) apart from the sizes of its arguments.
    """

    def __init__(self, name: str = "graph") -> None:
        self.name = name
        self._ops: list[Op] = []
        self._tensors: dict[str, Tensor] = {}
        self._op_ids: set[str] = set()

    # ------------------------------------------------------------------------------ basics
    def shape(self, tensor: str) -> Shape:
        """The shape of a tensor made by this builder."""
        try:
            return self._tensors[tensor].shape
        except KeyError:
            raise GraphError(f"unknown tensor {tensor!r} in builder {self.name!r}") from None

    def nbytes(self, tensor: str) -> int:
        """Size of a tensor in bytes."""
        return numel(self.shape(tensor)) * ELEMENT_BYTES

    @property
    def n_ops(self) -> int:
        return len(self._ops)

    def input(self, name: str, shape: Sequence[int]) -> str:
        """A graph input tensor (``role="input"``, no producer)."""
        return self._add_tensor(name, tuple(shape), role="input", producer=None)

    def parameter(self, name: str, shape: Sequence[int]) -> str:
        """A weight tensor (``role="parameter"``, no producer)."""
        return self._add_tensor(name, tuple(shape), role="parameter", producer=None)

    def _add_tensor(self, tid: str, shape: Shape, *, role: str, producer: str | None) -> str:
        if tid in self._tensors:
            raise GraphError(f"duplicate tensor id {tid!r} in builder {self.name!r}")
        if not shape or any(not isinstance(d, int) or isinstance(d, bool) or d < 1
                            for d in shape):
            raise GraphError(f"tensor {tid!r}: shape must be positive ints, got {shape!r}")
        self._tensors[tid] = Tensor(tid, numel(shape) * ELEMENT_BYTES, producer=producer,
                                    role=role, shape=shape)
        return tid

    def _emit(self, name: str, kind: str, inputs: Sequence[str], out_shape: Shape, *,
              flops: float, bytes_read: int | None = None, bytes_written: int | None = None,
              thread_blocks: int | None = None, attrs: dict[str, Any] | None = None) -> str:
        """Append one op with one output tensor ``<name>:out``; defaults: reads all inputs, writes
        the output, ``ceil(out_elements / 1024)`` thread blocks."""
        if not isinstance(name, str) or not name:
            raise GraphError(f"{kind} op needs a non-empty name, got {name!r}")
        if name in self._op_ids:
            raise GraphError(f"duplicate op id {name!r} in builder {self.name!r}")
        for t in inputs:
            self.shape(t)  # unknown tensor -> GraphError
        out = self._add_tensor(f"{name}:out", tuple(out_shape), role="activation", producer=name)
        if bytes_read is None:
            bytes_read = sum(self.nbytes(t) for t in inputs)
        if bytes_written is None:
            bytes_written = self.nbytes(out)
        if thread_blocks is None:
            thread_blocks = _blocks(numel(out_shape))
        self._op_ids.add(name)
        self._ops.append(Op(name, kind=kind, device="gpu", flops=float(flops),
                            bytes_read=int(bytes_read), bytes_written=int(bytes_written),
                            inputs=tuple(inputs), outputs=(out,), thread_blocks=thread_blocks,
                            attrs=attrs or {}))
        return out

    def _image(self, x: str, name: str) -> tuple[int, int, int, int]:
        shape = self.shape(x)
        if len(shape) != 4:
            raise GraphError(f"{name}: expects an (N, C, H, W) input, got shape {shape}")
        return shape[0], shape[1], shape[2], shape[3]

    def _window(self, name: str, h: int, w: int, k: Pair, s: Pair, p: Pair) -> Pair:
        if min(k) < 1 or min(s) < 1 or min(p) < 0:
            raise GraphError(f"{name}: kernel and stride must be >= 1 and padding >= 0, "
                             f"got kernel={k} stride={s} padding={p}")
        ho, wo = conv_output_size(h, k[0], s[0], p[0]), conv_output_size(w, k[1], s[1], p[1])
        if ho < 1 or wo < 1:
            raise GraphError(f"{name}: input {h}x{w} is too small for kernel {k[0]}x{k[1]} "
                             f"stride {s[0]}x{s[1]} padding {p[0]}x{p[1]}")
        return ho, wo

    # ------------------------------------------------------------------------------ convolutions
    def conv(self, x: str, cout: int, k: int | Sequence[int], *, stride: int | Sequence[int] = 1,
             padding: int | Sequence[int] = 0, groups: int = 1, bias: bool = True,
             act: str | None = None, pre_act: str | None = None, name: str) -> str:
        """2-D convolution (kind ``conv2d``), optionally with a fused activation ``act`` after it
        and/or ``pre_act`` before it (IOS's ``ReluConv`` unit is ``pre_act="relu"``).

        ``k``, ``stride`` and ``padding`` are ints or ``(h, w)`` pairs (1×7 kernels work);
        ``Hout = floor((H + 2p - k) / s) + 1``.
        FLOPs = ``2 * N*Cout*Hout*Wout * (Cin/groups)*kh*kw`` (multiply-adds × 2; bias and ``act``
        not counted; a ``pre_act`` adds its per-element FLOPs on the input).  Reads input +
        weights ``(Cout, Cin/groups, kh, kw)`` (+ bias ``(Cout,)``), writes the output; a
        ``pre_act`` adds one more write and read of the input-sized tensor.  Thread blocks:
        implicit GEMM, ``ceil(N*Hout*Wout / 64) * ceil(Cout / 64)`` (with a ``pre_act``, at
        least its elementwise grid).
        """
        n, cin, h, w = self._image(x, name)
        kk, ss, pp = _pair(k, "kernel", name), _pair(stride, "stride", name), _pair(
            padding, "padding", name)
        for a in (act, pre_act):
            if a not in (None, *ACTIVATION_FLOPS):
                raise GraphError(f"{name}: unknown activation {a!r} "
                                 f"(known: None, {', '.join(ACTIVATION_FLOPS)})")
        if cout < 1 or groups < 1 or cin % groups or cout % groups:
            raise GraphError(f"{name}: groups={groups} must divide cin={cin} and cout={cout}")
        ho, wo = self._window(name, h, w, kk, ss, pp)
        weight = self.parameter(f"{name}:weight", (cout, cin // groups, kk[0], kk[1]))
        inputs = [x, weight]
        if bias:
            inputs.append(self.parameter(f"{name}:bias", (cout,)))
        macs = n * cout * ho * wo * (cin // groups) * kk[0] * kk[1]
        flops = 2 * macs
        blocks = _gemm_blocks(n * ho * wo, cout)
        bytes_read = sum(self.nbytes(t) for t in inputs)
        bytes_written = n * cout * ho * wo * ELEMENT_BYTES
        if pre_act is not None:
            in_elems = n * cin * h * w
            flops += ACTIVATION_FLOPS[pre_act] * in_elems
            blocks = max(blocks, _blocks(in_elems))
            bytes_read += in_elems * ELEMENT_BYTES
            bytes_written += in_elems * ELEMENT_BYTES
        attrs = {"kernel": kk, "stride": ss, "padding": pp, "cin": cin, "cout": cout,
                 "groups": groups, "bias": bias, "act": act, "pre_act": pre_act}
        return self._emit(name, "conv2d", inputs, (n, cout, ho, wo), flops=flops,
                          bytes_read=bytes_read, bytes_written=bytes_written,
                          thread_blocks=blocks, attrs=attrs)

    def sepconv(self, x: str, cout: int, k: int, *, stride: int = 1, pre_act: str | None = "relu",
                bias: bool = False, name: str) -> str:
        """ReLU → depthwise k×k (padding ``k//2``) → pointwise 1×1, as ONE op (kind ``sepconv``).

        This is IOS's ``ReluSepConv`` schedulable unit (its kernels run back to back on one
        stream).  Costs are the sum of the three layers: FLOPs = input elements (ReLU)
        + ``2*N*Cin*Hout*Wout*k*k`` (depthwise) + ``2*N*Cout*Hout*Wout*Cin`` (pointwise); bytes
        include the two intermediate tensors (written then read back).  Thread blocks: the widest
        of the three kernels.  Parameters: ``<name>:dw_weight`` and ``<name>:pw_weight``, and with
        ``bias`` (IOS's convolutions all have one) ``<name>:dw_bias`` and ``<name>:pw_bias``.
        """
        n, cin, h, w = self._image(x, name)
        if pre_act not in (None, *ACTIVATION_FLOPS):
            raise GraphError(f"{name}: unknown activation {pre_act!r}")
        pad = k // 2
        ho, wo = self._window(name, h, w, (k, k), (stride, stride), (pad, pad))
        dw = self.parameter(f"{name}:dw_weight", (cin, 1, k, k))
        pw = self.parameter(f"{name}:pw_weight", (cout, cin, 1, 1))
        biases = [self.parameter(f"{name}:dw_bias", (cin,)),
                  self.parameter(f"{name}:pw_bias", (cout,))] if bias else []
        in_bytes = self.nbytes(x)
        mid_bytes = n * cin * ho * wo * ELEMENT_BYTES
        out_elems = n * cout * ho * wo
        act_flops = ACTIVATION_FLOPS[pre_act] * numel(self.shape(x)) if pre_act else 0
        flops = act_flops + 2 * n * cin * ho * wo * k * k + 2 * out_elems * cin
        act_bytes = in_bytes if pre_act else 0  # relu: reads x, writes relu(x), read by dw
        bytes_read = in_bytes + act_bytes + self.nbytes(dw) + mid_bytes + self.nbytes(pw) + sum(
            self.nbytes(t) for t in biases)
        bytes_written = act_bytes + mid_bytes + out_elems * ELEMENT_BYTES
        blocks = max(_blocks(numel(self.shape(x))), _gemm_blocks(n * ho * wo, cin),
                     _gemm_blocks(n * ho * wo, cout))
        attrs = {"kernel": (k, k), "stride": (stride, stride), "padding": (pad, pad),
                 "cin": cin, "cout": cout, "groups": cin, "pre_act": pre_act, "bias": bias}
        return self._emit(name, "sepconv", [x, dw, pw, *biases], (n, cout, ho, wo), flops=flops,
                          bytes_read=bytes_read, bytes_written=bytes_written,
                          thread_blocks=blocks, attrs=attrs)

    # ------------------------------------------------------------------------------ pools
    def _pool(self, x: str, pool: str, k: int | Sequence[int], stride: int | Sequence[int] | None,
              padding: int | Sequence[int], name: str) -> str:
        n, c, h, w = self._image(x, name)
        kk = _pair(k, "kernel", name)
        ss = kk if stride is None else _pair(stride, "stride", name)
        pp = _pair(padding, "padding", name)
        ho, wo = self._window(name, h, w, kk, ss, pp)
        attrs: dict[str, Any] = {"pool": pool, "kernel": kk, "stride": ss, "padding": pp}
        if pool == "avg":
            attrs["count_include_pad"] = True
        return self._emit(name, f"{pool}pool", [x], (n, c, ho, wo),
                          flops=n * c * ho * wo * kk[0] * kk[1], attrs=attrs)

    def maxpool(self, x: str, k: int | Sequence[int], *, stride: int | Sequence[int] | None = None,
                padding: int | Sequence[int] = 0, name: str) -> str:
        """Max pool (kind ``maxpool``); output size as :meth:`conv` (no ceil mode); stride
        defaults to the kernel.  FLOPs = one compare per window element per output element."""
        return self._pool(x, "max", k, stride, padding, name)

    def avgpool(self, x: str, k: int | Sequence[int], *, stride: int | Sequence[int] | None = None,
                padding: int | Sequence[int] = 0, name: str) -> str:
        """Average pool (kind ``avgpool``, padding counted in the divisor as in PyTorch's default);
        FLOPs = one add per window element per output element."""
        return self._pool(x, "avg", k, stride, padding, name)

    def global_avgpool(self, x: str, *, name: str) -> str:
        """Mean over H and W (kind ``global_avgpool``) → ``(N, C, 1, 1)``; FLOPs = input
        elements."""
        n, c, h, w = self._image(x, name)
        return self._emit(name, "global_avgpool", [x], (n, c, 1, 1), flops=n * c * h * w,
                          thread_blocks=_blocks(n * c * h * w),
                          attrs={"pool": "avg", "kernel": (h, w)})

    # ------------------------------------------------------------------------------ elementwise
    def elementwise(self, kind: str, inputs: Sequence[str], *, flops_per_element: float = 1.0,
                    name: str, attrs: dict[str, Any] | None = None) -> str:
        """A generic elementwise op over same-shaped inputs (relu, add, mul, ...).

        FLOPs = ``flops_per_element * elements * max(1, k - 1)`` for ``k`` inputs (a unary op
        counts once, an ``add`` of ``k`` tensors ``k - 1`` times).
        """
        if not inputs:
            raise GraphError(f"{name}: {kind} needs at least one input")
        shape = self.shape(inputs[0])
        for t in inputs[1:]:
            if self.shape(t) != shape:
                raise GraphError(f"{name}: {kind} inputs have different shapes "
                                 f"{shape} and {self.shape(t)}")
        count = max(1, len(inputs) - 1)
        return self._emit(name, kind, inputs, shape,
                          flops=flops_per_element * count * numel(shape), attrs=attrs)

    def activation(self, x: str, kind: str, *, name: str) -> str:
        """Unary activation (``relu``, ``gelu``, ``sigmoid``, ``tanh``); FLOPs per element from
        :data:`ACTIVATION_FLOPS` (gelu: 8, tanh approximation)."""
        if kind not in ACTIVATION_FLOPS:
            raise GraphError(f"{name}: unknown activation {kind!r} "
                             f"(known: {', '.join(ACTIVATION_FLOPS)})")
        attrs = {"approximate": "tanh"} if kind == "gelu" else None
        return self.elementwise(kind, [x], flops_per_element=ACTIVATION_FLOPS[kind], name=name,
                                attrs=attrs)

    def relu(self, x: str, *, name: str) -> str:
        """ReLU (kind ``relu``): 1 FLOP per element, reads and writes the tensor once."""
        return self.activation(x, "relu", name=name)

    def gelu(self, x: str, *, name: str) -> str:
        """GELU (kind ``gelu``, tanh approximation): 8 FLOPs per element."""
        return self.activation(x, "gelu", name=name)

    def add(self, a: str, b: str, *more: str, name: str) -> str:
        """Elementwise sum of two or more same-shaped tensors (kind ``add``), ``k-1`` FLOPs per
        element for ``k`` inputs."""
        return self.elementwise("add", [a, b, *more], name=name)

    def mul(self, a: str, b: str, *, name: str) -> str:
        """Elementwise product (kind ``mul``), 1 FLOP per element."""
        return self.elementwise("mul", [a, b], name=name)

    def batchnorm(self, x: str, *, eps: float = 1e-3, name: str) -> str:
        """Inference batch norm over channel axis 1 (kind ``batchnorm``): ``y = x*a + b`` with
        folded statistics, 2 FLOPs per element; reads ``<name>:params`` (gamma, beta, mean, var:
        ``4*C`` floats)."""
        shape = self.shape(x)
        if len(shape) < 2:
            raise GraphError(f"{name}: batchnorm needs a channel axis, got shape {shape}")
        params = self.parameter(f"{name}:params", (4, shape[1]))
        return self._emit(name, "batchnorm", [x, params], shape, flops=2 * numel(shape),
                          attrs={"eps": eps, "axis": 1})

    def layernorm(self, x: str, *, eps: float = 1e-5, name: str) -> str:
        """Layer norm over the last axis (kind ``layernorm``): 8 FLOPs per element (mean,
        variance, normalise, scale, shift); reads ``<name>:params`` (gamma, beta: ``2*D``)."""
        shape = self.shape(x)
        params = self.parameter(f"{name}:params", (2, shape[-1]))
        return self._emit(name, "layernorm", [x, params], shape, flops=8 * numel(shape),
                          attrs={"eps": eps, "axis": -1})

    def softmax(self, x: str, *, axis: int = -1, scale: float = 1.0, name: str) -> str:
        """Softmax along ``axis`` of ``scale * x`` (kind ``softmax``): 5 FLOPs per element
        (scale/max, subtract, exp, sum, divide)."""
        shape = self.shape(x)
        if not -len(shape) <= axis < len(shape):
            raise GraphError(f"{name}: softmax axis {axis} out of range for shape {shape}")
        return self._emit(name, "softmax", [x], shape, flops=5 * numel(shape),
                          attrs={"axis": axis, "scale": scale})

    # ------------------------------------------------------------------------------ structure
    def concat(self, xs: Sequence[str], *, axis: int = 1, name: str) -> str:
        """Concatenate along ``axis`` (kind ``concat``): no FLOPs, reads every input once and
        writes the output."""
        if not xs:
            raise GraphError(f"{name}: concat needs at least one input")
        shapes = [self.shape(t) for t in xs]
        rank = len(shapes[0])
        ax = axis % rank if -rank <= axis < rank else None
        if ax is None:
            raise GraphError(f"{name}: concat axis {axis} out of range for rank {rank}")
        for s in shapes[1:]:
            if len(s) != rank or any(s[i] != shapes[0][i] for i in range(rank) if i != ax):
                raise GraphError(f"{name}: concat inputs {shapes[0]} and {s} differ off axis "
                                 f"{axis}")
        out = list(shapes[0])
        out[ax] = sum(s[ax] for s in shapes)
        return self._emit(name, "concat", list(xs), tuple(out), flops=0, attrs={"axis": axis})

    def _view(self, x: str, new: Shape, kind: str, attrs: dict[str, Any], name: str) -> str:
        src = self.shape(x)
        if numel(new) != numel(src):
            raise GraphError(f"{name}: cannot reshape {src} ({numel(src)} elements) to {new}")
        return self._emit(name, kind, [x], new, flops=0, bytes_read=0, bytes_written=0,
                          thread_blocks=1, attrs={**attrs, "shape": new, "view": True})

    def reshape(self, x: str, shape: Sequence[int], *, name: str) -> str:
        """A view with a new shape (kind ``reshape``): no FLOPs and no bytes moved.  The output
        tensor still has its full ``size_bytes`` (the graph model has no aliasing);
        ``attrs["view"]`` is True."""
        return self._view(x, tuple(shape), "reshape", {}, name)

    def flatten(self, x: str, *, start_dim: int = 1, name: str) -> str:
        """Flatten the axes from ``start_dim`` on (kind ``flatten``), a view like
        :meth:`reshape`."""
        src = self.shape(x)
        new = (*src[:start_dim], numel(src[start_dim:]))
        return self._view(x, new, "flatten", {"start_dim": start_dim}, name)

    def transpose(self, x: str, perm: Sequence[int], *, name: str) -> str:
        """Permute axes (kind ``transpose``) into a contiguous copy: no FLOPs, reads and writes the
        tensor once."""
        src = self.shape(x)
        p = tuple(perm)
        if sorted(p) != list(range(len(src))):
            raise GraphError(f"{name}: {p} is not a permutation of the axes of {src}")
        return self._emit(name, "transpose", [x], tuple(src[i] for i in p), flops=0,
                          attrs={"perm": p})

    # ------------------------------------------------------------------------------ matmuls
    def matmul(self, a: str, b: str, *, name: str) -> str:
        """Batched matmul (kind ``matmul``): ``(..., M, K) @ (..., K, N) -> (..., M, N)``; the
        leading axes must be equal (no broadcasting).  FLOPs = ``2 * batch*M*K*N``; thread blocks
        ``batch * ceil(M/64) * ceil(N/64)``."""
        sa, sb = self.shape(a), self.shape(b)
        if len(sa) < 2 or len(sa) != len(sb) or sa[:-2] != sb[:-2] or sa[-1] != sb[-2]:
            raise GraphError(f"{name}: cannot multiply shapes {sa} and {sb}")
        batch, m, k, n = numel(sa[:-2]), sa[-2], sa[-1], sb[-1]
        return self._emit(name, "matmul", [a, b], (*sa[:-1], n), flops=2 * batch * m * k * n,
                          thread_blocks=_gemm_blocks(m, n, batch),
                          attrs={"m": m, "k": k, "n": n, "batch": batch, "bias": False,
                                 "weight": False})

    def linear(self, x: str, out_features: int, *, bias: bool = True, name: str) -> str:
        """Fully connected layer ``x @ W (+ b)`` over the last axis, emitted as kind ``matmul``
        whose second input is the parameter ``<name>:weight`` ``(K, N)`` (third: ``<name>:bias``).
        FLOPs = ``2*M*K*N`` with ``M`` = product of the leading axes (bias not counted)."""
        sx = self.shape(x)
        k = sx[-1]
        if out_features < 1:
            raise GraphError(f"{name}: out_features must be >= 1, got {out_features}")
        m = numel(sx[:-1])
        inputs = [x, self.parameter(f"{name}:weight", (k, out_features))]
        if bias:
            inputs.append(self.parameter(f"{name}:bias", (out_features,)))
        return self._emit(name, "matmul", inputs, (*sx[:-1], out_features),
                          flops=2 * m * k * out_features,
                          thread_blocks=_gemm_blocks(m, out_features),
                          attrs={"m": m, "k": k, "n": out_features, "batch": 1, "bias": bias,
                                 "weight": True})

    # ------------------------------------------------------------------------------ result
    def build(self, *, outputs: Sequence[str] | None = None) -> Graph:
        """The :class:`Graph` of everything emitted so far (O(V + E)).  ``outputs`` (default:
        produced tensors that nothing reads) get ``role="output"``."""
        consumed = {t for op in self._ops for t in op.inputs}
        if outputs is None:
            outs = [t for op in self._ops for t in op.outputs if t not in consumed]
        else:
            outs = list(outputs)
            for t in outs:
                self.shape(t)
        tensors = dict(self._tensors)
        for t in outs:
            old = tensors[t]
            tensors[t] = Tensor(old.id, old.size_bytes, producer=old.producer, role="output",
                                shape=old.shape, dtype=old.dtype)
        return Graph(self._ops, tensors.values(), outputs=outs, name=self.name)


def shape_cost(kind: str, attrs: Mapping[str, Any], ins: list[TensorInfo],
          outs: list[TensorInfo]) -> ShapeCost:
    """FLOPs and bytes of one op of ``kind`` from its shapes, by the builders' rules (the kinds
    the H200 measurements hold: :mod:`workbench.simulator.fidelity.measured` builds their graphs
    with it); OptionError for another kind or missing shapes."""
    y = outs[0]
    if kind == "conv2d":
        cost = conv_cost(ins[0], ins[1], y, ins, outs)  # the builders count no bias FLOPs
    elif kind in ("maxpool", "avgpool"):
        kh, kw = attrs["kernel"]
        cost = window_cost(y, kh * kw, ins, outs)
    elif kind == "global_avgpool":
        cost = global_pool_cost(ins[0], ins, outs)
    elif kind == "concat":
        cost = copy_cost(y, ins, outs)
    elif kind == "batchnorm":
        cost = elementwise_cost(y, ins, outs, per_element=2)
    elif kind == "add":
        cost = elementwise_cost(y, ins, outs, count=len(ins) - 1)
    elif kind == "relu":
        cost = elementwise_cost(y, ins, outs)
    else:
        raise OptionError(f"measured graph: op kind {kind!r} has no cost rule here")
    if cost is None:
        raise OptionError(f"measured graph: op of kind {kind!r} lacks shapes")
    return cost
