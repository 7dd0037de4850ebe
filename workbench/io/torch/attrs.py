"""The attributes an op imported from PyTorch keeps, in the op vocabulary.

:func:`module_attrs` reads an ``nn.Module``'s configuration (``kernel_size``, ``stride``,
``groups``, ``eps`` ...); :func:`call_attrs` reads the same from a functional or aten call's
arguments, positional or keyword (``aten.conv2d(x, w, b, stride, padding, dilation, groups)``,
``aten.cat(tensors, dim)``, ``aten.transpose(x, d0, d1)``, ``aten.split(x, sizes, dim)`` ...).
Both write the vocabulary of :mod:`workbench.ops.attrs` (``kernel_size`` -> ``kernel``,
``dim`` -> ``axis`` or ``axes``, ``negative_slope`` -> ``alpha``, ``transpose(x, 1, 2)`` ->
``perm``, ``split``/``chunk`` -> ``sizes``, ``linear`` -> ``trans_b``, a number operand ->
``scalar``, ``rsub`` -> ``reverse``, ...), and only the attributes the op's kind declares
(``OpKind.attrs``), so the torch forms and cost rules read one set of names whatever the
importer.  :func:`workbench.io.torch.fx.from_torch` (and, through
:func:`workbench.io.torch.fx.cost_of_call`, the execution-trace importer) store them in
``Op.attrs``.  Values are plain Python (numbers, lists, strings).  O(arguments).

This module holds the argument conventions (:data:`SIGNATURES`, :data:`MODULE_ATTRS`), the
renames and the two entry points; the per-call conversion rules (torch's defaults, ``perm``,
``sizes``, ``scalar`` ...) are the kinds' own (``OpKind.torch_attrs``, collected in
:data:`workbench.io.torch.attr_rules.CONVERSIONS`), one per label, with :func:`plain`
(re-exported here).

>>> call_attrs("transpose", ["x", 1, 2], {}, ins=[(2, 3, 4)])
{'perm': [0, 2, 1]}
>>> call_attrs("conv2d", ["x", "w", None, [2, 2]], {}, ins=[(1, 3, 8, 8), (4, 3, 3, 3)])
{'stride': [2, 2], 'kernel': [3, 3], 'padding': [0, 0], 'dilation': [1, 1], 'groups': 1}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.io.torch.attr_rules import CONVERSIONS, Shape, plain
from workbench.io.torch.attr_rules import Rule as Rule  # re-exported for older imports
from workbench.ops import OPS, TORCH_ALIASES, canonical_kind
from workbench.ops.attrs import ATTRIBUTES, TYPES

#: Parameters of torch functions / aten ops in order, as torch names them (the tensor ones
#: included), one line per signature: ``names: parameters``.  An argument convention (torch's
#: ``conv2d`` is spelled as its kind), parsed into :data:`SIGNATURES`.
_SIGNATURE_TEXT = """
conv1d conv2d conv3d convolution: input weight bias stride padding dilation groups
conv_transpose1d conv_transpose2d conv_transpose3d: input weight bias stride padding \
output_padding groups dilation
max_pool1d max_pool2d max_pool3d: input kernel_size stride padding dilation ceil_mode
avg_pool1d avg_pool2d avg_pool3d: input kernel_size stride padding ceil_mode count_include_pad
batch_norm: input weight bias running_mean running_var training momentum eps
layer_norm: input normalized_shape weight bias eps
rms_norm: input normalized_shape weight eps
group_norm: input num_groups weight bias eps
softmax log_softmax: input dim
cat concat concatenate stack: tensors dim
split split_with_sizes chunk: input split_size dim
unbind: input dim
transpose swapaxes swapdims: input dim0 dim1
einsum: equation operands
permute: input dims
select: input dim index
slice: input dim start end step
index_select: input dim index
gather: input dim index
index: input indices
roll: input shifts dims
masked_fill: input mask value
cumsum: input dim
diff: input n dim prepend append
mean sum amax: input dim keepdim
gelu: input approximate
leaky_relu: input negative_slope
elu: input alpha
clamp: input min max
hardtanh: input min_val max_val
lstm gru rnn_tanh rnn_relu: input hx params has_biases num_layers dropout train bidirectional \
batch_first
_weight_norm: v g dim
type_as: input other
add sub rsub iadd isub: input other alpha
mul div truediv floordiv pow remainder fmod imul itruediv mul_ add_: input other
eq gt lt ge le ne logical_and logical_or maximum minimum: input other
linear: input weight bias
addmm: input mat1 mat2 beta alpha
scaled_dot_product_attention: query key value attn_mask dropout_p is_causal scale
to: input dtype
arange: a b c
repeat: input repeats
expand: input size
flatten: input start_dim end_dim
squeeze unsqueeze: input dim
upsample_nearest2d: input output_size scale_factors
upsample_bilinear2d: input output_size align_corners scale_factors
interpolate: input size scale_factor mode align_corners
pad: input pad mode value
getitem: input index
constant_pad_nd: input pad value
dropout: input p
full_like: input fill_value
"""


def _signatures(text: str) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for line in text.replace("\\\n", "").strip().splitlines():
        names, _, params = line.partition(":")
        for name in names.split():
            out[name] = tuple(params.split())
    return out


#: torch function / aten op name -> its parameters in order.
SIGNATURES: dict[str, tuple[str, ...]] = _signatures(_SIGNATURE_TEXT)
#: Module configuration attributes read (when the module has them).
MODULE_ATTRS = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                "output_padding", "groups", "eps", "p", "normalized_shape", "num_groups",
                "negative_slope", "alpha", "dim", "start_dim", "end_dim", "approximate",
                "ceil_mode", "count_include_pad", "scale_factor", "mode", "align_corners",
                "size", "min_val", "max_val", "hidden_size", "num_layers", "bidirectional",
                "batch_first", "bias", "proj_size", "nonlinearity")
#: torch parameter name -> vocabulary name, where the kind declares it (``dim`` is ``axis`` or
#: ``axes``, whichever the kind reads).
_RENAMES = {"kernel_size": "kernel", "negative_slope": "alpha", "keepdim": "keepdims",
            "num_groups": "groups", "in_channels": "cin", "out_channels": "cout",
            "fill_value": "value", "rounding_mode": "rounding", "repeats": "repeats",
            "num_layers": "layers", "nonlinearity": "act", "has_biases": "bias"}


def kind_of_label(label: str) -> str | None:
    """The kind a torch name imports as (``relu_`` as ``relu``), ``None`` if unknown."""
    kind = TORCH_ALIASES.get(label) or TORCH_ALIASES.get(label.rstrip("_"))
    return None if kind is None else canonical_kind(kind)


def _vocabulary(kind: str | None, named: Mapping[str, Any]) -> dict[str, Any]:
    """The torch-named values in the vocabulary, kept where ``kind`` declares them."""
    info = OPS.get(kind) if kind is not None else None
    if info is None:
        return {}
    declared = set(info.attrs)
    out: dict[str, Any] = {}
    for key, value in named.items():
        name = _RENAMES.get(key, key)
        if key == "dim":
            name = "axis" if "axis" in declared else "axes"
        if name in declared and value is not None:
            out[name] = plain(value)
    return out


def call_attrs(label: str, args: Sequence[Any], kwargs: Mapping[str, Any], *,
               ins: Sequence[Shape] = (), outs: Sequence[Shape] = (),
               out_dtype: str | None = None) -> dict[str, Any]:
    """The vocabulary attributes of a call to the function or aten op ``label`` with these
    arguments; ``ins``/``outs``: the shapes of its tensor inputs and outputs where known
    (``transpose`` needs the rank, ``split`` the pieces).  Unknown labels: ``{}``; arguments
    that are not what torch passes (a recorded trace's) are left out."""
    kind = kind_of_label(label)
    if kind is None:
        return {}
    params = SIGNATURES.get(label) or SIGNATURES.get(label.rstrip("_"), ())
    named = {p: a for p, a in zip(params, args, strict=False)}
    named.update({k: v for k, v in kwargs.items() if k in params or k in _KWARGS})
    named["_label"] = label
    return _converted(label, kind, named, list(ins), list(outs), out_dtype)


#: Keyword-only parameters the rules read.
_KWARGS = frozenset({"dtype", "rounding_mode", "alpha", "scale", "is_causal", "approximate",
                     "keepdim", "fill_value", "value", "mode", "beta", "inplace"})


def _converted(label: str, kind: str, named: dict[str, Any], ins: list[Shape],
               outs: list[Shape], out_dtype: str | None) -> dict[str, Any]:
    attrs = _vocabulary(kind, {k: v for k, v in named.items() if _plainish(v)})
    rule = CONVERSIONS.get(label) or CONVERSIONS.get(label.rstrip("_"))
    if rule is not None:
        try:
            attrs.update(rule(named, ins, outs, out_dtype))
        except (TypeError, ValueError, IndexError, KeyError, AttributeError, ZeroDivisionError):
            pass  # arguments torch would not pass (a recorded trace's): keep what is known
    declared = set(OPS[kind].attrs) if kind in OPS else set()
    return {k: v for k, v in attrs.items() if k in declared and v is not None and _fits(k, v)}


def _fits(name: str, value: Any) -> bool:
    """Whether ``value`` has the vocabulary's type for attribute ``name`` (a recorded trace
    writes an absent argument as the text ``"<None>"``: left out, not stored)."""
    spec = ATTRIBUTES.get(name)
    if spec is None:
        return True
    check, _ = TYPES[spec.type]
    return check(value) or (spec.type == "bool" and value in (0, 1))


def _plainish(value: Any) -> bool:
    """Numbers, strings, booleans and lists of them (not tensors or graph nodes)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return True
    return isinstance(value, (list, tuple)) and all(
        isinstance(v, (bool, int, float, str)) for v in value)


# ------------------------------------------------------------------------ modules
def module_attrs(module: Any, *, ins: Sequence[Shape] = (), outs: Sequence[Shape] = (),
                 out_dtype: str | None = None) -> dict[str, Any]:
    """The vocabulary attributes of a called ``nn.Module`` (its configuration, :data:`
    MODULE_ATTRS`, converted as :func:`call_attrs` converts a call's arguments)."""
    type_name = type(module).__name__
    kind = kind_of_label(type_name)
    if kind is None:
        return {}
    named = {a: getattr(module, a) for a in MODULE_ATTRS if hasattr(module, a)}
    named["_label"] = type_name
    return _converted(type_name, kind, named, list(ins), list(outs), out_dtype)


__all__ = ["MODULE_ATTRS", "SIGNATURES", "call_attrs", "kind_of_label", "module_attrs", "plain"]
