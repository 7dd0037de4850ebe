"""Test helpers that build broken schedules on purpose (for the validators' tests)."""

from __future__ import annotations

from dataclasses import replace

from workbench.errors import ScheduleError
from workbench.values.graph import OpId
from workbench.values.schedule import Schedule


def drop_sync(schedule: Schedule, sync: tuple[OpId, OpId]) -> Schedule:
    """A copy of ``schedule`` without one sync (no validation): for tests of the validators."""
    if sync not in schedule.syncs:
        raise ScheduleError(f"sync {sync!r} is not in the schedule")
    return replace(schedule, syncs=tuple(s for s in schedule.syncs if s != sync))
