"""The project's exception hierarchy.

Every error the workbench raises on bad input is a :class:`WorkbenchError` whose message is one line
that names the problem and where it is (the op, the file, the option).  The CLI prints that line and
exits with a non-zero code instead of showing a traceback.
"""

from __future__ import annotations


class WorkbenchError(Exception):
    """Base class: a one-line, user-facing error."""


class GraphError(WorkbenchError):
    """A graph is malformed: cycle, dangling edge, duplicate id, bad size."""


class ScheduleError(WorkbenchError):
    """A schedule is invalid (an unordered dependency, a deadlock) or a policy/option is unknown."""


class MemoryPlanError(WorkbenchError):
    """A memory plan overlaps, or usage records are malformed."""


class FormatError(WorkbenchError):
    """A file could not be read: wrong type, truncated, or not in the documented schema."""


class OutputError(WorkbenchError):
    """A file could not be written: a directory, a missing folder, no permission, disk full."""


class DeviceUnavailable(WorkbenchError):
    """The requested executor or device is not present on this machine."""


class OptionError(WorkbenchError, ValueError):
    """An option has an impossible value (e.g. ``max_streams=0``)."""
