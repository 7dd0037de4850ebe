"""``torch.compile(model, backend="workbench")``: dynamo's graphs run the way the workbench says.

TorchDynamo hands a backend each captured ``torch.fx.GraphModule`` with example inputs (the
model's parameters among them, as inputs dynamo marks static).  :func:`workbench_backend`
imports it as a :class:`~workbench.values.graph.Graph` whose program is that GraphModule
(:func:`workbench.io.fx.graph_of_traced`: shapes propagated on fake tensors, in-place writes
ordered), then does what :func:`workbench.accelerate` does (``policy="auto"`` measures the
policies and the GraphModule itself and keeps the fastest beyond noise) and returns the
accelerated module's ``forward``, which takes and returns what the GraphModule does.  Dynamo
compiles again, and so calls the backend again, for new shapes or after a graph break, so data-
dependent control flow and other shapes are handled by dynamo's own guards.

Options: ``torch.compile(model, backend="workbench", options={"policy": "nnc", "mode":
"eager", ...})`` (:data:`workbench.orchestration.accelerate.OPTIONS`; an unknown one is a one-line
error).  The backend is registered through the ``torch_dynamo_backends`` entry point in
``pyproject.toml`` (torch finds it on first lookup, without importing the workbench first), and by
:func:`register` (``import workbench`` calls it when torch is already imported).
"""

from __future__ import annotations

import warnings
from typing import Any

from workbench._checks import warn_line
from workbench.errors import OptionError, WorkbenchError
from workbench.orchestration.accelerate import OPTIONS, accelerate_graph

NAME = "workbench"


def workbench_backend(gm: Any, example_inputs: list[Any], *,
                      options: dict[str, Any] | None = None) -> Any:
    """The dynamo backend: a callable computing what ``gm`` computes under the chosen schedule
    (``gm.forward`` itself when nothing beats it or it cannot be imported)."""
    from workbench.executors.torch_exec.module import is_static_input
    from workbench.io.fx import graph_of_traced

    opts = dict(options or {})
    unknown = [k for k in opts if k not in OPTIONS]
    if unknown:
        raise OptionError(f"torch.compile backend 'workbench': unknown option {unknown[0]!r} "
                          f"(options: {', '.join(OPTIONS)})")
    example = tuple(example_inputs)
    static = {i for i, x in enumerate(example) if is_static_input(x)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # default-cost notes: costs are not used here
            graph = graph_of_traced(gm, example, tracer="dynamo", name=type(gm).__name__,
                                    parameters=static)
    except WorkbenchError as exc:
        warn_line(f"torch.compile backend 'workbench': cannot import the graph ({exc}); "
                  f"running it as captured", "workbench.compile")
        return gm.forward
    fast = accelerate_graph(graph, gm, example, **opts)
    return fast.forward


def register() -> None:
    """Register the backend with dynamo under :data:`NAME` (no-op when it is there)."""
    from torch._dynamo.backends.registry import _BACKENDS, register_backend

    if NAME not in _BACKENDS:
        register_backend(workbench_backend, name=NAME)


__all__ = ["NAME", "register", "workbench_backend"]
