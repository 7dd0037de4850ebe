"""Every ``>>>`` example in the package's docstrings runs and prints what it shows.

The docstrings are where a newcomer reading the code first sees the API used, and nothing ran
them (the suite collects ``tests/`` only).  Three of the 152 with examples had drifted: IOS's
diamond (the calibrated device sync made eager IOS keep it in one group), ``run_level``'s O0 host
time (38 µs before the launch overhead was calibrated, 97.1 µs after) and a set printed in hash
order (its order changed with ``PYTHONHASHSEED``).  One test per module, so a failure names it."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import workbench

MODULES = sorted(m.name for m in pkgutil.walk_packages(workbench.__path__, "workbench."))


def test_every_module_is_listed() -> None:
    assert len(MODULES) > 200 and "workbench.memory.plan" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    report: list[str] = []
    runner = doctest.DocTestRunner()
    failed = sum(runner.run(test, out=report.append).failed
                 for test in doctest.DocTestFinder(exclude_empty=True).find(module, name))
    assert failed == 0, "".join(report)
