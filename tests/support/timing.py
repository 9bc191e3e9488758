"""CPU time of a step for the cost and scaling asserts that run inside the whole suite."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable


def cpu_seconds(step: Callable[[], object], rounds: int = 3) -> float:
    """CPU seconds of one `step`, the fastest of `rounds` runs with the collector paused. Inside the whole suite
    (nine workers on 2 cores) a round slowed by the machine's load, or by a full collection of the worker's heap
    landing in it, says nothing of the code's cost (two scaling asserts failed so, once each, in one run)."""
    best = float("inf")
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            t0 = time.process_time()
            step()
            best = min(best, time.process_time() - t0)
    finally:
        if enabled:
            gc.enable()
    return best
