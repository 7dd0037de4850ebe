"""A small mutation tester: do the tests of a module fail when one line of it is wrong?

Each *mutant* is the module with one semantic change, made on its ``ast``:

* ``cmp``:    a comparison swapped (``<`` to ``<=`` or ``>``, ``==`` to ``!=``, ``is`` to
  ``is not``, ``in`` to ``not in``, ...);
* ``int``:    an integer constant plus or minus one;
* ``off1``:   an arithmetic index ``x[e]`` (``x[i - 1]``, ``x[-1]``) read as ``x[e + 1]`` /
  ``x[e - 1]``, the right side of an ordering comparison plus or minus one;
* ``bool``:   ``and`` / ``or`` swapped, ``not`` removed, ``True`` / ``False`` flipped,
  ``return <value>`` made ``return None``;
* ``drop``:   a statement that is a bare call (``cuda.synchronize()``, ``out.append(x)``) removed;
* ``order``:  ``sorted(...)``'s ``reverse`` flipped, a simple ``key=lambda x: e`` negated,
  ``min`` / ``max`` swapped.

Each mutant is written into a temporary copy of the repository (the working tree is never
touched; the copy holds the working tree's tracked and untracked, not ignored, files) and
``python -m pytest -x -q <tests>`` runs there with a timeout.  A mutant is *killed* when the tests
fail, *survives* when they pass, a *timeout* when they run past the limit (counted as detected).
The table gives, per module: mutants, killed, survived, timeouts, score ((killed + timeouts) /
mutants), then every survivor as ``file:line  mutation``.  A survivor is either a missing test
or an equivalent mutant (one that cannot change behaviour); only reading it tells which.

Usage (from the repository root)::

    python benchmarks/mutate.py                               # every module of DEFAULT_MODULES
    python benchmarks/mutate.py --modules schedulers/nnc.py schedulers/wavefront.py
    python benchmarks/mutate.py --modules values/clocks.py --tests tests/test_schedule.py
    python benchmarks/mutate.py --modules schedulers/nnc.py --max-mutants 20 --jobs 4
    python benchmarks/mutate.py --modules schedulers/nnc.py --list    # the mutants, no pytest

``--modules`` takes paths under ``workbench/`` (default: every key of ``DEFAULT_MODULES``, each
with its tests); ``--tests`` replaces the tests for all the given modules; ``--max-mutants N``
samples N mutants per module (``--seed``); ``--jobs`` copies of the repository run in parallel
(default 2); ``--timeout`` per mutant (default: 3 x the unmutated run + 10 s).  The unmutated
tests must pass first, else the module is skipped.  Not part of the test suite (minutes per
module); ``tests/test_mutate_tool.py`` only checks the mutant generation.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from queue import Queue

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "workbench"

DEFAULT_MODULES: dict[str, tuple[str, ...]] = {
    "values/schedule.py": ("tests/test_schedule.py", "tests/test_validate_rules.py",
                           "tests/test_validate_corruption.py"),
    "values/clocks.py": ("tests/test_schedule.py", "tests/test_validate_rules.py",
                         "tests/test_validate_corruption.py"),
    "memory/check.py": ("tests/test_memory_check_rules.py", "tests/test_memory_planners.py"),
    "memory/placement.py": ("tests/test_somas_heuristics.py", "tests/test_memory_planners.py"),
    "memory/placement_kernel.py": ("tests/test_placement_kernel.py",),  # each mutant compiles
    "memory/kernel_gaps.py": ("tests/test_placement_kernel.py",),
    "memory/kernel_ranges.py": ("tests/test_placement_kernel.py", "tests/test_live_kernel.py"),
    "memory/live_kernel.py": ("tests/test_live_kernel.py",),  # each mutant compiles
    "memory/csr_kernel.py": ("tests/test_memory_scale.py",),
    "memory/somas.py": ("tests/test_somas_heuristics.py", "tests/test_memory_planners.py",
                        "tests/test_mutation_kills.py"),
    "simulator/engine.py": ("tests/test_simulate.py", "tests/test_simulate_queues.py"),
    "executors/torch_exec/cuda.py": ("tests/test_cuda_fake_order.py",
                                     "tests/test_torch_cuda_fake.py",
                                     "tests/test_fake_cuda_rules.py"),
    "io/text/json_format.py": ("tests/test_json_format_rules.py", "tests/test_io.py",
                          "tests/test_strict_inputs.py", "tests/test_round_trips.py",
                          "tests/test_mutation_kills.py"),
    "schedulers/nnc.py": ("tests/test_nnc_rules.py", "tests/test_seed_rules.py",
                          "tests/test_seed_examples.py"),
    "schedulers/wavefront.py": ("tests/test_wavefront_rules.py", "tests/test_seed_rules.py",
                                "tests/test_seed_examples.py"),
}

_CMP: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt, ast.GtE), ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.LtE), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,), ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
}
_SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
           ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}


@dataclass(frozen=True)
class Mutant:
    line: int
    what: str
    index: int  # the site's position in the walk (see :func:`_sites`)


Site = tuple[int, str, Callable[[ast.AST], None]]  # line, description, mutate the node in place


def _shift(expr: ast.expr, by: int) -> ast.expr:
    return ast.BinOp(expr, ast.Add() if by > 0 else ast.Sub(), ast.Constant(abs(by)))


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0]))
    return out


def _node_sites(node: ast.AST, skip: set[int]) -> Iterator[Site]:
    """The mutations of one node (each a closure mutating that node)."""
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Compare):
        for k, op in enumerate(node.ops):
            for new in _CMP.get(type(op), ()):
                def swap(n: ast.Compare, k: int = k, new: type = new) -> None:
                    n.ops[k] = new()
                yield line, f"cmp {_SYMBOL[type(op)]} -> {_SYMBOL[new]}", swap
        if type(node.ops[-1]) in (ast.Lt, ast.LtE, ast.Gt, ast.GtE) and not isinstance(
                node.comparators[-1], ast.Constant):
            for by in (1, -1):
                def off(n: ast.Compare, by: int = by) -> None:
                    n.comparators[-1] = _shift(n.comparators[-1], by)
                yield line, f"off1 right side of comparison {by:+d}", off
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        for by in (1, -1):
            def bump(n: ast.Constant, by: int = by) -> None:
                n.value += by
            yield line, f"int {node.value} -> {node.value + by}", bump
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        def flip(n: ast.Constant) -> None:
            n.value = not n.value
        yield line, f"bool {node.value} -> {not node.value}", flip
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, (ast.BinOp, ast.UnaryOp)) \
            and isinstance(node.ctx, ast.Load):  # arithmetic indices (a name may be a dict key)
        for by in (1, -1):
            def index(n: ast.Subscript, by: int = by) -> None:
                n.slice = _shift(n.slice, by)
            yield line, f"off1 index {by:+d}", index
    elif isinstance(node, ast.BoolOp):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        def boolop(n: ast.BoolOp, other: type = other) -> None:
            n.op = other()
        yield line, f"bool {'and -> or' if other is ast.Or else 'or -> and'}", boolop
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        def unnot(n: ast.UnaryOp) -> None:  # "not not x": x's truth value, in place
            n.operand = ast.UnaryOp(ast.Not(), n.operand)
        yield line, "bool 'not' removed", unnot
    elif isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        def ret(n: ast.Return) -> None:
            n.value = ast.Constant(None)
        yield line, "bool return value -> None", ret
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and id(node) not in skip:
        def drop(n: ast.Expr) -> None:
            n.value = ast.Constant(None)
        yield line, f"drop call {ast.unparse(node.value.func)}(...)", drop
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        if name in ("min", "max"):
            def minmax(n: ast.Call) -> None:
                n.func = ast.Name("max" if n.func.id == "min" else "min", ast.Load())
            yield line, f"order {name} -> {'max' if name == 'min' else 'min'}", minmax
        if name == "sorted":
            def reverse(n: ast.Call) -> None:
                kw = [k for k in n.keywords if k.arg == "reverse"]
                if kw:
                    kw[0].value = ast.UnaryOp(ast.Not(), kw[0].value)
                else:
                    n.keywords.append(ast.keyword("reverse", ast.Constant(True)))
            yield line, "order sorted reverse flipped", reverse
        for k, kw in enumerate(node.keywords):
            if kw.arg == "key" and isinstance(kw.value, ast.Lambda) and not isinstance(
                    kw.value.body, ast.Tuple):
                def negate(n: ast.Call, k: int = k) -> None:
                    body = n.keywords[k].value
                    body.body = ast.UnaryOp(ast.USub(), body.body)
                yield line, f"order {name} key negated", negate


def _sites(tree: ast.AST) -> Iterator[tuple[ast.AST, Site]]:
    """Every (node, mutation) of ``tree`` in a fixed walk order, skipping docstrings,
    annotations, ``__all__`` and ``from __future__`` imports."""
    skip = _docstrings(tree)
    ignored: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.arg, ast.AnnAssign)) and getattr(node, "annotation", None):
            ignored.update(id(n) for n in ast.walk(node.annotation))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns:
            ignored.update(id(n) for n in ast.walk(node.returns))
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            ignored.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.ImportFrom) or id(node) in skip:
            ignored.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) not in ignored:
            for site in _node_sites(node, skip):
                yield node, site


def mutants(source: str) -> list[Mutant]:
    """Every mutant of ``source`` (line, description), in walk order."""
    return [Mutant(line, what, k) for k, (_, (line, what, _f)) in
            enumerate(_sites(ast.parse(source)))]


def mutate(source: str, mutant: Mutant) -> str:
    """``source`` with ``mutant`` applied (re-parsed, so mutants never share a tree)."""
    tree = ast.parse(source)
    for k, (node, (_, _, apply)) in enumerate(_sites(tree)):
        if k == mutant.index:
            apply(node)
            return ast.unparse(ast.fix_missing_locations(tree))
    raise IndexError(mutant)


def _copy_repo(dest: Path) -> None:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _pytest(copy_dir: Path, tests: list[str], timeout: float) -> tuple[str, float]:
    """Run ``tests`` in a repository copy.  Numba's cache goes to a fresh folder each run: it
    keys a compiled function on its own file only, so a mutant of a helper the placement
    kernel inlines (``memory/kernel_gaps.py``) would otherwise run the kernel cached before."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as numba_cache:
        env = dict(os.environ, PYTHONPATH=str(copy_dir), PYTHONDONTWRITEBYTECODE="1",
                   NUMBA_CACHE_DIR=numba_cache)
        try:
            r = subprocess.run(cmd, cwd=copy_dir, env=env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timeout", time.perf_counter() - t0
    return ("survived" if r.returncode == 0 else "killed"), time.perf_counter() - t0


def run_module(module: str, tests: list[str], copies: Queue, *, max_mutants: int | None,
               seed: int, timeout: float | None, jobs: int) -> dict[str, object]:
    rel = f"{PACKAGE}/{module}"
    source = (ROOT / rel).read_text()
    found = mutants(source)
    chosen = found if max_mutants is None or len(found) <= max_mutants else sorted(
        random.Random(seed).sample(found, max_mutants), key=lambda m: m.index)
    base_dir = copies.get()
    status, took = _pytest(base_dir, tests, 600)
    copies.put(base_dir)
    if status != "survived":
        return {"module": module, "error": f"the unmutated tests {status} ({took:.0f} s)"}
    limit = timeout or 3 * took + 10

    def one(m: Mutant) -> tuple[Mutant, str]:
        where = copies.get()
        try:
            (where / rel).write_text(mutate(source, m))
            return m, _pytest(where, tests, limit)[0]
        finally:
            (where / rel).write_text(source)
            copies.put(where)

    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(one, chosen))
    count = {k: sum(s == k for _, s in results) for k in ("killed", "survived", "timeout")}
    return {"module": module, "mutants": len(chosen), "of": len(found), **count,
            "survivors": [m for m, s in results if s == "survived"], "base_s": took}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", nargs="+", default=list(DEFAULT_MODULES),
                    help="paths under workbench/ (default: every module of DEFAULT_MODULES)")
    ap.add_argument("--tests", nargs="+", help="test files for every given module")
    ap.add_argument("--max-mutants", type=int, help="sample at most N mutants per module")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, help="seconds per mutant")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--list", action="store_true", help="list the mutants; run nothing")
    args = ap.parse_args(argv)
    if args.list:
        for module in args.modules:
            for m in sorted(mutants((ROOT / PACKAGE / module).read_text()),
                            key=lambda m: m.line):
                print(f"{PACKAGE}/{module}:{m.line}  {m.what}")
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
        copies: Queue = Queue()
        for k in range(max(1, args.jobs)):
            _copy_repo(Path(tmp) / str(k))
            copies.put(Path(tmp) / str(k))
        for module in args.modules:
            tests = [t for t in (args.tests or DEFAULT_MODULES.get(module, ())) if
                     (ROOT / t).exists()]
            if not tests:
                rows.append({"module": module, "error": "no test files"})
                continue
            print(f"{module}: {' '.join(tests)}", flush=True)
            rows.append(run_module(module, tests, copies, max_mutants=args.max_mutants,
                                   seed=args.seed, timeout=args.timeout, jobs=args.jobs))
    print(f"{'module':34} {'mutants':>9} {'killed':>7} {'survived':>9} {'timeouts':>9} "
          f"{'score':>6}")
    for r in rows:
        if "error" in r:
            print(f"{r['module']:34} {r['error']}")
            continue
        n = r["mutants"]
        score = (r["killed"] + r["timeout"]) / n if n else 1.0
        share = f"{n}/{r['of']}"
        print(f"{r['module']:34} {share:>9} {r['killed']:>7} {r['survived']:>9} "
              f"{r['timeout']:>9} {score:>6.0%}")
    for r in rows:
        for m in r.get("survivors", []):
            print(f"survived  {PACKAGE}/{r['module']}:{m.line}  {m.what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
