"""Small real architectures written in the test suite (no downloads): each a ``torch.nn.Module``
with an example input, built the way torchvision, timm and Hugging Face write them.

Together they cover what real models are made of: residual blocks with in-place ReLU and
``+=`` (ResNet), inception-style parallel branches and concat (GoogLeNet / Inception),
depthwise convolutions with squeeze-and-excite and hard-swish (MobileNetV3), SiLU and sigmoid
gating (EfficientNet), dense concatenation (DenseNet), channel split / shuffle with ``chunk`` and
``split`` (ShuffleNetV2), channels-last LayerNorm and layer scale (ConvNeXt), upsampling and skip
concatenation (U-Net), token mixing by transposes (MLP-Mixer), ``nn.MultiheadAttention`` in
``nn.TransformerEncoderLayer`` with a class token (ViT), ``scaled_dot_product_attention`` with
a causal mask and embeddings of integer tokens (GPT-2), and an attention mask input with a
hand-written softmax attention and token-type embeddings (BERT), RMS norm (T5), shifted
windows by ``roll`` with masks built by ``masked_fill`` and a gathered position bias (Swin,
:mod:`tests.model_zoo_swin`).

:data:`ZOO` maps a name to a builder ``() -> (model in eval mode, example inputs tuple)``; the
weights come from ``torch.manual_seed(0)`` so every test sees the same model.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from tests.model_zoo_swin import SwinTiny

Built = tuple[nn.Module, tuple[Any, ...]]


def conv_bn(c_in: int, c_out: int, k: int = 3, stride: int = 1, groups: int = 1,
            act: type[nn.Module] | None = nn.ReLU) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(c_in, c_out, k, stride, k // 2, groups=groups,
                                         bias=False), nn.BatchNorm2d(c_out)]
    if act is not None:
        layers.append(act(inplace=True) if act in (nn.ReLU, nn.Hardswish, nn.SiLU) else act())
    return nn.Sequential(*layers)


# ------------------------------------------------------------------------------ CNNs
class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock: in-place ReLU, ``out += identity``."""

    def __init__(self, c_in: int, c_out: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = (nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                         nn.BatchNorm2d(c_out))
                           if stride != 1 or c_in != c_out else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNetTiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(BasicBlock(16, 16), BasicBlock(16, 16))
        self.layer2 = BasicBlock(16, 32, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer2(self.layer1(self.pool(self.stem(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class InceptionModule(nn.Module):
    """GoogLeNet's four branches: 1x1; 1x1 -> 3x3; 1x1 -> 3x3 -> 3x3; pool -> 1x1; concat."""

    def __init__(self, c_in: int) -> None:
        super().__init__()
        self.b1 = conv_bn(c_in, 8, 1)
        self.b2 = nn.Sequential(conv_bn(c_in, 6, 1), conv_bn(6, 8))
        self.b3 = nn.Sequential(conv_bn(c_in, 4, 1), conv_bn(4, 6), conv_bn(6, 6))
        self.b4 = nn.Sequential(nn.AvgPool2d(3, 1, 1), conv_bn(c_in, 4, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)


class InceptionTiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, stride=2)
        self.mixed1 = InceptionModule(16)
        self.pool = nn.MaxPool2d(2)
        self.mixed2 = InceptionModule(26)
        self.fc = nn.Linear(26, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.mixed2(self.pool(self.mixed1(self.stem(x))))
        x = F.adaptive_avg_pool2d(x, (1, 1))
        return self.fc(F.dropout(torch.flatten(x, 1), 0.2, self.training))


class SqueezeExcite(nn.Module):
    """MobileNetV3's SE: avgpool, 1x1 conv, ReLU, 1x1 conv, hard-sigmoid, scale."""

    def __init__(self, c: int, squeeze: int, gate: type[nn.Module] = nn.Hardsigmoid) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.act = nn.ReLU()
        self.fc2 = nn.Conv2d(squeeze, c, 1)
        self.gate = gate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gate(self.fc2(self.act(self.fc1(self.avgpool(x)))))


class InvertedResidual(nn.Module):
    def __init__(self, c: int, expand: int, act: type[nn.Module],
                 gate: type[nn.Module] = nn.Hardsigmoid) -> None:
        super().__init__()
        self.block = nn.Sequential(conv_bn(c, expand, 1, act=act),
                                   conv_bn(expand, expand, 3, groups=expand, act=act),
                                   SqueezeExcite(expand, max(4, expand // 4), gate),
                                   conv_bn(expand, c, 1, act=None))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x)


class MobileNetV3Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(conv_bn(3, 16, stride=2, act=nn.Hardswish),
                                      InvertedResidual(16, 32, nn.ReLU),
                                      InvertedResidual(16, 48, nn.Hardswish))
        self.classifier = nn.Sequential(nn.Linear(16, 32), nn.Hardswish(inplace=True),
                                        nn.Dropout(0.2, inplace=True), nn.Linear(32, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


class EfficientNetTiny(nn.Module):
    """MBConv blocks with SiLU and a sigmoid-gated SE, stochastic depth as identity."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, stride=2, act=nn.SiLU)
        self.blocks = nn.Sequential(InvertedResidual(16, 32, nn.SiLU, nn.Sigmoid),
                                    InvertedResidual(16, 64, nn.SiLU, nn.Sigmoid))
        self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(16, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.stem(x)).mean(dim=(2, 3))
        return self.head(x)


class DenseNetTiny(nn.Module):
    """Dense layers concatenating their inputs, a transition with average pooling."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 8)
        self.layers = nn.ModuleList([
            nn.Sequential(nn.BatchNorm2d(8 + 4 * i), nn.ReLU(inplace=True),
                          nn.Conv2d(8 + 4 * i, 4, 3, padding=1, bias=False))
            for i in range(3)])
        self.transition = nn.Sequential(nn.BatchNorm2d(20), nn.ReLU(), nn.Conv2d(20, 10, 1),
                                        nn.AvgPool2d(2, 2))
        self.fc = nn.Linear(10, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [self.stem(x)]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        x = self.transition(torch.cat(features, 1))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    n, c, h, w = x.size()
    x = x.view(n, groups, c // groups, h, w)
    return torch.transpose(x, 1, 2).contiguous().view(n, -1, h, w)


class ShuffleUnit(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        half = c // 2
        self.branch = nn.Sequential(conv_bn(half, half, 1),
                                    conv_bn(half, half, 3, groups=half, act=None),
                                    conv_bn(half, half, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=1)
        return channel_shuffle(torch.cat((x1, self.branch(x2)), dim=1), 2)


class ShuffleNetTiny(nn.Module):
    """ShuffleNetV2 units (chunk, channel shuffle) and a ``split`` with unequal sizes."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 24, stride=2)
        self.units = nn.Sequential(ShuffleUnit(24), ShuffleUnit(24))
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.units(self.stem(x))
        a, b = torch.split(x, [16, 8], dim=1)
        return self.fc(a.mean((2, 3)) + b.mean((2, 3)).repeat(1, 2))


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7, permute to channels-last, LayerNorm, Linear-GELU-Linear, layer scale."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.dwconv = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.pwconv1 = nn.Linear(c, 4 * c)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.full((c,), 0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.gamma * self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtTiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 4, 4)
        self.blocks = nn.Sequential(ConvNeXtBlock(16), ConvNeXtBlock(16))
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x)).mean((-2, -1)))


class UNetTiny(nn.Module):
    """Encoder, bottleneck, nearest and bilinear upsampling, skip concatenation."""

    def __init__(self) -> None:
        super().__init__()
        self.enc1 = conv_bn(3, 8)
        self.enc2 = conv_bn(8, 16)
        self.mid = conv_bn(16, 16)
        self.dec2 = conv_bn(32, 8)
        self.dec1 = conv_bn(16, 8)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([F.interpolate(m, scale_factor=2.0, mode="nearest"), e2], 1))
        up = F.interpolate(d2, scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.out(self.dec1(torch.cat([up, e1], 1)))


# ------------------------------------------------------------------------------ transformers
class MixerTiny(nn.Module):
    """MLP-Mixer: patches, token mixing across the transposed sequence, channel mixing."""

    def __init__(self, patches: int = 16, dim: int = 16) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 4, 4)
        self.norm1 = nn.LayerNorm(dim)
        self.tokens = nn.Sequential(nn.Linear(patches, 32), nn.GELU(), nn.Linear(32, patches))
        self.norm2 = nn.LayerNorm(dim)
        self.channels = nn.Sequential(nn.Linear(dim, 32), nn.GELU(), nn.Linear(32, dim))
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x).flatten(2).transpose(1, 2)
        x = x + self.tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        x = x + self.channels(self.norm2(x))
        return self.head(x.mean(1))


class ViTTiny(nn.Module):
    """ViT: patch embedding, class token, position embedding, nn.TransformerEncoderLayer
    (``nn.MultiheadAttention``, GELU, pre-norm), head on the class token."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, 4)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 17, dim) * 0.02)
        self.encoder = nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.0, activation="gelu",
                                                  batch_first=True, norm_first=True)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class GPTTiny(nn.Module):
    """GPT-2: token and position embeddings, pre-norm blocks with causal SDPA and a GELU MLP,
    a tied language-model head."""

    def __init__(self, vocab: int = 64, dim: int = 32, seq: int = 16, layers: int = 2) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "ln_1": nn.LayerNorm(dim), "attn": CausalSelfAttention(dim, 4),
                "ln_2": nn.LayerNorm(dim),
                "mlp": nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * dim, dim))}))
        self.ln_f = nn.LayerNorm(dim)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = x + block["attn"](block["ln_1"](x))
            x = x + block["mlp"](block["ln_2"](x))
        return F.linear(self.ln_f(x), self.wte.weight)


class BertTiny(nn.Module):
    """BERT: word, position and token-type embeddings with LayerNorm, an attention mask input
    (additive, broadcast over heads), attention by matmul and softmax with ``chunk``ed
    projections, GELU feed-forward, post-norm; returns the sequence and the pooled output."""

    def __init__(self, vocab: int = 64, dim: int = 32, seq: int = 16, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.word = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(seq, dim)
        self.token_type = nn.Embedding(2, dim)
        self.emb_norm = nn.LayerNorm(dim, eps=1e-12)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim, eps=1e-12)
        self.ffn = nn.Sequential(nn.Linear(dim, 64), nn.GELU(), nn.Linear(64, dim))
        self.norm2 = nn.LayerNorm(dim, eps=1e-12)
        self.pooler = nn.Linear(dim, dim)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, t = ids.shape
        positions = torch.arange(t, device=ids.device).unsqueeze(0)
        x = self.word(ids) + self.position(positions) + self.token_type(torch.zeros_like(ids))
        x = self.emb_norm(x)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, -1).permute(0, 2, 1, 3) for z in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        scores = scores + (1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0
        attn = torch.softmax(scores, dim=-1) @ v
        x = self.norm1(x + self.out(attn.permute(0, 2, 1, 3).reshape(b, t, -1)))
        x = self.norm2(x + self.ffn(x))
        return x, torch.tanh(self.pooler(x[:, 0]))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


class T5Tiny(nn.Module):
    """T5's encoder layer: RMS norm, attention without scaling, ReLU feed-forward, residuals;
    ``nn.MultiheadAttention`` called directly (query, key, value)."""

    def __init__(self, vocab: int = 64, dim: int = 32) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.norm1 = RMSNorm(dim)
        self.attn = nn.MultiheadAttention(dim, 4, batch_first=True, bias=False)
        self.norm2 = RMSNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, 64, bias=False), nn.ReLU(),
                                 nn.Linear(64, dim, bias=False))
        self.final = RMSNorm(dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.ffn(self.norm2(x))
        return self.final(x)


def _image(batch: int = 2, size: int = 16) -> tuple[torch.Tensor]:
    return (torch.randn(batch, 3, size, size),)


def _tokens(batch: int = 2, seq: int = 16, vocab: int = 64) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq))


def _built(make: Callable[[], nn.Module], inputs: Callable[[], tuple[Any, ...]]
           ) -> Callable[[], Built]:
    def build() -> Built:
        torch.manual_seed(0)
        model = make().eval()
        return model, inputs()
    build.__name__ = make.__name__
    return build


def _bert_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 12:] = 0
    return _tokens(), mask


#: name -> builder of (model in eval mode, example inputs); seeded, so every call is the same.
ZOO: dict[str, Callable[[], Built]] = {
    "resnet": _built(ResNetTiny, _image),
    "inception": _built(InceptionTiny, _image),
    "mobilenet_v3": _built(MobileNetV3Tiny, _image),
    "efficientnet": _built(EfficientNetTiny, _image),
    "densenet": _built(DenseNetTiny, _image),
    "shufflenet": _built(ShuffleNetTiny, _image),
    "convnext": _built(ConvNeXtTiny, _image),
    "unet": _built(UNetTiny, _image),
    "mixer": _built(MixerTiny, _image),
    "vit": _built(ViTTiny, _image),
    "gpt2": _built(GPTTiny, lambda: (_tokens(),)),
    "bert": _built(BertTiny, _bert_inputs),
    "t5": _built(T5Tiny, lambda: (_tokens(),)),
    "swin": _built(SwinTiny, lambda: (torch.randn(2, 3, 48, 48),)),
}


@functools.cache
def imported(name: str) -> tuple[nn.Module, tuple[Any, ...], Any]:
    """(model, example, graph) of the zoo model ``name``, imported once per process with
    ``wb.io.from_torch`` (its default-cost notes silenced).  Callers must not change the model."""
    import workbench as wb

    model, example = ZOO[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # default-cost notes
        return model, example, wb.io.from_torch(model, example)


def new_inputs(example: tuple[Any, ...], seed: int = 1) -> tuple[Any, ...]:
    """Inputs of the example's shapes and dtypes with other values (integer tensors: the same
    value range, masks stay 0/1)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for x in example:
        if x.is_floating_point():
            out.append(torch.randn(x.shape, generator=g, dtype=x.dtype))
        else:
            high = int(x.max()) + 1
            out.append(torch.randint(0, max(high, 1), x.shape, generator=g, dtype=x.dtype))
    return tuple(out)


__all__ = ["ZOO", "new_inputs"]
