"""Every op kind's PyTorch form (ops.OPS[kind].torch_form) computes its NumPy reference.

Small shapes, float32, the same inputs to both; the reference accumulates in float64, so the
tolerance is float32 round-off (rtol 1e-5, atol 1e-5).  ``CASES`` covers every kind with a
reference (``test_every_reference_kind_has_a_case``); the attributes varied are the ones the
reference reads (kernel, stride, padding, groups, act / pre_act, bias, axis, eps, scale, perm).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests._form_cases import case_ids
from workbench.errors import OptionError
from workbench.ops import OPS, REFERENCE_KINDS, TORCH_FORM_KINDS
from workbench.values.graph import Op

torch = pytest.importorskip("torch")

Case = tuple[str, dict[str, Any], list[tuple[int, ...]], list[tuple[int, ...]]]


def _conv(attrs: dict[str, Any], x: tuple[int, ...], w: tuple[int, ...], out: tuple[int, ...],
          bias: bool = True) -> Case:
    shapes = [x, w, (out[1],)] if bias else [x, w]
    return ("conv2d", attrs, shapes, [out])


CASES: list[Case] = [
    _conv({"kernel": (3, 3), "padding": (1, 1)}, (2, 3, 6, 6), (4, 3, 3, 3), (2, 4, 6, 6)),
    _conv({"kernel": (3, 3), "stride": (2, 2), "act": "relu"}, (1, 4, 7, 7), (6, 4, 3, 3),
          (1, 6, 3, 3), bias=False),
    _conv({"kernel": (1, 3), "padding": (0, 1), "groups": 2, "pre_act": "relu",
           "act": "gelu"}, (1, 4, 5, 5), (6, 2, 1, 3), (1, 6, 5, 5)),
    _conv({"kernel": 1, "act": "sigmoid"}, (1, 3, 4, 4), (5 * 3,), (1, 5, 4, 4)),
    ("sepconv", {"kernel": (3, 3), "stride": (1, 1), "padding": (1, 1)},
     [(1, 4, 6, 6), (4, 1, 3, 3), (5, 4, 1, 1)], [(1, 5, 6, 6)]),
    ("sepconv", {"kernel": (5, 5), "stride": (2, 2), "padding": (2, 2), "pre_act": None,
                 "bias": True}, [(2, 3, 9, 9), (3, 1, 5, 5), (4, 3, 1, 1), (3,), (4,)],
     [(2, 4, 5, 5)]),
    ("maxpool", {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1)}, [(1, 3, 7, 7)],
     [(1, 3, 4, 4)]),
    ("maxpool", {"kernel": (2, 2)}, [(2, 2, 6, 6)], [(2, 2, 3, 3)]),
    ("avgpool", {"kernel": (3, 3), "stride": (1, 1), "padding": (1, 1),
                 "count_include_pad": True}, [(1, 3, 5, 5)], [(1, 3, 5, 5)]),
    ("avgpool", {"kernel": (3, 3), "stride": (2, 2)}, [(1, 2, 7, 7)], [(1, 2, 3, 3)]),
    ("global_avgpool", {}, [(2, 3, 5, 4)], [(2, 3, 1, 1)]),
    ("batchnorm", {"eps": 1e-3, "axis": 1}, [(2, 3, 4, 4), (4, 3)], [(2, 3, 4, 4)]),
    ("batchnorm", {"axis": -1}, [(5, 6), (4, 6)], [(5, 6)]),
    ("layernorm", {"eps": 1e-5}, [(2, 3, 8), (2, 8)], [(2, 3, 8)]),
    ("rmsnorm", {"eps": 1e-6}, [(2, 3, 8), (8,)], [(2, 3, 8)]),
    ("rmsnorm", {"axis": -2}, [(2, 3, 8)], [(2, 3, 8)]),  # no eps: the dtype's, no scale
    ("softmax", {"axis": -1, "scale": 0.125}, [(2, 3, 7)], [(2, 3, 7)]),
    ("softmax", {"axis": 1}, [(2, 5, 3)], [(2, 5, 3)]),
    ("matmul", {}, [(3, 8), (8, 5)], [(3, 5)]),
    ("matmul", {}, [(2, 4, 8), (8, 5), (5,)], [(2, 4, 5)]),
    ("matmul", {}, [(2, 3, 4, 6), (2, 3, 6, 4)], [(2, 3, 4, 4)]),
    ("concat", {"axis": 1}, [(1, 2, 3, 3), (1, 4, 3, 3), (1, 1, 3, 3)], [(1, 7, 3, 3)]),
    ("concat", {}, [(3,), (5,)], [(8,)]),
    ("transpose", {"perm": (0, 2, 1, 3)}, [(1, 4, 3, 2)], [(1, 3, 4, 2)]),
    ("add", {}, [(2, 3), (2, 3), (2, 3)], [(2, 3)]),
    ("add", {}, [(4,)], [(4,)]),
    ("sub", {}, [(2, 3), (2, 3)], [(2, 3)]),
    ("mul", {}, [(2, 3), (2, 3)], [(2, 3)]),
    ("div", {}, [(2, 3), (2, 3)], [(2, 3)]),
    *[(k, {}, [(3, 4)], [(3, 4)]) for k in
      ("relu", "gelu", "sigmoid", "tanh", "exp", "log", "neg", "abs", "sqrt", "atan")],
    *[(k, {}, [(2, 3, 4)], [(6, 4)]) for k in
      ("reshape", "flatten", "squeeze", "unsqueeze", "expand_dims", "view", "flatten_grad",
       "reformat", "identity", "dropout", "identity_view")],
    *[(k, {}, [(2, 5)], [(2, 5)]) for k in ("h2d", "d2h", "d2d", "print")],
    ("assign", {}, [(3,), (3,)], [(3,)]),
    ("assign_add", {}, [(3,), (3,)], [(3,)]),
    ("assign_sub", {}, [(3,), (3,)], [(3,)]),
    ("op", {}, [(2, 3), (4,)], [(2, 2), (3,)]),
]

POSITIVE = {"log", "sqrt", "div"}  # kinds whose inputs are drawn positive


def _op(kind: str, attrs: dict[str, Any], n_in: int, n_out: int) -> Op:
    return Op("x", kind=kind, inputs=tuple(f"i{k}" for k in range(n_in)),
              outputs=tuple(f"o{k}" for k in range(n_out)), attrs=attrs)


def _inputs(kind: str, shapes: list[tuple[int, ...]], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if kind in POSITIVE:
        arrays = [np.abs(a) + 0.5 for a in arrays]
    if kind == "batchnorm" or kind == "layernorm":  # params: variances must be positive
        arrays[1] = rng.uniform(0.5, 1.5, size=shapes[1]).astype(np.float32)
    return arrays


def test_every_reference_kind_has_a_torch_form() -> None:
    assert TORCH_FORM_KINDS == REFERENCE_KINDS
    missing = sorted(k for k, info in OPS.items()
                     if info.reference is not None and info.torch_form is None)
    assert missing == []


def test_every_reference_kind_has_a_case() -> None:
    """Here, or (integer and boolean inputs, the op vocabulary's kinds) in
    tests/_form_cases.py, checked by tests/test_op_vocabulary.py."""
    from tests._form_cases import FORM_CASES

    assert {kind for kind, *_ in [*CASES, *FORM_CASES]} == set(REFERENCE_KINDS)


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_torch_form_equals_the_numpy_reference(case: Case) -> None:
    kind, attrs, in_shapes, out_shapes = case
    op = _op(kind, attrs, len(in_shapes), len(out_shapes))
    shapes = dict(zip(op.outputs, out_shapes, strict=True))
    arrays = _inputs(kind, in_shapes, seed=len(in_shapes) + len(kind))
    want = OPS[kind].reference(op, [a.copy() for a in arrays], shapes.get)
    form = OPS[kind].torch_form
    got = form(op, [torch.from_numpy(a.copy()) for a in arrays], shapes.get)
    assert len(got) == len(want) == len(out_shapes)
    for g, w, shape in zip(got, want, out_shapes, strict=True):
        assert g.dtype == torch.float32
        assert tuple(g.shape) == tuple(w.shape) == shape
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-5, err_msg=kind)


def test_avgpool_without_count_include_pad_divides_by_the_real_elements() -> None:
    """ONNX's AveragePool default (count_include_pad 0): both the form and the reference divide
    by the elements inside the input (it used to be refused; the GPU lowering still refuses)."""
    op = _op("avgpool", {"kernel": (3, 3), "padding": (1, 1), "count_include_pad": False}, 1, 1)
    form, reference = OPS["avgpool"].torch_form, OPS["avgpool"].reference
    assert form is not None and reference is not None
    got = form(op, [torch.ones(1, 1, 4, 4)], lambda t: (1, 1, 4, 4))
    want = reference(op, [np.ones((1, 1, 4, 4), np.float32)], lambda t: None)
    np.testing.assert_allclose(got[0].numpy(), want[0], rtol=1e-6)
    assert float(got[0].min()) == 1.0  # corners: 4 real elements, not 9


def test_unknown_activation_is_a_one_line_error_naming_the_op() -> None:
    op = _op("conv2d", {"kernel": 1, "act": "swishy"}, 2, 1)
    with pytest.raises(OptionError, match="'x'.*unknown activation 'swishy'") as err:
        OPS["conv2d"].torch_form(op, [torch.zeros(1, 2, 3, 3), torch.zeros(2, 2, 1, 1)],
                                 lambda t: (1, 2, 3, 3))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_forms_keep_a_half_precision_dtype(dtype: str) -> None:
    kind, attrs, in_shapes, out_shapes = CASES[0]
    op = _op(kind, attrs, len(in_shapes), len(out_shapes))
    shapes = dict(zip(op.outputs, out_shapes, strict=True))
    arrays = _inputs(kind, in_shapes, seed=1)
    got = OPS[kind].torch_form(op, [torch.from_numpy(a).to(getattr(torch, dtype))
                                    for a in arrays], shapes.get)
    want = OPS[kind].reference(op, arrays, shapes.get)[0]
    assert got[0].dtype == getattr(torch, dtype)
    np.testing.assert_allclose(got[0].float().numpy(), want, rtol=0.05, atol=0.1)
