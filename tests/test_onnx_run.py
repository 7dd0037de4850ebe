"""ONNX graphs run too, with their initializers as weights; imported graphs run from JSON.

* Every model of ``tests/model_zoo.py`` exported with the legacy TorchScript exporter (opset 17,
  ``dynamo=False``: it keeps the ``Shape``/``Gather`` arithmetic, the harder case), loaded with
  ``wb.load`` and executed with the torch executor under every registered policy, returns what
  the model returns on new inputs (``max |diff| / max |y| <= 1e-4`` per output): the graph's
  program (:class:`~workbench.values.program.Weights`) holds the initializers and the folded
  constants, and every op runs as its kind's torch form reading the op vocabulary.
* A ``from_torch`` graph saved as JSON and loaded back (no program) runs with random weights
  (``meta["weights"]`` says so), and, fed the model's own parameters and inputs by tensor id,
  computes the model: the torch forms read the vocabulary ``from_torch`` wrote.

The oracle is the PyTorch model itself.  About 30 s on two CPU cores.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench.schedulers import TEST_OPTIONS

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from tests.model_zoo import ZOO, new_inputs  # noqa: E402 - needs torch

TOLERANCE = 1e-4


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else (value,)


def _rel_errors(got: Any, want: Any) -> list[float]:
    """``max |diff| / max |y|`` per output (shapes must agree)."""
    out = []
    for g, w in zip(_as_tuple(got), _as_tuple(want), strict=True):
        g = np.asarray(g.detach() if hasattr(g, "detach") else g, dtype=np.float64)
        w = np.asarray(w.detach(), dtype=np.float64)
        assert g.shape == w.shape
        out.append(float(np.abs(g - w).max() / max(np.abs(w).max(), 1e-30)))
    return out


def _export(name: str, path: Path) -> tuple[Any, tuple[Any, ...]]:
    model, example = ZOO[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, str(path), opset_version=17, dynamo=False)
    return model, example


@pytest.mark.parametrize("name", sorted(ZOO))
def test_onnx_export_runs_under_every_policy(name: str, tmp_path: Path) -> None:
    model, example = _export(name, tmp_path / f"{name}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # default-cost notes of the legacy exporter's ops
        g = wb.load(tmp_path / f"{name}.onnx")
    assert g.program is not None and g.program.source == "onnx"
    inputs = new_inputs(example)
    with torch.no_grad():
        want = model(*inputs)
    worst = 0.0
    for policy in wb.policies():
        s = wb.schedule(g, policy, **TEST_OPTIONS.get(policy, {}))
        trace = wb.execute(s, executor="torch", device="cpu", repeats=1, warmup=0,
                           inputs=inputs, return_outputs=True)
        errors = _rel_errors(trace.meta["outputs"], want)
        assert max(errors) <= TOLERANCE, (policy, errors)
        worst = max(worst, *errors)
        assert trace.meta["weights"].startswith("the model's own (onnx")
    print(f"{name}: max relative error {worst:.2e}")


def test_onnx_weights_hold_only_what_ops_read(tmp_path: Path) -> None:
    """The program holds each initializer an op reads (not the ones only folded nodes read,
    e.g. the source of an ``Identity``), converted once into writable arrays, and the folded
    constants (shape arithmetic) ops read; inputs and outputs in file order."""
    import onnx

    _export("bert", tmp_path / "bert.onnx")
    model = onnx.load(str(tmp_path / "bert.onnx"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # default-cost notes of the legacy exporter's ops
        g = wb.load(tmp_path / "bert.onnx")
    program = g.program
    assert program is not None
    values = program.parameters()
    read = {t for op in g.ops for t in op.inputs}
    assert set(values) <= read | set(g.outputs)
    params = {t.id for t in g.tensors.values() if t.role == "parameter"} & read
    assert params <= set(values), params - set(values)
    assert all(v.flags.writeable for v in values.values())
    inits = {i.name for i in model.graph.initializer}
    assert program.input_names == tuple(i.name for i in model.graph.input
                                        if i.name not in inits)
    assert program.output_names == tuple(o.name for o in model.graph.output)
    assert any(v.dtype == np.int64 for v in values.values())  # folded shape constants


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory
          ) -> dict[str, tuple[Any, Any, Path, dict[str, Any]]]:
    """Every zoo model's from_torch graph saved as JSON: name -> (model, example, path, the
    traced program's weights by tensor id: parameters, buffers and the constants torch.export
    lifted, such as Swin's attention masks)."""
    from workbench.io import from_torch

    root = tmp_path_factory.mktemp("json")
    out = {}
    for name in sorted(ZOO):
        model, example = ZOO[name]()
        path = root / f"{name}.json"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "the program is not saved"
            graph = from_torch(model, example)
            wb.save(graph, path)
        out[name] = (model, example, path, dict(graph.program.parameters()))
    return out


@pytest.mark.parametrize("name", sorted(ZOO))
def test_from_torch_json_round_trip_runs_the_torch_forms(
        name: str, saved: dict[str, tuple[Any, Any, Path, dict[str, Any]]]) -> None:
    model, example, path, state = saved[name]
    g = wb.load(path)
    assert g.program is None
    s = wb.schedule(g, "serial")
    stale = [op.id for op in g.ops if op.attrs.get("program_only")]
    if stale:  # Swin's masks: written in place through slices, then read by another name
        with pytest.warns(UserWarning, match="need the model's own program"):
            random = wb.execute(s, executor="torch", device="cpu", repeats=1, warmup=0)
        assert random.meta["program_only"] == stale
        return
    random = wb.execute(s, executor="torch", device="cpu", repeats=1, warmup=0)
    assert random.meta["weights"].startswith("random")
    # fed the model's own weights and new inputs by tensor id, the forms compute the model
    free = [t for t in g.tensors.values() if t.producer is None]
    feed = {t.id: state[t.id].detach() for t in free if t.role == "parameter"}
    inputs = new_inputs(example)
    feed.update(zip([t.id for t in free if t.role == "input"], inputs, strict=True))
    trace = wb.execute(wb.schedule(g, "wavefront"), executor="torch", device="cpu",
                       repeats=1, warmup=0, inputs=feed, return_outputs=True)
    with torch.no_grad():
        want = model(*inputs)
    got = tuple(trace.meta["outputs"][t] for t in g.outputs)
    assert max(_rel_errors(got, want)) <= TOLERANCE
