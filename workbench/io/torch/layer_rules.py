"""The conversion rules of torch's layer calls: convolutions, pools, norms, recurrent cells,
matrix products, attention and the composite module calls.

The other part of :mod:`workbench.io.torch.attr_rules` (which holds the rules of the tensor
calls, the registry :data:`~workbench.io.torch.attr_rules.CONVERSIONS` and the conventions):
importing this module registers its rules there, as :mod:`workbench.io.torch.attrs` does.
Each rule writes torch's defaults out (a convolution's ``stride``, ``padding``,
``dilation``; ``padding="same"``; a recurrent call's hidden size, read off its states) in
the op vocabulary.  O(arguments) each.

>>> from workbench.io.torch.attr_rules import CONVERSIONS
>>> CONVERSIONS["conv1d"]({}, [(1, 2, 9), (4, 2, 3)], [], None)["kernel"]
[3]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.io.torch.attr_rules import Shape, _ints, _number, _rank, _rule


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
    # as given (a recorded trace's groups=0 is refused by the graph's check, not made 1)
    out["groups"] = 1 if named.get("groups") is None else named["groups"]
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


# ------------------------------------------------------------------------ norms
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


# ------------------------------------------------------------------ products, cells, attention
@_rule("linear", "Linear")
def _linear(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    return {"trans_b": True}


@_rule("addmm")
def _addmm(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    return {"bias_first": True, "alpha": named.get("alpha"), "beta": named.get("beta")}


@_rule("lstm", "gru", "rnn_tanh", "rnn_relu", "LSTM", "GRU", "RNN")
def _recurrent(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
               dtype: str | None) -> dict[str, Any]:
    """``aten.lstm(x, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`` (and gru, rnn_tanh, rnn_relu) or the ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN``
    module: torch's input convention; a call's hidden size is its last state's (``c_n``'s
    for an LSTM, ``h_n``'s otherwise), its projection ``h_n``'s when that differs."""
    label = str(named.get("_label"))
    states = [s for s in outs[1:] if s is not None]
    hidden = named.get("hidden_size")
    if hidden is None and states:
        hidden = int(states[-1][-1])
    proj = named.get("proj_size")
    if proj is None and len(states) == 2 and states[0][-1] != states[1][-1]:
        proj = int(states[0][-1])
    bias = named.get("has_biases", named.get("bias", True))
    out = {"hidden_size": hidden, "layers": int(named.get("num_layers") or 1),
           "direction": "bidirectional" if named.get("bidirectional") else "forward",
           "batch_first": bool(named.get("batch_first") or False), "bias": bool(bias),
           "convention": "torch", "proj_size": proj or None}
    if label.startswith("rnn_"):
        out["act"] = label.removeprefix("rnn_")
    return out


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
