"""What the op table knows of one op kind (:class:`OpKind`), and :func:`kind`, the declaration
each family module writes its kinds with.

A family module (:mod:`workbench.ops.convolution`, :mod:`workbench.ops.elementwise`, ...)
declares each of its kinds once, every fact beside the others::

    kind("conv2d", "compute", gemm=True, launch_rule="convolution", window="weight",
         attrs="kernel stride padding dilation groups act pre_act bias cin cout",
         reference=partial(conv, unary=activation_of), torch_form=conv_torch,
         onnx="Conv", torch="Conv2d conv2d convolution", kernel_names="conv winograd ...")

Name lists (``attrs``, ``onnx``, ``torch``, ``kernel_names``) are written as one
space-separated string.  This module imports nothing of the families; the registry
(:mod:`workbench.ops.registry`) collects them.

>>> kind("relu", "elementwise", fuse="elemwise", torch="ReLU relu").torch
('ReLU', 'relu')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.ops.arrays import Reference, UnaryFn, identity
from workbench.ops.tensors import TorchForm

#: An ONNX attribute conversion (``OpKind.onnx_attrs``): ``(attrs, node) -> attributes to write``.
OnnxRule = Callable[[dict[str, Any], Any], dict[str, Any]]

#: A torch call conversion (``OpKind.torch_attrs``): ``(parameters by torch name, input shapes,
#: output shapes, output dtype name) -> attributes to write``.
TorchRule = Callable[[dict[str, Any], list[Any], list[Any], "str | None"], dict[str, Any]]

#: A shape-cost rule of the ONNX import (``OpKind.onnx_cost``; :data:`workbench.ops.costs.Rule`).
CostRule = Callable[[Any, Any, Any], Any]

#: The categories, one per kind (:class:`OpKind`).
CATEGORIES = ("compute", "elementwise", "reduction", "view", "copy", "state", "io", "control")


@dataclass(frozen=True, slots=True)
class OpKind:
    """What the workbench knows of one op kind.

    ``fuse``: the O1 fusion pattern (``"elemwise"``, ``"broadcast"`` or ``"reduce"``; ``None``:
    opaque).  ``no_task``: a view that launches no kernel and owns no memory (the no-task pass
    drops it, the memory planners alias it, the GPU lowering skips it).  ``shape_only``: costs
    no kernel on the GPU model when it moves no bytes.  ``engine_copy``: a host/device copy that
    runs on the copy engine of its direction (the kind is the direction); ``within_device``: a
    copy that stays in one device's memory (``d2d``).  ``communication``:
    a collective or point-to-point transfer (SOMAS lays its inputs and outputs out contiguously).
    ``side_effect``: ``"write"`` (writes its first input in place) or ``"io"`` (ordered through
    the virtual ``"io"`` state).  ``assigns``: writes its target wholesale from one value (the
    ``assign`` family the references and the GPU lowering compute).  ``passthrough``: its output
    is its input (``print``: the GPU lowers it as a copy).  ``subgraphs``: holds sub-graphs.
    ``activation``: a builder activation (fused into conv too; :data:`ACTIVATION_FLOPS`).
    ``flops_per_element``: FLOPs per output element of an elementwise or normalisation kind, as
    every importer and the builders count it, and of a recurrent kind's gates per hidden unit
    and step (``None``: not counted per element; the importers' cost rules read it through
    :data:`FLOPS_PER_ELEMENT`).  ``recurrent``: a recurrent cell's gates, as the positions of
    ONNX's gate blocks in torch's order (LSTM i o f c -> i f g o; GRU z r h -> r z n); its
    length is the gate count (:data:`RECURRENT_GATES`).
    ``gemm``: a GEMM-like kernel (conv1d/2d/3d, sepconv, matmul) that heads an IOS unit;
    ``epilogue``: a per-channel affine step a unit goes on after (batchnorm, bias, mul, add).
    ``launch_rule``: the GPU model's kernel rule for this kind (a name in
    :data:`workbench.simulator.cost_model.launches.LAUNCH_RULES`; ``None``: one generic kernel from
    its figures).
    ``onnx``: the ONNX op types that import as this kind when their snake_case spelling is not
    the kind's (``Conv`` -> ``conv2d``; ``LeakyRelu`` is ``leaky_relu`` by spelling alone).
    ``torch``: every torch ``nn.Module`` type name (``Conv2d``, capitalised) and function / method
    / aten op name (``conv2d``, ``add_``, ``view``; lower case) the torch.fx import maps to this
    kind (:data:`TORCH_ALIASES`), the kind's own spelling included when torch uses it; the cost
    formula of each name stays with the importer (:mod:`workbench.io.torch.fx`).
    ``kernel_names``: fragments of CUDA kernel names (cuDNN/cuBLAS/ATen) that mark a profiled
    kernel as this kind; ``kernel_rank``: the kind's place in the order kinds are tried in
    (first match wins; :data:`~workbench.ops.registry.KERNEL_MATCH_ORDER`).  The order is
    explicit because the table's would not do: ``cudnn::conv_relu``-style names must stay
    ``conv2d``; ``memcpy``/``memset`` must beat ``conv``/``gemm`` in ``memcpy_...`` names;
    convolutions (``implicit_gemm``, CUTLASS ``fprop``) and FBGEMM's kernels (``fbgemm`` holds
    ``gemm``) before ``matmul``; the catch-alls ``reduce``, ``elementwise`` and ``fused`` (any
    other Triton kernel) come last.  Fragments are from real profiles: the H200 traces of
    tests/data and HolisticTraceAnalysis's public A100 / MI250 traces (under 1% of their kernels
    stay the generic ``kernel``).

    ``reference``: the NumPy reference ``(op, inputs, shape_of) -> outputs``
    (:mod:`workbench.ops`; ``None``: no reference, e.g. ``fused``, which the
    executors
    evaluate member by member).  ``unary`` / ``binary``: the elementwise map of an elementwise
    kind (``unary`` doubles as a conv activation and an emulator code's meaning).
    ``torch_form``: the same function with PyTorch's kernels, ``(op, tensors, shape_of) ->
    tensors`` (:mod:`workbench.ops`, torch imported only when one runs); every kind with
    a ``reference`` has one (the torch executor, :mod:`workbench.executors.torch_exec`, runs them).

    ``window``: how a sliding-window kind's kernel is known (its attributes checked against the
    input, :mod:`workbench.values.attr_checks`): ``"weight"`` (input 1's spatial shape),
    ``"transposed"`` (the same, output larger than input), ``"attrs"`` (the attribute only).

    ``accumulate``: how an ``assign``-family kind combines the value with what its target holds
    (1 adds, -1 subtracts, 0 replaces; the executors keep the state).  ``weight_inputs``: the
    input positions that hold the kind's weights, and ``fan_in`` how a weight's fan-in is
    counted when the reference executor draws it scaled (``None``: elements per output channel;
    ``"features"``: input 0's last axis, a linear layer's; ``"depthwise"``: the kernel's area for
    the depthwise weight at position 1).  ``kernel_class``: the coarse kernel class the fidelity
    tables group measured ops by (``"conv"``, then split by kernel shape; ``"pool"``;
    ``"elementwise"``; ``None``: the kind itself).

    ``onnx_attrs``: the ONNX import's attribute conversion of each ONNX op type that imports as
    this kind and needs one, ``(type, rule)`` pairs (written as a dict in :func:`kind`): a rule
    ``(attrs, node) -> attrs`` writes the vocabulary's names from ONNX's (``kernel_shape`` ->
    ``kernel``, ONNX's defaults written out, constant inputs lifted); ``attrs`` are the node's
    attributes as the importer renamed them, ``node`` the importer's view of the node
    (:class:`workbench.io.onnx.attrs.Node`: shapes, constant inputs, opset).
    ``onnx_cost``: the ONNX import's shape-cost rule of each ONNX op type that imports as this
    kind and is not costed per element, ``(type, rule)`` pairs (a dict in :func:`kind`): a rule
    ``(input infos, output infos, attrs) -> ShapeCost`` (:mod:`workbench.ops.costs`; ``None``:
    the shapes are unknown).  A type the kind lists in ``onnx`` with no rule here is costed per
    element by ``flops_per_element``.
    ``torch_attrs``: the torch import's attribute conversion of each torch label (function,
    method, aten op or module type) that imports as this kind and needs one, ``(label, rule)``
    pairs (a dict in :func:`kind`, whose keys may list several labels): a rule ``(params,
    input shapes, output shapes, dtype) -> attrs`` writes torch's defaults and what a rename
    cannot say (``padding="same"``, ``transpose(x, 1, 2)`` -> ``perm``) in the vocabulary.
    ``attr_bounds``: the kind's exceptions to its attributes' bounds, ``(attribute, bounds)``
    pairs (:data:`workbench.ops.attrs.BOUNDS` names them; written as a dict in :func:`kind`).

    ``attrs``: the attribute names the kind reads (its references, torch form, cost and launch
    rules, GPU lowering), each a name of the vocabulary
    :data:`workbench.ops.attrs.ATTRIBUTES` (which says what it means, its type and the
    synonyms the readers rename).  Every importer writes these names and only these for what
    they mean (:func:`attrs_of` lists them with their meanings).
    """

    name: str
    category: str
    fuse: str | None = None
    no_task: bool = False
    shape_only: bool = False
    engine_copy: bool = False
    within_device: bool = False
    communication: bool = False
    side_effect: str | None = None
    assigns: bool = False
    passthrough: bool = False
    subgraphs: bool = False
    activation: bool = False
    flops_per_element: int | None = None
    gemm: bool = False
    epilogue: bool = False
    launch_rule: str | None = None
    onnx: tuple[str, ...] = ()
    torch: tuple[str, ...] = ()
    kernel_names: tuple[str, ...] = ()
    kernel_rank: int | None = None
    reference: Reference | None = None
    unary: UnaryFn | None = None
    binary: Callable[[Any, Any], Any] | None = None
    torch_form: TorchForm | None = None
    window: str | None = None
    attrs: tuple[str, ...] = ()
    recurrent: tuple[int, ...] = ()
    accumulate: int = 0
    weight_inputs: tuple[int, ...] = ()
    fan_in: str | None = None
    kernel_class: str | None = None
    attr_bounds: tuple[tuple[str, str], ...] = ()
    onnx_attrs: tuple[tuple[str, OnnxRule], ...] = ()
    onnx_cost: tuple[tuple[str, CostRule], ...] = ()
    torch_attrs: tuple[tuple[str, TorchRule], ...] = ()

    def __post_init__(self) -> None:
        assert self.category in CATEGORIES, self
        assert self.fuse in (None, "elemwise", "broadcast", "reduce"), self
        assert self.side_effect in (None, "write", "io"), self
        assert self.window in (None, "weight", "transposed", "attrs"), self
        assert self.accumulate in (-1, 0, 1), self
        assert self.fan_in in (None, "features", "depthwise"), self


_NAME_LISTS = ("attrs", "onnx", "torch", "kernel_names")

#: Each kind's elementwise map (``OpKind.unary``) by kind name, filled by the registry once it has
#: collected every family (:func:`unary_of` reads it; the families cannot import the registry).
UNARY_MAPS: dict[str, UnaryFn] = {}


def unary_of(name: str | None) -> UnaryFn:
    """The elementwise map of the kind ``name`` (a conv's ``act`` / ``pre_act``; ``None``:
    identity); KeyError if the table lists none for it."""
    return identity if name is None else UNARY_MAPS[name]


def kind(name: str, category: str, **facts: Any) -> OpKind:
    """One kind's entry: ``facts`` are :class:`OpKind`'s fields, the name lists (``attrs``,
    ``onnx``, ``torch``, ``kernel_names``) as space-separated strings.  The attribute names are
    checked against the vocabulary (:func:`workbench.ops.attrs.check_declared`)."""
    from workbench.ops.attrs import check_declared

    for field in ("attr_bounds", "onnx_attrs", "onnx_cost", "torch_attrs"):
        if isinstance(facts.get(field), dict):  # a key may name several: "max_pool2d MaxPool2d"
            facts[field] = tuple((name, value) for names, value in facts[field].items()
                                 for name in names.split())
    for field in _NAME_LISTS:
        if isinstance(facts.get(field), str):
            facts[field] = tuple(facts[field].split())
    check_declared(list(facts.get("attrs", ())))
    return OpKind(name, category, **facts)


__all__ = ["CATEGORIES", "UNARY_MAPS", "CostRule", "OnnxRule", "OpKind", "TorchRule", "kind",
           "unary_of"]
