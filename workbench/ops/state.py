"""State and I/O side effects: in-place writes of a parameter (the ``assign`` family, scatters,
optimizer updates) and I/O (``print``, summaries, ``save``).

``side_effect="write"`` kinds write their first input in place; ``"io"`` kinds are ordered
through the virtual ``"io"`` state (MindSpore's side-effect chapter of the seeds).  The
``assign`` family (``assigns=True``) returns the value it writes (:func:`assign`; the executors
keep the state); ``print`` passes its input through (the GPU lowers it as a copy).
"""

from __future__ import annotations

import numpy as np

from workbench.ops.arrays import Array, OpLike, ShapeOf, _dtype
from workbench.ops.kind import kind
from workbench.ops.tensors import Tensor

# ------------------------------------------------------------------------ NumPy references


def assign(op: OpLike, a: list[Array], shape_of: ShapeOf) -> list[Array]:
    """The value the ``assign`` family writes: the second input (else the first), added to or
    subtracted from the first input for ``assign_add`` / ``assign_sub``."""
    value = a[1] if len(a) > 1 else a[0]
    if op.kind == "assign_add":
        value = a[0] + value
    elif op.kind == "assign_sub":
        value = a[0] - value
    return [np.array(value, dtype=_dtype(*a))]

# ------------------------------------------------------------------------ torch forms


def assign_torch(op: OpLike, a: list[Tensor], shape_of: ShapeOf) -> list[Tensor]:
    """The value the ``assign`` family writes (see :func:`workbench.ops.state.assign`)."""
    value = a[1] if len(a) > 1 else a[0]
    if op.kind == "assign_add":
        value = a[0] + value
    elif op.kind == "assign_sub":
        value = a[0] - value
    return [value.clone()]


# ------------------------------------------------------------------------ the kinds
#: The kinds of this family, each with every fact the workbench keeps about it.
KINDS = (
    kind("assign", "state", side_effect="write", assigns=True),
    kind("assign_add", "state", accumulate=1, side_effect="write", assigns=True),
    kind("assign_sub", "state", accumulate=-1, side_effect="write", assigns=True),
    kind("scatter_update", "state", side_effect="write"),
    kind("scatter_add", "state", side_effect="write"),
    kind("scatter_sub", "state", side_effect="write"),
    kind("scatter_nd_update", "state", side_effect="write"),
    kind("apply_momentum", "state", side_effect="write"),
    kind("apply_adam", "state", side_effect="write"),
    kind("sgd_update", "state", side_effect="write"),
    kind("update_state", "state", side_effect="write"),
    kind("print", "io", side_effect="io", passthrough=True),
    kind("summary", "io", side_effect="io"),
    kind("image_summary", "io", side_effect="io"),
    kind("scalar_summary", "io", side_effect="io"),
    kind("save", "io", side_effect="io"),
)
