"""Built-in transformer graph: a stack of pre-LN encoder blocks (multi-head self-attention + FFN).

Op costs come from shapes, as in :mod:`workbench.models._layers` (float32, a multiply-add is two
FLOPs, 64×64 GEMM tiles for thread blocks).  Nothing is read from disk.
"""

from __future__ import annotations

import math

from workbench.errors import OptionError
from workbench.models._layers import GraphBuilder
from workbench.values.graph import Graph

__all__ = ["transformer_block"]


def _positive(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OptionError(f"transformer_block: {what} must be an integer >= 1, got {value!r}")
    return value


def _attention_heads(b: GraphBuilder, x: str, which: str, heads: int, perm: tuple[int, ...], *,
                     name: str) -> str:
    """Project ``x`` to q, k or v and split the heads: linear → reshape (view) → transpose."""
    n, s, d = b.shape(x)
    y = b.linear(x, d, name=f"{name}/{which}")
    y = b.reshape(y, (n, s, heads, d // heads), name=f"{name}/{which}_split")
    return b.transpose(y, perm, name=f"{name}/{which}_heads")


def _block(b: GraphBuilder, x: str, heads: int, d_ff: int, *, name: str) -> str:
    n, s, d = b.shape(x)
    dh = d // heads
    h = b.layernorm(x, name=f"{name}/ln1")
    q = _attention_heads(b, h, "q", heads, (0, 2, 1, 3), name=name)  # (N, H, S, dh)
    k = _attention_heads(b, h, "k", heads, (0, 2, 3, 1), name=name)  # (N, H, dh, S) = k^T
    v = _attention_heads(b, h, "v", heads, (0, 2, 1, 3), name=name)  # (N, H, S, dh)
    scores = b.matmul(q, k, name=f"{name}/scores")  # (N, H, S, S)
    probs = b.softmax(scores, axis=-1, scale=1.0 / math.sqrt(dh), name=f"{name}/softmax")
    ctx = b.matmul(probs, v, name=f"{name}/context")  # (N, H, S, dh)
    ctx = b.transpose(ctx, (0, 2, 1, 3), name=f"{name}/merge_heads")  # (N, S, H, dh)
    ctx = b.reshape(ctx, (n, s, d), name=f"{name}/merge")
    attn = b.linear(ctx, d, name=f"{name}/proj")
    x = b.add(x, attn, name=f"{name}/residual1")
    h = b.layernorm(x, name=f"{name}/ln2")
    h = b.linear(h, d_ff, name=f"{name}/ff1")
    h = b.gelu(h, name=f"{name}/gelu")
    h = b.linear(h, d, name=f"{name}/ff2")
    return b.add(x, h, name=f"{name}/residual2")


def transformer_block(batch: int = 1, *, seq_len: int = 128, d_model: int = 768, heads: int = 12,
                      d_ff: int = 3072, layers: int = 1) -> Graph:
    """``layers`` pre-LN transformer encoder blocks on an input of shape (batch, seq_len, d_model).

    Each block ``block<i>`` (22 ops): ``ln1`` → three independent branches ``q``/``k``/``v``
    (linear, a free ``reshape`` into heads, a ``transpose`` to (N, H, S, dh), k straight to
    (N, H, dh, S)) → ``scores`` = batched ``matmul`` q·kᵀ → ``softmax`` (the 1/√dh scale is folded
    in) → ``context`` = ·v → ``merge_heads`` transpose and ``merge`` reshape → ``proj`` linear →
    ``residual1`` add → ``ln2`` → ``ff1`` linear → ``gelu`` → ``ff2`` linear → ``residual2`` add.
    Linears are kind ``matmul`` with weight and bias inputs.  Simplified: no attention mask, no
    dropout, no embeddings or final norm.  Defaults are BERT-base sizes.  Complexity: O(layers).

    Examples
    --------
    >>> len(transformer_block(layers=2))
    44
    """
    n = _positive(batch, "batch")
    s = _positive(seq_len, "seq_len")
    d = _positive(d_model, "d_model")
    h = _positive(heads, "heads")
    ff = _positive(d_ff, "d_ff")
    count = _positive(layers, "layers")
    if d % h:
        raise OptionError(f"transformer_block: d_model={d} is not divisible by heads={h}")
    b = GraphBuilder(f"transformer_{count}x{d}_b{n}_s{s}")
    x = b.input("input", (n, s, d))
    for i in range(count):
        x = _block(b, x, h, ff, name=f"block{i}")
    return b.build()
