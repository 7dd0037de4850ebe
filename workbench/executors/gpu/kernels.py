"""The GPU kernels, re-exported from the modules that hold them (one job each):

* :mod:`workbench.executors.gpu.sources` — the ``.cu`` sources, their parsed signatures, the compile
cache;
* :mod:`workbench.executors.gpu.calls` — kernel calls with symbolic arguments, codes and device
limits;
* :mod:`workbench.executors.gpu.lowering` — op kind → kernel calls (:data:`LOWERINGS`);
* :mod:`workbench.executors.gpu.fused` — the fused elementwise code generator.

Pure Python: CuPy is imported only by :func:`get_function`.
"""

from __future__ import annotations

from importlib import resources as resources  # tests swap the packaged sources through it

from workbench.executors.gpu.calls import ACT_CODES as ACT_CODES
from workbench.executors.gpu.calls import BINARY_CODES as BINARY_CODES
from workbench.executors.gpu.calls import COPY_KINDS as COPY_KINDS
from workbench.executors.gpu.calls import ELEM_THREADS as ELEM_THREADS
from workbench.executors.gpu.calls import ELEMS_PER_BLOCK as ELEMS_PER_BLOCK
from workbench.executors.gpu.calls import MAX_GRID_X as MAX_GRID_X
from workbench.executors.gpu.calls import MAX_GRID_YZ as MAX_GRID_YZ
from workbench.executors.gpu.calls import NULL as NULL
from workbench.executors.gpu.calls import ROW_THREADS as ROW_THREADS
from workbench.executors.gpu.calls import STATE_KINDS as STATE_KINDS
from workbench.executors.gpu.calls import UNARY_CODES as UNARY_CODES
from workbench.executors.gpu.calls import Call as Call
from workbench.executors.gpu.calls import DeviceLimits as DeviceLimits
from workbench.executors.gpu.calls import FusedKernel as FusedKernel
from workbench.executors.gpu.calls import In as In
from workbench.executors.gpu.calls import LowerContext as LowerContext
from workbench.executors.gpu.calls import Out as Out
from workbench.executors.gpu.calls import OutSlice as OutSlice
from workbench.executors.gpu.calls import PtrTable as PtrTable
from workbench.executors.gpu.calls import RowLen as RowLen
from workbench.executors.gpu.calls import RowStride as RowStride
from workbench.executors.gpu.calls import ScratchPtr as ScratchPtr
from workbench.executors.gpu.calls import call_source as call_source
from workbench.executors.gpu.calls import elem_grid as elem_grid
from workbench.executors.gpu.calls import make_call as make_call
from workbench.executors.gpu.calls import softmax_geometry as softmax_geometry
from workbench.executors.gpu.fused import FUSED_BINARY as FUSED_BINARY
from workbench.executors.gpu.fused import FUSED_REDUCE as FUSED_REDUCE
from workbench.executors.gpu.fused import FUSED_UNARY as FUSED_UNARY
from workbench.executors.gpu.fused import fused_kernel as fused_kernel
from workbench.executors.gpu.lowering import LOWERINGS as LOWERINGS
from workbench.executors.gpu.lowering import concat_geometry as concat_geometry
from workbench.executors.gpu.lowering import lower as lower
from workbench.executors.gpu.lowering import lowering_of as lowering_of
from workbench.executors.gpu.lowering import spin_shape as spin_shape
from workbench.executors.gpu.lowering import transpose_geometry as transpose_geometry
from workbench.executors.gpu.sources import _MODULES as _MODULES
from workbench.executors.gpu.sources import COMPILE_OPTIONS as COMPILE_OPTIONS
from workbench.executors.gpu.sources import SOURCE_FILES as SOURCE_FILES
from workbench.executors.gpu.sources import Param as Param
from workbench.executors.gpu.sources import _module_signatures as _module_signatures
from workbench.executors.gpu.sources import get_function as get_function
from workbench.executors.gpu.sources import inline_includes as inline_includes
from workbench.executors.gpu.sources import kernels_dir as kernels_dir
from workbench.executors.gpu.sources import module_source as module_source
from workbench.executors.gpu.sources import parse_signatures as parse_signatures
from workbench.executors.gpu.sources import raw_source as raw_source
from workbench.executors.gpu.sources import signature as signature

__all__ = [
    "ACT_CODES", "BINARY_CODES", "COMPILE_OPTIONS", "LOWERINGS", "SOURCE_FILES", "UNARY_CODES",
    "Call", "DeviceLimits", "FusedKernel", "In", "LowerContext", "Out", "OutSlice", "Param",
    "PtrTable", "RowLen", "RowStride", "ScratchPtr", "call_source", "concat_geometry",
    "elem_grid", "fused_kernel", "get_function", "inline_includes", "kernels_dir", "lower",
    "lowering_of", "make_call", "module_source", "parse_signatures", "signature",
    "softmax_geometry", "spin_shape", "transpose_geometry",
]
