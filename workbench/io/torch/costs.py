"""The cost rules of calls traced from PyTorch: each torch name's op kind and shape-cost formula.

:data:`MODULES` (``nn.Module`` type names: ``Conv2d``) and :data:`FUNCTIONS` (function, method
and aten names: ``conv2d``, ``add_``, ``view``) map a torch name to ``(op kind, formula,
per-element FLOPs)``, derived from the op table's torch aliases
(:data:`workbench.ops.TORCH_ALIASES`) and the formulas here, which read torch's argument
conventions (``F.linear``'s weight, ``addmm``'s second operand, pooling windows) and use the
shared shape-cost rules of :mod:`workbench.ops.costs`.  :func:`cost_of_call` is the rule
for one call, used by :func:`workbench.io.torch.fx.from_torch` and by the importers of recorded runs
(:mod:`workbench.io.traces.execution_trace`).  Every rule is O(rank of its tensors).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench.io.torch import attention_costs
from workbench.io.torch.attrs import call_attrs, module_attrs
from workbench.ops import FLOPS_PER_ELEMENT, TORCH_ALIASES
from workbench.ops.costs import (
    VIEW_COST,
    Info,
    ShapeCost,
    conv_cost,
    copy_cost,
    einsum_cost,
    elementwise_cost,
    global_pool_cost,
    matmul_cost,
    numel,
    resize_cost,
    window_cost,
)
from workbench.ops.recurrent import recurrent_cost

#: A cost formula: ``(per-element FLOPs, input infos, output infos, called module or None, call
#: args, call kwargs) -> shape cost`` (``None``: shapes unknown).  Formulas read torch's argument
#: conventions (``F.linear``'s weight, ``addmm``'s second operand, pooling windows), so they stay
#: with this importer; kinds and per-element FLOPs come from :mod:`workbench.ops`.
Formula = Callable[[float, Sequence[Info], Sequence[Info], Any, Sequence[Any], Mapping[str, Any]],
                   ShapeCost | None]


def _first(seq: Sequence[Info]) -> Info:
    return seq[0] if seq else None


def shapes_of(infos: Sequence[Info]) -> list[tuple[int, ...] | None]:
    """The shapes of tensor infos (``None`` where unknown), as the attribute rules take them."""
    return [i.shape if i is not None else None for i in infos]


def _window(module: Any) -> int | None:
    k = getattr(module, "kernel_size", None)
    if isinstance(k, int):
        return k * k
    if isinstance(k, (tuple, list)) and all(isinstance(v, int) for v in k):
        return numel(k)
    return None


def _view(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
          args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    return VIEW_COST


def _conv(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
          args: Sequence[Any], kwargs: Mapping[str, Any], transpose: bool = False
          ) -> ShapeCost | None:
    return conv_cost(_first(ins), ins[1] if len(ins) > 1 else None, _first(outs), ins, outs,
                     transpose=transpose)


def _conv_t(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
            args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    return _conv(per_element, ins, outs, module, args, kwargs, transpose=True)


def _matmul(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
            args: Sequence[Any], kwargs: Mapping[str, Any], operand: int = 0) -> ShapeCost | None:
    """The inner size is the last axis of input ``operand`` (``linear``, ``matmul``: the first)."""
    a = ins[operand] if len(ins) > operand else _first(ins)
    return None if a is None or not a.shape else matmul_cost(a.shape[-1], _first(outs), ins, outs)


def _linear(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
            args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    return _matmul(per_element, ins, outs, module, args, kwargs)


def _addmm(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
           args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    """``addmm(bias, a, b)``: the inner size is ``a``'s last axis."""
    return _matmul(per_element, ins, outs, module, args, kwargs, operand=1)


def _elementwise(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
                 args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    return elementwise_cost(_first(outs), ins, outs, per_element=per_element)


def _pool(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
          args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    window = _window(module) if module is not None else _arg_window(args, kwargs)
    return None if window is None else window_cost(_first(outs), window, ins, outs)


def _adaptive(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
              args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    return global_pool_cost(_first(ins), ins, outs)


def _copy(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
          args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    return copy_cost(_first(outs), ins, outs)


def _resize(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
            args: Sequence[Any], kwargs: Mapping[str, Any], mode: str | None = None
            ) -> ShapeCost | None:
    """``interpolate`` / ``nn.Upsample`` / ``upsample_*2d``: :func:`resize_cost` in the call's
    mode (``F.interpolate``'s fourth argument, the module's ``mode``, else ``mode``)."""
    if mode is None:
        given = getattr(module, "mode", None) if module is not None else kwargs.get(
            "mode", args[3] if len(args) > 3 else None)
        mode = str(given or "nearest")
    return resize_cost(_first(ins), _first(outs), mode, ins, outs)


def _resize_nearest(per_element: float, ins: Sequence[Info], outs: Sequence[Info],
                    module: Any, args: Sequence[Any], kwargs: Mapping[str, Any]
                    ) -> ShapeCost | None:
    return _resize(per_element, ins, outs, module, args, kwargs, "nearest")


def _resize_bilinear(per_element: float, ins: Sequence[Info], outs: Sequence[Info],
                     module: Any, args: Sequence[Any], kwargs: Mapping[str, Any]
                     ) -> ShapeCost | None:
    return _resize(per_element, ins, outs, module, args, kwargs, "bilinear")


def _einsum(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
            args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    """A two-operand contraction: :func:`einsum_cost` of the call's equation."""
    return einsum_cost(str(args[0] if args else kwargs.get("equation")), ins, outs)


def _recurrent(kind: str, label: str, ins: Sequence[Info], outs: Sequence[Info], module: Any,
               args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    """An LSTM / GRU / RNN module or ``aten`` call: :func:`recurrent_cost` of its sizes (the
    module's configuration, or the call's arguments and state shapes in the vocabulary)."""
    shapes, out_shapes = shapes_of(ins), shapes_of(outs)
    attrs = (module_attrs(module, ins=shapes, outs=out_shapes) if module is not None else
             call_attrs(label, args, kwargs, ins=shapes, outs=out_shapes))
    return recurrent_cost(kind, attrs, ins, outs)


def _lstm(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
          args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    return _recurrent("lstm", "lstm", ins, outs, module, args, kwargs)


def _gru(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
         args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    return _recurrent("gru", "gru", ins, outs, module, args, kwargs)


def _rnn(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
         args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    """``rnn_tanh`` / ``rnn_relu`` share a signature and a cost (the map is not priced)."""
    return _recurrent("rnn", "rnn_tanh", ins, outs, module, args, kwargs)


def _gather(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
            args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    """Reads what it copies plus the index tensor (the smaller input)."""
    y = _first(outs)
    known = [t.nbytes for t in ins if t is not None]
    if y is None or not known:
        return None
    return ShapeCost(0, y.nbytes + min(known), y.nbytes, max(1, math.ceil(y.elements / 1024)))


#: The formula of each torch name in :data:`workbench.ops.TORCH_ALIASES` (names not listed:
#: :func:`_elementwise`, with the kind's ``flops_per_element``).
_FORMULA_OF: dict[str, Formula] = {name: formula for formula, names in (
    (_conv, "Conv1d Conv2d Conv3d conv1d conv2d conv3d convolution"), (_conv_t, "ConvTranspose2d"),
    (_linear, "Linear linear"), (_matmul, "matmul mm bmm"), (_addmm, "addmm"),
    (_pool, "MaxPool2d AvgPool2d max_pool2d avg_pool2d"),
    (_adaptive, "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool2d "
                "adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool2d "
                "mean sum amax"),
    (_copy, "cat concat concatenate stack contiguous clone to float half type_as pad "
            "constant_pad_nd "
            "repeat arange zeros_like ones_like full_like lift_fresh_copy roll empty_like "
            "new_zeros new_ones new_full new_empty zeros ones full empty fill tril triu _to_copy"),
    (_gather, "Embedding embedding index_select index gather"), (_einsum, "einsum"),
    (_resize, "Upsample interpolate"), (_resize_nearest, "upsample_nearest2d"),
    (_resize_bilinear, "upsample_bilinear2d"),
    (_view, "Dropout Flatten Identity flatten view reshape squeeze unsqueeze permute transpose t "
            "expand getitem slice select split chunk split_with_sizes dropout identity unflatten "
            "alias reshape_as view_as swapaxes swapdims detach unbind _unsafe_view _add_batch_dim "
            "_remove_batch_dim"),
    (_lstm, "LSTM lstm"), (_gru, "GRU gru"), (_rnn, "RNN rnn_tanh rnn_relu"),
    (attention_costs.sdpa, "scaled_dot_product_attention"),
    (attention_costs.multi_head_attention, "MultiheadAttention _native_multi_head_attention"),
    (attention_costs.encoder_layer, "TransformerEncoderLayer _transformer_encoder_layer_fwd"),
) for name in names.split()}
_FORMULAS: dict[str, Formula] = {f.__name__.lstrip("_"): f for f in (
    _conv, _conv_t, _linear, _matmul, _addmm, _elementwise, _pool, _adaptive, _copy, _gather,
    _einsum, _resize, _resize_nearest, _resize_bilinear, _view, _lstm, _gru, _rnn,
    attention_costs.sdpa,
    attention_costs.multi_head_attention, attention_costs.encoder_layer)}


def _entry(name: str) -> tuple[str, str, float]:
    """(kind, formula name, per-element FLOPs) of a torch name of the table."""
    kind = TORCH_ALIASES[name]
    formula = _FORMULA_OF.get(name)
    if formula is None:  # elementwise: the kind's FLOPs per element
        return kind, "elementwise", FLOPS_PER_ELEMENT[kind]
    return kind, formula.__name__.lstrip("_"), 0


assert set(_FORMULA_OF) <= set(TORCH_ALIASES), set(_FORMULA_OF) - set(TORCH_ALIASES)
#: Module type name -> (op kind, cost formula, per-element FLOPs where it applies), derived from
#: :data:`workbench.ops.TORCH_ALIASES` (the capitalised names) and the formulas here.
MODULES: dict[str, tuple[str, str, float]] = {
    n: _entry(n) for n in TORCH_ALIASES if n[:1].isupper()}
#: Function / method / aten op name -> (op kind, cost formula, per-element FLOPs).
FUNCTIONS: dict[str, tuple[str, str, float]] = {
    n: _entry(n) for n in TORCH_ALIASES if not n[:1].isupper()}


def cost_rule(formula: str, per_element: float, ins: Sequence[Info], outs: Sequence[Info],
          module: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    """The shared shape-cost rule for one traced node (``None``: shapes unknown)."""
    return _FORMULAS[formula](per_element, ins, outs, module, args, kwargs)


def _arg_window(args: Sequence[Any], kwargs: Mapping[str, Any]) -> int | None:
    """The pooling window of ``F.max_pool2d(x, k)`` / ``F.avg_pool2d(x, kernel_size=k)``."""
    k = args[1] if len(args) > 1 else kwargs.get("kernel_size")
    if isinstance(k, int):
        return k * k
    if isinstance(k, (tuple, list)) and all(isinstance(v, int) for v in k):
        return numel(k)
    return None


def cost_of_call(label: str, ins: Sequence[Info], outs: Sequence[Info],
                 args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None
                 ) -> tuple[str, ShapeCost | None, dict[str, Any]]:
    """(op kind, shape cost or None, attrs) of a call to the function or aten op ``label``
    (``conv2d``, ``cat``, ``relu_``) with these tensor infos and arguments: the rules
    :func:`workbench.io.torch.fx.from_torch` uses, for importers of recorded runs.  Unknown labels:
    kind from the name, cost None.  O(rank)."""
    kwargs = kwargs or {}
    entry = FUNCTIONS.get(label) or FUNCTIONS.get(label.rstrip("_"))
    attrs = call_attrs(label, args, kwargs, ins=shapes_of(ins), outs=shapes_of(outs))
    if entry is None:
        return label.strip("_").lower() or "op", None, attrs
    if entry[1] == "view":
        attrs["view"] = True
    return entry[0], cost_rule(entry[1], entry[2], ins, outs, None, args, kwargs), attrs


__all__ = ["FUNCTIONS", "MODULES", "Formula", "cost_of_call", "cost_rule", "shapes_of"]
