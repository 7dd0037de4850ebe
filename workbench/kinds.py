"""Op kinds: one canonical spelling per known kind, matched case- and separator-insensitively.

MindSpore spells its no-task kinds ``Reshape``, ``ExpandDims``, ``FlattenGrad``, ONNX spells
``MaxPool``, ``BatchNormalization``-style CamelCase, and this project's tables use snake_case
(``expand_dims``).  :class:`workbench.graph.Op` stores the canonical spelling of any kind whose
:func:`kind_key` matches a known kind, so every table lookup (``op.kind in NO_TASK_KINDS``, the
cost rules, the references, the lowerings) is case-insensitive without each lookup normalising.
Kinds this module does not know are kept exactly as given.

>>> canonical_kind("ExpandDims"), canonical_kind("FLATTEN_GRAD"), canonical_kind("MaxPool")
('expand_dims', 'flatten_grad', 'maxpool')
>>> canonical_kind("MyCustomOp")
'MyCustomOp'
"""

from __future__ import annotations

#: Every op kind some table of the workbench knows (cost rules, passes, memory aliasing,
#: references, GPU lowerings, importers, built-in models), in its canonical spelling.
#: ``tests/test_seed_rules.py`` checks that every kind table's keys are listed here.
KNOWN_KINDS = frozenset({
    "abs", "add", "allreduce", "apply_adam", "apply_momentum", "argmax", "assign", "assign_add",
    "assign_sub", "atan", "avgpool", "batchnorm", "bias", "bias_add", "broadcast_to", "case_of",
    "cast", "clip", "concat", "constant", "conv2d", "conv_transpose", "copy", "cos", "d2d", "d2h",
    "device_sync", "div", "dropout", "elu", "erf", "exp", "expand_dims", "flatten",
    "flatten_grad", "fused", "gather", "gelu", "global_avgpool", "global_maxpool", "groupnorm",
    "h2d", "identity", "identity_view", "image_summary", "instancenorm", "join", "layernorm",
    "leaky_relu", "log", "log_softmax", "lrn", "matmul", "max", "maximum", "maxpool", "mean",
    "memcpy", "min", "minimum", "mul", "neg", "op", "pow", "print", "reciprocal", "recv",
    "reduce_max", "reduce_mean", "reduce_min", "reduce_sum", "reformat", "relu", "relu6",
    "reshape", "rsqrt", "save", "scalar_summary", "scale", "scatter_add", "scatter_nd_update",
    "scatter_sub", "scatter_update", "send", "sepconv", "sgd_update", "shape", "sigmoid", "silu",
    "sin", "size", "slice", "softmax", "sqrt", "square", "squeeze", "sub", "summary", "swish",
    "tanh", "transpose", "unsqueeze", "update_state", "view", "while",
})


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
