"""calibrate_device(): time every op of some graphs alone, probe the device, write a profile.

Each op runs as a one-op schedule of its own graph (:meth:`Graph.subgraph`: its inputs drawn at
random) through the torch executor, timed by
:class:`~workbench.schedulers.ios_torch_oracle.TorchStageOracle` (so structurally identical ops,
e.g. the repeated blocks of Inception V3, are timed once).  On CUDA each op is captured as a CUDA
graph and replayed (median of ``repeats`` after ``warmup``) and the graph floor probe (a graph of
one 1-element kernel, :mod:`workbench.executors.device_probes`) is subtracted; without CUDA the
executor's CPU path is timed with ``perf_counter`` and no probe runs.  The result is a
:class:`~workbench.simulator.cost_model.device_profile.DeviceProfile` with its provenance, which
``device=PATH``
accepts wherever a device name is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from workbench.errors import OptionError, WorkbenchError
from workbench.simulator.cost_model.device_profile import DeviceProfile, OpTiming
from workbench.values.graph import Graph


def batch_of(graph: Graph) -> int:
    """The batch a built-in network was built at (its name ends ``_b<N>``), else 1."""
    match = re.search(r"_b(\d+)$", graph.name)
    return int(match.group(1)) if match else 1


def calibrate_device(graphs: Graph | Iterable[Graph], *, executor: str = "torch",
                     precision: str = "fp32", warmup: int = 3, repeats: int = 20,
                     base_device: str | None = None, torch_device: Any = None,
                     probes: bool = True, mode: str | None = None) -> DeviceProfile:
    """Time every op of ``graphs`` alone and probe the device; the profile (not yet saved: see
    :func:`workbench.simulator.cost_model.device_profile.save_profile`).

    ``executor``: the ``workbench.execute`` entry that times (``"torch"``); ``precision``,
    ``warmup``, ``repeats``, ``torch_device``, ``mode``: as the torch executor takes them
    (``mode=None``: ``"graph"`` on CUDA, ``"eager"`` otherwise); ``base_device``: the
    cost-model device the profile refines (default: the one the GPU's name matches, else
    ``h100``); ``probes``: run the CUDA probes when CUDA is present.  Ops the executor cannot
    run are left out and listed in ``provenance["skipped_ops"]``.  Cost: one timed run per
    structurally distinct op, ``warmup + repeats`` executions each.
    """
    from workbench.executors.device_probes import base_device_for, provenance
    from workbench.schedulers.ios_torch_oracle import TorchStageOracle

    items = [graphs] if isinstance(graphs, Graph) else list(graphs)
    if not items or not all(isinstance(g, Graph) for g in items):
        raise OptionError("calibrate_device() needs a Graph or a list of Graphs")
    cuda = executor == "torch" and _cuda()
    found: dict[str, Any] = {"probes": {}}
    if probes and cuda:
        from workbench.executors.device_probes import TorchCuda, run_probes

        found["probes"] = run_probes(TorchCuda(torch_device), warmup=warmup, repeats=repeats)
    elif probes:
        found["probes"] = {"skipped": "no CUDA device: the probes need CUDA graphs and streams"}
    floor = float(found["probes"].get("graph_floor_us", 0.0)) if cuda else 0.0
    ops, skipped, timed = [], [], 0
    for graph in items:
        oracle = TorchStageOracle(graph, executor=executor, precision=precision, warmup=warmup,
                                  repeats=repeats, torch_device=torch_device, mode=mode,
                                  floor_us=floor)
        for op_id in graph.topo_order():
            try:
                measured = oracle([[op_id]])
            except WorkbenchError as exc:
                skipped.append(f"{graph.name}:{op_id}: {exc}")
                continue
            ops.append(OpTiming(graph.name, batch_of(graph), op_id, graph.op(op_id).kind,
                                measured))
        timed += oracle.timed
    how = (f"each op a one-op schedule of the '{executor}' executor, mode="
           f"{oracle.mode}, {precision}, median of {repeats} after {warmup} warm-up; "
           + (f"CUDA graph replay timed with CUDA events, minus the graph floor of "
              f"{floor:.2f} us" if cuda else "CPU path timed with perf_counter")
           + f"; {timed} structurally distinct ops timed, the rest share their times")
    prov = provenance(timing=how)
    if skipped:
        prov["skipped_ops"] = skipped
    base = base_device or base_device_for(str(prov.get("gpu", "")))
    return DeviceProfile(base_device=base, precision=precision, ops=tuple(ops),
                         probes=found["probes"], provenance=prov)


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


__all__ = ["batch_of", "calibrate_device"]
