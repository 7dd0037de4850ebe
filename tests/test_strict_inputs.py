"""Issue 14, "silently wrong" and "tracebacks": inputs that used to be accepted with defaults, or
that crashed, now give a one-line WorkbenchError that names the key or value and where it is."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench.errors import WorkbenchError
from workbench.executors.gpu.calibration import load_calibration
from workbench.io import load_execution_trace, load_pytorch_trace
from workbench.simulator.cost_model.costs import COST_MODELS
from workbench.simulator.cost_model.devices import device_to_dict, get_device, load_device
from workbench.values.graph import OP_DEVICES, Op


def one_line(exc: pytest.ExceptionInfo[WorkbenchError]) -> str:
    text = str(exc.value)
    assert text and "\n" not in text and "\r" not in text, repr(text)
    return text


def write_json(tmp_path: Path, data: Any, name: str = "g.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


# ------------------------------------------------------------------ graph JSON: edge-list form
@pytest.mark.parametrize(("typo", "meant"), [("duration", "durations"), ("sizez", "sizes"),
                                             ("device", "devices"), ("Ops", "ops")])
def test_edge_list_key_typo_is_an_error_with_a_suggestion(tmp_path: Path, typo: str,
                                                          meant: str) -> None:
    path = write_json(tmp_path, {"edges": [["a", "b"]], typo: {"a": 50}})
    with pytest.raises(wb.FormatError) as exc:
        wb.load(path)
    assert f"unknown key {typo!r}; did you mean {meant!r}?" in one_line(exc)
    assert str(path) in str(exc.value)


def test_edge_list_durations_still_count(tmp_path: Path) -> None:
    """The typo'd file used to give 84 µs instead of the 149 µs its author meant."""
    edges = [["a", "b"], ["b", "c"]]
    good = wb.load(write_json(tmp_path, {"edges": edges, "durations": {"a": 50, "b": 50}}))
    assert good.op("a").duration_us == 50


def test_edges_may_only_name_declared_ops(tmp_path: Path) -> None:
    data = {"edges": [["a", "b"], ["a", "cc"]], "ops": {"a": "op", "b": "op", "c": "op"}}
    with pytest.raises(wb.FormatError) as exc:
        wb.load(write_json(tmp_path, data))
    assert "edges[1] names op 'cc', which 'ops' does not declare; did you mean 'c'?" in \
        one_line(exc)
    data["ops"] = ["a", "b"]  # a list of ids declares them too
    with pytest.raises(wb.FormatError, match="names op 'cc'"):
        wb.load(write_json(tmp_path, data))
    del data["ops"]  # without 'ops', the edges declare the ops
    assert len(wb.load(write_json(tmp_path, data))) == 3


def test_full_form_top_level_key_typo(tmp_path: Path) -> None:
    data = wb.io.graph_to_dict(wb.models.nnc_diamond())
    data["control_edge"] = []
    with pytest.raises(wb.FormatError) as exc:
        wb.load(write_json(tmp_path, data))
    assert "unknown key 'control_edge'; did you mean 'control_edges'?" in one_line(exc)


def test_op_field_typo_suggests_the_field(tmp_path: Path) -> None:
    with pytest.raises(wb.FormatError) as exc:
        wb.load(write_json(tmp_path, {"ops": [{"id": "a", "flopz": 1}]}))
    assert "ops[0] ('a'): unknown field 'flopz'; did you mean 'flops'?" in one_line(exc)


def test_control_flow_graphs_still_load(tmp_path: Path) -> None:
    for model in (wb.models.nnc_while_loop(), wb.models.nnc_case_of(), wb.models.rnn_loop()):
        back = wb.load(wb.save(model, tmp_path / f"{model.name}.json"))
        assert back.op_ids == model.op_ids and back.has_control_flow


def test_control_flow_subgraph_key_typo(tmp_path: Path) -> None:
    data = wb.io.graph_to_dict(wb.models.nnc_while_loop())
    loop = next(op for op in data["ops"] if op["kind"] == "while")
    loop["attrs"]["body"]["tensor"] = []
    with pytest.raises(wb.FormatError) as exc:
        wb.load(write_json(tmp_path, data))
    assert ".attrs.body: graph: unknown key 'tensor'; did you mean 'tensors'?" in one_line(exc)


# ------------------------------------------------------------------ op devices
def test_device_names_are_case_insensitive(tmp_path: Path) -> None:
    """'GPU' used to be modelled as a second full GPU (58 µs instead of 106 µs)."""
    data = {"edges": [], "ops": ["a", "b"], "durations": {"a": 50, "b": 50},
            "thread_blocks": {"a": 100_000, "b": 100_000}}
    same = wb.load(write_json(tmp_path, {**data, "devices": {"a": "gpu", "b": "gpu"}}))
    mixed = wb.load(write_json(tmp_path, {**data, "devices": {"a": "GPU", "b": "gpu"}}))
    assert [op.device for op in mixed.ops] == ["gpu", "gpu"]
    span = [wb.simulate(wb.schedule(g, "nnc")).makespan for g in (same, mixed)]
    assert span[0] == span[1] > 100


@pytest.mark.parametrize("device", ["tpu", "gpu0", "", "cuda"])
def test_unknown_device_lists_the_known_ones(tmp_path: Path, device: str) -> None:
    path = write_json(tmp_path, {"edges": [["a", "b"]], "devices": {"a": device}})
    with pytest.raises(wb.GraphError) as exc:
        wb.load(path)
    assert f"op 'a': unknown device {device!r}" in one_line(exc)
    assert "(known: gpu, cpu, python, npu, copy)" in str(exc.value)
    with pytest.raises(wb.GraphError, match="unknown device"):
        wb.Graph([Op("a", device=device)])


def test_every_op_device_has_a_cost_model() -> None:
    assert set(OP_DEVICES) == set(COST_MODELS)


# ------------------------------------------------------------------ DOT
def test_dot_unknown_attribute_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "g.dot"
    path.write_text("digraph g {\n  a [flopz=3];\n  a -> b\n}\n")
    with pytest.raises(wb.FormatError) as exc:
        wb.load(path)
    assert f"{path}: line 2: unknown node attribute 'flopz'; did you mean 'flops'?" in \
        one_line(exc)


@pytest.mark.parametrize("text", [
    "digraph g { a -> b [kind=contrl] }",
    "digraph g { edge [wieght=2]; a -> b }",
    "digraph g { rankdirr=LR; a -> b }",
    "digraph g { node [devcie=cpu]; a -> b }",
])
def test_dot_typos_in_every_statement_kind(tmp_path: Path, text: str) -> None:
    path = tmp_path / "g.dot"
    path.write_text(text)
    with pytest.raises(wb.FormatError) as exc:
        wb.load(path)
    one_line(exc)


def test_dot_graphviz_attributes_are_still_accepted(tmp_path: Path) -> None:
    path = tmp_path / "g.dot"
    path.write_text('digraph g { rankdir=LR; graph [splines=ortho]; node [shape=box, '
                    'fillcolor="#eee"]; a [label="A", kind=conv2d, device=CPU, URL="x"]; '
                    'a -> b [color=red, style=dashed, arrowhead=none] }')
    g = wb.load(path)
    assert g.op("a").device == "cpu" and g.control_edges == (("a", "b"),)
    assert wb.load(wb.save(wb.models.nnc_diamond(), tmp_path / "d.dot")).op_ids == \
        wb.models.nnc_diamond().op_ids


# ------------------------------------------------------------------ device and calibration files
def test_device_file_typos_and_bad_figures(tmp_path: Path) -> None:
    good = device_to_dict(get_device("h100"))
    cases = {"nme": ("unknown key 'nme'; did you mean 'name'?", {"nme": "x"}),
             "nan": ("pcie_gbps must be a positive finite number", {"pcie_gbps": math.nan}),
             "neg": ("launch_overhead_us must be a non-negative", {"launch_overhead_us": -1}),
             "str": ("sm_count must be a positive finite number", {"sm_count": "132"}),
             "src": ("sources must be a list of strings", {"sources": 5}),
             "model": ("unknown parameter 'x'", {"gpu_model": {"x": 1}})}
    for name, (message, change) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({**good, **change}).replace("NaN", "NaN"))
        with pytest.raises(wb.OptionError) as exc:
            load_device(path)
        assert message in one_line(exc), name


def test_calibration_file_typo(tmp_path: Path) -> None:
    path = write_json(tmp_path, {"format": "workbench-calibration", "version": 1,
                                 "ops": {"a": 1.0}, "devce": "h100"}, "cal.json")
    table = json.loads(path.read_text())
    from workbench.executors.gpu.calibration import FORMAT, VERSION

    path.write_text(json.dumps({**table, "format": FORMAT, "version": VERSION}))
    with pytest.raises(wb.FormatError) as exc:
        load_calibration(path)
    assert "unknown key 'devce'; did you mean 'device'?" in one_line(exc)


# ------------------------------------------------------------------ profiler traces
def kineto(events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"traceEvents": events}


def test_negative_profiler_duration_is_an_error(tmp_path: Path) -> None:
    events = [{"ph": "X", "cat": "kernel", "name": "good", "ts": 0, "dur": 5,
               "args": {"stream": 7}},
              {"ph": "X", "cat": "kernel", "name": "bad_kernel", "ts": 10, "dur": -3,
               "args": {"stream": 7}}]
    path = write_json(tmp_path, kineto(events), "t.json")
    with pytest.raises(wb.FormatError) as exc:
        load_pytorch_trace(path)
    assert "traceEvents[1] ('bad_kernel'): negative duration -3.0" in one_line(exc)
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(wb.FormatError, match="negative duration"):
        load_pytorch_trace(gz)


def test_negative_duration_in_the_kineto_half_of_an_execution_trace(tmp_path: Path) -> None:
    et = write_json(tmp_path, {"schema": "1.0.1", "nodes": [
        {"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 0},
        {"id": 2, "name": "aten::relu", "ctrl_deps": 1, "inputs": {"values": [], "types": []},
         "outputs": {"values": [], "types": []}, "attrs": [{"name": "rf_id", "value": 5}]}]},
        "et.json")
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::relu", "ts": 0, "dur": -1,
               "args": {"Record function id": 5}}]
    with pytest.raises(WorkbenchError) as exc:
        load_execution_trace(et, write_json(tmp_path, kineto(events), "k.json"))
    assert "negative duration" in one_line(exc)


# ------------------------------------------------------------------ entry points
@pytest.fixture(scope="module")
def diamond() -> wb.Graph:
    return wb.models.nnc_diamond()


@pytest.mark.parametrize("limit", [math.nan, math.inf, -1, 0, "1GB", True])
@pytest.mark.parametrize("policy", ["nnc", "serial", "gpto"])
def test_memory_limit_must_be_a_finite_positive_number(diamond: wb.Graph, policy: str,
                                                       limit: Any) -> None:
    with pytest.raises(wb.OptionError) as exc:
        wb.schedule(diamond, policy, memory_limit_bytes=limit)
    assert "memory_limit_bytes must be a positive finite number" in one_line(exc)


def test_impossible_memory_limit_raises_for_every_policy(diamond: wb.Graph) -> None:
    for policy in ("nnc", "serial", "gpto", "asap"):
        with pytest.raises(wb.OptionError) as exc:
            wb.schedule(diamond, policy, memory_limit_bytes=10)
        assert "cannot fit" in one_line(exc), policy


def test_compare_on_an_empty_graph(diamond: wb.Graph) -> None:
    with pytest.raises(wb.OptionError) as exc:
        wb.compare(wb.Graph([], name="nothing"), ["nnc"], show_progress=False)
    assert one_line(exc) == "graph 'nothing' has no ops: nothing to compare"


def test_compare_argument_checks(diamond: wb.Graph) -> None:
    with pytest.raises(wb.OptionError, match="needs a Graph, got Schedule"):
        wb.compare(wb.schedule(diamond, "nnc"), show_progress=False)  # type: ignore[arg-type]
    with pytest.raises(wb.OptionError, match=r"use \['nnc'\]"):
        wb.compare(diamond, "nnc", show_progress=False)
    with pytest.raises(wb.ScheduleError, match="did you mean 'asap'"):
        wb.compare(diamond, ["asapp"], show_progress=False)
    with pytest.raises(wb.OptionError, match="did you mean 'fp16'"):
        wb.compare(diamond, ["nnc"], precision="FP16", show_progress=False)
    with pytest.raises(wb.OptionError, match="did you mean 'graph'"):
        wb.compare(diamond, ["nnc"], mode="Graph", show_progress=False)
    with pytest.raises(wb.MemoryPlanError, match="did you mean 'somas'"):
        wb.compare(diamond, ["nnc"], planner="somaz", show_progress=False, budget_s=None)


def test_simulate_and_execute_need_a_schedule(diamond: wb.Graph) -> None:
    with pytest.raises(wb.ScheduleError) as exc:
        wb.simulate(diamond)  # type: ignore[arg-type]
    assert "simulate() needs a Schedule, got Graph (schedule it first" in one_line(exc)
    trace = wb.simulate(wb.schedule(diamond, "serial"))
    with pytest.raises(wb.ScheduleError, match="got Trace"):
        wb.simulate(trace)  # type: ignore[arg-type]
    with pytest.raises(wb.ScheduleError, match="execute\\(\\) needs a Schedule, got Graph"):
        wb.execute(diamond)  # type: ignore[arg-type]
    with pytest.raises(wb.OptionError, match="no option 'devcie'; did you mean 'device'"):
        wb.execute(wb.schedule(diamond, "serial"), devcie="h100")


def test_constructors_check_their_types(diamond: wb.Graph) -> None:
    with pytest.raises(wb.ScheduleError, match="a Schedule needs a Graph, got Trace"):
        wb.Schedule(wb.simulate(wb.schedule(diamond, "serial")), "x", {}, (), ())  # type: ignore
    with pytest.raises(wb.OptionError, match="a Trace needs a Graph, got NoneType"):
        wb.Trace(wb.simulate(wb.schedule(diamond, "serial")).df, graph=None,  # type: ignore
                 policy="x", device="h100")


def test_names_get_suggestions(diamond: wb.Graph) -> None:
    with pytest.raises(wb.ScheduleError, match="unknown scheduling policy 'nncc'; did you mean"):
        wb.schedule(diamond, "nncc")
    with pytest.raises(wb.ScheduleError, match="no option 'max_stream'; did you mean "
                                               "'max_streams'"):
        wb.schedule(diamond, "nnc", max_stream=2)
    with pytest.raises(wb.GraphError, match="did you mean 'inception_v3'"):
        wb.models.build("inception_v4")


def test_model_without_its_required_parameter() -> None:
    with pytest.raises(wb.GraphError) as exc:
        wb.models.build("random_dag")
    assert "model 'random_dag' needs parameter 'n_ops'" in one_line(exc)
    for model, params in (("random_dag", {"n_ops": "many"}), ("squeezenet", {"batch": 1.5}),
                          ("layered_dag", {"n_layers": -3, "width": 1e300}),
                          ("transformer_block", {"seq_len": "x"})):
        with pytest.raises(WorkbenchError) as exc:
            wb.models.build(model, **params)
        one_line(exc)
