"""Products and attention: ``matmul`` (GEMM, ONNX's Gemm and torch's linear / addmm), ``einsum``
(a two-operand contraction) and ``attention`` (one fused kernel, flash SDPA).

``matmul`` computes ``alpha * op(A) @ op(B) + beta * bias`` (``trans_a`` / ``trans_b``;
``bias_first`` for torch's addmm); ``attention`` is softmax(Q K^T * scale + mask) V with an
optional causal mask.  The import-only ``transformer_layer`` names torch's fused encoder layer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from workbench.errors import OptionError
from workbench.ops.arrays import Array, OpLike, ShapeOf, _dtype, _f64, softmax
from workbench.ops.attrs import flag, number
from workbench.ops.costs import Info, ShapeCost, einsum_cost, first_of, matmul_cost
from workbench.ops.kind import kind
from workbench.ops.readers import Shape, is_number
from workbench.ops.tensors import Tensor, _f, torch_module

# ------------------------------------------------------------------------ NumPy references


def _gemm_operands(op: OpLike, a: list[Array]) -> tuple[Array, Array, Array | None]:
    """(A, B, bias) of a matmul: ``bias_first`` (torch's addmm) moves the bias first."""
    if op.attrs.get("bias_first") and len(a) > 2:
        return a[1], a[2], a[0]
    return a[0], a[1], a[2] if len(a) > 2 else None


def matmul_reference(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``alpha * op(A) @ op(B) + beta * bias`` (op: transposed when ``trans_a``/``trans_b``,
    ONNX's Gemm and torch's linear weight), the bias when an input gives it."""
    x, w, bias = _gemm_operands(op, a)
    at = op.attrs
    x = np.swapaxes(x, -1, -2) if at.get("trans_a") else x
    w = np.swapaxes(w, -1, -2) if at.get("trans_b") else w
    out = np.matmul(_f64(x), _f64(w)) * number(at, "alpha", 1.0)
    if bias is not None:
        out = out + number(at, "beta", 1.0) * _f64(bias)
    return [out.astype(_dtype(x, w))]


def einsum(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """``einsum(equation, *operands)`` in float64, returned in the operands' dtype."""
    return [np.einsum(str(op.attrs["equation"]), *(_f64(t) for t in a)).astype(_dtype(*a))]


def attention(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Scaled dot-product attention of ``q, k, v`` (and an optional mask: boolean keeps,
    floating adds): ``softmax(q k^T * scale + mask) v``, ``scale`` default 1/sqrt(head size),
    ``is_causal`` masks the future."""
    q, k, v = (_f64(t) for t in a[:3])
    scale = number(op.attrs, "scale", 1.0 / math.sqrt(q.shape[-1]))
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if flag(op.attrs, "is_causal", False):
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    if len(a) > 3:
        mask = a[3]
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + _f64(mask)
    return [np.matmul(softmax(s, axis=-1).astype(np.float64), v).astype(_dtype(a[0]))]

# ------------------------------------------------------------------------ torch forms


# ------------------------------------------------------------------------ products
def matmul_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``alpha * op(A) @ op(B) + beta * bias`` (``trans_a``/``trans_b``, ``bias_first``):
    ``F.linear`` for a transposed 2-D B, else ``torch.matmul``."""
    torch = torch_module()
    at = op.attrs
    x, w, bias = (a[1], a[2], a[0]) if at.get("bias_first") and len(a) > 2 else (
        a[0], a[1], a[2] if len(a) > 2 else None)
    alpha, beta = number(at, "alpha", 1.0), number(at, "beta", 1.0)
    x = x.transpose(-1, -2) if at.get("trans_a") else x
    if at.get("trans_b") and w.dim() == 2 and alpha == beta == 1.0:
        return [_f().linear(x, w, bias)]
    w = w.transpose(-1, -2) if at.get("trans_b") else w
    out = torch.matmul(x, w)
    out = out if alpha == 1.0 else out * alpha
    if bias is None:
        return [out]
    return [out + bias if beta == 1.0 else out + beta * bias]


def einsum_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    return [torch_module().einsum(str(op.attrs["equation"]), *a)]


def attention_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """``F.scaled_dot_product_attention(q, k, v, mask, is_causal, scale)``; an op that is the
    model's own (``needs_program``: a ``MultiheadAttention`` module call) has no form."""
    if op.attrs.get("needs_program"):
        raise OptionError("it is a module call whose weights live in the model (from_torch "
                          "keeps them in graph.program; this graph has none)")
    mask = a[3] if len(a) > 3 else None
    scale = op.attrs.get("scale")
    return [_f().scaled_dot_product_attention(
        a[0], a[1], a[2], attn_mask=mask, is_causal=flag(op.attrs, "is_causal", False),
        scale=None if scale is None else float(scale))]


# ------------------------------------------------------------ ONNX import: attribute conversions


def _onnx_gemm(a: dict[str, Any], node: Any) -> dict[str, Any]:
    return {"trans_a": bool(a.get("trans_a") or False), "trans_b": bool(a.get("trans_b")
                                                                         or False),
            "alpha": float(a.get("alpha", 1.0)), "beta": float(a.get("beta", 1.0))}


# ------------------------------------------------------------ torch import: call conversions


def _torch_einsum(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    """The equation, and its contraction as the GEMM the launch rule times (two operands)."""
    from workbench.ops.costs import einsum_gemm

    equation = str(named["equation"])
    gemm = einsum_gemm(equation, ins)
    return {"equation": equation, **({} if gemm is None else gemm)}


def _torch_linear(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
            dtype: str | None) -> dict[str, Any]:
    return {"trans_b": True}


def _torch_addmm(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
           dtype: str | None) -> dict[str, Any]:
    return {"bias_first": True, "alpha": named.get("alpha"), "beta": named.get("beta")}


def _torch_sdpa(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
          dtype: str | None) -> dict[str, Any]:
    scale = named.get("scale")
    return {"is_causal": bool(named.get("is_causal", False)),
            "scale": scale if is_number(scale) else None}


def _torch_module_call(named: dict[str, Any], ins: list[Shape], outs: list[Shape],
                 dtype: str | None) -> dict[str, Any]:
    return {"needs_program": True}


# -------------------------------------------------------------- ONNX import: cost rules


def _gemm(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    """Gemm ``op(A) @ op(B) + C`` with ``A`` 2-D: inner size is ``A[0]`` if ``trans_a`` else
    ``A[1]``."""
    x = first_of(ins)
    if x is None or len(x.shape) != 2:
        return None
    return matmul_cost(x.shape[0] if a.get("trans_a") else x.shape[1], first_of(outs), ins, outs)


def _matmul(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    x = first_of(ins)
    if x is None or not x.shape:
        return None
    return matmul_cost(x.shape[-1], first_of(outs), ins, outs)


def _einsum(ins: Sequence[Info], outs: Sequence[Info], a: Mapping[str, Any]) -> ShapeCost | None:
    """A two-operand Einsum: :func:`~workbench.ops.costs.einsum_cost`."""
    return einsum_cost(str(a.get("equation", "")), ins, outs)


# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind("matmul", "compute", onnx_cost={"Gemm": _gemm, "MatMul": _matmul},
         attr_bounds={"k": "size"}, weight_inputs=(1,), fan_in="features", gemm=True,
         launch_rule="gemm", attrs="trans_a trans_b alpha beta bias_first bias m k n batch weight",
         reference=matmul_reference, torch_form=matmul_torch, onnx="Gemm MatMul",
         onnx_attrs={"Gemm": _onnx_gemm}, torch="Linear linear matmul mm bmm addmm",
         torch_attrs={"linear Linear": _torch_linear, "addmm": _torch_addmm},
         kernel_names="gemm gemv matmul cublas cutlass cijk_ epilogue::impl triton_tem",
         kernel_rank=7),
    kind("einsum", "compute", onnx_cost={"Einsum": _einsum}, attr_bounds={"k": "size"}, gemm=True,
         launch_rule="gemm", attrs="equation m k n batch", reference=einsum,
         torch_form=einsum_torch, torch="einsum", torch_attrs={"einsum": _torch_einsum}),
    kind("attention", "compute", launch_rule="attention", attrs="is_causal scale needs_program",
         reference=attention, torch_form=attention_torch,
         torch="MultiheadAttention scaled_dot_product_attention _native_multi_head_attention",
         torch_attrs={"scaled_dot_product_attention": _torch_sdpa,
                      "MultiheadAttention _native_multi_head_attention": _torch_module_call}),
)

#: Kinds only the importers name (not in ``OPS``): their importer facts.
IMPORTED = (
    kind("transformer_layer", "compute",
         torch="TransformerEncoderLayer _transformer_encoder_layer_fwd",
         torch_attrs={"TransformerEncoderLayer "
                      "_transformer_encoder_layer_fwd": _torch_module_call}),
)
