"""The torch executor's per-op overhead on the CPU: a schedule of each zoo model run op by op
against the exported ``GraphModule`` on the same inputs.

For every model of ``tests/model_zoo.py`` (and a policy), the graph is imported with
``from_torch``; then, on one torch thread under ``torch.no_grad()``, rounds alternate between
``repeats`` calls of the traced ``GraphModule`` and ``repeats`` untimed runs of the schedule
(:func:`workbench.executors.torch_exec.host.run_once` with the model's own calls: what
``wb.accelerate``'s CPU module and the timed runs execute).  The figures are CPU seconds
(``time.process_time``), the best round of each: ``overhead µs/op`` is ``(schedule -
GraphModule) / ops``, ``× gm`` the ratio.  Run with ``--models resnet gpt2`` to pick some, and
``--repeats`` / ``--rounds`` for more precision::

    .venv/bin/python benchmarks/torch_overhead.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def best_cpu_s(fn: Any, repeats: int) -> float:
    """CPU seconds of one call of ``fn``, from ``repeats`` calls in a row."""
    t0 = time.process_time()
    for _ in range(repeats):
        fn()
    return (time.process_time() - t0) / repeats


def measure(name: str, policy: str, *, repeats: int, rounds: int) -> dict[str, Any]:
    """One row: the model's op count and the CPU time of a GraphModule call, a schedule run and
    a call of the CPU module ``wb.accelerate`` returns for that schedule."""
    import warnings

    import torch

    import workbench as wb
    from tests.model_zoo import ZOO
    from workbench.executors.torch_exec.calls import CallEvaluator
    from workbench.executors.torch_exec.host import run_once
    from workbench.executors.torch_exec.module import ScheduledModule
    from workbench.executors.torch_exec.program import build_program
    from workbench.io import from_torch

    model, example = ZOO[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # default-cost notes
        graph = from_torch(model, example)
    schedule = wb.schedule(graph, policy)
    program = graph.program
    evaluator = CallEvaluator(graph, program, program.graph_inputs(example),
                              module=program.module_on("cpu"), device="cpu")
    issue = build_program(schedule)
    module = ScheduledModule(model, schedule, example, device="cpu")
    gm = program.gm

    def run_gm() -> None:
        gm(*example)

    def run_schedule() -> None:
        run_once(issue, evaluator)
        evaluator.result()

    def run_module() -> None:
        module(*example)

    fns = {"gm": run_gm, "run": run_schedule, "module": run_module}
    best = dict.fromkeys(fns, float("inf"))
    with torch.no_grad():
        for fn in fns.values():  # warm-up (the schedule's first run is the recorded one)
            best_cpu_s(fn, 3)
        for _ in range(rounds):
            for key, fn in fns.items():
                best[key] = min(best[key], best_cpu_s(fn, repeats))
    n_ops = len(schedule.issue_order)
    return {"model": name, "policy": policy, "ops": n_ops,
            **{f"{k}_us": v * 1e6 for k, v in best.items()},
            "overhead_us_per_op": (best["run"] - best["gm"]) * 1e6 / max(n_ops, 1),
            "ratio": best["run"] / best["gm"], "module_ratio": best["module"] / best["gm"]}


def main(argv: list[str] | None = None) -> int:
    from tests.model_zoo import ZOO

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", default=sorted(ZOO))
    parser.add_argument("--policies", nargs="*", default=["serial", "nnc"])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    print(f"{'model':<14}{'policy':<8}{'ops':>6}{'gm µs':>10}{'run µs':>10}{'module µs':>11}"
          f"{'overhead µs/op':>16}{'run × gm':>10}{'module × gm':>13}")
    worst = 0.0
    for name in opts.models:
        for policy in opts.policies:
            r = measure(name, policy, repeats=opts.repeats, rounds=opts.rounds)
            worst = max(worst, r["overhead_us_per_op"])
            print(f"{r['model']:<14}{r['policy']:<8}{r['ops']:>6}{r['gm_us']:>10.0f}"
                  f"{r['run_us']:>10.0f}{r['module_us']:>11.0f}{r['overhead_us_per_op']:>16.2f}"
                  f"{r['ratio']:>10.2f}{r['module_ratio']:>13.2f}", flush=True)
    print(f"worst overhead: {worst:.2f} µs/op")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
