"""The attribute vocabulary of op kinds: what each attribute name means, its type, its synonyms.

Every op kind of :data:`workbench.ops.OPS` declares the attribute names it reads
(``OpKind.attrs``); this module says what each name means (:data:`ATTRIBUTES`), once for every
kind.  The importers write only these names (the ONNX import turns ``kernel_shape``/``strides``/
``pads``/``group`` into ``kernel``/``stride``/``padding``/``groups``; ``from_torch`` turns
``aten.conv2d``'s arguments and a module's configuration into the same), and the torch forms,
NumPy references and cost rules read only these names.  Attributes a kind does not declare
(``onnx_op_type``, ``view``, ``cost``, ``target``, ...) are provenance and pass through untouched.

:func:`normalize_attrs` is what the file readers (JSON, DOT) apply: a synonym of a declared
attribute becomes the vocabulary's name (``kernel_shape`` -> ``kernel``, ``pads`` -> ``padding``,
``transB`` -> ``trans_b``, ``epsilon`` -> ``eps``, ``to`` -> ``dtype``), 0/1 become booleans
where the attribute is one, and a value of the wrong type for a declared attribute is a one-line
:class:`~workbench.errors.FormatError` naming the op and the attribute.  ``None`` always means
"not given: the default".  Complexity: O(attributes) per op.

Conventions every kind shares:

* spatial sizes (``kernel``, ``stride``, ``dilation``) are an int (every spatial axis) or one int
  per spatial axis (``[h, w]`` for 2-D);
* ``padding`` of a convolution or pool is an int, one int per spatial axis (symmetric:
  ``[ph, pw]``, what every importer writes when both sides agree), or *explicit per side* when
  they do not: all begins then all ends, ONNX's order (``[top, left, bottom, right]`` in 2-D); a
  ``pad`` op's ``padding`` is explicit per side over every axis;
* axes may be negative (counted from the end); ``axes`` is an int or a list.

>>> normalize_attrs("conv2d", ("kernel", "stride", "padding", "groups"),
...                 {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "group": 2, "view": True})
{'kernel': [3, 3], 'padding': [1, 1], 'groups': 2, 'view': True}
>>> explicit_padding([0, 1, 1, 2])
[0, 1, 1, 2]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from workbench.errors import FormatError

# ------------------------------------------------------------------------ NumPy references


#: Element types a ``dtype`` attribute may name (the graph's tensor dtypes).
DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32",
          "int64", "bool", "uint16", "uint32", "uint64", "complex64", "complex128",
          "float8_e4m3fn", "float8_e5m2")


#: ONNX ``TensorProto`` data-type codes -> dtype names (``Cast``'s ``to``).
ONNX_DTYPES: Mapping[int, str] = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32",
                                  7: "int64", 9: "bool", 10: "float16", 11: "float64",
                                  16: "bfloat16"}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_int_list(v: Any) -> bool:
    """A list of ints (not bools): how an importer's attribute value of one int per axis reads."""
    return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


def _is_ints(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and all(map(_is_int, v))


#: Attribute types: name -> (check, what a value must be).
TYPES: Mapping[str, tuple[Callable[[Any], bool], str]] = {
    "int": (_is_int, "an integer"),
    "number": (_is_number, "a number"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "ints": (_is_ints, "a list of integers"),
    "int_or_ints": (lambda v: _is_int(v) or _is_ints(v), "an integer or a list of integers"),
    "numbers": (lambda v: isinstance(v, (list, tuple)) and all(map(_is_number, v)),
                "a list of numbers"),
    "dtype": (lambda v: v in DTYPES, f"a dtype name ({', '.join(DTYPES)})"),
}


#: The largest size-like attribute (kernel, stride, groups, m, k, n ...) and the largest figure
#: of a graph (:data:`workbench.values.graph_items.MAX_FIGURE` is this): products stay finite.
MAX_SIZE = 2**62


def _finite(v: Any) -> bool:
    return not isinstance(v, float) or math.isfinite(v)


#: Ranges: name -> (check of one number, what every number must be).  ``any`` lets infinities
#: and NaN through (a fill value, a clip bound); every other range wants finite numbers.
BOUNDS: Mapping[str, tuple[Callable[[Any], bool], str]] = {
    "any": (lambda v: True, "any number"),
    "finite": (_finite, "finite"),
    "positive": (lambda v: _finite(v) and 0 < v <= MAX_SIZE, "positive (at most 2**62)"),
    "non_negative": (lambda v: _finite(v) and 0 <= v <= MAX_SIZE,
                     "non-negative (at most 2**62)"),
    "non_zero": (lambda v: _finite(v) and v != 0, "finite and not zero"),
    "probability": (lambda v: _finite(v) and 0 <= v <= 1, "between 0 and 1"),
    "size": (lambda v: _is_int(v) and 0 <= v <= MAX_SIZE, "a non-negative integer (at most 2**62)"),
}


#: Integer limits of the ranges the fast path of :func:`value_problem` checks with min/max.
_FAST = {"any": (-math.inf, math.inf), "positive": (1, MAX_SIZE), "non_negative": (0, MAX_SIZE)}


#: Each attribute's range (an int attribute not named here: ``any``; a number: ``finite``).
_BOUNDS_OF = {
    "positive": "kernel stride dilation groups window blocksize cin cout scales hidden_size "
                "layers",
    "non_negative": "padding output_padding m k n batch sizes repeats offset eps proj_size "
                    "slots out_slots",
    "non_zero": "steps step", "probability": "p", "any": "value scalar min max",
}


#: Per-kind exceptions to an attribute's bounds, ``(kind, attribute) -> bounds`` (a ``pad`` op's
#: padding may be negative; a GEMM's ``k`` is its inner size, lrn's a number): each kind
#: declares its own (``OpKind.attr_bounds``) and the registry fills this once it has collected
#: the families.
KIND_BOUNDS: dict[tuple[str, str], str] = {}


def value_problem(spec: Attr, value: Any, kind: str = "") -> str | None:
    """What is wrong with ``value`` for attribute ``spec`` of an op of ``kind`` (its type, then
    every number against the attribute's range; a 0/1 integer is a boolean), or ``None`` when
    it is fine.  ``None`` (the default) is fine.  O(len(value)).

    >>> value_problem(ATTRIBUTES["stride"], [0, 1])
    'must be positive (at most 2**62), got [0, 1]'
    >>> value_problem(ATTRIBUTES["alpha"], float("nan"))
    'must be finite, got nan'
    """
    if value is None:
        return None
    fast = _FAST.get(spec.bounds if (kind, spec.name) not in KIND_BOUNDS else "")
    if fast is not None:  # the common case, plain ints within the bounds, one test per item
        if type(value) is int and spec.type in ("int", "int_or_ints") \
                and fast[0] <= value <= fast[1]:
            return None
        if type(value) in (list, tuple) and spec.type in ("ints", "int_or_ints") and value \
                and all(type(v) is int for v in value) and fast[0] <= min(value) \
                and max(value) <= fast[1]:
            return None
    if spec.type == "bool" and (value is True or value is False or value == 0 or value == 1) \
            and type(value) in (bool, int):
        return None
    check, what = TYPES[spec.type]
    if not check(value):
        return f"must be {what}, got {_shown(value)}"
    if spec.type not in ("int", "number", "ints", "int_or_ints", "numbers"):
        return None
    in_bounds, what = BOUNDS[KIND_BOUNDS.get((kind, spec.name), spec.bounds)]
    items = value if isinstance(value, (list, tuple)) else (value,)
    if not all(map(in_bounds, items)):
        return f"must be {what}, got {_shown(value)}"
    return None


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


@dataclass(frozen=True, slots=True)
class Attr:
    """One attribute of the vocabulary: ``type`` (a key of :data:`TYPES`), what it means, and
    ``synonyms``: other spellings (ONNX's, torch's) of the same value that the readers rename;
    ``convert`` turns a synonym's value into the vocabulary's (``pads`` -> ``padding``);
    ``bounds`` (a key of :data:`BOUNDS`): the range every number of the value lies in."""

    name: str
    type: str
    meaning: str
    synonyms: tuple[str, ...] = ()
    convert: Callable[[Any], Any] | None = None
    bounds: str = "any"

    def __post_init__(self) -> None:
        assert self.type in TYPES and self.bounds in BOUNDS, self


def explicit_padding(pads: Sequence[int]) -> Any:
    """ONNX-style pads (all begins, then all ends) as the vocabulary's ``padding``: one int per
    axis when every axis is padded the same on both sides, else the explicit list unchanged."""
    pads = [int(p) for p in pads]
    half = len(pads) // 2
    if len(pads) % 2 or pads[:half] != pads[half:]:
        return pads
    return pads[:half]


def _onnx_dtype(value: Any) -> Any:
    return ONNX_DTYPES.get(value, value) if _is_int(value) else value


def _table() -> dict[str, Attr]:
    out: dict[str, Attr] = {}

    def add(name: str, type_: str, meaning: str, synonyms: str = "",
            convert: Callable[[Any], Any] | None = None) -> None:
        assert name not in out, name
        out[name] = Attr(name, type_, meaning, tuple(synonyms.split()), convert)

    # windows: convolutions and pools
    add("kernel", "int_or_ints", "window size per spatial axis (convolutions, pools)",
        "kernel_shape kernel_size")
    add("stride", "int_or_ints", "step per spatial axis (default 1; pools: the kernel)",
        "strides")
    add("padding", "int_or_ints", "zero padding per spatial axis (symmetric), or explicit per "
        "side: all begins then all ends (ONNX's order); pad: explicit per side over every axis",
        "pads", explicit_padding)
    add("dilation", "int_or_ints", "spacing of the window's taps per spatial axis (default 1)",
        "dilations")
    add("output_padding", "int_or_ints", "conv_transpose: extra size added to one side of the "
        "output per spatial axis")
    add("groups", "int", "channel groups (conv: input and output channels split in this many; "
        "groupnorm: normalisation groups)", "group num_groups")
    add("ceil_mode", "bool", "pools: round the output size up")
    add("count_include_pad", "bool", "avgpool: padding counts in the divisor (builder default "
        "true)")
    add("pool", "str", "pools: 'max' or 'avg' (the builder's record of the kind)")
    add("act", "str", "conv2d: activation applied after the bias (builder); rnn: its "
        "nonlinearity ('tanh', the default, or 'relu'); lstm/gru: ONNX's activations, "
        "comma-separated, when they are not the defaults (the forms refuse them)")
    add("pre_act", "str", "conv2d/sepconv: activation applied to the input first (builder)")
    add("bias", "bool", "conv2d/sepconv/matmul: a bias input is given (builder); recurrent "
        "ops: the biases are given (default true)")
    add("cin", "int", "input channels the op reads (builder; a channel slice of a wider tensor)",
        "in_channels")
    add("cout", "int", "output channels (builder)", "out_channels")
    # matrix products
    add("trans_a", "bool", "matmul: the first operand is transposed (ONNX Gemm)", "transA")
    add("trans_b", "bool", "matmul: the second operand is transposed (Gemm's transB, torch's "
        "linear weight (out, in))", "transB")
    add("alpha", "number", "a multiplier: Gemm's of A·B (1), add/sub's of the second operand "
        "(1), leaky_relu/elu/celu's negative slope, selu's alpha, hard_sigmoid's slope, "
        "thresholded_relu's threshold, lrn's scale", "negative_slope")
    add("beta", "number", "Gemm's multiplier of the bias (1); hard_sigmoid's offset; lrn's "
        "exponent")
    add("gamma", "number", "selu's output scale")
    add("bias_first", "bool", "matmul: the bias is the first input (torch's addmm(bias, a, b))")
    add("m", "int", "matmul: rows of the output (builder; the cost model reads it)")
    add("k", "number", "matmul: the inner size (builder); lrn: the additive constant (ONNX's "
        "bias, torch's k)")
    add("n", "int", "matmul: columns of the output (builder); diff: how many times the "
        "difference is taken (default 1)")
    add("batch", "int", "matmul: independent products (builder)")
    add("weight", "bool", "matmul: the second operand is a parameter (builder's linear)")
    # axes and shapes
    add("axis", "int", "the axis the op works along (concat, softmax, gather, gather_elements, "
        "cumsum, split, norms: the first normalised axis for layernorm, the channel axis for "
        "batchnorm; select; diff: default -1; weight_norm: the axis kept, torch's dim, -1 "
        "normalising the whole tensor)", "dim")
    add("axes", "int_or_ints", "the axes a reduction, slice, squeeze, unsqueeze or roll works "
        "on; index: the positions of torch's indices list (x[:, idx] -> [1]) that hold the "
        "index inputs, in order", "dim dims")
    add("shifts", "int_or_ints", "roll: places each of axes is shifted by (no axes: the "
        "flattened input, one shift)")
    add("prepend", "bool", "diff: the input after x is joined before x along axis first")
    add("append", "bool", "diff: the next input (after x and any prepended one) is joined "
        "after x along axis first")
    add("keepdims", "bool", "reductions: keep reduced axes with size 1", "keepdim")
    add("select_last_index", "bool", "argmax/argmin: the last of equal extremes")
    add("perm", "ints", "transpose: output axis i is input axis perm[i] (default: reversed)")
    add("shape", "ints", "views and expand: the target shape (informational: the form reshapes "
        "to the output tensor's shape)")
    add("start_dim", "int", "flatten: first axis flattened (torch)")
    add("end_dim", "int", "flatten: last axis flattened (torch)")
    add("sizes", "ints", "split: the size of each piece along axis; resize: the output size",
        "split")
    add("index", "int", "getitem: the position taken along axis, or the item of a container; "
        "gather: a constant 0-d index (the axis goes away; the indices input is not read)")
    add("offset", "int", "getitem of a split container: elements before the item")
    add("starts", "ints", "slice: first index per axis of axes")
    add("ends", "ints", "slice: end index (exclusive) per axis of axes")
    add("steps", "ints", "slice: step per axis of axes (default 1)")
    add("repeats", "ints", "tile: copies per axis")
    add("blocksize", "int", "depth_to_space/space_to_depth: the block edge")
    add("upper", "bool", "trilu: keep the upper triangle (else the lower)")
    add("diagonal", "int", "trilu: the diagonal's offset (0: the main diagonal; ONNX's second "
        "input, when given, wins)")
    # values
    add("eps", "number", "norms: added to the variance (batchnorm default 1e-3, others 1e-5)",
        "epsilon")
    add("scale", "number", "softmax: multiplies the input first; attention: the logits' scale "
        "(default 1/sqrt(head size))")
    add("scalar", "number", "binary arithmetic: the other operand when it is a number")
    add("reverse", "bool", "binary arithmetic: the operands are swapped (torch's rsub: "
        "other - x)")
    add("rounding", "str", "div: 'trunc' or 'floor' (none: true division; integer inputs "
        "truncate, ONNX's)", "rounding_mode")
    add("min", "number", "clip: lower bound")
    add("max", "number", "clip: upper bound")
    add("value", "number", "constant, masked_fill: the fill value; pad: the padding value "
        "(default 0)",
        "constant_value fill_value")
    add("dtype", "dtype", "cast, constant, range: the element type of the result", "to",
        _onnx_dtype)
    add("approximate", "str", "gelu: 'none' (erf) or 'tanh' (builder default 'tanh')")
    add("fmod", "bool", "mod: C's fmod (sign of the dividend) instead of Python's %")
    add("p", "number", "dropout: drop probability (ignored at inference)", "ratio")
    add("window", "int", "lrn: channels summed over", "size")
    add("mode", "str", "pad: 'constant', 'reflect', 'edge'; resize: 'nearest', 'linear', "
        "'cubic'; depth_to_space: 'DCR' or 'CRD'")
    add("scales", "numbers", "resize: output/input size per axis", "scale_factor")
    add("align_corners", "bool", "resize: corners of input and output are aligned")
    add("coordinate_mode", "str", "resize: ONNX's coordinate_transformation_mode (half_pixel, "
        "asymmetric, align_corners, pytorch_half_pixel)", "coordinate_transformation_mode")
    add("nearest_mode", "str", "resize: ONNX's rounding of nearest (floor, round_prefer_floor, "
        "...)")
    add("is_causal", "bool", "attention: a causal mask")
    add("equation", "str", "einsum: the subscripts of the contraction (``bhid,bhjd->bhij``)")
    add("needs_program", "bool", "attention: a module call whose weights live in the model "
        "(nn.MultiheadAttention): only from_torch's program runs it")
    # recurrent cells (lstm, gru, rnn)
    add("hidden_size", "int", "recurrent ops: the hidden state's size (LSTM: the cell's)")
    add("layers", "int", "recurrent ops: stacked layers (default 1; ONNX's have one)",
        "num_layers")
    add("direction", "str", "recurrent ops: 'forward' (default), 'reverse' or 'bidirectional'")
    add("batch_first", "bool", "recurrent ops: inputs and outputs have the batch axis first "
        "(torch's batch_first; ONNX's layout=1, which puts it first in the states too)")
    add("proj_size", "int", "lstm: the size each h is projected to (torch's proj_size; 0: none)")
    add("convention", "str", "recurrent ops: how the inputs are laid out: 'torch' (the default, "
        "aten.lstm's: x, the initial states if given, then per layer and direction w_ih, w_hh, "
        "b_ih, b_hh, w_hr; gates i f g o / r z n) or 'onnx' (X, W, R, B, sequence_lens, "
        "initial_h, initial_c, P, each stacked over directions; gates i o f c / z r h)")
    add("slots", "ints", "recurrent ops in the onnx convention: the ONNX input slot of each "
        "input, in order (0 X, 1 W, 2 R, 3 B, 4 sequence_lens, 5 initial_h, 6 initial_c, 7 P; "
        "optional ones not given are left out)")
    add("out_slots", "ints", "recurrent ops in the onnx convention: the ONNX output slot of "
        "each output (0 Y, 1 Y_h, 2 Y_c)")
    add("linear_before_reset", "bool", "gru: the reset gate scales the recurrent product "
        "(torch's GRU, ONNX's linear_before_reset=1), not the state before it (ONNX's default)")
    add("cell_clip", "number", "recurrent ops: ONNX's clip of the gates' inputs (the forms "
        "refuse it)", "clip")
    add("input_forget", "bool", "lstm: ONNX's coupled input and forget gates (the forms refuse "
        "it)")
    add("start", "number", "range: first value; shape: first axis reported")
    add("end", "number", "range: end (exclusive); shape: end axis (exclusive)", "limit")
    add("step", "number", "range: increment", "delta")
    for bounds, names in _BOUNDS_OF.items():
        for name in names.split():
            out[name] = replace(out[name], bounds=bounds)
    for name, spec in out.items():
        if spec.type in ("number", "numbers") and name not in _BOUNDS_OF["any"].split() \
                and spec.bounds == "any":
            out[name] = replace(out[name], bounds="finite")
    return out


#: Every attribute name of the vocabulary.
ATTRIBUTES: Mapping[str, Attr] = _table()


def check_declared(names: Sequence[str]) -> None:
    """Assert that ``names`` are vocabulary attributes and that no two share a synonym (so a
    synonym names one attribute of the kind)."""
    seen: dict[str, str] = {}
    for name in names:
        assert name in ATTRIBUTES, f"attribute {name!r} is not in the vocabulary"
        for s in (name, *ATTRIBUTES[name].synonyms):
            assert seen.setdefault(s, name) == name, f"{s!r} names {seen[s]!r} and {name!r}"


def synonyms_of(declared: Sequence[str]) -> dict[str, str]:
    """Synonym -> attribute name, over the attributes ``declared``."""
    return {s: name for name in declared for s in ATTRIBUTES[name].synonyms
            if s not in declared}


def normalize_attrs(kind: str, declared: Sequence[str], attrs: Mapping[str, Any], *,
                    op: str = "?") -> dict[str, Any]:
    """``attrs`` of an op of ``kind`` (which reads the attributes ``declared``) in the
    vocabulary: synonyms renamed (and converted), 0/1 booleans made bool, every declared value
    checked against its type.  Other keys pass through unchanged.  A wrong type, or a synonym
    and its attribute both given with different values, is a one-line :class:`FormatError`
    naming ``op`` and the attribute."""
    rename = synonyms_of(declared)
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in attrs.items():
        name = rename.get(key, key)
        if name in ATTRIBUTES and name in declared:
            spec = ATTRIBUTES[name]
            if key != name and spec.convert is not None and value is not None:
                value = spec.convert(value)
            value = _checked(spec, value, kind, op, key)
            if name in out and out[name] != value:
                raise FormatError(f"op {op!r} ({kind}): {spelled[name]}={out[name]!r} and "
                                  f"{key}={value!r} say different things (both mean "
                                  f"{name!r}); keep one")
            spelled[name] = key
        out[name] = value
    return out


def _checked(spec: Attr, value: Any, kind: str, op: str, key: str) -> Any:
    if value is None:
        return None
    if spec.type == "bool" and _is_int(value) and value in (0, 1):
        return bool(value)
    check, what = TYPES[spec.type]
    if not check(value):
        via = "" if key == spec.name else f" (given as {key!r})"
        raise FormatError(f"op {op!r} ({kind}): attribute {spec.name!r}{via} must be {what}, "
                          f"got {_shown(value)}")
    return value


# ------------------------------------------------------------------------ readers
# The NumPy references and the torch forms read attributes through these, so both apply the
# same defaults.
def per_axis(value: Any, n: int, default: int) -> tuple[int, ...]:
    """An int or a list as ``n`` ints (``None``: ``default``; a one-element list repeats)."""
    if value is None:
        return (default,) * n
    if _is_int(value) or isinstance(value, float):
        return (int(value),) * n
    items = [int(v) for v in value]
    if len(items) == 1:
        return (items[0],) * n
    if len(items) < n:
        raise ValueError(f"{items} gives {len(items)} values for {n} axes")
    return tuple(items[:n])


def pads_per_side(value: Any, n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``padding`` as (begins, ends) over ``n`` axes: an int, one int per axis (symmetric) or
    explicit per side (``2n`` ints: all begins, then all ends)."""
    if value is not None and not _is_int(value) and len(value) == 2 * n:
        items = [int(v) for v in value]
        return tuple(items[:n]), tuple(items[n:])
    sym = per_axis(value, n, 0)
    return sym, sym


@dataclass(frozen=True)
class Window:
    """A convolution's or pool's window over ``n`` spatial axes, defaults applied."""

    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    begin: tuple[int, ...]
    end: tuple[int, ...]
    dilation: tuple[int, ...]

    @property
    def symmetric(self) -> bool:
        return self.begin == self.end


def window_of(attrs: Mapping[str, Any], n: int, *, kernel: Sequence[int] | None = None,
              kernel_default: int = 1, stride_is_kernel: bool = False) -> Window:
    """The window of an op reading ``kernel``/``stride``/``padding``/``dilation``: ``kernel``
    (e.g. the weight's spatial shape) wins over the attribute; a pool's stride defaults to its
    kernel (``stride_is_kernel``)."""
    k = tuple(int(v) for v in kernel) if kernel is not None else per_axis(
        attrs.get("kernel"), n, kernel_default)
    stride = attrs.get("stride")
    s = k if stride_is_kernel and stride in (None, [], ()) else per_axis(stride, n, 1)
    begin, end = pads_per_side(attrs.get("padding"), n)
    return Window(k, s, begin, end, per_axis(attrs.get("dilation"), n, 1))


def axes_of(value: Any, rank: int) -> tuple[int, ...] | None:
    """``axes`` (an int or a list, negatives from the end) as sorted non-negative axes;
    ``None`` (or an empty list): ``None``, meaning every axis."""
    if value is None:
        return None
    items = [value] if _is_int(value) else list(value)
    if not items:
        return None
    return tuple(sorted({int(a) % rank for a in items})) if rank else ()


def flag(attrs: Mapping[str, Any], name: str, default: bool) -> bool:
    """A boolean attribute with its default (``None`` means the default)."""
    value = attrs.get(name)
    return default if value is None else bool(value)


def number(attrs: Mapping[str, Any], name: str, default: float) -> float:
    """A numeric attribute with its default (``None`` means the default)."""
    value = attrs.get(name)
    return default if value is None else float(value)
