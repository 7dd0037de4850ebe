"""A Swin transformer for :mod:`tests.model_zoo`, written the way torchvision writes ``swin_t``:
shifted windows by ``torch.roll``, window partition and reverse by ``view``/``permute``,
padding to whole windows, a relative position bias gathered from its table by an index buffer,
the shifted windows' attention mask built with ``new_zeros`` and ``masked_fill``, patch merging
by strided slices.  Its shape arithmetic is what the ONNX exporters spell as ``Shape -> Gather
-> Concat`` chains (tests/test_onnx_shapes.py)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class SwinAttention(nn.Module):
    """torchvision's ``ShiftedWindowAttention``: pad to whole windows, cyclic shift by
    ``torch.roll``, window partition by ``view``/``permute``, attention with a relative position
    bias gathered from its table by an index buffer, the shifted windows' attention mask built
    from the padded size, window reverse, shift back, unpad."""

    def __init__(self, dim: int, window: int, shift: int, heads: int) -> None:
        super().__init__()
        self.window, self.shift, self.heads = window, shift, heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.relative_position_bias_table = nn.Parameter(
            torch.randn((2 * window - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window),
                                            indexing="ij")).flatten(1)
        relative = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
        index = relative[:, :, 0] * (2 * window - 1) + relative[:, :, 1]
        self.register_buffer("relative_position_index", index.flatten())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, c = x.shape
        ws = self.window
        pad_r, pad_b = (ws - w % ws) % ws, (ws - h % ws) % ws
        x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
        _, ph, pw, _ = x.shape
        shift = self.shift if ws < ph and ws < pw else 0
        if shift > 0:
            x = torch.roll(x, shifts=(-shift, -shift), dims=(1, 2))
        windows = (ph // ws) * (pw // ws)
        x = x.view(b, ph // ws, ws, pw // ws, ws, c)
        x = x.permute(0, 1, 3, 2, 4, 5).reshape(b * windows, ws * ws, c)
        qkv = self.qkv(x).reshape(x.size(0), x.size(1), 3, self.heads, c // self.heads)
        qkv = qkv.permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * (c // self.heads) ** -0.5).matmul(k.transpose(-2, -1))
        n = ws * ws
        bias = self.relative_position_bias_table[self.relative_position_index]
        attn = attn + bias.view(n, n, -1).permute(2, 0, 1).contiguous().unsqueeze(0)
        if shift > 0:
            mask = x.new_zeros((ph, pw))
            count = 0
            for hs in ((0, -ws), (-ws, -shift), (-shift, None)):
                for wsl in ((0, -ws), (-ws, -shift), (-shift, None)):
                    mask[hs[0]:hs[1], wsl[0]:wsl[1]] = count
                    count += 1
            mask = mask.view(ph // ws, ws, pw // ws, ws).permute(0, 2, 1, 3).reshape(windows, n)
            mask = mask.unsqueeze(1) - mask.unsqueeze(2)
            mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
            attn = attn.view(x.size(0) // windows, windows, self.heads, n, n)
            attn = (attn + mask.unsqueeze(1).unsqueeze(0)).view(-1, self.heads, n, n)
        x = torch.softmax(attn, dim=-1).matmul(v).transpose(1, 2).reshape(x.size(0), n, c)
        x = self.proj(x)
        x = x.view(b, ph // ws, pw // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        x = x.reshape(b, ph, pw, c)
        if shift > 0:
            x = torch.roll(x, shifts=(shift, shift), dims=(1, 2))
        return x[:, :h, :w, :].contiguous()


class SwinBlock(nn.Module):
    def __init__(self, dim: int, window: int, shift: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = SwinAttention(dim, window, shift, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    """torchvision's ``PatchMerging``: pad to even sizes, the four strided slices concatenated,
    LayerNorm, a linear reduction."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, w, _ = x.shape[-3:]
        x = F.pad(x, (0, 0, 0, w % 2, 0, h % 2))
        x = torch.cat([x[..., 0::2, 0::2, :], x[..., 1::2, 0::2, :], x[..., 0::2, 1::2, :],
                       x[..., 1::2, 1::2, :]], -1)
        return self.reduction(self.norm(x))


class SwinTiny(nn.Module):
    """Swin transformer (torchvision's ``swin_t`` written small): patch embedding to channels
    last, two stages of a plain and a shifted window block with patch merging between them,
    the second on a size that is not a whole number of windows (padded), pooled head."""

    def __init__(self, dim: int = 16, window: int = 4) -> None:
        super().__init__()
        self.patch = nn.Sequential(nn.Conv2d(3, dim, 4, 4))
        self.patch_norm = nn.LayerNorm(dim)
        self.stage1 = nn.Sequential(SwinBlock(dim, window, 0, 2),
                                    SwinBlock(dim, window, window // 2, 2))
        self.merge = PatchMerging(dim)
        self.stage2 = nn.Sequential(SwinBlock(2 * dim, window, 0, 4),
                                    SwinBlock(2 * dim, window, window // 2, 4))
        self.norm = nn.LayerNorm(2 * dim)
        self.head = nn.Linear(2 * dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_norm(self.patch(x).permute(0, 2, 3, 1))
        x = self.stage2(self.merge(self.stage1(x)))
        x = self.norm(x).permute(0, 3, 1, 2)
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


__all__ = ["PatchMerging", "SwinAttention", "SwinBlock", "SwinTiny"]
