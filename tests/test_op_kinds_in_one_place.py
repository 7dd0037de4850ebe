"""An op kind in one place (issue 46): the modules under ``workbench/`` that name a kind are its
family module (``workbench/ops/<family>.py``), the GPU lowering (``workbench/executors/gpu/``,
platform code beside its kernels) and the built-in model builders (``workbench/models/``);
nothing else.  Every other stage asks the table (``OPS[kind].<fact>``, a derived kind set, or a
kind name its family exports).  Counted from the syntax tree by :mod:`tests._kind_names`."""

from __future__ import annotations

from pathlib import Path

from tests._kind_names import kind_names, names_by_file
from workbench.ops import FAMILIES, IMPORT_ONLY, OPS
from workbench.ops.attrs import ATTRIBUTES

ROOT = Path(__file__).resolve().parents[1]
ALLOWED_PACKAGES = ("workbench/executors/gpu/", "workbench/models/")


def _family_of() -> dict[str, str]:
    return {k.name: f"workbench/ops/{family.__name__.rsplit('.', 1)[-1]}.py"
            for family in FAMILIES for table in ("KINDS", "IMPORTED")
            for k in getattr(family, table, ())}


def test_every_kind_is_in_exactly_one_family() -> None:
    home = _family_of()
    assert set(home) == set(OPS) | set(IMPORT_ONLY)
    counted = sum(len(getattr(f, t, ())) for f in FAMILIES for t in ("KINDS", "IMPORTED"))
    assert counted == len(home)
    assert all(getattr(f, "KINDS", ()) for f in FAMILIES), "a family without kinds"


def test_only_the_family_the_gpu_lowering_and_the_builders_name_a_kind() -> None:
    home = _family_of()
    found = names_by_file(ROOT / "workbench", set(home), ATTRIBUTES)
    stray = {path: {kind: lines for kind, lines in kinds.items() if path != home[kind]}
             for path, kinds in found.items() if not path.startswith(ALLOWED_PACKAGES)}
    stray = {path: kinds for path, kinds in stray.items() if kinds}
    assert not stray, ("op kinds named outside their family (ask the table, or use the name "
                       f"the family exports): {stray}")


def test_the_count_finds_the_ways_code_names_a_kind() -> None:
    source = '''
"""A docstring naming conv2d and relu is prose."""
import x
TABLE = {"relu": 1, "gelu": 2}
PAIR = "relu gelu"
def f(op, df, attrs):
    if op.kind == "conv2d" or op.kind in ("h2d", "d2h"):
        return OPS["matmul"].category, Op("a", kind="while")
    barrier_kind = "join"
    df.agg(ops=("op", "size"))
    attrs = {"min": 0, "max": 1}
    return f"a concat copy {attrs}", canonical_kind("Softmax")
'''
    found = kind_names(source, set(OPS), ATTRIBUTES)
    # not the docstring, the pandas aggregation, the attribute table, the f-string, nor
    # "Softmax" (not the table's spelling: canonical_kind would map it)
    assert set(found) == {"relu", "gelu", "conv2d", "h2d", "d2h", "matmul", "while", "join"}
    assert found["relu"] == [4, 5] and found["while"] == [8]


def test_an_onnx_conversion_is_declared_by_the_kind_its_type_imports_as() -> None:
    from workbench.io.onnx.rules import kind_of
    from workbench.ops import ONNX_CONVERSIONS, canonical_kind

    declared = {t: k.name for k in [*OPS.values(), *IMPORT_ONLY.values()]
                for t, _ in k.onnx_attrs}
    assert declared and set(declared) == set(ONNX_CONVERSIONS)
    assert {t: canonical_kind(kind_of(t)) for t in declared} == declared


def test_a_torch_conversion_is_declared_by_the_kind_its_label_imports_as() -> None:
    from workbench.io.torch.attr_rules import CONVERSIONS
    from workbench.io.torch.attrs import kind_of_label

    declared = {t: k.name for k in [*OPS.values(), *IMPORT_ONLY.values()]
                for t, _ in k.torch_attrs}
    assert declared and set(declared) == set(CONVERSIONS)
    # a label torch's names do not list (conv_transpose1d, max_pool3d ...) imports as no kind
    assert all(kind_of_label(t) in (None, k) for t, k in declared.items())
    assert sum(kind_of_label(t) == k for t, k in declared.items()) > 100
