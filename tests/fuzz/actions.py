"""What the fuzz worker does with each case (``Case.action`` names one of these functions).

Each takes ``(case, workdir)``, runs the input through the workbench and returns normally when
it went through; a one-line ``WorkbenchError`` is a clean refusal (:func:`runner.classify`).
Graph inputs go through the whole pipeline: load, a couple of policies, ``validate``, the
simulator and a memory planner, so that a file that loads but breaks a later stage is found.
"""

from __future__ import annotations

import io
import math
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

#: Stages past loading run only on graphs up to this many ops (the fuzzer hunts for crashes;
#: the scale reproducers live in tests/test_hostile_scale.py).
PIPELINE_MAX_OPS = 5000


def _write(workdir: str, name: str, data: bytes | str) -> Path:
    path = Path(workdir) / name
    path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return path


def _pipeline(graph: Any, policies: list[str], *, save: str | None = None,
              workdir: str = "") -> None:
    import workbench as wb
    from workbench.memory import plan_memory

    if save:
        wb.save(graph, Path(workdir) / f"out{save}")
    for policy in policies:
        sched = wb.schedule(graph, policy)
        sched.validate()
        if len(graph) <= PIPELINE_MAX_OPS:
            trace = wb.simulate(sched)
            if not (math.isfinite(trace.makespan) and trace.makespan >= 0):
                raise AssertionError(f"impossible makespan {trace.makespan}")
            if len(graph) <= 500:
                plan_memory(sched, "greedy_by_size")


def load_graph(case: Any, workdir: str) -> None:
    """``data``: (suffix, bytes); ``extra``: policies, save (a suffix to save as)."""
    import workbench as wb

    suffix, payload = case.data
    graph = wb.load(_write(workdir, f"g{suffix}", payload))
    _pipeline(graph, case.extra.get("policies", ["serial", "nnc"]),
              save=case.extra.get("save"), workdir=workdir)


def load_trace(case: Any, workdir: str) -> None:
    """A PyTorch profiler / Chrome trace: the measured trace must be possible."""
    from workbench.io import load_pytorch_trace

    trace = load_pytorch_trace(_write(workdir, "t.json", case.data))
    if not (math.isfinite(trace.makespan) and trace.makespan >= 0):
        raise AssertionError(f"impossible measured makespan {trace.makespan}")


def load_et(case: Any, workdir: str) -> None:
    """A PyTorch execution trace (the graph side, no Kineto)."""
    from workbench.io import execution_graph

    graph = execution_graph(_write(workdir, "et.json", case.data))
    _pipeline(graph, ["serial"])


def cli(case: Any, workdir: str) -> tuple[str, str]:
    """``data``: argv with ``{wd}`` for the work folder; ``extra["setup"]``: files to create
    first (``graph``: a small graph file, ``fifo``, ``zero``: a link to /dev/zero, ``link``: a
    link to an existing file).  Exit 0 is ``ok`` (``silent`` when it must refuse); exit 1/2
    with one line on stderr is ``clean``; anything else a ``traceback``."""
    import workbench as wb
    from workbench.cli import main
    from workbench.models import random_dags

    wd = Path(workdir)
    setup = case.extra.get("setup", ())
    if "graph" in setup:
        wb.save(random_dags.random_dag(12, seed=1), wd / "g.json")
    if "fifo" in setup:
        os.mkfifo(wd / "fifo.json")
    if "zero" in setup:
        (wd / "zero.json").symlink_to("/dev/zero")
    if "link" in setup:
        (wd / "real.html").write_text("old")
        (wd / "link.html").symlink_to(wd / "real.html")
    argv = [a.replace("{wd}", workdir) for a in case.data]
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(argv)
    except SystemExit as exc:  # argparse's own exits (--help); ours return codes
        code = exc.code if isinstance(exc.code, int) else 2
    text = err.getvalue()
    if "Traceback" in text:
        return "traceback", text[-400:]
    if code == 0:
        return ("silent", "exit 0") if case.refuse else ("ok", "")
    lines = [x for x in text.splitlines() if x.strip()]
    if code in (1, 2) and (code == 1 or len(lines) == 1):
        return "clean", (lines[-1] if lines else "")[:200]
    return "traceback", f"exit {code}: {text[-300:]!r}"


def api(case: Any, workdir: str) -> None:
    """``data``: (function, options) on a small graph (see :mod:`tests.fuzz.cases`)."""
    import workbench as wb
    from workbench.memory import plan_memory
    from workbench.models import random_dags

    fn, opts = case.data
    graph = random_dags.random_dag(case.extra.get("ops", 14), seed=case.extra.get("seed", 0))
    if fn == "schedule":
        wb.schedule(graph, opts.pop("policy"), **opts).validate()
    elif fn == "schedule_empty":
        wb.schedule(wb.Graph([]), opts["policy"])
    elif fn == "plan_memory":
        plan_memory(wb.schedule(graph, "nnc"), opts.pop("planner"), **opts)
    elif fn == "simulate":
        if opts.pop("loop", False):
            graph = wb.models.build("nnc_while_loop", iterations=3)
        sched = wb.schedule(graph, "serial")
        calibration = opts.pop("calibration", None)
        if calibration == "ops":
            calibration = {op: 5.0 for op in graph.op_ids}
        wb.simulate(sched, calibration=calibration, **opts)
    elif fn == "compare":
        wb.compare(graph, ["serial"], show_progress=False, **opts)
    else:
        raise AssertionError(f"unknown api case {fn!r}")


def _sleep(case: Any, workdir: str) -> None:
    """For the runner's own test: a hang."""
    import time

    time.sleep(60)


def _allocate(case: Any, workdir: str) -> None:
    """For the runner's own test: more memory than the worker may have."""
    blocks = [bytearray(1 << 28) for _ in range(64)]
    del blocks
