"""``benchmarks/mutate.py`` generates the mutants it promises (no pytest is run here).

The tool itself is run by hand (minutes per module); this only checks that each operator finds
its sites in a tiny module, that every mutant compiles and differs from the original, and that
docstrings, annotations and ``__all__`` are left alone.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TINY = '''"""A tiny module."""
from __future__ import annotations

__all__ = ["f", "g"][:1 + 1]


def g(x: Literal[7]) -> Literal[8]:
    """Doc: 9 < 10."""
    return x


def f(xs: list[int], k: int, flag: bool = True) -> int:
    """Docstring: 1 < 2."""
    out = []
    if k < len(xs) and not flag:
        out.append(xs[k - 1])
    sync()
    best = sorted(xs, key=lambda x: x * 2)
    return max(best) if best[0] == 3 else False
'''


@functools.cache
def _tool():
    spec = importlib.util.spec_from_file_location("mutate_tool", ROOT / "benchmarks" / "mutate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_every_operator_finds_its_sites_and_every_mutant_compiles() -> None:
    """One mutant per site and operator, each a different, valid module; the docstrings'
    comparisons, the annotations' constants (7, 8) and ``__all__`` are not mutated: every
    mutant but ``g``'s return and ``f``'s default is in ``f``'s body."""
    tool = _tool()
    found = tool.mutants(TINY)
    what = [m.what for m in found]
    for expected in ("cmp < -> <=", "cmp < -> >", "cmp == -> !=", "int 1 -> 2", "int 3 -> 4",
                     "off1 index +1", "off1 right side of comparison +1", "bool and -> or",
                     "bool 'not' removed", "bool True -> False", "bool return value -> None",
                     "drop call sync(...)", "drop call out.append(...)",
                     "order sorted reverse flipped", "order sorted key negated",
                     "order max -> min"):
        assert expected in what, expected
    body = range(15, 21)
    assert [m.what for m in found if m.line not in body] == ["bool return value -> None",
                                                             "bool True -> False"]
    sources = {tool.mutate(TINY, m) for m in found}
    assert len(sources) == len(found)
    original = ast.unparse(ast.parse(TINY))
    for src in sources:
        assert src != original
        compile(src, "<mutant>", "exec")


def test_a_dropped_call_and_an_index_shift_read_as_intended() -> None:
    tool = _tool()
    by_what = {m.what: m for m in tool.mutants(TINY)}
    dropped = tool.mutate(TINY, by_what["drop call sync(...)"])
    assert "sync()" not in dropped and "out.append" in dropped
    shifted = tool.mutate(TINY, by_what["off1 index +1"])
    assert "xs[k - 1 + 1]" in shifted
