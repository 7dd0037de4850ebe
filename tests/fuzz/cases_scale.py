"""The ``scale`` fuzz family (issue 43 #9): one of the scale inputs of
``benchmarks/scale_inputs.py`` (10^6-op JSON in both forms, control ops, a long attribute list,
many outputs, fans, one-line DOT, Kineto traces of extra events, many steps or pending waits) at a
random moderate size, sometimes cut short or under a lowered ``WORKBENCH_MAX_OPS``, through a
reader (``wb.load``, the Kineto import) and sometimes ``wb.compare`` (serial and nnc) or
``workbench import``: it must run through or be refused in one line, never hang, run out of
memory or end in a traceback.  Cut files and limits below the op count must be refused.

The sizes are drawn so that a case takes a few seconds here; the full sizes, with their time and
memory bounds, are ``benchmarks/scale_bounds.py``'s (``docs/scale-bounds.md``).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.fuzz.runner import Case

#: kind -> the largest size drawn (log-uniform from a tenth of it): a few seconds a case.
SIZES = {"wide": 20_000, "kineto": 40_000, "kineto_extra": 60_000, "kineto_steps": 40_000,
         "kineto_waits": 40_000, "chain": 30_000, "ops_full": 10_000, "ops_edges": 20_000,
         "control": 1_500, "attr_list": 200_000, "outputs": 20_000, "fan_out": 10_000,
         "fan_in": 10_000, "fan_out_dot": 20_000, "fan_in_dot": 20_000, "dot_line": 10_000}
#: Kinds that ``wb.compare`` (serial and nnc) also runs on, and the largest size drawn for it
#: (the others are profiles, or too slow to compare at a fuzz case's size).  Smaller than
#: :data:`SIZES` where the memory planning (SOMAS) grows as the square of the tensors live
#: together: the ops_edges DAG (op k reads k // 2: ~n / 2 live tensors) took 93 s at 20,000 ops
#: and the DOT fans 22-24 s at 10,000 on the loaded 2-core machine, against the runner's 30 s.
COMPARED = {"ops_edges": 4_000, "chain": 30_000, "attr_list": 200_000, "outputs": 20_000,
            "fan_out": 10_000, "fan_in": 10_000, "fan_out_dot": 3_000, "fan_in_dot": 3_000,
            "wide": 20_000}


def scale(rng: random.Random, scale_: int) -> Case:
    kind = rng.choice(sorted(SIZES))
    kineto = kind.startswith("kineto")
    command = rng.choice(["load", "load", "import" if kineto else
                          "compare" if kind in COMPARED else "load"])
    top = (COMPARED[kind] if command == "compare" else SIZES[kind]) * max(1, scale_)
    n = max(10, int(top / 10 ** rng.uniform(0, 1)))
    limit = rng.choice([None] * 5 + [1, 2])  # every input has more than two ops
    cut = rng.random() < 0.125
    label = f"{kind} n={n:,} {command}" + (f" max_ops={limit}" if limit else "") + \
        (" cut" if cut else "")
    return Case("scale", label, "cases_scale.run", (kind, n, command, limit,
                                                    rng.random() if cut else None),
                refuse=bool(limit or cut), extra={"time_limit_s": 60})


def _inputs() -> Any:
    from tests._benchmarks import load_benchmark

    return load_benchmark("scale_inputs")


@contextmanager
def _max_ops(limit: int | None) -> Iterator[None]:
    old = os.environ.get("WORKBENCH_MAX_OPS")
    if limit is not None:
        os.environ["WORKBENCH_MAX_OPS"] = str(limit)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("WORKBENCH_MAX_OPS", None)
        else:
            os.environ["WORKBENCH_MAX_OPS"] = old


def _cut(path: Path, where: float) -> None:
    """Cut ``path`` before its last closing bracket, at ``where`` (0-1) of the way there: the
    rest cannot be a whole graph or trace."""
    data = path.read_bytes()
    last = max(data.rfind(b"}"), data.rfind(b"]"))
    path.write_bytes(data[:int(where * last)])


def run(case: Any, workdir: str) -> Any:
    """Write the input, run the command; ``("silent", ...)`` when what must be refused ran."""
    import workbench as wb
    from workbench.io import load_pytorch_trace

    kind, n, command, limit, cut = case.data
    path = _inputs().write(kind, Path(workdir), n)
    if cut is not None:
        _cut(path, cut)
    with _max_ops(limit):
        if command == "import":
            from tests.fuzz.actions import cli

            return cli(Case("scale", case.label, "cli", ["import", str(path), "-o",
                                                         f"{workdir}/g.json"], case.refuse),
                       workdir)
        if kind.startswith("kineto"):
            trace = load_pytorch_trace(path)
            if not trace.makespan >= 0:
                raise AssertionError(f"impossible measured makespan {trace.makespan}")
            return None
        graph = wb.load(path)
        if command == "compare":  # every row ends (ok, or a status that says why)
            wb.compare(graph, ["serial", "nnc"], show_progress=False, budget_s=30)
    return None


GENERATORS = {"scale": scale}
