"""One storage rule for importers, planners and executors (issue 41 item 1): views, ``getitem`` of
container outputs and in-place writes share their input's storage
(:mod:`workbench.values.storage`), the memory stage plans one block per storage, and a comparison
of LSTM, GRU, attention and LLM graphs finishes with every policy's memory planned.

The oracle is torch itself: every alias the rule claims is checked against the storages the
traced program really returns when it runs (:func:`_real_storages`)."""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from tests.model_zoo import ZOO  # noqa: E402
from tests.model_zoo_any import ANY  # noqa: E402
from workbench.errors import OptionError  # noqa: E402
from workbench.memory import check_no_overlap, pool_events, replay_pool  # noqa: E402
from workbench.values.graph import Graph, Op, Tensor  # noqa: E402
from workbench.values.storage import input_shapes, storage_roots  # noqa: E402

#: Models whose comparison must plan memory for every policy: the new architectures and the
#: earlier real-model set (ShuffleNet, Swin, ViT and GPT-2 died in the memory stage or in the
#: view-dropping before this rule).
MODELS = [*(f"any:{n}" for n in ANY), *(f"zoo:{n}" for n in ZOO)]


def positional(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``args`` and ``kwargs`` as the positional arguments of ``model.forward`` (defaults
    included, trailing ``None`` dropped)."""
    bound = inspect.signature(model.forward).bind(*args, **kwargs)
    bound.apply_defaults()
    values = list(bound.arguments.values())
    while values and values[-1] is None:
        values.pop()
    return tuple(values)


@functools.cache
def imported(name: str) -> tuple[Any, tuple[Any, ...], Graph]:
    family, key = name.split(":")
    if family == "any":
        entry = ANY[key]
        model = entry.build()
        args, kwargs = entry.inputs(2, entry.lengths[1], 0)
        example = positional(model, args, kwargs)
    else:
        model, example = ZOO[key]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # default-cost notes
        return model, example, wb.io.from_torch(model, example)


def _storages(value: Any) -> set[int]:
    from torch.utils._pytree import tree_leaves

    return {t.untyped_storage().data_ptr() for t in tree_leaves(value)
            if isinstance(t, torch.Tensor) and t.untyped_storage().nbytes()}


def _real_storages(graph: Graph, example: tuple[Any, ...]) -> dict[str, set[int]]:
    """Graph tensor id -> the storages its value really has when the traced program runs on
    ``example`` (torch.fx's Interpreter, node by node)."""
    program = graph.program
    by_node = {node: tid for tid, node in program.tensor_nodes.items()}
    found: dict[str, set[int]] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            value = super().run_node(n)
            if n.name in by_node:
                found[by_node[n.name]] = _storages(value)
            return value

    with torch.no_grad():
        Recorder(program.gm).run(*program.gm.graph._codegen.process_inputs(*example))
    return found


@pytest.mark.parametrize("name", MODELS)
def test_every_alias_the_importer_claims_is_one_torch_makes(name: str) -> None:
    """Soundness against torch: an output the importer says shares an input's storage
    (``storage_of``: views, ``getitem`` of LSTM/split outputs, in-place ReLU / ``masked_fill_``)
    really lives in that storage when the program runs; claiming an alias torch does not make
    would let the planners overlap two live tensors.  The no-task kinds (reshape, flatten, ...)
    alias by the graph compiler's rule (seed 004's ref nodes) whatever torch does."""
    from workbench.ops import NO_TASK_KINDS
    from workbench.values.storage import storage_input

    model, example, graph = imported(name)
    real = _real_storages(graph, example)
    checked = 0
    for op in graph.ops:
        shared = op.attrs.get("storage_of")
        if shared is None:
            assert storage_input(op) is None or op.kind in NO_TASK_KINDS, op.id
            continue
        out = op.outputs[0]
        if real.get(out) and shared in real:
            assert real[out] <= real[shared], (op.id, shared)
            checked += 1
    assert checked or not storage_roots(graph)


@pytest.mark.parametrize("name", MODELS)
def test_compare_plans_every_policy_s_memory_and_each_schedule_computes_the_model(
        name: str) -> None:
    model, example, graph = imported(name)
    cmp = wb.compare(graph, device="h100", show_progress=False)
    table = cmp.table
    assert set(table["policy"]) == set(wb.policies())
    assert not table["makespan_us"].isna().any()
    assert not table["arena_mib"].isna().any(), table[["policy", "status", "arena_mib"]]
    assert not table["pool_reserved_mib"].isna().any()
    assert not [n for n in cmp.settings.get("notes", []) if "memory" in n and "not made" in n]
    for plan in cmp.memory_plans.values():
        check_no_overlap(plan)
    with torch.no_grad():
        want = model(*example)
    for policy, sched in cmp.schedules.items():
        trace = wb.execute(sched, executor="torch", device="cpu", repeats=1, warmup=0,
                           inputs=example, verify=True, return_outputs=True)
        got = leaves(trace.meta["outputs"])
        for g, w in zip(got, leaves(want), strict=True):
            assert torch.allclose(g, w, rtol=1e-5, atol=1e-6), policy


def leaves(value: Any) -> list[Any]:
    """The tensors of a model's output, dataclasses (``ModelOutput``-like) included."""
    import dataclasses

    from torch.utils._pytree import tree_leaves

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) for t in leaves(getattr(value, f.name))]
    return [t for v in tree_leaves(value) for t in (
        leaves(v) if dataclasses.is_dataclass(v) else [v])]


def _chain(durations: dict[str, float]) -> Graph:
    """a -> v -> w -> b with the given durations (µs) and 1 KiB tensors."""
    ids = list(durations)
    ops = [Op(o, kind="relu", duration_us=durations[o],
              inputs=(f"{ids[i - 1]}:out",) if i else (), outputs=(f"{o}:out",))
           for i, o in enumerate(ids)]
    tensors = [Tensor(f"{o}:out", 1024, producer=o) for o in ids]
    return Graph(ops, tensors, outputs=[f"{ids[-1]}:out"])


def test_a_tensor_born_and_dead_at_one_instant_is_allocated_before_it_is_freed() -> None:
    """Zero-time producers and readers (the views an importer leaves, empty ops): the pool saw
    the tensor's free before its allocation ('free of unknown tensor')."""
    graph = _chain({"a": 2.0, "v": 0.0, "w": 0.0, "b": 3.0})
    trace = wb.simulate(wb.schedule(graph, "serial"), device="h100", mode="graph")
    events = pool_events(trace)
    for tid in ("v:out", "w:out"):
        kinds = [e[1] for e in events if e[2] == tid]
        assert kinds == ["alloc", "free"], (tid, events)
    replay_pool(trace)  # raised MemoryPlanError before


def test_a_depthwise_convolution_over_tokens_reshaped_to_an_image_survives_dropped_views(
        tmp_path: Any) -> None:
    """PVT/SegFormer's Mix-FFN: tokens (B, N, C) -> transpose -> reshape to (B, C, H, W) ->
    depthwise conv.  With the reshape dropped the conv reads the transpose's (B, C, N) tensor;
    its checks and cost rule must read the image shape the program has (``view_shapes``)."""
    from workbench.passes.no_task import drop_no_task_ops

    _, _, graph = imported("any:pvt")
    dropped = drop_no_task_ops(graph)
    (dw,) = [o for o in dropped.ops if o.kind == "conv2d" and o.attrs.get("groups", 1) > 1]
    shape = input_shapes(dw, dropped.tensors)[0]
    assert len(shape) == 4 and shape[1] == dw.attrs["groups"], shape
    assert len(dropped.tensor(dw.inputs[0]).shape) == 3  # what it would have read
    path = tmp_path / "pvt.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the program is not saved
        wb.save(dropped, path)
    again = wb.load(path)  # view_shapes' keys come back as strings
    assert input_shapes(again.op(dw.id), again.tensors)[0] == shape
    a = wb.simulate(wb.schedule(dropped, "serial"), device="h100").makespan
    b = wb.simulate(wb.schedule(again, "serial"), device="h100").makespan
    assert a == pytest.approx(b)


def test_the_importer_names_the_input_a_view_or_in_place_write_shares() -> None:
    class Net(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(x @ x.transpose(0, 1))
            z = y.transpose(0, 1)
            z.add_(1.0)
            return z.sum(0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = wb.io.from_torch(Net(), (torch.randn(4, 4),))
    kinds = {o.kind: o for o in graph.ops}
    roots = storage_roots(graph)
    relu = kinds["relu"].outputs[0]
    add = kinds["add"]
    assert add.attrs["storage_of"] in {o.outputs[0] for o in graph.ops if o.kind == "transpose"}
    assert roots[add.outputs[0]] == relu  # in-place add of a transpose of relu's output
    plan = wb.plan_memory(wb.schedule(graph, "serial"), "somas")
    names = {r.name for r in plan.records}
    assert relu in names and add.outputs[0] not in names


def test_the_cupy_layout_refuses_a_strided_view_it_would_overwrite() -> None:
    from workbench.executors.gpu.launch_plan import build_launch_plan

    class Net(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(torch.relu(x).transpose(0, 1))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = wb.io.from_torch(Net(), (torch.randn(4, 8),))
    with pytest.raises(OptionError, match="view of .* executor='torch'") as info:
        build_launch_plan(wb.schedule(graph, "serial"))
    assert "\n" not in str(info.value)


def test_a_plan_the_memory_stage_refuses_marks_that_row_and_names_the_tensor(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a planner still cannot follow a lifetime, the comparison finishes: that policy's row
    keeps its makespan, says ``failed in memory: ...``, its memory cells are empty, and one note
    names the tensor and the policy; the other policies are planned as before."""
    from workbench import memory
    from workbench.errors import MemoryPlanError

    real_plan = memory.plan_memory

    def refusing(schedule: Any, *args: Any, **kwargs: Any) -> Any:
        if schedule.policy == "nnc":
            raise MemoryPlanError("event 3: free of unknown tensor 'transpose_2:out'")
        return real_plan(schedule, *args, **kwargs)

    monkeypatch.setattr(memory, "plan_memory", refusing)  # the workers are forked: they see it
    _, _, graph = imported("any:mha")
    cmp = wb.compare(graph, ["nnc", "wavefront"], device="h100", show_progress=False)
    rows = cmp.table.set_index("policy")
    why = "event 3: free of unknown tensor 'transpose_2:out'"
    assert rows.loc["nnc", "status"] == f"failed in memory: {why}"
    assert rows.loc["nnc", "makespan_us"] > 0 and math.isnan(rows.loc["nnc", "arena_mib"])
    assert rows.loc["wavefront", "status"] == "ok" and rows.loc["wavefront", "arena_mib"] > 0
    assert [n for n in cmp.settings["notes"] if "not made" in n] == [
        f"memory plan not made: {why} (nnc)"]
