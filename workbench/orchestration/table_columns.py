"""The comparison table's columns and the default stage budget, in a module that imports nothing:
the CLI checks ``--columns`` and fills in ``--budget`` with these before any heavy module (pandas,
the schedulers, the loaders) loads, so a typo is refused in a few milliseconds of CPU."""

from __future__ import annotations

#: Wall-clock seconds each stage of each policy may take in ``compare()`` (and the CLI).
DEFAULT_BUDGET_S = 60.0
#: The columns of ``compare()``'s table, in order.
TABLE_COLUMNS = ("policy", "status", "makespan_us", "speedup", "streams", "syncs", "barriers",
                 "avg_concurrency", "utilisation", "critical_path_us", "work_us", "lower_bound_us",
                 "ratio_to_lb", "optimum_us", "ratio_to_optimum",
                 "peak_live_mib", "arena_mib", "arena_ratio", "pool_reserved_mib", "schedule_ms")
#: The quartiles of a measured row's timed makespans (µs), beside its median ``makespan_us``.
QUARTILE_COLUMNS = ("makespan_q1_us", "makespan_q3_us")
#: The columns measured rows add.
MEASURED_COLUMNS = ("executor", "gpu", *QUARTILE_COLUMNS, "simulated_us", "sim_error")
