"""Real models with their own weights on a real CUDA GPU (marker ``torch_gpu``: skipped cleanly
without one).

What the CPU and the fake ``torch.cuda`` cannot show: the model's own calls issued on several
CUDA streams and captured as one multi-stream CUDA graph compute ``model(x)`` (TF32 off: within
1e-4 of the largest output), for the example and for new inputs copied into the captured
graph's static inputs; tensors freed after their last reader and read on other streams are not
reused under those readers (a race would change the outputs over many replays); and
``torch.compile(backend="workbench")`` gives the same.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import workbench as wb

pytestmark = pytest.mark.torch_gpu

torch = pytest.importorskip("torch")

from tests.model_zoo import ZOO, new_inputs  # noqa: E402


def _on_gpu(name: str) -> tuple[Any, tuple[Any, ...]]:
    model, example = ZOO[name]()
    return model.cuda(), tuple(x.cuda() for x in example)


def _close(got: Any, want: Any, tolerance: float = 1e-4) -> None:
    from torch.utils._pytree import tree_leaves

    for a, b in zip(tree_leaves(got), tree_leaves(want), strict=True):
        assert float((a - b).abs().max()) <= tolerance * float(b.abs().max())


@pytest.mark.parametrize("name", ["inception", "bert", "gpt2", "resnet", "vit"])
@pytest.mark.parametrize("mode", ["graph", "eager"])
def test_accelerated_model_on_streams_computes_the_model(name: str, mode: str) -> None:
    model, example = _on_gpu(name)
    fast = wb.accelerate(model, example, policy="nnc", mode=mode, precision="fp32")
    assert type(fast).__name__ == "ScheduledModule" and fast.mode == mode
    with torch.no_grad():
        from workbench.executors.torch_exec.runner import precision_flags

        with precision_flags("fp32"):
            for k in range(20):  # many replays: a reuse race would show as a wrong value
                inputs = new_inputs(tuple(x.cpu() for x in example), seed=k)
                inputs = tuple(x.cuda() for x in inputs)
                _close(fast(*inputs), model(*inputs))


def test_the_executor_runs_the_model_on_its_schedule_streams_verified() -> None:
    model, example = _on_gpu("inception")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = wb.io.from_torch(model, example)
    sched = wb.schedule(graph, "nnc")
    assert sched.n_streams > 1
    for mode in ("eager", "graph"):
        trace = wb.execute(sched, executor="torch", mode=mode, precision="fp32", repeats=5,
                           verify=True, inputs=example)
        assert trace.meta["verified"] and trace.meta["max_rel_diff"] <= 1e-4
        assert trace.meta["device_info"]["type"] == "cuda"


def test_accelerate_auto_measures_on_the_gpu() -> None:
    model, example = _on_gpu("inception")
    fast = wb.accelerate(model, example, policies=["serial", "nnc"], repeats=10)
    itself = fast.comparison.settings["model_itself"]
    assert "CUDA graph" in itself["how"]
    with torch.no_grad():
        _close(fast(*example), model(*example), 1e-3)


def test_torch_compile_backend_on_the_gpu() -> None:
    model, example = _on_gpu("bert")
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="workbench", options={"policy": "nnc",
                                                                  "precision": "fp32"})
    with torch.no_grad():
        from workbench.executors.torch_exec.runner import precision_flags

        with precision_flags("fp32"):
            _close(compiled(*example), model(*example))
    torch._dynamo.reset()
