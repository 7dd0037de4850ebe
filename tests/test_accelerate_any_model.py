"""``wb.accelerate`` and ``torch.compile(backend="workbench")`` take any model and any shape.

The models are those of :mod:`tests.model_zoo_any` (no downloads: a decoder-only LLM with
rotary embeddings, grouped-query attention and a causal mask; an encoder-decoder; Mamba; LSTM;
GRU; ``nn.MultiheadAttention`` with masks; a Whisper-style conv1d front end; an R3D-style conv3d;
a PVT stage; keyword inputs with optional arguments; dataclass and dict outputs), plus, written
here, a model that writes its input in place, a buffer step counter, BatchNorm and Dropout in
training mode.  Every output is compared with what the model itself returns for the same call
(stateful models: a twin deep-copied before the accelerated module was made, called the same
way), so a first call that saw state left behind by verification shows up as a difference.  The
CUDA paths run on the fakes of ``tests/test_torch_cuda_fake.py`` (a capture that fails) and
``tests/fake_cuda.py`` (asynchronous streams and real replays).
"""

from __future__ import annotations

import copy
import inspect
import math
import subprocess
import sys
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.utils._pytree import tree_leaves  # noqa: E402

import workbench as wb  # noqa: E402
from tests._complexity import machine_slowdown  # noqa: E402
from tests.fake_cuda import StrictCuda, on_the_runner  # noqa: E402
from tests.model_zoo import ZOO  # noqa: E402
from tests.model_zoo_any import ANY, VOCAB, TinyOutput  # noqa: E402
from tests.test_torch_cuda_fake import FakeCuda, FakeEvent, FakeGraph  # noqa: E402
from workbench.executors.torch_exec.module import (  # noqa: E402
    MAX_SPECIALISATIONS,
    ModelItself,
    ScheduledModule,
)
from workbench.io.torch.program import Call  # noqa: E402
from workbench.orchestration import accelerate as acc  # noqa: E402
from workbench.orchestration.compile_backend import CompiledGraph, workbench_backend  # noqa: E402

TOLERANCE = 1e-4


# ------------------------------------------------------------------------------ the models
class MutatesInput(nn.Module):
    """Writes its input in place (``x.add_(1)``) after reading it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        x.add_(1.0)
        return y + x


class StepCounter(nn.Module):
    """A buffer counting the calls, read by the output: state every call advances."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.register_buffer("steps", torch.zeros((), dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.steps += 1
        return self.fc(x) * self.steps


def _tokens(batch: int, seq: int, seed: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _padding(batch: int, seq: int) -> torch.Tensor:
    """1 for tokens, 0 for padding at the end of every row but the first."""
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[1:, seq - 2:] = 0
    return mask


def _floats(batch: int, seq: int, seed: int, width: int = 8) -> torch.Tensor:
    return torch.randn(batch, seq, width, generator=torch.Generator().manual_seed(seed))


@dataclass(frozen=True)
class Case:
    """A model and its inputs for a batch size, a sequence length and a seed."""

    make: Callable[[], nn.Module]
    inputs: Callable[[int, int, int], Call]


def _from_zoo(name: str) -> Case:
    entry = ANY[name]
    return Case(entry.make, lambda b, s, k: Call(*entry.inputs(b, s, k)))


#: The architectures of tests/model_zoo_any.py (the ones compare and execute also take:
#: tests/test_storage_aliases.py) and two that keep state: an in-place input write, a step
#: counter.
CASES: dict[str, Case] = {
    **{name: _from_zoo(name) for name in ANY},
    "mutates_input": Case(MutatesInput, lambda b, s, k: Call((_floats(b, s, k),))),
    "step_counter": Case(StepCounter, lambda b, s, k: Call((_floats(b, s, k),))),
}


def _model(name: str) -> nn.Module:
    torch.manual_seed(0)
    return CASES[name].make().eval()


def _form(model: nn.Module, call: Call, form: str) -> Call:
    """``call`` with every argument by position or by keyword."""
    bound = inspect.signature(model.forward).bind(*call.args, **call.kwargs)
    if form == "positional":
        return Call(tuple(bound.arguments.values()))
    return Call((), dict(bound.arguments))


def _copy(call: Call) -> Call:
    return Call(tuple(a.clone() for a in call.args),
                {k: v.clone() for k, v in call.kwargs.items()})


def _same(got: Any, want: Any) -> None:
    """Same container types (dicts, dataclasses, tuples), same leaves within TOLERANCE."""
    assert type(got) is type(want), (type(got), type(want))
    a, b = tree_leaves(got), tree_leaves(want)
    if isinstance(want, TinyOutput):
        a, b = [got.logits, got.hidden], [want.logits, want.hidden]
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.shape == y.shape
        scale = max(float(y.abs().max()), 1e-12)
        assert float((x - y).abs().max()) <= TOLERANCE * scale


def _call(module: Any, call: Call) -> Any:
    with torch.no_grad():
        return module(*call.args, **call.kwargs)


def _twin_check(fast: Any, twin: nn.Module, call: Call) -> None:
    """``fast`` and the twin called the same way on copies: same outputs, same inputs after
    (a model writing its inputs), same buffers after."""
    mine, theirs = _copy(call), _copy(call)
    _same(_call(fast, mine), _call(twin, theirs))
    for x, y in zip(tree_leaves((mine.args, mine.kwargs)),
                    tree_leaves((theirs.args, theirs.kwargs)), strict=True):
        assert torch.equal(x, y)
    model = fast.model
    for (name, a), (_, b) in zip(model.named_buffers(), twin.named_buffers(), strict=True):
        assert torch.equal(a, b), name


@contextmanager
def _no_fallback_lines() -> Iterator[list[str]]:
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        lines: list[str] = []
        yield lines
    lines.extend(str(w.message) for w in said if str(w.filename).startswith("workbench."))


# ------------------------------------------------------------------------------ accelerate
@pytest.mark.parametrize("name", list(CASES))
def test_accelerate_takes_what_the_model_takes_and_specialises_new_shapes(name: str) -> None:
    model = _model(name)
    example = CASES[name].inputs(2, 6, 0)
    for form in ("positional", "keyword"):
        given = _form(model, example, form)
        twin = copy.deepcopy(model)
        with _no_fallback_lines() as lines:
            if form == "positional":
                fast = wb.accelerate(model, given.args, policy="nnc", show_progress=False)
            else:
                fast = wb.accelerate(model, kwargs=given.kwargs, policy="nnc",
                                     show_progress=False)
            assert isinstance(fast, ScheduledModule), getattr(fast, "reason", "")
            assert fast.model is model  # the caller's own model, never a copy
            for call in (_form(model, example, "positional"), _form(model, example, "keyword"),
                         CASES[name].inputs(2, 6, 1), CASES[name].inputs(3, 9, 2)):
                _twin_check(fast, twin, call)
        assert lines == []
        (made,) = fast.specialisations.built.values()  # the (3, 9) call's schedule
        assert isinstance(made, ScheduledModule) and made.model is model
    if name == "dataclass_out":
        assert isinstance(_call(fast, example), TinyOutput)


def test_the_first_call_returns_what_the_model_would_have_and_state_is_untouched() -> None:
    model, x = _model("mutates_input"), torch.ones(2, 3, 8)
    fast = wb.accelerate(model, x, policy="nnc", show_progress=False)
    assert torch.equal(x, torch.ones(2, 3, 8))  # verification ran on copies
    twin, y = copy.deepcopy(model), x.clone()
    _same(_call(fast, Call((x,))), _call(twin, Call((y,))))
    assert torch.equal(x, y) and torch.equal(x, torch.full((2, 3, 8), 2.0))
    counter = _model("step_counter")
    x = torch.randn(2, 3, 8)
    fast = wb.accelerate(counter, x, policy="nnc", show_progress=False)
    assert float(counter.steps) == 0.0  # verification advanced nothing
    with torch.no_grad():
        first = fast(x)
        assert float(counter.steps) == 1.0
        _same(first, counter.fc(x) * 1.0)
        counter.fc.weight.mul_(2.0)  # the caller's parameters, updated in place, are the ones run
        _same(fast(x), counter.fc(x) * 2.0)


def test_training_mode_runs_the_model_itself_and_touches_nothing() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 2))
    x = torch.randn(6, 4)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.random.get_rng_state()
    for policy in ("nnc", "auto"):
        with pytest.warns(UserWarning, match=r"in training mode \(BatchNorm1d, Dropout\).*"
                                             r"running the model itself"):
            fast = wb.accelerate(model, x, policy=policy, show_progress=False)
        assert isinstance(fast, ModelItself) and fast.model is model
        assert "outputs differ from call to call" in fast.reason
    assert torch.equal(torch.random.get_rng_state(), rng)
    for key, value in model.state_dict().items():  # no forward ran: statistics untouched
        assert torch.equal(value, state[key]), key
    twin = copy.deepcopy(model)
    torch.manual_seed(5)
    got = fast(x)
    torch.manual_seed(5)
    assert torch.equal(got, twin(x))


@pytest.mark.parametrize("name", list(ANY))
def test_every_architecture_in_training_mode_is_run_as_itself_untouched(name: str) -> None:
    """Each architecture of the zoo, put in training mode: accelerate says so, runs nothing,
    and the model's buffers and torch's generator are where the caller left them."""
    model = _model(name).train()
    call = CASES[name].inputs(2, 6, 0)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.random.get_rng_state()
    with pytest.warns(UserWarning, match="in training mode"):
        fast = wb.accelerate(model, args=call.args, kwargs=call.kwargs, policy="nnc",
                             show_progress=False)
    assert isinstance(fast, ModelItself) and fast.model is model
    assert torch.equal(torch.random.get_rng_state(), rng)
    for key, value in model.state_dict().items():
        assert torch.equal(value, state[key]), key


def test_a_schedule_that_ignores_its_inputs_is_caught_by_the_perturbed_input(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model, x = _model("dict_out"), torch.randn(2, 4, 8)
    run_cpu = ScheduledModule._run_cpu
    first: list[Any] = []

    def stale(self: ScheduledModule, flat: list[Any]) -> Any:
        if not first:
            first.append(run_cpu(self, flat))
        return first[0]  # the example's outputs whatever the inputs

    monkeypatch.setattr(ScheduledModule, "_run_cpu", stale)
    with pytest.warns(UserWarning, match=r"nnc on DictOut: .* differs from the model's"):
        fast = wb.accelerate(model, x, policy="nnc", show_progress=False)
    assert isinstance(fast, ModelItself)


def test_a_model_whose_outputs_drift_is_named_as_the_cause_not_a_stream_race() -> None:
    class Drifting(nn.Module):
        """Keeps a Python counter the trace cannot see: other outputs on every call."""

        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.calls += 1
            return x * self.calls

    with pytest.warns(UserWarning, match="the model's own outputs differ between two calls"):
        fast = wb.accelerate(Drifting().eval(), torch.randn(3, 4), policy="nnc",
                             show_progress=False)
    assert isinstance(fast, ModelItself)


def test_a_model_drawing_random_numbers_is_checked_from_one_generator_state() -> None:
    class Noisy(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + torch.rand_like(x)

    model, x = Noisy().eval(), torch.randn(3, 4)
    rng = torch.random.get_rng_state()
    fast = wb.accelerate(model, x, policy="nnc", show_progress=False)
    assert isinstance(fast, ScheduledModule)
    assert torch.equal(torch.random.get_rng_state(), rng)  # the caller's generator untouched
    torch.manual_seed(3)
    got = _call(fast, Call((x,)))
    torch.manual_seed(3)
    _same(got, _call(model, Call((x,))))


def test_optional_arguments_left_out_or_added_run_the_model_itself_with_one_line() -> None:
    model = _model("keywords")
    ids, mask = _tokens(2, 5, 0), _padding(2, 5)
    with_mask = wb.accelerate(model, args=(ids,), kwargs={"attention_mask": mask},
                              policy="nnc", show_progress=False)
    without = wb.accelerate(model, ids, policy="nnc", show_progress=False)
    assert isinstance(with_mask, ScheduledModule) and isinstance(without, ScheduledModule)
    with pytest.warns(UserWarning, match="attention_mask left out, which the example gave; "
                                         "running the model itself") as said:
        _same(_call(with_mask, Call((ids,))), _call(model, Call((ids,))))
        _same(_call(with_mask, Call((ids,))), _call(model, Call((ids,))))
    assert len(said) == 1  # one line, the first time
    with pytest.warns(UserWarning, match="attention_mask given, which the example left out"):
        _same(_call(without, Call((ids, mask))), _call(model, Call((ids, mask))))


def test_giving_the_example_twice_is_one_line() -> None:
    model, x = _model("dict_out"), torch.randn(2, 4, 8)
    with pytest.raises(wb.OptionError, match=r"given twice \(example_inputs and args=\)"):
        wb.accelerate(model, x, args=(x,), policy="nnc")
    with pytest.raises(wb.OptionError, match="no example inputs"):
        wb.accelerate(model, policy="nnc")


def test_specialisations_are_bounded_least_recently_used_first() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()
    fast = wb.accelerate(model, torch.randn(1, 4), policy="serial", show_progress=False)
    batches = range(2, 3 + MAX_SPECIALISATIONS)
    for b in batches:
        x = torch.randn(b, 4)
        _same(_call(fast, Call((x,))), _call(model, Call((x,))))
    built = fast.specialisations.built
    assert len(built) == MAX_SPECIALISATIONS
    assert [key[0][0][0] for key in built] == list(batches)[1:]  # batch 2 was dropped
    assert all(isinstance(m, ScheduledModule) for m in built.values())


def test_grad_mode_keeps_autograd_through_accelerate_and_the_backend() -> None:
    model = _model("llama")
    call = CASES["llama"].inputs(2, 6, 0)
    fast = wb.accelerate(model, args=call.args, kwargs=call.kwargs, policy="nnc",
                         show_progress=False)
    assert isinstance(fast, ScheduledModule)
    with pytest.warns(UserWarning, match="grad mode is on.*autograd records the call"):
        out = fast(*call.args, **call.kwargs)
    assert out.grad_fn is not None
    out.sum().backward()
    assert model.head.weight.grad is not None and model.embed.weight.grad is not None
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="workbench", options={"policy": "nnc"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = compiled(*call.args, **call.kwargs)
    assert out.grad_fn is not None
    model.zero_grad()
    out.sum().backward()
    assert model.head.weight.grad is not None
    torch._dynamo.reset()


# ------------------------------------------------------------------------------ the backend
def _spy_backend(made: list[CompiledGraph]) -> Callable[..., Any]:
    def spy(gm: Any, inputs: list[Any], **kw: Any) -> Any:
        made.append(workbench_backend(gm, inputs, **kw))
        return made[-1]

    return spy


@pytest.mark.parametrize("name", list(CASES))
def test_the_backend_takes_three_lengths_and_two_batches_under_a_schedule(name: str) -> None:
    model = _model(name)
    twin = copy.deepcopy(model)
    made: list[CompiledGraph] = []
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=_spy_backend(made), options={"policy": "nnc"})
    with _no_fallback_lines() as lines, torch._dynamo.config.patch(allow_rnn=True):
        # allow_rnn: dynamo captures nn.LSTM / nn.GRU instead of running them itself
        for batch in (1, 2):
            for seq in (5, 8, 11):
                call = CASES[name].inputs(batch, seq, seq)
                mine, theirs = _copy(call), _copy(call)
                _same(_call(compiled, mine), _call(twin, theirs))
                for x, y in zip(tree_leaves((mine.args, mine.kwargs)),
                                tree_leaves((theirs.args, theirs.kwargs)), strict=True):
                    assert torch.equal(x, y)
    assert lines == []  # no fallback: every signature ran a schedule
    built = [m for g in made for m in g.built.built.values()]
    assert len(built) >= 6
    assert all(type(getattr(m, "__self__", None)).__name__ == "ScheduledModule" for m in built)
    for (key, a), (_, b) in zip(model.named_buffers(), twin.named_buffers(), strict=True):
        assert torch.equal(a, b), key
    torch._dynamo.reset()


@pytest.mark.parametrize("name", ["llama", "keywords", "step_counter"])
def test_the_backend_with_auto_on_the_cpu_runs_the_captured_graph_and_says_so_once(
        name: str) -> None:
    model = _model(name)
    twin = copy.deepcopy(model)
    made: list[CompiledGraph] = []
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=_spy_backend(made))  # the default options: auto
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for batch in (1, 2):
            for seq in (5, 8, 11):
                call = CASES[name].inputs(batch, seq, seq)
                _same(_call(compiled, _copy(call)), _call(twin, _copy(call)))
    lines = [str(w.message) for w in said if str(w.filename) == "workbench.compile"]
    assert all("on the CPU every schedule" in line for line in lines)
    assert len(lines) == len(made) >= 1  # once per compiled function
    assert all(g.built.built and all(f is g.gm for f in g.built.built.values()) for g in made)
    torch._dynamo.reset()


def test_the_backend_on_a_training_model_runs_it_as_captured_with_its_state() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 2))
    twin = copy.deepcopy(model)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="workbench", options={"policy": "nnc"})
    for batch in (4, 6, 8):
        x = torch.randn(batch, 4)
        torch.manual_seed(batch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = compiled(x)
        torch.manual_seed(batch)
        assert torch.allclose(got, twin(x), atol=1e-6)
    for key, value in model.state_dict().items():
        assert torch.equal(value, twin.state_dict()[key]), key  # one update per call, as eager
    torch._dynamo.reset()


def test_the_backend_registers_in_either_import_order_without_an_install() -> None:
    for order in ("import workbench; import torch", "import torch; import workbench"):
        code = ("import importlib.metadata as md\n"
                "md.entry_points = lambda **kw: md.EntryPoints([])  # as if not pip-installed\n"
                f"{order}\n"
                "import torch._dynamo\n"
                "print('workbench' in torch._dynamo.list_backends(exclude_tags=()))\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.split()
        assert out == ["True"], order


# ------------------------------------------------------------------------------ outputs compared
def test_outputs_compare_by_what_they_hold_whatever_their_containers() -> None:
    from torch.fx.immutable_collections import immutable_dict, immutable_list

    from workbench.executors.torch_exec.check import compare_results

    class ModelOutput(OrderedDict):  # Hugging Face's kind: an OrderedDict of its fields
        pass

    t, u = torch.randn(2, 3), torch.randn(3)
    pairs = [(immutable_dict({"a": t, "b": (u, u)}), {"a": t, "b": (u, u)}),
             (TinyOutput(t, t), TinyOutput(t.clone(), t.clone())),
             (ModelOutput(logits=t), {"logits": t}),
             (immutable_list([t, (u, [u])]), (t, (u, [u])))]
    for got, want in pairs:
        assert compare_results(got, want, tolerance=0.0, what="x")["max_rel_diff"] == 0.0
    with pytest.raises(wb.ScheduleError, match="returns 2 leaves"):
        compare_results({"a": t, "b": t}, {"a": t, "c": t}, tolerance=0.0, what="x")
    nan = torch.tensor([1.0, math.nan])
    assert compare_results(nan, nan.clone(), tolerance=0.0, what="x")["max_rel_diff"] == 0.0


def test_a_dict_output_traced_by_fx_is_returned_as_a_dict() -> None:
    model, x = _model("dict_out"), torch.randn(2, 4, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = wb.io.from_torch(model, x, tracer="fx")
    fast = acc.accelerate_graph(graph, model, (x,), policy="nnc", show_progress=False)
    assert isinstance(fast, ScheduledModule)
    got = _call(fast, Call((x,)))
    assert type(got) is dict
    _same(got, _call(model, Call((x,))))


def test_devices_compare_by_index_and_the_model_is_not_copied() -> None:
    from workbench.io.torch.program import same_device

    assert same_device("cuda", "cuda:0") and same_device(torch.device("cpu"), "cpu:0")
    assert not same_device("cuda:0", "cuda:1") and not same_device("cpu", "cuda")
    model, x = _model("dict_out"), torch.randn(2, 4, 8)
    program = wb.io.from_torch(model, x).program
    assert program.module_on("cpu:0") is program.gm
    assert program.reference_module("cpu:0") is model


# ------------------------------------------------------------------------------ time, budgets
@pytest.mark.parametrize("name", [*(f"zoo:{n}" for n in ZOO), *(f"any:{n}" for n in ANY)])
def test_auto_on_the_cpu_decides_in_seconds_without_measuring(name: str) -> None:
    family, key = name.split(":")
    if family == "zoo":
        model, example = ZOO[key]()
        given: dict[str, Any] = {"example_inputs": example}
    else:  # keyword inputs and optional arguments included
        model, call = _model(key), CASES[key].inputs(2, 6, 0)
        given = {"args": call.args, "kwargs": call.kwargs}
    t0 = time.perf_counter()
    fast = wb.accelerate(model, **given)
    assert time.perf_counter() - t0 < 5.0 * machine_slowdown()
    assert isinstance(fast, ModelItself) and fast.comparison is None
    assert fast.reason == acc.CPU_DECISION and "nothing measured" in fast.reason


def test_measuring_states_its_budget_in_one_line(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_PROGRESS", "1")
    model, example = ZOO["resnet"]()
    fast = wb.accelerate(model, example, policies=["serial"], repeats=2, warmup=0, budget_s=5)
    err = capsys.readouterr().err
    assert ("accelerate ResNetTiny: measuring 1 policy × 3 rounds on cpu (1 timed run per "
            "policy and round) and the model itself before and after them (2 timed runs each "
            "time); budget 5 s per stage, 4 stages") in err
    assert "[1/1] serial: started" in err  # compare's lines, one per policy
    assert fast.comparison is not None and fast.reason.startswith(
        fast.comparison.settings["decision"])


def test_the_budget_bounds_the_torch_runs_and_the_row_says_so() -> None:
    model, example = ZOO["resnet"]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = wb.io.from_torch(model, example)
    t0 = time.perf_counter()
    cmp = wb.compare(graph, ["serial"], executor="torch", budget_s=1.0, planner=None,
                     optimum_max_ops=0, memory_budget_bytes=None, show_progress=False,
                     executor_options={"device": "cpu", "repeats": 3000, "warmup": 1})
    assert time.perf_counter() - t0 < 15.0 * machine_slowdown()
    (status,) = list(cmp.table["status"])
    assert status.startswith("ok (budget 1 s: ") and status.endswith(" of 3000 timed runs)")
    timed = len(cmp.traces["serial"].meta["makespans_us"])
    assert 1 <= timed < 3000 and f": {timed} of 3000" in status


def test_the_model_s_timing_keeps_to_its_budget() -> None:
    from workbench.executors.torch_exec.baseline import time_model

    model, example = ZOO["resnet"]()
    t0 = time.perf_counter()
    timed = time_model(model, example, device="cpu", warmup=0, repeats=10**6, budget_s=0.3)
    assert time.perf_counter() - t0 < 5.0 * machine_slowdown()
    assert 1 <= timed["timed_runs"] < 10**6 and "the budget was spent" in timed["how"]


# ------------------------------------------------------------------------------ CUDA, faked
@pytest.fixture
def strict(monkeypatch: pytest.MonkeyPatch) -> StrictCuda:
    """The torch executor on the strict fake (asynchronous streams, the caching allocator,
    capture rules, replays that recompute from the static inputs; tests/fake_cuda.py), the
    model's CPU tensors standing for the GPU's."""
    return on_the_runner(monkeypatch, StrictCuda())


def test_when_no_schedule_beats_the_model_s_cuda_graph_that_graph_is_returned(
        strict: StrictCuda, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acc, "device_api", lambda device: ("cuda", strict))
    model, example = ZOO["resnet"]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = wb.io.from_torch(model, example)  # traced outside the fake's dispatch mode
    with strict.running():
        fast = acc.accelerate_graph(graph, model, example, policies=["serial", "nnc"],
                                    repeats=3, warmup=1, budget_s=30, show_progress=False)
        assert isinstance(fast, ScheduledModule), getattr(fast, "reason", "")
        assert fast.policy == "serial" and fast.mode == "graph"
        assert len(fast._streams.streams) == 1  # the model's ops on one stream, captured
        assert "running the model's own CUDA graph" in str(fast.reason)
        assert fast.comparison.settings["model_itself"]["captured"]
        x = torch.randn_like(example[0])
        with torch.no_grad():
            got = fast(x) * 1
        strict.synchronize()
    assert strict.errors == []
    with torch.no_grad():
        assert torch.equal(got, model(x))


def test_in_graph_mode_what_the_model_writes_in_its_inputs_reaches_the_caller(
        strict: StrictCuda) -> None:
    model, x = _model("mutates_input"), torch.randn(2, 3, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = wb.io.from_torch(model, x)
    twin, y = copy.deepcopy(model), x.clone()
    with strict.running():
        fast = ScheduledModule(model, wb.schedule(graph, "nnc"), (x,), device="cpu",
                               mode="graph", cuda=strict)
        with torch.no_grad():
            got = fast(x) * 1
        strict.synchronize()
    assert strict.errors == []
    with torch.no_grad():
        want = twin(y)
    assert torch.allclose(got, want, atol=1e-6) and torch.equal(x, y)  # x was written, as y


class RefusingEvent(FakeEvent):
    def record(self, stream: Any = None) -> None:
        if self.cuda.capturing:
            raise ValueError("event record refused during this capture")
        super().record(stream)


class RefusingCapture(FakeCuda):
    """Refuses event records inside a capture (a ValueError); ``ends_badly``: ending the capture
    that failed then raises an error of its own, as ``capture_end`` does."""

    ends_badly = False

    def Event(self, enable_timing: bool = False, external: bool = False) -> FakeEvent:  # noqa: N802
        e = RefusingEvent(self, len(self.events), enable_timing, external)
        self.events.append(e)
        return e

    @contextmanager
    def graph(self, cuda_graph: FakeGraph, stream: Any = None) -> Iterator[None]:
        failed = False
        try:
            with super().graph(cuda_graph, stream):
                yield
        except BaseException:
            failed = True
            raise
        finally:
            if failed and self.ends_badly:
                raise RuntimeError("operation failed due to a previous error during capture")


@pytest.mark.parametrize("ends_badly", [False, True])
def test_any_error_during_capture_falls_back_with_the_capture_s_own_error(
        monkeypatch: pytest.MonkeyPatch, ends_badly: bool) -> None:
    cuda = RefusingCapture()
    cuda.ends_badly = ends_badly
    monkeypatch.setattr(acc, "device_api", lambda device: ("cuda", cuda))
    model, example = ZOO["inception"]()
    with pytest.warns(UserWarning, match=r"nnc on InceptionTiny: event record refused during "
                                         r"this capture; running the model itself$"):
        fast = wb.accelerate(model, example, policy="nnc", show_progress=False)
    assert isinstance(fast, ModelItself)
    with torch.no_grad():
        assert torch.equal(fast(*example), model(*example))
