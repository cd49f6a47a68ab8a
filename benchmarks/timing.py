"""The timing loop the benchmarks share: one warm-up call, then the median of many (wall time, this process)."""

from __future__ import annotations

import statistics
import time


def median_seconds(run, repeats: int) -> float:
    """Median wall-clock seconds of ``repeats`` calls of ``run()``, after one call that is not counted (font
    caches, first-import costs, an optimizer creating its state)."""
    run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)
