"""The baseline: every op on one stream in program order.

The function itself lives in :mod:`workbench.values.schedule`
(:func:`~workbench.values.schedule.schedule_serial`)
because control-flow expansion, below the schedulers, schedules sub-graphs with it.
"""

from __future__ import annotations

from workbench.values.schedule import schedule_serial as schedule_serial

__all__ = ["schedule_serial"]
