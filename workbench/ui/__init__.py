"""The notebook app: ``from workbench.ui import Workbench; Workbench()``.

Importing this package loads ipywidgets and plotly; ``import workbench`` never does (STYLE.md R9),
which is why the app is imported from here rather than from the top-level package.

Apps layer: may import everything.
"""

from __future__ import annotations

from workbench.ui.workbench import Workbench

__all__ = ["Workbench"]
