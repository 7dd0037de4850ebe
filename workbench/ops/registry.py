"""The op table: every family's kinds collected into :data:`OPS`, and the kind sets derived
from it.

Each family module (:data:`FAMILIES`) declares its kinds with every fact beside the others
(:func:`workbench.ops.kind.kind`); this module only collects them, in the families' order, gives
a kind with no NumPy reference or torch form its category's (views reshape, engine copies and
pass-through I/O copy, the ``assign`` family assigns), and derives the sets the rest of the
package tests ``op.kind in ...`` against by named predicates (:func:`kinds_where`), so it names no
kind itself.  Kinds only the importers name (a family's ``IMPORTED``) are in
:data:`IMPORT_ONLY`, not in :data:`OPS`.

Kind names are matched case- and separator-insensitively: :func:`canonical_kind` maps
``ExpandDims``, ``FLATTEN_GRAD`` or ``MaxPool`` to the table's spelling, and
:class:`workbench.values.graph.Op` stores that spelling, so table lookups need no normalising.
Kinds the table does not know are kept exactly as given.

>>> canonical_kind("ExpandDims"), canonical_kind("FLATTEN_GRAD"), canonical_kind("MaxPool")
('expand_dims', 'flatten_grad', 'maxpool')
>>> canonical_kind("MyCustomOp")
'MyCustomOp'
>>> OPS["relu"].category, OPS["relu"].fuse, "reshape" in NO_TASK_KINDS
('elementwise', 'elemwise', True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from workbench.ops import (
    control,
    convolution,
    copies,
    elementwise,
    generic,
    indexing,
    matmul,
    normalization,
    recurrent,
    reduction,
    shapes,
    state,
)
from workbench.ops.attrs import ATTRIBUTES, KIND_BOUNDS, normalize_attrs
from workbench.ops.kind import CATEGORIES, UNARY_MAPS, CostRule, OnnxRule, OpKind, TorchRule

#: The family modules, in the order their kinds enter :data:`OPS`.
FAMILIES = (elementwise, normalization, reduction, shapes, indexing, copies, state, control,
            convolution, matmul, recurrent, generic)


def _category_default(info: OpKind) -> OpKind:
    """``info`` with its category's reference and torch form: a view that lists none reshapes;
    an engine copy or pass-through I/O copies; the ``assign`` family assigns."""
    def by_category(listed: Any, view: Any, copy: Any, assign: Any) -> Any:
        if listed is None and info.category == "view":
            return view
        if info.engine_copy or info.passthrough:
            return copy
        if info.assigns:
            return assign
        return listed

    return replace(info,
                   reference=by_category(info.reference, shapes.view, copies.copy, state.assign),
                   torch_form=by_category(info.torch_form, shapes.view_torch, copies.copy_torch,
                                          state.assign_torch))


def _collect(tables: tuple[str, ...]) -> dict[str, OpKind]:
    out: dict[str, OpKind] = {}
    for family in FAMILIES:
        for table in tables:
            for info in getattr(family, table, ()):
                assert info.name not in out, f"op kind {info.name!r} declared twice"
                out[info.name] = _category_default(info)
    return out


_KNOWN = _collect(("KINDS",))
_ALL = {**_KNOWN, **_collect(("IMPORTED",))}
assert len(_ALL) == len(_KNOWN) + len(_collect(("IMPORTED",))), "a kind declared twice"
#: Every known op kind, by canonical name.
OPS: Mapping[str, OpKind] = _KNOWN
#: Kinds only the importers name (a family's ``IMPORTED``): their entries hold importer facts.
IMPORT_ONLY: Mapping[str, OpKind] = {n: k for n, k in _ALL.items() if n not in _KNOWN}
UNARY_MAPS.update({n: k.unary for n, k in OPS.items() if k.unary is not None})
KIND_BOUNDS.update({(n, attr): bounds for n, k in OPS.items() for attr, bounds in k.attr_bounds})


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
#: Kinds with a PyTorch form (:mod:`workbench.ops`): the same set.
TORCH_FORM_KINDS = kinds_where(lambda k: k.torch_form is not None)
#: IOS units: GEMM-like heads, the affine epilogues a unit goes on after, and every tail (the
#: epilogues and the builder's activations).
GEMM_KINDS = kinds_where(lambda k: k.gemm)
EPILOGUE_KINDS = kinds_where(lambda k: k.epilogue)
UNIT_TAIL_KINDS = kinds_where(lambda k: k.epilogue or k.activation)
#: ONNX op type -> its attribute conversion (the kinds' ``onnx_attrs``; the ONNX import applies
#: it after renaming the node's attributes into the vocabulary).
ONNX_CONVERSIONS: Mapping[str, OnnxRule] = {t: rule for k in _ALL.values()
                                            for t, rule in k.onnx_attrs}
assert len(ONNX_CONVERSIONS) == sum(len(k.onnx_attrs) for k in _ALL.values()), "a type twice"
#: ONNX op type -> its shape-cost rule (the kinds' ``onnx_cost``; types costed per element are
#: not here: :data:`workbench.io.onnx.rules.RULES` adds them from ``flops_per_element``).
ONNX_COSTS: Mapping[str, CostRule] = {t: rule for k in _ALL.values() for t, rule in k.onnx_cost}
assert len(ONNX_COSTS) == sum(len(k.onnx_cost) for k in _ALL.values()), "a type twice"
#: torch label -> its attribute conversion (the kinds' ``torch_attrs``; the torch import applies
#: it after renaming the call's plain parameters into the vocabulary).
TORCH_CONVERSIONS: Mapping[str, TorchRule] = {t: rule for k in _ALL.values()
                                              for t, rule in k.torch_attrs}
assert len(TORCH_CONVERSIONS) == sum(len(k.torch_attrs) for k in _ALL.values()), "a label twice"
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
#: (first match wins): by each kind's ``kernel_rank`` (:class:`~workbench.ops.kind.OpKind` says
#: why the order is explicit).
KERNEL_MATCH_ORDER = tuple(sorted((n for n, k in _ALL.items() if k.kernel_names),
                                  key=lambda n: _ALL[n].kernel_rank))  # type: ignore[arg-type,return-value]
assert all(_ALL[n].kernel_rank is not None for n in KERNEL_MATCH_ORDER)
assert len({_ALL[n].kernel_rank for n in KERNEL_MATCH_ORDER}) == len(KERNEL_MATCH_ORDER)
#: (kernel-name fragment, kind) pairs, first match wins (:func:`workbench.io.traces.pytorch_profile
#: .kernel_kind`).
KERNEL_KINDS: tuple[tuple[str, str], ...] = tuple(
    (fragment, name) for name in KERNEL_MATCH_ORDER for fragment in _ALL[name].kernel_names)
assert len(TORCH_ALIASES) == sum(len(k.torch) for k in _ALL.values()), "a torch name twice"


def gemm_flops(op: Any, x: Sequence[int] | None = None) -> float:
    """The FLOPs of ``op``'s matrix products, as ``FlopCounterMode`` counts them: all of a GEMM
    kind's (convolutions, matmul, einsum) and attention's, a recurrent op's GEMMs
    (:meth:`RecurrentSizes.gemm_flops` of its input shape ``x``, not its gate arithmetic), 0
    for any other op.  O(layers)."""
    info = OPS.get(op.kind)
    if info is None:
        return 0.0
    if info.gemm or info.launch_rule == "attention":
        return float(op.flops)
    r = recurrent.recurrent_sizes(op.kind, op.attrs, x) if info.recurrent else None
    return 0.0 if r is None else r.gemm_flops


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
    """``attrs`` of an op of ``kind`` in the vocabulary (:func:`workbench.ops.attrs
    .normalize_attrs`: synonyms renamed, types checked); unknown kinds' attrs unchanged.
    O(attributes)."""
    info = OPS.get(canonical_kind(kind))
    if info is None:
        return dict(attrs)
    return normalize_attrs(info.name, info.attrs, attrs, op=op)


__all__ = [
    "ACTIVATION_FLOPS", "ASSIGN_KINDS", "BARRIER_KINDS", "BROADCAST_KINDS", "CATEGORIES",
    "FAMILIES",
    "COMMUNICATION_KINDS", "CONTROL_KINDS", "ELEMWISE_KINDS", "ENGINE_COPY_KINDS",
    "EPILOGUE_KINDS", "FLOPS_PER_ELEMENT", "GEMM_KINDS", "IMPORT_ONLY", "KERNEL_KINDS",
    "KERNEL_MATCH_ORDER", "ONNX_CONVERSIONS", "ONNX_COSTS", "RECURRENT_GATES", "TORCH_ALIASES",
    "TORCH_CONVERSIONS", "TORCH_FORM_KINDS",
    "UNIT_TAIL_KINDS",
    "GPU_COPY_KINDS", "IO_KINDS", "KNOWN_KINDS", "NO_TASK_KINDS", "OFF_DEVICE_TRANSFER_KINDS",
    "ONNX_ALIASES",
    "OPS", "REDUCE_KINDS", "REFERENCE_KINDS", "SHAPE_ONLY_KINDS", "TRANSFER_KINDS",
    "WRITE_KINDS", "OpKind", "attrs_of", "canonical_kind", "kind_key", "kinds_where",
    "gemm_flops", "normalize_op_attrs",
]
