"""How close the simulator is to a real GPU, per device, in one sentence for reports and the CLI.

The figures are those of ``benchmarks/fidelity.py`` for the shipped device files (V100: IOS's
published table, ``tests/test_fidelity.py``; H200: the measurements in
``workbench/data/measured/h200/``, ``tests/test_fidelity_h200.py``, which also checks the H200
sentence against the misses it records).  A device without measured rows says where its
parameters come from instead.
"""

from __future__ import annotations

#: Measured error of the shipped fit, per device with measurements.
MEASURED = {
    "v100": ("fitted on IOS's published V100 measurements (MLSys 2021): all 26 makespans within "
             "15% (mean |error| 3.6%), every speedup within 10%"),
    "h200": ("fitted on 72 makespans measured on an H200 (PyTorch 2.11, cuDNN 9.19, CUDA "
             "graphs): FP32 serial and best makespans within 15% in 8 of 10 comparisons (worst "
             "16.7%), TF32 ones all 12, per-op median error 13.3%; the policy ranked first is at "
             "most 2% slower on the GPU than the GPU's best, but policies within a few % of "
             "each other are not ordered as the GPU orders them, and at batch 1 in TF32 the "
             "model gains more from streams than the GPU (1.87x against 1.54x)"),
}
#: Devices whose parameters are derived from a measured one.
DERIVED = {"h100": "h200", "a100": "h200"}
NOT_MODELLED = ("Not modelled: TensorRT-style fused kernels, clock boost, cuDNN's heuristic "
                "algorithm choice, cache reuse between kernels beyond the L2 share of one "
                "kernel's traffic (docs/cost-model.md).")


def accuracy_note(device: str) -> str:
    """One sentence: how the simulator's ``device`` was fitted and its measured error, then
    what the model leaves out.  Unknown or custom devices: the shared V100-fitted parameters."""
    name = str(device).lower()
    if name in MEASURED:
        text = f"The {name} model is {MEASURED[name]}."
    elif name in DERIVED:
        src = DERIVED[name]
        text = (f"The {name} model is derived from the {src} fit and the {name}'s spec sheet, "
                f"not measured; the {src} model is {MEASURED[src]}.")
    else:
        text = (f"The {name} model uses its spec sheet with the library parameters fitted on "
                f"the V100 ({MEASURED['v100']}); it has no measurements of its own.")
    return f"Simulator accuracy: {text} {NOT_MODELLED}"


__all__ = ["DERIVED", "MEASURED", "NOT_MODELLED", "accuracy_note"]
