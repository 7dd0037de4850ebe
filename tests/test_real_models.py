"""Real architectures (tests/model_zoo.py) run with their own weights under every schedule.

Through ``from_torch`` the torch executor runs the model's own calls, so under every policy the
outputs must equal ``model(x)`` — for the example it was traced with and for new inputs: within
``max |diff| / max |y| <= 1e-4`` (``verify=True``), and on the CPU bitwise (the same aten calls
in an order the graph allows; ``meta["bitwise"]``) for every model but those in
:data:`NOT_BITWISE`, whose eager forward takes another kernel path than its trace.
``wb.accelerate`` and ``torch.compile(backend="workbench")`` must give ``model(x)`` too, and
fall back to the model itself, with one warning, where the schedule does not apply.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from tests.model_zoo import ZOO, imported, new_inputs  # noqa: E402
from workbench.schedulers import TEST_OPTIONS  # noqa: E402

nn = torch.nn


#: Models whose eager ``forward`` under ``torch.no_grad()`` runs other kernels than the calls
#: ``torch.export`` records: ``nn.TransformerEncoderLayer``'s inference fast path
#: (``_transformer_encoder_layer_fwd``, one fused native kernel) where the trace has its
#: decomposition (linear, scaled_dot_product_attention, layer_norm ...).
NOT_BITWISE = {"vit": 1e-5}


def _leaves(value: Any) -> list[Any]:
    from torch.utils._pytree import tree_leaves

    return tree_leaves(value)


def _same(got: Any, want: Any, tolerance: float = 0.0) -> None:
    """Equal leaf by leaf: bitwise, or within ``tolerance`` of each leaf's largest value."""
    a, b = _leaves(got), _leaves(want)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.shape == y.shape
        if tolerance == 0.0:
            assert torch.equal(x, y), float((x - y).abs().max())
        else:
            assert float((x - y).abs().max()) <= tolerance * float(y.abs().max())


@pytest.mark.parametrize("name", list(ZOO))
def test_every_policy_computes_the_model_with_its_own_weights(name: str) -> None:
    model, example, graph = imported(name)
    assert graph.program is not None and graph.program.model is model
    fresh = new_inputs(example)
    with torch.no_grad():
        want = model(*fresh)
    for policy in wb.policies():
        sched = wb.schedule(graph, policy, **TEST_OPTIONS.get(policy, {}))
        trace = wb.execute(sched, executor="torch", device="cpu", repeats=1, warmup=0,
                           inputs=fresh, verify=True, return_outputs=True)
        meta = trace.meta
        assert meta["verified"] and meta["bitwise"] == (name not in NOT_BITWISE), policy
        assert meta["max_rel_diff"] <= NOT_BITWISE.get(name, 0.0)
        assert meta["weights"].startswith("the model's own")
        _same(meta["outputs"], want, NOT_BITWISE.get(name, 0.0))


def test_without_inputs_a_run_uses_the_example_it_was_traced_with() -> None:
    model, example, graph = imported("bert")
    trace = wb.execute(wb.schedule(graph, "nnc"), executor="torch", device="cpu", repeats=1,
                       warmup=0, return_outputs=True)
    assert trace.meta["inputs"] == "the example traced"
    with torch.no_grad():
        _same(trace.meta["outputs"], model(*example))


def test_tensors_the_model_creates_are_made_on_the_run_s_device() -> None:
    _, _, graph = imported("gpt2")  # torch.arange(..., device=<the trace's>) for positions
    program = graph.program
    (arange,) = [n for n in program.nodes if n.startswith("arange")]
    traced = program.call(program.gm, arange, lambda name: None)
    moved = program.call(program.gm, arange, lambda name: None, torch.device("meta"))
    assert traced.device.type == "cpu" and moved.device.type == "meta"
    assert moved.shape == traced.shape


def test_a_zero_dimensional_input_stays_zero_dimensional() -> None:
    import numpy as np

    from workbench.executors.torch_exec.values import as_tensor

    assert as_tensor(np.array(3.0), device="cpu", dtype=None).shape == ()
    assert as_tensor(np.array([3.0]), device="cpu", dtype=None).shape == (1,)


def test_a_wrong_number_of_inputs_is_one_line() -> None:
    _, example, graph = imported("bert")
    with pytest.raises(wb.OptionError, match=r"traced with 2 input value\(s\).*got 1"):
        wb.execute(wb.schedule(graph, "serial"), executor="torch", device="cpu",
                   inputs=example[0], repeats=1, warmup=0)


class InPlace(nn.Module):
    """Reads before in-place writes, writes through views, a write to a slice: a schedule that
    reordered a read across a write would change the result."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.other = nn.Conv2d(4, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        before = self.other(y)           # reads y before it is scaled in place
        y.mul_(2.0)                      # in-place write to y
        view = y[:, :2]                  # a view of the written storage
        view.add_(1.0)                   # a write through the view
        after = torch.sigmoid(y)         # reads the written storage
        y[:, 3] = before[:, 0]           # slice assignment (copy_ into a view)
        return before + after + y


def test_in_place_writes_order_their_readers_under_every_policy() -> None:
    torch.manual_seed(0)
    model, x = InPlace().eval(), torch.randn(2, 4, 8, 8)
    graph = wb.io.from_torch(model, x)
    assert graph.control_edges  # readers before a write precede it
    with torch.no_grad():
        want = model(x.clone())
    for policy in wb.policies():
        sched = wb.schedule(graph, policy, **TEST_OPTIONS.get(policy, {}))
        trace = wb.execute(sched, executor="torch", device="cpu", repeats=1, warmup=0,
                           inputs=(x.clone(),), verify=True, return_outputs=True)
        _same(trace.meta["outputs"], want)


def test_a_saved_graph_drops_its_program_with_a_warning(tmp_path: Any) -> None:
    _, _, graph = imported("resnet")
    with pytest.warns(UserWarning, match="saved the graph only"):
        wb.save(graph, tmp_path / "resnet.json")
    loaded = wb.load(tmp_path / "resnet.json")
    assert loaded == graph and loaded.program is None
    assert graph.replace(name="renamed").program is graph.program


def test_a_pickled_graph_finds_its_program_only_where_it_wasimported(tmp_path: Any) -> None:
    import pickle
    import subprocess
    import sys

    _, _, graph = imported("resnet")
    again = pickle.loads(pickle.dumps(graph))
    assert again == graph and again.program is graph.program  # this process: found again
    cmp = wb.compare(graph, policies=["nnc"], show_progress=False)  # forked workers
    assert cmp.schedules["nnc"].graph.program is graph.program
    (tmp_path / "g.pkl").write_bytes(pickle.dumps(graph))
    code = ("import pickle, sys; g = pickle.load(open(sys.argv[1], 'rb')); "
            "print(len(g.ops), g.program)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "g.pkl")],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(len(graph.ops)), "None"]  # another process: the graph, no program


# ------------------------------------------------------------------------------ accelerate
@pytest.mark.parametrize("name", list(ZOO))
def test_accelerate_gives_the_model_for_the_example_and_for_new_inputs(name: str) -> None:
    model, example, _ = imported(name)
    fast = wb.accelerate(model, example, policy="nnc")
    assert type(fast).__name__ == "ScheduledModule" and fast.policy == "nnc"
    assert fast.mode == "cpu" and isinstance(fast, nn.Module)
    for inputs in (example, new_inputs(example), new_inputs(example, seed=2)):
        with torch.no_grad():
            _same(fast(*inputs), model(*inputs), NOT_BITWISE.get(name, 0.0))


def test_accelerate_auto_measures_given_policies_and_keeps_the_model_unless_one_beats_it() -> None:
    model, example, _ = imported("inception")
    fast = wb.accelerate(model, example, policies=["serial", "nnc"], repeats=3, warmup=1,
                         budget_s=60, show_progress=False)
    cmp = fast.comparison  # on the CPU only given policies are measured (none could differ)
    assert cmp is not None and set(cmp.traces) == {"serial", "nnc"}
    itself = cmp.settings["model_itself"]
    assert len(itself["makespans_us"]) == 6  # before and after the policies
    decision = cmp.settings["decision"]
    if fast.policy == "model":  # the usual outcome on one CPU: no streams to overlap
        assert "no schedule beats the model beyond measurement noise" in decision
        assert fast.schedule is None
        assert fast.reason == f"{decision}; running the model itself"
    else:
        best = cmp.traces[fast.policy].meta
        assert best["makespan_q3_us"] < itself["makespan_q1_us"] and "beats" in decision
    with torch.no_grad():
        _same(fast(*example), model(*example))


class DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if y.sum() > 0:  # control flow on a value: neither torch.export nor fx can trace it
            return y.relu()
        return -y


def test_accelerate_runs_the_model_itself_when_it_cannot_be_captured() -> None:
    torch.manual_seed(0)
    model, x = DataDependent().eval(), torch.randn(3, 4)
    with pytest.warns(UserWarning, match="cannot capture DataDependent.*running the model "
                                         "itself"):
        fast = wb.accelerate(model, x, policy="nnc")
    assert fast.policy == "model" and fast.schedule is None
    with torch.no_grad():
        assert torch.equal(fast(x), model(x)) and torch.equal(fast(-x), model(-x))


def test_accelerate_checks_its_options() -> None:
    model, example, _ = imported("resnet")
    with pytest.raises(wb.ScheduleError, match="unknown scheduling policy 'nncc'"):
        wb.accelerate(model, example, policy="nncc")
    with pytest.raises(wb.OptionError, match="unknown mode"):
        wb.accelerate(model, example, mode="fast")
    with pytest.raises(wb.OptionError, match="unknown precision 'fp64'"):
        wb.accelerate(model, example, precision="fp64")


# ------------------------------------------------------------------------------ torch.compile
def test_the_workbench_backend_is_registered_with_dynamo() -> None:
    import torch._dynamo

    assert "workbench" in torch._dynamo.list_backends(exclude_tags=())


@pytest.mark.parametrize("name", ["resnet", "inception", "bert", "gpt2", "vit"])
def test_torch_compile_with_the_workbench_backend_gives_the_model(name: str) -> None:
    from workbench.orchestration.compile_backend import workbench_backend

    model, example, _ = imported(name)
    made: list[Any] = []

    def spy(gm: Any, inputs: list[Any], **kw: Any) -> Any:
        made.append(workbench_backend(gm, inputs, **kw))
        return made[-1]

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=spy, options={"policy": "nnc"})
    with torch.no_grad():
        for inputs in (example, new_inputs(example)):
            _same(compiled(*inputs), model(*inputs), NOT_BITWISE.get(name, 0.0))
    built = [f for graph in made for f in graph.built.built.values()]  # per input signature
    assert built and all(type(f.__self__).__name__ == "ScheduledModule" for f in built)
    torch._dynamo.reset()
    by_name = torch.compile(model, backend="workbench", options={"policy": "min_streams"})
    with torch.no_grad():
        _same(by_name(*example), model(*example), NOT_BITWISE.get(name, 0.0))


def test_the_backend_refuses_an_unknown_option() -> None:
    model, example, _ = imported("resnet")
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="workbench", options={"polcy": "nnc"})
    with pytest.raises(Exception, match="unknown option 'polcy'"):
        compiled(*example)
    torch._dynamo.reset()


def test_accelerate_falls_back_with_one_line_when_the_schedule_cannot_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.executors.torch_exec import module

    model, example, _ = imported("resnet")

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("operation not permitted when stream is capturing\nmore detail")

    monkeypatch.setattr(module.ScheduledModule, "__init__", refuse)
    with pytest.warns(UserWarning, match=r"nnc on ResNetTiny: operation not permitted when "
                                         r"stream is capturing; running the model itself$"):
        fast = wb.accelerate(model, example, policy="nnc")
    assert fast.policy == "model"
    with torch.no_grad():
        _same(fast(*example), model(*example))


def test_the_model_s_own_state_is_a_static_input_and_data_is_not() -> None:
    from workbench.executors.torch_exec.module import is_static_input

    marked = torch.randn(2)
    marked._dynamo_static_input_type = "unguarded"  # type: ignore[attr-defined]
    assert is_static_input(nn.Parameter(torch.randn(2))) and is_static_input(marked)
    assert not is_static_input(torch.randn(2))
