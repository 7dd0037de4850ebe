"""FLOP counts the tests compare: the graph's GEMM FLOPs (convolutions, matmuls, the matrix
products of recurrent cells: :func:`workbench.ops.gemm_flops`) and PyTorch's own
count of the same forward (``FlopCounterMode``, which counts only matrix products)."""

from __future__ import annotations

from typing import Any

import workbench as wb
from workbench.ops import gemm_flops


def graph_gemm_flops(graph: wb.Graph) -> float:
    return sum(gemm_flops(op, graph.tensor(op.inputs[0]).shape if op.inputs else None)
               for op in graph.ops)


def flop_counter(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None
                 ) -> int:
    """``FlopCounterMode``'s total for ``model(*args, **kwargs)`` with the kernels it can count:
    oneDNN off (its fused CPU LSTM kernel counts 0 FLOPs), attention on SDPA's math backend (the
    CPU flash kernel counts 0) and grad enabled (so ``nn.MultiheadAttention`` and
    ``nn.TransformerEncoderLayer`` leave their fused inference paths, which count 0)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with torch.backends.mkldnn.flags(enabled=False), torch.enable_grad(), \
            sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(*args, **(kwargs or {}))
    return int(counter.get_total_flops())
