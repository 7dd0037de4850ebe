"""The conversion rules of the torch import's attributes: one per torch call (or module type),
from torch's arguments to the op vocabulary.

:func:`workbench.io.torch.attrs.call_attrs` and :func:`~workbench.io.torch.attrs.module_attrs`
first rename the plain parameters the kind declares (``kernel_size`` -> ``kernel``, ``dim`` ->
``axis`` ...), then call the rule registered for the call's label in :data:`CONVERSIONS`, for what a
rename cannot say: torch's defaults written out (``stride``, ``padding``,
``dilation`` of a convolution), ``padding="same"``, ``transpose(x, 1, 2)`` -> ``perm``,
``split`` -> ``sizes``, a number operand -> ``scalar`` (``reverse`` when it comes first,
``rsub``), ``linear`` -> ``trans_b``, ``interpolate``'s modes in ONNX's terms.  A rule sees
the call's parameters by torch name, the shapes of its tensor inputs and outputs (``None`` where
unknown) and the output's dtype name; it may raise on arguments torch would not pass (the caller
then keeps what the renames found).  Values are plain Python (:func:`plain`, re-exported by
:mod:`workbench.io.torch.attrs`).  This module holds the registry and the rules of the tensor
calls (axes, shapes, arithmetic, values); the layer calls' (convolutions, pools, norms,
recurrent cells, products, attention) are in :mod:`workbench.io.torch.layer_rules`, which
registers them when imported.  O(arguments) each.

>>> CONVERSIONS["transpose"]({"dim0": 1, "dim1": 2}, [(2, 3, 4)], [], None)
{'perm': [0, 2, 1]}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Shape = Sequence[int] | None
#: What a rule sees of the call: its parameters by torch name, the input and output shapes (of
#: the tensor arguments in order, ``None`` where unknown) and the output's dtype name.
Rule = Callable[[dict[str, Any], list[Shape], list[Shape], str | None], dict[str, Any]]
#: Label (torch function / aten op name, or module type name) -> its rule.
CONVERSIONS: dict[str, Rule] = {}
_INT64_MAX = (1 << 63) - 1


def _rule(*labels: str) -> Callable[[Rule], Rule]:
    """Register a conversion for the calls (or module types) ``labels``."""
    def register(fn: Rule) -> Rule:
        for label in labels:
            CONVERSIONS[label] = fn
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


def _rank(shapes: Sequence[Shape], k: int = 0) -> int:
    shape = shapes[k] if len(shapes) > k else None
    if shape is None:
        raise ValueError("shape unknown")
    return len(shape)


# ------------------------------------------------------------------------ axes and shapes
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


@_rule("unbind")
def _unbind(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    """``unbind(x, dim)``: a split into pieces of one along ``axis`` (the container holds the
    same elements in the same order; its items lack the axis)."""
    rank = _rank(ins)
    axis = int(named.get("dim") or 0) % rank
    shape = ins[0]
    assert shape is not None
    return {"axis": axis, "sizes": [1] * int(shape[axis])}


@_rule("transpose", "swapaxes", "swapdims")
def _transpose(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
               dtype: str | None) -> dict[str, Any]:
    rank = _rank(ins)
    perm = list(range(rank))
    d0, d1 = int(named["dim0"]) % rank, int(named["dim1"]) % rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return {"perm": perm}


@_rule("einsum")
def _einsum(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    """The equation, and its contraction as the GEMM the launch rule times (two operands)."""
    from workbench.values.shape_costs import einsum_gemm

    equation = str(named["equation"])
    gemm = einsum_gemm(equation, ins)
    return {"equation": equation, **({} if gemm is None else gemm)}


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
       "ne", "gt", "lt", "ge", "le", "logical_and", "logical_or", "maximum", "minimum",
       "remainder")
def _binary(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    out = _operands(named)
    if named.get("rounding_mode") is not None:
        out["rounding"] = named["rounding_mode"]
    if _number(named.get("alpha")) and named["alpha"] != 1:
        out["alpha"] = named["alpha"]
    return out


@_rule("index")
def _index(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    """``aten.index(x, [None, idx])`` (``x[:, idx]``): the positions of the indices list that
    hold tensors, in order (each an input of the op after x)."""
    return {"axes": [p for p, v in enumerate(named["indices"]) if v is not None]}


@_rule("roll")
def _roll(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    """``roll(x, shifts, dims)``: ``shifts`` and ``axes`` as lists (no dims: none, the
    flattened input)."""
    shifts, dims = named["shifts"], named.get("dims")
    axes = [] if dims is None else [dims] if isinstance(dims, int) else list(dims)
    return {"shifts": [int(v) for v in ([shifts] if isinstance(shifts, int) else shifts)],
            "axes": [int(v) for v in axes] or None}


@_rule("tril")
def _tril(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    """``tril(x, diagonal)``: the lower triangle (ONNX's Trilu with ``upper=0``)."""
    return {"upper": False, "diagonal": int(named.get("diagonal") or 0)}


@_rule("triu")
def _triu(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    return {"upper": True, "diagonal": int(named.get("diagonal") or 0)}


@_rule("masked_fill")
def _masked_fill(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
                 dtype: str | None) -> dict[str, Any]:
    """A number ``value`` (a boolean as 0/1); a tensor value is the op's third input."""
    value = named.get("value")
    return {"value": int(value) if isinstance(value, bool) else value if _number(value)
            else None}


@_rule("diff")
def _diff(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    """torch's defaults (``n`` 1, ``dim`` -1) written out; ``prepend``/``append``: whether that
    tensor is given (it is the op's next input)."""
    given = {k: named.get(k) is not None and not isinstance(named.get(k), str)
             for k in ("prepend", "append")}
    n, dim = named.get("n"), named.get("dim")
    return {"n": 1 if n is None else int(n), "axis": -1 if dim is None else int(dim), **given}


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


@_rule("hardtanh", "Hardtanh")
def _hardtanh(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
              dtype: str | None) -> dict[str, Any]:
    """``hardtanh(x, min_val, max_val)`` (MobileNet's ReLU6 under torch.export) is a clip
    (torch's defaults -1 and 1 written out)."""
    lo, hi = named.get("min_val", -1.0), named.get("max_val", 1.0)
    return {"min": -1.0 if lo is None else lo, "max": 1.0 if hi is None else hi}


@_rule("clamp")
def _clamp(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    return {k: named.get(k) for k in ("min", "max") if _number(named.get(k))}


@_rule("to", "float", "half", "type_as", "_to_copy")
def _to(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
        dtype: str | None) -> dict[str, Any]:
    given = named.get("dtype")
    name = plain(given) if given is not None and "dtype" in type(given).__name__ else None
    return {"dtype": name or dtype}


# ------------------------------------------------------------------------ values
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


__all__ = ["CONVERSIONS", "Rule", "Shape", "plain"]
