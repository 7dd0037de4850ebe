"""The device a run targets, resolved once: its spec, its kernel model and the precision.

``compare()``, ``simulate()`` and the cost functions take a device as a name, a path, a
:class:`~workbench.simulator.cost_model.devices.DeviceSpec` or a :class:`DeviceTarget`.  Each
entry point calls :func:`resolve_device`, which turns anything but a target into one (the
registry or file lookup of :func:`~workbench.simulator.cost_model.devices.get_device`, the
:class:`~workbench.simulator.cost_model.kernel_model.GpuModel` of
:func:`~workbench.simulator.cost_model.kernel_model.model_for`, the precision checked) and
hands a target back unchanged, so one ``wb.compare(g, device="h100")`` resolves the device once
and passes the same value down to the schedulers, the simulator and the cost model.  A
``DeviceTarget`` *is* a ``DeviceSpec`` (a subclass with two more fields), so code that reads
spec fields keeps working.  Resolving a target: O(1).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

from workbench.simulator.cost_model.devices import DeviceSpec, HashedOnce, get_device
from workbench.simulator.cost_model.kernel_model import GpuModel, check_precision, model_for


@dataclass(frozen=True)
class DeviceTarget(DeviceSpec):
    """A device spec with its kernel model and the run's precision, resolved once."""

    gpu_model: GpuModel | None = None
    precision: str = "auto"

    # Hashed once, as a spec is (every timing cache is keyed by the target): the dataclass
    # decorator would otherwise give the subclass a generated hash of all its fields, recomputed
    # at every lookup (a sixth of a device fit's time).
    __hash__ = HashedOnce.__hash__


def resolve_device(device: str | DeviceSpec | Any, *, precision: str | None = None,
                   model: GpuModel | None = None) -> DeviceTarget:
    """The :class:`DeviceTarget` for ``device``.  A target comes back as it is when
    ``precision`` and ``model`` are not given or agree with it (no lookup); a name, path or
    spec is resolved (one :func:`_resolve`).  A bad name, path or precision is a one-line
    :class:`~workbench.errors.OptionError`."""
    if isinstance(device, DeviceTarget):
        same_precision = precision is None or precision == device.precision
        same_model = model is None or model is device.gpu_model
        if same_precision and same_model:
            return device
        return _retarget(device, precision or device.precision, model or device.gpu_model)
    return _resolve(device, precision or "auto", model)


def _resolve(device: Any, precision: str, model: GpuModel | None) -> DeviceTarget:
    """The one place a device is looked up and its kernel model built."""
    spec = get_device(device)
    return _retarget(spec, precision, model or model_for(spec))


@lru_cache(maxsize=256)
def _retarget(spec: DeviceSpec, precision: str, model: GpuModel | None) -> DeviceTarget:
    """The target of ``spec`` at ``precision`` with ``model``; one object per distinct
    argument triple (memoised: a search loop such as IOS's stage oracle resolves the same device
    thousands of times, and every timing cache downstream then hashes a target that already
    holds its hash; specs and models hash once, so a repeat costs a dict lookup)."""
    check_precision(precision)
    values = {f.name: getattr(spec, f.name) for f in fields(DeviceSpec)}
    return DeviceTarget(**values, gpu_model=model, precision=precision)
