"""Architectures one step outside :mod:`tests.model_zoo`, written in the test suite (no downloads),
the way ``transformers``, torchaudio and timm write them: each the smallest model that still has
the structure that broke the workbench (issue 41).

* ``llama``: a decoder-only LLM — RMS norm, rotary position embeddings computed from positions
  (``inv_freq @ positions``, ``cat``/``cos``/``sin``, ``rotate_half`` by ``chunk``), grouped-query
  attention (two KV heads for four query heads, expanded as ``transformers`` does), a causal mask
  combined with an optional padding mask, SwiGLU MLP, tied input/output embeddings;
* ``encoder_decoder``: a BART/T5-style encoder-decoder — padding-masked self-attention written by
  hand (``masked_fill``), causal decoder self-attention, cross-attention, learned positions;
* ``mamba``: a selective state-space (Mamba) block — causal depthwise ``conv1d`` cut back to the
  sequence length, ``split`` into dt/B/C, ``softplus``, the selective scan as Mamba's reference
  loop over time (``stack`` of per-step states);
* ``lstm`` / ``gru``: ``nn.LSTM`` (two layers, the last step and the final states read) and a
  bidirectional ``nn.GRU``;
* ``mha``: ``nn.MultiheadAttention`` with a key padding mask and a float causal mask;
* ``audio``: a Whisper-style audio encoder — two ``conv1d`` with GELU (the second strided),
  tokens by ``permute``, sinusoidal positions sliced to the length, a pre-norm attention block;
* ``video``: an R3D-style 3-D CNN — ``Conv3d`` + ``BatchNorm3d``, a residual 3-D block,
  ``AdaptiveAvgPool3d``;
* ``pvt``: a PVT/SegFormer-style stage — patch embedding by a strided conv, attention with
  spatial reduction (tokens reshaped to an image, a strided conv, back to tokens) and Mix-FFN, a
  depthwise convolution fed by tokens reshaped to an image;
* ``keywords``: a BERT-style encoder called with keywords and optional arguments
  (``forward(input_ids, attention_mask=None, token_type_ids=None)``);
* ``dataclass_out`` / ``dict_out``: models returning a dataclass and a dict.

:data:`ANY` maps a name to a :class:`Entry`: ``build()`` makes the model (weights from
``torch.manual_seed(0)``, eval mode) and ``inputs(batch, length, seed)`` makes ``(args,
kwargs)`` for a batch size and a sequence length (frames, or image side for the images), so the
same model is called at several shapes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

Inputs = tuple[tuple[Any, ...], dict[str, Any]]
VOCAB = 50


# ------------------------------------------------------------------------------ decoder LLM
class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Rotary(nn.Module):
    """``transformers``' rotary embedding: frequencies by a matmul of ``inv_freq`` and the
    positions, cosines and sines of them repeated over both halves."""

    def __init__(self, dim: int, base: float = 10000.0) -> None:
        super().__init__()
        inv = 1.0 / base ** (torch.arange(0, dim, 2).float() / dim)
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        inv = self.inv_freq[None, :, None].expand(positions.shape[0], -1, 1)
        freqs = (inv @ positions[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


class GQAttention(nn.Module):
    def __init__(self, d: int, heads: int, kv_heads: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.heads // self.kv_heads  # transformers' repeat_kv
        k = k[:, :, None].expand(b, self.kv_heads, rep, t, self.hd).reshape(b, self.heads, t,
                                                                           self.hd)
        v = v[:, :, None].expand(b, self.kv_heads, rep, t, self.hd).reshape(b, self.heads, t,
                                                                           self.hd)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.o(y.transpose(1, 2).reshape(b, t, -1))


class LlamaTiny(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4, kv_heads: int = 2, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d)
        self.rotary = Rotary(d // heads)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            block = nn.ModuleDict({"norm1": RMSNorm(d), "attn": GQAttention(d, heads, kv_heads),
                                   "norm2": RMSNorm(d), "gate": nn.Linear(d, 2 * d, bias=False),
                                   "up": nn.Linear(d, 2 * d, bias=False),
                                   "down": nn.Linear(2 * d, d, bias=False)})
            self.blocks.append(block)
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, VOCAB, bias=False)
        self.head.weight = self.embed.weight  # tied embeddings

    def forward(self, input_ids: torch.Tensor,
                attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        b, t = input_ids.shape
        x = self.embed(input_ids)
        positions = torch.arange(t, device=input_ids.device)[None].expand(b, t)
        cos, sin = self.rotary(positions)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()[None, None]
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :].bool()
        for blk in self.blocks:
            x = x + blk["attn"](blk["norm1"](x), cos, sin, mask)
            h = blk["norm2"](x)
            x = x + blk["down"](F.silu(blk["gate"](h)) * blk["up"](h))
        return self.head(self.norm(x))


# ------------------------------------------------------------------------------ encoder-decoder
class HandAttention(nn.Module):
    """Softmax attention written out (BART's eager path): scores, additive mask, softmax."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: torch.Tensor, memory: torch.Tensor,
                bias: torch.Tensor | None) -> torch.Tensor:
        b, t, d = x.shape
        s = memory.shape[1]
        q = self.q(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k(memory).view(b, s, self.heads, self.hd).transpose(1, 2)
        v = self.v(memory).view(b, s, self.heads, self.hd).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        if bias is not None:
            scores = scores + bias
        y = scores.softmax(dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(b, t, d))


class EncoderDecoderTiny(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4, max_len: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(max_len, d)
        self.enc_attn, self.enc_ln1 = HandAttention(d, heads), nn.LayerNorm(d)
        self.enc_ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.enc_ln2 = nn.LayerNorm(d)
        self.dec_self, self.dec_ln1 = HandAttention(d, heads), nn.LayerNorm(d)
        self.dec_cross, self.dec_ln2 = HandAttention(d, heads), nn.LayerNorm(d)
        self.dec_ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.dec_ln3 = nn.LayerNorm(d)

    def _embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embed(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor,
                attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        pad = None
        if attention_mask is not None:
            pad = torch.zeros(attention_mask.shape, dtype=torch.float32,
                              device=input_ids.device).masked_fill(attention_mask == 0, -1e9)
            pad = pad[:, None, None, :]
        x = self._embed(input_ids)
        x = self.enc_ln1(x + self.enc_attn(x, x, pad))
        x = self.enc_ln2(x + self.enc_ff(x))
        y = self._embed(decoder_input_ids)
        t = y.shape[1]
        causal = torch.full((t, t), float("-inf"), device=y.device).triu(1)
        y = self.dec_ln1(y + self.dec_self(y, y, causal))
        y = self.dec_ln2(y + self.dec_cross(y, x, pad))
        return self.dec_ln3(y + self.dec_ff(y))


# ------------------------------------------------------------------------------ state space
class MambaBlock(nn.Module):
    """Mamba's mixer, its reference ("slow") path: in-projection, causal depthwise conv1d, the
    input-dependent dt/B/C, and the selective scan as a loop over time."""

    def __init__(self, d: int = 16, state: int = 4, expand: int = 2, conv: int = 4) -> None:
        super().__init__()
        inner = expand * d
        self.inner, self.state, self.dt_rank = inner, state, max(1, d // 16)
        self.in_proj = nn.Linear(d, 2 * inner, bias=False)
        self.conv = nn.Conv1d(inner, inner, conv, groups=inner, padding=conv - 1)
        self.x_proj = nn.Linear(inner, self.dt_rank + 2 * state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, inner)
        a = torch.arange(1, state + 1, dtype=torch.float32).repeat(inner, 1)
        self.A_log = nn.Parameter(torch.log(a))
        self.D = nn.Parameter(torch.ones(inner))
        self.out_proj = nn.Linear(inner, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        xi, z = self.in_proj(x).chunk(2, dim=-1)
        xi = F.silu(self.conv(xi.transpose(1, 2))[..., :t].transpose(1, 2))
        dt, bm, cm = torch.split(self.x_proj(xi), [self.dt_rank, self.state, self.state], dim=-1)
        dt = F.softplus(self.dt_proj(dt))
        a = -torch.exp(self.A_log.float())
        da = torch.exp(dt.unsqueeze(-1) * a)
        dbx = dt.unsqueeze(-1) * bm.unsqueeze(2) * xi.unsqueeze(-1)
        h = torch.zeros(b, self.inner, self.state, device=x.device, dtype=x.dtype)
        ys = []
        for i in range(t):
            h = da[:, i] * h + dbx[:, i]
            ys.append((h * cm[:, i].unsqueeze(1)).sum(-1))
        y = torch.stack(ys, dim=1) + xi * self.D
        return self.out_proj(y * F.silu(z))


class MambaTiny(nn.Module):
    def __init__(self, d: int = 16, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d)
        self.norms = nn.ModuleList(RMSNorm(d) for _ in range(layers))
        self.mixers = nn.ModuleList(MambaBlock(d) for _ in range(layers))
        self.norm = RMSNorm(d)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(input_ids)
        for norm, mixer in zip(self.norms, self.mixers, strict=True):
            x = x + mixer(norm(x))
        return self.norm(x)


# ------------------------------------------------------------------------------ recurrent
class LSTMTiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.fc = nn.Linear(16 * 3, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, (h, c) = self.lstm(x)
        return self.fc(torch.cat([y[:, -1], h[-1], c[-1]], dim=-1))


class GRUTiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(8, 16, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.gru(x)
        return self.fc(y.mean(dim=1))


class MHATiny(nn.Module):
    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.ln = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        causal = torch.full((t, t), float("-inf"), device=x.device).triu(1)
        y, _ = self.attn(x, x, x, key_padding_mask=key_padding_mask, attn_mask=causal,
                         need_weights=False)
        return self.ln(x + y)


# ------------------------------------------------------------------------------ audio, video, PVT
class AudioTiny(nn.Module):
    def __init__(self, mels: int = 8, d: int = 32, heads: int = 4, max_len: int = 64) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        pos = torch.arange(max_len)[:, None] / 10000 ** (torch.arange(0, d, 2)[None] / d)
        self.register_buffer("positions", torch.cat([pos.sin(), pos.cos()], dim=1))
        self.ln1, self.ln2, self.ln_post = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.heads = heads

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = F.gelu(self.conv2(F.gelu(self.conv1(features)))).permute(0, 2, 1)
        b, t, d = x.shape
        x = x + self.positions[:t]
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(
            2, 0, 3, 1, 4).unbind(0)
        y = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return self.ln_post(x + self.mlp(self.ln2(x)))


class Block3d(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv3d(c, c, 3, padding=1, bias=False), nn.BatchNorm3d(c)
        self.conv2, self.bn2 = nn.Conv3d(c, c, 3, padding=1, bias=False), nn.BatchNorm3d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class VideoTiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 8, (3, 5, 5), stride=(1, 2, 2), padding=(1, 2, 2),
                                            bias=False), nn.BatchNorm3d(8), nn.ReLU(inplace=True))
        self.block = Block3d(8)
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, clip: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(self.block(self.stem(clip))).flatten(1))


class PVTStage(nn.Module):
    def __init__(self, d: int = 32, heads: int = 2, sr: int = 2) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, stride=4)
        self.ln0, self.ln1, self.ln2, self.ln_sr = (nn.LayerNorm(d) for _ in range(4))
        self.q, self.kv, self.proj = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
        self.sr = nn.Conv2d(d, d, sr, stride=sr)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.dw = nn.Conv2d(4 * d, 4 * d, 3, padding=1, groups=4 * d)  # Mix-FFN's depthwise conv
        self.heads = heads

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        x = self.patch(image)
        b, d, h, w = x.shape
        x = self.ln0(x.flatten(2).transpose(1, 2))
        n = x.shape[1]
        hd = d // self.heads
        y = self.ln1(x)
        q = self.q(y).reshape(b, n, self.heads, hd).permute(0, 2, 1, 3)
        reduced = self.sr(y.permute(0, 2, 1).reshape(b, d, h, w)).reshape(b, d, -1)
        reduced = self.ln_sr(reduced.permute(0, 2, 1))
        k, v = self.kv(reduced).reshape(b, -1, 2, self.heads, hd).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1) * hd ** -0.5).softmax(dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, n, d))
        y = self.fc1(self.ln2(x))
        y = self.dw(y.transpose(1, 2).reshape(b, 4 * d, h, w)).flatten(2).transpose(1, 2)
        x = x + self.fc2(F.gelu(y))
        return x.mean(dim=1)


# ------------------------------------------------------------------------------ call conventions
class KeywordBert(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.words, self.types, self.pos = (nn.Embedding(VOCAB, d), nn.Embedding(2, d),
                                            nn.Embedding(64, d))
        self.ln = nn.LayerNorm(d)
        self.attn = HandAttention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.pool = nn.Linear(d, d)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.words(input_ids) + self.pos(torch.arange(input_ids.shape[1],
                                                          device=input_ids.device))
        if token_type_ids is not None:
            x = x + self.types(token_type_ids)
        x = self.ln(x)
        bias = None
        if attention_mask is not None:
            bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        x = self.ln2(x + self.attn(x, x, bias))
        return x, torch.tanh(self.pool(x[:, 0]))


@dataclass
class TinyOutput:
    logits: torch.Tensor
    hidden: torch.Tensor


class DataclassOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 24), nn.GELU())
        self.head = nn.Linear(24, 3)

    def forward(self, x: torch.Tensor) -> TinyOutput:
        h = self.body(x)
        return TinyOutput(logits=self.head(h), hidden=h)


class DictOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 3, padding=1)
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = F.relu(self.conv(x))
        return {"logits": self.head(h.mean(-1)), "features": h}


# ------------------------------------------------------------------------------ the table
@dataclass(frozen=True)
class Entry:
    """A model class and how to call it at a batch size and a length."""

    make: Callable[[], nn.Module]
    inputs: Callable[[int, int, int], Inputs]
    lengths: tuple[int, ...] = (5, 8, 11)

    def build(self) -> nn.Module:
        torch.manual_seed(0)
        return self.make().eval()


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _ids(b: int, t: int, seed: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (b, t), generator=_gen(seed))


def _padding(b: int, t: int, seed: int) -> torch.Tensor:
    """1 for real tokens, 0 for padding at the end of every row but the first (which is full)."""
    keep = torch.ones(b, t, dtype=torch.long)
    lengths = torch.randint(max(1, t // 2), t + 1, (b,), generator=_gen(seed + 100))
    for i in range(1, b):
        keep[i, int(lengths[i]):] = 0
    return keep


def _floats(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=_gen(seed))


ANY: dict[str, Entry] = {
    "llama": Entry(LlamaTiny, lambda b, t, s: ((_ids(b, t, s),),
                                               {"attention_mask": _padding(b, t, s)})),
    "encoder_decoder": Entry(EncoderDecoderTiny, lambda b, t, s: (
        (_ids(b, t, s), _ids(b, max(2, t - 2), s + 1)), {"attention_mask": _padding(b, t, s)})),
    "mamba": Entry(MambaTiny, lambda b, t, s: ((_ids(b, t, s),), {}), lengths=(4, 6, 9)),
    "lstm": Entry(LSTMTiny, lambda b, t, s: ((_floats(b, t, 8, seed=s),), {})),
    "gru": Entry(GRUTiny, lambda b, t, s: ((_floats(b, t, 8, seed=s),), {})),
    "mha": Entry(MHATiny, lambda b, t, s: (
        (_floats(b, t, 32, seed=s), _padding(b, t, s) == 0), {})),
    "audio": Entry(AudioTiny, lambda b, t, s: ((_floats(b, 8, 2 * t, seed=s),), {})),
    "video": Entry(VideoTiny, lambda b, t, s: ((_floats(b, 3, 2 + t // 4, 4 * (t // 2),
                                                        4 * (t // 2), seed=s),), {})),
    "pvt": Entry(PVTStage, lambda b, t, s: ((_floats(b, 3, 8 * (t // 2), 8 * (t // 2),
                                                     seed=s),), {}), lengths=(4, 6, 8)),
    "keywords": Entry(KeywordBert, lambda b, t, s: ((_ids(b, t, s),), {
        "attention_mask": _padding(b, t, s),
        "token_type_ids": (torch.arange(t)[None] >= t // 2).long().expand(b, t)})),
    "dataclass_out": Entry(DataclassOut, lambda b, t, s: ((_floats(b, t, 12, seed=s),), {})),
    "dict_out": Entry(DictOut, lambda b, t, s: ((_floats(b, 4, t, seed=s),), {})),
}

__all__ = ["ANY", "Entry", "TinyOutput"]
