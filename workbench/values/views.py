"""The views of the core values, found by name: the rich-display hooks (``Graph._repr_html_``,
``Trace._ipython_display_``, ``Comparison.to_html`` ...) ask this registry for a view instead of
importing ``workbench.viz`` or the report, which sit in higher layers.

The view modules register their functions when imported (``workbench.viz.display`` registers
``graph_html``, ``trace_html`` ...; ``workbench.orchestration.report`` registers ``report``).
:func:`view` imports the module that provides a name, by its dotted name in :data:`PROVIDERS`,
the first time the name is asked for, so ``import workbench`` loads no plotting library
(STYLE.md R9) and no import of the core points up.  A lookup is one dict access.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from workbench.registry import Registry

VIEWS: Registry[Callable[..., Any]] = Registry("view")

#: The module that registers each view; views not named here come from ``workbench.viz.display``.
PROVIDERS: dict[str, str] = {"report": "workbench.orchestration.report",
                             "why": "workbench.orchestration.why"}
DEFAULT_PROVIDER = "workbench.viz.display"


def register_view(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Register ``fn`` as the view ``name`` (called by the view modules at import)."""
    if name not in VIEWS:
        VIEWS.register(name, fn)
    return fn


def view(name: str) -> Callable[..., Any]:
    """The view registered as ``name``, importing its provider module on first use."""
    if name not in VIEWS:
        importlib.import_module(PROVIDERS.get(name, DEFAULT_PROVIDER))
    return VIEWS.get(name)
