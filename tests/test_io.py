"""JSON/DOT io and bad input through wb.load and the CLI: one-line errors, non-zero exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import workbench as wb
from workbench.cli import main


def test_json_round_trip(tmp_path: Path) -> None:
    g = wb.models.inception_v3(batch=2, fused=False)
    path = wb.save(g, tmp_path / "g.json")
    back = wb.load(path)
    assert back == g and back.name == g.name


def test_edge_list_form(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"edges": [["a", "b"], ["a", "c"]],
                                "ops": {"a": "conv2d", "b": "op", "c": "op"},
                                "durations": {"a": 5}}))
    g = wb.load(path)
    assert g.op("a").kind == "conv2d" and g.op("a").duration_us == 5


def test_dot_export(tmp_path: Path) -> None:
    g = wb.Graph.from_edges([('a"x', "b")]).replace(control_edges=[])
    text = wb.save(g, tmp_path / "g.dot").read_text()
    assert '"a\\"x" -> "b";' in text and text.startswith("digraph")


BAD = {
    "cycle": ({"edges": [["a", "b"], ["b", "c"], ["c", "a"]]}, "cycle: "),
    "dangling": ({"ops": [{"id": "a", "inputs": ["nowhere"]}]}, "reads tensor 'nowhere'"),
    "duplicate": ({"ops": [{"id": "a"}, {"id": "a"}]}, "duplicate op id 'a'"),
    "negative": ({"ops": [{"id": "a", "flops": -1}]}, "op 'a': flops must be a non-negative"),
    "non_numeric": ({"ops": [{"id": "a", "bytes_read": "big"}]}, "bytes_read must be a non-neg"),
    "unknown_field": ({"ops": [{"id": "a", "flopz": 1}]}, "unknown field 'flopz'"),
    "bad_tensor": ({"ops": [], "tensors": [{"id": "t", "size_bytes": -3}]}, "size_bytes must"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_graph_files_give_one_line_errors(case: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    data, message = BAD[case]
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps(data, indent=1))
    with pytest.raises(wb.WorkbenchError) as info:
        wb.load(path)
    assert message in str(info.value) and str(path) in str(info.value)
    assert "\n" not in str(info.value)
    assert main(["compare", str(path), "-o", str(tmp_path / "r.html"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_broken_files(tmp_path: Path) -> None:
    truncated = tmp_path / "t.json"
    truncated.write_text('{"ops": [{"id": "a"}, ')
    with pytest.raises(wb.FormatError, match="line 1, column .*invalid JSON"):
        wb.load(truncated)
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    with pytest.raises(wb.FormatError, match="not a text file"):
        wb.load(binary)
    with pytest.raises(wb.FormatError, match="unknown graph file type '.xyz'"):
        wb.load(tmp_path / "g.xyz")
    with pytest.raises(wb.FormatError, match="does not exist"):
        wb.load(tmp_path / "missing.json")


def test_schema_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"ops": [{"id": "a"}, {"id": "b", "inputs": "x"}]}, indent=1))
    with pytest.raises(wb.FormatError, match=r"ops\[1\]\.inputs must be a list .*\(line 7\)"):
        wb.load(path)


def test_cli_subprocess_bad_option_exit_code(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "compare", "--model",
                          "inception_v3", "--device", "tpu9", "-o", str(tmp_path / "r.html")],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.strip().startswith("workbench: error: unknown device 'tpu9'")
    assert run.stderr.count("\n") == 1
