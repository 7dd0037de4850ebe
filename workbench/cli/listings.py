"""The CLI's listings: ``workbench policies``, ``workbench models``, ``workbench devices``
(each row aligned, names made safe for the terminal)."""

from __future__ import annotations

from collections.abc import Sequence

from workbench._terminal import clean


def _columns_text(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as lines with every column but the last padded to its widest cell (two spaces
    between columns), so long names never shift the columns after them."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip()
            for r in rows]


def _model_params(name: str) -> str:
    """A built-in model's parameters and defaults, ``n_ops (required), seed=None``."""
    from inspect import Parameter

    from workbench.models import MODELS

    params = MODELS.options(name) or {}
    return ", ".join(f"{k} (required)" if v is Parameter.empty else f"{k}={v!r}"
                     for k, v in params.items()) or "-"


def listing(command: str) -> int:
    """Print ``workbench policies``, ``models`` or ``devices``: one row per entry, aligned."""
    rows: list[tuple[str, ...]]
    if command == "policies":
        from workbench.schedulers import POLICIES

        rows = [(name, info.seed, info.summary) for name, info in POLICIES.items()]
    elif command == "models":
        from workbench.models import MODELS

        rows = [(name, model.family, model.source, _model_params(name))
                for name, model in MODELS.items()]
        rows.insert(0, ("model", "family", "source", "parameters (--param NAME=VALUE)"))
    else:
        from workbench.simulator.cost_model.costs import DEVICES

        # a CPU's "SMs" are its cores (workbench/data/devices/cpu.json)
        rows = [(name, f"{spec.sm_count} {'cores' if spec.architecture == 'cpu' else 'SMs'}",
                 f"{spec.peak_tflops:.1f} TFLOP/s",
                 f"{spec.bandwidth_gbps:.0f} GB/s", spec.description)
                for name, spec in DEVICES.items()]
    for line in _columns_text(rows):
        print(clean(line))
    return 0


__all__ = ["listing"]
