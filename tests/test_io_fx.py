"""torch.fx import: kinds, edges, shapes and costs of a small two-branch module."""

from __future__ import annotations

import warnings

import pytest

import workbench as wb

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from workbench.io import from_torch  # noqa: E402


class TwoBranch(nn.Module):
    """stem conv -> (3x3 conv + relu | 1x1 conv + relu) -> cat -> + stem (residual) -> pool -> fc"""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.left = nn.Conv2d(8, 4, 3, padding=1)
        self.right = nn.Conv2d(8, 4, 1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):  # type: ignore[no-untyped-def]
        s = torch.relu(self.stem(x))
        a = self.left(s).relu()
        b = torch.nn.functional.relu(self.right(s))
        y = self.bn(torch.cat([a, b], dim=1)) + s
        y = self.pool(y)
        return self.fc(y.view(y.size(0), -1))


def test_two_branch_module() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every node here has a rule
        g = from_torch(TwoBranch(), torch.randn(2, 3, 16, 16), name="two", tracer="fx")
    assert g.name == "two"
    kinds = {op.id: op.kind for op in g.ops}
    assert kinds == {"stem": "conv2d", "relu": "relu", "left": "conv2d", "relu_1": "relu",
                     "right": "conv2d", "relu_2": "relu", "cat": "concat", "bn": "batchnorm",
                     "add": "add", "pool": "global_avgpool", "view": "reshape", "fc": "matmul"}
    assert set(g.data_edges) == {
        ("stem", "relu"), ("relu", "left"), ("relu", "right"), ("left", "relu_1"),
        ("right", "relu_2"), ("relu_1", "cat"), ("relu_2", "cat"), ("cat", "bn"),
        ("bn", "add"), ("relu", "add"), ("add", "pool"), ("pool", "view"), ("view", "fc")}
    # stem: out (2,8,16,16) = 4096 elements, each 3*3*3 = 27 MACs -> 2*4096*27 FLOPs
    stem = g.op("stem")
    assert stem.flops == 2 * 4096 * 27
    # reads x (2*3*16*16 = 1536) + weight (8*3*3*3 = 216) + bias (8) floats; writes 4096 floats
    assert stem.bytes_read == (1536 + 216 + 8) * 4 and stem.bytes_written == 4096 * 4
    # implicit GEMM: ceil(N*H*W / 64) * ceil(Cout / 64) = ceil(512 / 64) * 1 = 8
    assert stem.thread_blocks == 8
    # left: out (2,4,16,16) = 2048 elements * (8*3*3 = 72) MACs; right: 2048 * 8 MACs (no bias)
    assert g.op("left").flops == 2 * 2048 * 72 and g.op("right").flops == 2 * 2048 * 8
    assert "right.bias" not in g.tensors
    # cat: no FLOPs, moves 2 * 2048 floats in and 4096 out
    cat = g.op("cat")
    assert (cat.flops, cat.bytes_read, cat.bytes_written) == (0, 4096 * 4, 4096 * 4)
    # batch norm: 2 FLOPs per element; reads input + weight, bias, running mean and var (4*8)
    assert g.op("bn").flops == 2 * 4096 and g.op("bn").bytes_read == (4096 + 32) * 4
    assert g.op("add").flops == 4096 and g.op("relu").flops == 4096
    assert g.op("pool").flops == 4096 and g.tensor("pool:out").shape == (2, 8, 1, 1)
    view = g.op("view")
    assert (view.flops, view.bytes_read, view.bytes_written) == (0, 0, 0)
    # fc: (2 x 8) @ (8 x 10): 2*M*K*N = 2*2*8*10
    assert g.op("fc").flops == 320
    assert g.tensor("x").role == "input" and g.tensor("fc.weight").role == "parameter"
    assert g.outputs == ("fc:out",) and g.tensor("fc:out").role == "output"
    assert g.op("stem").attrs["kernel"] == [3, 3] and g.op("stem").attrs["module"] == "Conv2d"
    s = wb.schedule(g, "nnc")
    s.validate()
    assert s.n_streams >= 2  # the two branches run side by side
    assert wb.simulate(s).respects(g)


def test_export_is_the_default_tracer() -> None:
    """torch.export traces where it can (aten-level ops named after their targets), with the
    same kinds, FLOPs and edges as the fx trace of the same module."""
    x = torch.randn(2, 3, 16, 16)
    fx, ex = from_torch(TwoBranch().eval(), x, tracer="fx"), from_torch(TwoBranch().eval(), x)
    assert {op.attrs["tracer"] for op in ex.ops} == {"torch.export"}
    assert sorted(op.kind for op in ex.ops) == sorted(op.kind for op in fx.ops)
    assert sum(op.flops for op in ex.ops) == sum(op.flops for op in fx.ops)
    assert len(ex.data_edges) == len(fx.data_edges)
    with pytest.raises(wb.OptionError, match="tracer"):
        from_torch(TwoBranch(), x, tracer="jit")


def test_batchnorm_statistics_untouched() -> None:
    m = TwoBranch().train()
    before = {k: v.clone() for k, v in m.bn.state_dict().items()}
    from_torch(m, (torch.randn(2, 3, 8, 8),))
    after = m.bn.state_dict()  # running mean, var and num_batches_tracked unchanged
    assert all(torch.equal(before[k], after[k]) for k in before)


class Branchy(nn.Module):
    """Python control flow on a shape: symbolic_trace fails, torch.export specialises."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 6)

    def forward(self, x):  # type: ignore[no-untyped-def]
        if x.shape[0] > 1:
            return torch.sigmoid(self.fc(x))
        return x


def test_export_fallback() -> None:
    g = from_torch(Branchy(), torch.randn(3, 4))
    assert [op.kind for op in g.ops] == ["matmul", "sigmoid"]
    fc = g.ops[0]
    assert fc.flops == 2 * 3 * 4 * 6 and fc.attrs["tracer"] == "torch.export"
    assert g.ops[1].flops == 4 * 18  # sigmoid: 4 FLOPs per element


def test_unknown_targets_warn() -> None:
    class Odd(nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            return torch.nn.functional.softshrink(x) * 2  # (hardtanh is a clip since issue 41)

    with pytest.warns(UserWarning, match=r"1 op\(s\) imported with a default cost.*softshrink"):
        g = from_torch(Odd(), torch.randn(5))
    assert g.op("softshrink").attrs["cost"] == "default" and g.op("softshrink").flops == 5
    assert g.op("mul").kind == "mul"


def test_bad_inputs_one_line() -> None:
    with pytest.raises(wb.WorkbenchError) as info:
        from_torch(TwoBranch(), torch.randn(2, 5, 8, 8))  # wrong channel count
    assert "example_inputs" in str(info.value) and "\n" not in str(info.value)


class Pools(nn.Module):
    """Functional pooling and a strided functional conv, keywords and positions mixed."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 3, 3, 3))

    def forward(self, x):  # type: ignore[no-untyped-def]
        y = torch.nn.functional.conv2d(x, self.weight, None, stride=2, padding=1)
        a = torch.nn.functional.avg_pool2d(y, kernel_size=3, stride=1, padding=1)
        return torch.nn.functional.max_pool2d(a, 2)


def test_functional_keywords_and_default_name() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = from_torch(Pools(), torch.randn(1, 3, 16, 16), tracer="fx")
    assert g.name == "Pools"  # the module's class, not the last submodule's
    # avg_pool2d(kernel_size=3): 9 adds per output element of (1, 4, 8, 8)
    assert g.op("avg_pool2d").flops == 9 * 256 and g.op("avg_pool2d").attrs["kernel"] == [3, 3]
    assert g.op("max_pool2d").flops == 4 * 64  # window 2x2 on (1, 4, 4, 4)
    conv = g.op("conv2d")
    assert conv.attrs["stride"] == 2 and conv.flops == 2 * 256 * 27
    assert from_torch(nn.Sequential(nn.Conv2d(3, 4, 1), nn.Linear(4, 2)).eval(),
                      torch.randn(1, 3, 2, 4)).name == "Sequential"
