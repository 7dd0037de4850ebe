"""Op kind names: kept for older imports; the names and their matching live in :mod:`workbench.ops`.

>>> canonical_kind("ExpandDims")
'expand_dims'
"""

from __future__ import annotations

from workbench.ops import KNOWN_KINDS as KNOWN_KINDS
from workbench.ops import canonical_kind as canonical_kind
from workbench.ops import kind_key as kind_key

__all__ = ["KNOWN_KINDS", "canonical_kind", "kind_key"]
