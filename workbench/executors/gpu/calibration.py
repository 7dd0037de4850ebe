"""Calibration on a GPU: time every op of a schedule alone (:func:`calibrate_gpu`).

The tables themselves (:class:`~workbench.simulator.cost_model.calibration.CalibrationTable`, the
JSON format, the
conversion to ``simulate(..., calibration=...)``) are the cost model's, in
:mod:`workbench.simulator.cost_model.calibration`; they are re-exported here.  The comparison of the
calibrated
simulator with measured makespans is :func:`workbench.simulator.fidelity.simulator_error`.
"""

from __future__ import annotations

from workbench.simulator.cost_model.calibration import (
    FORMAT,
    VERSION,
    CalibrationTable,
    device_spec_for,
    load_calibration,
    measured_makespan_us,
    save_calibration,
    table_from_trace,
)
from workbench.values.schedule import Schedule


def calibrate_gpu(schedule: Schedule, *, repeats: int = 10, memory: str = "somas", seed: int = 0,
                  device: str = "h100") -> CalibrationTable:
    """Time every op of ``schedule`` alone on the GPU (GPU only; see
    :func:`workbench.executors.gpu.runtime.measure_alone_us`)."""
    from workbench.executors.gpu import executor

    trace = executor.run(schedule, mode="eager", memory=memory, repeats=3, warmup=2, seed=seed,
                         device=device, measure_alone=True, alone_repeats=repeats)
    table = table_from_trace(trace)
    return CalibrationTable(ops=table.ops, device=table.device, graph=table.graph,
                            versions=table.versions, spin_overhead_us=table.spin_overhead_us,
                            host_launch_us=table.host_launch_us,
                            meta={**table.meta, "repeats": repeats, "source": "alone on GPU"})


__all__ = [
    "FORMAT", "VERSION", "CalibrationTable", "calibrate_gpu", "device_spec_for",
    "load_calibration", "measured_makespan_us", "save_calibration", "table_from_trace",
]
