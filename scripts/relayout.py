"""Move workbench's root modules into the packages of docs/architecture.md (issue 26).

Run from the repository root: ``python scripts/relayout.py`` (``--dry-run`` only reports).  For
each row of :data:`MOVES` it ``git mv``-s the old file or package to its new place (when the old
one is still there) and then rewrites every reference to the old dotted path or file path in
``workbench/``, ``tests/``, ``benchmarks/``, ``notebooks/*.ipynb``, ``docs/`` and ``README.md``.
It is idempotent: a second run finds nothing to move and nothing to rewrite, and says so.  The
old import paths keep working through the alias finder of ``workbench/_aliases.py``, which
reads the same table.

Names that are also public functions of the top package (``workbench.compare`` is both a module
and ``wb.compare``) are rewritten only where they are clearly the module: in an import statement
or followed by ``.name``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench._aliases import MOVES  # noqa: E402  (the table lives beside the finder)

# Top-level attributes of ``workbench`` that share a name with a moved module.
AMBIGUOUS = {"compare", "simulate", "sweep", "execute", "schedule", "trace", "graph"}
# Files that name the old paths on purpose: the alias table, this script, the alias tests.
KEEP_OLD_NAMES = {"relayout.py", "_aliases.py", "test_layout.py"}
TEXT_GLOBS = ("workbench/**/*.py", "tests/**/*.py", "benchmarks/**/*.py", "notebooks/*.ipynb",
              "docs/**/*.md", "README.md", "scripts/**/*.py", "pyproject.toml")


# Modules that become packages, their code in the package's ``__init__``.
TO_PACKAGES = ("workbench.cli",)

# The new packages and what their ``__init__`` says (written when missing).
PACKAGES = {
    "workbench.values": (
        "The graph values: Graph, Op and Tensor, the op catalogue (ops, its NumPy and torch "
        "references, shape costs), control-flow checks, Schedule, happens-before clocks and "
        "Trace.\n\nValues layer: may import the base modules (``workbench.errors``, "
        "``workbench.registry``, ``workbench._checks`` ...) and ``workbench.control``'s op "
        "definitions, nothing above."),
    "workbench.simulator": (
        "The simulator: ``simulate`` (the entry), the discrete-event ``engine`` and the CPU "
        "``host`` model, the ``cost_model`` package (devices and their data, the kernel model, "
        "launches, calibration, device profiles) and the ``fidelity`` tooling that checks the "
        "model against measured runs.\n\nThis ``__init__`` imports nothing, so the cost model "
        "can be imported by the graph transforms and schedulers below the engine; ``simulate``, "
        "``engine`` and ``host`` are the engine layer and may import the values, the cost "
        "model, the transforms, the schedulers and memory; ``fidelity`` is orchestration."),
    "workbench.simulator.cost_model": (
        "The cost model: device specs and their data files (``devices``), the GPU kernel model "
        "(``kernel_model``), kernel launches (``launches``), op costs (``costs``), calibration "
        "and device profiles.\n\nCost-model layer: may import the base modules and the graph "
        "values (``workbench.values``), nothing above."),
    "workbench.executors": (
        "The executors: ``execute`` (the entry that runs a schedule for real), the NumPy "
        "``reference``, the CuPy executor ``gpu``, the torch executor ``torch_exec`` and the "
        "device probes and calibration.\n\nThis ``__init__`` imports nothing.  ``reference`` "
        "is a values-layer module (graph values only); ``execute`` is engine layer; ``gpu``, "
        "``torch_exec`` and ``device_probes`` are backends (engine and below); "
        "``device_calibration`` is orchestration.  CuPy and torch are imported inside "
        "functions only."),
    "workbench.orchestration": (
        "Orchestration: ``compare`` (policies side by side), ``compare_measured``, ``sweep``, "
        "``optimum``, ``pipelines`` and the HTML ``report``.\n\nOrchestration layer: may "
        "import everything below it (values, simulator, executors, views through "
        "``workbench.registry``), never the apps (``workbench.ui``, ``workbench.cli``); "
        "``report`` is the layer above ``compare``."),
}


def packages(dry: bool) -> list[str]:
    """Write the ``__init__`` of each new package that has none; returns what it did."""
    done = []
    for name, doc in PACKAGES.items():
        init = _path(name) / "__init__.py"
        if init.exists():
            continue
        done.append(f"create {init.relative_to(ROOT)}")
        if not dry:
            init.parent.mkdir(parents=True, exist_ok=True)
            body = "\n".join(_wrap(doc))
            init.write_text(f'"""{body}\n"""\n', encoding="utf-8")
            subprocess.run(["git", "add", str(init)], cwd=ROOT, check=True)
    return done


def _wrap(doc: str) -> list[str]:
    import textwrap

    out: list[str] = []
    for para in doc.split("\n\n"):
        out += textwrap.wrap(para, 96) + [""]
    return out[:-1]


def _path(dotted: str) -> Path:
    return ROOT / Path(*dotted.split("."))


def move(dry: bool) -> list[str]:
    """``git mv`` each old module or package that still exists; returns what it did."""
    done = []
    for name in TO_PACKAGES:
        src, dst = _path(name).with_suffix(".py"), _path(name) / "__init__.py"
        if src.exists() and not dst.exists():
            done.append(f"git mv {src.relative_to(ROOT)} {dst.relative_to(ROOT)}")
            if not dry:
                dst.parent.mkdir(parents=True, exist_ok=True)
                subprocess.run(["git", "mv", str(src), str(dst)], cwd=ROOT, check=True)
    for old, new in MOVES.items():
        src_pkg, src_mod = _path(old), _path(old).with_suffix(".py")
        dst_pkg, dst_mod = _path(new), _path(new).with_suffix(".py")
        if src_pkg.is_dir() and (src_pkg / "__init__.py").exists():
            src, dst = src_pkg, dst_pkg
        elif src_mod.exists():
            # a module that becomes a package keeps its code in the package's __init__
            src, dst = src_mod, (dst_mod if not dst_pkg.is_dir() else dst_pkg / "__init__.py")
        else:
            continue
        if dst.exists():
            raise SystemExit(f"relayout: both {src.relative_to(ROOT)} and "
                             f"{dst.relative_to(ROOT)} exist; merge them by hand")
        done.append(f"git mv {src.relative_to(ROOT)} {dst.relative_to(ROOT)}")
        if not dry:
            dst.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "mv", str(src), str(dst)], cwd=ROOT, check=True)
    return done


def _patterns() -> list[tuple[re.Pattern[str], str]]:
    out: list[tuple[re.Pattern[str], str]] = []
    for old, new in sorted(MOVES.items(), key=lambda kv: -len(kv[0])):
        name = old.removeprefix("workbench.")
        new_rel = new.removeprefix("workbench.")
        if name in AMBIGUOUS:
            dotted = (rf"(?<![\w.])workbench\.{name}(?=[.:][A-Za-z_])|"
                      rf"(?<=import )workbench\.{name}\b|(?<=from )workbench\.{name}\b|"
                      rf"(?<=:mod:`)workbench\.{name}\b|(?<=[\"'])workbench\.{name}(?=[\"'])")
        else:
            dotted = rf"(?<![\w.])workbench\.{name}\b"
        out.append((re.compile(dotted), new))
        # ``from workbench import name`` (alone on the line, optionally ``as x``)
        out.append((re.compile(rf"\bfrom workbench import {name}\b(?=( as \w+)?\s*(\\n|$|#|\"))",
                               re.M), "from {} import {}".format(*new.rsplit(".", 1))))
        path = "/".join(name.split("."))
        new_path = "/".join(new_rel.split("."))
        out.append((re.compile(rf"(?<![\w./])workbench/{path}(?=\.py\b|/)"),
                    f"workbench/{new_path}"))
    return out


def _split_from_imports(text: str) -> str:
    """``from workbench import a, b`` with a moved name becomes one import line per source."""
    moved = {old.removeprefix("workbench."): new for old, new in MOVES.items()
             if old.count(".") == 1}

    def fix(m: re.Match[str]) -> str:
        indent, names = m.group(1), [n.strip() for n in m.group(2).split(",")]
        if not any(n.split(" as ")[0] in moved for n in names) or len(names) < 2:
            return m.group(0)
        lines = []
        for n in names:
            base = n.split(" as ")[0]
            if base in moved:
                pkg, _, leaf = moved[base].rpartition(".")
                lines.append(f"{indent}from {pkg} import {leaf}{n[len(base):]}")
            else:
                lines.append(f"{indent}from workbench import {n}")
        return "\n".join(lines)

    return re.sub(r"^([ \t]*)from workbench import ([\w, ]+?)[ \t]*$", fix, text, flags=re.M)


def rewrite(dry: bool) -> list[str]:
    """Rewrite the references in every text file; returns ``file: n replacements``."""
    pats, done, seen = _patterns(), [], set()
    for glob in TEXT_GLOBS:
        for f in sorted(ROOT.glob(glob)):
            if f in seen or f.name in KEEP_OLD_NAMES:
                continue
            seen.add(f)
            text = f.read_text(encoding="utf-8")
            new = _split_from_imports(text) if f.suffix == ".py" else text
            count = int(new != text)
            for pat, repl in pats:
                new, n = pat.subn(repl, new)
                count += n
            if new != text:
                done.append(f"{f.relative_to(ROOT)}: {count} references")
                if not dry:
                    f.write_text(new, encoding="utf-8")
    return done


def _long_prose_lines(text: str, limit: int) -> dict[int, str]:
    """Line numbers (0-based) longer than ``limit`` that lie inside a multi-line string (not on
    its closing line) or hold a comment, with ``"string"`` or ``"comment"``."""
    import io
    import tokenize

    long = {i for i, line in enumerate(text.splitlines()) if len(line) > limit}
    out: dict[int, str] = {}
    if not long:
        return out
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return out
    for tok in tokens:
        rows = range(tok.start[0] - 1, tok.end[0])
        if tok.type == tokenize.STRING and tok.start[0] != tok.end[0]:
            out.update({r: "string" for r in rows if r in long and r != tok.end[0] - 1})
        elif (tok.type == tokenize.COMMENT and rows[0] in long
              and not tok.line[:tok.start[1]].strip()):  # whole-line comments only
            out[rows[0]] = "comment"
    return out


def wrap(dry: bool, limit: int = 100) -> list[str]:
    """Break the prose lines (docstrings, comments) that the longer module paths pushed past
    ``limit`` characters at their last space; long code lines are left to
    ``ruff --select I`` (imports) or to hand.  Returns ``file: n lines wrapped``."""
    done = []
    for f in sorted({*ROOT.glob("workbench/**/*.py"), *ROOT.glob("tests/**/*.py"),
                     *ROOT.glob("benchmarks/**/*.py")}):
        text = f.read_text(encoding="utf-8")
        kinds = _long_prose_lines(text, limit)
        if not kinds:
            continue
        lines, n = text.split("\n"), 0
        for i in sorted(kinds, reverse=True):
            line = lines[i]
            indent, lead = line[:len(line) - len(line.lstrip())], ""
            if kinds[i] == "comment":
                hash_at = line.index("#")
                indent, lead = " " * hash_at, "# "
            cut = line.rfind(" ", len(indent) + 4, limit + 1)
            if cut < 0 or not line[:cut].strip("#\"' "):
                continue
            lines[i:i + 1] = [line[:cut].rstrip(), indent + lead + line[cut + 1:]]
            n += 1
        if n:
            done.append(f"{f.relative_to(ROOT)}: {n} lines wrapped")
            if not dry:
                f.write_text("\n".join(lines), encoding="utf-8")
    return done


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true", help="report, change nothing")
    args = ap.parse_args(argv)
    moved = packages(args.dry_run) + move(args.dry_run)
    rewritten = rewrite(args.dry_run)
    if not args.dry_run:
        subprocess.run([sys.executable, "-m", "ruff", "check", "-q", "--select", "I", "--fix",
                        "workbench", "tests", "benchmarks"], cwd=ROOT, check=False)
    rewritten += wrap(args.dry_run)
    for line in moved + rewritten:
        print(line)
    print(f"relayout: {len(moved)} moves, {len(rewritten)} files rewritten"
          + (" (dry run)" if args.dry_run else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
