"""Where the source names an op kind (issue 46): a count from the syntax tree, not the text.

A string constant names a kind when it is used as one:

* compared with something whose source says ``kind`` (``op.kind == "conv2d"``,
  ``kind in ("h2d", "d2h")``), or a member of a collection so compared;
* a key of the op table (``OPS["relu"]``), or the argument of ``canonical_kind`` /
  ``OPS.get``;
* the value of a keyword whose name says ``kind`` (``Op(..., kind="while")``), or the second
  positional argument of ``Op(...)``;
* assigned to a name that says ``kind``;
* a collection (tuple, list, set, dict keys) assigned or returned, of two or more strings that
  are all kinds (a table keyed by kind) and not all attribute names, or one string of two or
  more words that are all kinds (``"relu gelu"``).

A counted string is one kind name, or words that are all kinds.

Docstrings, comments and prose are not counted, and neither are common words in other roles
(``"size"`` as a column name, ``"view"`` as a category), which is why the count reads contexts
rather than every string.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

_TABLES = ("OPS", "IMPORT_ONLY", "_ALL")


def _says_kind(node: ast.AST) -> bool:
    return "kind" in ast.unparse(node).lower()


def _strings(node: ast.AST) -> list[ast.Constant]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [c for e in node.elts for c in _strings(e)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args and \
            node.func.id in ("frozenset", "set", "tuple", "list"):
        return _strings(node.args[0])
    if isinstance(node, ast.Dict):
        return [c for k in node.keys if k is not None for c in _strings(k)]
    if isinstance(node, ast.IfExp):
        return [*_strings(node.body), *_strings(node.orelse)]
    if isinstance(node, ast.BoolOp):
        return [c for v in node.values for c in _strings(v)]
    return []


def _elements(node: ast.AST) -> list[ast.AST] | None:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return list(node.elts)
    if isinstance(node, ast.Dict):
        return [k for k in node.keys if k is not None]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args and \
            node.func.id in ("frozenset", "set", "tuple", "list", "dict"):
        return _elements(node.args[0])
    return None


def kind_names(source: str, kinds: Iterable[str],
               attributes: Iterable[str] = ()) -> dict[str, list[int]]:
    """kind -> the lines where ``source`` names it as a kind (the rules of the module
    docstring).  ``attributes``: attribute names, so a table of attributes that happen to
    spell kinds (``{"min": .., "max": ..}``) is not a table of kinds."""
    known, attrs = set(kinds), set(attributes)
    found: dict[str, list[int]] = defaultdict(list)
    parts = set()  # the literal pieces of f-strings: prose
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts.update(id(v) for v in node.values)

    def is_kind(c: ast.AST) -> bool:
        if not (isinstance(c, ast.Constant) and isinstance(c.value, str)) or id(c) in parts:
            return False
        words = c.value.split()
        return bool(words) and all(w in known for w in words)

    def add(constants: Iterable[ast.AST]) -> None:
        for c in constants:
            if is_kind(c):
                for word in str(c.value).split():  # type: ignore[attr-defined]
                    found[word].append(c.lineno)

    def table(value: ast.AST) -> None:
        items = _elements(value)
        if items and len(items) >= 2 and all(is_kind(i) for i in items) and not all(
                i.value in attrs for i in items):  # type: ignore[attr-defined]
            add(items)
        if isinstance(value, ast.Dict):
            for v in value.values:
                table(v)

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_says_kind(s) for s in sides):
                for side in sides:
                    if not _says_kind(side):
                        add(_strings(side))
        elif isinstance(node, ast.Subscript):
            if ast.unparse(node.value).split(".")[-1] in _TABLES:
                add(_strings(node.slice))
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name.endswith("canonical_kind") or (name.split(".")[-1] == "get"
                                                   and name.split(".")[-2:-1] == ["OPS"]):
                add(c for a in node.args[:1] for c in _strings(a))
            for kw in node.keywords:
                if kw.arg and "kind" in kw.arg:
                    add(_strings(kw.value))
            if name.split(".")[-1] == "Op":
                add(c for a in node.args[1:2] for c in _strings(a))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.Return)) and \
                node.value is not None:
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, ast.AnnAssign) else [])
            if any(_says_kind(t) for t in targets):
                add(_strings(node.value))
            table(node.value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if len(node.value.split()) >= 2:
                add([node])
    return {k: sorted(set(v)) for k, v in found.items()}


def names_by_file(root: Path, kinds: Iterable[str], attributes: Iterable[str] = ()
                  ) -> dict[str, dict[str, list[int]]]:
    """path (relative to ``root``'s parent) -> kind -> lines, for every module under ``root``."""
    kinds, attributes = set(kinds), set(attributes)
    out = {}
    for path in sorted(root.rglob("*.py")):
        named = kind_names(path.read_text(encoding="utf-8"), kinds, attributes)
        if named:
            out[str(path.relative_to(root.parent))] = named
    return out
