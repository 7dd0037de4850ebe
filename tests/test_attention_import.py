"""Attention and the composite transformer modules import with their FLOPs: ViT-B/16 (a
hand-written module of torchvision's vit_b_16 shapes: torchvision is not a dependency) and
``nn.TransformerEncoder`` within 3% of ``torch.utils.flop_counter.FlopCounterMode``; the fused
fast-path ops of an execution trace get the same rule as the modules."""

from __future__ import annotations

from typing import Any

import pytest

from workbench.io.torch.fx import cost_of_call, from_torch
from workbench.ops.costs import TensorInfo

torch = pytest.importorskip("torch")
nn = torch.nn


class ViTB16(nn.Module):
    """torchvision's ``vit_b_16`` shapes: 16x16 patches of a 224 image, width 768, 12 layers of
    12 heads, MLP 3072, 1000 classes (pre-norm encoder layers, GELU)."""

    def __init__(self) -> None:
        super().__init__()
        dim = 768
        self.conv_proj = nn.Conv2d(3, dim, 16, stride=16)
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embedding = nn.Parameter(torch.zeros(1, 197, dim))
        layer = nn.TransformerEncoderLayer(dim, 12, 3072, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(dim)
        self.heads = nn.Linear(dim, 1000)

    def forward(self, x: Any) -> Any:
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], 1) + self.pos_embedding
        return self.heads(self.ln(self.encoder(x))[:, 0])


def _reference(module: Any, *args: Any) -> int:
    """FlopCounterMode's count with attention on the math path: the CPU's fused attention
    kernel is not among the ops it counts, the math path's matrix products are (and with
    gradients enabled, so the encoder's fused fast path, not counted either, is not taken)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        module(*args)
    return int(counter.get_total_flops())


def _flops(module: Any, *args: Any, **kw: Any) -> float:
    return sum(op.flops for op in from_torch(module, args, **kw).ops)


def test_vit_b16_within_3_percent() -> None:
    vit, x = ViTB16().eval(), torch.randn(1, 3, 224, 224)
    reference = _reference(vit, x)
    assert reference == pytest.approx(35.13e9, rel=0.01)  # 33.7 GFLOP of linears + attention
    g = from_torch(vit, (x,))
    assert {op.attrs["tracer"] for op in g.ops} == {"torch.export"}
    assert sum(op.kind == "attention" for op in g.ops) == 12
    assert sum(op.flops for op in g.ops) == pytest.approx(reference, rel=0.03)


def test_transformer_encoder_within_3_percent() -> None:
    layer = nn.TransformerEncoderLayer(256, 8, 1024, batch_first=True)
    encoder, x = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).eval(), \
        torch.randn(2, 64, 256)
    assert _flops(encoder, x) == pytest.approx(_reference(encoder, x), rel=0.03)


@pytest.mark.parametrize("batch_first", [True, False])
def test_composite_modules_as_fx_leaves(batch_first: bool) -> None:
    """torch.fx keeps torch.nn modules whole: MultiheadAttention and TransformerEncoderLayer
    are costed by their own rules (not 'output elements')."""
    x = torch.randn(2, 10, 64) if batch_first else torch.randn(10, 2, 64)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(64, 4, batch_first=batch_first)
            self.layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=batch_first)

        def forward(self, x: Any) -> Any:
            return self.layer(self.attn(x, x, x, need_weights=False)[0])

    block = Block().eval()
    g = from_torch(block, (x,), tracer="fx")
    assert [op.kind for op in g.ops if op.flops > 0][:2] == ["attention", "transformer_layer"]
    assert sum(op.flops for op in g.ops) == pytest.approx(_reference(block, x), rel=0.03)


def test_sdpa_and_fused_fast_path_rules() -> None:
    q = TensorInfo((2, 4, 10, 16))
    kind, cost, _ = cost_of_call("scaled_dot_product_attention", [q, q, q], [q])
    assert kind == "attention" and cost is not None
    assert cost.flops == 2 * 2 * 4 * 10 * 10 * (16 + 16)
    # aten::_transformer_encoder_layer_fwd(src, E, H, qkv_w, qkv_b, proj_w, proj_b, ...)
    b, n, e, f = 2, 10, 64, 128
    infos = [TensorInfo((b, n, e)), TensorInfo((3 * e, e)), TensorInfo((3 * e,)),
             TensorInfo((e, e)), TensorInfo((e,)), TensorInfo((e,)), TensorInfo((e,)),
             TensorInfo((e,)), TensorInfo((e,)), TensorInfo((f, e)), TensorInfo((f,)),
             TensorInfo((e, f)), TensorInfo((e,))]
    kind, cost, _ = cost_of_call("_transformer_encoder_layer_fwd", infos, [infos[0]])
    assert kind == "transformer_layer" and cost is not None
    tokens = b * n
    assert cost.flops == 2 * tokens * e * 3 * e + 4 * b * n * n * e + 2 * tokens * e * e \
        + 4 * tokens * e * f
