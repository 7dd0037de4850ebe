"""NumPy references of the GPU kernels on hand-computed cases; agreement with
workbench.executors.reference;
kernel sources: loading, signatures, twins for every kernel; nvcc compile checks (skipped without
nvcc) of every .cu file and of the generated fused kernels."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench.executors.gpu import emulator as Em
from workbench.executors.gpu import kernels as K
from workbench.executors.gpu import reference as R
from workbench.executors.reference import run_reference
from workbench.passes.fusion import fuse_elementwise
from workbench.values.graph import Op, Tensor

F32 = np.float32


def _op(kind: str, n_in: int = 1, **attrs: Any) -> Op:
    return Op("x", kind=kind, inputs=tuple(f"i{k}" for k in range(n_in)), outputs=("y",),
              attrs=attrs)


def _ref(op: Op, *inputs: object, out_shape: tuple[int, ...] | None = None) -> np.ndarray:
    arrays = [np.asarray(a, dtype=F32) for a in inputs]
    shape = out_shape or arrays[0].shape
    return R.reference_op(op, arrays, lambda t: shape)[0]


# ------------------------------------------------------------------------------- hand-computed
def test_conv2d_hand_computed() -> None:
    x = np.arange(9, dtype=F32).reshape(1, 1, 3, 3)           # 0..8
    w = np.array([[[[1, 0], [0, -1]]]], dtype=F32)            # x[i,j] - x[i+1,j+1]
    y = R.conv2d(x, w)
    assert y.tolist() == [[[[-4.0, -4.0], [-4.0, -4.0]]]]
    y = R.conv2d(x, w, np.array([10], F32), padding=1, stride=2)  # 2x2 output of a padded 5x5
    # windows at (-1,-1),(-1,1),(1,-1),(1,1): x[a,b] - x[a+1,b+1] with zero padding
    assert y.tolist() == [[[[10 - 0.0, 10 - 2.0], [10 - 6.0, 10 + 4 - 8.0]]]]
    op = Op("c", kind="conv2d", inputs=("x", "w"), outputs=("y",),
            attrs={"kernel": (2, 2), "stride": (1, 1), "padding": (0, 0), "act": "relu"})
    y = R.reference_op(op, [x, -w], lambda t: (1, 1, 2, 2))[0]
    assert y.tolist() == [[[[4.0, 4.0], [4.0, 4.0]]]]


def test_conv2d_groups_and_pre_activation() -> None:
    x = np.array([[[[1.0, -2.0]], [[-3.0, 4.0]]]], dtype=F32)  # (1, 2, 1, 2)
    w = np.array([[[[2.0]]], [[[10.0]]]], dtype=F32)           # depthwise 1x1, (2, 1, 1, 1)
    assert R.conv2d(x, w, groups=2).tolist() == [[[[2.0, -4.0]], [[-30.0, 40.0]]]]
    assert R.conv2d(x, w, groups=2, pre_act="relu").tolist() == [[[[2.0, 0.0]], [[0.0, 40.0]]]]
    # pre_act applies before the zero padding: sigmoid(0) = 0.5 must not leak into the border
    y = R.conv2d(np.zeros((1, 1, 1, 1), F32), np.ones((1, 1, 3, 3), F32), padding=1,
                 pre_act="sigmoid")
    assert y.tolist() == [[[[0.5]]]]


def test_sepconv_is_relu_depthwise_pointwise() -> None:
    x = np.array([[[[1.0, -1.0], [2.0, -2.0]], [[-1.0, 3.0], [0.5, 1.0]]]], dtype=F32)
    dw = np.ones((2, 1, 3, 3), F32)
    pw = np.array([[1.0, 1.0], [1.0, -1.0]], F32).reshape(2, 2, 1, 1)
    op = Op("s", kind="sepconv", inputs=("x", "dw", "pw"), outputs=("y",),
            attrs={"kernel": (3, 3), "stride": (1, 1), "padding": (1, 1), "pre_act": "relu"})
    y = R.reference_op(op, [x, dw, pw], lambda t: (1, 2, 2, 2))[0]
    relu_sums = [3.0, 4.5]  # every 3x3 window of a 2x2 image covers all of it
    assert np.allclose(y[0, 0], relu_sums[0] + relu_sums[1])
    assert np.allclose(y[0, 1], relu_sums[0] - relu_sums[1])


def test_pools_hand_computed() -> None:
    x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], dtype=F32)
    assert R.pool2d(x, kernel=2, mode="max").tolist() == [[[[4.0]]]]
    assert R.pool2d(x, kernel=2, mode="avg").tolist() == [[[[2.5]]]]
    # padding 1, kernel 3, stride 1: padding never wins a max, counts in an average's divisor
    neg = -x
    assert R.pool2d(neg, kernel=3, stride=1, padding=1, mode="max").tolist() == [
        [[[-1.0, -1.0], [-1.0, -1.0]]]]
    assert np.allclose(R.pool2d(x, kernel=3, stride=1, padding=1, mode="avg"), 10.0 / 9.0)
    gap = R.REFERENCES["global_avgpool"](_op("global_avgpool"), [x], lambda t: (1, 1, 1, 1))[0]
    assert gap.tolist() == [[[[2.5]]]]


def test_elementwise_and_activations_hand_computed() -> None:
    x = np.array([-1.0, 0.0, 2.0], F32)
    assert _ref(_op("relu"), x).tolist() == [0.0, 0.0, 2.0]
    assert np.allclose(_ref(_op("sigmoid"), x), [1 / (1 + math.e), 0.5, 1 / (1 + math.e ** -2)])
    assert np.allclose(_ref(_op("tanh"), x), np.tanh([-1.0, 0.0, 2.0]))
    gelu2 = 0.5 * 2 * (1 + math.tanh(math.sqrt(2 / math.pi) * (2 + 0.044715 * 8)))
    assert np.allclose(_ref(_op("gelu"), x), [_gelu(-1.0), 0.0, gelu2])
    assert _ref(_op("neg"), x).tolist() == [1.0, -0.0, -2.0]
    assert np.allclose(_ref(_op("atan"), x), np.arctan([-1.0, 0.0, 2.0]))
    y = np.array([4.0, 5.0, 8.0], F32)
    assert _ref(_op("add", 2), x, y).tolist() == [3.0, 5.0, 10.0]
    assert _ref(_op("add", 3), x, y, y).tolist() == [7.0, 10.0, 18.0]
    assert _ref(_op("sub", 2), x, y).tolist() == [-5.0, -5.0, -6.0]
    assert _ref(_op("mul", 2), x, y).tolist() == [-4.0, 0.0, 16.0]
    assert _ref(_op("div", 2), x, y).tolist() == [-0.25, 0.0, 0.25]


def _gelu(v: float) -> float:
    return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))


def test_batchnorm_layernorm_softmax_hand_computed() -> None:
    x = np.array([[[[1.0]], [[2.0]]]], F32)                    # (1, 2, 1, 1)
    params = np.array([[2.0, 1.0], [0.5, 0.0], [1.0, 0.0], [3.0, 0.0]], F32)  # gamma beta mean var
    y = _ref(_op("batchnorm", 2, eps=1.0), x, params)
    assert np.allclose(y.reshape(-1), [2.0 * (1 - 1) / 2 + 0.5, 1.0 * 2 / 1 + 0.0])
    row = np.array([[1.0, 3.0]], F32)
    ln = _ref(_op("layernorm", 2, eps=0.0), row, np.array([[1.0, 1.0], [0.0, 10.0]], F32))
    assert np.allclose(ln, [[-1.0, 11.0]])
    sm = _ref(_op("softmax", axis=-1, scale=math.log(3.0)), np.array([[0.0, 1.0]], F32))
    assert np.allclose(sm, [[0.25, 0.75]])
    sm1 = _ref(_op("softmax", axis=0), np.array([[0.0, 0.0], [0.0, math.log(3.0)]], F32))
    assert np.allclose(sm1, [[0.5, 0.25], [0.5, 0.75]])


def test_concat_matmul_transpose_copy_hand_computed() -> None:
    a = np.ones((1, 1, 2), F32)
    b = np.zeros((1, 2, 2), F32)
    assert _ref(_op("concat", 2, axis=1), a, b, out_shape=(1, 3, 2)).tolist() == [
        [[1, 1], [0, 0], [0, 0]]]
    m = np.array([[1.0, 2.0], [3.0, 4.0]], F32)
    assert _ref(_op("matmul", 2), m, m).tolist() == [[7.0, 10.0], [15.0, 22.0]]
    bias = np.array([1.0, -1.0], F32)
    assert _ref(_op("matmul", 3), m, np.eye(2, dtype=F32), bias).tolist() == [[2, 1], [4, 3]]
    t = _ref(_op("transpose", perm=(1, 0)), m)
    assert t.tolist() == [[1.0, 3.0], [2.0, 4.0]] and t.flags.c_contiguous
    assert _ref(_op("d2d"), m).tolist() == m.tolist()


def test_assign_spin_and_views() -> None:
    assert _ref(Op("a", kind="assign", inputs=("p", "v"), outputs=("y",)), [1.0], [5.0]).tolist() \
        == [5.0]
    assert _ref(Op("a", kind="assign_add", inputs=("p", "v"), outputs=("y",)), [1.0],
                [5.0]).tolist() == [6.0]
    spin = Op("s", kind="op", inputs=("a", "b"), outputs=("y",))
    out = R.reference_op(spin, [np.array([2.0, 9.0], F32), np.array([0.5], F32)],
                         lambda t: (3,))[0]
    assert out.tolist() == [3.5, 3.5, 3.5]
    view = Op("r", kind="reshape", inputs=("a",), outputs=("y",))
    assert R.reference_op(view, [np.arange(4, dtype=F32)], lambda t: (2, 2),
                          how="alias")[0].shape == (2, 2)


def test_fused_reference_evaluates_members() -> None:
    g = fuse_elementwise(wb.models.textbook_mul_sub_add())
    fused = next(op for op in g.ops if op.kind == "fused")
    x, y = np.array([3.0], F32), np.array([2.0], F32)
    out = R.reference_op(fused, [x, y], lambda t: (1,))
    assert [o.tolist() for o in out] == [[(3 * 2) + (3 - 2)]]


# ------------------------------------------------------------------------------- vs reference
OVERLAP = ["add", "sub", "mul", "div", "relu", "gelu", "sigmoid", "tanh", "exp", "log", "neg",
           "abs", "sqrt", "atan", "matmul", "concat", "softmax", "layernorm", "batchnorm",
           "transpose", "global_avgpool"]


@pytest.mark.parametrize("kind", OVERLAP)
def test_agrees_with_workbench_reference(kind: str) -> None:
    from workbench.executors.reference import KERNELS

    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 2.0, size=(2, 3, 4, 5)).astype(F32)
    y = rng.uniform(0.5, 2.0, size=(2, 3, 4, 5)).astype(F32)
    cases: dict[str, tuple[list[np.ndarray], dict[str, Any]]] = {
        "matmul": ([x, rng.standard_normal((2, 3, 5, 6)).astype(F32)], {}),
        "concat": ([x, y], {"axis": 1}),
        "softmax": ([x], {"axis": -1, "scale": 0.7}),
        "layernorm": ([x, rng.uniform(0.5, 1.5, (2, 5)).astype(F32)], {"eps": 1e-5}),
        "batchnorm": ([x, rng.uniform(0.5, 1.5, (4, 3)).astype(F32)], {"eps": 1e-3}),
        "transpose": ([x], {"perm": (0, 2, 1, 3)}),
    }
    args, attrs = cases.get(kind, ([x, y] if kind in ("add", "sub", "mul", "div") else [x], {}))
    op = Op("o", kind=kind, inputs=tuple(f"i{k}" for k in range(len(args))), outputs=("y",),
            attrs=attrs)
    mine = R.reference_op(op, list(args), lambda t: x.shape)[0]
    theirs = KERNELS[kind](op, list(args), lambda t: x.shape)[0]
    np.testing.assert_allclose(mine, theirs, rtol=2e-5, atol=1e-6)


def test_draw_inputs_matches_workbench_reference() -> None:
    g = wb.models.transformer_block(seq_len=4, d_model=8, heads=2, d_ff=16)
    theirs = run_reference(g, seed=3)
    mine = R.draw_inputs(g, 3, init="reference")
    for t, v in mine.items():
        np.testing.assert_array_equal(v, theirs[t])
    scaled = R.draw_inputs(g, 3)
    assert np.array_equal(scaled["input"], mine["input"])          # activations unchanged
    w = scaled["block0/q:weight"]                                   # weights: He-scaled, signed
    assert w.min() < 0 < w.max() and abs(float(w.std()) - math.sqrt(2 / 8)) < 0.15


@pytest.mark.parametrize("fused", [False, True])
def test_graph_reference_agrees_with_workbench_reference(fused: bool) -> None:
    g = wb.models.transformer_block(seq_len=6, d_model=16, heads=2, d_ff=32)
    if fused:
        g = fuse_elementwise(g)
    inputs = R.draw_inputs(g, 0)
    mine = R.run_graph_reference(g, inputs)
    theirs = run_reference(g, inputs)
    for t in g.outputs:
        np.testing.assert_allclose(mine[t], theirs[t], rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------- sources
def test_sources_are_found_and_includes_inlined() -> None:
    root = K.kernels_dir()
    assert (root / "common.cuh").is_file()
    assert {p.stem for p in root.glob("*.cu")} == set(K.SOURCE_FILES)
    for module in K.SOURCE_FILES:
        text = K.module_source(module)
        assert '#include "' not in text.replace("// (already included", "")
        assert "wb_store_index" in text


def test_sources_are_found_in_an_installed_wheel_layout(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # the wheel force-includes kernels/ as workbench/kernels: importlib.resources finds it there
    packaged = tmp_path / "workbench" / "kernels"
    packaged.mkdir(parents=True)
    for f in K.kernels_dir().iterdir():
        (packaged / f.name).write_text(f.read_text())
    monkeypatch.setattr(K.resources, "files", lambda package: tmp_path / package)
    assert K.kernels_dir() == packaged


def test_signatures_and_twins_cover_every_kernel() -> None:
    names = set()
    for module in K.SOURCE_FILES:
        for kernel, params in K._module_signatures(module).items():
            names.add(kernel)
            assert params, kernel
            assert all(p.type in ("ptr", "i64", "i32", "f32", "u64") for p in params)
            if kernel not in ("stamp", "spin"):
                assert [p.name for p in params][-2:] == ["row_len", "row_stride"], kernel
    assert names | {"fused"} == set(Em.TWINS)
    assert [p.type for p in K.signature("conv", "conv2d_igemm")][:4] == ["ptr"] * 4


def test_make_call_checks_names() -> None:
    with pytest.raises(wb.OptionError, match="missing"):
        K.make_call("elementwise", "unary", (1,), (256,), x=K.In("a"), y=K.Out("b"))
    with pytest.raises(wb.OptionError, match="not defined"):
        K.signature("elementwise", "nope")


def test_codes_match_the_cuda_tables() -> None:
    common = K.raw_source("common.cuh")
    for name, code in K.UNARY_CODES.items():
        macro = {"identity": "WB_ID"}.get(name, f"WB_{name.upper()}")
        assert f"#define {macro} {code}\n" in common, name
    for name, code in K.BINARY_CODES.items():
        assert f"#define WB_{name.upper()} {code}\n" in common, name


def test_eval_stmts_of_generated_kernels_matches_reference() -> None:
    for g in (fuse_elementwise(wb.models.inception_v3(resolution=75, fused=False)),
              fuse_elementwise(wb.models.transformer_block(seq_len=4, d_model=8, heads=2,
                                                           d_ff=16))):
        shape_of = R.shape_or_flat(g)
        values = R.run_graph_reference(g)
        for op in (o for o in g.ops if o.kind == "fused"):
            fk = K.fused_kernel(op, shape_of)
            ins = [values[t] for t in fk.inputs]
            env, stores = Em.eval_stmts(fk.stmts, ins, dict(fk.ints), fk.n)
            expected = R.reference_op(op, ins, shape_of)
            for slot, t in enumerate(fk.outputs):
                if slot in stores:
                    np.testing.assert_allclose(stores[slot].reshape(values[t].shape),
                                               expected[list(op.outputs).index(t)], rtol=1e-5,
                                               atol=1e-6)


# ------------------------------------------------------------------------------- nvcc
NVCC = shutil.which("nvcc") or ""
needs_nvcc = pytest.mark.skipif(not NVCC, reason="nvcc is not installed")


def _nvcc(source: str, tmp: Path, name: str) -> None:
    path = tmp / f"{name}.cu"
    path.write_text(source)
    out = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-o",
                          str(tmp / f"{name}.ptx"), str(path)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, f"{name}: {out.stderr[-2000:]}"


@needs_nvcc
@pytest.mark.parametrize("module", K.SOURCE_FILES)
def test_every_kernel_file_compiles(module: str, tmp_path: Path) -> None:
    _nvcc(K.module_source(module), tmp_path, module)
    # the raw file compiles with the include path too (what a developer runs)
    out = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-I", str(K.kernels_dir()),
                          "-o", str(tmp_path / "raw.ptx"), str(K.kernels_dir() / f"{module}.cu")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def _add_softmax() -> wb.Graph:
    """x + y -> softmax along axis 1: a reduce-pattern fused group with a softmax."""
    tensors = [Tensor("x", 4 * 24, role="input", shape=(2, 3, 4)),
               Tensor("y", 4 * 24, role="input", shape=(2, 3, 4)),
               Tensor("s", 4 * 24, "add", shape=(2, 3, 4)),
               Tensor("p", 4 * 24, "softmax", role="output", shape=(2, 3, 4))]
    ops = [Op("add", kind="add", inputs=("x", "y"), outputs=("s",)),
           Op("softmax", kind="softmax", inputs=("s",), outputs=("p",),
              attrs={"axis": 1, "scale": 0.5})]
    return wb.Graph(ops, tensors, name="add_softmax")


def _fused_sources() -> dict[str, str]:
    graphs = [fuse_elementwise(_add_softmax()),
              fuse_elementwise(wb.models.inception_v3(resolution=75, fused=False)),
              fuse_elementwise(wb.models.nasnet_a_large()),
              fuse_elementwise(wb.models.randwire(resolution=32)),
              fuse_elementwise(wb.models.transformer_block(seq_len=4, d_model=8, heads=2,
                                                           d_ff=16)),
              fuse_elementwise(wb.models.textbook_mul_sub_add())]
    out = {}
    for g in graphs:
        shape_of = R.shape_or_flat(g)
        for op in g.ops:
            if op.kind == "fused":
                fk = K.fused_kernel(op, shape_of)
                out[fk.name] = K.inline_includes(fk.source)
    return out


def test_fused_sources_cover_both_patterns() -> None:
    sources = _fused_sources()
    text = "\n".join(sources.values())
    assert "wb_layernorm_rows" in text and "wb_mean_rows" in text  # reduce patterns
    assert "wb_softmax_rows" in text
    assert "WB_GRID_STRIDE(i, n)" in text                           # elementwise pattern
    assert len(sources) < 12  # identical groups share one kernel (94 BN+ReLU pairs -> 1)


@needs_nvcc
def test_generated_fused_kernels_compile(tmp_path: Path) -> None:
    sources = _fused_sources()
    for i, src in enumerate(sources.values()):
        _nvcc(src, tmp_path, f"fused{i}")
    # a generated kernel's signature is what the launch passes
    for name, src in sources.items():
        params = K.parse_signatures(src)[name]
        assert params[0].name == "in0"


def _find_nvrtc() -> str | None:
    """libnvrtc as CuPy would load it: $WORKBENCH_NVRTC, the nvidia-cuda-nvrtc wheel, the
    CUDA toolkit, or the loader path."""
    import ctypes.util
    import glob
    import os

    candidates = [os.environ.get("WORKBENCH_NVRTC", "")]
    try:
        import nvidia.cuda_nvrtc as pkg  # type: ignore[import-not-found]

        candidates += glob.glob(os.path.join(list(pkg.__path__)[0], "lib", "libnvrtc.so*"))
    except ImportError:
        pass
    for root in (os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""),
                 "/usr/local/cuda"):
        if root:
            candidates += glob.glob(os.path.join(root, "lib64", "libnvrtc.so*"))
    candidates.append(ctypes.util.find_library("nvrtc") or "")
    for path in candidates:
        if path and "builtins" not in path and "alt" not in path:
            try:
                ctypes.CDLL(path)
                return path
            except OSError:
                continue
    return None


def _nvrtc_compile(lib: Any, source: str, name: str) -> tuple[int, str]:
    import ctypes

    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None,
                                  None) == 0
    opts = [o.encode() for o in (*K.COMPILE_OPTIONS, "--gpu-architecture=compute_90")]
    status = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return int(status), log.value.decode(errors="replace")


NVRTC = _find_nvrtc()


@pytest.mark.skipif(NVRTC is None, reason="libnvrtc not found (set WORKBENCH_NVRTC)")
def test_everything_compiles_with_nvrtc_as_cupy_does() -> None:
    import ctypes

    lib = ctypes.CDLL(str(NVRTC))
    sources = {m: K.module_source(m) for m in K.SOURCE_FILES} | _fused_sources()
    for name, src in sources.items():
        status, log = _nvrtc_compile(lib, src, f"{name}.cu")
        assert status == 0, f"{name}: {log[-2000:]}"


def test_sources_avoid_what_nvrtc_lacks() -> None:
    # NVRTC has no host headers: nvcc accepts these, CuPy's RawModule would not
    for module in K.SOURCE_FILES:
        text = K.module_source(module)
        for word in ("INFINITY", "NAN", "M_PI", "#include <", "std::", "printf"):
            assert word not in text, f"{module}: uses {word!r}"


def test_add_softmax_fusion_emulates() -> None:
    from workbench.executors.gpu.launch_plan import build_launch_plan

    g = fuse_elementwise(_add_softmax())
    assert [op.kind for op in g.ops] == ["fused"]
    plan = build_launch_plan(wb.schedule(g, "serial"))
    got = Em.emulate(plan)
    want = R.run_graph_reference(_add_softmax())
    np.testing.assert_allclose(got["p"], want["p"], rtol=1e-6)


def test_tensor_helpers() -> None:
    assert K.concat_geometry([(1, 2, 3), (1, 1, 3)], 1) == [(0, 6, 9), (6, 3, 9)]
    assert K.softmax_geometry((2, 3, 4), 1) == (2, 3, 4)
    assert K.elem_grid(1) == (1, 1, 1) and K.elem_grid(4096) == (4, 1, 1)
    t = Tensor("t", 8)
    assert R.shape_or_flat(wb.Graph([Op("a", outputs=("t",))], [t]))("t") == (2,)
