"""Graphs to and from ``networkx.DiGraph`` (:meth:`workbench.values.graph.Graph.to_networkx` and
:meth:`~workbench.values.graph.Graph.from_networkx`).  networkx is imported when called.  O(V + E).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.errors import GraphError
from workbench.values.graph_items import DEFAULT_TENSOR_BYTES, Op, OpId, Tensor, TensorId


def to_networkx(name: str, ops: Sequence[Op], tensors: Mapping[TensorId, Tensor],
                control: Sequence[tuple[OpId, OpId]]) -> Any:
    """A ``networkx.DiGraph`` of a graph's parts: node attributes are the op fields, edges carry
    ``kind`` (``data``/``control``) and, for data edges, the tensors and their bytes."""
    import networkx as nx

    g = nx.DiGraph(name=name)
    for op in ops:
        g.add_node(op.id, kind=op.kind, device=op.device, flops=op.flops,
                   bytes_read=op.bytes_read, bytes_written=op.bytes_written,
                   thread_blocks=op.thread_blocks, duration_us=op.duration_us,
                   outputs={t: tensors[t].size_bytes for t in op.outputs})
    for op in ops:
        for t in op.inputs:
            p = tensors[t].producer
            if p is None:
                continue
            if g.has_edge(p, op.id):
                g.edges[p, op.id]["tensors"].append(t)
                g.edges[p, op.id]["bytes"] += tensors[t].size_bytes
            else:
                g.add_edge(p, op.id, kind="data", tensors=[t], bytes=tensors[t].size_bytes)
    for a, b in control:
        if not g.has_edge(a, b):
            g.add_edge(a, b, kind="control")
    return g


def from_networkx(nxg: Any, *, name: str | None = None
                  ) -> tuple[list[Op], list[Tensor], list[tuple[OpId, OpId]], str]:
    """The parts (ops, tensors, control edges, name) of a graph read from a
    ``networkx.DiGraph``; node attributes as in :func:`to_networkx` (missing ones take
    defaults).  Edges with ``kind="control"`` become control edges."""
    import networkx as nx

    if not isinstance(nxg, nx.DiGraph):
        raise GraphError(f"expected a networkx.DiGraph, got {type(nxg).__name__}")
    ops: list[Op] = []
    tensors: list[Tensor] = []
    control: list[tuple[OpId, OpId]] = []
    for node, attrs in nxg.nodes(data=True):
        nid = str(node)
        outs = attrs.get("outputs") or {f"{nid}:out": DEFAULT_TENSOR_BYTES}
        for tid, size in outs.items():
            tensors.append(Tensor(str(tid), size, producer=nid))
        ins: list[str] = []
        for p in nxg.predecessors(node):
            e = nxg.edges[p, node]
            if e.get("kind") == "control":
                control.append((str(p), nid))
                continue
            p_outs = nxg.nodes[p].get("outputs") or {f"{p}:out": 0}
            ins.extend(e.get("tensors") or list(p_outs))
        ops.append(Op(nid, kind=attrs.get("kind", "op"), device=attrs.get("device", "gpu"),
                      flops=attrs.get("flops", 0.0), bytes_read=attrs.get("bytes_read", 0),
                      bytes_written=attrs.get("bytes_written", 0), inputs=tuple(ins),
                      outputs=tuple(str(t) for t in outs),
                      thread_blocks=attrs.get("thread_blocks"),
                      duration_us=attrs.get("duration_us", None)))
    return ops, tensors, control, name or nxg.graph.get("name", "graph")
