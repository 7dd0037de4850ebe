"""Cost rules of attention and the composite transformer modules, for the torch importers
(:mod:`workbench.io.torch.fx` and, through :func:`workbench.io.torch.costs.cost_of_call`, the
execution-trace import).

FLOPs are counted the way ``torch.utils.flop_counter.FlopCounterMode`` counts them (2 per
multiply-add of the matrix products; softmax, masks and norms not counted), so imported models
can be checked against it:

* ``scaled_dot_product_attention(q, k, v)``: ``q @ kᵀ`` and ``attn @ v``:
  ``2·B·L·S·E + 2·B·L·S·Ev`` (``B``: every axis before the last two);
* ``nn.MultiheadAttention`` (an fx leaf module) and ``aten::_native_multi_head_attention`` (its
  fast path): the q, k, v and output projections plus the attention itself:
  ``2·B·L·E²·2 + 2·B·S·E²·2 + 4·B·L·S·E``;
* ``nn.TransformerEncoderLayer`` and ``aten::_transformer_encoder_layer_fwd`` (the encoder's
  fused fast path): self-attention as above with ``S = L`` plus the two feed-forward linears,
  ``2·B·L·E·F·2``.

Bytes: every known input and output once.  Source: "Attention Is All You Need" (Vaswani et al.,
2017) for the products; torch's ``flop_counter.py`` for what is counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.ops.costs import Info, ShapeCost, blocks, numel, total_bytes


def _cost(flops: float, ins: Sequence[Info], outs: Sequence[Info]) -> ShapeCost:
    elements = sum(t.elements for t in outs if t is not None)
    return ShapeCost(flops, total_bytes(ins), total_bytes(outs), blocks(max(1, elements)))


def _batch_first(x: Info, module: Any) -> tuple[int, int, int] | None:
    """(B, L, E) of an activation (``(L, B, E)`` when the module says ``batch_first=False``)."""
    if x is None or len(x.shape) != 3:
        return None
    a, b, e = x.shape
    return (a, b, e) if module is None or getattr(module, "batch_first", True) else (b, a, e)


def sdpa(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
         args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    if len(ins) < 3 or any(t is None or len(t.shape) < 2 for t in ins[:3]):
        return None
    q, k, v = ins[0], ins[1], ins[2]
    assert q is not None and k is not None and v is not None
    batch, (length, e), s, ev = numel(q.shape[:-2]), q.shape[-2:], k.shape[-2], v.shape[-1]
    return _cost(2.0 * batch * length * s * (e + ev), ins, outs)


def multi_head_attention(per_element: float, ins: Sequence[Info], outs: Sequence[Info],
                         module: Any, args: Sequence[Any], kwargs: Mapping[str, Any]
                         ) -> ShapeCost | None:
    q = _batch_first(ins[0] if ins else None, module)
    k = _batch_first(ins[1] if len(ins) > 1 else None, module)
    if q is None or k is None:
        return None
    (b, length, e), s = q, k[1]
    return _cost(4.0 * b * length * e * e + 4.0 * b * s * e * e + 4.0 * b * length * s * e,
                 ins, outs)


def encoder_layer(per_element: float, ins: Sequence[Info], outs: Sequence[Info], module: Any,
                  args: Sequence[Any], kwargs: Mapping[str, Any]) -> ShapeCost | None:
    x = _batch_first(ins[0] if ins else None, module)
    if x is None:
        return None
    b, length, e = x
    if module is not None:
        ff = getattr(getattr(module, "linear1", None), "out_features", None)
    else:  # the fused op's weights: qkv (3E, E), proj (E, E), ffn_1 (F, E), ffn_2 (E, F)
        weights = [t.shape for t in ins[1:] if t is not None and len(t.shape) == 2]
        ff = weights[2][0] if len(weights) >= 3 else None
    if not isinstance(ff, int):
        return None
    n = b * length
    return _cost(2.0 * n * e * 3 * e + 4.0 * b * length * length * e + 2.0 * n * e * e
                 + 4.0 * n * e * ff, ins, outs)


__all__ = ["encoder_layer", "multi_head_attention", "sdpa"]
