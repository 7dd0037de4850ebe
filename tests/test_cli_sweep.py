"""``workbench sweep`` (issue 45): the CLI's form of ``wb.sweep``, run as a user would, in a
subprocess; its CSV is the Python table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

import workbench as wb


def test_sweep_prints_the_table_and_writes_the_same_csv_as_wb_sweep(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "workbench.cli", "sweep", "--model", "squeezenet",
                          "--model", "nnc_diamond", "--batch", "1", "--batch", "2",
                          "--policies", "nnc", "--no-progress", "-o", str(tmp_path / "s.csv")],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["graph", "batch", "device", "mode", "policy"]
    assert lines[-1] == f"table: {tmp_path / 's.csv'} (6 rows)"
    assert any(line.startswith("nnc_diamond") and " - " in line for line in lines)
    written = pd.read_csv(tmp_path / "s.csv")
    expected = wb.sweep(["squeezenet", "nnc_diamond"], ["nnc"], batch_sizes=(1, 2),
                        show_progress=False)
    assert list(written["mode"].unique()) == ["graph"]
    assert written["makespan_us"].round(6).tolist() == expected["makespan_us"].round(6).tolist()


def test_sweep_refuses_an_unknown_model_in_one_line() -> None:
    out = subprocess.run([sys.executable, "-m", "workbench.cli", "sweep", "--model", "inceptoin"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "unknown model 'inceptoin'" in out.stderr
