"""calibrate_device(): time every op of some graphs alone, probe the device, write a profile.

Each op runs as a one-op schedule of its own graph (:meth:`Graph.subgraph`: its inputs drawn at
random) through the torch executor, timed by
:class:`~workbench.schedulers.ios_torch_oracle.TorchStageOracle` (so structurally identical ops,
e.g. the repeated blocks of Inception V3, are timed once).  On CUDA each op is captured as a CUDA
graph and replayed (median of ``repeats`` after ``warmup``) and the graph floor probe (a graph of
one 1-element kernel, :mod:`workbench.executors.device_probes`) is subtracted.

Without CUDA the executor's CPU path times each op with ``perf_counter_ns`` (median of
``repeats`` after ``warmup``) on ``threads`` intra-op threads, 1 by default.  One thread because
an op split over torch's OpenMP pool waits at the end of every parallel region for its slowest
worker: when other processes keep the cores busy, that worker gets a core back only at the
kernel's next scheduler tick (4 ms: this kernel has ``CONFIG_HZ=250``), so a 100 µs convolution
measured 40 ms, ten 4 ms steps (on a 2-core machine beside another torch process; a plain loop
over the same call on two threads swings between the two the same way).  On one thread the op
runs on the calling thread alone: its time is that thread's work, plus any time it waits for a
core; the share of the wall time the thread actually ran
(``time.thread_time``) is recorded as ``provenance["cpu_share"]``, and a warning says when other
processes took more than a tenth of it (on one thread the op's own work is then still right, but
an op longer than a time slice also includes waiting for a core).  No probes run without CUDA.

The result is a :class:`~workbench.simulator.cost_model.device_profile.DeviceProfile` with its
provenance (the base device and why it was chosen included), which ``device=PATH`` accepts
wherever a device name is accepted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from workbench.errors import DeviceUnavailable, OptionError, WorkbenchError
from workbench.simulator.cost_model.device_profile import DeviceProfile, OpTiming
from workbench.values.graph import Graph

#: Below this share of the wall time on a core, the CPU calibration warns that it was crowded.
BUSY_SHARE = 0.9


def batch_of(graph: Graph) -> int:
    """The batch a built-in network was built at (its name ends ``_b<N>``), else 1."""
    match = re.search(r"_b(\d+)$", graph.name)
    return int(match.group(1)) if match else 1


def calibrate_device(graphs: Graph | Iterable[Graph], *, executor: str = "torch",
                     precision: str = "fp32", warmup: int = 3, repeats: int = 20,
                     base_device: str | None = None, torch_device: Any = None,
                     probes: bool = True, mode: str | None = None,
                     threads: int | None = None) -> DeviceProfile:
    """Time every op of ``graphs`` alone and probe the device; the profile (not yet saved: see
    :func:`workbench.simulator.cost_model.device_profile.save_profile`).

    ``executor``: the ``workbench.execute`` entry that times (``"torch"``); ``precision``,
    ``warmup``, ``repeats``, ``torch_device``, ``mode``: as the torch executor takes them
    (``mode=None``: ``"graph"`` on CUDA, ``"eager"`` otherwise); ``base_device``: the
    cost-model device the profile refines (default: the one the GPU's name matches, else
    ``h100``; the choice and its reason are in ``provenance``, see
    :func:`~workbench.executors.device_probes.choose_base_device`); ``threads``: torch's
    intra-op threads while ops are timed on the CPU (default 1, see the module docstring; not
    for CUDA runs); ``probes``: run the CUDA probes when CUDA is present.  Ops the executor
    cannot run are left out and listed in ``provenance["skipped_ops"]``; when none can run, a
    one-line OptionError.  Cost: one timed run per structurally distinct op,
    ``warmup + repeats`` executions each.
    """
    from workbench.executors.device_probes import choose_base_device, cpu_name, provenance
    from workbench.schedulers.ios_torch_oracle import TorchStageOracle

    items = [graphs] if isinstance(graphs, Graph) else list(graphs)
    if not items or not all(isinstance(g, Graph) for g in items):
        raise OptionError("calibrate_device() needs a Graph or a list of Graphs")
    executor = _check_executor(executor)
    cuda = executor == "torch" and _cuda() and str(torch_device or "cuda").startswith("cuda")
    cpu_threads = _check_threads(threads, torch_cpu=executor == "torch" and not cuda)
    found: dict[str, Any] = {"probes": {}}
    if probes and cuda:
        from workbench.executors.device_probes import TorchCuda, run_probes

        found["probes"] = run_probes(TorchCuda(torch_device), warmup=warmup, repeats=repeats)
    elif probes:
        found["probes"] = {"skipped": "no CUDA device: the probes need CUDA graphs and streams"}
    floor = float(found["probes"].get("graph_floor_us", 0.0)) if cuda else 0.0
    mode = mode or ("graph" if cuda else "eager")
    ops, skipped, timed = [], [], 0
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    with _intra_op_threads(cpu_threads):
        for graph in items:
            oracle = TorchStageOracle(graph, executor=executor, precision=precision,
                                      warmup=warmup, repeats=repeats, torch_device=torch_device,
                                      mode=mode, floor_us=floor)
            for op_id in graph.topo_order():
                try:
                    measured = oracle([[op_id]])
                except WorkbenchError as exc:
                    skipped.append(f"{graph.name}:{op_id}: {exc}")
                    continue
                ops.append(OpTiming(graph.name, batch_of(graph), op_id, graph.op(op_id).kind,
                                    measured))
            timed += oracle.timed
    share = (time.thread_time() - cpu0) / max(time.perf_counter() - wall0, 1e-9)
    if not ops:
        raise OptionError(f"no op could be timed with executor {executor!r} "
                          f"({len(skipped)} skipped), e.g. {skipped[0] if skipped else '-'}")
    how = (f"each op a one-op schedule of the '{executor}' executor, mode={mode}, "
           f"{precision}, median of {repeats} after {warmup} warm-up; "
           + (f"CUDA graph replay timed with CUDA events, minus the graph floor of "
              f"{floor:.2f} us" if cuda else
              "CPU path timed with perf_counter"
              + (f" on {cpu_threads} intra-op thread(s)" if cpu_threads else ""))
           + f"; {timed} structurally distinct ops timed, the rest share their times")
    prov = provenance(timing=how)
    if cpu_threads:   # timed on the CPU (even where torch sees a GPU: torch_device="cpu")
        prov["gpu"] = f"cpu ({cpu_name()})"
        for key in ("cuda", "cudnn", "driver"):
            prov.pop(key, None)
        prov["cpu_threads"] = cpu_threads
        prov["cpu_share"] = round(min(share, 1.0), 3)
        if share < BUSY_SHARE:
            _warn_busy(share, cpu_threads, prov)
    if skipped:
        prov["skipped_ops"] = skipped
    base, why = choose_base_device(str(prov.get("gpu", "")), base_device)
    prov["base_device_reason"] = why
    return DeviceProfile(base_device=base, precision=precision, ops=tuple(ops),
                         probes=found["probes"], provenance=prov)


def _check_executor(executor: Any) -> str:
    """The executor's registered name (matched case-insensitively); a one-line error for one
    that is unknown, cannot run here, or cannot time ops alone (does not take the options the
    calibration passes)."""
    from workbench._checks import check_choice
    from workbench.executors.execute import EXECUTORS

    name = check_choice(executor, EXECUTORS, "executor")
    why = EXECUTORS.unavailable_reason(name)
    if why:
        raise DeviceUnavailable(f"calibrate: executor {name!r} cannot run here: {why}")
    try:
        EXECUTORS.check_options(name, dict.fromkeys(
            ("mode", "precision", "warmup", "repeats", "seed", "device")))
    except OptionError as exc:
        raise OptionError(f"calibrate: executor {name!r} cannot time ops alone ({exc}); use "
                          f"'torch'") from None
    return name


def _check_threads(threads: Any, *, torch_cpu: bool) -> int:
    """The intra-op thread count for a CPU calibration (0: not a torch CPU run)."""
    if threads is None:
        return 1 if torch_cpu else 0
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise OptionError(f"threads must be a positive integer, got {threads!r}")
    if not torch_cpu:
        raise OptionError("threads= sets torch's CPU threads; this calibration does not time "
                          "ops on the CPU with torch (leave it out)")
    return threads


@contextmanager
def _intra_op_threads(n: int) -> Iterator[None]:
    """torch's intra-op threads set to ``n`` inside, restored after (nothing when ``n`` is 0)."""
    if not n:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _warn_busy(share: float, threads: int, prov: dict[str, Any]) -> None:
    """Say (a one-line warning, and ``provenance["cpu_note"]``) that other processes had the CPU
    for part of the timing."""
    from workbench._checks import warn_line

    why = ("ops longer than a few ms include waiting for a core" if threads == 1 else
           f"with {threads} threads an op waits for its descheduled workers, so its time can "
           f"jump in 4 ms scheduler ticks; --threads 1 avoids that")
    note = (f"the CPU was busy: the timing thread ran {share:.0%} of the wall time (other "
            f"processes had the rest): {why}; calibrate on an idle machine for steady times")
    prov["cpu_note"] = note
    warn_line(note, "workbench calibrate")


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


__all__ = ["BUSY_SHARE", "batch_of", "calibrate_device"]
