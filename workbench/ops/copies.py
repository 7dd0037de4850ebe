"""Copies and communication: host/device copies (``h2d``, ``d2h``, ``d2d``: each runs on the copy
engine of its direction), plain copies (``copy``, ``memcpy``), and collectives and point-to-point
transfers (``allreduce``, ``send``, ``recv``).

A copy returns its input, once per output (:func:`copy`); the registry gives it to every engine
copy and pass-through I/O kind.  ``communication`` kinds have their inputs and outputs laid out
contiguously by SOMAS; ``send`` is also ordered through the virtual ``"io"`` state.  The
import-only ``memset`` and ``collective`` mark profiled kernels (memsets, NCCL / RCCL).
"""

from __future__ import annotations

from workbench.ops.arrays import Array, OpLike, ShapeOf
from workbench.ops.kind import kind
from workbench.ops.tensors import Tensor

# ------------------------------------------------------------------------ NumPy references


def copy(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """Copies and pass-through I/O: the input, once per output."""
    return [a[0].copy() for _ in op.outputs]

# ------------------------------------------------------------------------ torch forms


def copy_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """Copies and pass-through I/O: the input, once per output."""
    return [a[0].clone() for _ in op.outputs]


#: The device-to-host copy (the control package prices a flag's round trip with one).
D2H = "d2h"

# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind("h2d", "copy", engine_copy=True),
    kind(D2H, "copy", engine_copy=True),
    kind("d2d", "copy", engine_copy=True, within_device=True),
    kind("copy", "copy"),
    kind("memcpy", "copy", kernel_names="memcpy", kernel_rank=0),
    kind("allreduce", "copy", communication=True),
    kind("recv", "copy", communication=True),
    kind("send", "copy", communication=True, side_effect="io"),
)

#: Kinds only the importers name (not in ``OPS``): their importer facts.
IMPORTED = (
    kind("memset", "compute", kernel_names="memset", kernel_rank=1),
    kind("collective", "copy", kernel_names="nccl rccl", kernel_rank=2),
)
