"""Measured beside simulated, never mixed: ``compare(measured=...)`` refuses, in one line, a
recorded run on another device than the one simulated, and a measured row says its device and
executor."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench as wb
from workbench.io import load_pytorch_trace

DATA = Path(__file__).parent / "data"
H200 = DATA / "real" / "kineto_inception_v3_b1.json.gz"


def test_gpu_run_only_beside_its_own_gpu(tmp_path: Path) -> None:
    trace = load_pytorch_trace(H200)
    assert trace.device == "NVIDIA H200"
    with pytest.raises(wb.OptionError, match=r"^the measured run is on 'NVIDIA H200' but the "
                                             r"what-ifs are simulated on 'h100'.*device='h200'"):
        wb.compare(trace.graph, ["nnc"], device="h100", measured=trace, show_progress=False)
    cmp = wb.compare(trace.graph, ["nnc"], device="h200", measured=trace, show_progress=False)
    row = cmp.table.set_index("policy").loc["measured"]
    assert (row["executor"], row["gpu"]) == ("measured", "NVIDIA H200")
    assert cmp.settings["measured_device"] == "NVIDIA H200"
    html = cmp.to_html(tmp_path / "r.html", plotlyjs="cdn").read_text()
    assert "is a recorded run (a profiler trace) on <b>NVIDIA H200</b>; the other rows are " \
           "what-if schedules simulated on <b>h200</b>" in html


def test_cpu_run_never_beside_gpu_ops() -> None:
    fx = wb.load(DATA / "branchy_fx.json")
    cpu = load_pytorch_trace(DATA / "branchy_cpu.pt.trace.json", graph=fx)
    assert cpu.device == "cpu" and {op.device for op in cpu.graph.ops} == {"cpu"}
    with pytest.raises(wb.OptionError, match=r"^the measured run is a CPU run \(host ops\) but "
                                             r"graph 'branchy' puts 17 of its ops"):
        wb.compare(fx, ["nnc"], measured=cpu, show_progress=False)
    # the run's own graph keeps its ops on the host: comparable, said in the row and settings
    cmp = wb.compare(cpu.graph, ["nnc"], measured=cpu, show_progress=False)
    row = cmp.table.set_index("policy").loc["measured"]
    assert row["gpu"] == "cpu" and cmp.settings["measured_device"] == "cpu"
    assert all(set(t.df["device"]) == {"cpu"} for t in cmp.traces.values())
