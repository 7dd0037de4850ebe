"""The torch executor on the CPU: every policy's outputs equal the serial run's, bit for bit, on
the IOS networks and a transformer block; the Trace it returns; bad input in one line.

The networks are small (Inception V3 at 75x75, the minimum; SqueezeNet, RandWire and NASNet-A at
32x32; a 16-token block) and torch runs on one thread, so the policy matrix takes seconds.  On a
CPU every op runs alone in issue order, so these tests check the op mapping, the issue order and
the state of parameters; the stream machinery is in ``test_torch_cuda_fake.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench.errors import DeviceUnavailable, OptionError, ScheduleError
from workbench.executors.execute import reference_outputs
from workbench.executors.execute import run_outputs as outputs_by
from workbench.executors.reference import draw_inputs
from workbench.executors.torch_exec import run, run_outputs
from workbench.executors.torch_exec import runner as torch_runner
from workbench.passes import add_side_effect_edges, fuse_elementwise
from workbench.schedulers import POLICIES, TEST_OPTIONS

torch = pytest.importorskip("torch")

NETWORKS: dict[str, dict[str, Any]] = {
    "inception_v3": {"resolution": 75},
    "squeezenet": {"resolution": 32},
    "randwire": {"resolution": 32},
    "nasnet_a_large": {"resolution": 32},
    "transformer_block": {"seq_len": 16, "d_model": 32, "heads": 2, "d_ff": 64},
}


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    """One torch thread: the CI machine is shared, and two threads that wait on each other are
    ten times slower there than one."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@functools.cache
def _network(name: str) -> tuple[wb.Graph, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The graph, its inputs (drawn once: NASNet's weights take seconds) and its serial outputs."""
    graph = wb.models.build(name, **NETWORKS[name])
    inputs = draw_inputs(graph, 0)
    serial = run_outputs(wb.schedule(graph, "serial"), inputs=inputs, device="cpu")
    return graph, inputs, serial


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize("policy", POLICIES.names())
@pytest.mark.parametrize("network", list(NETWORKS))
def test_every_policy_gives_the_serial_outputs_bit_for_bit(network: str, policy: str) -> None:
    graph, inputs, serial = _network(network)
    sched = wb.schedule(graph, policy, **TEST_OPTIONS.get(policy, {}))
    got = run_outputs(sched, inputs=inputs, device="cpu")
    assert sorted(got) == sorted(serial) == sorted(graph.outputs)
    for t, want in serial.items():
        assert np.isfinite(want).all(), t
        assert _bits(got[t]) == _bits(want), f"{policy} on {network}: {t} differs"


def test_outputs_are_the_numpy_reference_on_a_network() -> None:
    graph, inputs, serial = _network("squeezenet")
    ref = reference_outputs(wb.schedule(graph, "serial"), inputs=inputs)
    for t in serial:
        np.testing.assert_allclose(serial[t], ref[t], rtol=1e-4, atol=1e-4)


def test_the_trace_has_one_row_per_op_in_issue_order_with_its_stream() -> None:
    graph, inputs, _ = _network("inception_v3")
    sched = wb.schedule(graph, "nnc")
    trace = run(sched, device="cpu", inputs=inputs, warmup=1, repeats=3)
    df = trace.df
    assert list(df["op"]) == list(sched.issue_order)
    assert list(df["stream"]) == [sched.stream_of(o) for o in sched.issue_order]
    assert (df["end_us"] >= df["start_us"]).all() and (df["start_us"] >= 0).all()
    assert (df["start_us"].diff().dropna() >= 0).all()  # the CPU runs them in issue order
    assert trace.violations() == []
    meta = trace.meta
    assert meta["executor"] == "torch" and meta["mode"] == "eager" and meta["repeats"] == 3
    assert len(meta["makespans_us"]) == 3
    assert meta["makespan_q1_us"] <= meta["makespan_median_us"] <= meta["makespan_q3_us"]
    assert trace.makespan in meta["makespans_us"]  # the rows are a real run's, the lower median
    assert meta["device_info"]["type"] == "cpu" and meta["device_info"]["torch"]
    assert meta["torch_device"] == "cpu" and meta["live_bytes"] > 0
    assert df["compute_us"].isna().all()  # no device spec on the CPU
    assert trace.metrics()["makespan_us"] == trace.makespan


def test_a_cost_model_device_fills_the_model_columns() -> None:
    graph, inputs, _ = _network("squeezenet")
    trace = wb.execute(wb.schedule(graph, "nnc"), executor="torch", device="h100",
                       inputs=inputs, warmup=0, repeats=1)
    assert trace.meta["simulated_device"] == "h100"
    assert trace.df["compute_us"].notna().all() and trace.df["compute_us"].sum() > 0
    assert trace.metrics()["utilisation"] > 0


def test_graph_mode_on_the_cpu_runs_eager_and_says_so() -> None:
    sched = wb.schedule(_network("transformer_block")[0], "nnc")
    trace = run(sched, mode="graph", device="cpu", warmup=0, repeats=1)
    assert trace.mode == "eager" and trace.meta["requested_mode"] == "graph"
    assert "no CUDA graphs" in trace.meta["mode_note"]


def test_verify_passes_and_a_differing_output_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    graph, inputs, serial = _network("transformer_block")
    sched = wb.schedule(graph, "asap")
    assert run(sched, device="cpu", inputs=inputs, warmup=0, repeats=1, verify=True
               ).meta["verified"]
    name = graph.outputs[0]
    real = torch_runner.run_outputs

    def off_by_one_ulp(schedule: Any, **kw: Any) -> dict[str, np.ndarray]:
        out = real(schedule, **kw)
        out[name] = np.nextafter(out[name], np.inf).astype(np.float32)
        return out

    monkeypatch.setattr(torch_runner, "run_outputs", off_by_one_ulp)
    with pytest.raises(ScheduleError, match=f"output '{name}' differs from the serial") as err:
        run(sched, device="cpu", inputs=inputs, warmup=0, repeats=1, verify=True)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("precision", ["tf32", "fp16", "bf16"])
def test_precisions_run_and_restore_the_tf32_flags(precision: str) -> None:
    graph, inputs, serial = _network("transformer_block")
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    trace = run(wb.schedule(graph, "nnc"), precision=precision, device="cpu", inputs=inputs,
                warmup=0, repeats=1, verify=True, return_outputs=True)
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before
    assert trace.meta["precision"] == precision
    assert trace.meta["dtype"] == {"tf32": "float32", "fp16": "float16",
                                   "bf16": "bfloat16"}[precision]
    for t, value in trace.meta["outputs"].items():
        assert value.dtype == np.float32
        np.testing.assert_allclose(value, serial[t], rtol=0.1, atol=0.1)


def test_state_and_fused_ops_follow_the_reference() -> None:
    for graph in (add_side_effect_edges(wb.models.textbook_side_effects()),
                  fuse_elementwise(_network("transformer_block")[0])):
        sched = wb.schedule(graph, "nnc")
        inputs = draw_inputs(graph, 3)
        want = outputs_by(sched, runner="reference", inputs=inputs)
        got = outputs_by(sched, runner="torch", inputs=inputs, device="cpu")
        for t in want:
            np.testing.assert_allclose(got[t], want[t], rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("options, error, pattern", [
    ({"precision": "fp8"}, OptionError, "unknown precision 'fp8'"),
    ({"mode": "graphs"}, OptionError, "unknown mode 'graphs'"),
    ({"repeats": 0}, OptionError, "repeats must be an integer >= 1"),
    ({"warmup": -1}, OptionError, "warmup must be an integer >= 0"),
    ({"device": "tpu"}, OptionError, "unknown device 'tpu'"),
    ({"barrier_kind": "fence"}, OptionError, "unknown barrier_kind 'fence'"),
    ({"inputs": {"nope": np.zeros(1)}}, OptionError, "input 'nope' is not a tensor"),
])
def test_bad_options_are_one_line_errors(options: dict[str, Any], error: type[Exception],
                                         pattern: str) -> None:
    sched = wb.schedule(wb.models.nnc_diamond(), "serial")
    with pytest.raises(error, match=pattern) as err:
        run(sched, **{"device": "cpu", **options})
    assert "\n" not in str(err.value)


def test_cuda_without_a_gpu_is_a_one_line_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    sched = wb.schedule(wb.models.nnc_diamond(), "serial")
    with pytest.raises(DeviceUnavailable, match="device 'cuda' needs a CUDA GPU"):
        run(sched, device="cuda")


def test_a_kind_without_a_torch_form_is_named_with_its_op() -> None:
    graph = wb.models.nnc_while_loop()
    sched = wb.schedule(graph, "serial")
    with pytest.raises(OptionError, match=r"op '[^']+' has kind 'while', which has no torch "
                                          r"form") as err:
        run_outputs(sched, device="cpu")
    assert "\n" not in str(err.value)


def test_a_schedule_is_required() -> None:
    with pytest.raises(ScheduleError, match="needs a Schedule, got Graph"):
        run(wb.models.nnc_diamond())  # type: ignore[arg-type]


def test_the_probe_says_torch_is_here_and_the_tables_list_it() -> None:
    from workbench.executors.execute import EXECUTORS, OUTPUT_RUNNERS

    assert EXECUTORS.available("torch") and OUTPUT_RUNNERS.available("torch")
    assert torch_runner.probe() == ""


def test_importing_the_executor_and_its_forms_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = ("import sys, workbench, workbench.ops.tensors, workbench.executors.torch_exec; "
            "from workbench.executors.execute import EXECUTORS; EXECUTORS.names(); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_same_seed_draws_the_same_inputs_as_the_gpu_runners() -> None:
    graph = wb.models.transformer_block(seq_len=6, d_model=16, heads=2, d_ff=32)
    sched = wb.schedule(graph, "nnc")
    emulated = outputs_by(sched, runner="emulator", seed=5)
    got = outputs_by(sched, runner="torch", seed=5, device="cpu")
    other = outputs_by(sched, runner="torch", seed=6, device="cpu")
    for t in emulated:
        np.testing.assert_allclose(got[t], emulated[t], rtol=1e-4, atol=1e-5)
        assert not np.allclose(other[t], emulated[t])
