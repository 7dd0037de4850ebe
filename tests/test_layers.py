"""Imports between workbench modules only point down the layers of docs/architecture.md.

An ``ast`` pass lists every import between ``workbench`` modules: at module level, inside
functions and under ``if TYPE_CHECKING:``.  Importing ``workbench.a.b`` also runs the package
``workbench/a/__init__.py``, so that edge is counted too (the top package ``workbench`` itself,
which only re-exports the public API, is not: every import would run it).  The tests fail on

* a module that no layer names (place a new module in ``LAYERS``);
* an import cycle among the imports that run (module level and function level);
* an import of a higher layer (type-only imports included), unless ``ALLOWED_UP`` lists it with
  the reason;
* a type-only import that would close a cycle if it ran, unless ``TYPE_ONLY_CYCLES`` lists it
  with the reason (fix the layering first; ``TYPE_CHECKING`` is for recursive data models).

Run ``python tests/test_layers.py`` for the counts and the offending imports.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workbench"

# Lowest first.  A module may import its own layer and the layers below it.  An entry is a module
# name or a package (``"workbench.executors.gpu"`` covers ``workbench.executors.gpu`` and everything
# under it); the
# longest matching entry wins.  Names that do not exist yet (``workbench.ops``) are allowed.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("workbench.errors", "workbench._checks", "workbench._atomic", "workbench._terminal",
              "workbench.registry", "workbench._version",
              "workbench._progress", "workbench._engines", "workbench._bounded", "workbench._gc",
              # the simulator's and the executors' __init__ import nothing
              "workbench.simulator", "workbench.executors")),
    ("op table", ("workbench.ops",)),
    ("values", ("workbench.values", "workbench.control", "workbench.executors.reference")),
    ("cost model", ("workbench.simulator.cost_model",)),
    ("graph transforms", ("workbench.passes", "workbench.models")),
    ("engine", ("workbench.schedulers", "workbench.simulator.simulate",
                "workbench.simulator.host", "workbench.simulator.engine",
                "workbench.control.expand", "workbench.control.host", "workbench.control.trace",
                "workbench.memory", "workbench.executors.execute")),
    ("backends", ("workbench.executors.gpu", "workbench.io", "workbench.executors.torch_exec",
                  "workbench.executors.device_probes")),
    ("views", ("workbench.viz",)),
    ("orchestration", ("workbench.orchestration", "workbench.simulator.fidelity",
                       "workbench.executors.device_calibration")),
    ("report", ("workbench.orchestration.report",)),
    ("public API", ("workbench",)),
    ("apps", ("workbench.ui", "workbench.cli")),
)

# Upward imports that are allowed, (importer, imported) -> why.  None: the rich-display hooks
# of the core values and ``Comparison.to_html`` reach the views and the report through the
# registry ``workbench.values.views``, which the view modules fill when imported.
ALLOWED_UP: dict[tuple[str, str], str] = {}

# Type-only imports (under ``if TYPE_CHECKING:``) that would close a cycle if they ran, with the
# reason; any other type-only import must be one that could just as well run.
TYPE_ONLY_CYCLES: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    source: str     # the importing module
    target: str     # the imported workbench module (or package)
    line: int
    where: str      # "module", "function" or "type" (under ``if TYPE_CHECKING:``)
    named: str      # the module the statement names (``target`` may be a package it runs)


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name (a package by its ``__init__``)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, where: str) -> Iterator[tuple[ast.AST, str]]:
    for child in ast.iter_child_nodes(node):
        inner = where
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = "function" if where == "module" else where
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for sub in child.body:
                yield sub, "type"
                yield from _walk(sub, "type")
            for sub in child.orelse:
                yield sub, where
                yield from _walk(sub, where)
            continue
        yield child, inner
        yield from _walk(child, inner)


def imports() -> list[Import]:
    """Every import from one workbench module of another, with its kind and line."""
    known = modules()
    out: dict[Import, None] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node, where in _walk(ast.parse(path.read_text(encoding="utf-8")), "module"):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[:len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                           for a in node.names]
            for target in targets:
                if target.split(".")[0] != "workbench":
                    continue
                named = found = _resolve(target, known)
                while found and (found != "workbench" or found == named):
                    # the module named, then the packages its import runs (not the importer's)
                    if found == named and found != name or not (found == name or
                                                                 name.startswith(found + ".")):
                        out[Import(name, found, node.lineno, where, named or "")] = None
                    found = found.rpartition(".")[0]
    return list(out)


def layer_of(module: str) -> int | None:
    best, rank = -1, None
    for i, (_, members) in enumerate(LAYERS):
        for m in members:
            if (module == m or module.startswith(m + ".")) and len(m) > best:
                best, rank = len(m), i
    return rank


def _upward(imp: Import) -> bool:
    a, b = layer_of(imp.source), layer_of(imp.target)
    return a is not None and b is not None and b > a


def upward_imports() -> list[Import]:
    """Imports of a higher layer that no exception allows."""
    return [i for i in imports() if _upward(i)
            and (i.source, i.target) not in ALLOWED_UP]


def cycles() -> list[list[str]]:
    """Import cycles (strongly connected groups of modules) among the imports that run; the
    allowed upward imports are lazy by construction and left out."""
    g = _run_graph()
    return sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)


def _run_graph() -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(modules())
    for i in imports():
        if i.where != "type" \
                and (i.source, i.target) not in ALLOWED_UP:
            g.add_edge(i.source, i.target)
    return g


def test_every_module_has_a_layer() -> None:
    missing = [m for m in modules() if layer_of(m) is None]
    assert not missing, f"place these modules in a layer of tests/test_layers.py: {missing}"


def test_no_import_cycles() -> None:
    found = cycles()
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_imports_only_point_down() -> None:
    names = [name for name, _ in LAYERS]
    bad = [f"{i.source}:{i.line} ({names[layer_of(i.source) or 0]}) imports {i.target} "
           f"({names[layer_of(i.target) or 0]}, {i.where} level)" for i in upward_imports()]
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_allowed_exceptions_are_used() -> None:
    used = {(i.source, i.target) for i in imports() if _upward(i)}
    stale = [pair for pair in ALLOWED_UP if pair not in used]
    assert not stale, f"ALLOWED_UP lists imports that no longer point up: {stale}"


def test_layers_name_packages() -> None:
    """The layer table names packages (and the base modules at the root), not loose modules:
    the tree shows the layers."""
    root = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    loose = [m for _, members in LAYERS for m in members
             if m.count(".") == 1 and m.split(".")[1] not in root
             and not (PACKAGE / m.split(".")[1]).is_dir()]
    assert not loose, f"LAYERS names modules that are neither packages nor root modules: {loose}"
    assert len(root) <= 10, f"workbench/ holds {len(root)} modules besides the packages: {root}"


def test_type_only_imports_hide_only_listed_cycles() -> None:
    g = _run_graph()
    closing = {(i.source, i.target) for i in imports()
               if i.where == "type" and i.target in g and nx.has_path(g, i.target, i.source)}
    unlisted = sorted(closing - set(TYPE_ONLY_CYCLES))
    stale = sorted(set(TYPE_ONLY_CYCLES) - closing)
    assert not unlisted, f"type-only imports that hide a cycle; fix the layering: {unlisted}"
    assert not stale, f"TYPE_ONLY_CYCLES lists imports that close no cycle: {stale}"


def test_device_files_know_the_gpu_model_fields() -> None:
    """``devices`` checks a device file's ``gpu_model`` keys against the library section of
    ``gpu_model.json`` (importing ``kernel_model`` there would close a cycle); those keys must be
    exactly :class:`~workbench.simulator.cost_model.kernel_model.GpuModel`'s fields."""
    from workbench.simulator.cost_model.devices import gpu_model_parameters
    from workbench.simulator.cost_model.kernel_model import GpuModel

    assert set(gpu_model_parameters()["library"]) == set(GpuModel.__dataclass_fields__)


if __name__ == "__main__":  # pragma: no cover - a report for people
    everything = imports()
    found = cycles()
    up = upward_imports()
    simple = sum(1 for _ in nx.simple_cycles(_run_graph()))
    statements = {(i.source, i.line, i.named) for i in up}
    print(f"{len(modules())} modules, {len(everything)} imports; {len(found)} cycles "
          f"(strongly connected groups of modules; {simple} simple "
          f"cycles); {len(statements)} upward import statements")
    for c in found:
        print("cycle:", " <-> ".join(c))
    for i in up:
        print(f"upward: {i.source}:{i.line} -> {i.target} ({i.where})")
    sys.exit(1 if found or up else 0)
