"""load() and save(): dispatch on the file suffix through one table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from workbench.errors import FormatError
from workbench.graph import Graph
from workbench.io.dot import save_dot, to_dot
from workbench.io.json_format import graph_from_dict, graph_to_dict, load_json, save_json

LOADERS: dict[str, Callable[[Path], Graph]] = {".json": load_json}
SAVERS: dict[str, Callable[[Graph, Path], Path]] = {".json": save_json, ".dot": save_dot,
                                                    ".gv": save_dot}


def load(path: str | Path) -> Graph:
    """Load a graph; the format comes from the suffix (``.json``)."""
    path = Path(path)
    loader = LOADERS.get(path.suffix.lower())
    if loader is None:
        raise FormatError(f"{path}: unknown graph file type {path.suffix!r} "
                          f"(known: {', '.join(sorted(LOADERS))})")
    if not path.exists():
        raise FormatError(f"{path}: no such file")
    return loader(path)


def save(graph: Graph, path: str | Path) -> Path:
    """Save a graph; the format comes from the suffix (``.json``, ``.dot``)."""
    path = Path(path)
    saver = SAVERS.get(path.suffix.lower())
    if saver is None:
        raise FormatError(f"{path}: cannot save as {path.suffix!r} (known: "
                          f"{', '.join(sorted(SAVERS))})")
    return saver(graph, path)


__all__ = ["graph_from_dict", "graph_to_dict", "load", "save", "to_dot"]
