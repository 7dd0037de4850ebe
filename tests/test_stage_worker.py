"""One worker process for all of a comparison's jobs (``workbench._bounded.StageWorker``).

A fork costs more the larger the parent (17 ms from 260 MiB, 75 ms from 1.1 GiB) and a worker
per policy also rebuilt every lazily built cache: compare of inception_v3 took 1.04 s forked per
job against 0.59 s in-process, 0.70 s with one worker.  The worker must still be replaced after
a job it was killed for or died in, survive a job that raises, and give every job what a fresh
worker would: a policy's row is the same alone and among the others.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

import workbench as wb
from workbench import _bounded

needs_fork = pytest.mark.skipif(_bounded.start_method() != "fork",
                                reason="the stages below reach the worker only through fork")


def _pid() -> int:
    return os.getpid()


def _seven() -> int:
    return 7


def _double(x: int) -> int:
    return 2 * x


def _endless(*previous: object) -> None:
    while True:
        time.sleep(0.05)


def _failing() -> None:
    raise wb.ScheduleError("failing: this stage always fails")


def _killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _same(shared: Any) -> Any:
    return shared


def _jobs(**named: Any) -> dict[str, tuple[list[Any], list[float | None]]]:
    return {key: (list(stages), [5.0] * len(stages)) for key, stages in named.items()}


@needs_fork
def test_the_jobs_share_one_worker_and_keep_their_own_values() -> None:
    graph = wb.models.nnc_diamond()
    jobs = _jobs(a=[_seven, _double], b=[_pid], c=[_pid], d=[lambda: _same(graph)])
    with _bounded.StageWorker(jobs, shared=(graph,)) as worker:
        assert [o.value for o in worker.run("a")] == [7, 14]
        (b,), (c,) = worker.run("b"), worker.run("c")
        (d,) = worker.run("d")
        assert worker.run("a")[1].value == 14          # a job may run again
        assert worker.starts == 1
    assert b.value == c.value != os.getpid()            # one worker, not this process
    assert d.value is graph                              # shared objects come back as themselves


@needs_fork
def test_a_job_killed_at_its_budget_gets_the_next_job_a_fresh_worker() -> None:
    jobs = {"slow": ([_pid, _endless, _seven], [5.0, 0.5, 5.0]), "next": ([_pid], [5.0])}
    with _bounded.StageWorker(jobs) as worker:
        first, stopped, skipped = worker.run("slow")
        assert (stopped.status, skipped.status) == ("budget", "skipped")
        (after,) = worker.run("next")
        assert worker.starts == 2 and after.ok and after.value != first.value


@needs_fork
def test_a_worker_that_dies_is_replaced_and_one_that_raises_is_kept() -> None:
    jobs = _jobs(pid=[_pid], fails=[_failing], dies=[_killed], again=[_pid])
    with _bounded.StageWorker(jobs) as worker:
        (before,) = worker.run("pid")
        with pytest.raises(wb.ScheduleError, match="always fails"):
            worker.run("fails")
        assert worker.run("pid")[0].value == before.value and worker.starts == 1
        (died,) = worker.run("dies")
        assert died.status == "died" and "signal 9" in died.message
        (again,) = worker.run("again")
        assert worker.starts == 2 and again.value != before.value


def test_without_a_budget_or_isolation_the_jobs_run_here() -> None:
    with _bounded.StageWorker({"a": ([_pid], [None])}) as worker:
        assert worker.run("a")[0].value == os.getpid() and worker.starts == 0
    with _bounded.StageWorker({"a": ([_pid], [5.0])}, isolate=False) as worker:
        assert worker.run("a")[0].value == os.getpid() and worker.starts == 0
    with pytest.raises(ValueError, match="one budget per stage"):
        _bounded.StageWorker({"a": ([_pid], [])})


@needs_fork
def test_compare_starts_one_worker_for_its_optimum_and_every_policy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    starts = []
    real = _bounded.StageWorker._start

    def counted(self: _bounded.StageWorker) -> None:
        starts.append(1)
        real(self)

    monkeypatch.setattr(_bounded.StageWorker, "_start", counted)
    c = wb.compare(wb.models.nnc_diamond(), show_progress=False)
    assert len(c.table) == len(wb.policies()) and (c.table["status"] == "ok").all()
    assert c.lower_bounds["optimum_us"] > 0          # the optimum's search ran in the same worker
    assert len(starts) == 1


@pytest.mark.parametrize("model", ["inception_v3", "raf_three_branches"])
def test_a_policy_s_row_is_the_same_alone_and_among_the_others(model: str) -> None:
    """Nothing one job leaves in the shared worker (caches, imports) changes another's result:
    each policy compared alone (with serial, its own worker) gives the row it gets among all."""
    graph = wb.models.build(model)
    together = wb.compare(graph, show_progress=False, optimum_max_ops=0).table.set_index("policy")
    columns = ["makespan_us", "arena_mib", "pool_reserved_mib", "status"]
    for policy in ("ios", "gpto", "memory_greedy"):
        alone = wb.compare(graph, [policy], show_progress=False,
                           optimum_max_ops=0).table.set_index("policy")
        assert alone.loc[policy, columns].to_dict() == together.loc[policy, columns].to_dict()


@needs_fork
def test_a_worker_that_cannot_start_leaves_nothing_to_close(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork that fails (no processes left) raises from run(); leaving the block closes
    nothing half-made, and the next run() tries a fresh start."""
    import multiprocessing.process

    real = multiprocessing.process.BaseProcess.start

    def refused(self: Any) -> None:
        raise BlockingIOError("Resource temporarily unavailable")

    with _bounded.StageWorker(_jobs(a=[_pid])) as worker:
        monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refused)
        with pytest.raises(BlockingIOError):
            worker.run("a")
        assert worker.starts == 0
        monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", real)
        assert worker.run("a")[0].value != os.getpid() and worker.starts == 1
