"""How close the simulator is to a real GPU, per device, in one sentence for reports and the CLI.

The figures are those of ``benchmarks/fidelity.py`` for the shipped device files (V100: IOS's
published table, ``tests/test_fidelity.py``; H200: the measurements in
``workbench/data/measured/h200/``, ``tests/test_fidelity_h200.py``, which also checks the H200
sentence against the misses it records).  A device without measured rows says where its
parameters come from instead.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Measured error of the shipped fit, per device with measurements.
MEASURED = {
    "v100": ("fitted on IOS's published V100 measurements (MLSys 2021): all 26 makespans within "
             "15% (mean |error| 3.8%), every speedup within 10%"),
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


#: Policies whose simulated makespans lie within this share of the best are not ordered by the
#: model: on the H200 it put policies this close in an order the GPU did not confirm.
TIE_BAND = 0.01
#: Per measured device: the largest measured gap between two policies of one case that the
#: shipped fit simulates within :data:`TIE_BAND` of each other, and where
#: (``tests/test_fidelity_h200.py`` recomputes it from the measurements).
MEASURED_TIE_GAP = {"h200": (0.173, "Inception V3 at batch 1, fp32: gpto and nnc")}


def near_ties(makespans: Mapping[str, float], band: float = TIE_BAND) -> list[str]:
    """The policies whose makespan is within ``band`` of the least one, fastest first (ties in
    the mapping's order); empty unless at least two are.  Infinite or NaN makespans (not
    executed) are left out.  O(n log n).

    >>> near_ties({"a": 100.0, "b": 100.5, "c": 103.0})
    ['a', 'b']
    """
    done = {p: float(v) for p, v in makespans.items() if 0.0 <= float(v) < float("inf")}
    if len(done) < 2:
        return []
    least = min(done.values())
    close = sorted((p for p, v in done.items() if v <= least * (1.0 + band)),
                   key=lambda p: done[p])
    return close if len(close) >= 2 else []


def tie_note(device: str, policies: list[str]) -> str:
    """One sentence saying that ``policies`` (from :func:`near_ties`) are not ordered by the
    simulator of ``device``, with the measured evidence of its fit (or that there is none), and
    what to do; empty for fewer than two policies."""
    if len(policies) < 2:
        return ""
    name = str(device).lower()
    src = name if name in MEASURED_TIE_GAP else DERIVED.get(name)
    listed = ", ".join(policies)
    head = (f"{listed} simulate within {100 * TIE_BAND:.0f}% of the best: the simulator does "
            "not order policies this close")
    if src in MEASURED_TIE_GAP:
        gap, where = MEASURED_TIE_GAP[src]
        why = (f" (on the {src}, policies its fit puts this close measured up to "
               f"{100 * gap:.0f}% apart: {where})")
    else:
        why = f" (the {name} model's ordering of such policies was never checked on a GPU)"
    return head + why + "; measure them (executor 'torch') before choosing one."


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


__all__ = ["DERIVED", "MEASURED", "MEASURED_TIE_GAP", "NOT_MODELLED", "TIE_BAND",
           "accuracy_note", "near_ties", "tie_note"]
