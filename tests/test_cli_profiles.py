"""The profile verbs of the CLI: ``workbench import`` and ``compare --measured`` with
``--export-trace`` and ``--table``, on real traces (tests/data/real)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from workbench.cli import main
from workbench.io import load_pytorch_trace

REAL = Path(__file__).parent / "data" / "real"
NNC = REAL / "kineto_workbench_nnc_inception_v3_b1.json.gz"


def test_import_profile_alone_and_with_its_execution_trace(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(NNC), "-o", str(tmp_path / "nnc.json")]) == 0
    out = capsys.readouterr().out
    assert "307 ops, 367 edges, 6 streams on NVIDIA H200" in out and "66 cross-stream" in out
    g = wb.load(tmp_path / "nnc.json")
    assert len(g) == 307 and len(g.edges) == 367 and all(op.duration_us for op in g.ops)
    assert main(["import", str(REAL / "kineto_inception_v3_b1.json.gz"), "--et",
                 str(REAL / "et_inception_v3_b1.json.gz"), "-o", str(tmp_path / "i.json")]) == 0
    assert len(wb.load(tmp_path / "i.json")) == 312
    assert "phases: forward 312" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["--step", "9"], "no ProfilerStep#9 in the trace (it has steps 551, 552)"),
    (["--step", "x"], "expected a ProfilerStep number or 'all'"),
    (["-o", "g.csv"], "the graph is saved as .json or .dot"),
])
def test_import_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    argv: list[str], message: str) -> None:
    argv = [a if a != "g.csv" else str(tmp_path / a) for a in argv]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "g.json")]
    try:
        code = main(["import", str(REAL / "hta_two_steps_rank0.json.gz"), *argv])
    except SystemExit as exc:  # argparse's own errors exit
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_compare_measured_exports_traces_and_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compare", "--measured", str(NNC), "--policies", "nnc,asap", "--device", "h200",
            "--no-progress", "-o", str(tmp_path / "r.html"),
            "--export-trace", str(tmp_path / "t.json"), "--table", str(tmp_path / "t.csv")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # every policy finished (no status notes); nnc and asap tie within 1% (the near-tie note)
    notes = [line for line in out.splitlines() if line.startswith("note:")]
    assert "traces: 4 files" in out
    # the measured ops' own times, kept by the simulator, then the near tie
    assert notes[0].startswith("note: 307 of 307 ops carry their own times")
    assert [n.split(" simulate within")[0] for n in notes[1:]] == ["note: nnc, asap"]
    table = pd.read_csv(tmp_path / "t.csv")
    assert sorted(table["policy"]) == ["asap", "measured", "nnc", "serial"]
    ranks = [json.loads((tmp_path / f"t.{p}.json").read_text())["distributedInfo"]["rank"]
             for p in table["policy"]]
    assert ranks == list(range(len(ranks)))   # HTA ranks follow the table's rows
    assert table.set_index("policy").loc["measured", "gpu"] == "NVIDIA H200"
    for policy in table["policy"]:
        back = load_pytorch_trace(tmp_path / f"t.{policy}.json")
        assert len(back.df) == 307
    # whole microseconds by default: HTA reads them without its rounding switch
    events = json.loads((tmp_path / "t.nnc.json").read_text())["traceEvents"]
    assert all(float(e["ts"]).is_integer() for e in events if "ts" in e)
    # a JSON table, and the device check of the measured run
    argv[argv.index(str(tmp_path / "t.csv"))] = str(tmp_path / "t.json")
    argv[argv.index("h200")] = "h100"
    assert main(argv) == 2
    assert "simulated on 'h100'" in capsys.readouterr().err
    argv[argv.index("h100")] = "h200"
    assert main(argv) == 0
    rows = json.loads((tmp_path / "t.json").read_text())
    assert [r["policy"] for r in rows][-1] == "measured"


def test_compare_option_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = str(tmp_path / "r.html")
    assert main(["compare", "--measured", str(NNC), "--table", str(tmp_path / "t.txt"),
                 "-o", report]) == 2
    assert "write .csv or .json" in capsys.readouterr().err
    assert main(["compare", "--model", "squeezenet", "--et", str(NNC), "-o", report]) == 2
    assert "--et/--step go with --measured" in capsys.readouterr().err
