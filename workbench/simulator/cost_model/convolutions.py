"""cuDNN's convolution algorithms as kernel launches: the geometry of a 1-, 2- or 3-D
convolution and the candidates :func:`~workbench.simulator.cost_model.kernel_model.fastest`
picks from (as ``cudnnFindConvolutionForwardAlgorithmEx`` does).

:func:`conv_geometry` reads a convolution's sizes from its attributes and shapes (a 1-D
convolution is the 2-D one over a height of 1 that PyTorch hands cuDNN for ``conv1d``; a 3-D one
keeps its depth); :func:`conv_kernels` gives the launches of the fastest algorithm: a direct
kernel for a depthwise convolution, else the fastest of implicit GEMM, explicit GEMM (im2col +
GEMM tiles) and, for 2-D 3x3 stride-1 convolutions, Winograd F(2x2, 3x3), at FP32 and (where
the run allows) TF32 or half precision, with the channels-last transposes tensor-core kernels
need.  The launch rules of :mod:`workbench.simulator.cost_model.launches` (``conv2d``,
``conv1d``, ``conv3d``, ``sepconv``) call these.  Complexity: O(tiles x algorithms) per
convolution.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.ops.attrs import per_axis
from workbench.simulator.cost_model.devices import DeviceSpec
from workbench.simulator.cost_model.kernel_model import (
    GpuModel,
    Launch,
    elementwise_launch,
    fastest,
    gemm_candidates,
    kernel_precision,
)


def conv_geometry(attrs: Mapping[str, Any], ins: Sequence[tuple[int, ...] | None],
                  out: tuple[int, ...] | None) -> dict[str, int] | None:
    """N, Cin, Cout, groups and the spatial sizes of a 1-, 2- or 3-D convolution from its attrs
    (the op vocabulary, :mod:`workbench.ops.attrs`: ``kernel``, ``stride``, ``groups``;
    every importer writes them), the kernel from the weight's shape when not given; None if
    unknown.  The spatial sizes are three per role, depth, height and width (input ``d h w``,
    output ``do ho wo``, kernel ``kd kh kw``, stride ``sd sh sw``), with ``rank`` the spatial
    rank: a 2-D convolution has depth 1, and a 1-D one is the 2-D convolution over a height of
    1 that PyTorch hands cuDNN for ``conv1d`` (so it has the same implicit GEMM).  The GEMM sees
    products only (rows ``N*do*ho*wo``, depth ``Cin/groups*kd*kh*kw``)."""
    x = ins[0] if ins else None
    if x is None or out is None or len(x) != len(out) or not 3 <= len(x) <= 5:
        return None
    rank = len(x) - 2
    a = attrs
    kernel = a.get("kernel")
    w = ins[1] if len(ins) > 1 else None
    if kernel is None and w is not None and len(w) == len(x):
        kernel = w[2:]
    if kernel is None:
        return None
    try:
        ks, ss = per_axis(kernel, rank, 1), per_axis(a.get("stride"), rank, 1)
    except (TypeError, ValueError):
        return None
    pad = (1,) * (3 - rank)
    (kd, kh, kw), (sd, sh, sw) = pad + ks, pad + ss
    (d, h, wi), (do, ho, wo) = pad + tuple(x[2:]), pad + tuple(out[2:])
    groups = int(a.get("groups") or 1)
    n, cin, cout = x[0], x[1], out[1]
    cin = int(a.get("cin") or cin)  # a consumer may read a channel slice of a wider tensor
    if min(n, cin, d, h, wi, cout, do, ho, wo, kd, kh, kw, sd, sh, sw) < 1 or cin % groups \
            or cout % groups:
        return None  # empty or unknown sizes: the op's own figures cost it
    return {"n": n, "cin": cin, "cout": cout, "groups": groups, "rank": rank, "d": d, "h": h,
            "w": wi, "do": do, "ho": ho, "wo": wo, "kd": kd, "kh": kh, "kw": kw, "sd": sd,
            "sh": sh, "sw": sw}


def plane(n: int, cin: int, h: int, w: int, cout: int, ho: int, wo: int, kh: int, kw: int,
           sh: int, sw: int, groups: int) -> dict[str, int]:
    """The geometry of a 2-D convolution (depth 1), as :func:`conv_geometry` writes it."""
    return {"n": n, "cin": cin, "cout": cout, "groups": groups, "rank": 2, "d": 1, "h": h,
            "w": w, "do": 1, "ho": ho, "wo": wo, "kd": 1, "kh": kh, "kw": kw, "sd": 1, "sh": sh,
            "sw": sw}


def volume(g: dict[str, int], role: str) -> int:
    """The product of a geometry's spatial sizes of ``role`` (``""``: input, ``"o"``: output,
    ``"k"``: kernel)."""
    if role == "k":
        return g["kd"] * g["kh"] * g["kw"]
    return g["d" + role] * g["h" + role] * g["w" + role]


def conv_kernels(g: dict[str, int], name: str, spec: DeviceSpec, model: GpuModel,
                  precision: str, eb: int) -> list[Launch]:
    n, cin, cout, groups = g["n"], g["cin"], g["cout"], g["groups"]
    window = volume(g, "k")
    in_bytes = eb * n * cin * volume(g, "")
    out_elems = n * cout * volume(g, "o")
    if groups > 1 and groups == cin and cout % cin == 0:
        flops = 2.0 * out_elems * window
        nbytes = in_bytes + eb * (out_elems + cout * window)
        blocks = max(1, math.ceil(out_elems / 256))
        shape = "x".join(str(g[k]) for k in ("kd", "kh", "kw")[3 - g["rank"]:])
        return [Launch(f"{name} depthwise {shape}", "direct", flops, nbytes, blocks, 256, 32,
                       0, "fp32", detail=f"{out_elems} outputs")]
    # "auto" and "tf32": cuDNN benchmarks its FP32 and its TF32 tensor-core algorithms alike
    # (TF32 is a permission, PyTorch's allow_tf32: a small convolution may still run FP32)
    precisions = {"fp32", kernel_precision(precision, spec, convolution=True)} \
        if precision in ("auto", "tf32") else {precision}
    candidates: list[list[Launch]] = []
    for p in sorted(precisions):
        candidates += conv_candidates(g, name, model, p, eb, in_bytes)
    return fastest(candidates, spec, model)


def conv_candidates(g: dict[str, int], name: str, model: GpuModel, precision: str, eb: int,
                     in_bytes: int) -> list[list[Launch]]:
    """cuDNN's convolution algorithms at one precision, each as the launches it takes: implicit
    GEMM and explicit GEMM at every spatial rank, Winograd for 2-D 3x3 stride-1 only (cuDNN
    has no 3-D Winograd)."""
    n, cin, cout, groups = g["n"], g["cin"], g["cout"], g["groups"]
    kh, kw, ho, wo = g["kh"], g["kw"], g["ho"], g["wo"]
    tag = "" if precision == "fp32" else f" {precision}"
    m = n * volume(g, "o")
    kdim = cin // groups * volume(g, "k")
    w_bytes = eb * cout * (cin // groups) * volume(g, "k")
    # implicit GEMM ...
    candidates = gemm_candidates(m, cout // groups, kdim, batch=groups, precision=precision,
                                 model=model, element_bytes=eb,
                                 name=f"{name} implicit-gemm{tag}",
                                 operand_bytes=in_bytes + w_bytes, conv=True, weights=True)
    # ... explicit GEMM (an im2col unfold unless 1x1 stride 1, then GEMM tiles, no split-K) ...
    pointwise = volume(g, "k") == 1 and g["sd"] == g["sh"] == g["sw"] == 1
    unfold = [] if pointwise else [elementwise_launch(
        f"{name} im2col", m * kdim * groups, eb * (n * cin * volume(g, "") + m * kdim * groups),
        model)]
    candidates += gemm_candidates(m, cout // groups, kdim, batch=groups, precision=precision,
                                  model=model, element_bytes=eb, name=f"{name} gemm{tag}",
                                  split=False, prefix=unfold, weights=True)
    # ... and Winograd F(2x2, 3x3) for 2-D 3x3 stride-1 convolutions
    if groups == 1 and g["rank"] == 2 and kh == kw == 3 and g["sh"] == g["sw"] == 1:
        tiles = n * math.ceil(ho / 2) * math.ceil(wo / 2)
        candidates += gemm_candidates(
            tiles, cout, cin, batch=16, precision=precision, model=model, element_bytes=eb,
            name=f"{name} winograd{tag}", operand_bytes=in_bytes * 16 / 4 + w_bytes * 16 / 9,
            kind="winograd", conv=True, weights=True)
    if precision != "fp32" and model.tensor_layout_conversion:
        # cuDNN's tensor-core kernels want channels last (NHWC, NDHWC): a channels-first input
        # is transposed before and the output back after (two memory-bound copies around every
        # candidate)
        out_bytes = eb * m * cout
        to_nhwc = elementwise_launch(f"{name} nchw->nhwc", in_bytes // eb, 2 * in_bytes, model)
        to_nchw = elementwise_launch(f"{name} nhwc->nchw", m * cout, 2 * out_bytes, model)
        candidates = [[to_nhwc, *c, to_nchw] for c in candidates]
    return candidates


__all__ = ["conv_candidates", "conv_geometry", "conv_kernels", "plane", "volume"]
