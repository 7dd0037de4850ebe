"""The op table: what the workbench knows of each op kind, one module per family of kinds.

Each family module declares its kinds with every fact beside the others (category and flags,
the attributes it reads, the NumPy reference, the torch form, the names the importers know it
by, the kernel-name fragments of profiles), in the style of JAX's per-primitive rules kept with
their family (``lax/convolution.py``): :mod:`~workbench.ops.elementwise`,
:mod:`~workbench.ops.normalization`, :mod:`~workbench.ops.reduction`,
:mod:`~workbench.ops.shapes` (views, layout, data movement), :mod:`~workbench.ops.indexing`
(gathers, scatters by index, shifts and scans), :mod:`~workbench.ops.copies` (copies and
collectives), :mod:`~workbench.ops.state` (in-place writes and I/O), :mod:`~workbench.ops.control`,
:mod:`~workbench.ops.convolution` (convolutions and pools), :mod:`~workbench.ops.matmul`
(products and attention), :mod:`~workbench.ops.recurrent`, :mod:`~workbench.ops.generic`.
:mod:`~workbench.ops.registry` collects them into :data:`OPS` and derives the kind sets;
:mod:`~workbench.ops.kind` is the entry type, :mod:`~workbench.ops.attrs` the attribute
vocabulary, :mod:`~workbench.ops.arrays` and :mod:`~workbench.ops.tensors` the NumPy and torch
helpers the families share.  Platform code stays with its platform: the CuPy lowering and
kernels are in :mod:`workbench.executors.gpu`, found by kind name.

This package may import :mod:`workbench.errors`, NumPy, and (lazily, in the torch forms) torch;
nothing else of the workbench.  ``docs/architecture.md`` walks through adding a kind.
"""

from workbench.ops.registry import *  # noqa: F403
from workbench.ops.registry import __all__ as __all__
