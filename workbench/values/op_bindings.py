"""Which function computes each op kind: its NumPy reference, its PyTorch form, its elementwise
map, and the attribute names they read.

The op table (:data:`workbench.values.ops.OPS`) attaches these to its entries (``reference``,
``unary``, ``binary``, ``torch_form``, ``attrs``); this module only lists them, kind by kind, so
it imports nothing of the table.  A kind listed in no table here gets its category's function
from the table (views reshape, copies and pass-through I/O copy, the ``assign`` family assigns).
The references are in :mod:`workbench.values.op_reference` (and its ``_maps`` / ``_data`` /
``_index`` parts), the torch forms in :mod:`workbench.values.op_torch` (and ``_maps`` /
``_data``), the attribute vocabulary in :mod:`workbench.values.op_attrs`.

Each table is built by a function, once, when the op table is built.  Kinds that share a
function are listed together (``"maxpool avgpool": pool``); every kind appears once per table.

>>> references()["relu"] is not None, torch_forms()["conv2d"].__name__
(True, 'conv')
>>> declared_attrs()["transpose"]
('perm',)
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from workbench.values import op_reference as ref
from workbench.values import op_reference_data as refd
from workbench.values import op_reference_index as refi
from workbench.values import op_reference_maps as refm
from workbench.values import op_reference_recurrent as refr
from workbench.values import op_torch, op_torch_data, op_torch_maps, op_torch_recurrent
from workbench.values.op_attrs import check_declared


def _groups(table: dict[str, Any]) -> dict[str, Any]:
    """``{"a b": v}`` -> ``{"a": v, "b": v}`` (each kind once)."""
    out: dict[str, Any] = {}
    for names, value in table.items():
        for name in names.split():
            assert name not in out, f"{name!r} listed twice"
            out[name] = value
    return out


#: Elementwise kinds whose map may read attributes (or has no fixed NumPy/torch pair):
#: :func:`workbench.values.op_reference.mapped` and its torch twin.
_MAPPED = ("gelu leaky_relu elu celu selu thresholded_relu hard_sigmoid hard_swish relu6 silu "
           "swish softplus softsign erf rsqrt square reciprocal sin cos floor ceil round sign")
_ARITH = "sub mul div pow mod"
_VARIADIC = "max min mean maximum minimum"
_COMPARE = ("equal not_equal greater less greater_or_equal less_or_equal and or xor not "
            "isnan")
_REDUCE = "reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_l2 reduce_sum_square"
_RECURRENT = "lstm gru rnn"


def unary_maps() -> dict[str, ref.UnaryFn]:
    """The elementwise map of each unary kind (``identity`` included: a conv's absent
    activation)."""
    return {
        "identity": ref.identity, "relu": ref.relu, "gelu": ref.gelu, "sigmoid": ref.sigmoid,
        "tanh": np.tanh, "exp": np.exp, "log": np.log, "neg": np.negative, "abs": np.abs,
        "sqrt": np.sqrt, "atan": np.arctan}


def binary_maps() -> dict[str, Callable[[Any, Any], Any]]:
    """The elementwise map of each binary kind."""
    return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


def references() -> dict[str, ref.Reference]:
    """The NumPy reference of each kind that is not its category's
    (:mod:`workbench.values.op_reference`)."""
    unary = unary_maps()

    def activation(name: str | None) -> ref.UnaryFn:
        """A conv's ``act`` / ``pre_act`` by name (``None``: identity); KeyError if unknown."""
        return ref.identity if name is None else unary[name]

    return {
        **{k: refm.unary_reference(fn) for k, fn in unary.items() if k != "identity"},
        **_groups({
            "conv2d conv1d conv3d": partial(ref.conv, unary=activation),
            "sepconv": partial(ref.sepconv, unary=activation),
            "conv_transpose": ref.conv_transpose, "maxpool avgpool": ref.pool,
            "global_avgpool": ref.global_avgpool, "global_maxpool": ref.global_maxpool,
            "batchnorm": ref.batchnorm_reference, "layernorm": ref.layernorm_reference,
            "instancenorm": ref.instancenorm, "groupnorm": ref.groupnorm, "lrn": ref.lrn,
            "concat": ref.concat, "matmul": ref.matmul_reference,
            "softmax": ref.softmax_reference, "log_softmax": ref.log_softmax,
            "transpose": ref.transpose, "op": ref.generic, "add": refm.add,
            _MAPPED: refm.mapped, _VARIADIC: refm.variadic, _COMPARE: refm.compare,
            _REDUCE: refm.reduce, "argmax argmin": refm.arg_extreme, "where": refm.where,
            "clip": refm.clip, "prelu": refm.prelu, "attention": ref.attention,
            "einsum": ref.einsum,
            "contiguous clone": ref.copy, "stack": refd.stack,
            "gather": refd.gather, "embedding": refd.embedding, "slice": refd.slice_,
            "getitem": refd.getitem, "split": refd.split, "expand broadcast_to": refd.expand,
            "tile": refd.tile, "pad": refd.pad, "resize": refd.resize, "cast": refd.cast,
            "constant": refd.constant, "shape": refd.shape, "size": refd.size,
            "range": refd.range_, "trilu": refd.trilu, "depth_to_space": refd.depth_to_space,
            "space_to_depth": refd.space_to_depth, "index": refi.index,
            "gather_elements": refi.gather_elements, "roll": refi.roll,
            "masked_fill": refi.masked_fill, "diff": refi.diff, "cumsum": refi.cumsum,
            "weight_norm": ref.weight_norm, _RECURRENT: refr.recurrent}),
        **{k: refm.arith(k) for k in _ARITH.split()},
    }


def torch_forms() -> dict[str, op_torch.TorchForm]:
    """The PyTorch form of each kind that is not its category's
    (:mod:`workbench.values.op_torch`), listed as :func:`references` lists the references."""
    t, d, m = op_torch, op_torch_data, op_torch_maps
    return {
        **{k: t.unary_form(k) for k in ("relu", "sigmoid", "tanh", "exp", "log", "neg", "abs",
                                        "sqrt", "atan")},
        **_groups({
            "conv2d conv1d conv3d": t.conv, "sepconv": t.sepconv,
            "conv_transpose": t.conv_transpose, "maxpool avgpool": t.pool,
            "global_avgpool": t.global_avgpool, "global_maxpool": t.global_maxpool,
            "batchnorm": t.batchnorm, "layernorm": t.layernorm, "instancenorm": t.instancenorm,
            "groupnorm": t.groupnorm, "lrn": t.lrn, "concat": t.concat, "matmul": t.matmul,
            "softmax": t.softmax, "log_softmax": t.log_softmax, "transpose": t.transpose,
            "op": t.generic, "add": m.add, _MAPPED: m.mapped, _VARIADIC: m.variadic,
            _COMPARE: m.compare, _REDUCE: m.reduce, "argmax argmin": m.arg_extreme,
            "where": m.where, "clip": m.clip, "prelu": m.prelu, "attention": t.attention,
            "einsum": t.einsum,
            "contiguous clone": t.copy, "stack": d.stack, "gather": d.gather,
            "embedding": d.embedding, "slice": d.slice_, "getitem": d.getitem,
            "split": d.split, "expand broadcast_to": d.expand, "tile": d.tile, "pad": d.pad,
            "resize": d.resize, "cast": d.cast, "constant": d.constant, "shape": d.shape,
            "size": d.size, "range": d.range_, "trilu": d.trilu,
            "depth_to_space": d.depth_to_space, "space_to_depth": d.space_to_depth,
            "index": d.index, "gather_elements": d.gather_elements, "roll": d.roll,
            "masked_fill": d.masked_fill, "diff": d.diff, "cumsum": d.cumsum,
            "weight_norm": t.weight_norm, _RECURRENT: op_torch_recurrent.recurrent}),
        **{k: m.arith(k) for k in _ARITH.split()},
    }


def declared_attrs() -> dict[str, tuple[str, ...]]:
    """The attribute names each kind reads (its references, torch form, cost and launch rules,
    GPU lowering), each checked against the vocabulary (:mod:`workbench.values.op_attrs`)."""
    reshapes = ("reshape view expand_dims flatten_grad reformat identity identity_view "
                "broadcast_to expand")
    declared: dict[str, list[str]] = {}
    for names, attrs in (
            ("conv2d conv1d conv3d", "kernel stride padding dilation groups act pre_act bias "
                                     "cin cout"),
            ("sepconv", "kernel stride padding groups pre_act bias cin cout"),
            ("conv_transpose", "kernel stride padding output_padding dilation groups"),
            ("maxpool avgpool", "pool kernel stride padding dilation ceil_mode"),
            ("avgpool", "count_include_pad"), ("global_avgpool global_maxpool", "pool kernel"),
            ("matmul", "trans_a trans_b alpha beta bias_first bias m k n batch weight"),
            ("einsum", "equation m k n batch"),
            ("batchnorm layernorm", "eps axis"), ("instancenorm", "eps"),
            ("groupnorm", "eps groups"), ("lrn", "window alpha beta k"),
            ("softmax", "axis scale"), ("log_softmax concat stack", "axis"),
            ("gather", "axis index"), ("split", "axis sizes"), ("getitem", "index axis offset"),
            ("slice", "starts ends axes steps"), ("transpose", "perm"),
            (reshapes, "shape"), ("flatten", "shape start_dim end_dim axis"),
            ("squeeze unsqueeze", "shape axes"), ("dropout", "shape p"), ("tile", "repeats"),
            ("pad", "padding mode value"),
            ("resize", "mode scales sizes align_corners coordinate_mode nearest_mode"),
            ("cast", "dtype"), ("constant", "value dtype"), ("range", "start end step dtype"),
            ("shape", "start end"), (_REDUCE, "axes keepdims"),
            ("argmax argmin", "axis keepdims select_last_index"), ("clip", "min max"),
            ("leaky_relu elu celu thresholded_relu", "alpha"), ("selu", "alpha gamma"),
            ("hard_sigmoid", "alpha beta"), ("gelu", "approximate"),
            ("add sub", "scalar reverse alpha"), ("mul div pow mod", "scalar reverse"),
            ("div", "rounding"), ("mod", "fmod"), (_VARIADIC, "scalar"),
            (_COMPARE.replace(" not isnan", ""), "scalar reverse"), ("trilu", "upper diagonal"),
            ("depth_to_space", "blocksize mode"), ("space_to_depth", "blocksize"),
            ("attention", "is_causal scale needs_program"), ("index", "axes"),
            ("gather_elements cumsum", "axis"), ("roll", "shifts axes"),
            ("masked_fill", "value"), ("diff", "n axis prepend append"),
            ("weight_norm", "axis"),
            (_RECURRENT, "hidden_size layers direction batch_first bias convention slots "
                         "out_slots act cell_clip"),
            ("lstm", "proj_size input_forget"), ("gru", "linear_before_reset")):
        for name in names.split():
            declared.setdefault(name, []).extend(attrs.split())
    for names_read in declared.values():
        check_declared(names_read)
    return {name: tuple(names_read) for name, names_read in declared.items()}


__all__ = ["binary_maps", "declared_attrs", "references", "torch_forms", "unary_maps"]
