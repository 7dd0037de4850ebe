"""Schedules measured on a real GPU, rebuilt exactly from the files that recorded them.

``workbench/data/measured/<gpu>/`` (copied from the shared H200 measurements; its README gives
the provenance) holds, per network and batch, the graph as it was run (ops with kind, attrs,
inputs, outputs; tensor shapes) and, per policy, the schedule that was measured (streams, issue
order, syncs, barriers, barrier kind); ``measurements.json`` the makespans (CUDA-graph replay and
eager, median and quartiles) per network, batch, policy and precision; ``op_alone_us.json`` every
op's stand-alone time.

:func:`load_case` rebuilds a :class:`~workbench.values.schedule.Schedule` from the file and never
re-runs the policy (a changed policy would make a different schedule than the one measured).
FLOPs and bytes are not stored: they are derived from the shapes with the builders' rules
(:mod:`workbench.ops.costs`), so the rebuilt graph equals the built-in model's
(``tests/test_fidelity_measured.py`` checks it op by op).
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from workbench.errors import OptionError
from workbench.models._layers import shape_cost
from workbench.ops.costs import (
    TensorInfo,
)
from workbench.values.graph import Graph, Op, Tensor
from workbench.values.schedule import Schedule

MEASURED_GPUS = ("h200",)


@dataclass(frozen=True)
class MeasuredRow:
    """One measured makespan: a network at a batch under a policy and precision on a GPU, with
    where it came from (``provenance``: GPU, driver, library versions, date, how timed)."""

    gpu: str
    network: str
    batch: int
    policy: str
    precision: str
    graph_us: float
    graph_q1_us: float
    graph_q3_us: float
    eager_us: float
    streams: int
    syncs: int
    barriers: int
    barrier_kind: str
    outputs_equal_serial: bool
    provenance: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def case(self) -> tuple[str, int, str]:
        """(network, batch, precision): the unit the fidelity tables compare policies within."""
        return (self.network, self.batch, self.precision)


def _root(gpu: str) -> Any:
    if gpu not in MEASURED_GPUS:
        raise OptionError(f"no measurements of GPU {gpu!r} (known: {', '.join(MEASURED_GPUS)})")
    return resources.files("workbench").joinpath("data", "measured", gpu)


@cache
def _json(gpu: str, name: str) -> Any:
    return json.loads(_root(gpu).joinpath(name).read_text(encoding="utf-8"))


def load_measured_rows(gpu: str = "h200") -> list[MeasuredRow]:
    """Every measured makespan of ``gpu``, in file order, each with the file's provenance."""
    raw = _json(gpu, "measurements.json")
    prov = {str(k): str(v) for k, v in raw["provenance"].items()}
    keys = set(MeasuredRow.__dataclass_fields__) - {"gpu", "provenance"}
    out = []
    for i, r in enumerate(raw["rows"]):
        missing = sorted(keys - set(r))
        if missing:
            raise OptionError(f"measurements.json of {gpu}: row {i} lacks {missing[0]!r}")
        out.append(MeasuredRow(gpu=gpu, provenance=prov, **{k: r[k] for k in keys}))
    return out


def alone_table(gpu: str = "h200") -> dict[tuple[str, str], float]:
    """Stand-alone op times: ``{(graph_key, op_id): µs}`` with ``graph_key`` like
    ``"inception_v3_b16"`` (the plain mapping :func:`workbench.simulator.fidelity.fit_device`
    takes)."""
    raw = _json(gpu, "op_alone_us.json")["op_alone_us"]
    return {(key, op): float(us) for key, ops in raw.items() for op, us in ops.items()}


def alone_provenance(gpu: str = "h200") -> dict[str, str]:
    return {str(k): str(v) for k, v in _json(gpu, "op_alone_us.json")["provenance"].items()}


def graph_key(network: str, batch: int) -> str:
    return f"{network}_b{batch}"


@cache
def _case_file(gpu: str, key: str) -> dict[str, Any]:
    path = _root(gpu).joinpath("schedules", f"{key}.json.gz")
    if not path.is_file():
        raise OptionError(f"no measured schedules of {key!r} on {gpu}")
    with path.open("rb") as fh:
        return json.loads(gzip.decompress(fh.read()).decode("utf-8"))


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


@cache
def load_graph(network: str, batch: int, gpu: str = "h200") -> Graph:
    """The graph ``network`` at ``batch`` exactly as it was run on ``gpu``.  O(ops)."""
    raw = _case_file(gpu, graph_key(network, batch))
    shapes = {t: tuple(int(d) for d in s) for t, s in raw["tensors"].items()}
    producer = {out: o["id"] for o in raw["ops"] for out in o["outputs"]}
    consumed = {t for o in raw["ops"] for t in o["inputs"]}
    inputs = set(raw["graph_inputs"])
    ops = []
    for o in raw["ops"]:
        where = f"measured {graph_key(network, batch)}: op {o['id']!r}"
        missing = [t for t in (*o["inputs"], *o["outputs"]) if t not in shapes]
        if missing:
            raise OptionError(f"{where}: tensor {missing[0]!r} has no shape")
        attrs = {k: _tuples(v) for k, v in o["attrs"].items()}
        c = shape_cost(o["kind"], attrs, [TensorInfo(shapes[t]) for t in o["inputs"]],
                  [TensorInfo(shapes[t]) for t in o["outputs"]])
        ops.append(Op(o["id"], kind=o["kind"], flops=float(c.flops), bytes_read=c.bytes_read,
                      bytes_written=c.bytes_written, inputs=tuple(o["inputs"]),
                      outputs=tuple(o["outputs"]), thread_blocks=c.thread_blocks, attrs=attrs))
    tensors = []
    for t, shape in shapes.items():
        role = ("activation" if t in producer and t in consumed else "output" if t in producer
                else "parameter" if t in inputs and ":" in t else "input")
        tensors.append(Tensor(t, 4 * math.prod(shape), producer=producer.get(t), role=role,
                              shape=shape))
    return Graph(ops, tensors, name=f"{network}_b{batch}_measured_{gpu}")


def policies(network: str, batch: int, gpu: str = "h200") -> list[str]:
    """The policies whose schedules were measured for ``network`` at ``batch``."""
    return list(_case_file(gpu, graph_key(network, batch))["schedules"])


@cache
def load_schedule(network: str, batch: int, policy: str, gpu: str = "h200") -> Schedule:
    """The schedule of ``policy`` exactly as measured (streams, issue order, syncs, barriers,
    barrier kind), validated against the rebuilt graph.  O(ops + syncs)."""
    raw = _case_file(gpu, graph_key(network, batch))["schedules"]
    if policy not in raw:
        raise OptionError(f"no measured schedule of policy {policy!r} for "
                          f"{graph_key(network, batch)} (known: {', '.join(raw)})")
    s = raw[policy]
    streams = {int(k): tuple(v) for k, v in s["streams"].items()}
    schedule = Schedule(load_graph(network, batch, gpu), policy, streams,
                        tuple((a, b) for a, b in s["syncs"]), tuple(s["issue_order"]),
                        tuple(int(p) for p in s["barriers"]),
                        options={"measured_on": gpu}, barrier_kind=s["barrier_kind"])
    return schedule.validate()


__all__ = ["MEASURED_GPUS", "MeasuredRow", "alone_provenance", "alone_table", "graph_key",
           "load_graph", "load_measured_rows", "load_schedule", "policies"]
