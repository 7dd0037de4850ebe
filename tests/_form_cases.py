"""Cases of the kinds (and attributes) the op vocabulary added, for the torch-form-versus-NumPy
check: ``(kind, attrs, input arrays, output shapes)``.  Integer and boolean inputs are spelled
out (indices, masks), so these are kept apart from ``tests/test_torch_forms.py``'s float-only
``CASES``; together they cover every kind with a reference
(``test_torch_forms.test_every_reference_kind_has_a_case``)."""

from __future__ import annotations

from typing import Any

import numpy as np

_RNG = np.random.default_rng(7)
#: (kind, attrs, input arrays, output shapes; ``()``: unknown to the graph)
FormCase = tuple[str, Any, Any, Any]


def _f(*shape: int) -> np.ndarray:
    return _RNG.standard_normal(shape).astype(np.float32)


def _pos(*shape: int) -> np.ndarray:
    return _RNG.uniform(0.5, 2.0, size=shape).astype(np.float32)


def _i(high: int, *shape: int, low: int = 0) -> np.ndarray:
    return _RNG.integers(low, high, size=shape).astype(np.int64)


X = (2, 3, 4, 5)
_UNARY = ("hard_swish relu6 silu swish softplus mish softsign erf square sin cos floor ceil round "
          "sign").split()
_POSITIVE = "rsqrt reciprocal".split()



def _cells(gates: int, hidden: int, inputs: int, *, layers: int = 1, directions: int = 1,
           bias: bool = True, proj: int = 0) -> list[np.ndarray]:
    """torch's weights of a recurrent op, layer by layer and direction by direction."""
    out = []
    state = proj or hidden
    for layer in range(layers):
        k = inputs if layer == 0 else directions * state
        for _ in range(directions):
            out += [_f(gates * hidden, k) * 0.5, _f(gates * hidden, state) * 0.5]
            out += [_f(gates * hidden), _f(gates * hidden)] if bias else []
            out += [_f(proj, hidden) * 0.5] if proj else []
    return out


def _onnx_weights(gates: int, hidden: int, inputs: int, directions: int = 1) -> list[np.ndarray]:
    """ONNX's W, R and B of a recurrent node."""
    return [_f(directions, gates * hidden, inputs) * 0.5,
            _f(directions, gates * hidden, hidden) * 0.5, _f(directions, 2 * gates * hidden)]


_T, _B, _IN, _H = 4, 2, 3, 5
#: lstm / gru / rnn: torch's convention (layers, directions, states, a projection, batch first,
#: the container output) and ONNX's (gate order, reverse, layout 1, the default GRU).
RECURRENT_CASES: list[FormCase] = [
    ("lstm", {"hidden_size": _H, "layers": 2, "batch_first": True},
     [_f(_B, _T, _IN), *_cells(4, _H, _IN, layers=2)], [(_B, _T, _H), (2, _B, _H), (2, _B, _H)]),
    ("lstm", {"hidden_size": _H, "direction": "bidirectional", "proj_size": 2},
     [_f(_T, _B, _IN), _f(2, _B, 2), _f(2, _B, _H),
      *_cells(4, _H, _IN, directions=2, proj=2)], [(_T * _B * 4 + 8 + 2 * _B * _H,)]),
    ("gru", {"hidden_size": _H, "direction": "bidirectional", "bias": False},
     [_f(_T, _B, _IN), *_cells(3, _H, _IN, directions=2, bias=False)],
     [(_T, _B, 2 * _H), (2, _B, _H)]),
    ("rnn", {"hidden_size": _H, "act": "relu", "layers": 2},
     [_f(_T, _B, _IN), _f(2, _B, _H), *_cells(1, _H, _IN, layers=2)],
     [(_T, _B, _H), (2, _B, _H)]),
    ("lstm", {"hidden_size": _H, "convention": "onnx", "direction": "bidirectional",
              "slots": [0, 1, 2, 3, 5, 6], "out_slots": [0, 1, 2]},
     [_f(_T, _B, _IN), *_onnx_weights(4, _H, _IN, 2), _f(2, _B, _H), _f(2, _B, _H)],
     [(_T, 2, _B, _H), (2, _B, _H), (2, _B, _H)]),
    ("gru", {"hidden_size": _H, "convention": "onnx", "direction": "reverse",
             "batch_first": True, "slots": [0, 1, 2, 3, 5], "out_slots": [1]},
     [_f(_B, _T, _IN), *_onnx_weights(3, _H, _IN), _f(_B, 1, _H)], [(_B, 1, _H)]),
    ("gru", {"hidden_size": _H, "convention": "onnx", "linear_before_reset": True,
             "slots": [0, 1, 2], "out_slots": [0, 1]},
     [_f(_T, _B, _IN), *_onnx_weights(3, _H, _IN)[:2]], [(_T, 1, _B, _H), (1, _B, _H)]),
    ("rnn", {"hidden_size": _H, "convention": "onnx", "slots": [0, 1, 2, 3],
             "out_slots": [0]}, [_f(_T, _B, _IN), *_onnx_weights(1, _H, _IN)],
     [(_T, 1, _B, _H)]),
]

FORM_CASES: list[FormCase] = [
    # convolutions: ONNX's asymmetric padding and dilation, 1-D and 3-D, transposed
    ("conv2d", {"kernel": [3, 3], "stride": [2, 1], "padding": [0, 1, 1, 2],
                "dilation": [1, 2], "groups": 2}, [_f(1, 4, 7, 8), _f(6, 2, 3, 3), _f(6)],
     [(1, 6, 3, 7)]),
    ("conv1d", {"kernel": [3], "padding": [1]}, [_f(2, 3, 9), _f(4, 3, 3)], [(2, 4, 9)]),
    ("conv3d", {"kernel": [1, 3, 3], "stride": [1, 2, 2]}, [_f(1, 2, 3, 7, 7), _f(3, 2, 1, 3, 3)],
     [(1, 3, 3, 3, 3)]),
    ("conv_transpose", {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1],
                        "output_padding": [1, 1]}, [_f(1, 4, 3, 3), _f(4, 2, 3, 3), _f(2)],
     [(1, 2, 6, 6)]),
    ("conv_transpose", {"kernel": [2, 2], "stride": [2, 2], "groups": 2},
     [_f(1, 4, 3, 3), _f(4, 3, 2, 2)], [(1, 6, 6, 6)]),
    # pools: ONNX's stride 1, ceil mode, padding not counted, asymmetric, dilation, 1-D
    ("maxpool", {"kernel": [3, 3], "stride": [2, 2], "ceil_mode": True}, [_f(1, 2, 8, 8)],
     [(1, 2, 4, 4)]),
    ("maxpool", {"kernel": [2, 2], "stride": [1, 1], "padding": [0, 0, 1, 1],
                 "dilation": [2, 2]}, [_f(1, 2, 6, 6)], [(1, 2, 5, 5)]),
    ("avgpool", {"kernel": [3, 3], "stride": [1, 1], "padding": [1, 1],
                 "count_include_pad": False}, [_f(1, 2, 5, 5)], [(1, 2, 5, 5)]),
    ("avgpool", {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": True,
                 "count_include_pad": True}, [_f(1, 2, 6, 6)], [(1, 2, 4, 4)]),
    ("avgpool", {"kernel": [2, 2], "stride": [1, 1], "padding": [0, 0, 1, 1]},
     [_f(1, 2, 4, 4)], [(1, 2, 4, 4)]),
    ("maxpool", {"kernel": [2], "stride": [2]}, [_f(2, 3, 8)], [(2, 3, 4)]),
    ("global_maxpool", {}, [_f(2, 3, 4, 5)], [(2, 3, 1, 1)]),
    ("global_avgpool", {}, [_f(2, 3, 7)], [(2, 3, 1)]),
    # norms: ONNX's separate inputs, layer norm over two axes
    ("batchnorm", {"eps": 1e-5, "axis": 1}, [_f(2, 3, 4, 4), _f(3), _f(3), _f(3), _pos(3)],
     [(2, 3, 4, 4)]),
    ("layernorm", {"axis": -1, "eps": 1e-5}, [_f(2, 5, 8), _f(8), _f(8)], [(2, 5, 8)]),
    ("layernorm", {"axis": -2}, [_f(2, 5, 8), _f(5, 8)], [(2, 5, 8)]),
    ("instancenorm", {"eps": 1e-5}, [_f(2, 3, 4, 4), _f(3), _f(3)], [(2, 3, 4, 4)]),
    ("groupnorm", {"groups": 2, "eps": 1e-5}, [_f(2, 4, 3, 3), _f(4), _f(4)], [(2, 4, 3, 3)]),
    ("groupnorm", {"groups": 2}, [_f(2, 4, 3), _f(2), _f(2)], [(2, 4, 3)]),
    ("lrn", {"window": 3, "alpha": 1e-3, "beta": 0.75, "k": 2.0}, [_f(1, 5, 3, 3)],
     [(1, 5, 3, 3)]),
    ("lrn", {"window": 4}, [_f(1, 6, 2, 2)], [(1, 6, 2, 2)]),
    ("log_softmax", {"axis": 1}, [_f(2, 5, 3)], [(2, 5, 3)]),
    # products: Gemm's transposes and scales, torch's addmm, a bias input
    ("matmul", {"trans_b": True, "alpha": 1.0, "beta": 1.0}, [_f(3, 8), _f(5, 8), _f(5)],
     [(3, 5)]),
    ("matmul", {"trans_a": True, "trans_b": True, "alpha": 0.5, "beta": 2.0},
     [_f(8, 3), _f(5, 8), _f(5)], [(3, 5)]),
    ("matmul", {"bias_first": True}, [_f(5), _f(3, 8), _f(8, 5)], [(3, 5)]),
    ("attention", {"is_causal": True}, [_f(1, 2, 4, 8), _f(1, 2, 4, 8), _f(1, 2, 4, 8)],
     [(1, 2, 4, 8)]),
    ("attention", {"scale": 0.5}, [_f(2, 3, 4), _f(2, 5, 4), _f(2, 5, 6), _f(2, 3, 5)],
     [(2, 3, 6)]),
    ("attention", {}, [_f(1, 3, 4), _f(1, 3, 4), _f(1, 3, 4),
                       np.tril(np.ones((3, 3), dtype=bool))], [(1, 3, 4)]),
    # elementwise maps, with and without attributes
    *[(k, {}, [_f(3, 4)], [(3, 4)]) for k in _UNARY],
    *[(k, {}, [_pos(3, 4)], [(3, 4)]) for k in _POSITIVE],
    ("gelu", {"approximate": "none"}, [_f(3, 4)], [(3, 4)]),
    ("leaky_relu", {"alpha": 0.2}, [_f(3, 4)], [(3, 4)]),
    ("elu", {"alpha": 0.5}, [_f(3, 4)], [(3, 4)]),
    ("celu", {"alpha": 2.0}, [_f(3, 4)], [(3, 4)]),
    ("selu", {}, [_f(3, 4)], [(3, 4)]),
    ("thresholded_relu", {"alpha": 0.3}, [_f(3, 4)], [(3, 4)]),
    ("hard_sigmoid", {"alpha": 1 / 6, "beta": 0.5}, [_f(3, 4) * 4], [(3, 4)]),
    ("hard_sigmoid", {}, [_f(3, 4) * 4], [(3, 4)]),
    ("clip", {"min": -0.5, "max": 0.5}, [_f(3, 4)], [(3, 4)]),
    ("clip", {}, [_f(3, 4), np.float32(-0.2), np.float32(0.3)], [(3, 4)]),
    ("prelu", {}, [_f(2, 3, 4), _f(3)], [(2, 3, 4)]),
    ("prelu", {}, [_f(2, 3, 4), _f(3, 1)], [(2, 3, 4)]),
    # arithmetic: scalars, reversed operands, alpha, integer division, modulo
    ("add", {"scalar": 1.5}, [_f(3, 4)], [(3, 4)]),
    ("add", {"alpha": 2.0}, [_f(3, 4), _f(3, 4)], [(3, 4)]),
    ("sub", {"scalar": 1.0, "reverse": True}, [_f(3, 4)], [(3, 4)]),
    ("sub", {"alpha": 0.5}, [_f(3, 4), _f(3, 4)], [(3, 4)]),
    ("mul", {"scalar": -10000.0}, [_f(3, 4)], [(3, 4)]),
    ("div", {"scalar": 8.0}, [_f(3, 4)], [(3, 4)]),
    ("div", {}, [_i(20, 3, 4), _i(5, 3, 4, low=1)], [(3, 4)]),
    ("div", {"rounding": "floor"}, [_f(3, 4), _pos(3, 4)], [(3, 4)]),
    ("pow", {"scalar": 2}, [_f(3, 4)], [(3, 4)]),
    ("pow", {}, [_pos(3, 4), _f(3, 4)], [(3, 4)]),
    ("mod", {}, [_i(20, 3, 4, low=-10), _i(5, 3, 4, low=1)], [(3, 4)]),
    ("mod", {"fmod": True}, [_f(3, 4) * 5, _pos(3, 4)], [(3, 4)]),
    *[(k, {}, [_f(3, 4), _f(4)], [(3, 4)]) for k in ("max", "min", "maximum", "minimum")],
    ("mean", {}, [_f(3, 4), _f(3, 4), _f(3, 4)], [(3, 4)]),
    ("max", {"scalar": 0.0}, [_f(3, 4)], [(3, 4)]),
    ("where", {}, [_f(3, 4) > 0, _f(3, 4), _f(4)], [(3, 4)]),
    # comparisons and logic: bool
    *[(k, {}, [_i(3, 3, 4), _i(3, 3, 4)], [(3, 4)]) for k in (
        "equal greater less greater_or_equal less_or_equal".split())],
    ("equal", {"scalar": 0}, [_i(3, 3, 4)], [(3, 4)]),
    *[(k, {}, [_f(3, 4) > 0, _f(3, 4) > 0], [(3, 4)]) for k in ("and", "or", "xor")],
    ("not", {}, [_f(3, 4) > 0], [(3, 4)]),
    ("isnan", {}, [np.array([1.0, np.nan, 0.0], dtype=np.float32)], [(3,)]),
    # reductions
    *[(k, {"axes": [1, -1], "keepdims": False}, [_f(*X)], [(2, 4)]) for k in (
        "reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_l2 "
        "reduce_sum_square").split()],
    ("reduce_mean", {}, [_f(2, 3)], [(1, 1)]),
    ("reduce_sum", {"axes": [0]}, [_i(9, 3, 4)], [(1, 4)]),
    ("argmax", {"axis": -1, "keepdims": False}, [_f(3, 4)], [(3,)]),
    ("argmin", {"axis": 0, "select_last_index": True},
     [np.array([[1, 2], [0, 5], [0, 1]], dtype=np.float32)], [(1, 2)]),
    # indexing: gather (negative indices), embedding (either input order), slice, getitem
    ("gather", {"axis": 1}, [_f(3, 5, 2), _i(5, 2, 2, low=-5)], [(3, 2, 2, 2)]),
    ("gather", {"axis": 1, "index": 0}, [_f(2, 17, 4), np.int64(0)], [(2, 4)]),
    ("embedding", {}, [_f(10, 4), _i(10, 2, 3)], [(2, 3, 4)]),
    ("embedding", {}, [_i(10, 2, 3), _f(10, 4)], [(2, 3, 4)]),
    ("slice", {"starts": [1, -1], "ends": [3, -4], "axes": [0, 2], "steps": [1, -1]},
     [_f(4, 3, 5)], [(2, 3, 3)]),
    ("slice", {"starts": [0], "ends": [(1 << 63) - 1], "axes": [1], "steps": [2]},
     [_f(2, 5)], [(2, 3)]),
    ("getitem", {"axis": 1, "index": -1}, [_f(2, 3, 4)], [(2, 4)]),
    ("getitem", {"index": 1, "offset": 6}, [_f(15)], [(3, 3)]),
    # torch's indexing, shifting and scanning: x[:, idx] (negative, a mask, one tensor at two
    # positions), gather, roll (flattened), masked_fill, !=, diff (prepend/append), cumsum
    ("index", {"axes": [1]}, [_f(2, 4, 3), _i(4, 5, low=-4)], [(2, 5, 3)]),
    ("index", {"axes": [0, 2]}, [_f(3, 4, 5), _i(3, 2, 1), _i(5, 2, 1)], [(2, 1, 4)]),
    ("index", {"axes": [0, 1]}, [_f(4, 4, 2), _i(4, 3)], [(3, 2)]),
    ("index", {"axes": [1]}, [_f(2, 3, 4), _f(3) > 0], [()]),
    ("gather_elements", {"axis": 1}, [_f(3, 5, 2), _i(5, 3, 4, 2, low=-5)], [(3, 4, 2)]),
    ("gather_elements", {"axis": -1}, [_f(3, 4), _i(4, 2, 2)], [(2, 2)]),
    ("roll", {"shifts": [1, -2], "axes": [0, 2]}, [_f(3, 4, 5)], [(3, 4, 5)]),
    ("roll", {"shifts": 3}, [_i(9, 2, 5)], [(2, 5)]),
    ("masked_fill", {"value": -1e4}, [_f(2, 3, 4), _f(3, 1) > 0], [(2, 3, 4)]),
    ("masked_fill", {}, [_i(9, 3, 4), _f(3, 4) > 0, np.int64(-7)], [(3, 4)]),
    ("not_equal", {}, [_i(3, 3, 4), _i(3, 3, 4)], [(3, 4)]),
    ("not_equal", {"scalar": 1}, [_i(3, 3, 4)], [(3, 4)]),
    ("diff", {}, [_f(3, 5)], [(3, 4)]),
    ("diff", {"n": 2, "axis": 0, "prepend": True, "append": True},
     [_f(3, 4), _f(1, 4), _f(2, 4)], [(4, 4)]),
    ("diff", {"axis": 1}, [_f(3, 4) > 0], [(3, 3)]),
    ("cumsum", {"axis": 1}, [_f(2, 5, 3)], [(2, 5, 3)]),
    ("cumsum", {"axis": -1}, [_f(3, 4) > 0], [(3, 4)]),
    ("cumsum", {}, [_i(9, 3, 4), np.int64(0)], [(3, 4)]),  # ONNX's CumSum: the axis an input
    ("einsum", {"equation": "bij,bjk->bik"}, [_f(2, 3, 4), _f(2, 4, 5)], [(2, 3, 5)]),
    # splitting, stacking, broadcasting, tiling, padding
    ("split", {"axis": 1, "sizes": [2, 3]}, [_f(2, 5, 3)], [(2, 2, 3), (2, 3, 3)]),
    ("split", {"axis": -1}, [_f(2, 6)], [(2, 3), (2, 3)]),
    ("split", {"axis": 1, "sizes": [2, 3]}, [_f(2, 5)], [(10,)]),
    ("stack", {"axis": 1}, [_f(2, 3), _f(2, 3)], [(2, 2, 3)]),
    ("expand", {}, [_f(3, 1)], [(2, 3, 4)]),
    ("expand", {"shape": [2, -1, 4]}, [_f(1, 3, 1)], [(2, 3, 4)]),
    ("broadcast_to", {}, [_f(1, 4)], [(3, 4)]),
    ("tile", {"repeats": [1, 2]}, [_f(2, 3)], [(2, 6)]),
    ("tile", {}, [_f(2, 3)], [(4, 9)]),
    ("pad", {"padding": [0, 1, 1, 2], "value": 0.5}, [_f(2, 3)], [(3, 6)]),
    ("pad", {"padding": [0, 0, 2, 1, 0, 0, 1, 2], "mode": "reflect"}, [_f(1, 2, 4, 5)],
     [(1, 2, 7, 8)]),
    ("pad", {"padding": [1, 0, 2, 0], "mode": "edge"}, [_f(3, 4)], [(6, 4)]),
    ("pad", {"padding": [0, 1, 0, 1], "mode": "wrap"}, [_f(3, 4)], [(3, 6)]),
    ("pad", {"padding": [0, -1, 0, 1]}, [_f(3, 4)], [(3, 4)]),
    # resizing: ONNX's nearest (floor, asymmetric), bilinear (half_pixel / align_corners),
    # a mode F.interpolate lacks (round_prefer_floor)
    ("resize", {"mode": "nearest", "coordinate_mode": "asymmetric", "nearest_mode": "floor",
                "scales": [1.0, 1.0, 2.0, 2.0]}, [_f(1, 2, 3, 3)], [(1, 2, 6, 6)]),
    ("resize", {"mode": "linear", "coordinate_mode": "pytorch_half_pixel",
                "scales": [1.0, 1.0, 2.0, 2.0]}, [_f(1, 2, 3, 3)], [(1, 2, 6, 6)]),
    ("resize", {"mode": "linear", "coordinate_mode": "align_corners"}, [_f(1, 2, 3, 3)],
     [(1, 2, 5, 7)]),
    ("resize", {"mode": "nearest"}, [_f(1, 1, 4, 4)], [(1, 1, 6, 3)]),
    ("resize", {"mode": "nearest", "coordinate_mode": "half_pixel",
                "nearest_mode": "round_prefer_ceil"}, [_f(1, 1, 3, 3)], [(1, 1, 7, 7)]),
    # types, constants, shapes
    ("cast", {"dtype": "int64"}, [_f(3, 4) * 3], [(3, 4)]),
    ("cast", {"dtype": "float32"}, [_i(5, 3)], [(3,)]),
    ("cast", {"dtype": "bool"}, [_i(2, 4)], [(4,)]),
    ("constant", {"value": 0.0, "dtype": "int64"}, [_i(5, 2, 3)], [(2, 3)]),
    ("constant", {"value": 1.5}, [np.array([2, 3], dtype=np.int64)], [(2, 3)]),
    ("shape", {}, [_f(2, 3, 4)], [(3,)]),
    ("shape", {"start": 1, "end": -1}, [_f(2, 3, 4, 5)], [(2,)]),
    ("size", {}, [_f(2, 3, 4)], [()]),
    ("range", {"start": 0, "end": 5, "step": 1}, [], [(5,)]),
    ("range", {}, [np.float32(1.0), np.float32(4.0), np.float32(0.5)], [(6,)]),
    ("trilu", {"upper": False}, [_f(2, 4, 4), np.int64(-1)], [(2, 4, 4)]),
    ("trilu", {}, [_f(3, 5)], [(3, 5)]),
    ("depth_to_space", {"blocksize": 2}, [_f(1, 8, 2, 3)], [(1, 2, 4, 6)]),
    ("depth_to_space", {"blocksize": 2, "mode": "CRD"}, [_f(1, 8, 2, 3)], [(1, 2, 4, 6)]),
    ("space_to_depth", {"blocksize": 2}, [_f(1, 2, 4, 6)], [(1, 8, 2, 3)]),
    ("contiguous", {}, [_f(2, 3)], [(2, 3)]),
    ("clone", {}, [_f(2, 3)], [(2, 3)]),
    # views whose output shape is unknown (``()``): from the attributes (ONNX's 0 and -1)
    ("reshape", {"shape": [0, -1]}, [_f(2, 3, 4)], [()]),
    ("squeeze", {"axes": [1]}, [_f(2, 1, 4)], [()]),
    ("unsqueeze", {"axes": [0, -1]}, [_f(2, 3)], [()]),
    ("flatten", {"axis": 2}, [_f(2, 3, 4, 5)], [()]),
    ("flatten", {"start_dim": 1}, [_f(2, 3, 4)], [()]),
    ("transpose", {}, [_f(2, 3, 4)], [(4, 3, 2)]),
    # issue 41: adaptive pools to a size, weight norm, the recurrent cells in both conventions
    ("global_avgpool", {}, [_f(2, 3, 7)], [(2, 3, 3)]),
    ("global_avgpool", {}, [_f(1, 2, 4, 5, 6)], [(1, 2, 2, 1, 4)]),
    ("global_maxpool", {}, [_f(2, 3, 5, 7)], [(2, 3, 2, 3)]),
    ("weight_norm", {"axis": 0}, [_f(4, 3, 2), _pos(4, 1, 1)], [(4, 3, 2)]),
    ("weight_norm", {"axis": -1}, [_f(4, 3), _pos()], [(4, 3)]),
    *RECURRENT_CASES,
]


def case_ids(cases: list[Any]) -> list[str]:
    """Test ids ``<kind>-<k>``: the k-th case of that kind (cases are tuples, kind first)."""
    seen: dict[str, int] = {}
    out = []
    for kind, *_ in cases:
        seen[kind] = seen.get(kind, 0) + 1
        out.append(f"{kind}-{seen[kind]}")
    return out


__all__ = ["FORM_CASES", "FormCase", "case_ids"]
