"""load() and save(): dispatch on the file suffix through one table.

Loaders: ``.json`` (the workbench format), ``.onnx`` (needs the ``onnx`` extra), ``.dot``/``.gv``.
Also here: :func:`from_torch` (torch.fx import, needs the ``torch`` extra), Chrome trace export
(:func:`to_chrome_trace`, :func:`save_chrome_trace`), PyTorch profiler import
(:func:`load_pytorch_trace`) and Execution Trace + Kineto import (:func:`load_execution_trace`,
:func:`execution_graph`).  onnx and torch are imported only inside those functions.

I/O layer (backends): may import the values, the cost model, the graph transforms and the
engine; never the views, orchestration or apps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from workbench._atomic import check_input
from workbench.errors import FormatError, OptionError
from workbench.io.onnx.load import load_onnx
from workbench.io.text.dot import load_dot, save_dot, to_dot
from workbench.io.text.json_format import graph_from_dict, graph_to_dict, load_json, save_json
from workbench.io.torch.fx import from_torch
from workbench.io.traces.chrome_trace import load_pytorch_trace, save_chrome_trace, to_chrome_trace
from workbench.io.traces.execution_trace import execution_graph, load_execution_trace
from workbench.registry import Registry, needs_module
from workbench.values.graph import Graph

#: File suffix → loader.  An optional format's loader is registered with a probe that says whether
#: its library is installed (``LOADERS.available(".onnx")``); the app's upload box reads this table.
LOADERS = Registry[Callable[[Path], Graph]]("graph file type", error=FormatError)
LOADERS.register(".json", load_json)
LOADERS.register(".onnx", load_onnx, probe=needs_module("onnx", "onnx"))
LOADERS.register(".dot", load_dot)
LOADERS.register(".gv", load_dot)
#: File suffix → saver (every saver's suffix has a loader: the common test round-trips them).
SAVERS = Registry[Callable[[Graph, Path], Path]]("graph save type", error=FormatError)
SAVERS.register(".json", save_json)
SAVERS.register(".dot", save_dot)
SAVERS.register(".gv", save_dot)


def load(path: str | Path, *, dims: Mapping[str, int] | None = None,
         simplify: bool = False,
         input_shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    """Load a graph; the format comes from the suffix (``.json``, ``.onnx``, ``.dot``, ``.gv``).

    ``input_shapes`` gives example shapes of an ONNX model's inputs (``{"input": (1, 3, 224,
    224)}``) and ``dims`` its symbolic input dimensions by name (``{"batch": 8}``); other
    formats have neither, so they are an error with them; so is ``simplify`` (an ONNX model
    through onnxscript's optimizer first, :func:`~workbench.io.onnx.load.load_onnx`).  Devices,
    FIFOs, directories and files over the input limit (``WORKBENCH_MAX_INPUT_BYTES``, default 1 GiB)
    are refused with one line.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in LOADERS:
        raise FormatError(f"{path}: unknown graph file type {path.suffix!r} "
                          f"(known: {', '.join(sorted(LOADERS))})")
    loader = LOADERS.get(suffix)
    if dims and loader is not load_onnx:
        raise OptionError(f"{path}: dims apply to .onnx models only ({path.suffix} files have no "
                          f"symbolic dimensions)")
    if simplify and loader is not load_onnx:
        raise OptionError(f"{path}: simplify applies to .onnx models only")
    if input_shapes and loader is not load_onnx:
        raise OptionError(f"{path}: input_shapes apply to .onnx models only")
    check_input(path, what="graph file")
    if dims or simplify or input_shapes:
        return load_onnx(path, dims=dims, simplify=simplify, input_shapes=input_shapes)
    return loader(path)


def save(graph: Graph, path: str | Path) -> Path:
    """Save a graph; the format comes from the suffix (``.json``, ``.dot``).  A graph imported
    from a model keeps its program (its weights, its calls: ``graph.program``) in memory only:
    the file holds the graph, and a one-line warning says so."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SAVERS:
        raise FormatError(f"{path}: cannot save as {path.suffix!r} (known: "
                          f"{', '.join(sorted(SAVERS))})")
    written = SAVERS.get(suffix)(graph, path)
    if graph.program is not None:
        from workbench._checks import warn_line

        warn_line(f"{path.name}: saved the graph only; its program ({graph.program.describe()} "
                  f"weights and calls) stays in memory, so executing the loaded file runs "
                  f"random weights", str(path))
    return written


__all__ = ["LOADERS", "SAVERS", "execution_graph", "from_torch", "graph_from_dict",
           "graph_to_dict", "load", "load_dot", "load_execution_trace", "load_onnx",
           "load_pytorch_trace", "save", "save_chrome_trace", "to_chrome_trace", "to_dot"]
