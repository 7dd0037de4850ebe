"""One entry per op kind: every fact the workbench keeps about a kind, in one table.

In the style of JAX's per-primitive rules, each known kind has a small frozen :class:`OpKind`
registered in :data:`OPS`, keyed by its canonical spelling.  The sets the rest of the package
tests ``op.kind in ...`` against (:data:`NO_TASK_KINDS`, the fusion patterns, the side-effect
kinds, the copy kinds of each use) are *derived* from the table by named predicates, so a new
kind is one entry here (plus its functions in :mod:`workbench.values.op_bindings` if it computes
something, and its GPU lowering and kernel if it runs on the GPU).

Categories (:data:`CATEGORIES`), one per kind:

* ``compute``: launches its own kernel(s) and is none of the below (conv2d, matmul, pools, ...);
* ``elementwise``: one output element from the same element of each input (broadcast included);
* ``reduction``: reduces along an axis (softmax, norms, global pools, ``reduce_*``);
* ``view``: shape metadata over its input (reshape, flatten, ...);
* ``copy``: moves bytes between devices or ranks (h2d, d2h, d2d, send, recv, allreduce, ...);
* ``state``: writes a parameter in place (assign, scatter, optimizer updates);
* ``io``: an I/O side effect (print, summaries, save);
* ``control``: control flow and barriers (while, case_of, join, device_sync).

Attributes: each kind declares the attribute names it reads (``OpKind.attrs``), all from one
vocabulary (:mod:`workbench.values.op_attrs`: ``kernel``, ``stride``, ``padding``, ``groups``,
``axis``, ``perm``, ``trans_b``, ``eps`` ...).  Every importer writes these names (ONNX's
``kernel_shape``/``strides``/``pads``/``group``, torch's call arguments and module configuration
are converted at import), the JSON and DOT readers rename synonyms and check types
(:func:`normalize_op_attrs`), and the references, torch forms and cost rules read only these.
:func:`attrs_of` lists a kind's attributes with what they mean.

What computes each kind is listed by kind in :mod:`workbench.values.op_bindings` (the NumPy
reference, the PyTorch form, the elementwise maps, the attribute names they read); the table
attaches those to its entries (``reference``, ``torch_form``, ``unary``, ``binary``, ``attrs``)
and gives a kind listed there with none its category's (views reshape, copies copy).  The
importers' facts (torch names, FLOPs per element, kernel-name fragments) are listed by kind in
:mod:`workbench.values.op_names` and attached the same way.

Kind names are matched case- and separator-insensitively: :func:`canonical_kind` maps
``ExpandDims``, ``FLATTEN_GRAD`` or ``MaxPool`` to the table's spelling, and
:class:`workbench.values.graph.Op` stores that spelling, so table lookups need no normalising.
Kinds the
table does not know are kept exactly as given.

>>> canonical_kind("ExpandDims"), canonical_kind("FLATTEN_GRAD"), canonical_kind("MaxPool")
('expand_dims', 'flatten_grad', 'maxpool')
>>> canonical_kind("MyCustomOp")
'MyCustomOp'
>>> OPS["relu"].category, OPS["relu"].fuse, "reshape" in NO_TASK_KINDS
('elementwise', 'elemwise', True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from workbench.values import op_bindings as bindings
from workbench.values import op_names, op_torch
from workbench.values import op_reference as ref
from workbench.values.op_attrs import ATTRIBUTES, normalize_attrs
from workbench.values.op_reference_recurrent import GATE_ORDERS

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
    kernel as this kind (:data:`KERNEL_KINDS`, tried in :data:`KERNEL_MATCH_ORDER`).

    ``reference``: the NumPy reference ``(op, inputs, shape_of) -> outputs``
    (:mod:`workbench.values.op_reference`; ``None``: no reference, e.g. ``fused``, which the
    executors
    evaluate member by member).  ``unary`` / ``binary``: the elementwise map of an elementwise
    kind (``unary`` doubles as a conv activation and an emulator code's meaning).
    ``torch_form``: the same function with PyTorch's kernels, ``(op, tensors, shape_of) ->
    tensors`` (:mod:`workbench.values.op_torch`, torch imported only when one runs); every kind with
    a ``reference`` has one (the torch executor, :mod:`workbench.executors.torch_exec`, runs them).

    ``window``: how a sliding-window kind's kernel is known (its attributes checked against the
    input, :mod:`workbench.values.attr_checks`): ``"weight"`` (input 1's spatial shape),
    ``"transposed"`` (the same, output larger than input), ``"attrs"`` (the attribute only).

    ``attrs``: the attribute names the kind reads (its references, torch form, cost and launch
    rules, GPU lowering), each a name of the vocabulary
    :data:`workbench.values.op_attrs.ATTRIBUTES` (which says what it means, its type and the
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
    reference: ref.Reference | None = None
    unary: ref.UnaryFn | None = None
    binary: Callable[[Any, Any], Any] | None = None
    torch_form: op_torch.TorchForm | None = None
    window: str | None = None
    attrs: tuple[str, ...] = ()
    recurrent: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        assert self.category in CATEGORIES, self
        assert self.fuse in (None, "elemwise", "broadcast", "reduce"), self
        assert self.side_effect in (None, "write", "io"), self
        assert self.window in (None, "weight", "transposed", "attrs"), self


def _entries() -> dict[str, OpKind]:
    out: dict[str, OpKind] = {}

    def add(category: str, names: str, **facts: object) -> None:
        for name in names.split():
            assert name not in out, f"op kind {name!r} registered twice"
            out[name] = OpKind(name, category, **facts)  # type: ignore[arg-type]

    # elementwise (fused by O1 as ELEMWISE); the builder's activations first, in their order
    add("elementwise", "relu sigmoid tanh gelu", fuse="elemwise", activation=True)
    add("elementwise", "add", fuse="elemwise", epilogue=True, launch_rule="n_ary_sum")
    add("elementwise", "mul", fuse="elemwise", epilogue=True)
    add("elementwise", "relu6 leaky_relu silu swish atan elu sub div neg abs exp log "
        "sqrt rsqrt square pow maximum minimum clip cast erf reciprocal sin cos",
        fuse="elemwise")
    # elementwise kinds the importers emit that O1 leaves alone
    add("elementwise", "hard_swish hard_sigmoid where mod floor ceil round sign not and or xor "
        "equal not_equal greater less greater_or_equal less_or_equal isnan thresholded_relu "
        "prelu selu celu softplus softsign masked_fill diff")
    # broadcast a per-channel operand (fused by O1 as BROADCAST)
    add("elementwise", "batchnorm", fuse="broadcast", epilogue=True,
        launch_rule="per_channel_norm")
    add("elementwise", "bias", fuse="broadcast", epilogue=True)
    add("elementwise", "bias_add scale broadcast_to", fuse="broadcast")
    # reductions
    add("reduction", "softmax log_softmax layernorm global_avgpool reduce_sum reduce_mean "
        "reduce_max reduce_min", fuse="reduce")
    add("reduction", "argmax max min mean global_maxpool groupnorm instancenorm")
    add("reduction", "reduce_prod reduce_l2 reduce_sum_square argmin cumsum weight_norm")
    # views
    add("view", "reshape flatten squeeze unsqueeze expand_dims view", no_task=True,
        shape_only=True)
    add("view", "flatten_grad reformat identity dropout", no_task=True)
    add("view", "identity_view", shape_only=True)
    add("view", "expand getitem split")  # move bytes (a broadcast copy, an item, the pieces)
    # copies and communication
    add("copy", "h2d d2h", engine_copy=True)
    add("copy", "d2d", engine_copy=True, within_device=True)
    add("copy", "copy memcpy")
    add("copy", "allreduce recv", communication=True)
    add("copy", "send", communication=True, side_effect="io")
    # state
    add("state", "assign assign_add assign_sub", side_effect="write", assigns=True)
    add("state", "scatter_update scatter_add scatter_sub scatter_nd_update apply_momentum "
        "apply_adam sgd_update update_state", side_effect="write")
    # I/O
    add("io", "print", side_effect="io", passthrough=True)
    add("io", "summary image_summary scalar_summary save", side_effect="io")
    # control flow and barriers
    add("control", "while case_of", subgraphs=True)
    add("control", "join device_sync")
    # compute (``op``: the generic kind of Graph.from_edges; ``fused``: an O1 fusion group)
    add("compute", "conv2d", gemm=True, launch_rule="convolution", window="weight")
    add("compute", "sepconv", gemm=True, launch_rule="separable_convolution", window="attrs")
    add("compute", "matmul", gemm=True, launch_rule="gemm")
    add("compute", "einsum", gemm=True, launch_rule="gemm")  # a two-operand contraction
    add("compute", "concat", launch_rule="copy_each_input")
    add("compute", "conv_transpose", window="transposed")
    add("compute", "maxpool avgpool", launch_rule="window", window="attrs")
    add("compute", "lrn transpose gather slice constant shape size fused op")
    add("compute", "index gather_elements roll")  # torch's x[:, idx], gather, roll
    add("compute", "attention", launch_rule="attention")  # one fused kernel (flash SDPA)
    # recurrent cells over a sequence: cuDNN's GEMMs and gate kernels, step by step
    for name, gates in GATE_ORDERS.items():
        add("compute", name, launch_rule="recurrent", recurrent=gates)
    # 1-D and 3-D convolutions: the same implicit GEMMs as conv2d, over one or three axes
    add("compute", "conv1d conv3d", gemm=True, launch_rule="convolution", window="weight")
    add("compute", "embedding stack contiguous clone pad resize tile trilu range "
        "depth_to_space space_to_depth")
    _bind_references(out)
    _declare_attrs(out)
    onnx = {"conv2d": ("Conv",), "matmul": ("Gemm", "MatMul"), "add": ("Sum",),
            "maxpool": ("MaxPool",), "avgpool": ("AveragePool",),
            "global_avgpool": ("GlobalAveragePool",), "global_maxpool": ("GlobalMaxPool",),
            "batchnorm": ("BatchNormalization",), "layernorm": ("LayerNormalization",),
            "instancenorm": ("InstanceNormalization",), "groupnorm": ("GroupNormalization",),
            "constant": ("ConstantOfShape",), "resize": ("Upsample",), "isnan": ("IsNaN",),
            "cumsum": ("CumSum",)}
    for name, types in onnx.items():
        out[name] = replace(out[name], onnx=types)
    return out


def _import_only() -> dict[str, OpKind]:
    """Kinds the importers emit that the rest of the workbench does not know: not in :data:`OPS`
    (so not in :data:`KNOWN_KINDS`; :func:`canonical_kind` keeps them as given and no derived
    kind set holds them), registered only for the importer facts (``torch``,
    ``flops_per_element``, ``kernel_names``).  Every kind an importer of a model (ONNX,
    ``from_torch``) emits for a computation with a torch form is in :data:`OPS` instead."""
    out: dict[str, OpKind] = {}
    for category, names in (
            ("elementwise", "elementwise"), ("compute", "memset sort transformer_layer"),
            ("copy", "collective"), ("reduction", "reduce")):
        for name in names.split():
            assert name not in out and name not in _KNOWN, f"op kind {name!r} registered twice"
            out[name] = OpKind(name, category)
    return out


def _importer_facts(entries: dict[str, OpKind]) -> None:
    """Attach the importers' facts (:mod:`workbench.values.op_names`: torch names, FLOPs per
    element, kernel-name fragments)."""
    for name, names in op_names.torch_names().items():
        entries[name] = replace(entries[name], torch=tuple(names.split()))
    for count, kinds in op_names.flops_per_element().items():
        for name in kinds.split():
            entries[name] = replace(entries[name], flops_per_element=count)
    for name, fragments in op_names.kernel_fragments().items():
        entries[name] = replace(entries[name], kernel_names=tuple(fragments.split()))


def _bind_references(out: dict[str, OpKind]) -> None:
    """Attach the NumPy references, elementwise maps and PyTorch forms the kinds are listed with
    (:mod:`workbench.values.op_bindings`); a view listed with none reshapes, and whatever is
    listed, an engine copy or pass-through I/O copies and the ``assign`` family assigns."""
    references, forms = bindings.references(), bindings.torch_forms()
    unary, binary = bindings.unary_maps(), bindings.binary_maps()
    def by_category(info: OpKind, listed: Any, family: Any) -> Any:
        """The listed function, or the family's ``view`` / ``copy`` / ``assign`` the kind's
        category implies (``family``: the NumPy references or the torch forms)."""
        if listed is None and info.category == "view":
            return family.view
        if info.engine_copy or info.passthrough:
            return family.copy
        if info.assigns:
            return family.assign
        return listed

    for name, info in out.items():
        out[name] = replace(info, reference=by_category(info, references.get(name), ref),
                            unary=unary.get(name), binary=binary.get(name),
                            torch_form=by_category(info, forms.get(name), op_torch))


def _declare_attrs(out: dict[str, OpKind]) -> None:
    """Attach the attribute names each kind reads (:func:`workbench.values.op_bindings
    .declared_attrs`, in the vocabulary of :mod:`workbench.values.op_attrs`)."""
    for name, names_read in bindings.declared_attrs().items():
        out[name] = replace(out[name], attrs=names_read)


_KNOWN = _entries()
_ALL = {**_KNOWN, **_import_only()}
_importer_facts(_ALL)
#: Every known op kind, by canonical name.
OPS: Mapping[str, OpKind] = {name: _ALL[name] for name in _KNOWN}
#: Kinds only the importers name (:func:`_import_only`): their entries hold importer facts.
IMPORT_ONLY: Mapping[str, OpKind] = {n: k for n, k in _ALL.items() if n not in _KNOWN}


def kinds_where(predicate: Callable[[OpKind], bool]) -> frozenset[str]:
    """The names of the kinds whose entry satisfies ``predicate``."""
    return frozenset(name for name, info in OPS.items() if predicate(info))


#: Every op kind the workbench knows, in its canonical spelling.
KNOWN_KINDS = frozenset(OPS)
#: Op kinds that hold sub-graphs (NNC's ``while`` and ``case..of``; see workbench.control).
CONTROL_KINDS = kinds_where(lambda k: k.subgraphs)
#: Barrier kinds a Schedule may realise its barriers with.
BARRIER_KINDS = tuple(n for n, k in OPS.items() if k.category == "control" and not k.subgraphs)
#: No-task (ref) op kinds: views of their input that launch no kernel and own no memory.
NO_TASK_KINDS = kinds_where(lambda k: k.no_task)
#: Kinds the GPU model costs as metadata only when they move no bytes.
SHAPE_ONLY_KINDS = kinds_where(lambda k: k.shape_only)
#: O1 fusion patterns.
ELEMWISE_KINDS = kinds_where(lambda k: k.fuse == "elemwise")
BROADCAST_KINDS = kinds_where(lambda k: k.fuse == "broadcast")
REDUCE_KINDS = kinds_where(lambda k: k.fuse == "reduce")
#: Side effects: kinds that write their first input in place, and I/O kinds.
WRITE_KINDS = kinds_where(lambda k: k.side_effect == "write")
IO_KINDS = kinds_where(lambda k: k.side_effect == "io")
#: The ``assign`` family: writes its target from one value.
ASSIGN_KINDS = kinds_where(lambda k: k.assigns)
#: Host/device copies, one copy engine per direction.
ENGINE_COPY_KINDS = kinds_where(lambda k: k.engine_copy)
#: Every kind that moves bytes rather than computing (copies and communication).
TRANSFER_KINDS = kinds_where(lambda k: k.category == "copy")
#: Transfers that leave a device (GPTO's communication PE): every transfer but ``d2d``.
OFF_DEVICE_TRANSFER_KINDS = kinds_where(lambda k: k.category == "copy" and not k.within_device)
#: Collectives and point-to-point transfers.
COMMUNICATION_KINDS = kinds_where(lambda k: k.communication)
#: Kinds the GPU lowers as a plain copy of their input: engine copies and pass-through I/O.
GPU_COPY_KINDS = kinds_where(lambda k: k.engine_copy or k.passthrough)
#: Kinds with a NumPy reference, and the elementwise maps of the unary and binary kinds.
REFERENCE_KINDS = kinds_where(lambda k: k.reference is not None)
#: Kinds with a PyTorch form (:mod:`workbench.values.op_torch`): the same set.
TORCH_FORM_KINDS = kinds_where(lambda k: k.torch_form is not None)
#: IOS units: GEMM-like heads, the affine epilogues a unit goes on after, and every tail (the
#: epilogues and the builder's activations).
GEMM_KINDS = kinds_where(lambda k: k.gemm)
EPILOGUE_KINDS = kinds_where(lambda k: k.epilogue)
UNIT_TAIL_KINDS = kinds_where(lambda k: k.epilogue or k.activation)
#: ONNX op type -> kind, where the kind is not the type's snake_case spelling.
ONNX_ALIASES: Mapping[str, str] = {t: n for n, k in _ALL.items() for t in k.onnx}
#: FLOPs per element of the builder's activations, in the builder's order.
ACTIVATION_FLOPS: Mapping[str, int] = {n: k.flops_per_element or 0 for n, k in OPS.items()
                                       if k.activation}
#: FLOPs per output element of each elementwise / normalisation kind (known or import-only).
FLOPS_PER_ELEMENT: Mapping[str, int] = {n: k.flops_per_element for n, k in _ALL.items()
                                        if k.flops_per_element is not None}
#: Recurrent kinds -> their gate count (4 for LSTM, 3 for GRU, 1 for RNN).
RECURRENT_GATES: Mapping[str, int] = {n: len(k.recurrent) for n, k in OPS.items() if k.recurrent}
#: torch module type / function / method / aten name -> kind (the torch.fx import's kinds).
TORCH_ALIASES: Mapping[str, str] = {t: n for n, k in _ALL.items() for t in k.torch}
#: The order kinds are tried in when a kernel name is matched against their ``kernel_names``
#: (first match wins).  Explicit because the table's order would not do: ``relu`` comes first
#: there, and ``cudnn::conv_relu``-style names must stay ``conv2d``; ``memcpy``/``memset`` must
#: beat ``conv``/``gemm`` in ``memcpy_...`` names; convolutions (``implicit_gemm``, CUTLASS
#: ``fprop``) and FBGEMM's kernels (``fbgemm`` holds ``gemm``) before ``matmul``; the catch-alls
#: ``reduce``, ``elementwise`` and ``fused`` (any other Triton kernel) come last.  Fragments are
#: from real profiles: the H200 traces of tests/data and HolisticTraceAnalysis's public A100 /
#: MI250 traces (under 1% of their kernels stay the generic ``kernel``).
KERNEL_MATCH_ORDER = ("memcpy", "memset", "collective", "conv2d", "embedding", "cast",
                      "transpose", "matmul", "batchnorm", "layernorm", "softmax", "maxpool",
                      "avgpool", "concat", "gather", "sort", "relu", "gelu", "sigmoid", "tanh",
                      "reduce", "elementwise", "fused")
assert set(KERNEL_MATCH_ORDER) == {n for n, k in _ALL.items() if k.kernel_names}
#: (kernel-name fragment, kind) pairs, first match wins (:func:`workbench.io.traces.pytorch_profile
#: .kernel_kind`).
KERNEL_KINDS: tuple[tuple[str, str], ...] = tuple(
    (fragment, name) for name in KERNEL_MATCH_ORDER for fragment in _ALL[name].kernel_names)
assert len(TORCH_ALIASES) == sum(len(k.torch) for k in _ALL.values()), "a torch name twice"


def kind_key(kind: str) -> str:
    """The matching key of a kind: lower case, without ``_``, ``-`` or spaces.  O(len(kind))."""
    return kind.lower().replace("_", "").replace("-", "").replace(" ", "")


_CANONICAL = {kind_key(k): k for k in KNOWN_KINDS}
assert len(_CANONICAL) == len(KNOWN_KINDS), "two known kinds share a matching key"


def canonical_kind(kind: str) -> str:
    """The canonical spelling of ``kind`` when it names a known kind, else ``kind`` unchanged."""
    if kind in KNOWN_KINDS:
        return kind
    return _CANONICAL.get(kind_key(kind), kind)


def attrs_of(kind: str) -> dict[str, str]:
    """The attributes ``kind`` reads, each with what it means (``{}`` for an unknown kind).

    >>> list(attrs_of("transpose").items())
    [('perm', 'transpose: output axis i is input axis perm[i] (default: reversed)')]
    """
    info = OPS.get(canonical_kind(kind))
    return {} if info is None else {a: ATTRIBUTES[a].meaning for a in info.attrs}


def normalize_op_attrs(kind: str, attrs: Mapping[str, Any], *, op: str = "?") -> dict[str, Any]:
    """``attrs`` of an op of ``kind`` in the vocabulary (:func:`workbench.values.op_attrs
    .normalize_attrs`: synonyms renamed, types checked); unknown kinds' attrs unchanged.
    O(attributes)."""
    info = OPS.get(canonical_kind(kind))
    if info is None:
        return dict(attrs)
    return normalize_attrs(info.name, info.attrs, attrs, op=op)


__all__ = [
    "ACTIVATION_FLOPS", "ASSIGN_KINDS", "BARRIER_KINDS", "BROADCAST_KINDS", "CATEGORIES",
    "COMMUNICATION_KINDS", "CONTROL_KINDS", "ELEMWISE_KINDS", "ENGINE_COPY_KINDS",
    "EPILOGUE_KINDS", "FLOPS_PER_ELEMENT", "GEMM_KINDS", "IMPORT_ONLY", "KERNEL_KINDS",
    "KERNEL_MATCH_ORDER", "RECURRENT_GATES", "TORCH_ALIASES", "TORCH_FORM_KINDS",
    "UNIT_TAIL_KINDS",
    "GPU_COPY_KINDS", "IO_KINDS", "KNOWN_KINDS", "NO_TASK_KINDS", "OFF_DEVICE_TRANSFER_KINDS",
    "ONNX_ALIASES",
    "OPS", "REDUCE_KINDS", "REFERENCE_KINDS", "SHAPE_ONLY_KINDS", "TRANSFER_KINDS",
    "WRITE_KINDS", "OpKind", "attrs_of", "canonical_kind", "kind_key", "kinds_where",
    "normalize_op_attrs",
]
