"""Every registered device (STYLE.md R4): it is a valid spec, round-trips through its file
format (:func:`save_device` / :func:`load_device`), and the simulator runs a schedule on it."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench as wb
from workbench.simulator.cost_model.devices import DEVICES, get_device, load_device, save_device


@pytest.mark.parametrize("device", DEVICES.names())
def test_every_device_round_trips_through_its_file(device: str, tmp_path: Path) -> None:
    spec = DEVICES.get(device)
    assert spec.name == device and get_device(device.upper()) is spec
    assert DEVICES.available(device)
    path = save_device(spec, tmp_path / f"{device}.json")
    back = load_device(path)
    assert back == spec
    assert save_device(back, tmp_path / "again.json").read_bytes() == Path(path).read_bytes()


@pytest.mark.parametrize("device", DEVICES.names())
def test_every_device_simulates(device: str) -> None:
    sched = wb.schedule(wb.models.raf_three_branches(), "nnc")
    trace = wb.simulate(sched, device)
    assert trace.violations() == [] and trace.makespan > 0
    assert wb.simulate(sched, device).makespan == trace.makespan   # deterministic


def test_every_device_file_is_registered() -> None:
    from importlib import resources

    files = {p.name[:-5] for p in (resources.files("workbench") / "data" / "devices").iterdir()
             if p.name.endswith(".json")}
    assert files == set(DEVICES.names()), "every device file is discovered and registered"


def test_builtin_devices_keep_their_order() -> None:
    """``wb.devices()`` lists the built-in files by their ``order`` key (the app's menu order)."""
    assert wb.devices()[:8] == ["v100", "a100", "h100", "h200", "l4", "t4", "rtx3070_laptop",
                                "rtx4090"]


def test_cache_keys_hash_once_and_pickle_without_the_cached_hash() -> None:
    # Every timing cache is keyed by these: a generated dataclass hash (what the decorator gives
    # a subclass that does not name __hash__) would re-hash every field at every lookup.
    import pickle

    from workbench.simulator.cost_model.devices import DeviceSpec, HashedOnce
    from workbench.simulator.cost_model.kernel_model import GpuModel, default_model
    from workbench.simulator.cost_model.target import DeviceTarget, resolve_device

    for cls in (DeviceSpec, GpuModel, DeviceTarget):
        assert cls.__hash__ is HashedOnce.__hash__, cls
    for key in (get_device("h100"), default_model(), resolve_device("h100", precision="fp32")):
        h = hash(key)
        assert key.__dict__["_hash"] == h  # kept after the first hash
        back = pickle.loads(pickle.dumps(key))
        assert "_hash" not in back.__dict__ and back == key and hash(back) == h
