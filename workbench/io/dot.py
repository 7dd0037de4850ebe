"""DOT (Graphviz) export of a graph's structure: ops as nodes (with kind and device), data edges
solid, control edges dashed.  Names are quoted and escaped for DOT."""

from __future__ import annotations

from pathlib import Path

from workbench.graph import Graph


def _q(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph: Graph) -> str:
    lines = [f"digraph {_q(graph.name)} {{", "  rankdir=TB;", "  node [shape=box];"]
    for op in graph.ops:
        lines.append(f"  {_q(op.id)} [kind={_q(op.kind)}, device={_q(op.device)}, "
                     f"flops={op.flops!r}, label={_q(op.id + chr(10) + op.kind)}];")
    for a, b in graph.edges:
        style = ' [style=dashed, kind="control"]' if graph.is_control_edge(a, b) else ""
        lines.append(f"  {_q(a)} -> {_q(b)}{style};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def save_dot(graph: Graph, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(to_dot(graph), encoding="utf-8")
    return path
