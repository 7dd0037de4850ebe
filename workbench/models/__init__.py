"""Built-in graphs: the seeds' examples, real CNNs, a transformer block and random DAG families.

``MODELS`` is the one table (name → builder); ``build(name, **params)`` builds by name, which is
what the CLI and the notebook app use.

Graph-transforms layer: may import the values and the cost model, nothing above (no scheduler,
simulator or memory planner).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench._checks import show
from workbench.errors import GraphError, WorkbenchError
from workbench.models.cnn import inception_v3, nasnet_a_large, randwire, squeezenet
from workbench.models.control_flow import nnc_case_of, nnc_while_loop, rnn_loop
from workbench.models.random_dags import gnp_dag, layered_dag, random_dag, series_parallel_dag
from workbench.models.seeds import (
    mindspore_six_kernels,
    nnc_diamond,
    raf_occupancy_conv,
    raf_three_branches,
    textbook_heterogeneous,
    textbook_mul_sub_add,
    textbook_side_effects,
)
from workbench.models.transformer import transformer_block
from workbench.registry import Registry, signature_options
from workbench.values.graph import Graph


@dataclass(frozen=True)
class ModelInfo:
    """A registered graph builder: the function, where it comes from, and its family."""

    fn: Callable[..., Graph]
    source: str
    family: str  # "seed", "network", "random", "control"

    def params(self) -> dict[str, Any]:
        options = signature_options(self.fn, "all") or {}
        return {k: v for k, v in options.items() if v is not inspect.Parameter.empty}


MODELS = Registry[ModelInfo]("model", error=GraphError, params="all")
for _name, _fn, _source in (
    ("nnc_diamond", nnc_diamond, "seed 000 NNC"),
    ("textbook_mul_sub_add", textbook_mul_sub_add, "seed 003 textbook"),
    ("textbook_heterogeneous", textbook_heterogeneous, "seed 003 textbook"),
    ("textbook_side_effects", textbook_side_effects, "seed 003 textbook"),
    ("mindspore_six_kernels", mindspore_six_kernels, "seed 004 MindSpore"),
    ("raf_three_branches", raf_three_branches, "seed 001 RAF (tests)"),
    ("raf_occupancy_conv", raf_occupancy_conv, "seed 001 RAF"),
    ("nnc_while_loop", nnc_while_loop, "seed 000 NNC (while)"),
    ("nnc_case_of", nnc_case_of, "seed 000 NNC (case..of)"),
):
    MODELS.register(_name, ModelInfo(_fn, _source, "seed"))
MODELS.register("inception_v3", ModelInfo(inception_v3, "torchvision / IOS benchmark", "network"))
MODELS.register("squeezenet", ModelInfo(squeezenet, "IOS benchmark", "network"))
MODELS.register("randwire", ModelInfo(randwire, "IOS benchmark (RandWire-WS)", "network"))
MODELS.register("nasnet_a_large", ModelInfo(nasnet_a_large, "IOS benchmark (NASNet-A large)",
                                           "network"))
MODELS.register("transformer_block", ModelInfo(transformer_block, "pre-LN transformer", "network"))
MODELS.register("rnn_loop", ModelInfo(rnn_loop, "Elman RNN as a while loop", "control"))
MODELS.register("layered_dag", ModelInfo(layered_dag, "random family", "random"))
MODELS.register("series_parallel_dag", ModelInfo(series_parallel_dag, "random family", "random"))
MODELS.register("gnp_dag", ModelInfo(gnp_dag, "random family", "random"))
MODELS.register("random_dag", ModelInfo(random_dag, "random family (benchmarks)", "random"))


def models() -> list[str]:
    """Names of all built-in graphs."""
    return MODELS.names()


def build(name: str, **params: Any) -> Graph:
    """Build a built-in graph by name; parameters are the builder's keywords."""
    info = MODELS.get(name)
    MODELS.check_options(name, params, noun="parameter")
    known = MODELS.options(name) or {}
    missing = [k for k, default in known.items()
               if default is inspect.Parameter.empty and k not in params]
    if missing:
        raise GraphError(f"model {name!r} needs parameter {missing[0]!r} (--param "
                         f"{missing[0]}=VALUE on the command line)")
    try:
        return info.fn(**params)
    except (TypeError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        if isinstance(exc, WorkbenchError):
            raise
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise GraphError(f"model {name!r}: bad parameters {show(params, 120)} ({text})") from None


__all__ = [
    "MODELS", "ModelInfo", "build", "gnp_dag", "inception_v3", "layered_dag",
    "mindspore_six_kernels", "models", "nasnet_a_large", "nnc_case_of", "nnc_diamond",
    "nnc_while_loop", "raf_occupancy_conv", "raf_three_branches",
    "random_dag", "randwire", "rnn_loop", "series_parallel_dag", "squeezenet",
    "textbook_heterogeneous", "textbook_mul_sub_add", "textbook_side_effects", "transformer_block",
]
