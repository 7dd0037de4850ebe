"""The measured Trace of a torch run: its rows, its statistics and where it was measured.

:func:`trace_frame` builds the rows every view reads (the columns of
:data:`workbench.values.trace.TRACE_COLUMNS`, one row per op in issue order; ``compute_us`` /
``memory_us`` are the cost model's full-device estimates on the device spec, NaN on the CPU
without one); :func:`makespan_stats` the median and quartiles of the timed runs;
:func:`device_info` the provenance (GPU name, driver, torch, CUDA and cuDNN versions, or the
CPU's model name: :func:`workbench.executors.device_probes.cpu_model`).  O(V).
"""

from __future__ import annotations

import math
import platform
from typing import Any

import pandas as pd

from workbench.executors.torch_exec.host import Timing
from workbench.ops.tensors import torch_module
from workbench.simulator.cost_model.costs import op_cost
from workbench.simulator.cost_model.devices import DeviceSpec
from workbench.values.schedule import Schedule
from workbench.values.trace import makespan_stats as makespan_stats  # re-exported


def device_info(device: str, cuda: Any = None) -> dict[str, Any]:
    """Where a run ran: the GPU's name, capability, SM count and memory, the driver, CUDA and
    cuDNN versions (CUDA), or the CPU's model name
    (:func:`workbench.executors.device_probes.cpu_model`) and architecture; torch's version and
    thread count always.  ``cuda``: the ``torch.cuda`` to ask (default: torch's
    own)."""
    torch = torch_module()
    cuda = cuda if cuda is not None else torch.cuda
    info: dict[str, Any] = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    if device.startswith("cuda"):
        props = cuda.get_device_properties(device)
        info.update({
            "name": props.name, "type": "cuda",
            "compute_capability": f"{props.major}.{props.minor}",
            "sm_count": int(props.multi_processor_count),
            "memory_bytes": int(props.total_memory), "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "driver": _driver_version()})
    else:
        from workbench.executors.device_probes import cpu_model

        info.update({"name": cpu_model(), "type": "cpu", "machine": platform.machine()})
    return info


def _driver_version() -> str | None:
    """The NVIDIA driver's version, from ``/proc/driver/nvidia/version`` (else nvidia-smi
    through torch's environment collector); ``None`` when neither answers."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as f:
            words = f.readline().split()
        versions = [w for w in words if w[:1].isdigit() and "." in w]
        if versions:
            return versions[0]
    except OSError:
        pass
    try:
        from torch.utils import collect_env

        return collect_env.get_nvidia_driver_version(collect_env.run)  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - provenance is best effort; a missing driver string is fine
        return None


def trace_frame(schedule: Schedule, timing: Timing, *, spec: DeviceSpec | None,
                device_column: str) -> pd.DataFrame:
    """One row per op in issue order, from the timeline run of ``timing``."""
    graph = schedule.graph
    order = list(schedule.issue_order)
    ops = [graph.op(o) for o in order]
    costs = [op_cost(op, spec, graph=graph) for op in ops] if spec is not None else None
    nan = [math.nan] * len(order)
    return pd.DataFrame({
        "op": order, "kind": [op.kind for op in ops],
        "stream": [schedule.stream_of(o) for o in order], "device": [device_column] * len(order),
        "start_us": list(timing.start_us), "end_us": list(timing.end_us),
        "duration_us": [e - s for s, e in zip(timing.start_us, timing.end_us, strict=True)],
        "issue_us": list(timing.issue_us), "alone_us": nan,
        "compute_us": [c.compute_us for c in costs] if costs else nan,
        "memory_us": [c.memory_us for c in costs] if costs else nan,
        "flops": [op.flops for op in ops],
        "bytes": [op.bytes_read + op.bytes_written for op in ops],
        "phase": [schedule.phase[o] for o in order],
    })


__all__ = ["device_info", "makespan_stats", "trace_frame"]
