"""What the op vocabulary (issue: ONNX graphs run too) added to the importers' tables, beside
tests/_op_aliases_spec.py's old tables: torch names that now import as a vocabulary kind
(in-place and aten spellings, the calls the zoo models make) instead of a defaulted kind of
their own name.  ``test_ops.test_importer_tables_round_trip_the_old_ones`` checks the tables
are exactly the old ones plus these."""

from __future__ import annotations

_E, _C, _V = "elementwise", "copy", "view"

#: Module type name -> (kind, cost formula, FLOPs per element).
VOCABULARY_MODULES = {
    "ELU": ("elu", _E, 3), "PReLU": ("prelu", _E, 2), "Softplus": ("softplus", _E, 3),
    "Upsample": ("resize", "resize", 0),
    # issue 41: 1-D / 3-D adaptive pools, Hardtanh, the recurrent modules
    "AdaptiveAvgPool1d": ("global_avgpool", "adaptive", 0),
    "AdaptiveAvgPool3d": ("global_avgpool", "adaptive", 0), "Hardtanh": ("clip", _E, 2),
    "LSTM": ("lstm", "lstm", 0), "GRU": ("gru", "gru", 0), "RNN": ("rnn", "rnn", 0),
}
#: Function / method / aten name -> (kind, cost formula, FLOPs per element).
VOCABULARY_FUNCTIONS = {
    "silu_": ("silu", _E, 5), "elu": ("elu", _E, 3), "rsub": ("sub", _E, 1),
    "abs": ("abs", _E, 1), "log": ("log", _E, 1), "reciprocal": ("reciprocal", _E, 1),
    "sin": ("sin", _E, 1), "cos": ("cos", _E, 1), "hardswish_": ("hard_swish", _E, 4),
    "hardsigmoid": ("hard_sigmoid", _E, 3), "hardsigmoid_": ("hard_sigmoid", _E, 3),
    "remainder": ("mod", _E, 1), "fmod": ("mod", _E, 1), "floor": ("floor", _E, 1),
    "ceil": ("ceil", _E, 1), "round": ("round", _E, 1), "sign": ("sign", _E, 1),
    "logical_not": ("not", _E, 1), "logical_and": ("and", _E, 1),
    "logical_or": ("or", _E, 1), "eq": ("equal", _E, 1), "gt": ("greater", _E, 1),
    "lt": ("less", _E, 1), "ge": ("greater_or_equal", _E, 1),
    "le": ("less_or_equal", _E, 1), "isnan": ("isnan", _E, 1), "prelu": ("prelu", _E, 2),
    "softplus": ("softplus", _E, 3), "split_with_sizes": ("split", _V, 0),
    "slice": ("slice", _V, 0), "zeros_like": ("constant", _C, 0),
    "ones_like": ("constant", _C, 0), "full_like": ("constant", _C, 0),
    "constant_pad_nd": ("pad", _C, 0), "interpolate": ("resize", "resize", 0),
    "upsample_nearest2d": ("resize", "resize_nearest", 0),
    "upsample_bilinear2d": ("resize", "resize_bilinear", 0),
    "repeat": ("tile", _C, 0), "arange": ("range", _C, 0),
    # the real models' calls (in-place and dunder spellings, aliases, the fill constructors)
    # and torch's indexing, shifting and scanning kinds, which are full kinds with torch forms
    "bitwise_not": ("not", _E, 1), "__invert__": ("not", _E, 1),
    "bitwise_and": ("and", _E, 1), "__and__": ("and", _E, 1), "bitwise_or": ("or", _E, 1),
    "__or__": ("or", _E, 1), "logical_xor": ("xor", _E, 1), "bitwise_xor": ("xor", _E, 1),
    "__xor__": ("xor", _E, 1), "max": ("max", _E, 1), "min": ("min", _E, 1),
    "reshape_as": ("reshape", _V, 0), "view_as": ("reshape", _V, 0),
    "alias": ("identity", _V, 0), "swapaxes": ("transpose", _V, 0),
    "swapdims": ("transpose", _V, 0), "einsum": ("einsum", "einsum", 0),
    **{n: ("constant", _C, 0) for n in ("empty_like new_zeros new_ones new_full new_empty "
                                        "zeros ones full empty fill").split()},
    "lift_fresh_copy": ("clone", _C, 0), "ne": ("not_equal", _E, 1),
    "masked_fill": ("masked_fill", _E, 1), "diff": ("diff", _E, 1),
    "cumsum": ("cumsum", _E, 1), "index": ("index", "gather", 0),
    "gather": ("gather_elements", "gather", 0), "roll": ("roll", _C, 0),
    # issue 41: MobileNetV2's hardtanh and relu6, type_as, detach, unbind, weight norm, the
    # 1-D / 3-D adaptive pools (r3d), aten's recurrent cells
    "hardtanh": ("clip", _E, 2), "relu6": ("relu6", _E, 2), "type_as": ("cast", _C, 0),
    "detach": ("identity", _V, 0), "unbind": ("split", _V, 0),
    # torch.vmap under torch.export (transformers' mask functions): wrappers of one storage
    "_add_batch_dim": ("identity", _V, 0), "_remove_batch_dim": ("identity", _V, 0),
    "_weight_norm": ("weight_norm", _E, 3),
    "adaptive_avg_pool1d": ("global_avgpool", "adaptive", 0),
    "adaptive_avg_pool3d": ("global_avgpool", "adaptive", 0),
    "lstm": ("lstm", "lstm", 0), "gru": ("gru", "gru", 0), "rnn_tanh": ("rnn", "rnn", 0),
    "rnn_relu": ("rnn", "rnn", 0),
    # the decoder LLMs' causal masks
    "tril": ("trilu", _C, 0), "triu": ("trilu", _C, 0),
    # aten's decomposed forms (graphs traced again to drop torch.vmap)
    "_to_copy": ("cast", _C, 0), "_unsafe_view": ("reshape", _V, 0),
}
