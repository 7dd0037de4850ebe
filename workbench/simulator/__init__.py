"""The simulator: ``simulate`` (the entry), the discrete-event ``engine`` and the CPU ``host``
model, the ``cost_model`` package (devices and their data, the kernel model, launches,
calibration, device profiles) and the ``fidelity`` tooling that checks the model against
measured runs.

This ``__init__`` imports nothing, so the cost model can be imported by the graph transforms and
schedulers below the engine; ``simulate``, ``engine`` and ``host`` are the engine layer and may
import the values, the cost model, the transforms, the schedulers and memory; ``fidelity`` is
orchestration.
"""
