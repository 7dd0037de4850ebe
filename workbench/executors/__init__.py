"""The executors: ``execute`` (the entry that runs a schedule for real), the NumPy ``reference``,
the CuPy executor ``gpu``, the torch executor ``torch_exec`` and the device probes and
calibration.

This ``__init__`` imports nothing.  ``reference`` is a values-layer module (graph values only);
``execute`` is engine layer; ``gpu``, ``torch_exec`` and ``device_probes`` are backends (engine
and below); ``device_calibration`` is orchestration.  CuPy and torch are imported inside
functions only.
"""
