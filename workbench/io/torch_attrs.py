"""The attributes an op imported from PyTorch keeps, in the op vocabulary.

:func:`module_attrs` reads an ``nn.Module``'s configuration (``kernel_size``, ``stride``,
``groups``, ``eps`` ...); :func:`call_attrs` reads the same from a functional or aten call's
arguments, positional or keyword (``aten.conv2d(x, w, b, stride, padding, dilation, groups)``,
``aten.cat(tensors, dim)``, ``aten.transpose(x, d0, d1)``, ``aten.split(x, sizes, dim)`` ...).
Both write the vocabulary of :mod:`workbench.values.op_attrs` (``kernel_size`` -> ``kernel``,
``dim`` -> ``axis`` or ``axes``, ``negative_slope`` -> ``alpha``, ``transpose(x, 1, 2)`` ->
``perm``, ``split``/``chunk`` -> ``sizes``, ``linear`` -> ``trans_b``, a number operand ->
``scalar``, ``rsub`` -> ``reverse``, ...), and only the attributes the op's kind declares
(``OpKind.attrs``), so the torch forms and cost rules read one set of names whatever the
importer.  :func:`workbench.io.fx.from_torch` (and, through
:func:`workbench.io.fx.cost_of_call`, the execution-trace importer) store them in
``Op.attrs``.  Values are plain Python (numbers, lists, strings).  O(arguments).

>>> call_attrs("transpose", ["x", 1, 2], {}, ins=[(2, 3, 4)])
{'perm': [0, 2, 1]}
>>> call_attrs("conv2d", ["x", "w", None, [2, 2]], {}, ins=[(1, 3, 8, 8), (4, 3, 3, 3)])
{'stride': [2, 2], 'kernel': [3, 3], 'padding': [0, 0], 'dilation': [1, 1], 'groups': 1}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench.values.ops import OPS, TORCH_ALIASES, canonical_kind

Shape = Sequence[int] | None
#: What a rule sees of the call: its parameters by torch name, the input and output shapes (of
#: the tensor arguments in order, ``None`` where unknown) and the output's dtype name.
Rule = Callable[[dict[str, Any], list[Shape], list[Shape], str | None], dict[str, Any]]

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
group_norm: input num_groups weight bias eps
softmax log_softmax: input dim
cat concat concatenate stack: tensors dim
split split_with_sizes chunk: input split_size dim
transpose: input dim0 dim1
permute: input dims
select: input dim index
slice: input dim start end step
index_select: input dim index
mean sum amax: input dim keepdim
gelu: input approximate
leaky_relu: input negative_slope
elu: input alpha
clamp: input min max
add sub rsub iadd isub: input other alpha
mul div truediv floordiv pow remainder fmod imul itruediv mul_ add_: input other
eq gt lt ge le logical_and logical_or maximum minimum: input other
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
                "size")
#: torch parameter name -> vocabulary name, where the kind declares it (``dim`` is ``axis`` or
#: ``axes``, whichever the kind reads).
_RENAMES = {"kernel_size": "kernel", "negative_slope": "alpha", "keepdim": "keepdims",
            "num_groups": "groups", "in_channels": "cin", "out_channels": "cout",
            "fill_value": "value", "rounding_mode": "rounding", "repeats": "repeats"}
_CONVERSIONS: dict[str, Rule] = {}
_INT64_MAX = (1 << 63) - 1


def _rule(*labels: str) -> Callable[[Rule], Rule]:
    """Register a conversion for the calls (or module types) ``labels``."""
    def register(fn: Rule) -> Rule:
        for label in labels:
            _CONVERSIONS[label] = fn
        return fn
    return register


def plain(value: Any) -> Any:
    """A configuration value as plain Python (tuples become lists, dtypes their names, other
    objects their text)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    text = str(value)
    return text.removeprefix("torch.") if text.startswith("torch.") else text


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _ints(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool)
                                                for x in v)


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
    rule = _CONVERSIONS.get(label) or _CONVERSIONS.get(label.rstrip("_"))
    if rule is not None:
        try:
            attrs.update(rule(named, ins, outs, out_dtype))
        except (TypeError, ValueError, IndexError, KeyError, AttributeError, ZeroDivisionError):
            pass  # arguments torch would not pass (a recorded trace's): keep what is known
    declared = set(OPS[kind].attrs) if kind in OPS else set()
    return {k: v for k, v in attrs.items() if k in declared and v is not None}


def _plainish(value: Any) -> bool:
    """Numbers, strings, booleans and lists of them (not tensors or graph nodes)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return True
    return isinstance(value, (list, tuple)) and all(
        isinstance(v, (bool, int, float, str)) for v in value)


def _rank(shapes: Sequence[Shape], k: int = 0) -> int:
    shape = shapes[k] if len(shapes) > k else None
    if shape is None:
        raise ValueError("shape unknown")
    return len(shape)


# ------------------------------------------------------------------------ windows
def _same_padding(kernel: Sequence[int], dilation: Sequence[int]) -> list[int]:
    """torch's ``padding="same"``: the total ``d*(k-1)`` split, the extra one at the end."""
    total = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
    begin = [t // 2 for t in total]
    end = [t - b for t, b in zip(total, begin, strict=True)]
    return begin if begin == end else [*begin, *end]


@_rule("conv1d", "conv2d", "conv3d", "convolution", "conv_transpose1d", "conv_transpose2d",
       "conv_transpose3d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
       "ConvTranspose3d")
def _conv(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    w = ins[1] if len(ins) > 1 else None
    kernel = named.get("kernel_size")
    if kernel is None and w is not None:
        kernel = list(w[2:])
    n = len(w) - 2 if w is not None else (len(kernel) if isinstance(kernel, (list, tuple))
                                         else 2)
    if kernel is not None:
        out["kernel"] = [kernel] * n if isinstance(kernel, int) else list(kernel)
    for key, default in (("stride", 1), ("padding", 0), ("dilation", 1)):  # torch's defaults
        if named.get(key) is None:
            out[key] = [default] * n
    out["groups"] = int(named.get("groups", 1) or 1)
    padding = named.get("padding")
    if padding == "valid":
        out["padding"] = [0] * n
    elif padding == "same" and "kernel" in out:
        dil = named.get("dilation", 1)
        out["padding"] = _same_padding(out["kernel"], [dil] * n if isinstance(dil, int)
                                       else list(dil))
    return out


@_rule("max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
       "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d")
def _pool(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = _rank(ins) - 2 if ins and ins[0] is not None else 2
    for key, name in (("kernel_size", "kernel"), ("stride", "stride"), ("padding", "padding"),
                      ("dilation", "dilation")):
        value = named.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = [value] * n
        elif isinstance(value, (list, tuple)) and _ints(value) and value:
            out[name] = list(value)
    if "count_include_pad" not in named and "avg" in str(named.get("_label")).lower():
        out["count_include_pad"] = True  # torch's default
    return out


# ------------------------------------------------------------------------ axes and shapes
@_rule("layer_norm", "LayerNorm")
def _layer_norm(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
                dtype: str | None) -> dict[str, Any]:
    shape = named["normalized_shape"]
    n = 1 if isinstance(shape, int) else len(shape)
    return {"axis": -n, "eps": named.get("eps", 1e-5)}


@_rule("batch_norm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "group_norm", "GroupNorm",
       "InstanceNorm2d")
def _norm_eps(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
              dtype: str | None) -> dict[str, Any]:
    return {"eps": named.get("eps", 1e-5), "axis": 1}


@_rule("cat", "concat", "concatenate", "stack")
def _cat(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
         dtype: str | None) -> dict[str, Any]:
    return {"axis": named.get("dim", 0)}


@_rule("softmax", "log_softmax", "Softmax", "LogSoftmax")
def _softmax(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
             dtype: str | None) -> dict[str, Any]:
    dim = named.get("dim")
    return {"axis": -1 if dim is None else dim}


@_rule("split", "split_with_sizes", "chunk")
def _split(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    axis = int(named.get("dim", 0)) % _rank(ins)
    if outs and all(s is not None for s in outs):
        return {"axis": axis, "sizes": [int(s[axis]) for s in outs if s is not None]}
    return {"axis": axis}


@_rule("transpose")
def _transpose(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
               dtype: str | None) -> dict[str, Any]:
    rank = _rank(ins)
    perm = list(range(rank))
    d0, d1 = int(named["dim0"]) % rank, int(named["dim1"]) % rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return {"perm": perm}


@_rule("t")
def _t(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
       dtype: str | None) -> dict[str, Any]:
    return {"perm": [1, 0] if _rank(ins) == 2 else [0]}


@_rule("permute")
def _permute(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
             dtype: str | None) -> dict[str, Any]:
    rank = _rank(ins)
    return {"perm": [int(d) % rank for d in named["dims"]]}


@_rule("select")
def _select(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    return {"axis": int(named["dim"]), "index": int(named["index"])}


@_rule("slice")
def _slice(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    start, end, step = named.get("start"), named.get("end"), named.get("step")
    return {"axes": [int(named.get("dim", 0))], "starts": [int(start or 0)],
            "ends": [_INT64_MAX if end is None else min(int(end), _INT64_MAX)],
            "steps": [int(step or 1)]}


@_rule("mean", "sum", "amax")
def _reduce(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    dim = named.get("dim")
    return {"axes": None if dim in (None, []) else ([dim] if isinstance(dim, int) else
                                                    list(dim)),
            "keepdims": bool(named.get("keepdim", False))}


@_rule("flatten", "Flatten")
def _flatten(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
             dtype: str | None) -> dict[str, Any]:
    return {"shape": list(outs[0]) if outs and outs[0] is not None else None}


@_rule("view", "reshape", "unflatten", "expand", "squeeze", "unsqueeze")
def _shape(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"shape": list(outs[0]) if outs and outs[0] is not None else None}
    dim = named.get("dim")
    if dim is not None:
        out["axes"] = [dim] if isinstance(dim, int) else list(dim)
    return out


def _pieces(container: Any) -> list[Any] | None:
    """The tensors (metadata) a traced node holds when it is a container (split, chunk)."""
    meta = getattr(container, "meta", None)
    if not isinstance(meta, Mapping):
        return None
    for key in ("val", "tensor_meta"):
        value = meta.get(key)
        if isinstance(value, (list, tuple)) and value and all(hasattr(v, "shape")
                                                               for v in value):
            return list(value)
    return None


@_rule("getitem")
def _getitem(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
             dtype: str | None) -> dict[str, Any]:
    """``container[i]``: the item and its flat offset in the container (the pieces flattened
    and concatenated, as the split form writes it); ``tensor[i]``: index ``i`` of axis 0.
    Other subscripts (slices, tuples) are not recorded."""
    index = named.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        return {}
    pieces = _pieces(named.get("input"))
    if pieces is None:
        return {"index": index, "axis": 0}
    offset = sum(int(math.prod(int(d) for d in p.shape)) for p in pieces[:index % len(pieces)])
    return {"index": index, "offset": offset}


@_rule("repeat")
def _repeat(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    return {"repeats": list(named["repeats"])}


@_rule("pad", "constant_pad_nd")
def _pad(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
         dtype: str | None) -> dict[str, Any]:
    """torch's pad list (last axis first, (begin, end) pairs) as per-side padding of every
    axis."""
    rank = _rank(ins)
    pads = [int(p) for p in named["pad"]]
    begin, end = [0] * rank, [0] * rank
    for k in range(len(pads) // 2):
        begin[rank - 1 - k], end[rank - 1 - k] = pads[2 * k], pads[2 * k + 1]
    mode = str(named.get("mode") or "constant")
    return {"padding": [*begin, *end], "value": named.get("value") or 0.0,
            "mode": {"replicate": "edge", "circular": "wrap"}.get(mode, mode)}


# ------------------------------------------------------------------------ maps and arithmetic
@_rule("gelu", "GELU")
def _gelu(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    return {"approximate": str(named.get("approximate") or "none")}


@_rule("hardsigmoid", "Hardsigmoid")
def _hardsigmoid(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
                 dtype: str | None) -> dict[str, Any]:
    return {"alpha": 1.0 / 6.0, "beta": 0.5}


@_rule("leaky_relu", "LeakyReLU")
def _leaky(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    return {"alpha": named.get("negative_slope", 0.01)}


def _operands(named: dict[str, Any]) -> dict[str, Any]:
    """A number operand as ``scalar`` (first: ``reverse``)."""
    a, b = named.get("input"), named.get("other")
    if _number(b) and not _number(a):
        return {"scalar": b}
    if _number(a) and not _number(b):
        return {"scalar": a, "reverse": True}
    return {}


@_rule("add", "sub", "iadd", "isub", "mul", "imul", "div", "truediv", "itruediv", "pow", "eq",
       "gt", "lt", "ge", "le", "logical_and", "logical_or", "maximum", "minimum", "remainder")
def _binary(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    out = _operands(named)
    if named.get("rounding_mode") is not None:
        out["rounding"] = named["rounding_mode"]
    if _number(named.get("alpha")) and named["alpha"] != 1:
        out["alpha"] = named["alpha"]
    return out


@_rule("rsub")
def _rsub(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    """``rsub(x, y, alpha)`` is ``y - alpha * x``."""
    out = _binary(named, ins, outs, dtype)
    out["reverse"] = not out.get("reverse", False)
    return out


@_rule("floordiv")
def _floordiv(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
              dtype: str | None) -> dict[str, Any]:
    return {**_operands(named), "rounding": "floor"}


@_rule("fmod")
def _fmod(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    return {**_operands(named), "fmod": True}


@_rule("clamp")
def _clamp(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    return {k: named.get(k) for k in ("min", "max") if _number(named.get(k))}


@_rule("to", "float", "half")
def _to(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
        dtype: str | None) -> dict[str, Any]:
    given = named.get("dtype")
    name = plain(given) if given is not None and "dtype" in type(given).__name__ else None
    return {"dtype": name or dtype}


# ------------------------------------------------------------------------ products, values
@_rule("linear", "Linear")
def _linear(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    return {"trans_b": True}


@_rule("addmm")
def _addmm(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    return {"bias_first": True, "alpha": named.get("alpha"), "beta": named.get("beta")}


@_rule("scaled_dot_product_attention")
def _sdpa(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    scale = named.get("scale")
    return {"is_causal": bool(named.get("is_causal", False)),
            "scale": scale if _number(scale) else None}


@_rule("MultiheadAttention", "_native_multi_head_attention", "TransformerEncoderLayer",
       "_transformer_encoder_layer_fwd")
def _module_call(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
                 dtype: str | None) -> dict[str, Any]:
    return {"needs_program": True}


@_rule("arange")
def _arange(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    bounds = [named[k] for k in ("a", "b", "c") if _number(named.get(k))]
    start, end, step = ([0, *bounds, 1] if len(bounds) == 1 else [*bounds, 1])[:3]
    return {"start": start, "end": end, "step": step, "dtype": dtype}


@_rule("zeros_like", "ones_like", "full_like")
def _fill(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    value = named.get("fill_value", 1 if named.get("_label") == "ones_like" else 0)
    return {"value": value, "dtype": dtype}


@_rule("upsample_nearest2d", "upsample_bilinear2d", "interpolate", "Upsample")
def _resize(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    label = str(named.get("_label"))
    mode = {"upsample_nearest2d": "nearest", "upsample_bilinear2d": "bilinear"}.get(
        label, str(named.get("mode") or "nearest"))
    align = bool(named.get("align_corners") or False)
    spatial = _rank(ins) - 2
    scales = named.get("scale_factors", named.get("scale_factor"))
    out: dict[str, Any] = {"align_corners": align}
    if _number(scales):
        scales = [scales] * spatial
    if isinstance(scales, (list, tuple)) and scales:
        out["scales"] = [1.0, 1.0, *[float(s) for s in scales]]
    elif outs and outs[0] is not None:
        out["sizes"] = list(outs[0])
    if mode == "nearest":
        out.update(mode="nearest", coordinate_mode="asymmetric", nearest_mode="floor")
    elif mode == "nearest-exact":
        out.update(mode="nearest", coordinate_mode="half_pixel",
                   nearest_mode="round_prefer_ceil")
    else:
        out.update(mode="linear" if mode in ("linear", "bilinear", "trilinear") else mode,
                   coordinate_mode="align_corners" if align else "pytorch_half_pixel")
    return out


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
