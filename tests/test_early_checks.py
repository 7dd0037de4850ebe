"""Options are checked before any work (issue 45): a typo in a command, a mode or a column is
refused before pandas, the schedulers or the loaders load, and ``wb.compare`` refuses a mode
typo before its first stage starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

import workbench as wb
from workbench.errors import OptionError

PROBE = """
import resource, sys
from workbench.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
heavy = sorted(m for m in ("pandas", "numpy", "workbench.schedulers", "workbench.io")
               if m in sys.modules)
used = resource.getrusage(resource.RUSAGE_SELF)
print("|".join(heavy), used.ru_utime + used.ru_stime, file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [["compar"], ["compare", "--mode", "grpah"],
                                  ["compare", "--columns", "makespan"],
                                  ["compare", "--budget", "-1"]])
def test_a_typo_is_refused_before_the_heavy_imports(argv: list[str]) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True,
                         text=True, timeout=60)
    *message, probe = out.stderr.strip().splitlines()
    heavy, cpu_s = probe.rsplit(" ", 1)
    assert heavy == "", f"{argv}: loaded {heavy} before refusing it"
    assert any("error" in line for line in message), out.stderr
    assert float(cpu_s) < 1.0, f"{argv}: {cpu_s} s of CPU"   # ~0.12 s here


def test_compare_refuses_a_mode_typo_before_its_first_stage(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(OptionError, match="unknown mode 'graphs'; did you mean 'graph'"):
        wb.compare(wb.models.build("nnc_diamond"), mode="graphs", show_progress=True)
    assert "started" not in capsys.readouterr().err
