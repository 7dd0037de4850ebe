"""The op-kind table (:mod:`workbench.ops`): every entry checked in one common test.

* every entry is well formed and every derived kind set comes from it;
* every entry's NumPy reference runs on small shapes (right output shape, finite, float32);
* where the GPU lowering exists, the CPU emulator of the launch plan (the kernel twins) agrees with
  the reference; on a GPU (``@pytest.mark.gpu``) the CuPy executor does too;
* no module of ``workbench/`` but ``ops.py`` keeps its own table of op-kind names (an ``ast``
  pass), apart from the exceptions listed with their reasons.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench.executors.gpu.emulator import emulate
from workbench.executors.gpu.launch_plan import build_launch_plan
from workbench.executors.gpu.lowering import LOWERINGS
from workbench.executors.gpu.reference import REFERENCES, run_graph_reference
from workbench.ops import (
    CATEGORIES,
    FLOPS_PER_ELEMENT,
    IMPORT_ONLY,
    KERNEL_KINDS,
    KNOWN_KINDS,
    NO_TASK_KINDS,
    OPS,
    REFERENCE_KINDS,
    TORCH_ALIASES,
    canonical_kind,
)
from workbench.values.graph import Graph, Op, Tensor

F32 = np.float32
PACKAGE = Path(__file__).resolve().parents[1] / "workbench"


@dataclass
class Case:
    """One op of a kind on small shapes: inputs ``(shape, role)``, output shape, attrs."""

    inputs: list[tuple[tuple[int, ...], str]]
    output: tuple[int, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    dtype: Any = np.float32  # the output's (comparisons give bool, argmax and shape int64)


X = (2, 3, 4, 5)
I64 = np.int64
#: Comparisons and logic: bool outputs.
BOOL_KINDS = ("equal not_equal greater less greater_or_equal less_or_equal and or xor not "
              "isnan").split()
_I, _P = "input", "parameter"
#: The kinds the op vocabulary added (the importers' kinds with a torch form), on small shapes.
VOCABULARY_CASES = {
    "conv1d": Case([((1, 2, 5), _I), ((3, 2, 3), _P)], (1, 3, 3)),
    "conv3d": Case([((1, 2, 3, 4, 4), _I), ((3, 2, 1, 3, 3), _P)], (1, 3, 3, 2, 2)),
    "conv_transpose": Case([((1, 2, 3, 3), _I), ((2, 3, 3, 3), _P)], (1, 3, 5, 5)),
    "global_maxpool": Case([((1, 2, 4, 4), _I)], (1, 2, 1, 1)),
    "groupnorm": Case([((2, 4, 3), _I), ((4,), _P), ((4,), _P)], (2, 4, 3), {"groups": 2}),
    "instancenorm": Case([((2, 3, 4), _I), ((3,), _P), ((3,), _P)], (2, 3, 4)),
    "lrn": Case([(X, _I)], X, {"window": 3}),
    "stack": Case([((2, 3), _I)] * 2, (2, 2, 3), {"axis": 0}),
    "mod": Case([(X, _I), (X, _I)], X),
    "prelu": Case([(X, _I), ((3,), _P)], X),
    "where": Case([(X, _I)] * 3, X),
    "attention": Case([((1, 2, 3, 4), _I)] * 3, (1, 2, 3, 4)),
    "gather": Case([((5, 4), _P), ((2, 3), _I)], (2, 3, 4)),
    "embedding": Case([((5, 4), _P), ((2, 3), _I)], (2, 3, 4)),
    "slice": Case([(X, _I)], (2, 3, 2, 5), {"starts": [1], "ends": [3], "axes": [2]}),
    "getitem": Case([(X, _I)], (2, 4, 5), {"axis": 1, "index": 1}),
    "split": Case([((2, 6), _I)], (12,), {"axis": 1, "sizes": [2, 4]}),
    "expand": Case([((1, 3, 1), _I)], (2, 3, 4)),
    "broadcast_to": Case([((1, 3, 1), _I)], (2, 3, 4)),
    "tile": Case([((2, 3), _I)], (4, 3), {"repeats": [2, 1]}),
    "pad": Case([((2, 3), _I)], (3, 6), {"padding": [1, 1, 0, 2]}),
    "resize": Case([((1, 1, 2, 2), _I)], (1, 1, 4, 4), {"mode": "linear"}),
    "shape": Case([(X, _I)], (4,), dtype=I64),
    "size": Case([(X, _I)], (), dtype=I64),
    "range": Case([], (4,), {"start": 0.5, "end": 4.5, "step": 1.0}),
    "depth_to_space": Case([((1, 8, 2, 2), _I)], (1, 2, 4, 4), {"blocksize": 2}),
    "space_to_depth": Case([((1, 2, 4, 4), _I)], (1, 8, 2, 2), {"blocksize": 2}),
    "einsum": Case([((2, 3), _I), ((3, 4), _I)], (2, 4), {"equation": "ij,jk->ik"}),
    "index": Case([(X, _I), ((3,), _I)], X, {"axes": [1]}),
    "gather_elements": Case([(X, _I), ((2, 2, 4, 5), _I)], (2, 2, 4, 5), {"axis": 1}),
    "roll": Case([(X, _I)], X, {"shifts": [1, -1], "axes": [1, 3]}),
    "masked_fill": Case([(X, _I), (X, _I)], X, {"value": 0.0}),
    "diff": Case([(X, _I)], (2, 3, 4, 4), {"axis": -1}),
    "cumsum": Case([(X, _I)], X, {"axis": 1}),
    "argmax": Case([(X, _I)], (2, 1, 4, 5), {"axis": 1}, dtype=I64),
    # issue 41: weight norm and the recurrent cells (torch's convention, one container output:
    # y, h_n and an LSTM's c_n flattened)
    "weight_norm": Case([((3, 2, 2), _P), ((3, 1, 1), _P)], (3, 2, 2), {"axis": 0}),
    "lstm": Case([((4, 2, 3), _I), ((8, 3), _P), ((8, 2), _P)], (16 + 4 + 4,),
                 {"hidden_size": 2, "bias": False}),
    "gru": Case([((4, 2, 3), _I), ((6, 3), _P), ((6, 2), _P), ((6,), _P), ((6,), _P)],
                (16 + 4,), {"hidden_size": 2}),
    "rnn": Case([((4, 2, 3), _I), ((2, 3), _P), ((2, 2), _P)], (16 + 4,),
                {"hidden_size": 2, "bias": False}),
    "argmin": Case([(X, _I)], (2, 4, 5), {"axis": 1, "keepdims": False}, dtype=I64),
    **{k: Case([(X, _I)], (2, 1, 4, 5), {"axes": [1], "keepdims": True}) for k in (
        "reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_l2 "
        "reduce_sum_square").split()},
}


def case(kind: str) -> Case:
    info = OPS[kind]
    special = {
        "conv2d": Case([((1, 2, 5, 5), "input"), ((3, 2, 3, 3), "parameter"),
                        ((3,), "parameter")], (1, 3, 5, 5),
                       {"kernel": (3, 3), "stride": (1, 1), "padding": (1, 1), "act": "relu"}),
        "sepconv": Case([((1, 2, 5, 5), "input"), ((2, 1, 3, 3), "parameter"),
                         ((3, 2, 1, 1), "parameter")], (1, 3, 5, 5), {"kernel": (3, 3)}),
        "maxpool": Case([((1, 2, 4, 4), "input")], (1, 2, 2, 2), {"kernel": (2, 2),
                                                                   "stride": (2, 2)}),
        "avgpool": Case([((1, 2, 4, 4), "input")], (1, 2, 2, 2), {"kernel": (2, 2),
                                                                   "stride": (2, 2)}),
        "global_avgpool": Case([((1, 2, 4, 4), "input")], (1, 2, 1, 1)),
        "batchnorm": Case([(X, "input"), ((4, 3), "parameter")], X, {"eps": 1e-3}),
        "layernorm": Case([((2, 3, 5), "input"), ((2, 5), "parameter")], (2, 3, 5)),
        "softmax": Case([((2, 5), "input")], (2, 5), {"axis": -1, "scale": 0.5}),
        "concat": Case([((1, 2, 3, 3), "input"), ((1, 3, 3, 3), "input")], (1, 5, 3, 3),
                       {"axis": 1}),
        "matmul": Case([((2, 4), "input"), ((4, 3), "parameter")], (2, 3)),
        "transpose": Case([((2, 3, 4), "input")], (2, 4, 3), {"perm": (0, 2, 1)}),
        "add": Case([(X, "input")] * 3, X),
        "op": Case([((2, 3), "input")], (2, 3)),
        **VOCABULARY_CASES,
    }
    if kind in special:
        return special[kind]
    if kind in BOOL_KINDS:
        return Case([(X, "input")] * (1 if kind in ("not", "isnan") else 2), X, dtype=bool)
    if info.category == "view":
        return Case([((2, 3, 4), "input")], (6, 4))
    if info.binary is not None or info.assigns:
        return Case([(X, "parameter" if info.assigns else "input"), (X, "input")], X)
    return Case([(X, "input")], X)


def _arrays(c: Case, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 2.0, size=shape).astype(F32) for shape, _ in c.inputs]


def _one_op_graph(kind: str, c: Case) -> Graph:
    names = [f"in{i}" for i in range(len(c.inputs))]
    tensors = [Tensor(n, 4 * int(np.prod(shape)), None, role, shape)
               for n, (shape, role) in zip(names, c.inputs, strict=True)]
    tensors.append(Tensor("y", 4 * int(np.prod(c.output)), "x", "output", c.output))
    return Graph([Op("x", kind=kind, inputs=tuple(names), outputs=("y",), attrs=c.attrs)],
                 tensors, outputs=["y"])


# ----------------------------------------------------------------------------- the table itself
def test_every_entry_is_well_formed() -> None:
    assert len(OPS) == len(KNOWN_KINDS) > 90
    for name, info in OPS.items():
        assert info.name == name and info.category in CATEGORIES
        assert canonical_kind(name) == name
        assert not info.no_task or info.category == "view", name
        assert not info.side_effect == "write" or info.category == "state", name
    assert canonical_kind("ExpandDims") == "expand_dims"
    assert canonical_kind("MyCustomOp") == "MyCustomOp"


def test_every_category_has_kinds() -> None:
    assert {info.category for info in OPS.values()} == set(CATEGORIES)


# ----------------------------------------------------------------------------- references
@pytest.mark.parametrize("kind", sorted(REFERENCE_KINDS))
def test_reference_runs_on_small_shapes(kind: str) -> None:
    c = case(kind)
    op = _one_op_graph(kind, c).op("x")
    reference = OPS[kind].reference
    assert reference is not None
    out = reference(op, _arrays(c), lambda t: c.output)
    assert len(out) == 1
    assert out[0].shape == c.output, (kind, out[0].shape)
    assert out[0].dtype == c.dtype, kind
    assert np.isfinite(out[0]).all(), kind


def test_the_generic_kind_has_a_reference_and_fused_is_left_to_the_executors() -> None:
    assert "op" in REFERENCE_KINDS and "fused" not in REFERENCE_KINDS


# ----------------------------------------------------------------------------- twins and GPU
GPU_KINDS = sorted(k for k in REFERENCE_KINDS & set(LOWERINGS) if k not in NO_TASK_KINDS)


def test_gpu_references_are_the_tables_but_for_the_spin_op() -> None:
    """The GPU keeps one meaning of its own: the generic kind runs the spin kernel."""
    differ = sorted(k for k in REFERENCE_KINDS if REFERENCES[k] is not OPS[k].reference)
    assert differ == ["op"]


@pytest.mark.parametrize("kind", GPU_KINDS)
def test_emulated_kernels_agree_with_the_reference(kind: str) -> None:
    """The launch plan of a one-op graph, run by the CPU emulator (the kernel twins), computes
    what the (GPU's) reference computes."""
    c = case(kind)
    g = _one_op_graph(kind, c)
    arrays = _arrays(c)
    inputs = dict(zip([f"in{i}" for i in range(len(arrays))], arrays, strict=True))
    want = REFERENCES[kind](g.op("x"), arrays, lambda t: c.output)
    got = emulate(build_launch_plan(wb.schedule(g, "serial")), inputs)
    np.testing.assert_allclose(got["y"], want[0], rtol=1e-4, atol=1e-5, err_msg=kind)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", GPU_KINDS)
def test_gpu_kernels_agree_with_the_reference(kind: str) -> None:
    from workbench.executors.gpu import executor as E

    g = _one_op_graph(kind, case(kind))
    got = E.run_outputs(wb.schedule(g, "serial"))
    want = run_graph_reference(g)
    np.testing.assert_allclose(np.asarray(got["y"]), want["y"], rtol=1e-3, atol=1e-4,
                               err_msg=kind)


# ----------------------------------------------------------------------------- stray kind tables
#: Module-level tables of op-kind names that may stay outside ``ops.py``: (module, name) -> why.
ALLOWED_KIND_TABLES: dict[tuple[str, str], str] = {
    ("workbench.executors.gpu.lowering", "LOWERINGS"):
        "the CUDA lowering per kind (a platform rule beside its kernels; the table cannot "
        "import the GPU package)",
    ("workbench.executors.gpu.calls", "UNARY_CODES"):
        "the integer codes of kernels/common.cuh (an ABI with the .cu sources, checked by "
        "test_codes_match_the_cuda_tables)",
    ("workbench.executors.gpu.calls", "BINARY_CODES"): "as UNARY_CODES",
    ("workbench.executors.gpu.calls", "ACT_CODES"): "as UNARY_CODES (conv activations)",
    ("workbench.executors.gpu.emulator", "TWINS"):
        "NumPy twins keyed by CUDA kernel name (a kernel's name can match a kind's)",
    ("workbench.executors.gpu.reference", "REFERENCES"):
        "the table's references plus the GPU's own meaning of 'op' (spin kernel) and 'fused'",
    ("workbench.executors.gpu.fused", "FUSED_REDUCE"):
        "the reduce kinds the fused-kernel generator can emit (a GPU fact; a subset of "
        "ops.REDUCE_KINDS, the others stay opaque kernels)",
    ("workbench.models._layers", "OP_KINDS"):
        "what the model builder emits (a fact about the builder, checked by test_models)",
    ("workbench.io.torch.attrs", "MODULE_ATTRS"):
        "nn.Module attribute names the torch import reads, two of which ('size', 'bias') "
        "happen to spell kinds",
}


def _string_elements(node: ast.expr) -> list[str]:
    """The string constants a table display lists (set/tuple/list elements, dict keys, the
    argument of ``frozenset(...)`` / ``set(...)`` / ``tuple(...)``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args and \
            node.func.id in ("frozenset", "set", "tuple", "dict"):
        return _string_elements(node.args[0])
    if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
        items = list(node.elts)
    elif isinstance(node, ast.Dict):
        items = [k for k in node.keys if k is not None]
    else:
        return []
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]


def stray_kind_tables() -> dict[tuple[str, str], list[str]]:
    """Module-level assignments outside the op table (``workbench/ops/``) whose value lists two
    or more op-kind names."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        if module == "workbench.ops" or module.startswith("workbench.ops."):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and not any(
                    isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            kinds = [s for s in _string_elements(value) if s in KNOWN_KINDS]
            if len(kinds) >= 2:
                for t in targets:
                    if isinstance(t, ast.Name):
                        found[(module, t.id)] = kinds
    return found


def test_no_stray_kind_tables() -> None:
    found = stray_kind_tables()
    stray = {k: v for k, v in found.items() if k not in ALLOWED_KIND_TABLES}
    assert not stray, ("op-kind facts belong in workbench/ops/ (or list the table in "
                       f"ALLOWED_KIND_TABLES with the reason): {stray}")
    stale = [k for k in ALLOWED_KIND_TABLES if k not in found]
    assert not stale, f"ALLOWED_KIND_TABLES lists tables that are gone: {stale}"


def test_the_stray_table_check_finds_a_table() -> None:
    code = 'MY_KINDS = frozenset({"relu", "gelu"})\nOTHER = ("data", "control")\n'
    tree = ast.parse(code)
    values = [_string_elements(n.value) for n in tree.body if isinstance(n, ast.Assign)]
    assert [[s for s in v if s in KNOWN_KINDS] for v in values] == [["relu", "gelu"], []]


# ----------------------------------------------------------------------------- importer aliases
#: The importers whose kind facts (torch names, ONNX FLOPs, kernel-name fragments) live in the
#: table; they keep only their cost formulas.
IMPORTERS = ("io/torch/fx.py", "io/onnx/rules.py", "io/traces/pytorch_profile.py")
#: Displays in the importers that spell kind names without being kind facts: (file, statement).
ALLOWED_IMPORTER_DISPLAYS: dict[tuple[str, str], str] = {
    ("io/traces/pytorch_profile.py", "GPU_CATEGORIES"):
        "Kineto event categories (``memcpy``, ``memset``), not op kinds",
}
ALL_KINDS = frozenset(OPS) | frozenset(IMPORT_ONLY)


def _statement_name(node: ast.stmt) -> str:
    if isinstance(node, ast.Assign):
        return " ".join(t.id for t in node.targets if isinstance(t, ast.Name)) or "?"
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    return f"line {node.lineno}"


def _number(node: ast.AST | None) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, (int, float))
            and not isinstance(node.value, bool))


def kind_facts_in(source: str) -> dict[str, list[str]]:
    """What in ``source`` looks like an op-kind table, by top-level statement: a dict / tuple /
    list / set display (nested ones included) whose strings, keys or values, hold two or more kind
    names (of :data:`OPS` or :data:`IMPORT_ONLY`); a dict display with two or more numbers as
    values (per-element FLOPs by name); a literal number given as ``per_element=`` or to
    ``_unary(...)``."""
    found: dict[str, list[str]] = {}
    for statement in ast.parse(source).body:
        for node in ast.walk(statement):
            what = None
            if isinstance(node, (ast.Dict, ast.Tuple, ast.List, ast.Set)):
                strings = {n.value for n in ast.walk(node)
                           if isinstance(n, ast.Constant) and isinstance(n.value, str)}
                kinds = sorted(strings & ALL_KINDS)
                if len(kinds) >= 2:
                    what = f"line {node.lineno}: kinds {kinds[:6]}"
                elif isinstance(node, ast.Dict) and sum(map(_number, node.values)) >= 2:
                    what = f"line {node.lineno}: numbers by name"
            elif isinstance(node, ast.Call) and (
                    any(k.arg == "per_element" and _number(k.value) for k in node.keywords)
                    or isinstance(node.func, ast.Name) and node.func.id == "_unary"
                    and any(map(_number, node.args))):
                what = f"line {node.lineno}: a literal per-element FLOP count"
            if what:
                found.setdefault(_statement_name(statement), []).append(what)
    return found


def test_importers_keep_no_kind_tables() -> None:
    stray, used = {}, set()
    for name in IMPORTERS:
        for statement, what in kind_facts_in((PACKAGE / name).read_text("utf-8")).items():
            if (name, statement) in ALLOWED_IMPORTER_DISPLAYS:
                used.add((name, statement))
            else:
                stray[f"{name}: {statement}"] = what
    assert not stray, f"kind facts belong in workbench/ops/registry.py (OpKind fields): {stray}"
    assert used == set(ALLOWED_IMPORTER_DISPLAYS), "stale ALLOWED_IMPORTER_DISPLAYS entries"


def test_the_importer_check_finds_the_old_tables() -> None:
    """The shapes the tables had before they moved into ops.py are all caught."""
    old = '''
MODULES = {"Conv2d": ("conv2d", "conv", 0), "ReLU": ("relu", "elementwise", 1)}
for _name, _kind in {"add": "add", "iadd": "add", "sub": "sub"}.items():
    FUNCTIONS[_name] = (_kind, "elementwise", 1)
KERNEL_KINDS = (("memcpy", "memcpy"), ("conv", "conv2d"))
_COSTS = {"Conv": _conv, "BatchNormalization": _unary(2)}
for _op_type, _flops in {"Add": 1, "Clip": 2}.items():
    RULES[_op_type] = (kind_of(_op_type), _unary(_flops))
def f(y, ins, outs):
    return elementwise_cost(y, ins, outs, per_element=5)
'''
    assert set(kind_facts_in(old)) == {"MODULES", "line 3", "KERNEL_KINDS", "_COSTS", "line 7",
                                       "f"}


def _rule_facts(rule: Any) -> tuple[str, float]:
    """(rule name, FLOPs per element of a ``unary`` rule else 0) of an ONNX cost rule."""
    from workbench.ops.costs import TensorInfo

    name = rule.__qualname__.split(".")[0].lstrip("_")
    if name != "unary":
        return name, 0
    x = TensorInfo((10,), 4)
    return name, rule([x], [x], {}).flops / 10


def test_importer_tables_round_trip_the_old_ones() -> None:
    """The derived views hold exactly the importers' old tables (tests/_op_aliases_spec.py)."""
    from tests._op_aliases_spec import (
        OLD_FUNCTIONS,
        OLD_KERNEL_KINDS,
        OLD_MODULES,
        OLD_ONNX_RULES,
    )
    from tests._vocabulary_spec import VOCABULARY_FUNCTIONS, VOCABULARY_MODULES
    from workbench.io.onnx import rules as onnx_rules
    from workbench.io.torch import fx
    from workbench.io.traces import pytorch_profile

    # attention and the composite transformer modules came later (issue 24), then the op
    # vocabulary's torch names (tests/_vocabulary_spec.py), nothing else
    # then mish, the kind issue 46's "add an op kind" walk-through adds (docs/architecture.md),
    # then rmsnorm (torch.nn.RMSNorm: an LLM decoder's norm was imported with a default cost)
    new = {"MultiheadAttention": ("attention", "multi_head_attention", 0),
           "TransformerEncoderLayer": ("transformer_layer", "encoder_layer", 0),
           "Mish": ("mish", "elementwise", 9), "RMSNorm": ("rmsnorm", "elementwise", 4),
           **VOCABULARY_MODULES}
    new_functions = {"scaled_dot_product_attention": ("attention", "sdpa", 0),
                     "_native_multi_head_attention": ("attention", "multi_head_attention", 0),
                     "_transformer_encoder_layer_fwd": ("transformer_layer", "encoder_layer", 0),
                     "unflatten": ("reshape", "view", 0), "mish": ("mish", "elementwise", 9),
                     "mish_": ("mish", "elementwise", 9),
                     "rms_norm": ("rmsnorm", "elementwise", 4), **VOCABULARY_FUNCTIONS}
    assert fx.MODULES == {**OLD_MODULES, **new}
    assert fx.FUNCTIONS == {**OLD_FUNCTIONS, **new_functions}
    assert dict(TORCH_ALIASES) == {n: e[0] for n, e in {
        **OLD_MODULES, **OLD_FUNCTIONS, **new, **new_functions}.items()}
    # the kernel table grew (real traces); every old pair keeps its kind, in the old order
    assert pytorch_profile.KERNEL_KINDS == KERNEL_KINDS
    assert [p for p in KERNEL_KINDS if p in OLD_KERNEL_KINDS] == list(OLD_KERNEL_KINDS)
    rules = {t: (kind, *_rule_facts(rule)) for t, (kind, rule) in onnx_rules.RULES.items()}
    # ONNX's Resize / Upsample came later with a cost rule of their own (real exporters' files),
    # then MaxViT's Einsum, CumSum and GatherElements (issue 33), the recurrent cells (issue 41)
    assert rules == {**OLD_ONNX_RULES, "Resize": ("resize", "resize", 0),
                     "Upsample": ("resize", "resize", 0), "Einsum": ("einsum", "einsum", 0),
                     "CumSum": ("cumsum", "unary", 1.0),
                     "GatherElements": ("gather_elements", "gather", 0),
                     **{t: (t.lower(), "recurrent", 0) for t in ("LSTM", "GRU", "RNN")},
                     "Mish": ("mish", "unary", 9.0),
                     "RMSNormalization": ("rmsnorm", "unary", 4.0)}  # opset 23
    # one FLOP count per kind: fx's elementwise entries and ONNX's unary rules read the table
    for name, (kind, formula, flops) in {**fx.MODULES, **fx.FUNCTIONS}.items():
        assert formula != "elementwise" or flops == FLOPS_PER_ELEMENT[kind], name
    for op_type, (kind, rule, flops) in rules.items():
        assert rule != "unary" or flops == FLOPS_PER_ELEMENT[kind], op_type


def test_kernel_names_match_in_the_explicit_order() -> None:
    from workbench.io.traces.pytorch_profile import kernel_kind

    # the table's own order would try relu (its first entry) before conv2d
    assert kernel_kind("cudnn::conv_relu_fwd") == "conv2d"
    assert kernel_kind("Memcpy DtoD conv_weights") == "memcpy"
    assert kernel_kind("vectorized_elementwise_kernel<gelu>") == "gelu"
    assert kernel_kind("ampere_sgemm_128x64") == "matmul" and kernel_kind("xyz") == "kernel"


def test_import_only_kinds_stay_unknown() -> None:
    """Kinds only the importers name are not known kinds: canonical_kind keeps them as given
    (the kinds an importer emits for a computation with a torch form are known kinds)."""
    assert not set(IMPORT_ONLY) & KNOWN_KINDS
    assert canonical_kind("TransformerLayer") == "TransformerLayer"
    assert canonical_kind("Sort") == "Sort" and canonical_kind("HardSwish") == "hard_swish"
    assert {k.name for k in IMPORT_ONLY.values() if k.torch or k.flops_per_element
            or k.kernel_names} == set(IMPORT_ONLY), "an import-only entry without facts"
