"""Complexity checks that a loaded machine cannot fail and a quadratic regression still does.

A wall-clock ratio of two sizes (``t(2n) / t(n) < 3``) fails when another process takes the CPU
during the larger run: on a 2-core machine with two CPU hogs, single runs vary by 2-3x.  Here

* the clock is this thread's **CPU time** (``time.thread_time``), not the wall clock: time the
  thread spends descheduled while another process runs is not counted (a wall-clock fit of a
  linear 5-30 ms pass read ^1.58 with a full test run beside it, ^1.25 idle);
* the sizes are timed **interleaved** (n, 2n, 4n, n, 2n, 4n, ...), so a slow minute slows every
  size alike instead of one of them;
* each size keeps its **best** run (the one least disturbed), with the garbage collector off
  for the whole measurement (its passes grow with the heap and blur the growth, and in a full
  test session one collection of the large heap takes seconds);
* the exponent ``k`` of ``t ~ n^k`` is **fitted** over all sizes by least squares in log-log
  space, so one disturbed size moves it by a third of what it would move a two-point ratio.

A machine that is uniformly 2x slower leaves ``k`` unchanged; linear work fits ``k ~ 1``
(``n log n`` about 1.1), quadratic work ``k ~ 2``.  :data:`LINEAR` (1.5) sits between.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence

#: Largest fitted exponent that passes as near-linear: n log n fits ~1.1, n^2 fits ~2.
LINEAR = 1.5


def best_times(build: Callable[[int], object], sizes: Sequence[int],
               rounds: int = 3) -> dict[int, float]:
    """The best CPU time (this thread's) of ``build(n)`` for each ``n`` in ``sizes``, over
    ``rounds`` rounds that each time every size once (interleaved), with the garbage collector
    off throughout."""
    times: dict[int, list[float]] = {n: [] for n in sizes}
    gc.collect()   # once: in a full test session the heap is large and a collection takes seconds
    gc.disable()
    try:
        for _ in range(rounds):
            for n in sizes:
                start = time.thread_time()
                build(n)
                times[n].append(time.thread_time() - start)
    finally:
        gc.enable()
    return {n: max(min(ts), 1e-6) for n, ts in times.items()}


def fitted_exponent(build: Callable[[int], object], sizes: Sequence[int],
                    rounds: int = 3) -> float:
    """The slope of log(best time) against log(size): the ``k`` of ``time ~ size^k``."""
    best = best_times(build, sizes, rounds)
    xs = [math.log(n) for n in best]
    ys = [math.log(t) for t in best.values()]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return (sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
            / sum((x - mx) ** 2 for x in xs))


def assert_near_linear(build: Callable[[int], object], n: int, what: str,
                       rounds: int = 3) -> float:
    """Fit the exponent of ``build`` over sizes n, 2n and 4n and fail above :data:`LINEAR`."""
    k = fitted_exponent(build, (n, 2 * n, 4 * n), rounds)
    assert k < LINEAR, f"{what}: time grows as size^{k:.2f} from {n:,} to {4 * n:,} " \
                       f"(near-linear is below ^{LINEAR})"
    return k


_REFERENCE_S = 0.0
_MEASURED_AT = -1e9
#: How long a measured slowdown stands before it is measured again: load comes and goes over a
#: test session, and a slowdown measured in a quiet minute under-states a busy one.
_STALE_AFTER_S = 30.0


def machine_slowdown() -> float:
    """How much slower this machine is right now than the 2-core machine the absolute time
    limits were set on (at least 1): the median of three runs of a fixed pure-Python workload
    (sorting and hashing 200,000 strings: 0.10 s there) over 0.10 s, measured again once the
    last measurement is :data:`_STALE_AFTER_S` old.  An absolute limit multiplied by this holds
    on a loaded machine and still catches a 10x regression."""
    global _REFERENCE_S, _MEASURED_AT

    def work() -> None:
        items = [f"op{i * 7919 % 200_000}" for i in range(200_000)]
        items.sort()
        len({s: i for i, s in enumerate(items)})

    if time.monotonic() - _MEASURED_AT > _STALE_AFTER_S:
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            work()
            runs.append(time.perf_counter() - start)
        _REFERENCE_S = sorted(runs)[1]
        _MEASURED_AT = time.monotonic()
    return max(1.0, _REFERENCE_S / 0.10)
